# Every transition a request refuses, stage by stage: 409 invalid_status
# with `errors` naming what is missing (docs/api/pipeline.md), and nothing
# changed. Also the request's own fields (PATCH), unknown and foreign
# requests, and an archived project.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $owner = new_user('tr-owner');
my $org   = new_org($owner, prefix => 'tr');
my $tok   = new_token($owner, scope => 'admin');
my $proj = new_project($org, $tok, 'Transitions');
my $st;

sub codes { [ map { "$_->{field}:$_->{code}" } @{ $_[0]{errors} // [] } ] }

sub state_of {
    my $id = shift;
    return psql_value("SELECT stage || '/' || status || '/' || (SELECT count(*) FROM "
                      . "request_stages WHERE request_id = '$id') || '/' || (SELECT count(*) "
                      . "FROM build_tasks WHERE request_id = '$id') FROM requests WHERE id = '$id'");
}

# refused($id, $action, [field:code, ...], $name)
sub refused {
    my ($id, $action, $want, $name) = @_;
    my $before = state_of($id);
    my ($s, $p) = advance($org, $tok, $id, $action);
    is($s, 409, "$name: $action is 409");
    is($p && $p->{code}, 'invalid_status', '... invalid_status');
    is_deeply(codes($p), $want, '... naming ' . join(', ', @$want)) or diag(explain($p));
    ok(!grep({ !$_->{message} } @{ $p->{errors} // [] }), '... each with a message');
    is(state_of($id), $before, '... and nothing changed');
    return $p;
}

sub to_planning {
    my $r = new_request($org, $tok, project => $proj, @_);
    my ($s, $x) = advance($org, $tok, $r->{id});
    is($s, 200, 'to planning');
    return $x;
}

sub section {
    my ($product, %o) = @_;
    return new_document($org, $product, $tok, kind => 'section', title => $o{title} // 'Part',
                        body => $o{body} // "# Part\n\nDo it.\n");
}

sub doc_of {
    my ($product, $kind) = @_;
    my (undef, $l) = api(GET => "/api/orgs/$org/products/$product/documents", token => $tok);
    return (grep { $_->{kind} eq $kind } @{ $l->{data} })[0];
}

# --- intake ------------------------------------------------------------------------------------
my $r = new_request($org, $tok, project => $proj);
my $id = $r->{id};
refused($id, 'advance-to-build', [ 'product:missing' ], 'intake');
refused($id, 'build-tasks/run-all', [ 'stage:intake' ], 'intake');
refused($id, 'build/pause', [ 'stage:intake' ], 'intake');
refused($id, 'build/resume', [ 'stage:intake' ], 'intake');
refused($id, 'integration/approve', [ 'stage:intake' ], 'intake');

# --- planning ----------------------------------------------------------------------------------
($st, $r) = advance($org, $tok, $id);
is($st, 200, 'intake -> planning');
my $product = $r->{product_id};
my $toc = doc_of($product, 'toc');
refused($id, 'advance', [ 'product.sections:missing' ], 'planning without a section');
refused($id, 'advance-to-build', [ 'product.sections:missing', "documents/$toc->{id}:not_approved" ],
        'planning without a section');
refused($id, 'build-tasks/run-all', [ 'stage:planning' ], 'planning');
refused($id, 'integration/approve', [ 'stage:planning' ], 'planning');

# A product that lost its table of contents (only a superuser can do that).
my $r2 = to_planning();
psql("DELETE FROM documents WHERE product_id = '$r2->{product_id}'");
refused($r2->{id}, 'advance', [ 'product.toc:missing', 'product.sections:missing' ],
        'planning without a table of contents');

# --- review ---------------------------------------------------------------------------------------
my $sec = section($product);
($st) = advance($org, $tok, $id);
is($st, 200, 'planning -> review');
refused($id, 'advance', [ "documents/$toc->{id}:not_approved", "documents/$sec->{id}:not_approved" ],
        'review with drafts');
my ($cs) = api(POST => "/api/orgs/$org/doc-versions/$sec->{current_version}{id}/request-changes",
               token => $tok, json => { comment => 'Say more.' });
is($cs, 200, 'changes requested on the section');
($cs) = api(POST => "/api/orgs/$org/doc-versions/$toc->{current_version}{id}/approve", token => $tok);
is($cs, 200, 'the table of contents approved');
my $p = refused($id, 'advance', [ "documents/$sec->{id}:not_approved" ],
                'review with changes requested');
like($p->{errors}[0]{message}, qr/changes_requested/, '... saying so');
refused($id, 'advance-to-build', [ "documents/$sec->{id}:not_approved" ],
        'review with changes requested');
# An approved document edited since: its current version is a draft again.
my ($es, $v) = api(POST => "/api/orgs/$org/documents/$sec->{id}/edit", token => $tok,
                   json => { body => "# Part\n\nDo it well.\n",
                             base_version_id => $sec->{current_version}{id} });
is($es, 201, 'the section edited');
($cs) = api(POST => "/api/orgs/$org/doc-versions/$v->{id}/approve", token => $tok);
is($cs, 200, '... and approved');
($es, $v) = api(POST => "/api/orgs/$org/documents/$toc->{id}/edit", token => $tok,
                json => { body => "# Contents\n\n1. Part\n",
                          base_version_id => $toc->{current_version}{id} });
is($es, 201, 'the approved table of contents edited');
refused($id, 'advance', [ "documents/$toc->{id}:not_approved" ],
        'review with an approved document edited since');
($cs) = api(POST => "/api/orgs/$org/doc-versions/$v->{id}/approve", token => $tok);
is($cs, 200, '... approved again');
refused($id, 'build/pause', [ 'stage:review' ], 'review');

# A section too long for a run's instructions.
my $r4 = to_planning();
my $long = section($r4->{product_id}, title => 'Huge', body => ('x' x 70000));
advance($org, $tok, $r4->{id});
approve_documents($org, $tok, $r4->{product_id});
refused($r4->{id}, 'advance', [ "documents/$long->{id}:too_long" ], 'review with a huge section');

# advance-to-build from planning, all approved: allowed.
my $r3 = to_planning();
section($r3->{product_id});
approve_documents($org, $tok, $r3->{product_id});
($st, $r) = advance($org, $tok, $r3->{id}, 'advance-to-build');
is($st, 200, 'advance-to-build from planning, everything approved');
is($r->{stage}, 'build', '... build');

# --- build ---------------------------------------------------------------------------------------
($st) = advance($org, $tok, $id);
is($st, 200, 'review -> build');
my $l = lifecycle($org, $tok, $id);
my $task = $l->{build_tasks}[0]{id};
refused($id, 'advance', [ "build_tasks/$task:pending" ], 'build with a pending task');
refused($id, 'advance-to-build', [ 'stage:build' ], 'build');
refused($id, 'build/resume', [ 'status:active' ], 'build, not paused');
refused($id, 'integration/approve', [ 'stage:build' ], 'build');
($st, $r) = advance($org, $tok, $id, 'build/pause');
is($st, 200, 'pause');
is($r->{status}, 'paused', '... paused');
refused($id, 'build/pause', [ 'status:paused' ], 'paused');
refused($id, 'build-tasks/run-all', [ 'status:paused' ], 'paused');
($st, $r) = advance($org, $tok, $id, 'build/resume');
is($st, 200, 'resume');
is($r->{status}, 'active', '... active');

# --- integration (its row moved there directly: no run needed for refusals) ----------------------
psql("UPDATE requests SET stage = 'integration' WHERE id = '$id'");
refused($id, 'advance', [ 'integration:approval_required' ], 'integration');
refused($id, 'advance-to-build', [ 'stage:integration' ], 'integration');
refused($id, 'build-tasks/run-all', [ 'stage:integration' ], 'integration');
refused($id, 'build/pause', [ 'stage:integration' ], 'integration');
($st, $r) = advance($org, $tok, $id, 'integration/approve');
is($st, 200, 'integration approved');

# --- done ------------------------------------------------------------------------------------------
for my $a ('advance', 'advance-to-build', 'build-tasks/run-all', 'build/pause', 'build/resume',
           'cancel', 'integration/approve') {
    refused($id, $a, [ 'status:done' ], 'done');
}
my ($ps, $pp) = api(PATCH => "/api/orgs/$org/requests/$id", token => $tok,
                    json => { title => 'Later' });
is($ps, 409, 'PATCH when done: 409');

# --- cancelled -------------------------------------------------------------------------------------
my $r5 = to_planning();
($st, $r) = advance($org, $tok, $r5->{id}, 'cancel');
is($st, 200, 'cancel in planning');
is_deeply([ @$r{qw(stage status)} ], [ 'planning', 'cancelled' ], '... cancelled, in its stage');
for my $a ('advance', 'advance-to-build', 'build-tasks/run-all', 'cancel', 'integration/approve') {
    refused($r5->{id}, $a, [ 'status:cancelled' ], 'cancelled');
}

# --- PATCH ---------------------------------------------------------------------------------------
my $r6 = new_request($org, $tok, project => $proj, title => 'Before');
my $R6 = "/api/orgs/$org/requests/$r6->{id}";
($ps, $pp) = api(PATCH => $R6, token => $tok, json => { stage => 'done' });
is($ps, 400, 'PATCH of the stage: 400');
is($pp->{errors}[0]{field}, 'stage', '... naming the field');
($ps, $pp) = api(PATCH => $R6, token => $tok, json => { title => 'After', kind => 'improvement' });
is($ps, 400, 'PATCH of the kind: 400');
($ps, $pp) = api(PATCH => $R6, token => $tok, json => { project => $proj });
is($ps, 400, 'PATCH of the project: 400');
($ps, $pp) = api(PATCH => $R6, token => $tok, json => {});
is($ps, 400, 'PATCH of nothing: 400');
($ps, $pp) = api(PATCH => $R6, token => $tok, json => { title => '' });
is($ps, 400, 'an empty title: 400');
($ps, $pp) = api(PATCH => $R6, token => $tok, json => { title => 'After', body => "New.\n" });
is($ps, 200, 'PATCH of title and body');
is_deeply([ @$pp{qw(title body stage)} ], [ 'After', "New.\n", 'intake' ], '... changed');
is(psql_value("SELECT data->'before'->>'title' FROM audit_log WHERE target_id = '$r6->{id}' "
              . "AND action = 'request.updated'"), 'Before', '... audited with what it was');

# --- unknown, foreign, archived ----------------------------------------------------------------------
my ($us) = advance($org, $tok, 'rqs_' . ('z' x 22));
is($us, 404, 'an unknown request: 404');
my $other = new_user('tr-other');
my $org2 = new_org($other, prefix => 'tr-other');
my $tok2 = new_token($other, scope => 'admin');
for my $a ('advance', 'cancel', 'build-tasks/run-all') {
    my ($s) = advance($org2, $tok2, $r6->{id}, $a);
    is($s, 404, "another org's request through their org: $a is 404");
}
my ($gs) = api(GET => "/api/orgs/$org2/requests/$r6->{id}/lifecycle", token => $tok2);
is($gs, 404, '... and its lifecycle');
($us) = api(POST => "/api/orgs/$org/requests", token => $tok,
            json => { project => 'no-such-project', kind => 'build', title => 'x', body => '' });
is($us, 404, 'a request in an unknown project: 404');
($us, my $up) = api(POST => "/api/orgs/$org/requests", token => $tok,
                    json => { project => $proj, kind => 'wish', title => 'x', body => '' });
is($us, 400, 'an unknown kind: 400');
my $r7 = to_planning();
section($r7->{product_id});
approve_documents($org, $tok, $r7->{product_id});
advance($org, $tok, $r7->{id}, 'advance-to-build');
($us) = api(PATCH => "/api/orgs/$org/projects/$proj", token => $tok, json => { archived => JSON::PP::true() });
is($us, 200, 'the project archived');
($us, $up) = advance($org, $tok, $r7->{id}, 'build-tasks/run-all');
is($us, 409, 'run-all in an archived project: 409');
is($up->{code}, 'project_archived', '... project_archived');
($us, $up) = api(POST => "/api/orgs/$org/requests", token => $tok,
                 json => { project => $proj, kind => 'build', title => 'x', body => '' });
is($up->{code}, 'project_archived', 'no new requests in it either');

done_testing();
