# The httpd configuration `make run` generates (tools/run.sh) is what a
# newcomer's first server runs, so it carries what a production server
# should (issue 14, items 9 and 10): mod_reqtimeout with Debian's values,
# so clients that trickle headers or a body in cannot hold every worker,
# and TraceEnable Off; and (issue 17) the request id in the access log and
# httpd's refusals as problem documents. tools/run.sh's own function writes
# it here, into a scratch directory, and httpd's configuration test must
# accept it.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use SvcTest;

my $top = $ENV{SVC_TOP} // "$FindBin::Bin/../..";
my $var = tempdir(CLEANUP => 1);
my $script = <<'EOF';
set -euo pipefail
SVC_RUN_LIB=1
. "$1/tools/run.sh"
VAR=$2
PORT=18089
IS_ROOT=0
mkdir -p "$VAR/run" "$VAR/log" "$VAR/htdocs"
write_httpd_conf "$VAR/log/error_log"
cat "$VAR/httpd.conf"
EOF
# Under SANITIZE=1 the module must be loaded by the wrapper that preloads
# the sanitizer runtime (tools/test.sh), as the test server is.
local $ENV{SVC_HTTPD} = $ENV{SVC_TEST_HTTPD} if $ENV{SVC_TEST_HTTPD};
my ($rc, $out, $err) = SvcTest::run([ 'bash', '-c', $script, 'run_conf', $top, $var ]);
is($rc >> 8, 0, "make run's configuration is written, and httpd -t accepts it") or diag($err);
like($out, qr{^LoadModule reqtimeout_module \S+/mod_reqtimeout\.so$}m, 'it loads mod_reqtimeout');
like($out, qr{^RequestReadTimeout handshake=0 header=20-40,MinRate=500 body=20,MinRate=500$}m,
     "... with Debian's limits on slow headers and bodies");
like($out, qr{^TraceEnable Off$}m, 'TRACE is off');
like($out, qr{^SvcPublicURL\s+http://127\.0\.0\.1:18089$}m,
     'the public URL is set, so sign-in may be switched on');
# Issue 17: the access log names each answer's request id, and httpd's
# refusals on the service's URLs go to the module's problem documents.
like($out, qr{^LogFormat "[^"\n]*(?:\\"[^"\n]*)*%\{X-Request-Id\}o" svc$}m,
     'the access log format ends with the request id');
like($out, qr{^CustomLog "[^"]+/access_log" svc$}m, '... and the access log uses it');
# Issue 23: billing's keys from the environment, as the App's are, and two
# example plans.
like($out, qr{^SvcBillingSecretKey\s+env:BILLING_SECRET_KEY$}m, "billing's secret key from BILLING_SECRET_KEY");
like($out, qr{^SvcBillingWebhookSecret\s+env:BILLING_WEBHOOK_SECRET$}m, '... its webhook secret from BILLING_WEBHOOK_SECRET');
like($out, qr{^SvcBillingApiURL\s+env:BILLING_API_URL$}m, '... its API from BILLING_API_URL');
is_deeply([ $out =~ /^SvcBillingPlan (\w+) /mg ], [qw(team business)], '... and two example plans');
like($out, qr{^<Location /webhooks/billing>$}m, 'the billing webhook is served');
for my $code (400, 403, 404, 413, 414, 500) {
    like($out, qr{^\s+ErrorDocument $code /api/_error$}m, "ErrorDocument $code goes to the module");
}

done_testing();
