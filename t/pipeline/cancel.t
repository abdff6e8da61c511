# Pausing, resuming and cancelling a build while its runs are going:
# pause starts nothing new and lets running runs finish; cancel stops the
# request's queued and running runs (their tasks follow them to
# cancelled); a run cancelled on its own (through the runs API) leaves its
# task cancelled, which run-all starts again.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $owner = new_user('cx-owner');
my $org   = new_org($owner, prefix => 'cx');
my $tok   = new_token($owner, scope => 'admin');
my $proj = new_project($org, $tok, 'Cancel');
my $llm = new_llm(flavor => 'openai');
new_provider($org, $tok, $llm, tools => 'off');
my $files = json()->encode({ summary => 'Files', files => [ { path => 'f.txt', content => "f\n" } ] });

# A request in build with `n` tasks.
sub in_build {
    my $n = shift;
    $llm->control(mode => 'ok', reply => json()->encode({ body => "# Plan\n" }));
    my $r = new_request($org, $tok, project => $proj);
    my (undef, $x) = advance($org, $tok, $r->{id});
    new_document($org, $x->{product_id}, $tok, kind => 'section', title => "Part $_") for 1 .. $n;
    approve_documents($org, $tok, $x->{product_id});
    my ($s) = advance($org, $tok, $r->{id}, 'advance-to-build');
    is($s, 200, "a request in build with $n tasks");
    return $r->{id};
}

sub tasks { [ map { $_->{status} } @{ lifecycle($org, $tok, $_[0])->{build_tasks} } ] }

# --- pause: running runs finish, nothing new starts ---------------------------------------------
my $id = in_build(2);
$llm->control(mode => 'slow', delay_ms => 2500, reply => $files);
my ($rs, $ra) = advance($org, $tok, $id, 'build-tasks/run-all');
is($rs, 200, 'run-all');
ok(wait_request($org, $tok, $id, sub { !grep { $_->{status} ne 'running' }
                                            @{ $_[0]{build_tasks} } }), 'both tasks are running');
my ($ps, $pr) = advance($org, $tok, $id, 'build/pause');
is($ps, 200, 'pause while they run');
is($pr->{status}, 'paused', '... paused');
my ($xs, $xp) = advance($org, $tok, $id, 'build-tasks/run-all');
is($xs, 409, 'run-all while paused: 409');
my $l = wait_request($org, $tok, $id, sub { $_[0]{request}{stage} eq 'integration' });
ok($l, 'the running runs finish, and the build is complete: integration (the pause ends)');
is($l->{request}{status}, 'active', '... active');

# --- cancel: queued and running runs stop ------------------------------------------------------------
$id = in_build(3);
$llm->control(mode => 'slow', delay_ms => 60000, reply => $files);
($rs, $ra) = advance($org, $tok, $id, 'build-tasks/run-all');
is(scalar @{ $ra->{started} }, 3, 'three runs started (two run at a time: one waits)');
ok(wait_request($org, $tok, $id, sub { 2 == grep { $_->{status} eq 'running' }
                                            @{ $_[0]{build_tasks} } }), 'two are running');
my ($cs, $cr) = advance($org, $tok, $id, 'cancel');
is($cs, 200, 'cancel');
is_deeply([ @$cr{qw(stage status)} ], [ 'build', 'cancelled' ], '... the request is cancelled');
$l = wait_request($org, $tok, $id, sub { !grep { $_->{status} ne 'cancelled' }
                                              @{ $_[0]{build_tasks} } });
ok($l, 'every task follows its run to cancelled') or diag(explain(tasks($id)));
for my $s (@{ $ra->{started} }) {
    my (undef, $run) = api(GET => "/api/orgs/$org/projects/$proj/runs/$s->{run_id}", token => $tok);
    is($run->{status}, 'cancelled', "run $s->{run_id} is cancelled");
}
my $stopped = psql_value("SELECT jsonb_array_length(data->'runs') FROM audit_log "
                         . "WHERE target_id = '$id' AND action = 'request.cancelled'");
is($stopped, 3, 'the audit entry names the three runs it stopped');

# --- a run cancelled on its own ------------------------------------------------------------------
$id = in_build(1);
$llm->control(mode => 'slow', delay_ms => 60000, reply => $files);
($rs, $ra) = advance($org, $tok, $id, 'build-tasks/run-all');
my $run = $ra->{started}[0]{run_id};
ok(wait_request($org, $tok, $id, sub { $_[0]{build_tasks}[0]{status} eq 'running' }), 'running');
($cs) = api(POST => "/api/orgs/$org/projects/$proj/runs/$run/cancel", token => $tok);
is($cs, 200, 'its run is cancelled through the runs API');
ok(wait_request($org, $tok, $id, sub { $_[0]{build_tasks}[0]{status} eq 'cancelled' }),
   '... the task follows');
$llm->control(mode => 'ok', reply => $files);
($rs, $ra) = advance($org, $tok, $id, 'build-tasks/run-all');
is(scalar @{ $ra->{started} }, 1, 'run-all starts it again');
ok(wait_request($org, $tok, $id, sub { $_[0]{request}{stage} eq 'integration' }),
   '... it succeeds: integration');

done_testing();
