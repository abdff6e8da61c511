# Stoplight Prism, as a validating proxy in front of the service, finds no
# answer the OpenAPI document does not allow (issue 20's "done when").
#
# Every other test file checks each answer it receives against the document
# with JSON::Validator (t/lib/SvcContract.pm). This one puts a second,
# independent validator of the same document in the way: `prism proxy`
# (pinned in t/contract/package-lock.json, installed by tools/deps.sh)
# forwards each request to the test server and reports what the answer
# breaks in an `sl-violations` header. The requests are realistic ones of
# every kind the issue found undeclared: a creation and its 409 (a taken
# slug), an idempotent replay's 200 and a key reused for another body (409),
# 400 on list GETs (limit=0, a forged cursor), 400 `not_a_session` on
# sign-out, 502 `provider_error`, an attachment served with its stored type,
# plus lists, reads, changes, 204s and the problems of bad credentials.
#
# The same proxy over a document altered the ways a handler could drift
# from it (a key the answer lacks made required, a status no longer
# declared) reports those answers, so the check can fail.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

use File::Temp qw(tempdir);
use File::Spec::Functions qw(catfile);
use IO::Socket::INET ();
use POSIX ();
use Time::HiRes qw(sleep);

my $top   = $ENV{SVC_TOP} // "$FindBin::Bin/../..";
my $prism = catfile($top, 't', 'contract', 'node_modules', '.bin', 'prism');
my $work  = tempdir(CLEANUP => 1);

ok(-x $prism, 'Prism is installed (t/contract/package-lock.json; tools/deps.sh runs npm ci)')
    or BAIL_OUT('t/contract/node_modules is missing: run tools/deps.sh');

my (undef, $doc, $res) = api(GET => '/api/openapi.json');
ok($doc && $doc->{paths}, 'the document');

# start_proxy($document) -> (base URL, pid, log file): `prism proxy` over the
# document, forwarding to the test server.
my @children;
sub start_proxy {
    my ($name, $d) = @_;
    my $file = catfile($work, "$name.json");
    open my $fh, '>', $file or die "$file: $!";
    print $fh json()->encode($d);
    close $fh or die "$file: $!";
    my $port = SvcTest::_free_port();
    my $log = catfile($work, "$name.log");
    my $pid = fork // die "fork: $!";
    if (!$pid) {
        open STDOUT, '>', $log or POSIX::_exit(127);
        open STDERR, '>&', \*STDOUT or POSIX::_exit(127);
        { exec $prism, 'proxy', $file, base_url(), '--host', '127.0.0.1', '--port', $port }
        POSIX::_exit(127);
    }
    push @children, $pid;
    # Prism reads and resolves the document before it listens (seconds).
    my $up = wait_for(sub {
        return 0 if waitpid($pid, POSIX::WNOHANG()) == $pid;
        my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port", Timeout => 1);
        return $s ? 1 : 0;
    }, timeout => 120, interval => 0.5);
    unless ($up) {
        my $text = do { local (@ARGV, $/) = ($log); <> } // '';
        BAIL_OUT("prism proxy did not start: $text");
    }
    return "http://127.0.0.1:$port";
}

END {
    local $?;    # the test's exit status, not the proxies'
    for my $pid (@children) {
        kill 'TERM', $pid;
        waitpid $pid, 0;
    }
}

