# Budgets and hard limits (issue 23): GET and PUT .../billing/budget (admins);
# crossing an alert level writes one billing.budget event and one audit
# entry per level per month (at once when the budget is set below the
# spend, else by the supervisors' sweep); at 100 % with "hard": true new
# runs, regenerations, patches and build tasks are refused with 402
# budget_exceeded while a running run finishes; a plan with hard limits
# refuses the same way past its allowance.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $owner = new_user('budget-owner');
my $org   = new_org($owner, prefix => 'budget');
my $org_id = org_id_of($org);
my $tok   = new_token($owner, scope => 'admin');
my $member = new_user('budget-member');
svcctl('org', 'add-member', $org, $member, '--role', 'member');
my $mtok = new_token($member, scope => 'admin');
my ($st) = api(POST => "/api/orgs/$org/projects", token => $tok, json => { slug => 'app', name => 'App' });
is($st, 201, 'a project');

# A model at $10,000 per million tokens: a regeneration costs dollars.
my $llm = new_llm(flavor => 'openai', models => [ 'pricey-1' ]);
my $doc_reply = json()->encode({ summary => 'Better.', body => "# Doc\n\nRewritten.\n" });
$llm->control(reply => $doc_reply);
new_provider($org, $tok, $llm, model => 'pricey-1', tools => 'off');
my $product = new_product($org, 'app', $tok);
my $doc = new_document($org, $product->{id}, $tok, body => "# Doc\n\nFirst words.\n");

sub regenerate { return api(POST => "/api/orgs/$org/documents/$doc->{id}/regenerate", token => $tok,
                            json => { instructions => 'Again.' }) }
sub budget { my ($s, $b) = api(GET => "/api/orgs/$org/billing/budget", token => $tok); return $b }
sub put_budget { return api(PUT => "/api/orgs/$org/billing/budget", token => $tok, json => { @_ }) }
sub alerts_of {
    my $level = shift;
    return psql_value("SELECT count(*) FROM events WHERE org_id = '$org_id' AND kind = 'billing.budget' "
                      . "AND (data->>'level')::int = $level");
}
sub audits { return psql_value("SELECT count(*) FROM audit_log WHERE org_id = '$org_id' AND action = '$_[0]'") }

# --- the budget, read and set -----------------------------------------------------------------
{
    my $b = budget();
    is($b->{monthly_usd}, undef, 'no budget at first');
    is_deeply($b->{alerts}, [ 80, 90, 100 ], '... the default alert levels');
    is($b->{hard}, JSON::PP::false(), '... not hard');
    is($b->{spend_usd}, 0, '... nothing spent');
    like($b->{month}, qr/^\d{4}-\d\d$/, '... this month');

    for my $bad ([ { monthly_usd => 0 }, 'monthly_usd' ], [ { monthly_usd => 1.5 }, 'monthly_usd' ],
                 [ { monthly_usd => 10, alerts => [0] }, 'alerts' ],
                 [ { monthly_usd => 10, alerts => [ 50, 101 ] }, 'alerts' ],
                 [ { monthly_usd => 10, alerts => 'x' }, 'alerts' ],
                 [ { monthly_usd => 10, alerts => [ (10) x 17 ] }, 'alerts' ],
                 [ { monthly_usd => 10, hard => 'yes' }, 'hard' ],
                 [ { monthly_usd => 10, colour => 'red' }, 'colour' ],
                 [ { alerts => [ 50 ] }, 'monthly_usd' ]) {
        my ($body, $field) = @$bad;
        my ($s, $p) = api(PUT => "/api/orgs/$org/billing/budget", token => $tok, json => $body);
        is($s, 400, 'a bad budget (' . json()->encode($body) . '): 400');
        is($p->{errors}[0]{field}, $field, "... naming $field");
    }
    my ($s) = api(PUT => "/api/orgs/$org/billing/budget", token => $mtok, json => { monthly_usd => 5 });
    is($s, 403, 'a member cannot set it');
    ($s) = api(GET => "/api/orgs/$org/billing/budget", token => $mtok);
    is($s, 403, '... nor read it');
}

