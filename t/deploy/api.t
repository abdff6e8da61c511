# The deployments API without an agent process: targets and their keys,
# the planner (from a Procfile, by the fake model, without a provider, with
# a reply that is no plan), approval and stale plan versions, statuses that
# refuse an action, another org's ids, and the agent's routes spoken by
# hand (its view, its work, its reports once, the bundle of its own
# deployments only).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;
use SvcDeploy;

my $owner = new_user('dep-owner');
my $member = new_user('dep-member');
my $org = new_org($owner, prefix => 'dep');
svcctl('org', 'add-member', $org, $member, '--role', 'member');
my $tok = new_token($owner, scope => 'admin');
my $mtok = new_token($member, scope => 'admin');
my $proj = new_project($org, $tok, 'Deployed');
my $org_id = org_id_of($org);

# --- targets ------------------------------------------------------------------
my ($st, $t) = api(POST => "/api/orgs/$org/deploy-targets", token => $tok,
                   json => { name => 'web-1' });
is($st, 201, 'a target is registered');
like($t->{id}, qr/^dtg_[A-Za-z0-9]{22}$/, '... with an id');
like($t->{key}, qr/^svc_dek_[A-Za-z0-9]{49}$/, '... and its key, shown once');
is($t->{key_hint}, substr($t->{key}, 0, 12), '... whose hint is its start');
is($t->{status}, 'pending', '... pending until an agent connects');
ok(!defined $t->{agent}, '... no agent yet');
my (undef, $list) = api(GET => "/api/orgs/$org/deploy-targets", token => $mtok);
is(scalar @{ $list->{data} }, 1, 'members list the targets');
ok(!exists $list->{data}[0]{key}, '... never with the key');
is(psql_value("SELECT count(*) FROM deploy_targets WHERE key_hint = '$t->{key_hint}' "
              . "AND octet_length(key_hash) = 32"), 1, 'the key is stored as a hash');
unlike(pg_dump_text(), qr/\Q$t->{key}\E/, '... and nowhere in the database as it is');
($st, my $p) = api(POST => "/api/orgs/$org/deploy-targets", token => $tok,
                   json => { name => 'web-1' });
is($st, 409, 'a second target of the same name: 409');
($st, $p) = api(POST => "/api/orgs/$org/deploy-targets", token => $mtok,
                json => { name => 'web-2' });
is($st, 403, 'a member cannot register one');
($st, $p) = api(POST => "/api/orgs/$org/deploy-targets", token => $tok,
                json => { name => '' });
is($st, 400, 'an empty name: 400');

# --- the agent's key ------------------------------------------------------------
($st, my $view) = api(GET => '/api/agent/deployments', token => $t->{key});
is($st, 200, "the agent's view, with the key");
is($view->{target_id}, $t->{id}, '... of its target');
is_deeply($view->{deployments}, [], '... nothing to run yet');
($st, $p) = api(GET => '/api/agent/deployments', token => $tok);
is($st, 401, 'a personal access token is refused on agent routes');
like($p->{detail}, qr/never a personal access token/, '... and told so');
($st, $p) = api(GET => '/api/agent/deployments');
is($st, 401, 'no key: 401');
($st, $p) = api(GET => '/api/agent/deployments',
                token => secret_token_like('svc_dek_'));
is($st, 401, 'a key that is no target\'s: 401');
($st, $p) = api(GET => "/api/orgs/$org/deploy-targets", token => $t->{key});
is($st, 401, 'the key is no user\'s credential');

# --- the planner: from a Procfile -------------------------------------------------
my ($bundle, $commit) = git_bundle(
    'Procfile' => "# processes\nweb: python3 -m http.server \$PORT\nworker: sleep 1\n",
    'index.html' => "<h1>hello</h1>\n");
my $run = run_fixture($org, $proj, bundle => $bundle, commit => $commit);
($st, my $d) = api(POST => "/api/orgs/$org/deployments", token => $mtok,
                   json => { project => $proj, target_id => $t->{id}, run_id => $run });
is($st, 201, 'a member makes a deployment of a succeeded run') or diag(explain($d));
like($d->{id}, qr/^dep_/, '... with an id');
is($d->{status}, 'planning', '... planning');
is($d->{target_status}, 'pending', '... its target pending (no agent has connected yet)')
    or diag(explain($d));
