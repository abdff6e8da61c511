# A workload's life beyond the happy path, with real svc-agent processes:
# a replica that dies is started again (and the deployment stays running);
# scale refuses what is out of 0..10 and changes nothing, scales to zero
# (stopped, no process) and back up from there; a replan of a running
# deployment leaves it running on the plan it was approved with until the
# new plan is approved, which restarts the replicas on it; work given while
# the agent is away is done when it comes back; and a workload that never
# answers its health check, or whose process exits at once, fails with the
# reason (then starts again, or is torn down: no process, no file).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use File::Spec::Functions qw(catfile);
use SvcTest;
use SvcDeploy;

skip_without_sandbox();

my $owner = new_user('life-owner');
my $org = new_org($owner, prefix => 'life');
my $tok = new_token($owner, scope => 'admin');
my $proj = new_project($org, $tok, 'Lived');

# python3's http.server processes in a deployment's checkout.
sub servers {
    my ($agent, $id) = @_;
    return grep {
        my $cmd = do { local $/; open my $f, '<', "/proc/$_/cmdline" or next; <$f> } // '';
        my @argv = split /\0/, $cmd;
        @argv && $argv[0] =~ m{(?:^|/)python3} && grep { $_ eq 'http.server' } @argv
    } workload_pids($agent, $id);
}

# A deployment of a new run with these files, planned (from its Procfile).
sub planned {
    my ($target, %files) = @_;
    return planned_deployment($org, $tok, $proj, $target, git_bundle(%files));
}

sub approve {
    my $d = shift;
    my ($st, $x) = api(POST => "/api/orgs/$org/deployments/$d->{id}/approve", token => $tok,
                       json => { plan_version => $d->{plan}{version} });
    return ($st, $x);
}

my $target = new_target($org, $tok, 'life-1');
my $agent = start_agent(key => $target->{key}, name => 'life-1');
my $served = "web: python3 -m http.server \$PORT\n";

# --- a replica that dies is started again -------------------------------------------------
my $d = planned($target, 'Procfile' => $served, 'index.html' => "alive\n");
my $id = $d->{id};
my ($st) = approve($d);
is($st, 200, 'approved');
$d = wait_deployment($org, $tok, $id, 'running', timeout => 90);
ok($d, 'running') or diag(agent_log($agent));
my $port = $d->{workload}{replicas}[0]{port};
my ($pid) = servers($agent, $id);
ok($pid, "its replica runs (pid $pid)");
kill 'KILL', $pid;
ok(wait_for(sub { !kill 0, $pid }, timeout => 10), 'the replica is killed');
my $back = wait_for(sub {
    my ($p) = servers($agent, $id);
    $p && $p != $pid && (http_get($port, '/index.html'))[0] == 200 ? $p : undef
}, timeout => 60, interval => 0.2);
ok($back, "the agent starts it again, on the same port (pid $back)")
    or diag(agent_log($agent));
my $again = qr/(?:was killed by signal|exited with status) \d+; starting it again in \d+ s/;
like(agent_log($agent), qr/deployment \Q$id\E: replica 0 \(port $port\) $again/,
     '... and says so in its log');
$d = wait_for(sub {
    my $x = deployment($org, $tok, $id);
    my $r = $x->{workload}{replicas}[0];
    $r && $r->{restarts} >= 1 && $r->{healthy} ? $x : undef
}, timeout => 30, interval => 0.3);
ok($d, 'its workload counts the restart, healthy again');
is($d && $d->{status}, 'running', '... the deployment still running');

# --- scale: out of bounds, to zero, up from zero --------------------------------------------
for my $bad (11, -1, 'two', 2.5) {
    my $before = db_digest();
    ($st, my $p) = api(POST => "/api/orgs/$org/deployments/$id/scale", token => $tok,
                       json => { replicas => $bad });
    is($st, 400, "scale to $bad: 400");
    is($p->{errors}[0]{field}, 'replicas', '... about replicas');
    is_deeply(db_digest(), $before, '... and nothing changed');
}
($st, $d) = api(POST => "/api/orgs/$org/deployments/$id/scale", token => $tok,
                json => { replicas => 0 });
