# Runs' live events: the run stream replays the whole run and ends after its
# final status; a reconnect with Last-Event-ID in the middle of a run loses
# and repeats nothing; the org stream sees every status change of two
# concurrent runs, in order per run; a revoked token's run stream is
# closed; another org's run is 404.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use Time::HiRes qw(time);
use SvcTest;

my $owner = new_user('runs-sse');
my $org   = new_org($owner, prefix => 'runs-sse');
my $tok   = new_token($owner, scope => 'admin');
my ($st) = api(POST => "/api/orgs/$org/projects", token => $tok,
               json => { slug => 'app', name => 'App' });
is($st, 201, 'project');
my $runs = "/api/orgs/$org/projects/app/runs";
my $llm = new_llm(flavor => 'openai');
new_provider($org, $tok, $llm, tools => 'off');
my $reply = json()->encode({ summary => 'A file',
                             files => [ { path => 'a.txt', content => "a\n" } ] });

sub start_run {
    my ($s, $r) = api(POST => $runs, token => $tok, json => { instructions => $_[0] // 'Go' });
    is($s, 201, 'a run is started');
    return $r;
}

# Every event of a run, as the log has them.
sub db_events {
    my $id = shift;
    return map { { id => $_->[0], event => $_->[1], data => json()->decode($_->[2]) } }
        psql("SELECT id, kind, data::text FROM events WHERE run_id = '$id' ORDER BY id");
}

sub read_until_closed {
    my ($s, $limit) = @_;
    my @got;
    my $deadline = time + ($limit // 60);
    # Frames already received are read even once the server has ended.
    while (time < $deadline) {
        my $e = sse_next($s, 5);
        if ($e) {
            push @got, $e;
            next;
        }
        last if $s->{closed};
    }
    return @got;
}

sub brief { [ map { [ $_->{id}, $_->{event}, $_->{data}{status} // $_->{data}{line} ] } @_ ] }

# --- a finished run: its whole history, then the end ---------------------------------
$llm->control(replies => [ $reply ]);
my $done = start_run('Quick');
ok(wait_for(sub { (api(GET => "$runs/$done->{id}", token => $tok))[1]{status} eq 'succeeded' },
            timeout => 60), 'a run succeeds');
{
    my $s = sse_open("$runs/$done->{id}/events", token => $tok);
    is($s->{status}, 200, 'its stream opens');
    my @got = read_until_closed($s, 30);
    ok($s->{closed}, '... and ends by itself after the final status');
    is_deeply(brief(@got), brief(db_events($done->{id})), '... having sent every event, in order');
    is($got[-1]{event}, 'run.status', '... the last one a run.status');
    is($got[-1]{data}{status}, 'succeeded', '... succeeded');
    is_deeply([ map { $_->{data}{status} } grep { $_->{event} eq 'run.status' } @got ],
              [qw(queued running succeeded)], '... queued, running, succeeded');
    ok((grep { $_->{event} eq 'run.log' && $_->{data}{line} =~ /asking the model/ } @got),
       '... with the log lines');
    my ($n) = grep { $_->{event} eq 'run.log' } @got;
    is_deeply([ sort keys %{ $n->{data} } ], [qw(line offset run_id)], 'run.log data: '
              . 'run_id, offset, line');
    is($n->{data}{run_id}, $done->{id}, '... of this run');
}

# The run's parts for `make bench` (SVC0790, at debug as this suite logs):
# one line per run, every part, each within the run's time. Not how long
# any took: only that they were measured and add up.
{
    my $line;
    ok(wait_for(sub {
        my $log = do { local (@ARGV, $/) = error_log_path(); <> };
        ($line) = $log =~ /SVC0790: run \Q$done->{id}\E timings \(us\): (.*)$/m;
        defined $line }, timeout => 30), 'the run has its SVC0790 line (the parts of its time)');
    my %t = map { split /=/, $_, 2 } split ' ', $line // '';
    my @parts = qw(provider workspace clone factory sandbox prepare model commit exit bundle
                   outcome cleanup total);
    is_deeply([ sort grep { $_ ne 'status' } keys %t ], [ sort @parts ], '... with every part')
        or diag($line);
    is($t{status}, 'succeeded', '... and the outcome');
    ok(!grep({ ($t{$_} // '') !~ /\A[0-9]+\z/ } @parts), '... in whole microseconds');
    is($t{clone}, 0, '... no clone for a run without a repository');
    ok($t{model} > 0 && $t{sandbox} > 0 && $t{bundle} > 0 && $t{outcome} > 0,
       '... the parts it went through measured');
    my $steps = 0;
    $steps += $t{$_} for qw(provider workspace clone factory bundle outcome cleanup);
    ok($steps <= $t{total}, '... the steps within the whole');
    my $inside = 0;
    $inside += $t{$_} for qw(sandbox prepare model commit exit);
    ok($inside <= $t{factory}, "... the factory's parts within the factory");
}

# --- a reconnect in the middle of a run --------------------------------------------------
$llm->control(mode => 'slow', delay_ms => 3000, replies => [ $reply ]);
my $live = start_run('Across a reconnect');
{
    my $s = sse_open("$runs/$live->{id}/events", token => $tok);
    is($s->{status}, 200, 'a stream on a running run');
    my @first;
    while (my $e = sse_next($s, 20)) {
        push @first, $e;
        last if $e->{event} eq 'run.log' && $e->{data}{line} =~ /asking the model/;
    }
    ok(scalar @first >= 3, 'the first part, up to the model call: ' . scalar(@first)
       . ' events');
    sse_close($s);
    my $last = $first[-1]{id};
    # While nobody listens, the run goes on.
    ok(wait_for(sub { (api(GET => "$runs/$live->{id}", token => $tok))[1]{status}
                      =~ /^(?:succeeded|failed)$/ }, timeout => 60), 'the run ends meanwhile');
    $s = sse_open("$runs/$live->{id}/events", token => $tok, last_event_id => $last);
    is($s->{status}, 200, 'the stream again, with Last-Event-ID');
    my @rest = read_until_closed($s, 30);
    ok($s->{closed}, '... and it ends');
    is_deeply(brief(@first, @rest), brief(db_events($live->{id})),
              'nothing lost and nothing twice across the reconnect');
    my $q = sse_open("$runs/$live->{id}/events?last_event_id=$last", token => $tok);
    is_deeply(brief(read_until_closed($q, 30)), brief(@rest), '... ?last_event_id= as well');
}
$llm->reset;

# --- the org stream, two runs at once --------------------------------------------------
{
    my $s = sse_open("/api/orgs/$org/events", token => $tok);
    is($s->{status}, 200, 'the org stream');
    $llm->control(mode => 'slow', delay_ms => 1000, replies => [ $reply, $reply ]);
    my @r = race(map { my ($n, $t) = ($_, $tok); sub {
        my ($c, $r) = api(POST => $runs, token => $t, json => { instructions => "Both $n" });
        return $r->{id};
    } } 1 .. 2);
    my %ids = map { $_->[0] => 1 } @r;
    is(scalar keys %ids, 2, 'two runs started at once');
    my (%status, @ids);
    my $deadline = time + 90;
    while (time < $deadline && (grep { ($status{$_}[-1] // '') !~ /^(?:succeeded|failed)$/ }
                                keys %ids)) {
        my $e = sse_next($s, 5) or next;
        push @ids, $e->{id};
        next unless $e->{event} eq 'run.status' && $ids{ $e->{data}{run_id} };
        push @{ $status{ $e->{data}{run_id} } }, $e->{data}{status};
    }
    for my $id (sort keys %ids) {
        is_deeply($status{$id}, [qw(queued running succeeded)],
                  "run $id: every status change, in order");
    }
    is_deeply(\@ids, [ sort { $a <=> $b } @ids ], 'the org stream\'s ids only grow');
    my @want = map { $_->[0] } psql("SELECT id FROM events WHERE org_id = '"
        . org_id_of($org) . "' AND id >= $ids[0] AND id <= $ids[-1] ORDER BY id");
    is_deeply(\@ids, \@want, '... and it skipped none');
    sse_close($s);
}
$llm->reset;

# --- a revoked token's run stream ---------------------------------------------------------
{
    $llm->control(mode => 'slow', delay_ms => 90000);
    my $run = start_run('Watched by a doomed token');
    my $doomed = new_token($owner, scope => 'read', name => 'doomed-run');
    my $s = sse_open("$runs/$run->{id}/events", token => $doomed);
    is($s->{status}, 200, 'a run stream on a token about to be revoked');
    my $tid = psql_value("SELECT id FROM api_tokens WHERE name = 'doomed-run'");
    my ($d) = api(DELETE => "/api/me/tokens/$tid", token => $tok);
    is($d, 204, 'the token is revoked');
    my $t0 = time;
    1 while !$s->{closed} && time - $t0 < 70 && (sse_next($s, 5) || 1);
    ok($s->{closed}, 'the server closed the stream');
    ok(time - $t0 <= 60, sprintf('... within 60 s (%.0f s)', time - $t0));
    my ($c) = api(POST => "$runs/$run->{id}/cancel", token => $tok);
    is($c, 200, 'the run is cancelled');
    $llm->stop;
}

# --- not found ------------------------------------------------------------------------------
{
    my $other = new_user('runs-sse-other');
    my $oorg = new_org($other, prefix => 'runs-sse-other');
    my $otok = new_token($other, scope => 'read');
    my $s = sse_open("/api/orgs/$oorg/projects/app/runs/$done->{id}/events", token => $otok);
    is($s->{status}, 404, "another org's run, through the other org: 404");
    $s = sse_open("/api/orgs/$org/projects/app/runs/$done->{id}/events", token => $otok);
    is($s->{status}, 404, "... through its own org, by an outsider: 404");
    is($s->{problem} && $s->{problem}{code}, 'not_found', '... not_found');
    $s = sse_open("$runs/run_doesnotexist0123456789/events", token => $tok);
    is($s->{status}, 404, 'no such run: 404');
    $s = sse_open("$runs/$done->{id}/events", token => $tok, last_event_id => 'x');
    is($s->{status}, 400, 'a Last-Event-ID that is not an id: 400');
}

done_testing();
