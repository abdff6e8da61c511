# The request id in the access log (issue 17): every answer of the module
# carries X-Request-Id, and the error log line of a request that failed
# names it; the access log line of the request carries it too, so the two
# can be joined. The test server logs as the packages do
# (t/conf/extra.conf.in; the packages themselves: t/tools/shipped_conf.t).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use File::Spec::Functions qw(catfile);
use SvcTest;

my $user = new_user('request-log');
my $tok  = new_token($user, scope => 'read');

my ($st, undef, $res) = api(GET => '/api/me', token => $tok);
is($st, 200, 'GET /api/me');
my $rid = $res->header('X-Request-Id') // '';
like($rid, qr/^req_[A-Za-z0-9]{22}$/, '... answers with its X-Request-Id');
my ($st2, undef, $res2) = api(GET => '/api/orgs/no-such-org-' . $$, token => $tok);
is($st2, 404, 'a request that fails: 404');
my $rid2 = $res2->header('X-Request-Id') // '';
my ($st3, $ct3, undef, $head3) = raw_http('GET /api/me%2F HTTP/1.1');
is($st3, 404, 'an encoded slash: 404');
my ($rid3) = $head3 =~ /^X-Request-Id:\s*(\S+)/mi;
ok($rid3, '... with a request id too');
my $org = new_org($user, prefix => 'request-log');
my $uid = user_id_of($user);
my ($st4, undef, $res4) = api(GET => "/api/orgs/$org/members", token => $tok);
is($st4, 200, 'a tenant route');
my $rid4 = $res4->header('X-Request-Id') // '';

my $access = '';
wait_for(sub {
    $access = do { local (@ARGV, $/) = (catfile(t_logs(), 'access_log')); <> } // '';
    return index($access, $rid) >= 0 && index($access, $rid2) >= 0 && index($access, $rid3) >= 0
           && index($access, $rid4) >= 0;
}, timeout => 10);
like($access, qr{"GET /api/me HTTP/1\.1" 200 \d+ "mod_svc-tests/1" /api/me \Q$uid\E - \Q$rid\E$}m,
     'access_log: the line of GET /api/me names its route, its user, no org, and ends with '
     . 'its request id');
like($access, qr{"GET /api/orgs/no-such-org-$$ HTTP/1\.1" 404 \d+ "mod_svc-tests/1" /api/orgs/:orgSlug \Q$uid\E - \Q$rid2\E$}m,
     '... the failed one: the route\'s template, never the raw path, and its own id');
like($access, qr{"GET /api/me%2F HTTP/1\.1" 404 \d+ "-" - - - \Q$rid3\E$}m,
     '... and the refused one: no route, no user');
like($access, qr{"GET /api/orgs/\Q$org\E/members HTTP/1\.1" 200 \d+ "mod_svc-tests/1" /api/orgs/:orgSlug/members \Q$uid\E \Q$org\E \Q$rid4\E$}m,
     '... a tenant route: the org\'s slug too');

done_testing();
