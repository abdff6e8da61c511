# The suites' contract check (t/lib/SvcContract.pm) can fail: real answers
# of the server pass it, and the same answers altered the ways a handler
# could drift from the document (a key missing, a key the document does not
# name, a wrong type or format, a status or header not declared, another
# content type, an event of another shape) each fail it, with JSON::Validator
# naming what is wrong. Every other test file only shows that answers pass.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $email = new_user('contract');
my $org   = new_org($email);
my $pat   = new_token($email, scope => 'admin');

# errors($res, %change): what the check says of a real answer, changed.
sub errors {
    my ($res, %c) = @_;
    my %h = map { lc($_) => scalar $res->header($_) } $res->header_field_names;
    %h = (%h, %{ $c{headers} // {} });
    delete $h{$_} for @{ $c{drop} // [] };
    my $body = exists $c{body} ? $c{body} : $res->content;
    $body = json()->encode($body) if ref $body;
    my (undef, undef, @e) = SvcContract::contract_errors(
        method => $c{method} // $res->request->method,
        path => $c{path} // URI->new($res->request->uri)->path,
        status => $c{status} // $res->code,
        header => sub { $h{ lc $_[0] } },
        content_type => exists $c{content_type} ? $c{content_type} : $h{'content-type'},
        body => $body);
    return @e;
}

sub fails_like {
    my ($name, $re, @e) = @_;
    ok(scalar @e, "$name: the check fails") or return;
    like(join("\n", @e), $re, '... and says why') or diag(join "\n", @e);
}

# --- an object answer (GET /api/me) ------------------------------------------
my ($st, $me, $res) = api(GET => '/api/me', token => $pat);
is($st, 200, 'GET /api/me');
is_deeply([errors($res)], [], 'the real answer keeps to the contract');

my %gone = %$me;
delete $gone{email};
fails_like('a required key missing', qr{/body/email},
           errors($res, body => \%gone));
fails_like('a key the document does not name', qr{Properties not allowed: nickname},
           errors($res, body => { %$me, nickname => 'x' }));
fails_like('a wrong type', qr{/body/founder.*boolean}s,
           errors($res, body => { %$me, founder => 'no' }));
fails_like('an id of another shape', qr{/body/id.*does not match}s,
           errors($res, body => { %$me, id => 'user_1' }));
fails_like('a time that is not RFC 3339', qr{/body/created_at.*date-time}s,
           errors($res, body => { %$me, created_at => '26/11/2026' }));
fails_like('a value outside an enum', qr{/body/auth/method}s,
           errors($res, body => { %$me, auth => { %{ $me->{auth} }, method => 'magic' } }));
fails_like('a status not declared', qr{status 299 is not declared},
           errors($res, status => 299));
fails_like('no X-Request-Id', qr{X-Request-Id}i, errors($res, drop => ['x-request-id']));
fails_like('another content type', qr{text/plain}, errors($res, content_type => 'text/plain'));

# --- a list (GET /api/me/tokens): the envelope and its items ---------------------
($st, my $page, $res) = api(GET => '/api/me/tokens', token => $pat);
is($st, 200, 'GET /api/me/tokens');
is_deeply([errors($res)], [], 'the real page keeps to the contract');
fails_like('no next_cursor', qr{next_cursor}, errors($res, body => { data => $page->{data} }));
fails_like('an item of another shape', qr{/body/data/0/status}s,
           errors($res, body => { %$page,
                                  data => [ { %{ $page->{data}[0] }, status => 'asleep' } ] }));
fails_like('null where none is allowed', qr{/body/data/0/name}s,
           errors($res, body => { %$page, data => [ { %{ $page->{data}[0] }, name => undef } ] }));

# --- problems -------------------------------------------------------------------
($st, my $p, $res) = api(GET => "/api/orgs/$org/projects/nope", token => $pat);
is($st, 404, 'a 404');
is_deeply([errors($res)], [], 'the real problem document keeps to the contract');
fails_like('a problem without its code', qr{/body/code},
           errors($res, body => { %$p, code => undef } ));
($st, $p, $res) = api(GET => '/api/nope/nothing', token => $pat);
is($st, 404, 'an unknown path');
is_deeply([errors($res)], [], '... is a problem document');
fails_like('... without X-Request-Id', qr{X-Request-Id}, errors($res, drop => ['x-request-id']));
fails_like('... as HTML', qr{text/html}, errors($res, content_type => 'text/html'));

# --- a rate-limited route's 429 needs Retry-After ---------------------------------
($st, undef, $res) = api(POST => '/api/me/tokens', token => $pat,
                         json => { name => 'x', scope => 'read' });
is($st, 201, 'a token made');
fails_like('a 429 without Retry-After', qr{Retry-After},
           errors($res, status => 429, drop => ['retry-after'],
                  body => { type => 'about:blank', title => 'Too Many Requests', status => 429,
                            detail => 'x', code => 'rate_limited',
                            request_id => $res->header('X-Request-Id') }));

# --- an answer read on a raw socket (contract_raw) ---------------------------------
{
    require IO::Socket::INET;
    my $body = '{"name":"' . ('a' x (2 * 1024 * 1024)) . '","scope":"read"}';
    my $head = "POST /api/me/tokens HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer $pat\r\n"
             . "Content-Type: application/json\r\nContent-Length: " . length($body)
             . "\r\nConnection: close\r\n\r\n";
    my $sock = IO::Socket::INET->new(PeerAddr => Apache::TestRequest::hostport(),
                                     Timeout => 30) or die "connect: $!";
    local $SIG{PIPE} = 'IGNORE';
    print $sock $head, $body;
    my $raw = '';
    while (sysread($sock, my $buf, 65536)) { $raw .= $buf }
    close $sock;
    like($raw, qr{\AHTTP/1\.1 413 }, 'a body over the route\'s cap, on a raw socket: 413');
    my (undef, undef, @e) = SvcContract::contract_errors(SvcContract::raw_args($head, $raw));
    is_deeply(\@e, [], '... keeps to the contract');
    (my $bare = $raw) =~ s/^X-Request-Id:[^\r\n]*\r\n//mi;
    fails_like('... and without its X-Request-Id, it fails', qr{X-Request-Id}i,
               SvcContract::contract_errors(SvcContract::raw_args($head, $bare)));
    # A chunked answer is put together before its body is checked.
    (my $chunked = $raw) =~ s/^Content-Length:[^\r\n]*\r\n/Transfer-Encoding: chunked\r\n/mi;
    my ($h, $b) = split /\r\n\r\n/, $chunked, 2;
    my $half = int(length($b) / 2);
    $chunked = "$h\r\n\r\n" . sprintf("%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n", $half,
        substr($b, 0, $half), length($b) - $half, substr($b, $half));
    (undef, undef, @e) = SvcContract::contract_errors(SvcContract::raw_args($head, $chunked));
    is_deeply(\@e, [], '... as it does sent in chunks');
}

# --- events ---------------------------------------------------------------------
my $stream = "/api/orgs/$org/events";
is_deeply([SvcContract::event_errors($stream, 'run.status',
                                     { run_id => 'run_' . ('a' x 22), status => 'queued',
                                       error => undef })],
          [], 'a run.status event of the right shape');
ok(scalar SvcContract::event_errors($stream, 'run.status',
                                    { run_id => 'run_' . ('a' x 22), status => 'dreaming',
                                      error => undef }),
   'one with a status the document does not know fails');
ok(scalar SvcContract::event_errors($stream, 'run.nothing', {}),
   'a kind the document does not declare fails');

done_testing();
