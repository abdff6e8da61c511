# TRACE is refused on the service's paths whatever the server's TraceEnable
# says (issue 14, item 10): httpd's TRACE handler echoes the request,
# Authorization and Cookie included, which is what cross-site tracing
# steals. tools/run.sh sets TraceEnable Off for `make run`; here the test
# server has httpd's default (On) and a virtual host says `extended`.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use HTTP::Request ();
use LWP::UserAgent ();
use SvcTest;

my $user = new_user('trace');
my $tok = new_token($user, scope => 'read');
my $cookie = new_session($user);

Apache::TestRequest::module('trace_on');
my $trace_on = 'http://' . Apache::TestRequest::hostport();
Apache::TestRequest::module('default');

my $ua = LWP::UserAgent->new(keep_alive => 0, timeout => 30, max_redirect => 0);

for my $base (base_url(), $trace_on) {
    my $where = $base eq $trace_on ? 'TraceEnable extended' : "httpd's default";
    for my $path ('/api/me', '/api/me/tokens', '/auth/login', '/auth/callback', '/internal/health',
                  '/webhooks/vcs', '/noop', '/api/openapi.json') {
        my $req = HTTP::Request->new(TRACE => "$base$path");
        $req->header(Authorization => "Bearer $tok");
        $req->header(Cookie => "service_session=$cookie");
        $req->content('{"x":1}') if $base eq $trace_on;
        my $res = $ua->request($req);
        is($res->code, 405, "TRACE $path ($where): 405");
        my $body = $res->content // '';
        ok(index($body, $tok) < 0 && index($body, $cookie) < 0,
           '... echoing neither the token nor the cookie');
        unlike($res->header('Content-Type') // '', qr{message/http}, '... and no message/http');
        unlike($res->header('Allow') // 'GET', qr/TRACE/, '... and Allow does not offer TRACE');
    }
}

done_testing();