# --- spend, then a budget set below it: the alerts at once ---------------------------------------
($st) = regenerate();
is($st, 201, 'a regeneration (no budget yet)');
my $spent = budget()->{spend_usd};
ok($spent > 1, "it cost dollars (\$$spent)");
{
    my ($s, $u) = api(GET => "/api/orgs/$org/usage?group_by=kind", token => $tok);
    is($u->{totals}{model_cost_usd}, $spent, "the budget's spend is the usage's model cost");
}
# 40 % spent: no level crossed yet.
my $budget = int($spent / 0.4) + 1;
($st, my $b) = put_budget(monthly_usd => $budget, alerts => [ 50, 100 ], hard => JSON::PP::true());
is($st, 200, "a hard budget of \$$budget with alerts at 50 and 100 %");
is($b->{monthly_usd}, $budget, '... set');
is_deeply($b->{alerts}, [ 50, 100 ], '... its levels');
is($b->{hard}, JSON::PP::true(), '... hard');
ok($b->{percent} > 0 && $b->{percent} < 50, "... $b->{percent} % spent");
is_deeply($b->{alerted}, [], '... no alert yet');
is(audits('billing.budget.updated'), 1, 'the change is audited');

# A second regeneration passes 50 %: the supervisors' sweep sends the alert.
($st) = regenerate();
is($st, 201, 'a regeneration that passes 50 %');
ok(wait_for(sub { alerts_of(50) == 1 }, timeout => 30),
   "the supervisors' sweep sends one billing.budget event for 50 %");
is(audits('billing.budget.alert'), 1, '... and one audit entry');
my ($ev) = psql("SELECT data::text FROM events WHERE org_id = '$org_id' AND kind = 'billing.budget'");
my $data = json()->decode($ev->[0]);
is($data->{monthly_usd}, $budget, '... naming the budget');
is($data->{level}, 50, '... the level');
is($data->{exceeded}, JSON::PP::false(), '... not exceeded');
$b = budget();
ok($b->{percent} >= 50 && $b->{percent} < 100, "... $b->{percent} % spent");
is_deeply($b->{alerted}, [50], '... alerted at 50');
sleep 6;
is(alerts_of(50), 1, '... once, however often the sweep looks');
($st, $b) = put_budget(monthly_usd => $budget, alerts => [ 50, 100 ], hard => JSON::PP::true());
is(alerts_of(50), 1, '... or the budget is set again');

# --- a run that started before the budget is spent finishes ------------------------------------------
my $files = json()->encode({ summary => 'A file', files => [ { path => 'a.txt', content => "a\n" } ] });
$llm->control(mode => 'slow', delay_ms => 5000, replies => [ $files ]);
($st, my $run) = api(POST => "/api/orgs/$org/projects/app/runs", token => $tok,
                     json => { instructions => 'Make a file.' });
is($st, 201, 'a run starts while the budget is not spent');
ok(wait_for(sub { psql_value("SELECT status FROM runs WHERE id = '$run->{id}'") eq 'running' },
            timeout => 30), '... and is running (its model slow to answer)');

# While it runs, the budget goes below the spend: 100 % at once.
($st, $b) = put_budget(monthly_usd => 1, alerts => [ 50, 100 ], hard => JSON::PP::true());
is($st, 200, 'the budget lowered to $1 while the run runs');
is($b->{exceeded}, JSON::PP::true(), '... exceeded');
is(alerts_of(100), 1, '... the 100 % alert at once');
($ev) = psql("SELECT data::text FROM events WHERE org_id = '$org_id' AND kind = 'billing.budget' "
             . "AND (data->>'level')::int = 100");
is(json()->decode($ev->[0])->{exceeded}, JSON::PP::true(), '... saying exceeded');
is(alerts_of(50), 1, '... and 50 % is not sent again');

# --- refused: 402 --------------------------------------------------------------------------------------------
{
    my ($s, $p) = regenerate();
    is($s, 402, 'a regeneration over the hard budget: 402');
    is($p->{code}, 'budget_exceeded', '... budget_exceeded');
    is($p->{title}, 'Payment Required', '... titled as 402 is');
    like($p->{detail}, qr/monthly budget of \$1 for model spend is used up/, '... naming the budget');
    ($s, $p) = api(POST => "/api/orgs/$org/documents/$doc->{id}/patches", token => $tok,
                   json => { instructions => 'Change it.' });
    is($s, 402, 'a patch: 402');
    ($s, $p) = api(POST => "/api/orgs/$org/projects/app/runs", token => $tok,
                   json => { instructions => 'Another.' });
    is($s, 402, 'a new run: 402');
    is($p->{code}, 'budget_exceeded', '... budget_exceeded');
    is(psql_value("SELECT count(*) FROM runs WHERE org_id = '$org_id'"), 1, '... and no run was made');
}
my $done = wait_for(sub {
    my $s = psql_value("SELECT status FROM runs WHERE id = '$run->{id}'");
    return $s =~ /^(?:succeeded|failed|cancelled)$/ ? $s : undef;
}, timeout => 60);
is($done, 'succeeded', 'the run that was running finishes, and succeeds');
$llm->control(mode => 'ok');

