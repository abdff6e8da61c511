# Usage (issue 23): model calls and runs of two projects add up by day,
# project, model and kind, summed and priced in SQL; runs record their
# minutes when they end (a trigger on runs), model calls the project they
# were made for; deployment hours are a kind of their own. The plans are
# listed, and GET /billing shows this month against them.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $owner = new_user('usage-owner');
my $org   = new_org($owner, prefix => 'usage');
my $org_id = org_id_of($org);
my $tok   = new_token($owner, scope => 'admin');
my $viewer = new_user('usage-viewer');
svcctl('org', 'add-member', $org, $viewer, '--role', 'viewer');
my $member = new_user('usage-member');
svcctl('org', 'add-member', $org, $member, '--role', 'member');
my $member_tok = new_token($member, scope => 'read');

for my $p (qw(alpha beta)) {
    my ($st) = api(POST => "/api/orgs/$org/projects", token => $tok,
                   json => { slug => $p, name => ucfirst $p });
    is($st, 201, "project $p");
}

# --- the plans ---------------------------------------------------------------------
{
    my ($st, $plans) = api(GET => "/api/orgs/$org/billing/plans", token => $member_tok);
    is($st, 200, 'a member lists the plans');
    is_deeply([ map { $_->{id} } @{ $plans->{data} } ], [qw(team business capped)],
              '... the three SvcBillingPlan plans, in their order');
    is_deeply($plans->{data}[0],
              { id => 'team', name => 'Team', price => { amount => 2900, currency => 'usd',
                                                         interval => 'month' },
                included => { run_minutes => 1000, model_tokens => 5000000,
                              deployment_hours => 720 }, hard_limits => JSON::PP::false() },
              '... each with its price and allowances');
    is($plans->{data}[2]{hard_limits}, JSON::PP::true(), '... hard=on says so');
    is($plans->{data}[2]{included}{run_minutes}, undef, '... an allowance not given is null');
    ($st) = api(GET => "/api/orgs/$org/billing/plans", token => new_token($viewer, scope => 'read'));
    is($st, 403, 'a viewer does not');
}

# --- nothing used yet -----------------------------------------------------------------
{
    my ($st, $u) = api(GET => "/api/orgs/$org/usage", token => $member_tok);
    is($st, 200, 'usage of an org that used nothing');
    is_deeply($u->{data}, [], '... no rows');
    is($u->{totals}{model_calls}, 0, '... no calls');
    is($u->{group_by}, 'day', '... by day unless asked');
    like($u->{from}, qr/^\d{4}-\d\d-01T00:00:00Z$/, '... from the first of this month');
    like($u->{to}, qr/^\d{4}-\d\d-01T00:00:00Z$/, '... to the first of the next');
}

# --- model calls in both projects, and runs ---------------------------------------------
my $llm = new_llm(flavor => 'openai', models => [ 'gpt-4o-mini', 'pricey-1' ]);
$llm->control(reply => json()->encode({ summary => 'Better.', body => "# Doc\n\nRewritten.\n" }));
my $cheap = new_provider($org, $tok, $llm, name => 'cheap', model => 'gpt-4o-mini', tools => 'off');
my $dear = new_provider($org, $tok, $llm, name => 'dear', model => 'pricey-1', tools => 'off');

sub regenerate {
    my ($project) = @_;
    my $product = new_product($org, $project, $tok);
    my $doc = new_document($org, $product->{id}, $tok, body => "# Doc\n\nFirst words.\n");
    my ($st) = api(POST => "/api/orgs/$org/documents/$doc->{id}/regenerate", token => $tok,
                   json => { instructions => "Rewrite it for $project." });
    is($st, 201, "a regeneration in $project");
    return $doc->{id};
}

my $alpha_doc = regenerate('alpha');                   # cheap is the default
my ($st) = api(POST => "/api/orgs/$org/providers/$dear->{id}/default", token => $tok);
is($st, 200, 'the dear provider becomes the default');
regenerate('beta');
regenerate('beta');
($st) = api(POST => "/api/orgs/$org/providers/$cheap->{id}/test", token => $tok);
is($st, 200, 'a provider test: a call about no project');

