# Paying (issue 23), against the fake payment provider (t/lib/FakeStripe.pm):
# a checkout makes one provider customer per org (its id in the metadata,
# an Idempotency-Key on every POST, the pinned API version, form-encoded
# with bracketed keys) and answers the provider's URL; a client's own
# Idempotency-Key gives the same session back; the portal's URL; the
# payment method set and read back, and a card the provider declines.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $owner = new_user('pay-owner');
my $org   = new_org($owner, prefix => 'pay');
my $org_id = org_id_of($org);
my $tok   = new_token($owner, scope => 'admin');
my $base  = base_url();
my $ok_urls = { success_url => "$base/billing/done?session={CHECKOUT_SESSION_ID}",
                cancel_url => "$base/billing" };

# The provider's requests since `mark`, and the one of a method and path.
sub calls_since {
    my $mark = shift;
    my $all = stripe_state()->{requests};
    return @{ $all }[ $mark .. $#$all ];
}
sub mark { return scalar @{ stripe_state()->{requests} } }

# --- the first checkout ----------------------------------------------------------------
my $m = mark();
my ($st, $co, $res) = api(POST => "/api/orgs/$org/billing/checkout", token => $tok,
                          json => { plan => 'team', %$ok_urls });
is($st, 201, 'a checkout session for the team plan') or diag(explain($co));
like($co->{url}, qr{^https://checkout\.stripe\.com/c/pay/cs_test_}, "... the provider's URL");
like($co->{id}, qr/^cs_test_/, '... and its id');

my @calls = calls_since($m);
is_deeply([ map { "$_->{method} $_->{path}" } @calls ],
          [ 'POST /v1/customers', 'POST /v1/checkout/sessions' ],
          '... one customer made, then the session');
my ($cus_call, $cs_call) = @calls;
is($cus_call->{params}{'metadata[org_id]'}, $org_id, "... the customer carries the org's id");
for my $c (@calls) {
    ok(length($c->{idempotency_key} // ''), "$c->{path}: an Idempotency-Key");
    is($c->{version}, '2025-03-31.basil', '... the pinned API version');
    is($c->{auth}, 'ok', '... the secret key as a bearer token');
    like($c->{content_type}, qr{^application/x-www-form-urlencoded}, '... form-encoded');
    is($c->{status}, 200, '... answered 200');
}
my $customer = stripe_state()->{sessions}{ $co->{id} }{customer};
like($customer, qr/^cus_/, 'the session is for the customer');
is_deeply({ map { $_ => $cs_call->{params}{$_} } qw(mode customer client_reference_id
              line_items[0][price] line_items[0][quantity] success_url cancel_url
              metadata[org_id] metadata[plan] subscription_data[metadata][org_id]) },
          { mode => 'subscription', customer => $customer, client_reference_id => $org_id,
            'line_items[0][price]' => 'price_team', 'line_items[0][quantity]' => 1,
            success_url => $ok_urls->{success_url}, cancel_url => $ok_urls->{cancel_url},
            'metadata[org_id]' => $org_id, 'metadata[plan]' => 'team',
            'subscription_data[metadata][org_id]' => $org_id },
          "... in subscription mode, the org as client_reference_id, the plan's price");
is(psql_value("SELECT customer_id FROM billing_accounts WHERE org_id = '$org_id'"), $customer,
   "the org's customer is stored");
is(psql_value("SELECT count(*) FROM audit_log WHERE org_id = '$org_id' "
              . "AND action = 'billing.checkout.created' AND data->>'session_id' = '$co->{id}' "
              . "AND (data->>'customer_created')::boolean"), 1, 'audited: billing.checkout.created');

# --- a second checkout: the same customer --------------------------------------------------
$m = mark();
($st, my $co2) = api(POST => "/api/orgs/$org/billing/checkout", token => $tok,
                     json => { plan => 'business', %$ok_urls });
is($st, 201, 'a second checkout (another plan)');
isnt($co2->{id}, $co->{id}, '... another session');
is_deeply([ map { "$_->{method} $_->{path}" } calls_since($m) ], [ 'POST /v1/checkout/sessions' ],
          '... and no second customer');
is(scalar(grep { ($_->{metadata}{org_id} // '') eq $org_id } values %{ stripe_state()->{customers} }),
   1, 'the provider has one customer for the org');

# Simultaneous first checkouts of a new org make one customer too.
{
    my $o2 = new_org($owner, prefix => 'pay-race');
    my $o2_id = org_id_of($o2);
    my @got = race(map { my $plan = $_; sub {
        my ($s, $c) = api(POST => "/api/orgs/$o2/billing/checkout", token => $tok,
                          json => { plan => $plan, %$ok_urls });
        return ($s, $c && $c->{id});
    } } qw(team business team));
    is_deeply([ map { $_->[0] } @got ], [ 201, 201, 201 ], 'three checkouts at once');
    is(scalar(grep { ($_->{metadata}{org_id} // '') eq $o2_id }
              values %{ stripe_state()->{customers} }), 1, '... one customer');
    is(psql_value("SELECT count(*) FROM billing_accounts WHERE org_id = '$o2_id' "
                  . "AND customer_id IS NOT NULL"), 1, '... stored once');
}

# --- the client's Idempotency-Key ------------------------------------------------------------
{
    my $key = uniq('checkout-key');
    my ($s1, $a) = api(POST => "/api/orgs/$org/billing/checkout", token => $tok,
                       json => { plan => 'team', %$ok_urls }, headers => { 'Idempotency-Key' => $key });
    my ($s2, $b, $r2) = api(POST => "/api/orgs/$org/billing/checkout", token => $tok,
                            json => { plan => 'team', %$ok_urls },
                            headers => { 'Idempotency-Key' => $key });
    is($s1, 201, 'a checkout with an Idempotency-Key');
    is($s2, 200, '... sent again: 200, as every replay of a creation');
    is($b->{id}, $a->{id}, '... the same session');
    is($r2->header('Idempotent-Replayed'), 'true', '... said to be replayed');
    is(psql_value("SELECT count(*) FROM audit_log WHERE org_id = '$org_id' "
                  . "AND data->>'session_id' = '$a->{id}'"), 1, '... audited once');
    my ($s3, $p) = api(POST => "/api/orgs/$org/billing/checkout", token => $tok,
                       json => { plan => 'business', %$ok_urls },
                       headers => { 'Idempotency-Key' => $key });
    is($s3, 409, 'the same key for another plan: 409');
    is($p->{code}, 'idempotency_conflict', '... idempotency_conflict');
}

# --- bad checkouts: 400, nothing at the provider -----------------------------------------------
for my $case ([ { plan => 'gold', %$ok_urls }, 'plan', 'an unknown plan' ],
              [ { plan => 'team', %$ok_urls, success_url => 'https://evil.example/x' },
                'success_url', 'another origin' ],
              [ { plan => 'team', %$ok_urls, cancel_url => 'javascript:alert(1)' },
                'cancel_url', 'a script URL' ],
              [ { plan => 'team', %$ok_urls, success_url => "http://user\@127.0.0.1/x" },
                'success_url', 'user information' ],
              [ { plan => 'team', %$ok_urls,
                  success_url => 'http://ui.example.test/billing/done' }, undef,
                "SvcUIURL's origin is allowed" ]) {
    my ($body, $field, $what) = @$case;
    $m = mark();
    my ($s, $p) = api(POST => "/api/orgs/$org/billing/checkout", token => $tok, json => $body);
    if (!$field) {
        is($s, 201, $what);
        next;
    }
    is($s, 400, "$what: 400");
    is($p->{errors}[0]{field}, $field, "... naming $field");
    my @asked = calls_since($m);
    is(scalar @asked, 0, '... and the provider was not asked');
}

# --- the portal ----------------------------------------------------------------------------------
{
    $m = mark();
    my ($s, $p) = api(POST => "/api/orgs/$org/billing/portal", token => $tok,
                      json => { return_url => "$base/settings/billing" });
    is($s, 201, 'a portal session');
    like($p->{url}, qr{^https://billing\.stripe\.com/p/session/}, "... the provider's URL");
    my @c = calls_since($m);
    is_deeply([ map { "$_->{method} $_->{path}" } @c ], [ 'POST /v1/billing_portal/sessions' ],
              '... one call');
    is($c[0]{params}{customer}, $customer, "... for the org's customer");
    is($c[0]{params}{return_url}, "$base/settings/billing", '... with the return URL');
    ok(length $c[0]{idempotency_key}, '... with an Idempotency-Key');
    ($s, $p) = api(POST => "/api/orgs/$org/billing/portal", token => $tok,
                   json => { return_url => 'https://elsewhere.example/' });
    is($s, 400, 'a return URL elsewhere: 400');
}

# --- the payment method ----------------------------------------------------------------------------
{
    my ($s, $p) = api(GET => "/api/orgs/$org/billing/payment-method", token => $tok);
    is($s, 200, 'the payment method before one is set');
    is($p, undef, '... null');
    my $raw = (api(GET => "/api/orgs/$org/billing/payment-method", token => $tok))[2]->content;
    is($raw, 'null', '... the JSON null');

    $m = mark();
    ($s, $p) = api(PUT => "/api/orgs/$org/billing/payment-method", token => $tok,
                   json => { payment_method => 'pm_card_visa' });
    is($s, 200, 'a card is set') or diag(explain($p));
    is($p->{brand}, 'visa', '... brand');
    is($p->{last4}, '4242', '... last four digits');
    is($p->{exp_month}, 12, '... expiry month');
    like($p->{exp_year}, qr/^\d{4}$/, '... expiry year');
    my @c = calls_since($m);
    is_deeply([ map { "$_->{method} $_->{path}" } @c ],
              [ 'POST /v1/payment_methods/pm_card_visa/attach', "POST /v1/customers/$customer" ],
              '... attached, then made the default');
    is($c[0]{params}{customer}, $customer, '... to the customer');
    like($c[1]{params}{'invoice_settings[default_payment_method]'}, qr/^pm_1/,
         '... the payment method the provider made of the test card');
    ok(length($_->{idempotency_key} // ''), "$_->{path}: an Idempotency-Key") for @c;

    my ($s2, $back) = api(GET => "/api/orgs/$org/billing/payment-method", token => $tok);
    is($s2, 200, 'read back');
    is_deeply($back, $p, '... the same card');
    is(psql_value("SELECT count(*) FROM audit_log WHERE org_id = '$org_id' "
                  . "AND action = 'billing.payment_method.set' AND data->>'last4' = '4242'"), 1,
       'audited: billing.payment_method.set');

    ($s, $p) = api(PUT => "/api/orgs/$org/billing/payment-method", token => $tok,
                   json => { payment_method => 'pm_card_chargeDeclined' });
    is($s, 400, 'a declined card: 400');
    is($p->{errors}[0]{field}, 'payment_method', '... on payment_method');
    is($p->{errors}[0]{code}, 'card_declined', "... the provider's code");
    like($p->{errors}[0]{message}, qr/Your card was declined\. \(request req_\w+\)/,
         "... its message and request id");
    ($s, $p) = api(PUT => "/api/orgs/$org/billing/payment-method", token => $tok,
                   json => { payment_method => 'pm_NoSuchMethod123' });
    is($s, 400, 'an unknown payment method: 400');
    is($p->{errors}[0]{code}, 'resource_missing', '... resource_missing');
    ($s, $p) = api(PUT => "/api/orgs/$org/billing/payment-method", token => $tok,
                   json => { payment_method => 'pm_x/../../v1/customers' });
    is($s, 400, 'not an id: 400 before the provider is asked');
    ($s2, $back) = api(GET => "/api/orgs/$org/billing/payment-method", token => $tok);
    is($back->{last4}, '4242', 'the default is still the visa');

    ($s, $p) = api(PUT => "/api/orgs/$org/billing/payment-method", token => $tok,
                   json => { payment_method => 'pm_card_mastercard' });
    is($s, 200, 'another card');
    ($s2, $back) = api(GET => "/api/orgs/$org/billing/payment-method", token => $tok);
    is($back->{brand}, 'mastercard', '... is the default now');
}

# --- members read, admins pay -------------------------------------------------------------------------
{
    my $member = new_user('pay-member');
    svcctl('org', 'add-member', $org, $member, '--role', 'member');
    my $mt = new_token($member, scope => 'admin');
    my ($s, $p) = api(POST => "/api/orgs/$org/billing/checkout", token => $mt,
                      json => { plan => 'team', %$ok_urls });
    is($s, 403, 'a member cannot start a checkout');
    ($s) = api(GET => "/api/orgs/$org/billing/payment-method", token => $mt);
    is($s, 403, '... nor read the payment method');
    ($s) = api(GET => "/api/orgs/$org/billing", token => $mt);
    is($s, 200, '... but reads the billing');
    my $admin = new_user('pay-admin');
    svcctl('org', 'add-member', $org, $admin, '--role', 'admin');
    ($s) = api(GET => "/api/orgs/$org/billing/payment-method",
               token => new_token($admin, scope => 'read'));
    is($s, 200, 'an admin reads the payment method with a read token');
    ($s) = api(PUT => "/api/orgs/$org/billing/payment-method",
               token => new_token($admin, scope => 'write'), json => { payment_method => 'pm_card_visa' });
    is($s, 403, '... and sets it only with admin scope');
}

# No secret key ever reached a client or the database.
ok(!grep({ index($_->[0], $ENV{BILLING_SECRET_KEY}) >= 0 }
         psql("SELECT data::text FROM audit_log WHERE org_id = '$org_id'")),
   'the secret key is in no audit entry');

done_testing();
