# A deployment's telemetry with a real svc-agent and a workload that can be
# told to misbehave (t/deploy/telemetry.t; docs/api/deployments.md,
# "Telemetry"): logs asked for and read (both replicas' lines, invalid
# UTF-8 replaced, the agent's key redacted by the agent and by the
# service), metrics of two replicas, uptime with down buckets while the app
# fails and up after it recovers, and exactly one incident filed for failed
# probes and a crash loop together, with its note of recovery, approved
# into a request; no second one within the hour. No telemetry route
# reaches another org's deployment, nor an agent another target's.
#
# The agent samples every 2 s and probes every second here: the test-only
# settings SVC_AGENT_METRICS_INTERVAL and SVC_AGENT_PROBE_INTERVAL.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use Encode qw(decode);
use File::Path qw(remove_tree);
use File::Spec::Functions qw(catfile);
use MIME::Base64 qw(encode_base64url);
use SvcTest;
use SvcDeploy;

skip_without_sandbox();

my $owner = new_user('tel-owner');
my $org = new_org($owner, prefix => 'tel');
my $tok = new_token($owner, scope => 'admin');
my $proj = new_project($org, $tok, 'Watched');

my $target = new_target($org, $tok, 'tel-1');
my $key = $target->{key};
my $agent = start_agent(key => $key, name => 'tel-1',
                        env => { SVC_AGENT_METRICS_INTERVAL => 2, SVC_AGENT_PROBE_INTERVAL => 1 });

# The workload: says hello, prints the target's key (put together from two
# halves, so no file of the checkout holds it) and a line of invalid UTF-8;
# answers 500 while the file "fail" exists, and exits at once while
# "crash" does.
my %halves = ('k1' => substr($key, 0, 20) . "\n", 'k2' => substr($key, 20) . "\n");
my ($bundle, $commit) = ok_app_bundle(files => \%halves, start => <<'PY');
if os.path.exists('crash'):
    print('crashing on purpose', flush=True)
    sys.exit(3)
key = open('k1').read().strip() + open('k2').read().strip()
sys.stdout.write('hello from port %d\n' % port)
sys.stdout.write('the key is ' + key + '\n')
sys.stdout.flush()
sys.stdout.buffer.write(b'bad bytes \xff\xfe here\n')
sys.stdout.flush()
PY
my $run = run_fixture($org, $proj, bundle => $bundle, commit => $commit);
my ($st, $d) = api(POST => "/api/orgs/$org/deployments", token => $tok,
                   json => { project => $proj, target_id => $target->{id}, run_id => $run });
is($st, 201, 'a deployment of the workload');
my $id = $d->{id};
my $base = "/api/orgs/$org/deployments/$id";

# --- before anything runs --------------------------------------------------------------------
$d = wait_deployment($org, $tok, $id, 'planned');
(my $p);
($st, $p) = api(POST => "$base/request-logs", token => $tok, json => {});
is($st, 409, 'request-logs of a deployment never approved: 409');
is($p->{code}, 'invalid_status', '... invalid_status');
($st, $p) = api(GET => "$base/logs", token => $tok);
is($st, 404, 'logs before any upload: 404');
is($p->{code}, 'not_found', '... not_found');

($st) = api(POST => "$base/approve", token => $tok,
            json => { plan_version => $d->{plan}{version} });
is($st, 200, 'approved');
ok(wait_deployment($org, $tok, $id, 'running', timeout => 90), 'running')
    or diag(agent_log($agent));
($st) = api(POST => "$base/scale", token => $tok, json => { replicas => 2 });
is($st, 200, 'scaled to two replicas');
$d = wait_deployment($org, $tok, $id, 'running', timeout => 90);
ok($d, '... running') or diag(agent_log($agent));
my $appdir = catfile($agent->{dir}, 'deployments', $id, 'app');

