# A deployment's replica-hours (docs/api/billing.md, "Deployment hours"),
# with a real svc-agent: counted while the deployment is running as the
# agent reported it, replicas x wall time, closed at every scale and at the
# stop; GET /usage (by kind and by project) shows what the deployment's
# timestamps say; a second stop and a replayed agent report add nothing; a
# piece of time running past full hours is written by the planners' sweep
# one record per UTC hour, so a month's end splits it; a restart of
# PostgreSQL while a deployment runs loses and doubles nothing; and a plan
# with hard limits refuses new runs once its deployment hours are used.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;
use SvcDeploy;
use Time::Local qw(timegm);

skip_without_sandbox();

my $owner = new_user('dusage-owner');
my $org = new_org($owner, prefix => 'dusage');
my $tok = new_token($owner, scope => 'admin');
my $proj = new_project($org, $tok, 'Metered');
my $other = new_project($org, $tok, 'Unmetered');
my $org_id = org_id_of($org);
my $proj_id = psql_value("SELECT id FROM projects WHERE org_id = '$org_id' AND slug = '$proj'");

# RFC 3339 (seconds, Z) → epoch seconds.
sub epoch {
    my ($y, $mo, $d, $h, $mi, $s) = $_[0] =~ /^(\d+)-(\d+)-(\d+)T(\d+):(\d+):(\d+)Z$/
        or die "not a time: $_[0]\n";
    return timegm($s, $mi, $h, $d, $mo - 1, $y);
}

sub act {
    my ($id, $action, $body) = @_;
    my ($st, $d) = api(POST => "/api/orgs/$org/deployments/$id/$action", token => $tok,
                       ($body ? (json => $body) : ()));
    return ($st, $d);
}