# A run in each project: the model's answer, then the run ends and its
# minutes are recorded.
my $files = json()->encode({ summary => 'A file', files => [ { path => 'a.txt', content => "a\n" } ] });
$llm->control(replies => [ $files, $files ]);
my @runs;
for my $p (qw(alpha beta)) {
    my ($s, $r) = api(POST => "/api/orgs/$org/projects/$p/runs", token => $tok,
                      json => { instructions => "Make a file in $p." });
    is($s, 201, "a run in $p");
    push @runs, $r->{id};
}
for my $id (@runs) {
    ok(wait_for(sub { psql_value("SELECT finished_at IS NOT NULL FROM runs WHERE id = '$id'") eq 't' },
                timeout => 60), "run $id ended");
}

# --- the trigger: each ended run's minutes, once ---------------------------------------
for my $id (@runs) {
    my ($n, $q, $want) = @{ (psql("SELECT count(*), max(r.quantity)::text, "
        . "round(extract(epoch FROM (x.finished_at - x.started_at)) / 60, 6)::text "
        . "FROM usage_records r JOIN runs x ON x.id = r.subject_id "
        . "WHERE r.kind = 'run' AND r.subject_id = '$id' GROUP BY x.finished_at, x.started_at"))[0] };
    is($n, 1, "run $id: one usage record");
    is($q + 0, $want + 0, '... of its minutes from start to end');
}
psql("UPDATE runs SET status = status WHERE id = '$runs[0]'");
is(psql_value("SELECT count(*) FROM usage_records WHERE subject_id = '$runs[0]'"), 1,
   'a later update of the run records nothing more');

# Every call knows its project (the trigger on model_usage), but the test's.
is(psql_value("SELECT count(*) FROM model_usage WHERE org_id = '$org_id' AND purpose <> 'provider.test' "
              . "AND project_id IS NULL"), 0, 'every call about a document or a run has its project');
# (A provider test makes its call, and with tools auto a probe of them too.)
is(psql_value("SELECT count(*) FROM model_usage WHERE org_id = '$org_id' AND purpose = 'provider.test' "
              . "AND project_id IS NOT NULL"), 0, '... and the provider test has none');
ok(psql_value("SELECT count(*) FROM model_usage WHERE org_id = '$org_id' AND purpose = 'provider.test'") >= 1,
   '... though it made a call');

# Yesterday (a call of alpha) and a deployment's hours in beta, as the
# deployments area records them.
my $beta_id = psql_value("SELECT id FROM projects WHERE org_id = '$org_id' AND slug = 'beta'");
my $alpha_id = psql_value("SELECT id FROM projects WHERE org_id = '$org_id' AND slug = 'alpha'");
psql("INSERT INTO model_usage (org_id, provider_kind, model, input_tokens, output_tokens, "
     . "duration_ms, purpose, subject_type, subject_id, status, created_at) VALUES "
     . "('$org_id', 'openai', 'gpt-4o-mini', 1000000, 2000000, 5, 'document.regenerate', "
     . "'document', '$alpha_doc', 'ok', date_trunc('day', now()) - interval '12 hours')");
psql("INSERT INTO usage_records (org_id, project_id, kind, subject_id, quantity, started_at, "
     . "ended_at) VALUES ('$org_id', '$beta_id', 'deployment', 'dep_usagetest0000001', 6.5, "
     . "now() - interval '2 hours', now())");

