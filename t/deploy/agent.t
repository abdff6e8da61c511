# A real svc-agent (build/svc-agent) against the test httpd: a run's
# artifact made by the factory (the fake model writes a Procfile whose web
# process is python3's http.server) deployed on a target, planned from the
# Procfile, approved, reachable on its port; scaled to two replicas (two
# processes, both healthy), stopped (no process), started again; the key
# rotated while the agent runs (the old key refused, the agent says so in
# its log, and a new agent with the new key brings the workload back); the
# agent killed in the middle of a deployment and started again (the work is
# done, and reported, once); torn down (no process, no file); a second
# deployment planned by the fake model (no Procfile), handed over
# (separated: it still answers once the agent has forgotten it, and after
# the agent stopped); and the target removed at the end.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use File::Spec::Functions qw(catfile);
use SvcTest;
use SvcDeploy;

skip_without_sandbox();

my $owner = new_user('agent-owner', name => 'Ada Deploy');
my $org = new_org($owner, prefix => 'agent');
my $tok = new_token($owner, scope => 'admin');
my $proj = new_project($org, $tok, 'Served');
my $llm = new_llm(flavor => 'openai');
new_provider($org, $tok, $llm);

# python3's http.server in every replica: the Procfile's web process.
sub python_servers {
    my $dir = shift;
    return grep {
        my $cmd = do { local $/; open my $f, '<', "/proc/$_/cmdline" or next; <$f> } // '';
        my @argv = split /\0/, $cmd;
        @argv && $argv[0] =~ m{(?:^|/)python3} && grep { $_ eq 'http.server' } @argv
    } processes_under($dir);
}

# --- a run of the factory: its artifact has a Procfile ----------------------------------
my $json = JSON::PP->new->canonical;
# The factory is an agent (issue 19): the fake model calls its tools.
sub call { my ($name, %args) = @_; return { name => $name, arguments => \%args } }
$llm->control(replies => [
    { tool_calls => [ call('write_file', path => 'Procfile',
                           content => "web: python3 -m http.server \$PORT\n"),
                      call('write_file', path => 'index.html',
                           content => "<h1>served by a replica</h1>\n") ] },
    { tool_calls => [ call('finish', summary => 'A static site') ] } ]);
my ($st, $run) = api(POST => "/api/orgs/$org/projects/$proj/runs", token => $tok,
                     json => { instructions => 'Make a static site served by python3.' });
is($st, 201, 'a run is started');
$run = wait_for(sub {
    my (undef, $r) = api(GET => "/api/orgs/$org/projects/$proj/runs/$run->{id}", token => $tok);
    $r && $r->{status} =~ /^(?:succeeded|failed)$/ ? $r : undef
}, timeout => 90, interval => 0.2);
is($run->{status}, 'succeeded', '... and succeeds')
    or do { diag(explain($run)); BAIL_OUT('no artifact to deploy') };

# --- a target and its agent ---------------------------------------------------------------
my $target = new_target($org, $tok, 'box-1');
my $agent = start_agent(key => $target->{key}, name => 'box-1');
my $t = wait_for(sub {
    my (undef, $l) = api(GET => "/api/orgs/$org/deploy-targets", token => $tok);
    my ($x) = grep { $_->{id} eq $target->{id} && $_->{status} eq 'online' && $_->{agent} }
              @{ $l->{data} };
    $x
}, timeout => 30, interval => 0.2);
ok($t, 'the agent connects: its target is online') or diag(agent_log($agent));
is($t->{agent}{version}, '0.1.0', '... with the agent\'s version');
my $dirs = catfile($agent->{dir}, 'deployments');

# --- planned from the Procfile, approved, reachable -----------------------------------------
my $calls = grep { $_->{path} eq '/v1/chat/completions' } @{ $llm->requests };
($st, my $d) = api(POST => "/api/orgs/$org/deployments", token => $tok,
                   json => { project => $proj, target_id => $target->{id}, run_id => $run->{id} });
is($st, 201, 'a deployment of the run');
my $id = $d->{id};
$d = wait_deployment($org, $tok, $id, 'planned');
is($d->{plan}{source}, 'procfile', 'planned from the Procfile');
is($d->{plan}{command}, 'python3 -m http.server $PORT', '... its web process');
is(scalar(grep { $_->{path} eq '/v1/chat/completions' } @{ $llm->requests }), $calls,
   '... with no model call (those made were the run\'s)');
($st, $d) = api(POST => "/api/orgs/$org/deployments/$id/approve", token => $tok,
                json => { plan_version => $d->{plan}{version} });
is($st, 200, 'approved');
$d = wait_deployment($org, $tok, $id, 'running', timeout => 90);
ok($d, 'running once its replica answers its health check') or diag(agent_log($agent));
my $port = $d->{workload}{replicas}[0]{port};
ok($port, "... on port $port");
my ($code, $body) = http_get($port, '/index.html');
is($code, 200, 'the workload answers on its port');
like($body, qr/served by a replica/, '... with the run\'s file');
is(scalar(python_servers(catfile($dirs, $id))), 1, '... one process');

