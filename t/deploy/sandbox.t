# svc-agent's configuration and its workloads' sandbox: no settings from
# argv, a configuration file others may read refused, plain HTTP only to
# this machine, the key needed; an agent configured by its 0600 file alone;
# and a workload that looks around: it can write its checkout, and cannot
# see the agent's data directory or configuration (the key), nor write the
# system, nor see the agent's processes; and another runner in place of
# bubblewrap (SVC_AGENT_RUNNER, as podman would be configured), its words
# filled in, a template without {command} refused.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use File::Spec::Functions qw(catfile);
use File::Temp qw(tempdir);
use SvcTest;
use SvcDeploy;

skip_without_sandbox();

my $owner = new_user('sandbox-owner');
my $org = new_org($owner, prefix => 'sandbox');
my $tok = new_token($owner, scope => 'admin');
my $proj = new_project($org, $tok, 'Probed');
my $target = new_target($org, $tok, 'probe-box');
# The configuration file lives outside t/logs: it holds the key, and the
# log check reads every file there.
my $etc = tempdir(CLEANUP => 1);

# run_agent(env => {...}, args => [...]) → (exit status, output) of an agent
# that is expected to refuse to start.
sub run_agent {
    my %opt = @_;
    local %ENV = %ENV;
    delete $ENV{$_} for grep { /^SVC_AGENT_/ } keys %ENV;
    $ENV{$_} = $opt{env}{$_} for keys %{ $opt{env} // {} };
    my ($rc, $out, $err) = SvcTest::run([ agent_binary(), @{ $opt{args} // [] } ]);
    return ($rc, "$out$err");
}

my %good = (SVC_AGENT_URL => SvcTest::base_url(), SVC_AGENT_KEY => $target->{key},
            SVC_AGENT_DIR => tempdir(CLEANUP => 1));
my ($rc, $out) = run_agent(env => \%good, args => [ '--key', $target->{key} ]);
is($rc >> 8, 2, 'arguments are refused (exit 2)');
like($out, qr/takes no arguments/, '... saying where settings come from');
unlike($out, qr/\Q$target->{key}\E/, '... without repeating the key');
($rc, $out) = run_agent(env => { %good, SVC_AGENT_URL => 'http://svc.example.com' });
is($rc >> 8, 1, 'plain HTTP to another machine is refused');
like($out, qr/must be https/, '... saying so');
($rc, $out) = run_agent(env => { %good, SVC_AGENT_KEY => undef });
is($rc >> 8, 1, 'no key: the agent does not start');
($rc, $out) = run_agent(env => { %good, SVC_AGENT_KEY => 'svc_pat_' . ('a' x 49) });
is($rc >> 8, 1, 'a personal access token is no key');
my $loose = catfile($etc, 'loose.conf');
open my $fh, '>', $loose or die $!;
print $fh "url = " . SvcTest::base_url() . "\nkey = $target->{key}\ndir = $good{SVC_AGENT_DIR}\n";
close $fh;
chmod 0644, $loose;
($rc, $out) = run_agent(env => { SVC_AGENT_CONFIG => $loose });
is($rc >> 8, 1, 'a configuration file others may read is refused');
like($out, qr/must not be readable by group or others/, '... saying why');
unlike($out, qr/\Q$target->{key}\E/, '... without showing the key');

# --- an agent from its configuration file alone -----------------------------------------
my $dir = tempdir("agent-probe-XXXX", DIR => SvcTest::t_logs(), CLEANUP => 0);
my $conf = catfile($etc, 'agent.conf');
open $fh, '>', $conf or die $!;
my $base = 20000 + int(rand(20000));
print $fh "# the probe's agent\nurl = " . SvcTest::base_url() . "\nkey = $target->{key}\n"
        . "dir = $dir\nports = $base-" . ($base + 20) . "\nheartbeat = 2\n";
close $fh;
chmod 0600, $conf;
my $agent = start_agent(name => 'probe', dir => $dir,
                        env => { SVC_AGENT_URL => undef, SVC_AGENT_KEY => undef,
                                 SVC_AGENT_DIR => undef, SVC_AGENT_PORTS => undef,
                                 SVC_AGENT_HEARTBEAT => undef, SVC_AGENT_CONFIG => $conf });
ok(wait_for(sub {
    my (undef, $l) = api(GET => "/api/orgs/$org/deploy-targets", token => $tok);
    grep { $_->{status} eq 'online' } @{ $l->{data} }
}, timeout => 30, interval => 0.2), 'an agent configured by its 0600 file alone connects')
    or diag(agent_log($agent));
is((stat $dir)[2] & 07777, 0700, '... its data directory is made private (0700)');

# --- the workload looks around -------------------------------------------------------------
# Each probe leaves a file in the checkout (served by http.server) only when
# it could do what it must not.
# (The checkout is bound at its own path, so the directories above it exist,
# empty, in the sandbox; what the agent keeps beside it must not.)
my $probes = join '; ',
    "sleep 1",
    "ls $dir/deployments/*/state.json >/dev/null 2>&1 && echo seen > data.txt",
    "test -e $dir/deployments/*/logs && echo seen > logs.txt",
    "test -r $conf && echo seen > conf.txt",
    "(touch /usr/svc-probe || touch /etc/svc-probe || touch /var/svc-probe) 2>/dev/null "
      . "&& echo wrote > system.txt",
    "ls /proc | grep -c '^[0-9]' > procs.txt",
    "env > env.txt",
    "echo ok > written.txt";
my ($bundle, $commit) = git_bundle('Procfile' => "web: $probes; exec python3 -m http.server \$PORT\n");
my $run = run_fixture($org, $proj, bundle => $bundle, commit => $commit);
(undef, my $d) = api(POST => "/api/orgs/$org/deployments", token => $tok,
                     json => { project => $proj, target_id => $target->{id}, run_id => $run });
$d = wait_deployment($org, $tok, $d->{id}, 'planned');
api(POST => "/api/orgs/$org/deployments/$d->{id}/approve", token => $tok,
    json => { plan_version => $d->{plan}{version} });
$d = wait_deployment($org, $tok, $d->{id}, 'running', timeout => 60);
ok($d, 'the probing workload runs') or diag(agent_log($agent));
my $port = $d->{workload}{replicas}[0]{port};
is((http_get($port, '/written.txt'))[0], 200, 'it can write its checkout');
ok(-e catfile($dir, 'deployments', $d->{id}, 'state.json'), 'the agent keeps its state beside the checkout');
is((http_get($port, '/data.txt'))[0], 404, '... which the workload cannot see');
is((http_get($port, '/logs.txt'))[0], 404, '... nor its replicas\' logs');
is((http_get($port, '/conf.txt'))[0], 404, '... nor the agent\'s configuration (the key)');
is((http_get($port, '/system.txt'))[0], 404, 'it cannot write the system');
my (undef, $env) = http_get($port, '/env.txt');
unlike($env, qr/\Q$target->{key}\E|SVC_AGENT/, 'its environment holds nothing of the agent\'s');
like($env, qr/^PORT=$port$/m, '... but its port');
my (undef, $procs) = http_get($port, '/procs.txt');
my ($n) = $procs =~ /(\d+)/;
ok(defined $n && $n < 10, 'it sees only its own few processes (a PID namespace of its own: '
   . ($n // '?') . ')');
sub cmdline {
    open my $h, '<', "/proc/$_[0]/cmdline" or return '';
    local $/;
    return <$h> // '';
}
unlike(join('', map { cmdline($_) } grep { /^\d+$/ } do { opendir my $p, '/proc'; readdir $p }),
       qr/\Q$target->{key}\E/, 'no process on the machine has the key on its command line');

api(POST => "/api/orgs/$org/deployments/$d->{id}/teardown", token => $tok);
ok(wait_deployment($org, $tok, $d->{id}, 'torn_down', timeout => 30), 'torn down');
is(stop_agent($agent), 0, 'the agent stops');

# --- another runner in place of bubblewrap (podman, say) -------------------------------------
# Here the runner is env, without a sandbox: its words are the replica's
# command line, with {deployment}, {replica}, {memory_mb}, {port} and
# {command} put in.
($rc, $out) = run_agent(env => { %good, SVC_AGENT_RUNNER => '/usr/bin/env /bin/sh -c true' });
is($rc >> 8, 1, 'a runner without {command} is refused');
like($out, qr/runner must have a \{command\} argument/, '... saying so');
my $rtarget = new_target($org, $tok, 'runner-box');
my $ragent = start_agent(key => $rtarget->{key}, name => 'runner-box', env => {
    SVC_AGENT_RUNNER => '/usr/bin/env SVC_RUNNER_WORDS={deployment}:{replica}:{memory_mb}:{port} '
                        . '/bin/sh -c {command}' });
my ($rb, $rc2) = git_bundle('Procfile' => "web: exec python3 -m http.server \$PORT\n");
$run = run_fixture($org, $proj, bundle => $rb, commit => $rc2);
(undef, $d) = api(POST => "/api/orgs/$org/deployments", token => $tok,
                  json => { project => $proj, target_id => $rtarget->{id}, run_id => $run });
$d = wait_deployment($org, $tok, $d->{id}, 'planned');
api(POST => "/api/orgs/$org/deployments/$d->{id}/approve", token => $tok,
    json => { plan_version => $d->{plan}{version} });
$d = wait_deployment($org, $tok, $d->{id}, 'running', timeout => 60);
ok($d, 'a workload runs through the configured runner') or diag(agent_log($ragent));
$port = $d->{workload}{replicas}[0]{port};
my ($rpid) = workload_pids($ragent, $d->{id});
my $environ = do { local $/; open my $f, '<', "/proc/$rpid/environ" or die $!; <$f> // '' };
my $mem = $d->{applied_plan}{memory_mb};
like($environ, qr/(?:^|\0)SVC_RUNNER_WORDS=\Q$d->{id}\E:0:$mem:$port(?:\0|$)/,
     '... its words filled in (deployment, replica, memory, port)');
my ($nspid) = grep { /^NSpid:/ } do { open my $f, '<', "/proc/$rpid/status"; <$f> };
like($nspid // '', qr/^NSpid:\s+\d+\s*$/, '... and no sandbox of the agent\'s around it');
is((http_get($port, '/'))[0], 200, '... answering on its port');
api(POST => "/api/orgs/$org/deployments/$d->{id}/teardown", token => $tok);
ok(wait_deployment($org, $tok, $d->{id}, 'torn_down', timeout => 30), 'torn down');
is(scalar(workload_pids($ragent, $d->{id})), 0, '... no process');
is(stop_agent($ragent), 0, 'its agent stops');

done_testing();