$d = wait_deployment($org, $tok, $d->{id}, 'planned', timeout => 60);
ok($d, 'the planner planned it');
is($d->{plan}{command}, 'python3 -m http.server $PORT', '... from the Procfile\'s web line');
is($d->{plan}{source}, 'procfile', '... without a model');
is($d->{plan}{port_env}, 'PORT', '... the port in PORT');
is($d->{plan}{replicas}, 1, '... one replica');
is($d->{plan}{version}, 1, '... version 1');
my $dep = $d;
is(psql_value("SELECT count(*) FROM events WHERE org_id = '$org_id' AND kind = "
              . "'deployment.status' AND data->>'deployment_id' = '$dep->{id}'"), 2,
   'two deployment.status events: planning, planned');
is(psql_value("SELECT count(*) FROM audit_log WHERE target_id = '$dep->{id}'"), 2,
   '... and two audit entries');

# --- actions in the wrong status, and stale plans -----------------------------------
($st, $p) = api(POST => "/api/orgs/$org/deployments/$dep->{id}/start", token => $tok);
is($st, 409, 'start while planned: 409');
is($p->{code}, 'invalid_status', '... invalid_status');
is($p->{errors}[0]{code}, 'planned', '... naming the status');
($st, $p) = api(POST => "/api/orgs/$org/deployments/$dep->{id}/approve", token => $mtok,
                json => { plan_version => 1 });
is($st, 403, 'a member cannot approve');
($st, $p) = api(POST => "/api/orgs/$org/deployments/$dep->{id}/replan", token => $mtok);
is($st, 200, 'a member replans');
is($p->{status}, 'planning', '... planning again');
$d = wait_deployment($org, $tok, $dep->{id}, 'planned');
is($d->{plan}{version}, 2, '... a new plan, version 2');
my $before = db_digest();
($st, $p) = api(POST => "/api/orgs/$org/deployments/$dep->{id}/approve", token => $tok,
                json => { plan_version => 1 });
is($st, 409, 'approving version 1 when 2 is current: 409');
is($p->{code}, 'plan_changed', '... plan_changed');
is_deeply(db_digest(), $before, '... and nothing changed');
($st, $p) = api(POST => "/api/orgs/$org/deployments/$dep->{id}/approve", token => $tok,
                json => { plan_version => 'two' });
is($st, 400, 'a plan version that is no number: 400');

# --- another org's deployment; unknown ids -------------------------------------------
my $other_owner = new_user('dep-other');
my $other = new_org($other_owner, prefix => 'dep-other');
my $otok = new_token($other_owner, scope => 'admin');
for my $path ("/api/orgs/$other/deployments/$dep->{id}",
              "/api/orgs/$org/deployments/dep_" . ('x' x 22)) {
    ($st, $p) = api(GET => $path, token => $path =~ /\Q$other\E/ ? $otok : $tok);
    is($st, 404, "GET $path: 404");
    is($p->{code}, 'deployment_not_found', '... deployment_not_found');
}
$before = db_digest();
($st, $p) = api(POST => "/api/orgs/$other/deployments/$dep->{id}/approve", token => $otok,
                json => { plan_version => 2 });
is($st, 404, "approving another org's deployment: 404");
is($p->{code}, 'deployment_not_found', '... deployment_not_found');
is_deeply(db_digest(), $before, '... and nothing changed');
($st, $p) = api(POST => "/api/orgs/$other/deployments", token => $otok,
                json => { project => $proj, target_id => $t->{id}, run_id => $run });
is($st, 404, "a deployment on another org's target and run: 404");

# --- creation refused ------------------------------------------------------------------
my $running = run_fixture($org, $proj, status => 'running');
($st, $p) = api(POST => "/api/orgs/$org/deployments", token => $tok,
                json => { project => $proj, target_id => $t->{id}, run_id => $running });
is($st, 409, 'a run that has not succeeded: 409');
is($p->{code}, 'invalid_status', '... invalid_status');
is($p->{errors}[0]{field}, 'run_id', '... about the run');
my $proj2 = new_project($org, $tok, 'Other');
($st, $p) = api(POST => "/api/orgs/$org/deployments", token => $tok,
                json => { project => $proj2, target_id => $t->{id}, run_id => $run });
is($st, 404, "another project's run: 404");
($st, $p) = api(POST => "/api/orgs/$org/deployments", token => $tok,
                json => { project => $proj, target_id => $t->{id}, run_id => $run,
                          replicas => 2 });
is($st, 400, 'an unknown field: 400');

# --- approval gives the agent its work -------------------------------------------------
($st, $d) = api(POST => "/api/orgs/$org/deployments/$dep->{id}/approve", token => $tok,
                json => { plan_version => 2 });
