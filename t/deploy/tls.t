# svc-agent over HTTPS, as in production: a second httpd with mod_svc on
# the test database serves the API over TLS with a certificate from a
# private authority (the one tools/test.sh makes). An agent told that
# authority (SVC_AGENT_CA_FILE) connects, takes its work as an event stream
# and deploys a workload, and when the server goes away and comes back its
# stream resumes after the last event it had; an agent that is not told it refuses the
# service's certificate, says so in its log,
# and its target stays pending.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use File::Basename qw(dirname);
use File::Spec::Functions qw(catfile);
use POSIX ();
use SvcTest;
use SvcDeploy;

my $libexec = `apxs -q LIBEXECDIR 2>/dev/null` || '/usr/lib/apache2/modules';
chomp $libexec;
my $ca = $ENV{SVC_TEST_CA_FILE};
plan skip_all => 'needs the test CA and SVC_DB (use tools/test.sh)'
    unless $ca && -r $ca && $ENV{SVC_DB} && $ENV{SVC_SECRET};
plan skip_all => "no mod_ssl in $libexec" unless -f catfile($libexec, 'mod_ssl.so');
skip_without_sandbox();

my $certs = dirname($ca);
my ($hdir, $hconf, $hport) = scratch_httpd_conf(<<"EOF");
# The queue is the test server's: this one carries out no runs.
SvcRunSupervisor Off
<IfModule !ssl_module>
    LoadModule ssl_module "$libexec/mod_ssl.so"
</IfModule>
SSLEngine on
SSLCertificateFile "$certs/server.pem"
SSLCertificateKeyFile "$certs/server.key"
<Location /api/>
    SetHandler svc
</Location>
# What the agent asked for, query included (where its stream resumes).
LogFormat "%r" agentlog
CustomLog logs/access_log agentlog
EOF
my $url = "https://127.0.0.1:$hport";