is($st, 200, 'scale to 0');
is($d->{status}, 'stopping', '... stopping');
$d = wait_deployment($org, $tok, $id, 'stopped', timeout => 30);
ok($d, '... stopped');
is(scalar(servers($agent, $id)), 0, '... no process');
($st, $d) = api(POST => "/api/orgs/$org/deployments/$id/scale", token => $tok,
                json => { replicas => 3 });
is($st, 200, 'scale a stopped deployment to 3');
is($d->{status}, 'deploying', '... deploying');
$d = wait_deployment($org, $tok, $id, 'running', timeout => 90);
ok($d, '... running');
is(scalar(grep { $_->{healthy} } @{ $d->{workload}{replicas} }), 3, '... three healthy replicas');
is(scalar(servers($agent, $id)), 3, '... three processes');

# --- replan while running ---------------------------------------------------------------------
my @old = servers($agent, $id);
($st, $d) = api(POST => "/api/orgs/$org/deployments/$id/replan", token => $tok);
is($st, 200, 'replan a running deployment');
is($d->{status}, 'planning', '... planning');
$d = wait_deployment($org, $tok, $id, 'planned');
is($d->{plan}{version}, 2, '... a new plan, version 2');
is($d->{applied_plan}{version}, 1, '... the workload still on version 1');
# Two heartbeats later (a replan gives the agent no work), nothing of it
# has changed.
my $seen = psql_value("SELECT last_seen_at FROM deploy_targets WHERE id = '$target->{id}'");
for (1 .. 2) {
    my $was = $seen;
    wait_for(sub { ($seen = psql_value("SELECT last_seen_at FROM deploy_targets WHERE id = "
                                       . "'$target->{id}'")) ne $was }, timeout => 30);
}
is_deeply([ servers($agent, $id) ], \@old, '... the same processes keep running');
is((http_get($d->{workload}{replicas}[0]{port}, '/'))[0], 200, '... and answering');
# An agent that starts while the new plan waits for approval runs what was
# approved: plan 1, three replicas.
is(stop_agent($agent), 0, 'the agent is restarted while plan 2 waits');
$agent = start_agent(key => $target->{key}, name => 'life-1r', dir => $agent->{dir});
ok(wait_for(sub { servers($agent, $id) == 3 }, timeout => 60, interval => 0.3),
   '... and brings back the three replicas of plan 1') or diag(agent_log($agent));
is(deployment($org, $tok, $id)->{status}, 'planned', '... the deployment still planned');
@old = servers($agent, $id);
($st, my $p) = api(POST => "/api/orgs/$org/deployments/$id/approve", token => $tok,
                   json => { plan_version => 1 });
is($st, 409, 'approving the old plan again: 409');
is($p->{code}, 'plan_changed', '... plan_changed');
($st, $d) = approve($d);
is($st, 200, 'the new plan is approved');
$d = wait_deployment($org, $tok, $id, 'running', timeout => 90);
ok($d, '... running');
is($d->{applied_plan}{version}, 2, '... on plan 2');
is($d->{replicas}, 1, '... with its replica count');
my @new = servers($agent, $id);
is(scalar @new, 1, '... one process');
ok(!grep({ my $n = $_; grep { $_ == $n } @old } @new), '... started anew on the new plan');

# --- work given while the agent is away ----------------------------------------------------------
is(stop_agent($agent), 0, 'the agent stops');
is(scalar(servers($agent, $id)), 0, '... its replicas with it');
($st, $d) = api(POST => "/api/orgs/$org/deployments/$id/scale", token => $tok,
                json => { replicas => 2 });
is($st, 200, 'scaled to 2 while no agent listens');
is($d->{status}, 'deploying', '... deploying');
psql("UPDATE deploy_targets SET last_seen_at = now() - interval '61 seconds' "
     . "WHERE id = '$target->{id}'");
