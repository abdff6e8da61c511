# Runs that do not end well, and faults around them: cancelling a queued
# and a running run (its whole sandbox gone, cancelled within 5 seconds),
# a run that overruns its SvcRunTimeout, the supervisor killed with
# SIGKILL mid-run (it comes back; the run fails as lost when its lease runs
# out: docs/api/runs.md), and PostgreSQL restarted mid-run (the run still
# succeeds, its log whole).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $owner = new_user('runs-fail');
my $org   = new_org($owner, prefix => 'runs-fail');
my $tok   = new_token($owner, scope => 'admin');
my ($st) = api(POST => "/api/orgs/$org/projects", token => $tok,
               json => { slug => 'app', name => 'App' });
is($st, 201, 'project');
my $runs = "/api/orgs/$org/projects/app/runs";
my $work = Apache::Test::vars('t_logs') . '/runs';
my $reply = json()->encode({ summary => 'A file',
                             files => [ { path => 'a.txt', content => "a\n" } ] });

sub start_run {
    my (%opt) = @_;
    my ($s, $r) = api(POST => $runs, token => $tok, json => { instructions => $opt{text} // 'Go' },
                      $opt{base} ? (base => $opt{base}) : ());
    is($s, 201, 'a run is started') or diag(explain($r));
    return $r;
}

sub get_run {
    my (undef, $r) = api(GET => "$runs/$_[0]", token => $tok);
    return $r;
}

sub wait_status {
    my ($id, $re, $timeout) = @_;
    return wait_for(sub { my $r = get_run($id); $r && $r->{status} =~ $re ? $r : undef },
                    timeout => $timeout // 60, interval => 0.1);
}

sub run_log {
    my (undef, undef, $res) = api(GET => "/api/orgs/$org/runs/$_[0]/logs", token => $tok);
    return $res->content;
}

# The processes of a run's sandbox: bwrap (its argv names the workspace)
# and everything below it.
sub sandbox_pids {
    my $id = shift;
    my (%kids, @roots);
    for my $dir (glob '/proc/[0-9]*') {
        my ($pid) = $dir =~ /(\d+)$/;
        open my $sf, '<', "$dir/stat" or next;
        my $stat = <$sf> // next;
        my ($ppid) = $stat =~ /\)\s+\S+\s+(\d+)/ or next;
        push @{ $kids{$ppid} }, $pid;
        open my $cf, '<', "$dir/cmdline" or next;
        local $/;
        my $cmd = <$cf> // '';
        push @roots, $pid if $cmd =~ /^[^\0]*bwrap\0/ && index($cmd, "$work/$id\0") >= 0;
    }
    my @all = @roots;
    for (my $i = 0; $i < @all; $i++) { push @all, @{ $kids{ $all[$i] } // [] } }
    return @all;
}

sub alive { return grep { kill 0, $_ } @_ }

# --- cancel: a running run, and a queued one behind two running ones ----------------
my $slow = new_llm(flavor => 'openai');
new_provider($org, $tok, $slow, tools => 'off');
$slow->control(mode => 'slow', delay_ms => 60000);
my @running = map { start_run(text => "Slow $_") } 1 .. 2;
for my $r (@running) {
    ok(wait_status($r->{id}, qr/^running$/), "run $r->{id} is running");
}
# Both slots are busy, and each factory waits for its model: the next run waits.
ok(wait_for(sub { 2 == grep { $_->{path} eq '/v1/chat/completions' } @{ $slow->requests } },
            timeout => 60), 'both wait for the slow model')
    or diag(run_log($running[0]{id}));
my $queued = start_run(text => 'Behind them');
sleep 1;
is(get_run($queued->{id})->{status}, 'queued', 'a third run waits in the queue');
my ($cs, $cr) = api(POST => "$runs/$queued->{id}/cancel", token => $tok);
is($cs, 200, 'cancel a queued run');
is($cr->{status}, 'cancelled', '... cancelled at once');
ok($cr->{finished_at}, '... and finished');
($cs, $cr) = api(POST => "$runs/$queued->{id}/cancel", token => $tok);
is($cs, 409, 'cancelling it again: 409');
is($cr->{code}, 'invalid_status', '... invalid_status');

my $victim = $running[0];
my @pids = sandbox_pids($victim->{id});
ok(@pids >= 3, 'the running run has its sandbox: ' . scalar(@pids) . ' processes')
    or diag("work dir $work");
($cs, $cr) = api(POST => "$runs/$victim->{id}/cancel", token => $tok);
is($cs, 200, 'cancel a running run');
is($cr->{status}, 'running', '... it is still running as the answer is written');
ok($cr->{cancel_requested}, '... with its cancellation asked for');
my $c = wait_status($victim->{id}, qr/^(?:cancelled|failed|succeeded)$/, 5);
ok($c, 'within 5 seconds it has ended');
is($c && $c->{status}, 'cancelled', '... cancelled');
ok(!defined($c && $c->{error}), '... without an error');
ok(wait_for(sub { !alive(@pids) }, timeout => 5), '... and its whole process tree is gone')
    or diag('alive: ' . join(' ', alive(@pids)));
ok(!-e "$work/$victim->{id}", '... its workspace too');
like(run_log($victim->{id}), qr/cancelled: stopping the sandbox/, '... the log says so');
my @status = map { json()->decode($_->[0])->{status} } psql(
    "SELECT data::text FROM events WHERE run_id = '$victim->{id}' AND kind = 'run.status' "
    . 'ORDER BY id');
is_deeply(\@status, [qw(queued running cancelled)], '... and its events');
my $c2 = $running[1];
api(POST => "$runs/$c2->{id}/cancel", token => $tok);
ok(wait_status($c2->{id}, qr/^cancelled$/, 5), 'the other one too');
# The slow answers are still on their way; the fake going away ends them.
$slow->stop;

# --- timeout -----------------------------------------------------------------------------
my $hang = new_llm(flavor => 'openai');
my $hprov = new_provider($org, $tok, $hang, tools => 'off');
my ($ps) = api(POST => "/api/orgs/$org/providers/$hprov->{id}/default", token => $tok);
is($ps, 200, 'a hanging provider is the default now');
$hang->control(mode => 'timeout', hang_seconds => 60);
my $short = 'http://127.0.0.1:' . Apache::Test::vars('runs_short_port');
my $t = start_run(text => 'Too slow', base => $short);
my $td = wait_status($t->{id}, qr/^(?:cancelled|failed|succeeded)$/, 30);
is($td && $td->{status}, 'failed', 'a run past its SvcRunTimeout (4 s) fails');
is($td && $td->{error}{code}, 'timeout', '... with timeout');
like(run_log($t->{id}), qr/took longer than its 4 seconds/, '... and the log says so');
$hang->stop;

# --- the supervisor killed mid-run ----------------------------------------------------------
my $slow2 = new_llm(flavor => 'openai');
my $sprov = new_provider($org, $tok, $slow2, tools => 'off');
api(POST => "/api/orgs/$org/providers/$sprov->{id}/default", token => $tok);
$slow2->control(mode => 'slow', delay_ms => 60000);
my $k = start_run(text => 'Killed under');
ok(wait_status($k->{id}, qr/^running$/), 'a run is running');
ok(wait_for(sub { scalar @{ $slow2->requests } }, timeout => 30), '... and waits for its model');
my $pidfile = Apache::Test::vars('t_logs') . '/svc-supervisor.pid';
my $sup = do { open my $fh, '<', $pidfile or die "$pidfile: $!"; local $/; <$fh> };
chomp $sup;
ok($sup =~ /^\d+$/ && kill(0, $sup), "the supervisor runs (pid $sup)");
@pids = sandbox_pids($k->{id});
ok(@pids >= 3, '... with the run\'s sandbox');
kill 'KILL', $sup;
ok(wait_for(sub { !kill(0, $sup) || `ps -o stat= -p $sup` =~ /Z/ }, timeout => 10),
   'SIGKILL: the supervisor is gone');
ok(wait_for(sub { !alive(@pids) }, timeout => 10), '... and the sandbox with it');
my $back = wait_for(sub {
    open my $fh, '<', $pidfile or return;
    my $p = <$fh> // return;
    chomp $p;
    return $p ne $sup && kill(0, $p) ? $p : undef;
}, timeout => 30);
ok($back, "it comes back (pid " . ($back // '-') . ')');
my $lost = wait_status($k->{id}, qr/^(?:cancelled|failed|succeeded)$/, 60);
is($lost && $lost->{status}, 'failed', 'the run ends when its lease runs out');
is($lost && $lost->{error}{code}, 'lost', '... as lost');
like(run_log($k->{id}), qr/\[mod_svc\] lost:/, '... and its log says so');
$slow2->stop;

# The new supervisor takes new runs.
my $ok = new_llm(flavor => 'openai');
my $oprov = new_provider($org, $tok, $ok, tools => 'off');
api(POST => "/api/orgs/$org/providers/$oprov->{id}/default", token => $tok);
$ok->control(replies => [ $reply ]);
my $after = start_run(text => 'After the restart');
is(wait_status($after->{id}, qr/^(?:cancelled|failed|succeeded)$/)->{status}, 'succeeded',
   'the supervisor that came back carries out runs');

# --- PostgreSQL restarted mid-run -------------------------------------------------------------
$ok->control(mode => 'slow', delay_ms => 4000, replies => [ $reply ]);
my $pg = start_run(text => 'Across a database restart');
ok(wait_for(sub { scalar grep { $_->{path} eq '/v1/chat/completions' } @{ $ok->requests } },
            timeout => 30), 'a run waits for its model');
my $mark = expect_errors_begin();
pg_restart('fast');
my $pd = wait_status($pg->{id}, qr/^(?:cancelled|failed|succeeded)$/, 60);
expect_errors_end($mark);
is($pd && $pd->{status}, 'succeeded', 'PostgreSQL restarted mid-run: the run still succeeds')
    or diag(run_log($pg->{id}));
my $log = run_log($pg->{id});
my @want = ('started on', 'asking the model', 'model call 1: answered', 'the model replied',
            'committed', 'bundle:', 'artifact:', 'succeeded:');
my $at = 0;
for my $w (@want) {
    my $i = index($log, $w, $at);
    ok($i >= 0, "... its log has '$w', in order");
    $at = $i if $i >= 0;
}
my @lines = map { json()->decode($_->[0]) } psql(
    "SELECT data::text FROM events WHERE run_id = '$pg->{id}' AND kind = 'run.log' ORDER BY id");
is(join('', map { "$_->{line}\n" } @lines), $log, '... its run.log events carry it whole, '
   . 'each line once');
is(psql_value("SELECT count(*) FROM run_logs WHERE run_id = '$pg->{id}'") > 0 ? 1 : 0, 1,
   '... stored in chunks');
$ok->stop;

done_testing();
