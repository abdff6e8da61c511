# Two nodes, one queue (issue 25): 40 runs started through node A are each
# carried out exactly once, by one of the two nodes' run supervisors: every
# run succeeded once (one attempt, one claim in one node's error log, one
# run.status sequence queued → running → succeeded, one call of the model),
# and both supervisors took part.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use File::Spec::Functions qw(catfile);
use SvcTest;
use SvcNode;

my $N = 40;

my $owner = new_user('nodes-runs');
my $org   = new_org($owner, prefix => 'nodes-runs');
my $tok   = new_token($owner, scope => 'admin');
my ($st) = api(POST => "/api/orgs/$org/projects", token => $tok,
               json => { slug => 'app', name => 'App' });
is($st, 201, 'project');
my $runs = "/api/orgs/$org/projects/app/runs";
my $llm = new_llm(flavor => 'openai');
new_provider($org, $tok, $llm, tools => 'off');
$llm->control(reply => json()->encode({ summary => 'A file',
                                        files => [ { path => 'a.txt', content => "a\n" } ] }));

my $b = SvcNode->start(name => 'b');
ok($b->supervisor_pid, 'node B runs with its own run supervisor');
my $sup_a = do {
    open my $fh, '<', catfile(t_logs(), 'svc-supervisor.pid') or die "node A's supervisor: $!";
    local $/;
    my $p = <$fh>;
    chomp $p;
    $p;
};
isnt($sup_a, $b->supervisor_pid, "... not node A's");

# Where node A's error log is now: the claims of these runs come after.
my $mark_a = -s error_log_path() // 0;

my @ids;
for my $i (1 .. $N) {
    my ($s, $r) = api(POST => $runs, token => $tok, json => { instructions => "Run $i" });
    is($s, 201, "run $i started on node A") or diag(explain($r));
    push @ids, $r->{id} if $r && $r->{id};
}
is(scalar @ids, $N, "$N runs queued");
my $in = join ',', map { "'$_'" } @ids;

my $done = wait_for(sub {
    psql_value("SELECT count(*) FROM runs WHERE id IN ($in) AND status IN "
               . "('succeeded', 'failed', 'cancelled')") == $N
}, timeout => 600, interval => 0.5);
ok($done, "all $N runs ended");

my %status = map { $_->[0] => $_->[1] } psql("SELECT id, status FROM runs WHERE id IN ($in)");
is(scalar(grep { ($status{$_} // '') eq 'succeeded' } @ids), $N, "all $N succeeded")
    or diag(explain(\%status));
my %attempts = map { $_->[0] => $_->[1] } psql("SELECT id, attempts FROM runs WHERE id IN ($in)");
is_deeply([ grep { ($attempts{$_} // 0) != 1 } @ids ], [], 'each was claimed by one attempt');

my %seq;
for my $row (psql("SELECT run_id, data->>'status' FROM events WHERE run_id IN ($in) "
                  . "AND kind = 'run.status' ORDER BY id")) {
    push @{ $seq{ $row->[0] } }, $row->[1];
}
is_deeply([ grep { join(' ', @{ $seq{$_} // [] }) ne 'queued running succeeded' } @ids ], [],
          'each has run.status queued, running, succeeded: once each');

# The claims, as each node's supervisor logs them (SVC0078).
sub claims {
    my ($file, $from) = @_;
    open my $fh, '<', $file or return ();
    seek $fh, $from, 0;
    my %c;
    while (my $line = <$fh>) {
        $c{$1}++ if $line =~ /SVC0078: run (run_\w+) claimed/;
    }
    return %c;
}
my $settled = wait_for(sub {
    my %a = claims(error_log_path(), $mark_a);
    my %bc = claims($b->error_log, 0);
    return (grep { $a{$_} || $bc{$_} } @ids) == $N;
}, timeout => 10);
my %ca = claims(error_log_path(), $mark_a);
my %cb = claims($b->error_log, 0);
is_deeply([ grep { ($ca{$_} // 0) + ($cb{$_} // 0) != 1 } @ids ], [],
          'each run was claimed exactly once, by one of the two supervisors');
my $on_a = grep { $ca{$_} } @ids;
my $on_b = grep { $cb{$_} } @ids;
ok($on_a > 0, "node A's supervisor carried out runs ($on_a)");
ok($on_b > 0, "node B's supervisor carried out runs ($on_b)");

my $calls = grep { $_->{path} eq '/v1/chat/completions' } @{ $llm->requests };
is($calls, $N, "the model was asked $N times: once per run");

is(psql_value("SELECT count(*) FROM run_artifacts WHERE run_id IN ($in) AND part = 0"), $N,
   'one artifact each');

$b->stop;
ok(!$b->processes, 'node B stopped, nothing of it left');
runs_settle();

done_testing();