# --- what the database says, summed by the test ----------------------------------------
my %price = ('gpt-4o-mini' => [ 0.15, 0.60 ], 'pricey-1' => [ 10000, 10000 ]);
my (%want_project, %want_model, %want_day);
my $from = psql_value("SELECT svc_ts(date_trunc('day', now()) - interval '1 day')");
my $to = psql_value("SELECT svc_ts(date_trunc('day', now()) + interval '1 day')");
for my $row (psql("SELECT coalesce(project_id, ''), model, input_tokens, output_tokens, "
                  . "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') FROM model_usage "
                  . "WHERE org_id = '$org_id'")) {
    my ($p, $m, $in, $out, $day) = @$row;
    my $cost = ($in * $price{$m}[0] + $out * $price{$m}[1]) / 1e6;
    for ([ \%want_project, $p ], [ \%want_model, $m ], [ \%want_day, $day ]) {
        my ($h, $k) = @$_;
        $h->{$k}{model_calls}++;
        $h->{$k}{input_tokens} += $in;
        $h->{$k}{output_tokens} += $out;
        $h->{$k}{model_cost_usd} += $cost;
    }
}
for my $row (psql("SELECT coalesce(project_id, ''), kind, quantity::text, "
                  . "to_char(CASE kind WHEN 'deployment' THEN started_at ELSE ended_at END "
                  . "AT TIME ZONE 'UTC', 'YYYY-MM-DD') FROM usage_records "
                  . "WHERE org_id = '$org_id'")) {
    my ($p, $kind, $q, $day) = @$row;
    my $field = $kind eq 'run' ? 'run_minutes' : 'deployment_hours';
    $want_project{$p}{$field} += $q;
    $want_model{''}{$field} += $q;
    $want_day{$day}{$field} += $q;
}

