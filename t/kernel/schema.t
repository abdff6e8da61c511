# Start-up safety: the API refuses service with 503 and a clear log line
# while the database is behind the schema this build needs, and /internal/
# answers only to the addresses SvcInternalAllow names.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use SvcTest;

# The svc_restricted virtual host: its own port, an empty database, and
# SvcInternalAllow 192.0.2.0/24 (not the loopback address we come from).
Apache::TestRequest::module('svc_restricted');
my $hostport = Apache::TestRequest::hostport();
ok($hostport, "the restricted virtual host listens ($hostport)");
my $base = "http://$hostport";
Apache::TestRequest::module('default');

my $ua = LWP::UserAgent->new(max_redirect => 0, timeout => 30);
my $user = new_user('schema');
my $tok = new_token($user, scope => 'admin');

my $mark = expect_errors_begin();

# /internal/ from an address outside the allow-list: not even confirmed to exist.
my $res = $ua->get("$base/internal/health");
is($res->code, 404, 'health from outside SvcInternalAllow: 404');
like($res->content, qr/"code":"not_found"/, '... a not_found problem document');

# The schema is behind: 503 with a clear code, and a Retry-After.
$res = $ua->get("$base/api/me", Authorization => "Bearer $tok");
is($res->code, 503, 'API with the schema behind: 503');
like($res->content, qr/"code":"schema_behind"/, '... schema_behind');
ok($res->header('Retry-After'), '... with Retry-After');
# What is decided without the database is answered without it, even here.
(my $bad = $tok) =~ s/.$/substr($tok, -1) eq 'A' ? 'B' : 'A'/e;
$res = $ua->get("$base/api/me", Authorization => "Bearer $bad");
is($res->code, 401, 'a malformed token is 401 whatever the schema');
$res = $ua->get("$base/api/me");
is($res->code, 401, 'no credentials: 401 whatever the schema');
$res = $ua->get("$base/api/openapi.json");
is($res->code, 200, 'the OpenAPI document needs no database and is served');

# ... and the log says what to do, with the versions.
my $end = expect_errors_end($mark);
open my $fh, '<', error_log_path() or die;
seek $fh, $mark, 0;
read $fh, my $chunk, $end - $mark;
like($chunk, qr/SVC0011: the database schema is at version 0; this build needs \d+\. Run `svcctl migrate`/,
     'the error log names the versions and the fix');

# The main server (migrated database, loopback allowed) is unaffected.
my ($st) = api(GET => '/api/me', token => $tok);
is($st, 200, 'the main server answers 200');
($st) = api(GET => '/internal/health');
is($st, 200, 'the main server\'s health is 200 from loopback');

done_testing();
