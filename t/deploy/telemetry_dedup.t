# A telemetry batch sent twice is stored once (t/deploy/telemetry_dedup.t;
# docs/api/deployments.md, "Telemetry"; sql/027): the agent's boot and the
# seq of each figure let the service skip what it took already.
#
# First by hand with the target's key: the same batch twice stores nothing
# the second time and answers zero counts; old and new figures together
# store only the new; a new boot starts again; the same batch twice at
# once is taken by one of them; a batch without boot and seq (an agent of
# before) is taken as before; a malformed boot or seq is a 400 that
# changes nothing.
#
# Then with the real svc-agent behind a small proxy (t/lib/AgentProxy.pm)
# that relays its requests to httpd but loses the answer to its first telemetry
# batch after the service committed it (as a timeout, a reset or a proxy's
# 502 would): the agent sends the batch again with the next figures, and
# the database holds each figure once.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use AgentProxy;
use Fcntl qw(O_CREAT O_EXCL O_WRONLY);
use File::Path qw(remove_tree);
use File::Spec::Functions qw(catfile);
use File::Temp qw(tempdir);
use SvcTest;
use SvcDeploy;

skip_without_sandbox();

my $owner = new_user('teld-owner');
my $org = new_org($owner, prefix => 'teld');
my $tok = new_token($owner, scope => 'admin');
my $proj = new_project($org, $tok, 'Deduplicated');

my ($bundle, $commit) = ok_app_bundle();

# A deployment of the workload on the target (planned, unless approved).
sub new_deployment {
    return planned_deployment($org, $tok, $proj, shift, $bundle, $commit);
}

sub rows {
    my $dep = shift;
    return [ map { psql_value("SELECT count(*) FROM $_ WHERE deployment_id = '$dep'") + 0 }
             qw(deploy_metrics deploy_probes) ];
}

# --- by hand -----------------------------------------------------------------------------------
my $target = new_target($org, $tok, 'teld-1');
my $key = $target->{key};
my $dep = new_deployment($target)->{id};
my $boot = join '', map { sprintf '%02x', int rand 256 } 1 .. 16;

sub metric { my ($seq, $ago) = @_;
    return { replica => 0, ago_ms => $ago // 1000, cpu_seconds => 1.5, rss_bytes => 4096,
             fds => 3, restarts => 0, defined $seq ? (seq => $seq) : () } }
sub probe { my ($seq, $ago) = @_;
    return { replica => 0, ago_ms => $ago // 1000, ok => \1, latency_ms => 2,
             defined $seq ? (seq => $seq) : () } }

sub report {
    my ($b, $metrics, $probes) = @_;
    my $body = { deployments => { $dep => { metrics => $metrics, probes => $probes } },
                 defined $b ? (boot => $b) : () };
    return api(POST => '/api/agent/telemetry', token => $key, json => $body);
}

my @first = ([ metric(0, 4000), metric(2, 2000) ], [ probe(1, 3000), probe(3, 1000) ]);
my ($st, $p) = report($boot, @first);
is($st, 200, 'a numbered batch: 200');
is_deeply($p, { metrics => 2, probes => 2 }, '... two samples and two probes taken');
is_deeply(rows($dep), [ 2, 2 ], '... and stored');
is(psql_value("SELECT seq FROM deploy_telemetry_boots WHERE target_id = '$target->{id}' AND "
              . "boot = '$boot'"), 3, '... the boot\'s highest number kept');

my $before = db_digest();
($st, $p) = report($boot, @first);
is($st, 200, 'the same batch again (its answer was lost): 200');
is_deeply($p, { metrics => 0, probes => 0 }, '... acknowledged, nothing taken');
is_deeply(rows($dep), [ 2, 2 ], '... nothing stored twice');
is_deeply(db_digest(), $before, '... nothing else changed');

($st, $p) = report($boot, [ @{ $first[0] }, metric(4, 500) ], [ @{ $first[1] }, probe(5, 400) ]);
is_deeply([ $st, $p ], [ 200, { metrics => 1, probes => 1 } ],
          'old and new figures together: only the new taken');
is_deeply(rows($dep), [ 3, 3 ], '... and stored');

# The agent dropped its oldest at its bound (6 and 7 never sent): the rest
# is taken, and its resend with a newer figure takes the newer one only.
($st, $p) = report($boot, [ metric(8, 300) ], [ probe(9, 200) ]);
is_deeply([ $st, $p ], [ 200, { metrics => 1, probes => 1 } ],
          'numbers missing below (dropped at the agent\'s bound): taken');
($st, $p) = report($boot, [ metric(8, 1300), metric(10, 100) ], [ probe(9, 1200) ]);
is_deeply([ $st, $p ], [ 200, { metrics => 1, probes => 0 } ], '... its resend: the new one');
is_deeply(rows($dep), [ 5, 4 ], '... stored once each');