# --- logs -------------------------------------------------------------------------------------
for my $bad (0, 5001, 'ten', 2.5) {
    my $before = db_digest();
    ($st, $p) = api(POST => "$base/request-logs", token => $tok, json => { lines => $bad });
    is($st, 400, "request-logs of $bad lines: 400");
    is($p->{errors}[0]{field}, 'lines', '... about lines');
    is_deeply(db_digest(), $before, '... and nothing changed');
}
# Both replicas have written their lines.
ok(wait_for(sub { -s catfile($agent->{dir}, 'deployments', $id, 'logs', 'replica-1.log') },
            timeout => 30), 'both replicas have output');
($st, my $lr) = api(POST => "$base/request-logs", token => $tok, json => {});
is($st, 202, 'request-logs: 202');
like($lr->{log_request_id}, qr/^lgr_/, '... a log request id');
is($lr->{lines}, 500, '... 500 lines by default');
my ($text, $res);
ok(wait_for(sub {
    ($st, undef, $res) = api(GET => "$base/logs", token => $tok);
    $st == 200 && ($res->header('X-Log-Request') // '') eq $lr->{log_request_id}
}, timeout => 30, interval => 0.3), 'the agent uploads them') or diag(agent_log($agent));
is($res->header('Content-Type'), 'text/plain; charset=utf-8', '... as text/plain; charset=utf-8');
$text = decode('UTF-8', $res->content, Encode::FB_CROAK);
for my $r (0, 1) {
    like($text, qr/^replica $r \| hello from port \d+$/m, "... replica ${r}'s lines, prefixed");
    like($text, qr/^replica $r \| bad bytes \x{FFFD}\x{FFFD} here$/m,
         "... its invalid UTF-8 replaced");
    like($text, qr/^replica $r \| the key is \[REDACTED\]$/m, '... the key redacted');
}
unlike($res->content, qr/\Q$key\E/, '... nowhere the key');
is(psql_value("SELECT count(*) FROM events WHERE kind = 'deployment.logs' AND "
              . "data->>'log_request_id' = '$lr->{log_request_id}' AND target_id IS NULL"), 1,
   '... a deployment.logs event on the org stream');
is(psql_value("SELECT count(*) FROM events WHERE kind = 'deployment.logs_requested' AND "
              . "data->>'log_request_id' = '$lr->{log_request_id}' AND target_id = "
              . "'$target->{id}'"), 1, '... asked of the target\'s agent only');

($st, my $one) = api(POST => "$base/request-logs", token => $tok, json => { lines => 1 });
is($st, 202, 'request-logs of one line');
ok(wait_for(sub {
    ($st, undef, $res) = api(GET => "$base/logs?request=$one->{log_request_id}", token => $tok);
    $st == 200
}, timeout => 30, interval => 0.3), '... uploaded');
is(scalar(() = $res->content =~ /^replica \d \| /mg), 2, '... one line a replica');
($st, undef, $res) = api(GET => "$base/logs?request=$lr->{log_request_id}", token => $tok);
is($res->header('X-Log-Request'), $lr->{log_request_id}, '?request= reads an older upload');
($st, $p) = api(GET => "$base/logs?request=lgr_nothingLikeThisOne01", token => $tok);
is($st, 404, '?request= of no upload: 404');
is($p->{code}, 'not_found', '... not_found');
($st, $p) = api(GET => "$base/logs?request=bad", token => $tok);
is($st, 400, '?request= not an id: 400');

# --- metrics ----------------------------------------------------------------------------------
my $m;
ok(wait_for(sub {
    ($st, $m) = api(GET => "$base/metrics", token => $tok);
    my %n = map { (defined $_->{replica} ? $_->{replica} : 'sum') => scalar @{ $_->{points} } }
            @{ $m->{series} // [] };
    ($n{0} // 0) >= 2 && ($n{1} // 0) >= 2 && $n{sum}
}, timeout => 90, interval => 1), 'metrics: points for both replicas, and their sum')
    or diag(explain($m));
is($m->{step}, 15, '... a step of 15 s by default');
{
    my $tel = deployment($org, $tok, $id)->{telemetry};
    ok($tel->{last_sample_at} && $tel->{last_probe_at} && $tel->{logs_at},
       'the deployment says when its agent last reported samples, probes and logs');
    is($tel->{open_incident}, undef, '... and no open incident');
}
my ($r0) = grep { defined $_->{replica} && $_->{replica} == 0 } @{ $m->{series} };
my $pt = $r0->{points}[-1];
like($pt->[0], qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/, '... a point\'s time, RFC 3339');
ok($pt->[1] > 0, "... CPU seconds ($pt->[1])");
ok($pt->[2] > 1_000_000, "... resident memory ($pt->[2] bytes)");
ok($pt->[3] >= 1, "... open file descriptors ($pt->[3])");
is($pt->[4], 0, '... no restarts');
($st, $m) = api(GET => "$base/metrics?from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z&step=15",
                token => $tok);
is($st, 200, 'a day of metrics asked with a step of 15 s');
is($m->{step}, 87, '... made coarser: at most 1000 points');
is_deeply($m->{series}, [], '... none then');
for my $q ('from=yesterday', 'step=5', 'from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z',
           'from=2025-01-01T00:00:00Z&to=2026-01-01T00:00:00Z') {
    ($st, $p) = api(GET => "$base/metrics?$q", token => $tok);
    is($st, 400, "metrics?$q: 400");
}

# --- uptime -----------------------------------------------------------------------------------
($st, my $u) = api(GET => "$base/uptime", token => $tok);
is($st, 200, 'uptime');
is($u->{window}, '24h', '... 24h by default');
is($u->{bucket}, 'minute', '... in minutes');
is(scalar @{ $u->{buckets} }, 1440, '... 1440 of them');
ok($u->{availability} > 0, "... availability $u->{availability}");
ok($u->{unknown_buckets} > 1000, '... most buckets unknown: nothing ran then');
is($u->{buckets}[0]{status}, 'unknown', '... and say so');
($st, $u) = api(GET => "$base/uptime?window=7d", token => $tok);
is(scalar @{ $u->{buckets} }, 168, '7d: 168 hourly buckets');
($st, $p) = api(GET => "$base/uptime?window=1y", token => $tok);
is($st, 400, 'window=1y: 400');

# --- an incident: failed probes, then a crash loop ------------------------------------------------
# The incident as a member sees it, in its project's list.
sub improvement {
    my $want = shift;
    my ($s, $l) = api(GET => "/api/orgs/$org/projects/$proj/improvements?source=incident",
                      token => $tok);
    my ($x) = grep { $_->{id} eq $want } @{ $l->{data} // [] };
    return $x // {};
}

sub improvements {
    return psql_value("SELECT count(*) FROM improvements WHERE source = 'incident' AND "
                      . "source_ref = '$id'");
}
is(improvements(), 0, 'no incident while it answers');
open my $fh, '>', catfile($appdir, 'fail') or die "fail: $!";
close $fh;
my $imp = wait_for(sub {
    psql_value("SELECT id FROM improvements WHERE source = 'incident' AND source_ref = '$id'")
}, timeout => 30, interval => 0.3);
ok($imp, "three failed probes file an incident ($imp)") or diag(agent_log($agent));
my $i = improvement($imp);
is($i->{project}, $proj, '... in the deployment\'s project');
is($i->{source}, 'incident', '... an incident');
like($i->{title}, qr/\Q$id\E fails its health checks/, '... naming the deployment');
like($i->{body}, qr/failed their last 3 health probes/, '... what failed');
like($i->{body}, qr/^replica 0 \| bad bytes \x{FFFD}\x{FFFD} here$/m,
     '... with the last lines of its latest logs');
unlike($i->{body}, qr/\Q$key\E/, '... never the key');
is(psql_value("SELECT count(*) FROM events WHERE kind = 'deployment.incident' AND "
              . "data->>'improvement_id' = '$imp' AND data->>'state' = 'filed'"), 1,
   '... a deployment.incident event');
is(psql_value("SELECT count(*) FROM events WHERE kind = 'improvement.filed' AND "
              . "data->>'improvement_id' = '$imp'"), 1, '... an improvement.filed event');
is(psql_value("SELECT count(*) FROM audit_log WHERE action = 'deployment.incident' AND "
              . "target_id = '$id' AND actor_kind = 'system'"), 1,
   '... an audit entry, the service its actor');
ok(wait_for(sub {
    ($st, $u) = api(GET => "$base/uptime", token => $tok);
    grep { $_->{down} > 0 } @{ $u->{buckets} }
}, timeout => 10), 'uptime shows the failures in a down bucket');
is_deeply($u->{incidents}, [ $imp ], '... and the incident');
is(deployment($org, $tok, $id)->{telemetry}{open_incident}, $imp,
   'the deployment names its open incident');

# A crash loop on top: the replicas exit at once, three times and more.
open $fh, '>', catfile($appdir, 'crash') or die "crash: $!";
close $fh;
kill 'KILL', processes_under($appdir);
ok(wait_for(sub {
    my $x = deployment($org, $tok, $id);
    my ($r) = grep { $_->{index} == 0 } @{ $x->{workload}{replicas} // [] };
    $r && $r->{restarts} >= 3
}, timeout => 60, interval => 0.5), 'a crash loop: three restarts') or diag(agent_log($agent));
my $failures = psql_value("SELECT failures FROM deploy_incidents WHERE deployment_id = '$id'");
ok(wait_for(sub {
    psql_value("SELECT failures FROM deploy_incidents WHERE deployment_id = '$id'") > $failures
}, timeout => 10), '... counted on the open incident');
is(improvements(), 1, '... exactly one incident for both');

# Recovery: three good probes of each replica add a note.
unlink catfile($appdir, 'fail'), catfile($appdir, 'crash');
ok(wait_for(sub {
    psql_value("SELECT count(*) FROM events WHERE kind = 'deployment.incident' AND "
               . "data->>'improvement_id' = '$imp' AND data->>'state' = 'recovered'")
}, timeout => 90, interval => 0.5), 'it recovers: a deployment.incident event')
    or diag(agent_log($agent));
$i = improvement($imp);
like($i->{body}, qr/Recovered: every replica passed its last 3 health probes/,
     '... a note on the incident');
is($i->{status}, 'open', '... which stays open');
ok(wait_for(sub {
    ($st, $u) = api(GET => "$base/uptime", token => $tok);
    my @b = @{ $u->{buckets} };
    my ($down) = grep { $b[$_]{down} > 0 } 0 .. $#b;
    defined $down && grep { $b[$_]{status} eq 'up' } $down + 1 .. $#b
}, timeout => 75, interval => 1), 'uptime: an up bucket after the down ones');
ok($u->{availability} < 1, "... availability below 1 ($u->{availability})");

($st, $p) = api(POST => "/api/orgs/$org/improvements/$imp/approve", token => $tok);
is($st, 200, 'the incident is approved');
like($p->{request_id}, qr/^rqs_/, '... into a request');
is(deployment($org, $tok, $id)->{telemetry}{open_incident}, undef,
   '... and the deployment has no open incident');

# Failing again within the hour: no second incident, even with the first decided.
open $fh, '>', catfile($appdir, 'fail') or die "fail: $!";
close $fh;
ok(wait_for(sub {
    psql_value("SELECT count(*) FROM (SELECT ok FROM deploy_probes WHERE deployment_id = '$id' "
               . "AND replica = 0 ORDER BY at DESC LIMIT 3) x WHERE NOT ok") == 3
}, timeout => 30), 'it fails again');
my $seen = psql_value("SELECT count(*) FROM deploy_probes WHERE deployment_id = '$id'");
ok(wait_for(sub { psql_value("SELECT count(*) FROM deploy_probes WHERE deployment_id = '$id'")
                  > $seen }, timeout => 10), '... reported');
is(improvements(), 1, '... and no second incident within the hour');
unlink catfile($appdir, 'fail');

# --- the service redacts and cleans what any agent sends ----------------------------------
is(stop_agent($agent), 0, 'the agent stops');

# --- no route reaches another org's deployment, nor another target's ------------------------------
my $other = new_user('tel-other');
my $their = new_org($other, prefix => 'tel-their');
my $otok = new_token($other, scope => 'admin');
for my $c ([ POST => 'request-logs', {} ], [ GET => 'logs' ], [ GET => 'metrics' ],
           [ GET => 'uptime' ]) {
    my ($method, $what, $json) = @$c;
    my $before = db_digest();
    ($st, $p) = api($method => "/api/orgs/$their/deployments/$id/$what", token => $otok,
                    $json ? (json => $json) : ());
    is($st, 404, "another org: $method .../$what is 404");
    is($p->{code}, 'deployment_not_found', '... deployment_not_found');
    is_deeply(db_digest(), $before, '... and nothing changed');
}
my $theirs = new_target($their, $otok, 'tel-their');
{
    my $before = db_digest();
    ($st, $p) = api(POST => "/api/agent/deployments/$id/logs/$lr->{log_request_id}",
                    token => $theirs->{key}, json => { replicas => { 0 => 'aGk' } });
    is($st, 404, 'another target\'s key: an upload is 404');
    is($p->{code}, 'deployment_not_found', '... deployment_not_found');
    ($st, $p) = api(POST => '/api/agent/telemetry', token => $theirs->{key},
                    json => { deployments => { $id => {
                        metrics => [ { replica => 0, ago_ms => 0, cpu_seconds => 1,
                                       rss_bytes => 1, fds => 1, restarts => 0 } ],
                        probes => [ { replica => 0, ago_ms => 0, ok => \0,
                                      latency_ms => undef } ] } } });
    is($st, 200, '... a report of another target\'s deployment is taken');
    is_deeply([ $p->{metrics}, $p->{probes} ], [ 0, 0 ], '... as nothing');
    is_deeply(db_digest(), $before, '... and nothing changed');
}

($st, my $mine) = api(POST => "$base/request-logs", token => $tok, json => { lines => 2 });
is($st, 202, 'logs asked while no agent listens');
my $raw = "first\nsecret $key here\nnul \0 and \xC3\x28 bytes\n";
($st, $p) = api(POST => "/api/agent/deployments/$id/logs/$mine->{log_request_id}", token => $key,
                json => { replicas => { 3 => encode_base64url($raw) } });
is($st, 200, 'an upload of raw bytes');
ok($p->{recorded}, '... recorded');
($st, undef, $res) = api(GET => "$base/logs?request=$mine->{log_request_id}", token => $tok);
is(decode('UTF-8', $res->content, Encode::FB_CROAK),
   "replica 3 | secret [REDACTED] here\nreplica 3 | nul \x{FFFD} and \x{FFFD}( bytes\n",
   '... its last 2 lines kept, the key redacted, NUL and invalid UTF-8 replaced');
($st, $p) = api(POST => "/api/agent/deployments/$id/logs/$mine->{log_request_id}", token => $key,
                json => { replicas => { 0 => encode_base64url("other\n") } });
is($st, 200, 'a second upload of the same request');
ok(!$p->{recorded}, '... is not recorded');
($st, $p) = api(POST => "$base/request-logs", token => $tok, json => {});
($st, $p) = api(POST => "/api/agent/deployments/$id/logs/$p->{log_request_id}", token => $key,
                json => { replicas => { 0 => 'not base64!' } });
is($st, 400, 'an upload that is not base64url: 400');

unlike(agent_log($agent), qr/\Q$key\E/, 'no key in the agent\'s log');
# The workload's own output held the key: it goes with the agent's files.
remove_tree($agent->{dir});

done_testing();
