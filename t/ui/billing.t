# The web UI's billing actions (issue 26), in a real headless Chromium
# against this server, its PostgreSQL and the fake payment provider
# (t/lib/FakeStripe.pm): t/ui/billing.mjs has the owner start a checkout
# (the browser goes to the provider's checkout URL), pays there through the
# fake, comes back before the provider's signed webhook and sees the plan
# appear without a reload; opens the customer portal; sets the default card
# (a declined one refused first); then a plain member sees billing
# read-only, and the API refuses the actions to them. axe-core on each
# page, 375 px. Then the provider and the database are asked what happened.
#
# Without chromium this skips, saying so, unless it runs in CI (CI set).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;
use SvcUI;

SvcUI::chromium_or_skip();
plan skip_all => 'the fake providers are not running (use tools/test.sh)'
    unless $ENV{VCS_WEB_URL} && $ENV{BILLING_API_URL};

# --- the data ----------------------------------------------------------------------------------
my $email  = new_user('uibill', name => 'Bill Owner', allow_email_link => 1);
my $member = new_user('uibill-m', name => 'Mo Member');
my $org    = new_org($email, prefix => 'uibill', name => 'Billed Works');
my $org_id = org_id_of($org);
svcctl('org', 'add-member', $org, $member, '--role', 'member');
my $session = new_session($member);
SvcTest::vcs_reset();
SvcTest::new_vcs_user('bill', email => $email, name => 'Bill Owner');
my $mark = scalar @{ stripe_state()->{requests} };

# --- the browser -------------------------------------------------------------------------------
my $r = SvcUI::run_walk('billing.mjs', min_checks => 30,
                        env => { SVC_UI_ORG => $org, SVC_UI_MEMBER_SESSION => $session });
SvcTest::vcs_state();       # records what the fake provider issued: never in a log

# --- what happened, asked from outside ----------------------------------------------------------
my $state = stripe_state();
my @calls = @{ $state->{requests} }[ $mark .. $#{ $state->{requests} } ];
my $ui = SvcTest::vhost_url('ui');
my ($co) = grep { $_->{path} eq '/v1/checkout/sessions' } @calls;
ok($co, 'the provider made a checkout session');
is($co->{params}{success_url}, "$ui/orgs/$org/billing?checkout=done",
   '... whose success URL is the billing page');
is($co->{params}{cancel_url}, "$ui/orgs/$org/billing?checkout=cancelled", '... and cancel URL');
is($co->{params}{'line_items[0][price]'}, 'price_team', '... for the Team plan');
ok(length($co->{idempotency_key} // ''), '... under an Idempotency-Key');
is(scalar(grep { $_->{path} eq '/v1/checkout/sessions' } @calls), 1,
   'one checkout session only (the member\'s was refused)');
my ($portal) = grep { $_->{path} eq '/v1/billing_portal/sessions' } @calls;
is($portal && $portal->{params}{return_url}, "$ui/orgs/$org/billing",
   'a portal session returning to the billing page');
is(psql_value("SELECT plan_id || ' ' || status FROM billing_accounts WHERE org_id = '$org_id'"),
   'team active', 'the org is on the Team plan, active (the webhook)');
is(psql_value("SELECT string_agg(action, ',' ORDER BY id) FROM audit_log WHERE org_id = '$org_id' "
              . "AND action IN ('billing.checkout.created', 'billing.portal.opened', "
              . "'billing.payment_method.set')"),
   'billing.checkout.created,billing.portal.opened,billing.payment_method.set',
   'audited: the checkout, the portal, the card (and nothing of the member)');
my $customer = psql_value("SELECT customer_id FROM billing_accounts WHERE org_id = '$org_id'");
my $pm = $state->{customers}{$customer}{invoice_settings}{default_payment_method} // '';
like($pm, qr/^pm_/, 'the provider\'s customer has the default card set in the browser');

done_testing();