# The agent restarted: a new boot numbers from 0 again.
my $boot2 = join '', map { sprintf '%02x', int rand 256 } 1 .. 16;
($st, $p) = report($boot2, [ metric(0, 100) ], [ probe(1, 100) ]);
is_deeply([ $st, $p ], [ 200, { metrics => 1, probes => 1 } ], 'a new boot: taken from 0');
is_deeply(rows($dep), [ 6, 5 ], '... stored');

# An agent of before: no boot, no seq, taken as it comes (no dedup).
($st, $p) = report(undef, [ metric(undef, 50) ], [ probe(undef, 50) ]);
is_deeply([ $st, $p ], [ 200, { metrics => 1, probes => 1 } ],
          'a batch without boot and seq (an older agent): taken');
is_deeply(rows($dep), [ 7, 6 ], '... stored');
is(psql_value("SELECT count(*) FROM deploy_telemetry_boots WHERE target_id = "
              . "'$target->{id}'"), 2, '... and no boot recorded for it');

# The same batch twice at once (the agent gave up on the first, which was
# still being written): both meet at the boot's row; one takes the figures,
# the other waits for it and takes nothing.
my $racer = join '', map { sprintf '%02x', int rand 256 } 1 .. 16;
($st, $p) = report($racer, [ metric(0, 100) ], []);
is_deeply([ $st, $p ], [ 200, { metrics => 1, probes => 0 } ], 'a third boot: taken');
{
    my $rows = rows($dep);
    my $held = lock_hold("SELECT 1 FROM deploy_telemetry_boots WHERE target_id = "
                         . "'$target->{id}' AND boot = '$racer' FOR UPDATE", 2);
    my $twice = sub {
        my ($s, $d) = report($racer, [ metric(1, 90), metric(2, 80) ], [ probe(3, 70) ]);
        return ($s, $d);
    };
    my @r = race($twice, $twice);
    lock_release($held);
    is_deeply([ sort map { $_->[0] } @r ], [ 200, 200 ], 'the same batch twice at once: 200 both')
        or diag(explain(\@r));
    is_deeply([ sort { $a->[0] <=> $b->[0] } map { [ $_->[1]{metrics}, $_->[1]{probes} ] } @r ],
              [ [ 0, 0 ], [ 2, 1 ] ], '... one took the figures, the other nothing');
    is_deeply(rows($dep), [ $rows->[0] + 2, $rows->[1] + 1 ], '... stored once');
}

# Malformed boot or seq: 400, nothing changes.
my @bad = (
    [ 'boot too short', 'abc123', [ metric(20) ], [] ],
    [ 'boot of capitals', 'A' . substr(uc $boot, 1), [ metric(20) ], [] ],
    [ 'boot not hex', 'z' x 32, [ metric(20) ], [] ],
    [ 'boot a number', 12345, [ metric(20) ], [] ],
    [ 'a negative seq', $boot, [ metric(-1) ], [] ],
    [ 'a seq as a string', $boot, [ metric('21') ], [] ],
    [ 'a fractional seq', $boot, [], [ probe(21.5) ] ],
    [ 'a seq of null', $boot, [], [ { %{ probe(21) }, seq => undef } ] ],
    [ 'a figure without seq in a numbered batch', $boot, [ metric(22), metric(undef) ], [] ],
    [ 'a seq without a boot', undef, [ metric(23) ], [] ],
);
for my $c (@bad) {
    my ($what, $b, $m, $pr) = @$c;
    $before = db_digest();
    my $rows = rows($dep);
    ($st, $p) = report($b, $m, $pr);
    is($st, 400, "$what: 400");
    is($p->{code}, 'validation_failed', '... validation_failed');
    like($p->{errors}[0]{field} // '', qr/^(boot|deployments\.\Q$dep\E\.(metrics|probes)\[\d\]\.seq)$/,
         '... naming the field') or diag(explain($p));
    is_deeply(rows($dep), $rows, '... nothing stored');
    is_deeply(db_digest(), $before, '... nothing changed');
}
is(psql_value("SELECT seq FROM deploy_telemetry_boots WHERE target_id = '$target->{id}' AND "
              . "boot = '$boot'"), 10, '... the boot\'s number unmoved by them');
($st, $p) = report($boot, [ metric(24, 100) ], []);
is_deeply([ $st, $p ], [ 200, { metrics => 1, probes => 0 } ],
          'after them, the boot goes on where it was');

# Another target's key with the same boot is another agent: its own numbers.
my $t2 = new_target($org, $tok, 'teld-2');
($st, $p) = api(POST => '/api/agent/telemetry', token => $t2->{key},
                json => { boot => $boot, deployments => { $dep => {
                    metrics => [ metric(100) ], probes => [] } } });
