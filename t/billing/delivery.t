# The payment provider delivering its own events (issue 23): the fake
# (t/lib/FakeStripe.pm) POSTs each event to /webhooks/billing as Stripe's
# webhook delivery does, signed by the provider (Stripe-Signature: t=, v1=
# HMAC-SHA256 of "t.body" under the endpoint's secret, a v1 per secret while
# a rolled one lasts, and a v0 the service must not take for a signature),
# over a body the service did not write (the provider's own formatting). A
# paid checkout's events make the org active on the plan; a redelivery
# (Stripe retries what was not answered 2xx) has no second effect; a secret
# rolled at the provider before the service has it is 401 until the roll's
# second v1 arrives; an invoice that fails makes the org past_due.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $owner  = new_user('dl-owner');
my $org    = new_org($owner, prefix => 'dl');
my $org_id = org_id_of($org);
my $tok    = new_token($owner, scope => 'admin');
my $base   = base_url();

# What the service answered: a problem's code, else the delivery's status.
sub status_of { my $b = eval { json()->decode($_[0]->{body}) }; return $b ? $b->{code} // $b->{status} : undef }
sub audits { return psql_value("SELECT count(*) FROM audit_log WHERE org_id = '$org_id' AND action = '$_[0]'") }
sub recorded { return psql_value("SELECT count(*) FROM billing_webhook_events WHERE event_id = '$_[0]'") }
sub billing {
    my ($s, $b) = api(GET => "/api/orgs/$org/billing", token => $tok);
    return $b;
}

# --- a checkout paid at the provider, its events delivered by the provider -------------------
my ($st, $co) = api(POST => "/api/orgs/$org/billing/checkout", token => $tok,
                    json => { plan => 'team', success_url => "$base/ok", cancel_url => "$base/no" });
is($st, 201, 'a checkout for the team plan');
is(billing()->{status}, 'none', '... the org is not subscribed yet');
my $paid = stripe_do('complete_checkout', { session => $co->{id} });
my $d = stripe_deliver(events => $paid->{events});
is_deeply([ map { $_->{type} } @$d ],
          [ 'checkout.session.completed', 'customer.subscription.created', 'invoice.paid' ],
          'the provider delivers the three events of a paid checkout');
is_deeply([ map { $_->{status} } @$d ], [ 200, 200, 200 ], '... each answered 200')
    or diag(explain($d));
is_deeply([ map { status_of($_) } @$d ], [ ('accepted') x 3 ], '... each accepted');
like($d->[0]{signature}, qr/^t=\d+,v1=[0-9a-f]{64},v0=[0-9a-f]{64}\z/,
     "... signed in Stripe's scheme (t, v1, and a v0 the service ignores)");
my $b = billing();
is($b->{plan}{id}, 'team', 'the org is on the team plan');
is($b->{status}, 'active', '... active');
like($b->{current_period_end}, qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/, '... with its period');
is(audits('billing.checkout.completed'), 1, '... the checkout audited once');

# --- Stripe's retry of a delivered event: no second effect ------------------------------------
{
    my $again = stripe_deliver(ids => [ $d->[0]{id} ]);
    is($again->[0]{status}, 200, 'the same event delivered again: 200');
    is(status_of($again->[0]), 'duplicate', '... a duplicate');
    is(audits('billing.checkout.completed'), 1, '... no second audit entry');
    is(recorded($d->[0]{id}), 1, '... recorded once');
}

# --- the plan changed at the provider ------------------------------------------------------------
{
    my $ev = stripe_do('subscription', { id => $paid->{subscription}, price => 'price_business' });
    my $r = stripe_deliver(events => $ev->{events});
    is($r->[0]{type}, 'customer.subscription.updated', 'customer.subscription.updated delivered');
    is($r->[0]{status}, 200, '... 200');
    is(billing()->{plan}{id}, 'business', '... the org is on the business plan');
}

# --- a secret rolled at the provider: 401 until the service's secret is among the v1 -------------
{
    my $new = 'whsec_' . join '', map { ('a' .. 'z', 0 .. 9)[int rand 36] } 1 .. 32;
    my $ev = stripe_do('invoice', { subscription => $paid->{subscription}, paid => 0 })->{events};
    my $r = stripe_deliver(events => $ev, secrets => [$new]);
    is($r->[0]{type}, 'invoice.payment_failed', 'invoice.payment_failed, signed with a secret the service lacks');
    is($r->[0]{status}, 401, '... 401');
    is(status_of($r->[0]), 'invalid_signature', '... invalid_signature');
    is(recorded($r->[0]{id}), 0, '... not recorded');
    is(billing()->{status}, 'active', '... and the org still active');

    # Rolling with an expiry: Stripe signs with the new secret and the old one.
    $r = stripe_deliver(ids => [ $r->[0]{id} ], secrets => [ $new, $ENV{BILLING_WEBHOOK_SECRET} ]);
    like($r->[0]{signature}, qr/^t=\d+,v1=\w+,v1=\w+,v0=\w+\z/, 'redelivered with both secrets');
    is($r->[0]{status}, 200, '... 200');
    is(status_of($r->[0]), 'accepted', '... accepted');
    is(billing()->{status}, 'past_due', '... the org is past_due');
    is(audits('billing.invoice.payment_failed'), 1, '... audited');
}

# --- a delivery signed more than 300 s ago: refused as a replay ---------------------------------
{
    my $ev = stripe_do('invoice', { subscription => $paid->{subscription}, paid => 1 })->{events};
    my $r = stripe_deliver(events => $ev, t => time - 301);
    is($r->[0]{status}, 401, 'invoice.paid signed 301 s ago: 401');
    is(status_of($r->[0]), 'signature_expired', '... signature_expired');
    is(billing()->{status}, 'past_due', '... still past_due');
    $r = stripe_deliver(ids => [ $r->[0]{id} ]);
    is($r->[0]{status}, 200, "the provider's retry, signed now: 200");
    is(billing()->{status}, 'active', '... active again');
}

done_testing();