# The TLS server, started (again, on the same port) and stopped.
my $hpid;
sub slurp { my $f = shift; open my $fh, '<', $f or return ''; local $/; return <$fh> // '' }
sub tls_start {
    my $mark = length slurp("$hdir/error_log");
    $hpid = fork() // die "fork: $!";
    if (!$hpid) {
        open STDOUT, '>>', "$hdir/stdout";
        open STDERR, '>>', "$hdir/stderr";
        exec $ENV{SVC_TEST_HTTPD} // Apache::Test::config()->{vars}{httpd}, '-f', $hconf,
            '-DFOREGROUND' or POSIX::_exit(127);
    }
    wait_for(sub { substr(slurp("$hdir/error_log"), $mark) =~ /AH00489:/ }, timeout => 20)
        or BAIL_OUT("the TLS httpd did not start:\n" . slurp("$hdir/error_log")
                    . slurp("$hdir/stderr"));
}
sub tls_stop {
    kill 'TERM', $hpid;
    waitpid($hpid, 0);
}
tls_start();

my $owner = new_user('tls-owner');
my $org = new_org($owner, prefix => 'tls');
my $tok = new_token($owner, scope => 'admin');
my $proj = new_project($org, $tok, 'Secured');

sub target_doc {
    my $id = shift;
    my (undef, $l) = api(GET => "/api/orgs/$org/deploy-targets", token => $tok);
    my ($t) = grep { $_->{id} eq $id } @{ $l->{data} };
    return $t;
}

# --- an agent that does not know the service's authority ---------------------------------
my $lost = new_target($org, $tok, 'tls-untrusting');
my $untrusting = start_agent(key => $lost->{key}, name => 'tls-untrusting',
                             env => { SVC_AGENT_URL => $url });
ok(wait_for(sub { agent_log($untrusting) =~ m{GET /api/agent/deployments: .*certificate}i },
            timeout => 30),
   'an agent without the CA file refuses the service\'s certificate, and says so')
    or diag(agent_log($untrusting));
is(stop_agent($untrusting), 0, '... and stops on SIGTERM');
is(target_doc($lost->{id})->{status}, 'pending', '... its target never heard from');

# --- an agent told the authority -------------------------------------------------------------
my $target = new_target($org, $tok, 'tls-box');
my $agent = start_agent(key => $target->{key}, name => 'tls-box',
                        env => { SVC_AGENT_URL => $url, SVC_AGENT_CA_FILE => $ca });
my $t = wait_for(sub { my $x = target_doc($target->{id}); $x->{status} eq 'online' ? $x : undef },
                 timeout => 30, interval => 0.2);
ok($t, 'with SVC_AGENT_CA_FILE the agent connects over HTTPS') or diag(agent_log($agent));

my ($bundle, $commit) = git_bundle('Procfile' => "web: python3 -m http.server \$PORT\n",
                                   'index.html' => "over tls\n");
my $run = run_fixture($org, $proj, bundle => $bundle, commit => $commit);
my ($st, $d) = api(POST => "/api/orgs/$org/deployments", token => $tok,
                   json => { project => $proj, target_id => $target->{id}, run_id => $run });
$d = wait_deployment($org, $tok, $d->{id}, 'planned');
($st) = api(POST => "/api/orgs/$org/deployments/$d->{id}/approve", token => $tok,
            json => { plan_version => $d->{plan}{version} });
is($st, 200, 'a deployment on it is approved (on the plain test server)');
$d = wait_deployment($org, $tok, $d->{id}, 'running', timeout => 90);
ok($d, '... its work reaches the agent over the HTTPS stream, and it runs')
    or diag(agent_log($agent));
my ($code, $body) = http_get($d->{workload}{replicas}[0]{port}, '/index.html');
is($code, 200, '... answering on its port');
like($body, qr/over tls/, '... with the run\'s file');

# --- the service goes away and comes back: the stream resumes where it was ----------------------
my $id = $d->{id};
my $last = psql_value("SELECT max(id) FROM events WHERE target_id = '$target->{id}'");
my $asked = () = slurp("$hdir/logs/access_log") =~ m{^GET /api/agent/deployments }mg;
cmp_ok($asked, '>=', 1, 'the agent read its view when it connected');
tls_stop();
($st, $d) = api(POST => "/api/orgs/$org/deployments/$id/scale", token => $tok,
                json => { replicas => 2 });
is($st, 200, 'scaled to 2 while the agent\'s server is down');
tls_start();
$d = wait_for(sub {
    my $x = deployment($org, $tok, $id);
    my $up = grep { $_->{healthy} } @{ $x->{workload}{replicas} };
    $x->{status} eq 'running' && $up == 2 ? $x : undef
}, timeout => 90, interval => 0.3);
ok($d, 'the server back, the agent does the work: two healthy replicas')
    or diag(agent_log($agent));
is(scalar(() = slurp("$hdir/logs/access_log") =~ m{^GET /api/agent/deployments }mg), $asked,
   '... without reading its whole view again');
($st) = api(POST => "/api/orgs/$org/deployments/$id/teardown", token => $tok);
ok(wait_deployment($org, $tok, $id, 'torn_down', timeout => 30), 'torn down');
ok(!-e catfile($agent->{dir}, 'deployments', $id), '... no file');
# A stream is logged when it ends: a rotated key ends the agent's at once.
api(POST => "/api/orgs/$org/deploy-targets/$target->{id}/rotate-key", token => $tok);
ok(wait_for(sub { slurp("$hdir/logs/access_log")
                      =~ m{^GET /api/agent/work\?last_event_id=\Q$last\E }m }, timeout => 30),
   "the stream it reopened when the server came back resumed after event $last")
    or diag(slurp("$hdir/logs/access_log"));

is(stop_agent($agent), 0, 'the agent stops');
unlike(agent_log($agent) . agent_log($untrusting), qr/\Q$target->{key}\E|\Q$lost->{key}\E/,
       'no key in the agents\' logs');
tls_stop();

done_testing();
