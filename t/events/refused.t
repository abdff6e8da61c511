# An event stream refused because the server cannot hold it open (not the
# event MPM): 503 streams_unavailable, a problem document written by the
# glue's one response writer like every other answer: no-store, nosniff
# (which the stream's own refusal used to leave out, issue 18), the
# request id. In an httpd of its own with the worker MPM, on the test
# database.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use POSIX ();
use Time::HiRes qw(time sleep);
use SvcTest;

my $httpd = $ENV{SVC_TEST_HTTPD} // Apache::Test::config()->{vars}{httpd};
plan skip_all => 'needs SVC_DB and SVC_SECRET (use tools/test.sh)'
    unless $httpd && $ENV{SVC_DB} && $ENV{SVC_SECRET};

sub slurp { my $f = shift; open my $fh, '<', $f or return ''; local $/; return <$fh> // '' }

my ($dir, $conf, $port) = scratch_httpd_conf(<<'EOF', mpm => 'worker');
# The queue is the test server's: this one carries out no runs.
SvcRunSupervisor Off
<Location /api/>
    SetHandler svc
</Location>
EOF
my $pid = fork() // die "fork: $!";
if (!$pid) {
    open STDOUT, '>', "$dir/stdout";
    open STDERR, '>', "$dir/stderr";
    exec $httpd, '-f', $conf, '-DFOREGROUND' or POSIX::_exit(127);
}
my $deadline = time + 20;
sleep 0.1 until time > $deadline || slurp("$dir/error_log") =~ /AH00292:/;
like(slurp("$dir/error_log"), qr/AH00292:.*configured/, 'a worker-MPM httpd with mod_svc runs')
    or diag(slurp("$dir/error_log") . slurp("$dir/stderr"));

my $owner = new_user('refused');
my $org = new_org($owner);
my $token = new_token($owner, scope => 'read');

my $s = sse_open("/api/orgs/$org/events", token => $token, port => $port);
is($s->{status}, 503, 'the org event stream: 503');
is($s->{problem} && $s->{problem}{code}, 'streams_unavailable', '... streams_unavailable');
like($s->{headers}{'content-type'} // '', qr{^application/problem\+json}, '... a problem document');
is($s->{headers}{'x-content-type-options'}, 'nosniff', '... with nosniff');
is($s->{headers}{'cache-control'}, 'no-store', '... and no-store');
like($s->{headers}{'x-request-id'} // '', qr/^req_/, '... and its request id');
is($s->{problem} && $s->{problem}{request_id}, $s->{headers}{'x-request-id'},
   '... the same as in the document');

# An ordinary answer of that server, for comparison: the same three headers.
my $t = sse_open("/api/orgs/$org/nothing-here", token => $token, port => $port);
is($t->{status}, 404, 'a path of no route: 404');
is($t->{headers}{'x-content-type-options'}, 'nosniff', '... with nosniff');

kill 'TERM', $pid;
waitpid($pid, 0);
done_testing();
