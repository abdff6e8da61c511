# The payment provider's webhook (issue 23): POST /webhooks/billing, signed
# as Stripe signs (Stripe-Signature: t=...,v1=...; several v1 during a
# rotation of the secret; 300 s of tolerance), each event recorded once by
# its id. A checkout completed and the subscription updated make the org
# active on the plan; a failed invoice makes it past_due, a paid one active
# again; a deleted subscription canceled; an older event than one applied
# changes nothing; unknown events are recorded only. Each change is an audit
# entry and a billing.updated event on the org's stream. Founders see what
# was received.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $owner = new_user('wh-owner');
my $org   = new_org($owner, prefix => 'wh');
my $org_id = org_id_of($org);
my $tok   = new_token($owner, scope => 'admin');
my $base  = base_url();

sub account {
    my ($row) = psql("SELECT status, coalesce(plan_id, ''), coalesce(subscription_id, ''), "
                     . "coalesce(svc_ts(current_period_end), '') FROM billing_accounts "
                     . "WHERE org_id = '$org_id'");
    return { status => $row->[0], plan => $row->[1], subscription => $row->[2],
             period_end => $row->[3] };
}
sub recorded { return psql_value("SELECT count(*) FROM billing_webhook_events WHERE event_id = '$_[0]'") }
sub audits { return psql_value("SELECT count(*) FROM audit_log WHERE org_id = '$org_id' AND action = '$_[0]'") }
sub updates {
    return psql_value("SELECT count(*) FROM events WHERE org_id = '$org_id' AND kind = 'billing.updated'");
}

# A checkout, completed at the provider: the events it would send.
my ($st, $co) = api(POST => "/api/orgs/$org/billing/checkout", token => $tok,
                    json => { plan => 'team', success_url => "$base/ok", cancel_url => "$base/no" });
is($st, 201, 'a checkout');
my $paid = stripe_do('complete_checkout', { session => $co->{id} });
my ($completed, $created, $invoice_paid) = @{ $paid->{events} };
is($completed->{type}, 'checkout.session.completed', 'the provider sends checkout.session.completed');
is($completed->{data}{object}{client_reference_id}, $org_id, '... naming the org');

# --- signatures ---------------------------------------------------------------------------
{
    my $body = json()->encode($completed);
    my $n = psql_value('SELECT count(*) FROM billing_webhook_events');
    my @bad = (
        [ undef, 'no Stripe-Signature', 'invalid_signature' ],
        [ '', 'an empty one', 'invalid_signature' ],
        [ billing_sign($body, secret => 'whsec_' . ('0' x 32)), 'another secret', 'invalid_signature' ],
        [ billing_sign($body . ' '), 'another body', 'invalid_signature' ],
        [ 'v1=' . ('a' x 64), 'no timestamp', 'invalid_signature' ],
        [ 't=' . time, 'no v1', 'invalid_signature' ],
        [ billing_sign($body) =~ s/v1=/v0=/r, 'only a v0', 'invalid_signature' ],
        [ billing_sign($body, t => time - 301), 'a timestamp 301 s old', 'signature_expired' ],
        [ billing_sign($body, t => time + 400), 'a timestamp 400 s ahead', 'signature_expired' ],
        [ 't=' . time . ',v1=' . ('z' x 64), 'not hex', 'invalid_signature' ],
    );
    for my $b (@bad) {
        my ($sig, $what, $code) = @$b;
        my ($s, $p) = billing_deliver($body, signature => $sig);
        is($s, 401, "$what: 401");
        is($p->{code}, $code, "... $code");
    }
    is(psql_value('SELECT count(*) FROM billing_webhook_events'), $n, '... and nothing recorded');
    is(account()->{subscription}, '', '... nor linked');
}

# --- the checkout completed ---------------------------------------------------------------------
my ($before_updates) = updates();
($st, my $r) = billing_deliver($completed, t => time - 299);
is($st, 200, 'checkout.session.completed (signed 299 s ago): 200');
is($r->{status}, 'accepted', '... accepted');
is(account()->{subscription}, $paid->{subscription}, "... the org has the session's subscription");
is(recorded($completed->{id}), 1, '... recorded');
is(audits('billing.checkout.completed'), 1, '... audited');
is(updates(), $before_updates + 1, '... one billing.updated event');

($st, $r) = billing_deliver($completed);
is($st, 200, 'the same event again: 200');
is($r->{status}, 'duplicate', '... a duplicate');
is(audits('billing.checkout.completed'), 1, '... no second audit entry');
is(updates(), $before_updates + 1, '... no second event');

# --- the subscription: created, then updated -------------------------------------------------
($st, $r) = billing_deliver($created);
is($st, 200, 'customer.subscription.created');
my $acct = account();
is($acct->{status}, 'active', '... the org is active');
is($acct->{plan}, 'team', '... on the plan of the price');
my $item = $created->{data}{object}{items}{data}[0];
is($acct->{period_end}, psql_value("SELECT svc_ts(to_timestamp($item->{current_period_end}))"),
   "... until the period's end (on the item, as 2025-03-31.basil has it)");

