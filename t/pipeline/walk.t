# A request walked from intake to done, twice (docs/api/pipeline.md):
#
#   1. with a fake model provider: the table of contents drafted by the
#      model, the build tasks carried out by real runs (the supervisor, the
#      sandbox, the factory) whose model is the same fake; the request
#      moves to integration by itself when the last task's run succeeds;
#   2. with no provider at all: a skeleton table of contents, runs that
#      fail with no_provider, then succeed after a provider is added and
#      run-all is called again.
#
# Along the way: Idempotency-Key, the lifecycle view, the cost estimate
# and the actual usage next to it, the events on the org's stream, the
# audit entries.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $files = sub {
    my $name = shift;
    return json()->encode({ summary => "Build $name",
                            files => [ { path => "$name.txt", content => "$name\n" } ] });
};

sub section {
    my ($org, $tok, $product, $title, $body) = @_;
    return new_document($org, $product, $tok, kind => 'section', title => $title,
                        body => $body // "# $title\n\nWhat $title does.\n");
}

sub stages_of { [ map { "$_->{stage}/$_->{status}/$_->{via}" } @{ $_[0]{stages} } ] }

# ===========================================================================
# 1. With a fake provider
# ===========================================================================
my $owner = new_user('walk-owner', name => 'Wanda Walker');
my $dev   = new_user('walk-dev');
my $org   = new_org($owner, prefix => 'walk');
svcctl('org', 'add-member', $org, $dev, '--role', 'member');
my $tok  = new_token($owner, scope => 'admin');
my $dtok = new_token($dev, scope => 'write');
my $proj = new_project($org, $tok, 'App');
my ($ts) = api(POST => "/api/orgs/$org/projects/$proj/team", token => $tok,
               json => { user_id => user_id_of($dev), role => 'developer' });
is($ts, 201, 'a developer on the team');
my $llm = new_llm(flavor => 'openai');
# Two build runs at once share the fake: each asks once (single-answer
# mode), so the order of the queued answers does not matter.
my $prov = new_provider($org, $tok, $llm, model => 'gpt-4o-mini', tools => 'off');
my $stream = sse_open("/api/orgs/$org/events?last_event_id=0", token => $tok);
is($stream->{status}, 200, 'the org\'s event stream');

# --- intake ---------------------------------------------------------------------------------
my $key = uniq('idem');
my $body = { project => $proj, kind => 'build', title => 'Greeter',
             body => "A program that greets.\n" };
my ($cs, $req, $cres) = api(POST => "/api/orgs/$org/requests", token => $dtok, json => $body,
                            headers => { 'Idempotency-Key' => $key });
is($cs, 201, 'a developer makes a request');
like($req->{id}, qr/^rqs_[A-Za-z0-9]{22}$/, '... with an rqs_ id');
unlike($req->{id}, qr/^req_/, '... which is not an X-Request-Id');
like($cres->header('X-Request-Id'), qr/^req_/, '... (those are req_)');
is_deeply([ @$req{qw(project kind title stage status product_id)} ],
          [ $proj, 'build', 'Greeter', 'intake', 'active', undef ], '... in intake, active');
my ($rs, $again, $rres) = api(POST => "/api/orgs/$org/requests", token => $dtok, json => $body,
                              headers => { 'Idempotency-Key' => $key });
is($rs, 200, 'the same request with the same key: 200');
is($again->{id}, $req->{id}, '... the same request');
is($rres->header('Idempotent-Replayed'), 'true', '... replayed');
($rs, my $p) = api(POST => "/api/orgs/$org/requests", token => $dtok,
                   json => { %$body, title => 'Other' }, headers => { 'Idempotency-Key' => $key });
is($rs, 409, 'another body with the same key: 409');
is($p->{code}, 'idempotency_conflict', '... idempotency_conflict');
is(psql_value("SELECT count(*) FROM requests WHERE org_id = '" . org_id_of($org) . "'"), 1,
   '... one request made');
my $R = "/api/orgs/$org/requests/$req->{id}";

# --- intake -> planning: the model drafts the table of contents -------------------------------
my $toc = "# Greeter\n\n1. Greeting: says hello.\n2. Farewell: says goodbye.\n";
$llm->control(replies => [ json()->encode({ body => $toc }) ]);
my ($as, $r) = advance($org, $dtok, $req->{id});
is($as, 200, 'advance: intake -> planning');
is($r->{stage}, 'planning', '... planning');
like($r->{product_id} // '', qr/^prd_/, '... with its product');
my $product = $r->{product_id};
my (undef, $docs) = api(GET => "/api/orgs/$org/products/$product/documents", token => $tok);
is(scalar @{ $docs->{data} }, 1, '... which has one document');
my $tocdoc = $docs->{data}[0];
is($tocdoc->{kind}, 'toc', '... the table of contents');
is($tocdoc->{current_version}{author}{kind}, 'ai', '... written by the model');
is($tocdoc->{current_version}{author}{model}, 'gpt-4o-mini', '... the default provider\'s');
my (undef, undef, $tres) = api(GET => "/api/orgs/$org/doc-versions/$tocdoc->{current_version}{id}"
                                      . '/content', token => $tok);
is($tres->content, $toc, '... what the model wrote');
my ($plan_req) = grep { $_->{path} eq '/v1/chat/completions' } @{ $llm->requests };
like(json()->encode($plan_req->{body}), qr/Greeter/, 'the model was given the request');
is(psql_value("SELECT count(*) FROM model_usage WHERE purpose = 'request.plan' "
              . "AND subject_id = '$req->{id}' AND status = 'ok'"), 1, '... and the call recorded');

# --- planning -> review: sections ------------------------------------------------------------
my ($ps, $pp) = advance($org, $dtok, $req->{id});
is($ps, 409, 'advance without a section: 409');
is($pp->{code}, 'invalid_status', '... invalid_status');
is_deeply([ map { "$_->{field}:$_->{code}" } @{ $pp->{errors} } ],
          [ 'product.sections:missing' ], '... naming what is missing');
my $greet = section($org, $tok, $product, 'Greeting');
my $bye   = section($org, $tok, $product, 'Farewell');
($ps, $r) = advance($org, $dtok, $req->{id});
is($ps, 200, 'advance: planning -> review');
is($r->{stage}, 'review', '... review');

# --- review -> build: approvals, then the tasks ---------------------------------------------------
($ps, $pp) = advance($org, $dtok, $req->{id});
is($ps, 409, 'advance with drafts: 409');
is_deeply([ sort map { "$_->{field}:$_->{code}" } @{ $pp->{errors} } ],
          [ sort map { "documents/$_:not_approved" } $tocdoc->{id}, $greet->{id}, $bye->{id} ],
          '... naming every document not approved');
is(approve_documents($org, $tok, $product), 3, 'the three documents are approved');
my ($es, $est) = api(GET => "$R/build-cost-estimate", token => $tok);
is($es, 200, 'the estimate before build');
is(scalar @{ $est->{tasks} }, 2, '... a line per section');
ok(!defined $est->{tasks}[0]{task_id}, '... no tasks yet');
($ps, $r) = advance($org, $dtok, $req->{id});
is($ps, 200, 'advance: review -> build');
is($r->{stage}, 'build', '... build');
my $l = lifecycle($org, $tok, $req->{id});
my @tasks = @{ $l->{build_tasks} };
is(scalar @tasks, 2, '... with a task per section');
is_deeply([ map { $_->{title} } @tasks ], [ 'Greeting', 'Farewell' ], '... in order');
is_deeply([ map { $_->{status} } @tasks ], [ 'pending', 'pending' ], '... pending');
is($tasks[0]{document_id}, $greet->{id}, '... from its section');
is($tasks[0]{version_id}, $greet->{current_version}{id}, '... its approved version');

# --- the estimate ----------------------------------------------------------------------------------
($es, $est) = api(GET => "$R/build-cost-estimate", token => $dtok);
is($es, 200, 'build-cost-estimate');
is($est->{currency}, 'USD', '... in USD');
is($est->{provider}, $prov->{id}, '... for the default provider');
is($est->{model}, 'gpt-4o-mini', '... and its model');
is_deeply([ map { $_->{task_id} } @{ $est->{tasks} } ], [ map { $_->{id} } @tasks ],
          '... a line per task');
my $sum = 0;
for my $t (@{ $est->{tasks} }) {
    ok($t->{input_tokens} > 300 && $t->{output_tokens} >= 1000, "... $t->{title}: tokens");
    my $want = ($t->{input_tokens} * 0.15 + $t->{output_tokens} * 0.60) / 1e6;
    ok(abs($t->{cost} - $want) < 1e-6, "... $t->{title}: priced at gpt-4o-mini's 0.15/0.60");
    $sum += $t->{cost};
}
ok(abs($est->{total} - $sum) < 1e-5, '... the total adds up');
like($est->{basis}, qr/4 bytes/, '... the basis says how');

# --- build -> integration: the runs, then by itself ---------------------------------------------
($ps, $pp) = advance($org, $dtok, $req->{id});
is($ps, 409, 'advance before the tasks ran: 409');
is_deeply([ map { "$_->{field}:$_->{code}" } @{ $pp->{errors} } ],
          [ map { "build_tasks/$_->{id}:pending" } @tasks ], '... naming each task');
$llm->control(replies => [ $files->('greeting'), $files->('farewell') ]);
my ($ra, $run_all) = advance($org, $dtok, $req->{id}, 'build-tasks/run-all');
is($ra, 200, 'run-all');
is(scalar @{ $run_all->{started} }, 2, '... started two runs');
my %run_of = map { $_->{task_id} => $_->{run_id} } @{ $run_all->{started} };
like($run_of{ $tasks[0]{id} }, qr/^run_/, '... one per task');
my (undef, $run) = api(GET => "/api/orgs/$org/projects/$proj/runs/$run_of{ $tasks[0]{id} }",
                       token => $tok);
is($run->{request_id}, $req->{id}, 'the run names the request');
is($run->{task_id}, $tasks[0]{id}, '... and the task');
like($run->{instructions}, qr/^# Greeting\n/, '... and carries the section');
like($run->{instructions}, qr/Farewell: says goodbye/, '... with the table of contents');
$l = wait_request($org, $tok, $req->{id}, sub { $_[0]{request}{stage} eq 'integration' });
ok($l, 'when the last run succeeded, the request moved to integration by itself')
    or diag(explain(lifecycle($org, $tok, $req->{id})));
is_deeply([ map { $_->{status} } @{ $l->{build_tasks} } ], [ 'succeeded', 'succeeded' ],
          '... both tasks succeeded');
is($l->{build_tasks}[0]{run_id}, $run_of{ $tasks[0]{id} }, '... each with its run');
is($l->{build_tasks}[0]{runs}[0]{status}, 'succeeded', '... listed with its status');
my $auto = $l->{stages}[-1];
is("$auto->{stage}/$auto->{via}", 'integration/auto', '... the stage entered automatically');
ok(!defined $auto->{entered_by}, '... by nobody');

# --- usage next to the estimate ---------------------------------------------------------------
for my $t (@{ $l->{build_tasks} }) {
    ok($t->{usage}{calls} >= 1 && $t->{usage}{input_tokens} > 0 && $t->{usage}{output_tokens} > 0,
       "$t->{title}: its runs' usage");
    ok(defined $t->{usage}{cost} && $t->{usage}{cost} > 0, '... priced');
    ok($t->{estimate}{input_tokens} > 0, '... next to its estimate');
}
my $actual = psql_value("SELECT sum(input_tokens) FROM model_usage WHERE subject_type = 'run' "
                        . "AND subject_id IN ('" . join("', '", values %run_of) . "')");
is($l->{usage}{actual}{input_tokens}, $actual, 'the actual input tokens are the usage table\'s');
ok($l->{usage}{planning}{calls} == 1, '... and planning\'s call is shown apart');
ok(defined $l->{usage}{estimate}, '... next to the estimated total');

# --- integration -> done -------------------------------------------------------------------------
($ps, $pp) = advance($org, $dtok, $req->{id});
is($ps, 409, 'advance in integration: 409');
is_deeply([ map { "$_->{field}:$_->{code}" } @{ $pp->{errors} } ],
          [ 'integration:approval_required' ], '... approval is required');
($ps, $pp) = advance($org, $dtok, $req->{id}, 'integration/approve');
is($ps, 403, 'a developer cannot approve the integration');
($ps, $r) = advance($org, $tok, $req->{id}, 'integration/approve');
is($ps, 200, 'the owner approves it');
is_deeply([ @$r{qw(stage status integration_approved_by)} ],
          [ 'done', 'done', user_id_of($owner) ], '... done, and who approved');
($ps, $pp) = advance($org, $dtok, $req->{id});
is($ps, 409, 'advance when done: 409');
is($pp->{errors}[0]{code}, 'done', '... it is done');

$l = lifecycle($org, $dtok, $req->{id});
is_deeply(stages_of($l), [ 'intake/active/create', 'planning/active/advance',
                           'review/active/advance', 'build/active/advance',
                           'integration/active/auto', 'done/done/approve' ],
          'the lifecycle lists every stage entered');
is($l->{stages}[0]{entered_by}{id}, user_id_of($dev), '... by whom');
is($l->{stages}[-1]{entered_by}{name}, 'Wanda Walker', '... with their name');
like($l->{stages}[1]{entered_at}, qr/Z$/, '... and when');
is($l->{product}{id}, $product, 'the product');
is_deeply([ map { $_->{approved} ? 1 : 0 } @{ $l->{documents} } ], [ 1, 1, 1 ],
          'the documents, all approved');
is($l->{documents}[0]{kind}, 'toc', '... the table of contents first');

# --- the events, in order -------------------------------------------------------------------------
my @ev = sse_drain($stream, 2);
sse_close($stream);
my @stage_ev = map { "$_->{data}{stage}/$_->{data}{status}" }
               grep { $_->{event} eq 'request.stage' && $_->{data}{request_id} eq $req->{id} } @ev;
is_deeply(\@stage_ev, [ 'intake/active', 'planning/active', 'review/active', 'build/active',
                        'integration/active', 'done/done' ], 'request.stage events, in order');
my %task_ev;
for my $e (grep { $_->{event} eq 'request.task' } @ev) {
    push @{ $task_ev{ $e->{data}{task_id} } }, $e->{data}{status};
}
is_deeply($task_ev{ $tasks[0]{id} }, [ 'pending', 'queued', 'running', 'succeeded' ],
          'request.task events follow the task');
ok((grep { $_->{event} eq 'request.decision' && $_->{data}{decision} eq 'integration_approved' }
    @ev), 'request.decision for the approval');

# --- the audit log ----------------------------------------------------------------------------------
my %audit = map { $_->[0] => $_->[1] } psql(
    "SELECT action, count(*) FROM audit_log WHERE org_id = '" . org_id_of($org) . "' "
    . "GROUP BY action");
is($audit{'request.created'}, 1, 'audit: request.created');
is($audit{'request.stage_changed'}, 4, 'audit: four stage changes (planning, review, build, '
   . 'integration)');
is($audit{'request.tasks_started'}, 1, 'audit: run-all');
ok($audit{'request.task_changed'} >= 4, 'audit: the tasks following their runs');
is($audit{'request.integration_approved'}, 1, 'audit: the approval');

# ===========================================================================
# 2. Without a provider
# ===========================================================================
my $o2   = new_user('walk2-owner');
my $org2 = new_org($o2, prefix => 'walk2');
my $tok2 = new_token($o2, scope => 'admin');
my $proj2 = new_project($org2, $tok2, 'App');
my $req2 = new_request($org2, $tok2, project => $proj2, title => 'Skeleton',
                       body => "Works without AI.\n");
($ps, $r) = advance($org2, $tok2, $req2->{id});
is($ps, 200, 'no provider: intake -> planning all the same');
my (undef, $d2) = api(GET => "/api/orgs/$org2/products/$r->{product_id}/documents",
                      token => $tok2);
my $skel = $d2->{data}[0];
is($skel->{current_version}{author}{kind}, 'user', '... a skeleton, not the model\'s');
my (undef, undef, $sres) = api(GET => "/api/orgs/$org2/doc-versions/$skel->{current_version}{id}"
                                      . '/content', token => $tok2);
like($sres->content, qr/^# Skeleton\n.*Works without AI\./s, '... from the title and body');
my ($es2, $est2) = api(GET => "/api/orgs/$org2/requests/$req2->{id}/build-cost-estimate",
                       token => $tok2);
ok(!defined $est2->{provider} && !defined $est2->{model} && !defined $est2->{total},
   'the estimate without a provider: no model, no price');
like($est2->{basis}, qr/no usable default model provider/, '... and says why');
section($org2, $tok2, $r->{product_id}, 'Only part');
($ps) = advance($org2, $tok2, $req2->{id});
is($ps, 200, '... planning -> review');
approve_documents($org2, $tok2, $r->{product_id});
($ps) = advance($org2, $tok2, $req2->{id});
is($ps, 200, '... review -> build');
($ps, my $ra2) = advance($org2, $tok2, $req2->{id}, 'build-tasks/run-all');
is($ps, 200, '... run-all');
my $first_run = $ra2->{started}[0]{run_id};
$l = wait_request($org2, $tok2, $req2->{id}, sub { $_[0]{build_tasks}[0]{status} eq 'failed' });
ok($l, 'the run fails') or diag(explain(lifecycle($org2, $tok2, $req2->{id})));
is($l->{build_tasks}[0]{error_code}, 'no_provider', '... with no_provider');
is($l->{request}{stage}, 'build', '... the request stays in build');
($ps, $pp) = advance($org2, $tok2, $req2->{id});
is($ps, 409, 'advance with a failed task: 409');
is($pp->{errors}[0]{code}, 'failed', '... naming it failed');
like($pp->{errors}[0]{message}, qr/no_provider/, '... and why');

# This org's provider calls tools: the build task's run is the agent loop
# (the same factory as the runs API's), which writes, runs its check, and
# finishes.
my $llm2 = new_llm(flavor => 'anthropic');
new_provider($org2, $tok2, $llm2, model => 'claude-3-5-haiku-20241022');
$llm2->control(replies => [
    { tool_calls => [ { name => 'write_file', arguments => { path => 'part.txt',
                                                            content => "part\n" } } ] },
    { tool_calls => [ { name => 'run', arguments => { command => 'grep -qx part part.txt' } } ] },
    { tool_calls => [ { name => 'finish', arguments => { summary => 'Build part' } } ] },
]);
($ps, $ra2) = advance($org2, $tok2, $req2->{id}, 'build-tasks/run-all');
is($ps, 200, 'a provider is added and run-all called again');
is(scalar @{ $ra2->{started} }, 1, '... the failed task starts again');
isnt($ra2->{started}[0]{run_id}, $first_run, '... in a new run');
$l = wait_request($org2, $tok2, $req2->{id}, sub { $_[0]{request}{stage} eq 'integration' });
ok($l, '... which succeeds, and the request moves to integration');
is(scalar @{ $l->{build_tasks}[0]{runs} }, 2, '... the task lists both runs');
is_deeply([ map { $_->{status} } @{ $l->{build_tasks}[0]{runs} } ], [ 'failed', 'succeeded' ],
          '... failed, then succeeded');
ok($l->{build_tasks}[0]{usage}{cost} > 0, '... the successful run\'s usage, priced (claude-3-5-haiku)');
{
    my $run_id = $l->{build_tasks}[0]{runs}[1]{run_id};
    my (undef, $bt) = api(GET => "/api/orgs/$org2/projects/$proj2/runs/$run_id",
                          token => $tok2);
    is($bt->{result}{mode}, 'agent', '... as an agent');
    is_deeply($bt->{result}{checks}, { command => 'grep -qx part part.txt', exit => 0 },
              '... which ran its check, green');
    is($bt->{result}{steps}, 3, '... in three steps');
    is($bt->{usage}{calls}, 3, '... three model calls, each in the usage');
}
($ps, $r) = advance($org2, $tok2, $req2->{id}, 'integration/approve');
is($ps, 200, '... approved');
is($r->{stage}, 'done', '... done');

done_testing();