# Not hard: allowed again, with its alerts.
($st) = put_budget(monthly_usd => 1, alerts => [ 50, 100 ], hard => JSON::PP::false());
($st) = regenerate();
is($st, 201, 'a soft budget spent does not refuse');
($st, $b) = put_budget(monthly_usd => undef);
is($st, 200, 'the budget removed');
is($b->{monthly_usd}, undef, '... none');
is_deeply($b->{alerts}, [ 80, 90, 100 ], '... the default levels back');

# --- build tasks ----------------------------------------------------------------------------------------------
{
    my $req = new_request($org, $tok, project => 'app');
    my ($s) = advance($org, $tok, $req->{id});
    is($s, 200, 'a request in planning');
    my (undef, $r) = api(GET => "/api/orgs/$org/requests/$req->{id}", token => $tok);
    new_document($org, $r->{product_id}, $tok, body => "# Part\n\nDo it.\n");
    approve_documents($org, $tok, $r->{product_id});
    ($s) = advance($org, $tok, $req->{id});
    is($s, 200, '... in review');
    ($s) = advance($org, $tok, $req->{id});
    is($s, 200, '... in build');
    put_budget(monthly_usd => 1, hard => JSON::PP::true());
    my $runs = psql_value("SELECT count(*) FROM runs WHERE org_id = '$org_id'");
    ($s, my $p) = api(POST => "/api/orgs/$org/requests/$req->{id}/build-tasks/run-all", token => $tok);
    is($s, 402, "its build tasks' runs over the hard budget: 402");
    is($p->{code}, 'budget_exceeded', '... budget_exceeded');
    is(psql_value("SELECT count(*) FROM runs WHERE org_id = '$org_id'"), $runs, '... no run started');
    put_budget(monthly_usd => undef);
}

# --- a plan with hard limits ------------------------------------------------------------------------------------
{
    my $o2 = new_org($owner, prefix => 'budget-capped');
    my ($s) = api(POST => "/api/orgs/$o2/projects", token => $tok, json => { slug => 'app', name => 'App' });
    new_provider($o2, $tok, $llm, model => 'pricey-1', tools => 'off');
    my $p2 = new_product($o2, 'app', $tok);
    my $d2 = new_document($o2, $p2->{id}, $tok);
    my $base = base_url();
    ($s, my $co) = api(POST => "/api/orgs/$o2/billing/checkout", token => $tok,
                       json => { plan => 'capped', success_url => "$base/ok", cancel_url => "$base/no" });
    is($s, 201, 'a checkout for the capped plan (200 model tokens, hard)');
    my $paid = stripe_do('complete_checkout', { session => $co->{id} });
    billing_deliver($_) for @{ $paid->{events} };
    my (undef, $bill) = api(GET => "/api/orgs/$o2/billing", token => $tok);
    is($bill->{plan}{id}, 'capped', '... the org is on it');
    is($bill->{status}, 'active', '... active');
    ($s) = api(POST => "/api/orgs/$o2/documents/$d2->{id}/regenerate", token => $tok, json => {});
    is($s, 201, 'a regeneration within the allowance');
    (undef, $bill) = api(GET => "/api/orgs/$o2/billing", token => $tok);
    ok($bill->{usage}{model_tokens}{used} >= 200, "... uses it up ($bill->{usage}{model_tokens}{used} tokens)");
    is($bill->{usage}{model_tokens}{included}, 200, '... of 200');
    my $p;
    ($s, $p) = api(POST => "/api/orgs/$o2/documents/$d2->{id}/regenerate", token => $tok, json => {});
    is($s, 402, 'the next one: 402');
    is($p->{code}, 'budget_exceeded', '... budget_exceeded');
    like($p->{detail}, qr/Capped plan's allowance of 200 model tokens/, '... naming the plan and its allowance');
    ($s) = api(POST => "/api/orgs/$o2/projects/app/runs", token => $tok, json => { instructions => 'Go.' });
    is($s, 402, '... and a run too');
}

done_testing();