is_deeply([ $st, $p ], [ 200, { metrics => 0, probes => 0 } ],
          'another target reporting this deployment: nothing taken');
is(psql_value("SELECT seq FROM deploy_telemetry_boots WHERE target_id = '$target->{id}' AND "
              . "boot = '$boot'"), 24, '... and this target\'s number unmoved');

# --- the real agent, its first answer lost -----------------------------------------------------
# The proxy (t/lib/AgentProxy.pm): each telemetry batch it relays is written
# to $plog as "B" when it begins and "E <dropped> <status> <figures of
# $dep> <metrics taken> <probes taken> <boot|-> <seqs|->" when httpd has
# answered; the first batch's answer is never passed on.
my $pdir = tempdir('teldedup-proxy-XXXX', DIR => SvcTest::t_logs(), CLEANUP => 1);
my $plog = catfile($pdir, 'batches');
my $dropped_flag = catfile($pdir, 'dropped');

sub lose_first_answer {
    my ($dep_id, $batch, $relay) = @_;
    AgentProxy::append($plog, 'B');
    my ($status, $ans, $taken) = $relay->();
    my $sent = eval { SvcTest::json()->decode($batch) } // {};
    my $mine = $sent->{deployments}{$dep_id} // {};
    my $figures = @{ $mine->{metrics} // [] } + @{ $mine->{probes} // [] };
    my $drop = $status == 200 && $figures > 0
               && sysopen(my $f, $dropped_flag, O_WRONLY | O_CREAT | O_EXCL) ? 1 : 0;
    AgentProxy::append($plog, join ' ', 'E', $drop, $status, $figures, $taken->{metrics} // 0,
                       $taken->{probes} // 0, $sent->{boot} // '-',
                       join(',', map { $_->{seq} // '-' } @{ $mine->{metrics} // [] },
                            @{ $mine->{probes} // [] }) || '-');
    return $drop ? undef : $ans;
}

sub batches {
    open my $fh, '<', $plog or return ();
    return map { chomp; [ split / / ] } <$fh>;
}

my $target3 = new_target($org, $tok, 'teld-3');
my $dep3 = new_deployment($target3);
my $proxy = AgentProxy::start(sub { lose_first_answer($dep3->{id}, @_) });
my $agent = AgentProxy::agent($proxy, $target3, 'teld-3');
($st) = api(POST => "/api/orgs/$org/deployments/$dep3->{id}/approve", token => $tok,
            json => { plan_version => $dep3->{plan}{version} });
is($st, 200, 'a deployment on the agent behind the proxy: approved');
ok(wait_deployment($org, $tok, $dep3->{id}, 'running', timeout => 90), '... running')
    or diag(agent_log($agent));
# The lost answer, then two batches answered after it.
ok(wait_for(sub {
    my @e = grep { $_->[0] eq 'E' } batches();
    my ($i) = grep { $e[$_][1] } 0 .. $#e;
    defined $i && (grep { $_->[2] == 200 } @e[$i + 1 .. $#e]) >= 2
}, timeout => 60, interval => 0.3), 'the first answer lost, two batches answered after it')
    or diag(explain([ batches() ]), agent_log($agent));
is(stop_agent($agent), 0, 'the agent stops');
ok(wait_for(sub {
    my @b = batches();
    (grep { $_->[0] eq 'B' } @b) == (grep { $_->[0] eq 'E' } @b)
}, timeout => 30, interval => 0.1), '... no batch on its way any more');
AgentProxy::stop($proxy);

my @e = grep { $_->[0] eq 'E' } batches();
my ($lost) = grep { $e[$_][1] } 0 .. $#e;
my $next = $e[$lost + 1];
my $boot3 = $e[$lost][6];
like($boot3, qr/^[0-9a-f]{32}$/, "the agent sends its boot ($boot3)");
is_deeply([ map { $_->[6] } @e ], [ ($boot3) x @e ], '... the same in every batch');
my %lost_seqs = map { $_ => 1 } split /,/, $e[$lost][7];
ok(!grep({ !/^\d+$/ } keys %lost_seqs), '... and a seq on every figure');
is(scalar(grep { $lost_seqs{$_} } split /,/, $next->[7]), $e[$lost][3],
   'the next batch carries the lost one\'s figures again');
is($next->[4] + $next->[5], $next->[3] - $e[$lost][3],
   '... and the service takes only the figures that are new');
my $acked = 0;
$acked += $_->[3] for grep { !$_->[1] && $_->[2] == 200 } @e;
my $stored = rows($dep3->{id});
is($stored->[0] + $stored->[1], $acked,
   "the database holds each figure once ($acked, as many as the agent saw acknowledged)");
my $took = 0;
$took += $_->[4] + $_->[5] for @e;
is($took, $acked, '... which is what the service\'s answers added up to');

remove_tree($agent->{dir});
done_testing();
