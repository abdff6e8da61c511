# Two nodes, one node lost (issue 25): node B is killed with SIGKILL, every
# process of it at once (its machine is gone), while it carries out runs.
# Its runs end as failed with error code `lost` once their lease
# (SvcRunLease, 10 s in the test configuration) runs out, ended by node A's
# supervisor (runs are not retried: docs/api/runs.md); node A's own runs,
# running beside them, are untouched; nothing of node B is left behind.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;
use SvcNode;

my $owner = new_user('nodes-lost');
my $org   = new_org($owner, prefix => 'nodes-lost');
my $tok   = new_token($owner, scope => 'admin');
my ($st) = api(POST => "/api/orgs/$org/projects", token => $tok,
               json => { slug => 'app', name => 'App' });
is($st, 201, 'project');
my $runs = "/api/orgs/$org/projects/app/runs";
my $slow = new_llm(flavor => 'openai');
new_provider($org, $tok, $slow, tools => 'off');
$slow->control(mode => 'slow', delay_ms => 120000);

my $b = SvcNode->start(name => 'b');
my $bsup = $b->supervisor_pid;
my $bruns = $b->dir . '/runs';

# Four runs: SvcRunConcurrency 2 on each node, so each node holds two.
my @ids;
for my $i (1 .. 4) {
    my ($s, $r) = api(POST => $runs, token => $tok, json => { instructions => "Slow $i" });
    is($s, 201, "run $i started");
    push @ids, $r->{id};
}
my $in = join ',', map { "'$_'" } @ids;
ok(wait_for(sub {
    psql_value("SELECT count(*) FROM runs WHERE id IN ($in) AND status = 'running'") == 4
}, timeout => 60), 'all four are running');
ok(wait_for(sub { 4 == grep { $_->{path} eq '/v1/chat/completions' } @{ $slow->requests } },
            timeout => 60), '... each waiting for the slow model');
my %owner = map { $_->[0] => $_->[1] } psql("SELECT id, lease_owner FROM runs WHERE id IN ($in)");
my @on_b = grep { $owner{$_} =~ m{/\Q$bsup\E/} } @ids;
my @on_a = grep { $owner{$_} !~ m{/\Q$bsup\E/} } @ids;
is(scalar @on_b, 2, "node B's supervisor holds two of them") or diag(explain(\%owner));
is(scalar @on_a, 2, "node A's the other two");

# The processes of node B's sandboxes (bwrap names the workspace).
sub b_sandboxes {
    my @p;
    for my $dir (glob '/proc/[0-9]*') {
        open my $cf, '<', "$dir/cmdline" or next;
        local $/;
        my $cmd = <$cf> // '';
        push @p, $dir =~ m{(\d+)$} if index($cmd, "$bruns/") >= 0;
    }
    return @p;
}
ok(scalar(b_sandboxes()), 'node B runs their sandboxes');

ok($b->kill_hard, 'node B killed with SIGKILL: none of its processes is left');
ok(wait_for(sub { !b_sandboxes() }, timeout => 20), '... nor its sandboxes')
    or diag('left: ' . join(' ', b_sandboxes()));

my $b_in = join ',', map { "'$_'" } @on_b;
my $ended = wait_for(sub {
    psql_value("SELECT count(*) FROM runs WHERE id IN ($b_in) AND status <> 'running'") == 2
}, timeout => 120, interval => 0.2);
ok($ended, "node B's runs ended once their lease ran out");
for my $id (@on_b) {
    my (undef, $r) = api(GET => "$runs/$id", token => $tok);
    is($r->{status}, 'failed', "$id: failed");
    is($r->{error}{code}, 'lost', '... lost');
    my (undef, undef, $res) = api(GET => "/api/orgs/$org/runs/$id/logs", token => $tok);
    like($res->content, qr/\[mod_svc\] lost:/, '... and its log says so');
    my @status = map { $_->[0] } psql("SELECT data->>'status' FROM events WHERE run_id = '$id' "
                                      . "AND kind = 'run.status' ORDER BY id");
    is(join(' ', @status), 'queued running failed', '... its events');
}
my $a_in = join ',', map { "'$_'" } @on_a;
is(psql_value("SELECT count(*) FROM runs WHERE id IN ($a_in) AND status = 'running'"), 2,
   "node A's runs are still running, untouched");

# Node A's end as they would: cancelled, and the slow answers end with the fake.
for my $id (@on_a) {
    my ($cs) = api(POST => "$runs/$id/cancel", token => $tok);
    is($cs, 200, "$id: cancelled");
}
ok(wait_for(sub {
    psql_value("SELECT count(*) FROM runs WHERE id IN ($a_in) AND status = 'cancelled'") == 2
}, timeout => 30), "node A's runs are cancelled");
$slow->stop;

# A node started again takes new runs.
my $ok = new_llm(flavor => 'openai');
my $prov = new_provider($org, $tok, $ok, tools => 'off');
api(POST => "/api/orgs/$org/providers/$prov->{id}/default", token => $tok);
$ok->control(reply => json()->encode({ summary => 'A file',
                                       files => [ { path => 'a.txt', content => "a\n" } ] }));
my $b2 = SvcNode->start(name => 'b2');
my ($s, $r) = api(POST => $runs, token => $tok, base => $b2->url,
                  json => { instructions => 'After the loss' });
is($s, 201, 'a run started through the new node B');
ok(wait_for(sub {
    psql_value("SELECT status FROM runs WHERE id = '$r->{id}'") eq 'succeeded'
}, timeout => 120), '... succeeds');
$b2->stop;
runs_settle();

done_testing();
