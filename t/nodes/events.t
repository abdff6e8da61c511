# Two nodes, one event log (issue 25): events committed through node A reach
# an organization's event stream open on node B (each once, in order), and a
# client that reconnects to the other node with Last-Event-ID loses nothing
# and sees nothing twice. The events are the status changes of runs started
# through node A's API (an org without a model provider: each run is failed
# at once by one of the two supervisors: three run.status events each, and
# run.log events for the lines of its log).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;
use SvcNode;

my $owner = new_user('nodes-sse');
my $org   = new_org($owner, prefix => 'nodes-sse');
my $org_id = org_id_of($org);
my $tok   = new_token($owner, scope => 'admin');
my ($st) = api(POST => "/api/orgs/$org/projects", token => $tok,
               json => { slug => 'app', name => 'App' });
is($st, 201, 'project');
my $runs = "/api/orgs/$org/projects/app/runs";
my $path = "/api/orgs/$org/events";

my $b = SvcNode->start(name => 'b');

# The org's events as the database has them, after event id $after.
sub db_ids {
    my $after = shift // 0;
    return map { $_->[0] } psql("SELECT id FROM events WHERE org_id = "
                                . SvcTest::sql_quote($org_id) . " AND id > $after ORDER BY id");
}

# Runs started through node A, each ended (no provider: failed at once).
sub runs_on_a {
    my $n = shift;
    my @ids;
    for my $i (1 .. $n) {
        my ($s, $r) = api(POST => $runs, token => $tok, json => { instructions => "Run $i" });
        is($s, 201, "run $i started through node A");
        push @ids, $r->{id};
    }
    my $in = join ',', map { "'$_'" } @ids;
    ok(wait_for(sub {
        psql_value("SELECT count(*) FROM runs WHERE id IN ($in) AND status = 'failed'") == $n
    }, timeout => 60), "... and ended by a supervisor");
    return @ids;
}

# Reads events from $s until it has seen every id in @want (or gives up after
# a generous wait: the check is that they arrive, not how fast).
sub read_until {
    my ($s, @want) = @_;
    my %need = map { $_ => 1 } @want;
    my @got;
    while (%need) {
        my $e = sse_next($s, 30) or last;
        push @got, $e;
        delete $need{ $e->{id} };
    }
    return @got;
}

# --- live: committed through A, streamed by B --------------------------------------------
my $s = sse_open($path, token => $tok, port => $b->port);
is($s->{status}, 200, 'the org stream opens on node B');
runs_on_a(3);
my @want = db_ids();
ok(@want >= 9, 'three runs: their events committed (' . scalar(@want) . ')');
my @got = read_until($s, @want);
is_deeply([ map { $_->{id} } @got ], \@want,
          'every event committed through node A arrives on node B, once each, in order');
is(scalar(grep { $_->{event} eq 'run.status' } @got), 9, '... nine run.status among them');
is_deeply([ map { $_->{data}{status} }
            grep { $_->{event} eq 'run.status' && $_->{data}{run_id} eq $got[0]{data}{run_id} } @got ],
          [qw(queued running failed)], "... a run's changes in order");
my $last_seen = $got[-1]{id};
sse_close($s);

# --- Last-Event-ID: resumed on the other node ----------------------------------------------
# Events committed while the client is away, through A; it comes back to A
# (the load balancer sent it elsewhere) with the last id B gave it.
runs_on_a(2);
my @missed = db_ids($last_seen);
ok(@missed >= 6, 'two runs\' events committed while the client was away');
my $r = sse_open($path, token => $tok, last_event_id => $last_seen);
is($r->{status}, 200, 'the stream reopens on node A with Last-Event-ID');
# And more while it is open, through B this time.
my @more_runs;
for my $i (1 .. 2) {
    my ($s2, $run) = api(POST => $runs, token => $tok, base => $b->url,
                         json => { instructions => "On B $i" });
    is($s2, 201, "run $i started through node B");
    push @more_runs, $run->{id};
}
my $in = join ',', map { "'$_'" } @more_runs;
ok(wait_for(sub {
    psql_value("SELECT count(*) FROM runs WHERE id IN ($in) AND status = 'failed'") == 2
}, timeout => 60), '... and ended');
my @rest = db_ids($last_seen);
ok(@rest >= @missed + 6, '... those missed and two more runs\'');
my @again = read_until($r, @rest);
is_deeply([ map { $_->{id} } @again ], \@rest,
          'the resumed stream has every missed and every new event, none twice, in order');
ok(!grep({ $_->{id} <= $last_seen } @again), '... nothing from before Last-Event-ID');
ok(!defined sse_next($r, 2), '... and nothing more');
sse_close($r);

# And back to B with the last id A gave: nothing is replayed twice.
my $t = sse_open($path, token => $tok, port => $b->port, last_event_id => $again[-1]{id});
is($t->{status}, 200, 'back to node B with the last id');
ok(!defined sse_next($t, 2), '... nothing replayed');
sse_close($t);

$b->stop;
runs_settle();

done_testing();
