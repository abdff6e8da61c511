# Share tokens in URLs that httpd refuses itself (issue 17): an encoded NUL
# or '/', a malformed escape, a path too long or climbing above the root,
# a malformed request line. Before the fix httpd answered with its own HTML
# page and wrote the whole token to access_log (%r) and error_log (AH00026).
# Now the token is out of every line httpd writes for these requests, the
# service decodes its own paths (so httpd refuses none of them), and what
# is refused once a Location applies is the module's problem document. The
# token is a real, valid share link's.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use File::Spec::Functions qw(catfile);
use SvcTest;

my $owner = new_user('refused-owner');
my $org   = new_org($owner, prefix => 'refused');
my $tok   = new_token($owner, scope => 'admin');
my $proj  = uniq('proj');
api(POST => "/api/orgs/$org/projects", token => $tok, json => { slug => $proj, name => 'P' });
my $prd = new_product($org, $proj, $tok, name => 'Refused product');
my $doc = new_document($org, $prd->{id}, $tok, title => 'Doc', body => "# Doc\n\nText.\n");
my ($st, $sh) = api(POST => "/api/orgs/$org/products/$prd->{id}/shares", token => $tok,
                    json => {});
is($st, 201, 'a share link');
my $T = $sh->{token};
record_secret($T);
my $D = $doc->{id};
is((api(GET => "/api/share/$T"))[0], 200, '... whose token is valid');

# --- httpd's refusals, answered by the module ------------------------------------------------
my $long = $T . ('A' x 5000);
my @cases = (
    [ "GET /api/share/$T%00 HTTP/1.1",                     404, 'a token with %00' ],
    [ "GET /api/share/$T%2Fdocuments%2F$D HTTP/1.1",       404, 'the rest of the path as %2F' ],
    [ "GET /api/share/$T/documents%2F$D HTTP/1.1",         404, 'documents%2F<id>' ],
    [ "GET /api/share/$T/documents/%00 HTTP/1.1",          404, 'an encoded NUL after the token' ],
    [ "GET /api/share/$T/documents%2f$D HTTP/1.1",         404, 'a lowercase %2f' ],
    [ "POST /api/share/$T%2Fcomments HTTP/1.1",            404, 'a POST with %2F' ],
    [ "HEAD /api/share/$T/documents%2F$D HTTP/1.1",        404, 'HEAD with %2F' ],
    [ "GET /api/share/$long HTTP/1.1",                     414, 'a 5,000-character token' ],
    [ "GET /api/share/$long/documents%2F$D HTTP/1.1",      404, 'a long token and %2F after it' ],
);
# httpd itself refuses a malformed escape (AH10244, an error line: expected
# here), before any Location applies; the module still answers it.
my @malformed = (
    [ "GET /api/share/$T%zz HTTP/1.1",                     400, 'a token with %zz' ],
    [ "GET /api/share/$T/documents/$D%zz HTTP/1.1",        400, 'a malformed escape after the token' ],
    [ "GET /api/share/$T%2 HTTP/1.1",                      400, 'a token with a cut escape' ],
);
my $mark = expect_errors_begin();
check($_) for @malformed;
expect_errors_end($mark);
check($_) for @cases;

sub check {
    my ($c) = @_;
    my ($line, $want, $name) = @$c;
    my ($s, $ct, $body) = raw_http($line,
                                   headers => { Referer => "http://ui.example.test/share/$T" });
    is($s, $want, "$name: $want");
    if ($line =~ /^HEAD/) {
        is($ct, 'application/problem+json', '... a problem document\'s head');
        return;
    }
    is($ct, 'application/problem+json', '... a problem document, not httpd\'s page');
    my $p = eval { json()->decode($body) } // {};
    is($p->{status}, $want, '... of that status');
    like($p->{code} // '', qr/^[a-z_]+$/, "... with a code ($p->{code})");
    like($p->{request_id} // '', qr/^req_/, '... and a request id');
}

# Paths that still reach the portal once httpd resolved them: the token is
# not logged either.
(my $s2, my $ct2) = raw_http("GET /api/share/$T/../$T/documents/$D HTTP/1.1");
is($s2, 200, 'dot segments around the token: resolved as httpd resolves them (200)');
is($ct2, 'text/markdown', '... the document');
($s2) = raw_http("GET /api/x/../share/$T HTTP/1.1");
is($s2, 200, 'the share prefix reached through a dot segment: 200');
($s2) = raw_http("GET /api/%73hare/$T HTTP/1.1");
is($s2, 200, 'the share prefix with an encoded letter: 200');

# Refused before any Location applies: httpd's own answer, but no token in
# its log lines either (AH10244 is an error line: expected here).
$mark = expect_errors_begin();
my $ct3;
($s2, $ct3) = raw_http("GET /api/share/$T/../../../../x HTTP/1.1",
                       headers => { Referer => "http://ui.example.test/share/$T" });
is($s2, 400, 'a path above the root: 400');
is($ct3, 'application/problem+json', '... a problem document');
($s2) = raw_http("GET /api/share/$T HTTP/1.1 trailing");
is($s2, 400, 'a malformed request line: httpd\'s 400');
($s2) = raw_http("GET /api/share/$T" . ('B' x 9000) . " HTTP/1.1");
is($s2, 414, 'a request line over LimitRequestLine: httpd\'s 414');
expect_errors_end($mark);

# --- the logs ---------------------------------------------------------------------------------
# One more request, after all the others: once its line is there, theirs are.
is((api(GET => "/api/share/$T/end-of-refused-t"))[0], 404, 'a last request');
my ($access, $errors) = ('', '');
wait_for(sub {
    $access = do { local (@ARGV, $/) = (catfile(t_logs(), 'access_log')); <> } // '';
    return $access =~ m{/end-of-refused-t HTTP/1\.1" 404 };
}, timeout => 10);
$errors = do { local (@ARGV, $/) = (error_log_path()); <> } // '';
my @lines = grep { m{/api/|\[REDACTED\]} } split /\n/, $access;
ok(scalar @lines >= scalar @cases, 'the requests are in the access log (' . scalar(@lines) . ')');
is(scalar(grep { index($_, $T) >= 0 } split /\n/, $access), 0, 'access_log: the token nowhere');
is(scalar(grep { index($_, $T) >= 0 } split /\n/, $errors), 0, 'error_log: the token nowhere');
like($access, qr{"GET /api/share/\[REDACTED\]/documents/\Q$D\E HTTP/1\.1" 200 },
     'access_log: the request line with [REDACTED] for the token, the rest kept');
like($access, qr{"GET /api/share/\[REDACTED\] HTTP/1\.1" 404 \d+ "-" - - - req_},
     '... a refused one with its request id');
like($access, qr{"GET /api/share/\[REDACTED\] HTTP/1\.1" 414 }, '... the long one too');
like($errors, qr{AH10244: invalid URI path \(/\[REDACTED\]\), referer: \[REDACTED\]},
     'error_log: httpd\'s own line (AH10244) quotes the path masked, and the Referer');
unlike($errors, qr{AH00026}, 'httpd decodes none of the service\'s paths (no AH00026)');
like($access, qr{"GET /api/share/\[REDACTED\] HTTP/1\.1" 200 }, 'a portal request logs masked');

done_testing();