sub near { my ($a, $b, $eps) = @_; return abs(($a // 0) - ($b // 0)) <= ($eps // 1e-6) }

sub check_rows {
    my ($what, $rows, $want, $key) = @_;
    is(scalar @$rows, scalar keys %$want, "by $what: one row per $what")
        or diag(explain($rows));
    for my $r (@$rows) {
        my $k = $key->($r) // '';
        my $w = $want->{$k} or do { fail("by $what: an unexpected row $k"); next };
        is($r->{model_calls}, $w->{model_calls} // 0, "by $what: $k: calls");
        is($r->{input_tokens}, $w->{input_tokens} // 0, "... input tokens");
        is($r->{output_tokens}, $w->{output_tokens} // 0, "... output tokens");
        ok(near($r->{model_cost_usd}, $w->{model_cost_usd}, 1e-5),
           "... cost $r->{model_cost_usd} (priced by SvcModelPrice and the shipped table)")
            or diag("want $w->{model_cost_usd}");
        ok(near($r->{run_minutes}, $w->{run_minutes}, 0.006), '... run minutes');
        ok(near($r->{deployment_hours}, $w->{deployment_hours}, 1e-4), '... deployment hours');
    }
}

my %got;
for my $g (qw(project model day kind)) {
    my ($s, $u) = api(GET => "/api/orgs/$org/usage?group_by=$g&from=$from&to=$to",
                      token => $member_tok);
    is($s, 200, "usage by $g (a member may read it)");
    $got{$g} = $u;
}
check_rows('project', $got{project}{data}, \%want_project,
           sub { $_[0]{project} ? $_[0]{project}{id} : undef });
my %slug = map { ($_->{project} ? $_->{project}{id} : '') => ($_->{project} ? $_->{project}{slug} : '') }
           @{ $got{project}{data} };
is($slug{$alpha_id}, 'alpha', 'a project row names its slug');
is($slug{$beta_id}, 'beta', '... both');
ok(exists $slug{''}, '... and calls about no project have a row with project null');
check_rows('model', $got{model}{data}, \%want_model, sub { $_[0]{model} });
check_rows('day', $got{day}{data}, \%want_day, sub { $_[0]{day} });
is(scalar @{ $got{day}{data} }, 2, 'two days: yesterday and today');

my %kind = map { $_->{kind} => $_ } @{ $got{kind}{data} };
is_deeply([ sort keys %kind ], [qw(deployment model run)], 'by kind: deployment, model, run');
is($kind{model}{model_calls}, $got{project}{totals}{model_calls}, '... model: every call');
ok(near($kind{run}{run_minutes}, $got{project}{totals}{run_minutes}, 0.006), '... run: the minutes');
is($kind{run}{model_calls}, 0, '... and no calls');
ok(near($kind{deployment}{deployment_hours}, 6.5, 1e-9), '... deployment: the hours');

for my $g (qw(model day kind)) {
    is_deeply($got{$g}{totals}, $got{project}{totals}, "totals by $g are the same as by project");
}
is_deeply($got{project}{unpriced_models}, [], 'every model has a price');

# A span: yesterday alone.
{
    my $yesterday = psql_value("SELECT to_char((now() AT TIME ZONE 'UTC') - interval '1 day', 'YYYY-MM-DD')");
    my $today = psql_value("SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD')");
    my ($s, $u) = api(GET => "/api/orgs/$org/usage?from=$yesterday&to=$today", token => $tok);
    is($s, 200, 'usage of yesterday (dates)');
    is(scalar @{ $u->{data} }, 1, '... one day');
    is($u->{data}[0]{day}, $yesterday, '... yesterday');
    is($u->{data}[0]{input_tokens}, 1000000, '... its call alone');
    ok(near($u->{data}[0]{model_cost_usd}, 1.35), '... priced: 1M x $0.15 + 2M x $0.60');
}

# A model without a price is summed and named, not priced.
psql("INSERT INTO model_usage (org_id, provider_kind, model, input_tokens, output_tokens, "
     . "duration_ms, purpose, status) VALUES ('$org_id', 'openai', 'mystery-9', 10, 20, 1, "
     . "'provider.test', 'ok')");
{
    my ($s, $u) = api(GET => "/api/orgs/$org/usage?group_by=model", token => $tok);
    is_deeply($u->{unpriced_models}, ['mystery-9'], 'an unpriced model is named');
    my ($m) = grep { ($_->{model} // '') eq 'mystery-9' } @{ $u->{data} };
    is($m->{input_tokens}, 10, '... its tokens counted');
    is($m->{model_cost_usd}, 0, '... at no cost');
}

# --- bad queries: 400, saying which ------------------------------------------------------
for my $q ([ 'group_by=week', 'group_by' ], [ 'from=yesterday', 'from' ],
           [ 'from=2026-02-30', 'from' ], [ 'to=2026-13-01T00:00:00Z', 'to' ],
           [ 'from=2026-05-02&to=2026-05-01', 'to' ], [ 'from=2026-05-01&to=2026-05-01', 'to' ],
           [ 'from=2020-01-01&to=2026-01-01', 'to' ]) {
    my ($s, $p) = api(GET => "/api/orgs/$org/usage?$q->[0]", token => $tok);
    is($s, 400, "usage?$q->[0]: 400");
    is($p->{errors}[0]{field}, $q->[1], "... naming $q->[1]");
}

# --- GET /billing: no plan, this month against nothing -------------------------------------
{
    my ($s, $b) = api(GET => "/api/orgs/$org/billing", token => $member_tok);
    is($s, 200, 'a member reads the billing');
    is($b->{plan}, undef, '... no plan');
    is($b->{status}, 'none', '... status none');
    is($b->{next_invoice}, undef, '... no invoice');
    my ($s2, $month) = api(GET => "/api/orgs/$org/usage", token => $tok);
    is($b->{usage}{model_tokens}{used},
       $month->{totals}{input_tokens} + $month->{totals}{output_tokens},
       "... this month's tokens");
    is($b->{usage}{model_tokens}{included}, undef, '... against no allowance');
    ok(near($b->{usage}{run_minutes}{used}, $month->{totals}{run_minutes}, 0.006), '... run minutes');
    ok(near($b->{usage}{model_cost_usd}, $month->{totals}{model_cost_usd}, 1e-5), '... cost');
}

# Another org sees none of it.
{
    my $other = new_user('usage-other');
    my $their = new_org($other, prefix => 'usage-other');
    my ($s, $u) = api(GET => "/api/orgs/$their/usage", token => new_token($other, scope => 'read'));
    is($s, 200, "another org's usage");
    is($u->{totals}{model_calls}, 0, '... holds none of this one');
}

done_testing();