$d = deployment($org, $tok, $id);
is($d->{target_status}, 'offline', '... its target offline');
is($d->{status}, 'deploying', '... the deployment waiting');
$agent = start_agent(key => $target->{key}, name => 'life-1b', dir => $agent->{dir});
$d = wait_deployment($org, $tok, $id, 'running', timeout => 90);
ok($d, 'the agent, back, does the work') or diag(agent_log($agent));
is($d->{target_status}, 'online', '... its target online');
is(scalar(grep { $_->{healthy} } @{ $d->{workload}{replicas} }), 2, '... two healthy replicas');
is(scalar(servers($agent, $id)), 2, '... two processes');

($st) = api(POST => "/api/orgs/$org/deployments/$id/teardown", token => $tok);
ok(wait_deployment($org, $tok, $id, 'torn_down', timeout => 30), 'torn down');

# --- workloads that fail ----------------------------------------------------------------------
# An agent that gives a replica five seconds to answer its health check.
my $strict = new_target($org, $tok, 'life-strict');
my $sagent = start_agent(key => $strict->{key}, name => 'life-strict',
                         env => { SVC_AGENT_HEALTH_TIMEOUT => 5 });

my $deaf = planned($strict, 'Procfile' => "web: exec sleep 600\n");
($st) = approve($deaf);
is($st, 200, 'a workload that never listens is approved');
$deaf = wait_deployment($org, $tok, $deaf->{id}, 'failed', timeout => 60);
ok($deaf, '... and fails') or diag(agent_log($sagent));
is($deaf->{error}{code}, 'health_check_failed', '... health_check_failed');
like($deaf->{error}{message}, qr{replica 0 did not answer GET / on port \d+ within 5 s},
     '... saying which replica did not answer, where');
is(psql_value("SELECT count(*) FROM events WHERE kind = 'deployment.status' AND "
              . "data->>'deployment_id' = '$deaf->{id}' AND data->>'status' = 'failed' "
              . "AND data->'error'->>'code' = 'health_check_failed'"), 1,
   '... a deployment.status event with the error');

my $crash = planned($strict, 'Procfile' => "web: echo about to fail; exit 3\n");
($st) = approve($crash);
$crash = wait_deployment($org, $tok, $crash->{id}, 'failed', timeout => 60);
ok($crash, 'a workload whose process exits at once fails') or diag(agent_log($sagent));
is($crash->{error}{code}, 'replica_exited', '... replica_exited');
like($crash->{error}{message}, qr{replica 0 \(port \d+\) exited with status 3, \d+ time\(s\)},
     '... with its exit status and how often');
like($crash->{error}{message}, qr{logs/replica-0\.log}, '... and where its log is');
my $log = catfile($sagent->{dir}, 'deployments', $crash->{id}, 'logs', 'replica-0.log');
like(do { local $/; open my $f, '<', $log or die "$log: $!"; <$f> }, qr/about to fail/,
     '... which holds what it wrote');

# A failed deployment starts again (and fails again), or is torn down.
($st, $d) = api(POST => "/api/orgs/$org/deployments/$deaf->{id}/start", token => $tok);
is($st, 200, 'a failed deployment is started again');
is($d->{status}, 'deploying', '... deploying');
ok(wait_deployment($org, $tok, $deaf->{id}, 'failed', timeout => 60), '... and fails again');
for my $x ($deaf, $crash) {
    ($st) = api(POST => "/api/orgs/$org/deployments/$x->{id}/teardown", token => $tok);
    is($st, 200, "teardown of the failed $x->{id}");
    ok(wait_deployment($org, $tok, $x->{id}, 'torn_down', timeout => 30), '... torn down');
    is(scalar(workload_pids($sagent, $x->{id})), 0, '... no process');
    ok(!-e catfile($sagent->{dir}, 'deployments', $x->{id}), '... no file');
}

is(stop_agent($sagent), 0, 'the agents stop');
is(stop_agent($agent), 0, '...');
unlike(agent_log($agent) . agent_log($sagent), qr/\Q$target->{key}\E|\Q$strict->{key}\E/,
       'no key in the agents\' logs');

done_testing();