is($st, 200, 'an admin approves the current plan');
is($d->{status}, 'deploying', '... deploying');
is($d->{applied_plan}{version}, 2, '... on plan 2');
is($d->{replicas}, 1, '... one replica');
($st, $view) = api(GET => '/api/agent/deployments', token => $t->{key});
is(scalar @{ $view->{deployments} }, 1, 'the agent sees one deployment');
my $item = $view->{deployments}[0];
is($item->{deployment_id}, $dep->{id}, '... this one');
is($item->{desired}{commit}, $commit, '... its commit');
is($item->{desired}{plan}{command}, 'python3 -m http.server $PORT', '... its plan');
is($item->{work}{action}, 'deploy', '... and its work: deploy');
ok(!defined $item->{work}{outcome}, '... not done yet');
ok($view->{last_event_id} > 0, '... and where its stream goes on');
my ($work) = psql("SELECT data::text FROM events WHERE target_id = '$t->{id}' AND kind = "
                  . "'agent.work' ORDER BY id DESC LIMIT 1");
my $ev = json()->decode($work->[0]);
is($ev->{work_id}, $item->{work}{work_id}, 'the work is an event on the target\'s stream');
is(psql_value("SELECT count(*) FROM events WHERE org_id = '$org_id' AND target_id IS NULL "
              . "AND kind = 'agent.work'"), 0, '... and on no user\'s stream');

# The work stream: the target's events, resumed after Last-Event-ID; a
# user's stream carries none of them; a PAT cannot open it.
my $ws = sse_open('/api/agent/work', token => $t->{key});
is($ws->{status}, 200, "the agent's work stream opens with its key");
my @kinds;
while (my $e = sse_next($ws, 3)) {
    push @kinds, $e->{event};
    last if $e->{event} eq 'agent.work';
}
sse_close($ws);
is($kinds[-1], 'agent.work', '... from the target\'s first event: the work');
my $last = psql_value("SELECT max(id) FROM events WHERE target_id = '$t->{id}'");
$ws = sse_open('/api/agent/work', token => $t->{key}, last_event_id => $last);
is($ws->{status}, 200, '... and resumes after Last-Event-ID');
ok(!sse_next($ws, 2), '... with nothing after the last event');
sse_close($ws);
$ws = sse_open('/api/agent/work', token => $tok);
is($ws->{status}, 401, '... never with a personal access token');
$ws = sse_open("/api/orgs/$org/events?last_event_id=0", token => $tok);
my @user_kinds;
while (my $e = sse_next($ws, 2)) { push @user_kinds, $e->{event} }
sse_close($ws);
ok(scalar(grep { $_ eq 'deployment.status' } @user_kinds), 'the org\'s stream has deployment.status');
ok(!grep({ /^(?:agent|target)\./ } @user_kinds), '... and none of the target\'s events');

# The bundle: this target's deployment only.
my (undef, undef, $res) = api(GET => "/api/agent/deployments/$dep->{id}/bundle",
                              token => $t->{key});
is($res->code, 200, 'the agent fetches the bundle');
is($res->content, $bundle, '... the run\'s artifact');
my $t2 = new_target($org, $tok, 'web-2');
($st, $p) = api(GET => "/api/agent/deployments/$dep->{id}/bundle", token => $t2->{key});
is($st, 404, "another target's agent: 404");
is($p->{code}, 'deployment_not_found', '... deployment_not_found');
($st, $p) = api(POST => "/api/agent/work/$ev->{work_id}", token => $t2->{key},
                json => { outcome => 'done' });
is($st, 404, "... nor can it report this target's work");

# Reports: once.
($st, $p) = api(POST => "/api/agent/work/$ev->{work_id}", token => $t->{key},
                json => { outcome => 'done', workload => { replicas => [
                    { index => 0, port => 20001, pid => 4242, healthy => JSON::PP::true(),
                      restarts => 0, extra => 'dropped' } ] } });
is($st, 200, 'the agent reports the work done');
ok($p->{recorded}, '... recorded');
is($p->{deployment_status}, 'running', '... the deployment runs');
$d = deployment($org, $tok, $dep->{id});
is($d->{status}, 'running', 'running');
is_deeply($d->{workload}{replicas}, [ { index => 0, port => 20001, pid => 4242,
                                        healthy => JSON::PP::true(), restarts => 0 } ],
          '... its workload as reported (known fields only)');
