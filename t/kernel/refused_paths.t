# Paths httpd refused itself on the service's URLs (issue 17): a segment
# past the file system's limits was a 403 text/html from core's
# translate_name (AH00127: Cannot map ... File name too long), an encoded
# '/' or NUL a 404 page (AH00026), a malformed escape a 400 page. The
# service's URLs are no files now (no translation to the file system), the
# module decodes its own paths, and every such request is its own problem
# document: 404, or 414 uri_too_long past 2,048 bytes of path.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $user = new_user('paths');
my $tok  = new_token($user, scope => 'read');

sub problem {
    my ($line, $want, $code, $name, %opt) = @_;
    my ($st, $ct, $body) = raw_http($line, headers => { Authorization => "Bearer $tok" }, %opt);
    is($st, $want, "$name: $want");
    is($ct, 'application/problem+json', '... a problem document, not httpd\'s page');
    my $p = eval { json()->decode($body) } // {};
    is($p->{code}, $code, "... $code");
    like($p->{request_id} // '', qr/^req_/, '... with a request id');
}

# --- long paths: never the file system's business ---------------------------------------
problem("GET /api/orgs/" . ('x' x 5000) . " HTTP/1.1", 414, 'uri_too_long',
        'a 5,000-character segment under /api/');
problem("GET /api/share/" . ('A' x 5000) . " HTTP/1.1", 414, 'uri_too_long',
        'a 5,000-character share token');
problem("GET /internal/" . ('y' x 5000) . " HTTP/1.1", 414, 'uri_too_long',
        'a 5,000-character path under /internal/');
problem("GET /auth/" . ('z' x 4200) . " HTTP/1.1", 414, 'uri_too_long',
        'a 4,200-character path under /auth/');
problem("GET /api/orgs/" . join('/', ('s' x 250) x 12) . " HTTP/1.1", 414, 'uri_too_long',
        'twelve segments of 250 characters');
problem("GET /api/orgs/" . ('x' x 300) . " HTTP/1.1", 404, 'not_found',
        'a segment past NAME_MAX (300 characters)');
# The bound: 2,048 bytes of path are routed, one more is not.
my $at = '/api/' . ('a' x (2048 - 5));
is(length $at, 2048, 'a path of exactly 2,048 bytes');
problem("GET $at HTTP/1.1", 404, 'not_found', '... is routed (no such endpoint)');
problem("GET ${at}b HTTP/1.1", 414, 'uri_too_long', '... one byte more is too long');
{
    # The bound is on the decoded path.
    my $enc = '/api/' . ('%61' x 2000);
    problem("GET $enc HTTP/1.1", 404, 'not_found', '6,005 bytes of escapes, 2,005 decoded');
}
my ($st, $me) = api(GET => '/api/me', token => $tok);
is($st, 200, 'an ordinary request still works');

# --- escapes httpd refuses ----------------------------------------------------------------
problem("GET /api/orgs/a%2Fb HTTP/1.1", 404, 'not_found', 'an encoded slash');
problem("GET /api/me%00 HTTP/1.1", 404, 'not_found', 'an encoded NUL');
problem("GET /api/orgs%2F HTTP/1.1", 404, 'not_found', 'an encoded slash at the end');
problem("DELETE /api/me/tokens/tok_x%2F..%2F HTTP/1.1", 404, 'not_found',
        'an encoded slash in a DELETE');
{
    my $mark = expect_errors_begin();   # httpd logs AH10244 (error) for these
    problem("GET /api/me%zz HTTP/1.1", 400, 'bad_request', 'a malformed escape');
    problem("GET /auth/%G0 HTTP/1.1", 400, 'bad_request', 'a malformed escape under /auth/');
    problem("GET /api/../../x HTTP/1.1", 400, 'bad_request', 'a path above the root');
    expect_errors_end($mark);
}
# A decoded path the router still reads right: %41 is 'A', %2D is '-'.
($st) = raw_http("GET /api/m%65 HTTP/1.1", headers => { Authorization => "Bearer $tok" });
is($st, 200, 'an encoded unreserved letter is decoded (GET /api/m%65: 200)');

done_testing();