# The org's usage, this month and the one before (a deployment piece may
# start in it below).
my $from = psql_value("SELECT svc_ts(date_trunc('month', now(), 'UTC') - interval '1 month')");
my $to = psql_value("SELECT svc_ts(date_trunc('day', now(), 'UTC') + interval '1 day')");
sub usage {
    my ($group, %opt) = @_;
    my ($st, $u) = api(GET => "/api/orgs/$org/usage?group_by=$group&from=" . ($opt{from} // $from)
                       . '&to=' . ($opt{to} // $to), token => $tok);
    die "usage: $st\n" unless $st == 200;
    return $u;
}
sub kind_hours {
    my $u = usage('kind', @_);
    my ($row) = grep { $_->{kind} eq 'deployment' } @{ $u->{data} };
    return $row ? $row->{deployment_hours} : 0;
}
sub records {
    my $id = shift;
    return psql_value("SELECT count(*) FROM usage_records WHERE subject_id = '$id'");
}

my $target = new_target($org, $tok, 'meter-1');
my $agent = start_agent(key => $target->{key}, name => 'meter-1');
my ($bundle, $commit) = git_bundle('Procfile' => "web: python3 -m http.server \$PORT\n",
                                   'index.html' => "metered\n");
my $run = run_fixture($org, $proj, bundle => $bundle, commit => $commit);
my ($st, $d) = api(POST => "/api/orgs/$org/deployments", token => $tok,
                   json => { project => $proj, target_id => $target->{id}, run_id => $run });
is($st, 201, 'a deployment');
my $id = $d->{id};
$d = wait_deployment($org, $tok, $id, 'planned');
ok($d, '... planned (one replica, from the Procfile)');

# Each piece: [replicas, opened (the move to running), closed (the next
# move)], as the deployment's updated_at says (to the second).
my @pieces;
is(kind_hours(), 0, 'nothing used before it runs');
($st) = act($id, 'approve', { plan_version => $d->{plan}{version} });
is($st, 200, 'approved');
$d = wait_deployment($org, $tok, $id, 'running', timeout => 90);
ok($d, '... running') or diag(agent_log($agent));
is(records($id), 0, '... nothing recorded while deploying');
push @pieces, [ 1, $d->{updated_at} ];
sleep 2;

($st, $d) = act($id, 'scale', { replicas => 2 });
is($st, 200, 'scaled to 2');
$pieces[-1][2] = $d->{updated_at};
ok(records($id) >= 1, '... the one-replica time is recorded at the scale');
$d = wait_deployment($org, $tok, $id, 'running', timeout => 90);
ok($d, '... running with 2') or diag(agent_log($agent));
is(scalar @{ $d->{workload}{replicas} }, 2, '... two replicas');
push @pieces, [ 2, $d->{updated_at} ];
sleep 3;

($st, $d) = act($id, 'scale', { replicas => 1 });
is($st, 200, 'scaled to 1');
$pieces[-1][2] = $d->{updated_at};
$d = wait_deployment($org, $tok, $id, 'running', timeout => 90);
ok($d, '... running with 1');
push @pieces, [ 1, $d->{updated_at} ];
my $scale_work = psql_value("SELECT id FROM deploy_work WHERE deployment_id = '$id' "
                            . "AND action = 'scale' AND outcome = 'done' ORDER BY seq DESC LIMIT 1");
sleep 2;

# A replayed report of the scale's work (the agent's word on it again)
# while running: nothing moves, nothing is recorded.
my $n = records($id);
my $hours = kind_hours();
($st, my $r) = api(POST => "/api/agent/work/$scale_work", token => $target->{key},
                   json => { outcome => 'done' });
is($st, 200, 'a replayed report of the scale');
ok(!$r->{recorded}, '... not recorded again');
is(records($id), $n, '... no usage recorded');
is(deployment($org, $tok, $id)->{status}, 'running', '... still running');

($st, $d) = act($id, 'stop');
is($st, 200, 'stopped');
$pieces[-1][2] = $d->{updated_at};
$d = wait_deployment($org, $tok, $id, 'stopped', timeout => 30);
ok($d, '... stopped');

# What the timestamps say: each piece to the second either way, and the
# API's four places (docs/api/billing.md).
my ($lo, $hi) = (0, 0);
for my $p (@pieces) {
    my ($reps, $a, $b) = @$p;
    my $secs = epoch($b) - epoch($a);
    $lo += $reps * ($secs - 1) / 3600;
    $hi += $reps * ($secs + 1) / 3600;
}
$lo -= 0.00005;
$hi += 0.00005;
$hours = kind_hours();
ok($hours >= $lo && $hours <= $hi, "usage by kind: $hours deployment hours, as the timestamps "
   . "say ($lo .. $hi)") or diag(explain(\@pieces));
ok($hours > 0, '... more than nothing');
my $exact = psql_value("SELECT sum(quantity)::text FROM usage_records WHERE subject_id = '$id'");
ok(abs($hours - $exact) <= 0.00005, "... the records' sum ($exact), to four places");
# Replicas x interval: the ratio of each record's quantity to its hours is
# 1 or 2, to the recorder's six places.
is(psql_value("SELECT count(*) FROM (SELECT quantity, extract(epoch FROM ended_at - started_at)"
              . " / 3600 AS h FROM usage_records WHERE subject_id = '$id') x WHERE h <= 0 OR "
              . "round(quantity / h) NOT IN (1, 2) OR "
              . "abs(quantity - round(h * round(quantity / h), 6)) > 0.000001"), 0,
   '... each record is its replicas x its own interval');
is(psql_value("SELECT count(*) FROM usage_records WHERE subject_id = '$id' AND "
              . "(project_id IS DISTINCT FROM '$proj_id' OR org_id <> '$org_id')"), 0,
   '... each for the deployment\'s project');
my $u = usage('project');
my ($prow) = grep { $_->{project} && $_->{project}{slug} eq $proj } @{ $u->{data} };
is($prow && $prow->{deployment_hours}, $hours, 'usage by project: the same hours, on its project');
ok(!grep({ $_->{project} && $_->{project}{slug} eq $other && $_->{deployment_hours} }
         @{ $u->{data} }), '... none on the other project');
is($u->{totals}{deployment_hours}, $hours, '... and in the totals');
my ($st2, $bill) = api(GET => "/api/orgs/$org/billing", token => $tok);
is($st2, 200, 'GET billing');
is($bill->{usage}{deployment_hours}{used}, $hours, '... this period\'s deployment hours');

# A second stop, and the stop's report replayed: nothing more.
$n = records($id);
($st) = act($id, 'stop');
is($st, 409, 'a second stop is refused');
my $stop_work = psql_value("SELECT id FROM deploy_work WHERE deployment_id = '$id' "
                           . "AND action = 'stop'");
($st, $r) = api(POST => "/api/agent/work/$stop_work", token => $target->{key},
                json => { outcome => 'done' });
is($st, 200, 'the stop\'s report replayed');
ok(!$r->{recorded}, '... not recorded again');
is(records($id), $n, '... no usage recorded');
is(kind_hours(), $hours, '... the same hours');
is(psql_value("SELECT count(*) FROM deployments WHERE id = '$id' AND usage_from IS NOT NULL"), 0,
   '... and no time counted while stopped');

# --- past full hours, and across a month's end ---------------------------------------------
# Started again (one replica); the piece's start is then put at 23:30 of
# last month's last day, as if it had run since: the sweep writes it up to
# the last full hour, one record per UTC hour.
($st) = act($id, 'start');
is($st, 200, 'started again');
$d = wait_deployment($org, $tok, $id, 'running', timeout => 90);
ok($d, '... running') or diag(agent_log($agent));
my $month = psql_value("SELECT svc_ts(date_trunc('month', now(), 'UTC'))");
my $before = records($id);
# (Its pieces from here on: the records after these. Put back in time, the
# new piece overlaps the first ones of this hour: the test's doing.)
my $last_id = psql_value("SELECT coalesce(max(id), 0) FROM usage_records");
psql("UPDATE deployments SET usage_from = date_trunc('month', now(), 'UTC') - "
     . "interval '30 minutes' WHERE id = '$id' AND usage_from IS NOT NULL");
my $swept = wait_for(sub {
    psql_value("SELECT count(*) FROM deployments WHERE id = '$id' AND "
               . "usage_from = date_trunc('hour', now(), 'UTC')") == 1
}, timeout => 60, interval => 0.5);
ok($swept, 'the sweep writes the full hours, and counts on from the last one');
my $hours_now = psql_value("SELECT extract(epoch FROM date_trunc('hour', now(), 'UTC') - "
                           . "date_trunc('month', now(), 'UTC'))::bigint / 3600");
is(records($id) - $before, $hours_now + 1, "... one record per hour ($hours_now + the half)");
is(psql_value("SELECT count(*) FROM usage_records WHERE subject_id = '$id' AND "
              . "id > $last_id AND date_trunc('hour', started_at) <> date_trunc('hour', ended_at - "
              . "interval '1 microsecond')"), 0, '... each within one UTC hour');
is(psql_value("SELECT count(*) FROM usage_records a WHERE subject_id = '$id' AND "
              . "id > $last_id AND started_at > date_trunc('month', now(), 'UTC') - "
              . "interval '30 minutes' AND NOT EXISTS (SELECT 1 FROM usage_records b WHERE "
              . "b.subject_id = a.subject_id AND b.id > $last_id AND "
              . "b.ended_at = a.started_at)"), 0, '... one after the other, no gap');
is(kind_hours(to => $month), 0.5, 'last month has its half hour');
my $after = kind_hours(from => $month);
ok(abs($after - ($hours + $hours_now)) <= 0.0001, "this month the rest ($after)");
my ($day) = grep { $_->{day} eq substr($month, 0, 10) } @{ usage('day')->{data} };
ok($day && $day->{deployment_hours} >= 0.5 && $day->{deployment_hours} <= 24,
   '... by day, the first of the month has its hours');

# A second sweep of the same hours (as another node's) writes nothing.
$n = records($id);
psql("UPDATE deployments SET usage_from = date_trunc('month', now(), 'UTC') - "
     . "interval '30 minutes' WHERE id = '$id' AND usage_from IS NOT NULL");
ok(wait_for(sub {
    psql_value("SELECT count(*) FROM deployments WHERE id = '$id' AND "
               . "usage_from = date_trunc('hour', now(), 'UTC')") == 1
}, timeout => 60, interval => 0.5), 'the same hours swept again');
is(records($id), $n, '... record nothing twice');

# PostgreSQL restarted while it runs: the counted time is in the row.
my $open = psql_value("SELECT svc_ts(usage_from) FROM deployments WHERE id = '$id'");
my $mark = expect_errors_begin();
pg_restart('fast');
ok(wait_for(sub { (api(GET => "/api/orgs/$org/deployments/$id", token => $tok))[0] == 200 },
            timeout => 60), 'PostgreSQL restarted');
($st, $d) = act($id, 'stop');
is($st, 200, 'stopped after the restart');
expect_errors_end($mark);
my $last = psql_value("SELECT quantity::text FROM usage_records WHERE subject_id = '$id' "
                      . "ORDER BY id DESC LIMIT 1");
my $secs = epoch($d->{updated_at}) - epoch($open);
ok($last * 3600 >= $secs - 1 && $last * 3600 <= $secs + 1,
   "... the last piece runs from the last full hour to the stop ($last h)");
my $total = psql_value("SELECT sum(quantity)::text FROM usage_records WHERE subject_id = '$id'");
ok(abs(kind_hours() - $total) <= 0.00005, "the usage is every record's, once ($total h)");
ok(wait_deployment($org, $tok, $id, 'stopped', timeout => 30), '... stopped');

# --- a plan with hard limits: its deployment hours (docs/api/billing.md) ------------------
# The org subscribes to the capped plan (one deployment hour, hard) at the
# fake provider; its period is then put back to last month, as if it had
# begun then, so the hours above are the period's.
{
    my $base = base_url();
    ($st, my $co) = api(POST => "/api/orgs/$org/billing/checkout", token => $tok,
                        json => { plan => 'capped', success_url => "$base/ok",
                                  cancel_url => "$base/no" });
    is($st, 201, 'a checkout for the capped plan (one deployment hour, hard)');
    my $paid = stripe_do('complete_checkout', { session => $co->{id} });
    billing_deliver($_) for @{ $paid->{events} };
    my (undef, $b) = api(GET => "/api/orgs/$org/billing", token => $tok);
    is($b->{plan}{id}, 'capped', '... the org is on it');
    ok($b->{usage}{deployment_hours}{used} < 1, '... with less than its hour used this period');
    psql("UPDATE billing_accounts SET current_period_start = date_trunc('month', now(), 'UTC') "
         . "- interval '1 month' WHERE org_id = '$org_id'");
    (undef, $b) = api(GET => "/api/orgs/$org/billing", token => $tok);
    is($b->{usage}{deployment_hours}{included}, 1, '... of 1 included');
    ok(abs($b->{usage}{deployment_hours}{used} - kind_hours()) <= 0.0001,
       "the period from last month: its deployment hours used ($b->{usage}{deployment_hours}{used})");
    my $p;
    ($st, $p) = api(POST => "/api/orgs/$org/projects/$proj/runs", token => $tok,
                    json => { instructions => 'Go.' });
    is($st, 402, 'a new run is refused: 402');
    is($p->{code}, 'budget_exceeded', '... budget_exceeded');
    like($p->{detail}, qr/Capped plan's allowance of 1 deployment hours/,
         '... naming the plan and its deployment hours');
}

is(stop_agent($agent), 0, 'the agent stops cleanly');

done_testing();