($st, $p) = api(POST => "/api/agent/work/$ev->{work_id}", token => $t->{key},
                json => { outcome => 'failed', error => { code => 'x', message => 'late' } });
is($st, 200, 'a second report of the same work: 200');
ok(!$p->{recorded}, '... not recorded');
is(deployment($org, $tok, $dep->{id})->{status}, 'running', '... the deployment unchanged');

# A heartbeat: the agent's details, the target online.
($st, $p) = api(POST => '/api/agent/heartbeat', token => $t->{key},
                json => { version => '9.9', hostname => 'box-1', workloads => {} });
is($st, 200, 'a heartbeat');
(undef, my $tt) = api(GET => "/api/orgs/$org/deploy-targets", token => $tok);
my ($tdoc) = grep { $_->{id} eq $t->{id} } @{ $tt->{data} };
is($tdoc->{status}, 'online', 'the target is online');
is($tdoc->{agent}{hostname}, 'box-1', '... with its agent\'s host');
is($tdoc->{deployments}, 1, '... and one deployment');

# An agent not heard from for a minute: the target is offline, and its
# deployments say so (their statuses stay).
psql("UPDATE deploy_targets SET last_seen_at = now() - interval '61 seconds' "
     . "WHERE id = '$t->{id}'");
(undef, $tt) = api(GET => "/api/orgs/$org/deploy-targets", token => $tok);
($tdoc) = grep { $_->{id} eq $t->{id} } @{ $tt->{data} };
is($tdoc->{status}, 'offline', 'no heartbeat for 60 s: the target is offline');
$d = deployment($org, $tok, $dep->{id});
is($d->{target_status}, 'offline', '... its deployment shows it');
is($d->{status}, 'running', '... and keeps its status');

# --- removal and rotation -----------------------------------------------------------------
($st, $p) = api(DELETE => "/api/orgs/$org/deploy-targets/$t->{id}", token => $tok);
is($st, 409, 'a target in use cannot be removed');
is($p->{code}, 'target_in_use', '... target_in_use');
my $open = sse_open('/api/agent/work', token => $t->{key},
                    last_event_id => psql_value("SELECT max(id) FROM events WHERE org_id = "
                                                . "'$org_id'"));
is($open->{status}, 200, 'a work stream is open with the key');
($st, my $rot) = api(POST => "/api/orgs/$org/deploy-targets/$t->{id}/rotate-key", token => $tok);
is($st, 200, 'the key is rotated');
my ($seen, $ended);
for (1 .. 20) {
    my $e = sse_next($open, 1);
    $seen = $e->{event} if $e;
    if ($open->{eof} || $open->{closed}) { $ended = 1; last }
}
sse_close($open);
ok($ended, 'the open stream of the old key ends at once (not at the next periodic check)');
is($seen, 'target.key_rotated', '... after the rotation\'s event');
isnt($rot->{key}, $t->{key}, '... a new key');
($st) = api(GET => '/api/agent/deployments', token => $t->{key});
is($st, 401, 'the old key is refused at once');
($st) = api(GET => '/api/agent/deployments', token => $rot->{key});
is($st, 200, '... the new one works');
is(psql_value("SELECT count(*) FROM events WHERE target_id = '$t->{id}' AND kind = "
              . "'target.key_rotated'"), 1, 'the rotation is an event on the target\'s stream');

# A deployment never approved is torn down at once (nothing on the target).
my $never = run_fixture($org, $proj, bundle => $bundle, commit => $commit);
(undef, my $d2) = api(POST => "/api/orgs/$org/deployments", token => $tok,
                      json => { project => $proj, target_id => $t2->{id}, run_id => $never });
wait_deployment($org, $tok, $d2->{id}, 'planned');
($st, $p) = api(POST => "/api/orgs/$org/deployments/$d2->{id}/teardown", token => $mtok);
is($st, 200, 'a planned deployment is torn down');
is($p->{status}, 'torn_down', '... at once');
($st) = api(DELETE => "/api/orgs/$org/deploy-targets/$t2->{id}", token => $tok);
is($st, 204, 'its target, in use no more, is removed');
($st) = api(GET => '/api/agent/deployments', token => $t2->{key});
is($st, 401, '... and its key refused');
my @actions = map { $_->[0] } psql("SELECT action FROM audit_log WHERE org_id = '$org_id' "
                                   . "AND target_type = 'deploy_target' ORDER BY id");