# What Prism says an answer breaks: its response violations (a request this
# test sends wrong on purpose is the request's violation, not the answer's).
sub answer_violations {
    my $r = shift;
    my $h = $r->header('sl-violations') // return ();
    my $v = eval { json()->decode($h) } // return ("unreadable sl-violations: $h");
    return map { join('.', @{ $_->{location} // [] }) . ": $_->{message}" }
           grep { ($_->{location}[0] // '') eq 'response' } @$v;
}

my $proxy = start_proxy('document', $doc);
my (%kinds, @broken);

# via(METHOD => path, %api_options, expect => status): the request through
# the proxy; the answer's status as expected, and nothing Prism reports.
sub via {
    my ($method, $path, %opt) = @_;
    my $expect = delete $opt{expect};
    my ($st, $data, $r) = api($method, $path, %opt, base => $proxy);
    my $what = "$method " . ($path =~ s/\?.*//r) . " -> $st";
    $what .= ' ' . $data->{code} if ref $data eq 'HASH' && $data->{code} && $st >= 400;
    is($st, $expect, "$method $path: $expect") or diag($r->content);
    # The service answered, not the proxy (Prism's own answers have no
    # request id of ours).
    push @broken, "$what: not the service's answer"
        unless ($r->header('X-Request-Id') // '') =~ /^req_/;
    push @broken, map { "$what: $_" } answer_violations($r);
    $kinds{$what}++;
    return ($st, $data, $r);
}

my $owner = new_user('prism');
my $org   = new_org($owner, prefix => 'prism');
my $tok   = new_token($owner, scope => 'admin');
my $O     = "/api/orgs/$org";

# --- who, tokens, lists ----------------------------------------------------------
via(GET => '/api/me', token => $tok, expect => 200);
via(GET => '/api/me', expect => 401);
via(GET => '/api/me', token => 'svc_pat_' . ('x' x 40), expect => 401);
my (undef, $made) = via(POST => '/api/me/tokens', token => $tok,
                        json => { name => 'prism', scope => 'read' }, expect => 201);
record_secret($made->{token}) if $made && $made->{token};
via(GET => '/api/me/tokens', token => $tok, expect => 200);
via(GET => '/api/me/tokens?limit=1', token => $tok, expect => 200);
via(GET => '/api/me/tokens?limit=0', token => $tok, expect => 400);
via(GET => '/api/me/tokens?cursor=forged', token => $tok, expect => 400);
via(POST => '/api/me/tokens', token => $tok, json => { name => 'x', scope => 'root' },
    expect => 400);
via(DELETE => "/api/me/tokens/$made->{id}", token => $tok, expect => 204);
via(GET => '/api/me/sessions', token => $tok, expect => 200);
# Signing out is for a session: a token gets 400 not_a_session.
via(POST => '/auth/logout', token => $tok, expect => 400);

# --- organizations, projects, conflicts ---------------------------------------------
via(GET => '/api/orgs', token => $tok, expect => 200);
via(GET => $O, token => $tok, expect => 200);
via(PATCH => $O, token => $tok, json => { name => 'Prism Org' }, expect => 200);
via(GET => "$O/members", token => $tok, expect => 200);
via(GET => "$O/audit", token => $tok, expect => 200);
via(GET => "$O/audit/verify", token => $tok, expect => 200);
my (undef, $p) = via(POST => "$O/projects", token => $tok,
                     json => { name => 'Shop', slug => 'shop' }, expect => 201);
via(POST => "$O/projects", token => $tok, json => { name => 'Shop', slug => 'shop' },
    expect => 409);
via(GET => "$O/projects", token => $tok, expect => 200);
via(GET => "$O/projects/shop", token => $tok, expect => 200);
via(GET => "$O/projects/nope", token => $tok, expect => 404);
via(GET => "$O/projects/shop/team", token => $tok, expect => 200);

# --- pipeline requests: idempotency --------------------------------------------------
my %req = (project => 'shop', kind => 'build', title => 'A bakery', body => 'Sell bread.');
my $key = { 'Idempotency-Key' => 'prism-' . uniq('k') };
my (undef, $rq) = via(POST => "$O/requests", token => $tok, json => \%req, headers => $key,
                      expect => 201);
my (undef, undef, $replay) = via(POST => "$O/requests", token => $tok, json => \%req,
                                 headers => $key, expect => 200);
is($replay->header('Idempotent-Replayed'), 'true', '... a replay');
via(POST => "$O/requests", token => $tok, json => { %req, title => 'Another' },
    headers => $key, expect => 409);
via(GET => "$O/requests", token => $tok, expect => 200);
via(GET => "$O/requests/$rq->{id}", token => $tok, expect => 200);
via(GET => "$O/requests/$rq->{id}/lifecycle", token => $tok, expect => 200);

# --- runs ----------------------------------------------------------------------------
my $run = run_fixture($org, 'shop');
via(GET => "$O/projects/shop/runs", token => $tok, expect => 200);
via(GET => "$O/projects/shop/runs/$run", token => $tok, expect => 200);
via(GET => "$O/runs/$run/logs", token => $tok, expect => 200);
via(POST => "$O/projects/shop/runs/$run/cancel", token => $tok, expect => 409);

# --- documents, a provider that fails (502), attachments ------------------------------
my $product = new_product($org, 'shop', $tok);
via(GET => "$O/products/$product->{id}", token => $tok, expect => 200);
my (undef, $d) = via(POST => "$O/products/$product->{id}/documents", token => $tok,
                     json => { kind => 'section', title => 'Cart', body => "# Cart\n\nText.\n" },
                     expect => 201);
via(GET => "$O/documents/$d->{id}", token => $tok, expect => 200);
via(GET => "$O/documents/$d->{id}/versions", token => $tok, expect => 200);
via(GET => "$O/doc-versions/$d->{current_version}{id}/content", token => $tok, expect => 200)
    if ref $d->{current_version} eq 'HASH';
my $llm = new_llm(flavor => 'openai');
my $prov = new_provider($org, $tok, $llm);
via(GET => "$O/providers", token => $tok, expect => 200);
via(POST => "$O/providers/$prov->{id}/default", token => $tok, expect => 200);
$llm->control(mode => 'server_error');
via(POST => "$O/documents/$d->{id}/regenerate", token => $tok, json => {}, expect => 502);
$llm->reset;

my (undef, $att) = via(POST => "$O/attachments?document_id=$d->{id}&filename=notes.txt",
                       token => $tok, raw => "hello\n",
                       headers => { 'Content-Type' => 'text/plain' }, expect => 201);
my (undef, undef, $content) = via(GET => "$O/attachments/$att->{id}/content", token => $tok,
                                  expect => 200);
is($content->header('Content-Type'), 'text/plain', '... served with its stored type');
via(GET => "$O/attachments", token => $tok, expect => 200);
via(DELETE => "$O/attachments/$att->{id}", token => $tok, expect => 204);

# --- a rate limit: RateLimit-* on each creation, then 429 with Retry-After ----------
{
    my $burst = new_token(new_user('prism-burst'), scope => 'admin');
    my ($r, @seen);
    for my $i (1 .. 60) {
        my $st;
        ($st, undef, $r) = api(POST => '/api/me/tokens', token => $burst, base => $proxy,
                               json => { name => "burst$i", scope => 'read' });
        push @broken, map { "POST /api/me/tokens -> $st: $_" } answer_violations($r);
        push @seen, $st;
        last if $st == 429;
    }
    is($r->code, 429, 'token creations until the limit: 201s, then 429')
        or diag("@seen");
    $kinds{'POST /api/me/tokens -> 429 rate_limited'}++;
    ok(defined $r->header('RateLimit-Limit'), '... with RateLimit-Limit');
    like($r->header('Retry-After') // '', qr/^[1-9]\d*$/, '... and Retry-After');
}

# --- the service's own -------------------------------------------------------------
via(GET => '/api/openapi.json', expect => 200);

is(scalar @broken, 0, scalar(keys %kinds) . ' kinds of answer through Prism, none breaking '
   . 'the document') or diag(join "\n", @broken);

# --- the same proxy over a document that drifted from the service ------------------
{
    my $drift = json()->decode(json()->encode($doc));
    my $me = $drift->{components}{schemas}{Me};
    push @{ $me->{required} }, 'nickname';
    $me->{properties}{nickname} = { type => 'string' };
    delete $drift->{paths}{'/api/orgs/{orgSlug}/projects'}{post}{responses}{409};
    $drift->{paths}{'/api/orgs'}{get}{responses}{200}{headers}{'X-Org-Count'}
        = { required => JSON::PP::true(), schema => { type => 'integer' } };
    $proxy = start_proxy('drifted', $drift);
    @broken = ();
    via(GET => '/api/me', token => $tok, expect => 200);
    ok(scalar(grep { /GET \/api\/me/ && /nickname/ } @broken),
       'Prism reports an answer without a key the document requires') or diag(@broken);
    @broken = ();
    via(POST => "$O/projects", token => $tok, json => { name => 'Shop', slug => 'shop' },
        expect => 409);
    ok(scalar(@broken), 'Prism reports a status the operation does not declare')
        or diag(@broken);
    @broken = ();
    via(GET => '/api/orgs', token => $tok, expect => 200);
    ok(scalar(grep { /x-org-count/i } @broken),
       'Prism reports an answer without a header the document requires') or diag(@broken);
}

done_testing();