# --- scaled to two ------------------------------------------------------------------------
($st, $d) = api(POST => "/api/orgs/$org/deployments/$id/scale", token => $tok,
                json => { replicas => 2 });
is($st, 200, 'scale to 2');
$d = wait_deployment($org, $tok, $id, 'running', timeout => 60);
$d = wait_for(sub {
    my $x = deployment($org, $tok, $id);
    my @r = @{ $x->{workload}{replicas} // [] };
    (@r == 2 && !grep { !$_->{healthy} } @r) ? $x : undef
}, timeout => 30, interval => 0.2);
ok($d, 'two replicas, both healthy') or diag(explain(deployment($org, $tok, $id)));
my @ports = map { $_->{port} } @{ $d->{workload}{replicas} };
isnt($ports[0], $ports[1], '... on ports of their own');
is((http_get($_, '/'))[0], 200, "... port $_ answers") for @ports;
my @pids = python_servers(catfile($dirs, $id));
is(scalar @pids, 2, '... two processes');

# Each replica in its own PID namespace, with the checkout writable and the rest not.
my ($status) = grep { /^NSpid:/ } do { open my $f, '<', "/proc/$pids[0]/status"; <$f> };
like($status // '', qr/^NSpid:\s+\d+\s+\d+/, 'a replica has a PID namespace of its own');

# --- stopped, started ---------------------------------------------------------------------
($st, $d) = api(POST => "/api/orgs/$org/deployments/$id/stop", token => $tok);
is($st, 200, 'stop');
is($d->{status}, 'stopping', '... stopping');
$d = wait_deployment($org, $tok, $id, 'stopped', timeout => 30);
ok($d, 'stopped');
is(scalar(python_servers(catfile($dirs, $id))), 0, '... no process');
ok(-d catfile($dirs, $id, 'app'), '... the checkout kept');
($st, $d) = api(POST => "/api/orgs/$org/deployments/$id/start", token => $tok);
is($st, 200, 'start');
$d = wait_deployment($org, $tok, $id, 'running', timeout => 60);
ok($d, 'running again');
is($d->{replicas}, 1, '... with the plan\'s replica count');
is((http_get($d->{workload}{replicas}[0]{port}, '/'))[0], 200, '... and answering');
($st, my $p) = api(POST => "/api/orgs/$org/deployments/$id/start", token => $tok);
is($st, 409, 'start while running: 409');
is($p->{code}, 'invalid_status', '... invalid_status');

# --- the key rotated while the agent runs ----------------------------------------------------
($st, my $rot) = api(POST => "/api/orgs/$org/deploy-targets/$target->{id}/rotate-key",
                     token => $tok);
is($st, 200, 'the key is rotated');
($st) = api(GET => '/api/agent/deployments', token => $target->{key});
is($st, 401, 'the old key is refused');
ok(wait_for(sub { agent_log($agent) =~ /refused this agent's key \(401\)/ }, timeout => 30),
   'the agent\'s stream ends, and its log says the key was refused');
unlike(agent_log($agent), qr/\Q$target->{key}\E|\Q$rot->{key}\E/, '... never showing a key');
is(stop_agent($agent), 0, 'the agent stops on SIGTERM (exit 0)');
is(scalar(python_servers(catfile($dirs, $id))), 0, '... and its replicas with it');
$agent = start_agent(key => $rot->{key}, name => 'box-1b', dir => $agent->{dir});
$d = wait_for(sub {
    my $x = deployment($org, $tok, $id);
    my $r = $x->{workload}{replicas}[0];
    $r && $r->{healthy} && (http_get($r->{port}, '/'))[0] == 200 ? $x : undef
}, timeout => 60, interval => 0.3);
ok($d, 'with the new key, a new agent brings the workload back') or diag(agent_log($agent));
is($d->{status}, 'running', '... still running');

# --- the agent killed in the middle of a deployment ------------------------------------------
my ($slow, $sc) = git_bundle('Procfile' => "web: sleep 4 && python3 -m http.server \$PORT\n",
                             'index.html' => "slow\n");
my $srun = run_fixture($org, $proj, bundle => $slow, commit => $sc);
(undef, my $s) = api(POST => "/api/orgs/$org/deployments", token => $tok,
                     json => { project => $proj, target_id => $target->{id}, run_id => $srun });
$s = wait_deployment($org, $tok, $s->{id}, 'planned');
($st) = api(POST => "/api/orgs/$org/deployments/$s->{id}/approve", token => $tok,
            json => { plan_version => $s->{plan}{version} });
is($st, 200, 'a slow deployment is approved');
my $work = psql_value("SELECT id FROM deploy_work WHERE deployment_id = '$s->{id}'");
# (Once its command runs: the sandbox is made, and dies with its parent.)
ok(wait_for(sub { grep { /^sleep\b/ } map { my $f = "/proc/$_/cmdline";
                                             open my $h, '<', $f or return ();
                                             local $/; (<$h> // '') =~ s/\0/ /gr }
                  processes_under(catfile($dirs, $s->{id}, 'app')) },
            timeout => 30, interval => 0.05), 'its replica is starting');
kill_agent($agent);
is(deployment($org, $tok, $s->{id})->{status}, 'deploying', 'the agent is killed mid-deploy');
ok(wait_for(sub { !processes_under(catfile($dirs, $s->{id})) }, timeout => 10),
   '... its replicas die with it');
ok(!defined psql_value("SELECT outcome FROM deploy_work WHERE id = '$work'"),
   '... the work is not done');
$agent = start_agent(key => $rot->{key}, name => 'box-1c', dir => $agent->{dir});
$s = wait_deployment($org, $tok, $s->{id}, 'running', timeout => 90);
ok($s, 'a restarted agent completes it') or diag(agent_log($agent));
is(psql_value("SELECT outcome FROM deploy_work WHERE id = '$work'"), 'done', '... the work done');
is(psql_value("SELECT count(*) FROM audit_log WHERE target_id = '$s->{id}' AND "
              . "data->>'to' = 'running'"), 1, '... once: one audit entry to running');
is(psql_value("SELECT count(*) FROM events WHERE kind = 'deployment.status' AND "
              . "data->>'deployment_id' = '$s->{id}' AND data->>'status' = 'running'"), 1,
   '... and one event');
is((http_get($s->{workload}{replicas}[0]{port}, '/'))[0], 200, '... and it answers');
ok(wait_for(sub { (http_get(deployment($org, $tok, $id)->{workload}{replicas}[0]{port},
                            '/'))[0] == 200 }, timeout => 30),
   'the first deployment came back with the agent too');

# --- torn down ----------------------------------------------------------------------------------
for my $dep ($id, $s->{id}) {
    ($st, $d) = api(POST => "/api/orgs/$org/deployments/$dep/teardown", token => $tok);
    is($st, 200, "teardown of $dep");
    $d = wait_deployment($org, $tok, $dep, 'torn_down', timeout => 30);
    ok($d, '... torn down');
    is(scalar(processes_under(catfile($dirs, $dep))), 0, '... no process');
    ok(!-e catfile($dirs, $dep), '... no file');
}
($st, $p) = api(POST => "/api/orgs/$org/deployments/$id/start", token => $tok);
is($st, 409, 'a torn-down deployment changes no more');

# --- planned by the model, then handed over -------------------------------------------------------
my ($plain, $pc) = git_bundle('index.html' => "<p>handed over</p>\n", 'notes.txt' => "static\n");
my $prun = run_fixture($org, $proj, bundle => $plain, commit => $pc);
$llm->reset;
$llm->control(replies => [ $json->encode({ command => 'python3 -m http.server $PORT',
                                           health_path => '/index.html', replicas => 1,
                                           memory_mb => 256, notes => 'Static files.' }) ]);
(undef, my $m) = api(POST => "/api/orgs/$org/deployments", token => $tok,
                     json => { project => $proj, target_id => $target->{id}, run_id => $prun });
$m = wait_deployment($org, $tok, $m->{id}, 'planned');
is($m->{plan}{source}, 'model', 'without a Procfile the fake model plans it');
is($m->{plan}{health_path}, '/index.html', '... with its health path');
my ($req) = grep { $_->{path} eq '/v1/chat/completions' } @{ $llm->requests };
like(join("\n", map { $_->{content} } @{ (ref $req->{body} ? $req->{body}
                                           : json()->decode($req->{body}))->{messages} }),
     qr/^notes\.txt$/m, '... told the artifact\'s files');
($st) = api(POST => "/api/orgs/$org/deployments/$m->{id}/approve", token => $tok,
            json => { plan_version => $m->{plan}{version} });
$m = wait_deployment($org, $tok, $m->{id}, 'running', timeout => 60);
ok($m, 'it runs');
my $mport = $m->{workload}{replicas}[0]{port};
($st, $m) = api(POST => "/api/orgs/$org/deployments/$m->{id}/separate", token => $tok);
is($st, 200, 'separate');
is($m->{status}, 'separating', '... separating');
$m = wait_deployment($org, $tok, $m->{id}, 'separated', timeout => 90);
ok($m, 'separated') or diag(agent_log($agent));
my $to = $m->{workload}{separated_to};
ok($to && -x catfile($to, 'start.sh'), "... a start script in $to");
ok(-f catfile($to, "svc-app-$m->{id}\@.service"), '... and a systemd unit');
ok(!-e catfile($dirs, $m->{id}), 'the agent forgot it');
($code, $body) = http_get($mport, '/index.html');
is($code, 200, 'the workload still answers on its port');
like($body, qr/handed over/, '... the same workload');
is(stop_agent($agent), 0, 'the agent stops');
is((http_get($mport, '/index.html'))[0], 200, '... and the handed-over workload keeps answering');
my @left = processes_under($to);
ok(@left, '... its processes are not the agent\'s');
kill 'TERM', @left;

# --- the target, in use no more, is removed ---------------------------------------------------------
($st) = api(DELETE => "/api/orgs/$org/deploy-targets/$target->{id}", token => $tok);
is($st, 204, 'the target is removed');
unlike(agent_log($agent), qr/\Q$rot->{key}\E/, 'no key in the agent\'s logs');

done_testing();
