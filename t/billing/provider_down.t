# The payment provider failing (issue 23): down, answering 500 inside an
# endpoint, rate limiting, not answering within SvcBillingTimeout, answering
# something that is not its API, refusing the key. Each is a 502
# payment_provider_error with the provider's message and request id (never
# the key), and nothing half-written: a failed customer leaves no trace, a
# failed session leaves only the customer (made once per org, and used
# from then on), never an audit entry of a checkout that did not happen.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $owner = new_user('down-owner');
my $tok   = new_token($owner, scope => 'admin');
my $base  = base_url();
my %urls  = (success_url => "$base/done", cancel_url => "$base/back");

sub checkout {
    my ($org, %opt) = @_;
    return api(POST => "/api/orgs/$org/billing/checkout", token => $tok,
               json => { plan => 'team', %urls }, %opt);
}

sub audits {
    my $org_id = shift;
    return psql_value("SELECT count(*) FROM audit_log WHERE org_id = '$org_id' "
                      . "AND action LIKE 'billing.%'");
}

my $mark = expect_errors_begin();

# --- down before anything: nothing written --------------------------------------------
# (A 500 inside the endpoint is kept by the provider for the customer's key
# and replayed for a day: the next checkout looks for the customer the org
# names, and makes it with a key of its own when there is none.)
for my $case ([ 'unavailable', qr/HTTP 503\): The service is temporarily unavailable\. \(request req_\w+\)/ ],
              [ 'server_error', qr/HTTP 500\): An unknown error occurred \(request req_\w+\)/ ],
              [ 'rate_limited', qr/HTTP 429, rate_limit\): Too many requests/ ],
              [ 'garbage', qr/answer when asked to create the organization's customer could not be used \(request req_\w+\)/ ],
              [ 'timeout', qr/did not answer within 3 seconds/ ]) {
    my ($mode, $detail) = @$case;
    my $org = new_org($owner, prefix => "down-$mode");
    my $org_id = org_id_of($org);
    stripe_control(mode => $mode, hang_seconds => 6);
    my $before = db_digest();
    my ($st, $p) = checkout($org);
    stripe_control(mode => 'ok');
    is($st, 502, "provider $mode: 502");
    is($p->{code}, 'payment_provider_error', '... payment_provider_error');
    like($p->{detail}, $detail, "... with the provider's words") or diag($p->{detail});
    unlike($p->{detail}, qr/\Q$ENV{BILLING_SECRET_KEY}\E/, '... never the key');
    is_deeply(db_digest(), $before, '... and nothing written');
    is(audits($org_id), 0, '... nor audited');
    # It comes back: the checkout works, with one customer.
    my ($st2, $co) = checkout($org);
    is($st2, 201, "... once it is back, the checkout works");
    is(scalar(grep { ($_->{metadata}{org_id} // '') eq $org_id }
              values %{ stripe_state()->{customers} }), 1, '... with one customer');
}

# --- the customer made, the session failing --------------------------------------------------
{
    my $org = new_org($owner, prefix => 'down-session');
    my $org_id = org_id_of($org);
    stripe_control(mode => 'server_error', path => '^/v1/checkout/sessions$');
    my ($st, $p) = checkout($org);
    stripe_control(mode => 'ok', path => undef);
    is($st, 502, 'the session failing: 502');
    like($p->{detail}, qr/create a checkout session/, '... saying what failed');
    my $cus = psql_value("SELECT customer_id FROM billing_accounts WHERE org_id = '$org_id'");
    like($cus, qr/^cus_/, '... the customer made is kept (it exists at the provider)');
    is(audits($org_id), 0, '... and no checkout is audited');
    my ($st2) = checkout($org);
    is($st2, 201, 'the next checkout works');
    is(psql_value("SELECT customer_id FROM billing_accounts WHERE org_id = '$org_id'"), $cus,
       '... with the same customer');
    is(scalar(grep { ($_->{metadata}{org_id} // '') eq $org_id }
              values %{ stripe_state()->{customers} }), 1, '... the only one');
}

# --- the payment method: attach works, the default fails ------------------------------------
{
    my $org = new_org($owner, prefix => 'down-pm');
    my $org_id = org_id_of($org);
    my ($st) = checkout($org);
    is($st, 201, 'an org with a customer');
    stripe_control(mode => 'unavailable', path => '^/v1/customers/');
    my $before = db_digest();
    my $audits = audits($org_id);
    my ($s, $p) = api(PUT => "/api/orgs/$org/billing/payment-method", token => $tok,
                      json => { payment_method => 'pm_card_visa' });
    is($s, 502, 'making the card the default fails: 502');
    like($p->{detail}, qr/make the payment method the customer's default/, '... saying which step');
    ($s, $p) = api(GET => "/api/orgs/$org/billing/payment-method", token => $tok);
    is($s, 502, '... and reading it back is a 502 too while the provider is down');
    stripe_control(mode => 'ok', path => undef);
    is_deeply(db_digest(), $before, '... nothing written');
    is(audits($org_id), $audits, '... nothing audited');
    ($s, $p) = api(GET => "/api/orgs/$org/billing/payment-method", token => $tok);
    is($p, undef, '... and the default is still none');
}

# --- the portal while the provider is slow ---------------------------------------------------
{
    my $org = new_org($owner, prefix => 'down-portal');
    my ($st) = checkout($org);
    stripe_control(mode => 'slow', delay_ms => 5000, path => 'billing_portal');
    my ($s, $p) = api(POST => "/api/orgs/$org/billing/portal", token => $tok,
                      json => { return_url => "$base/x" });
    stripe_control(mode => 'ok', path => undef);
    is($s, 502, 'a portal session slower than SvcBillingTimeout: 502');
    like($p->{detail}, qr/did not answer within 3 seconds/, '... saying so');
}

# --- a key the provider refuses ------------------------------------------------------------------
{
    my $org = new_org($owner, prefix => 'down-key');
    my $org_id = org_id_of($org);
    my $bad = vhost_url('billing_badkey');
    my ($st, $p, $res) = api(POST => "/api/orgs/$org/billing/checkout", token => $tok,
                             base => $bad, json => { plan => 'team', success_url => "$bad/done",
                                                     cancel_url => "$bad/back" });
    is($st, 502, 'a refused key: 502');
    like($p->{detail}, qr/HTTP 401\): Invalid API Key provided: sk_test_\*\*\*\*\w{4}/,
         "... the provider's message, with the key masked as it masks it");
    unlike($res->content, qr/\Q$ENV{BILLING_BAD_KEY}\E/, '... never the key itself');
    is(psql_value("SELECT count(*) FROM billing_accounts WHERE org_id = '$org_id'"), 0,
       '... nothing written');
    my @refused = grep { ($_->{auth} // '') eq 'wrong' } @{ stripe_state()->{requests} };
    ok(@refused, 'the provider saw the wrong key');
}

expect_errors_end($mark);

# The operator's log says what failed, without the key.
my $log = do { local (@ARGV, $/) = error_log_path(); <> };
like($log, qr/billing: POST \/v1\/customers answered HTTP 503 api_error: The service is temporarily unavailable\. \(request req_\w+\)/,
     "the error log says what the provider answered");
unlike($log, qr/\Q$ENV{BILLING_SECRET_KEY}\E|\Q$ENV{BILLING_BAD_KEY}\E/, '... and never a key');

done_testing();