my $upd = stripe_do('subscription', { id => $paid->{subscription}, status => 'active' })->{events}[0];
is($upd->{type}, 'customer.subscription.updated', 'the provider sends customer.subscription.updated');
my $audits = audits('billing.subscription.updated');
($st, $r) = billing_deliver($upd);
is($st, 200, '... delivered');
is(account()->{status}, 'active', '... active');
is(audits('billing.subscription.updated'), $audits + 1, '... audited');

# Several v1 (a rotation: the old secret and the new one).
{
    my $again = stripe_do('subscription', { id => $paid->{subscription} })->{events}[0];
    ($st, $r) = billing_deliver($again, secrets => [ 'whsec_' . ('1' x 32), $ENV{BILLING_WEBHOOK_SECRET} ]);
    is($st, 200, 'signed with an old secret and the current one: 200');
    is($r->{status}, 'accepted', '... accepted');
}

# --- GET /billing: the plan, the period, the next invoice ----------------------------------------
{
    my $n = scalar @{ stripe_state()->{requests} };
    my ($s, $b) = api(GET => "/api/orgs/$org/billing", token => $tok);
    is($s, 200, 'GET /billing');
    is($b->{plan}{id}, 'team', '... the team plan');
    is($b->{status}, 'active', '... active');
    is($b->{current_period_end}, $acct->{period_end}, '... its period');
    is($b->{usage}{run_minutes}{included}, 1000, "... this period's usage against its allowances");
    is($b->{next_invoice}{amount_due}, 2900, "... the next invoice's amount (the provider's preview)");
    is($b->{next_invoice}{currency}, 'usd', '... its currency');
    like($b->{next_invoice}{date}, qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/, '... its date');
    my @calls = @{ stripe_state()->{requests} }[ $n .. $#{ stripe_state()->{requests} } ];
    is_deeply([ map { "$_->{method} $_->{path}" } @calls ], [ 'POST /v1/invoices/create_preview' ],
              '... asked of the provider');
    is($calls[0]{params}{subscription}, $paid->{subscription}, '... for the subscription');
    ok(length $calls[0]{idempotency_key}, '... with an Idempotency-Key (it is a POST)');
    $n = scalar @{ stripe_state()->{requests} };
    ($s, my $b2) = api(GET => "/api/orgs/$org/billing", token => $tok);
    is_deeply($b2->{next_invoice}, $b->{next_invoice}, 'again: the same invoice');
    is(scalar @{ stripe_state()->{requests} }, $n, '... from the cache, without asking');

    ($s, my $p) = api(POST => "/api/orgs/$org/billing/checkout", token => $tok,
                      json => { plan => 'business', success_url => "$base/ok", cancel_url => "$base/no" });
    is($s, 409, 'a second checkout while subscribed: 409');
    is($p->{code}, 'already_subscribed', '... already_subscribed');
}

# --- invoices: past_due and back -----------------------------------------------------------------
{
    my $failed = stripe_do('invoice', { subscription => $paid->{subscription}, paid => 0 })->{events}[0];
    is($failed->{type}, 'invoice.payment_failed', 'the provider sends invoice.payment_failed');
    my $u = updates();
    ($st, $r) = billing_deliver($failed);
    is($st, 200, '... delivered');
    is(account()->{status}, 'past_due', '... the org is past_due');
    is(audits('billing.invoice.payment_failed'), 1, '... audited');
    is(updates(), $u + 1, '... a billing.updated event');
    my ($ev) = psql("SELECT data::text FROM events WHERE org_id = '$org_id' AND kind = 'billing.updated' "
                    . 'ORDER BY id DESC LIMIT 1');
    my $data = json()->decode($ev->[0]);
    is($data->{status}, 'past_due', '... saying past_due');
    is($data->{cause}, 'invoice.payment_failed', '... and why');
    my ($s, $b) = api(GET => "/api/orgs/$org/billing", token => $tok);
    is($b->{status}, 'past_due', 'GET /billing says past_due');

    my $ok = stripe_do('invoice', { subscription => $paid->{subscription}, paid => 1 })->{events}[0];
    ($st) = billing_deliver($ok);
    is($st, 200, 'invoice.paid');
    is(account()->{status}, 'active', '... active again');
    ($st) = billing_deliver($invoice_paid);
    is(account()->{status}, 'active', "the checkout's own invoice.paid changes nothing more");
}

# --- order: an older event than one applied changes nothing ---------------------------------------
{
    my $older = stripe_do('subscription', { id => $paid->{subscription}, status => 'past_due',
                                           created => time - 3600 })->{events}[0];
    ($st, $r) = billing_deliver($older);
    is($st, 200, 'an event an hour older than the last one applied: 200');
    is($r->{status}, 'accepted', '... accepted (and recorded)');
    is(account()->{status}, 'active', '... but the org stays active');
    is(recorded($older->{id}), 1, '... recorded');
}

# --- a plan change, then the end ------------------------------------------------------------------------
{
    my $ch = stripe_do('subscription', { id => $paid->{subscription}, price => 'price_business' })->{events}[0];
    billing_deliver($ch);
    is(account()->{plan}, 'business', 'a new price: the business plan');
    my $del = stripe_do('subscription', { id => $paid->{subscription}, delete => 1 })->{events}[0];
    is($del->{type}, 'customer.subscription.deleted', 'the provider sends customer.subscription.deleted');
    ($st) = billing_deliver($del);
    is($st, 200, '... delivered');
    is(account()->{status}, 'canceled', '... the org is canceled');
    my ($s, $b) = api(GET => "/api/orgs/$org/billing", token => $tok);
    is($b->{status}, 'canceled', 'GET /billing says canceled');
    is($b->{next_invoice}, undef, '... with no next invoice');
    ($s) = api(POST => "/api/orgs/$org/billing/checkout", token => $tok,
               json => { plan => 'team', success_url => "$base/ok", cancel_url => "$base/no" });
    is($s, 201, 'a canceled org may check out again');
}

# --- unknown events, bad bodies -------------------------------------------------------------------------
{
    my $ev = { id => 'evt_1' . uniq('unknown') =~ s/\W//gr, object => 'event', type => 'charge.refunded',
               created => time, livemode => JSON::PP::false(),
               data => { object => { id => 'ch_1', object => 'charge', customer => 'cus_nobody' } } };
    my $u = updates();
    ($st, $r) = billing_deliver($ev);
    is($st, 200, 'an event the service does not handle: 200');
    is($r->{status}, 'accepted', '... accepted');
    is(recorded($ev->{id}), 1, '... recorded');
    is(updates(), $u, '... and nothing else');

    ($st, $r) = billing_deliver('{"id": "evt_x", "id": "evt_y"}');
    is($st, 400, 'a signed body with a duplicate key: 400');
    is($r->{code}, 'invalid_json', '... invalid_json');
    ($st, $r) = billing_deliver({ type => 'invoice.paid', created => time, data => { object => {} } });
    is($st, 400, 'an event without an id: 400');
    is($r->{code}, 'invalid_webhook', '... invalid_webhook');
    ($st, $r) = billing_deliver('x' x (1024 * 1024 + 1));
    is($st, 413, 'a body over 1 MiB: 413');
}

# --- the same event delivered three times at once: once -----------------------------------------------
{
    my $o2 = new_org($owner, prefix => 'wh-race');
    my $o2_id = org_id_of($o2);
    my ($s, $c2) = api(POST => "/api/orgs/$o2/billing/checkout", token => $tok,
                       json => { plan => 'team', success_url => "$base/ok", cancel_url => "$base/no" });
    my $ev = stripe_do('complete_checkout', { session => $c2->{id} })->{events}[0];
    my @got = race(map { sub { my ($st2, $r2) = billing_deliver($ev); return ($st2, $r2->{status}) } } 1 .. 3);
    is_deeply([ sort map { $_->[1] } @got ], [ 'accepted', 'duplicate', 'duplicate' ],
              'three deliveries at once: one accepted, two duplicates');
    is(psql_value("SELECT count(*) FROM audit_log WHERE org_id = '$o2_id' "
                  . "AND action = 'billing.checkout.completed'"), 1, '... one audit entry');
}

# --- the founder's view -----------------------------------------------------------------------------------
{
    my $founder = new_user('wh-founder', founder => 1);
    my $ftok = new_token($founder, scope => 'read');
    my ($s, $list) = api(GET => '/api/admin/billing/events?limit=200', token => $ftok);
    is($s, 200, 'founder: GET /api/admin/billing/events');
    my ($mine) = grep { $_->{event_id} eq $completed->{id} } @{ $list->{data} };
    ok($mine, '... lists the events');
    is($mine->{type}, 'checkout.session.completed', '... with their type');
    is($mine->{org_id}, $org_id, '... the org');
    ok(!exists $mine->{payload}, '... without payloads');
    ($s, my $one) = api(GET => "/api/admin/billing/events/$completed->{id}", token => $ftok);
    is($s, 200, 'one event');
    is($one->{payload}{data}{object}{id}, $co->{id}, '... with its payload');
    ($s) = api(GET => '/api/admin/billing/events/evt_nosuch', token => $ftok);
    is($s, 404, 'an unknown one: 404');
    ($s) = api(GET => '/api/admin/billing/events', token => $tok);
    is($s, 404, 'not a founder: 404, as if it did not exist (issue 24)');
}

done_testing();