is_deeply(\@actions, [ qw(deploy_target.created deploy_target.created
                          deploy_target.key_rotated deploy_target.removed) ],
          'targets made, rotated and removed are audited');

# --- the planner without a Procfile ----------------------------------------------------------
my ($plain, $pc) = git_bundle('app.py' => "import os\nprint(os.environ['PORT'])\n",
                              'requirements.txt' => "flask==3.0\n");
my $prun = run_fixture($org, $proj, bundle => $plain, commit => $pc);
(undef, my $d3) = api(POST => "/api/orgs/$org/deployments", token => $tok,
                      json => { project => $proj, target_id => $t->{id}, run_id => $prun });
$d3 = wait_deployment($org, $tok, $d3->{id}, 'plan_failed');
is($d3->{error}{code}, 'no_provider', 'no Procfile and no provider: plan_failed no_provider');

my $llm = new_llm(flavor => 'openai');
new_provider($org, $tok, $llm);
$llm->control(replies => [ json()->encode({ command => 'python3 app.py', health_path => '/health',
                                            replies => 2, memory_mb => 256 }) ]);
api(POST => "/api/orgs/$org/deployments/$d3->{id}/replan", token => $tok);
$d3 = wait_deployment($org, $tok, $d3->{id}, 'plan_failed');
is($d3->{error}{code}, 'model_reply_invalid', 'a reply that is no plan: model_reply_invalid');
like($d3->{error}{message}, qr/replicas/, '... saying what is wrong');

$llm->reset;
$llm->control(replies => [ json()->encode({ command => 'python3 app.py', health_path => '/health',
                                            replicas => 2, memory_mb => 256,
                                            notes => 'A Flask app.' }) ]);
($st, $p) = api(POST => "/api/orgs/$org/deployments/$d3->{id}/replan", token => $tok);
is($st, 200, 'replan from plan_failed');
$d3 = wait_deployment($org, $tok, $d3->{id}, 'planned');
is($d3->{plan}{command}, 'python3 app.py', 'the model planned it');
is($d3->{plan}{health_path}, '/health', '... health checked at its path');
is($d3->{plan}{replicas}, 2, '... two replicas');
is($d3->{plan}{source}, 'model', '... by the model');
my ($req) = grep { $_->{path} eq '/v1/chat/completions' } @{ $llm->requests };
my $body = ref $req->{body} ? $req->{body} : json()->decode($req->{body});
is_deeply($body->{response_format}, { type => 'json_object' }, 'the model was asked in JSON mode');
my $asked = join "\n", map { $_->{content} } @{ $body->{messages} };
like($asked, qr/^app\.py$/m, '... with the file list');
like($asked, qr/--- requirements\.txt ---\nflask==3\.0/, '... and the build files');
is(psql_value("SELECT count(*) FROM model_usage WHERE subject_id = '$d3->{id}' "
              . "AND purpose = 'deployment.plan'"), 2, '... its calls recorded as usage');

# --- idle agents hold no worker thread -----------------------------------------------------
# The test server has 4 children of 25 threads: 150 open work streams would
# pin every worker if each held one. Two targets' agents, 75 streams each:
# the API still answers, and a piece of one target's work reaches each of
# its streams and none of the other's.
{
    my ($f1, $f2) = map { new_target($org, $tok, "idle-$_") } 1, 2;
    my @mine = map { sse_open('/api/agent/work', token => $f1->{key}) } 1 .. 75;
    my @theirs = map { sse_open('/api/agent/work', token => $f2->{key}) } 1 .. 75;
    my @streams = (@mine, @theirs);
    is(scalar(grep { $_->{status} == 200 } @streams), 150, '150 agent work streams are open');
    ($st) = api(GET => '/api/me', token => $tok);
    is($st, 200, '... and the API still answers');
    # A kind of the test's own (test.*): the service writes agent.work
    # with a document the contract checks; this one is only a probe.
    my $id = psql_value("INSERT INTO events (org_id, target_id, kind, data) VALUES "
                        . "('$org_id', '$f1->{id}', 'test.work', '{\"probe\": 1}'::jsonb) "
                        . "RETURNING id");
    my $got = grep { my $e = sse_next($_, 5); $e && $e->{id} == $id } @mine;
    is($got, 75, 'one piece of work reaches each of its target\'s 75 streams');
    $got = grep { my $e = sse_next($_, 0.2); $e && $e->{id} == $id } @theirs;
    is($got, 0, '... and none of the other target\'s');
    sse_close($_) for @streams;
}

done_testing();
