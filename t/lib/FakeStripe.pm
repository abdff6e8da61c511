package FakeStripe;
# A fake payment provider for the billing tests: the parts of Stripe's
# public API (v1) that mod_svc calls, on 127.0.0.1, spoken as Stripe speaks
# them, with switches to fail or be slow.
#
#   perl -It/lib -MFakeStripe -e FakeStripe::main -- --port-file FILE \
#       --prices price_a,price_b,...
#
# tools/test.sh starts one before Apache::Test (so httpd's configuration can
# name it, as BILLING_API_URL), with BILLING_SECRET_KEY in its environment:
# the one secret key it accepts.
#
#   POST /v1/customers                        a customer (metadata[...], name, email)
#   GET  /v1/customers/search                 query=metadata['org_id']:'...'
#   GET  /v1/customers/{id}                   expand[]=invoice_settings.default_payment_method
#   POST /v1/customers/{id}                   invoice_settings[default_payment_method], ...
#   POST /v1/checkout/sessions                mode=subscription, customer, line_items[N][price]
#                                             and [quantity], success_url, cancel_url,
#                                             client_reference_id, metadata[...],
#                                             subscription_data[metadata][...]
#   POST /v1/billing_portal/sessions          customer, return_url
#   POST /v1/payment_methods/{id}/attach      customer; the test tokens pm_card_visa,
#                                             pm_card_mastercard (a new pm_ each time, as
#                                             test mode makes one), pm_card_chargeDeclined
#                                             (402 card_declined), or a pm_ made before
#   POST /v1/subscriptions/{id}               default_payment_method
#   POST /v1/invoices/create_preview          customer, subscription: the next invoice
#
# As Stripe does:
#   - Authorization: Bearer KEY (or Basic KEY:); a missing or wrong key is 401
#     {"error":{"type":"invalid_request_error","message":"Invalid API Key
#     provided: sk_test_****abcd"}};
#   - Stripe-Version, when sent, must be a real API version (400 otherwise);
#     objects are rendered as 2025-03-31.basil renders them (a subscription's
#     period on its items; an invoice's subscription under
#     parent.subscription_details);
#   - bodies are application/x-www-form-urlencoded with bracketed keys
#     (metadata[k]=v, line_items[0][price]=p, expand[]=x); an unknown
#     parameter is 400 "Received unknown parameter: x" with `param`;
#   - every error is {"error":{"type","code","message","param","doc_url",
#     "request_log_url"}} with the HTTP status Stripe uses (400, 401, 402,
#     404, 409, 429, 500...), and every answer has a Request-Id: req_...;
#   - Idempotency-Key on a POST: the first response (any status, 5xx
#     included, once the endpoint started) is saved and replayed for the same
#     key with Idempotent-Replayed: true; the same key with other parameters
#     (or another path) is 400 idempotency_error; a validation failure saves
#     nothing; a key longer than 255 characters is 400. A POST without a key
#     is executed every time.
#
# Control (tests only; SvcTest.pm wraps it):
#   POST /_control {mode, times, path, delay_ms, hang_seconds, prices}
#       mode: ok | server_error (500 api_error) | unavailable (503) |
#             rate_limited (429 rate_limit) | slow (answers after delay_ms) |
#             timeout (never answers) | garbage (200, not JSON);
#       times: the mode holds for so many API requests, then back to ok;
#       path: the mode applies only to requests whose path matches this
#             regular expression (others are served).
#   POST /_control/reset          mode ok, request log emptied (objects stay)
#   GET  /_control                {mode, requests: [{method, path, params,
#                                  idempotency_key, version, auth, replayed,
#                                  status}], customers, subscriptions, sessions}
#   POST /_control/complete_checkout {session}   the customer paid: a
#        subscription is made (active, a month), and the events Stripe sends
#        are returned: {events: [checkout.session.completed,
#        customer.subscription.created, invoice.paid]}
#   POST /_control/subscription {id, status, price, delete}  changes it:
#        {events: [customer.subscription.updated | .deleted]}
#   POST /_control/invoice {subscription, paid}  an invoice of it is paid or
#        fails: {events: [invoice.paid | invoice.payment_failed]}
#   POST /_control/deliver {url, events | ids, secrets, t}   Stripe's
#        webhook delivery: each event (given, or one made before, by id) is
#        POSTed to url as Stripe sends it (application/json; charset=utf-8,
#        User-Agent Stripe/1.0, Stripe-Signature: t=T,v1=HMAC-SHA256 of
#        "T.body" under the endpoint's secret, one v1 per secret while a
#        rolled secret has not expired, and a v0 under a test-mode key that
#        a receiver must ignore); {deliveries: [{id, type, status, body,
#        signature}]}. A
#        delivery again (Stripe's retry of an event not answered 2xx) is
#        signed afresh with the time of sending. The endpoint's secret is
#        BILLING_WEBHOOK_SECRET unless secrets says otherwise; t (tests of
#        the tolerance only) backdates the signature.
# Events are what Stripe would POST to the webhook; the fake keeps each one
# it made, by id, and delivers it when told (above); a test may also sign
# one itself (SvcTest::billing_deliver), to forge what Stripe never sends.
#
# One request per connection (Connection: close), handled in this process;
# a slow or silent answer is handed to a forked child.
use strict;
use warnings;

use Digest::SHA ();
use HTTP::Daemon ();
use HTTP::Tiny ();
use HTTP::Response ();
use JSON::PP ();
use MIME::Base64 qw(decode_base64);
use POSIX ();
use Time::HiRes ();
use URI ();

my $JSON = JSON::PP->new->utf8->canonical;
my $VERSION = '2025-03-31.basil';
my %VERSIONS = map { $_ => 1 } qw(
    2023-10-16 2024-04-10 2024-06-20 2024-09-30.acacia 2024-10-28.acacia
    2024-11-20.acacia 2024-12-18.acacia 2025-01-27.acacia 2025-02-24.acacia
    2025-03-31.basil 2025-04-30.basil 2025-05-28.basil 2025-06-30.basil
    2025-07-30.basil 2025-08-27.basil
);

my (%st, %obj, %hanging, %events);

sub reset_state {
    my $keep = shift;
    %st = (mode => 'ok', times => undef, path => undef, delay_ms => 1500, hang_seconds => 30,
           requests => [], prices => $keep ? $st{prices} : {}, idem => $keep ? $st{idem} : {});
}

sub rand_str {
    my $n = shift;
    open my $fh, '<', '/dev/urandom' or die "FakeStripe: urandom: $!";
    read($fh, my $raw, $n) == $n or die "FakeStripe: urandom: short read";
    close $fh;
    return join '', map { ('a'..'z', 'A'..'Z', 0..9)[ord($_) % 62] } split //, $raw;
}

sub price {
    my $id = shift;
    return undef unless $st{prices}{$id};
    return { id => $id, object => 'price', active => JSON::PP::true, currency => 'usd',
             unit_amount => $st{prices}{$id}, type => 'recurring', livemode => JSON::PP::false,
             recurring => { interval => 'month', interval_count => 1,
                            usage_type => 'licensed' } };
}

# --- answers -----------------------------------------------------------------

sub answer {
    my ($code, $data, $rid) = @_;
    my $res = HTTP::Response->new($code);
    $res->header('Content-Type' => 'application/json');
    $res->header('Request-Id' => $rid);
    $res->header('Stripe-Version' => $VERSION);
    $res->content($JSON->encode($data));
    return $res;
}

# Stripe's error body; `save` says whether the idempotency layer keeps it
# (validation failures are not kept).
sub error {
    my ($code, $type, $message, %o) = @_;
    my $e = { type => $type, message => $message };
    $e->{code} = $o{code} if $o{code};
    $e->{param} = $o{param} if $o{param};
    $e->{decline_code} = $o{decline_code} if $o{decline_code};
    $e->{doc_url} = 'https://stripe.com/docs/error-codes/' . ($o{code} =~ tr/_/-/r) if $o{code};
    return { status => $code, body => { error => $e }, save => $o{save} // 0 };
}

# Stripe links every error to its request in the dashboard's log.
sub with_log_url {
    my ($body, $rid) = @_;
    return $body unless ref $body eq 'HASH' && ref $body->{error} eq 'HASH';
    return { error => { %{ $body->{error} },
                        request_log_url => "https://dashboard.stripe.com/test/logs/$rid" } };
}

sub ok { return { status => 200, body => $_[0], save => 1 } }

sub missing {
    my ($what, $id, $param) = @_;
    return error(404, 'invalid_request_error', "No such $what: '$id'", code => 'resource_missing',
                 param => $param // 'id');
}

# --- form bodies -------------------------------------------------------------

sub decode_form {
    my $text = shift // '';
    my $u = URI->new('http://x/');
    $u->query($text);
    return $u->query_form;
}

# Flat pairs into Stripe's nested shape: a[b]=c, a[0][b]=c, a[]=x.
sub nest {
    my @pairs = @_;
    my %root;
    while (@pairs) {
        my ($k, $v) = splice @pairs, 0, 2;
        my ($head, $rest) = $k =~ /^([^\[]+)((?:\[[^\]]*\])*)\z/ or return (undef, $k);
        my @path = ($head, $rest =~ /\[([^\]]*)\]/g);
        my $node = \%root;
        for my $i (0 .. $#path) {
            my $seg = $path[$i];
            my $last = $i == $#path;
            if (ref $node eq 'ARRAY') {
                if ($seg eq '') { push @$node, $last ? $v : {}; $node = $node->[-1] unless $last; next }
                return (undef, $k) unless $seg =~ /^\d+\z/;
                if ($last) { $node->[$seg] = $v } else { $node = $node->[$seg] //= {} }
                next;
            }
            if ($last) { $node->{$seg} = $v; next }
            my $next = $path[$i + 1];
            $node->{$seg} //= ($next eq '' || $next =~ /^\d+\z/) ? [] : {};
            $node = $node->{$seg};
        }
    }
    return (\%root, undef);
}

# Unknown top-level parameters, as Stripe refuses them.
sub unknown {
    my ($p, @allowed) = @_;
    my %ok = map { $_ => 1 } @allowed, 'expand';
    for my $k (sort keys %$p) {
        return error(400, 'invalid_request_error', "Received unknown parameter: $k",
                     param => $k) unless $ok{$k};
    }
    return undef;
}

sub expand {
    my ($o, $p) = @_;
    for my $e (@{ $p->{expand} // [] }) {
        if ($e eq 'invoice_settings.default_payment_method' && $o->{object} eq 'customer') {
            my $pm = $o->{invoice_settings}{default_payment_method};
            $o = { %$o, invoice_settings => { %{ $o->{invoice_settings} },
                                              default_payment_method => $pm ? $obj{$pm} : undef } };
        }
    }
    return $o;
}

# --- the API -------------------------------------------------------------------

sub customer_create {
    my $p = shift;
    my $e = unknown($p, qw(metadata name email description));
    return $e if $e;
    my $c = { id => 'cus_' . rand_str(14), object => 'customer', created => time,
              livemode => JSON::PP::false, metadata => $p->{metadata} // {},
              name => $p->{name}, email => $p->{email}, description => $p->{description},
              invoice_settings => { default_payment_method => undef, custom_fields => undef,
                                    footer => undef, rendering_options => undef },
              balance => 0, currency => undef, delinquent => JSON::PP::false };
    $obj{ $c->{id} } = $c;
    return ok($c);
}

# GET /v1/customers/search?query=metadata['k']:'v' (the one clause the
# service uses; Stripe's query language has more). Unlike Stripe's, this
# index is never behind.
sub customer_search {
    my $p = shift;
    my $e = unknown($p, qw(query limit page));
    return $e if $e;
    my ($k, $v) = ($p->{query} // '') =~ /^\s*metadata\[(['"])(\w+)\1\]\s*:\s*(['"])(.*?)\3\s*\z/
        ? ($2, $4) : ();
    return error(400, 'invalid_request_error', "Invalid query: $p->{query}", param => 'query')
        unless defined $k;
    my @hits = sort { $a->{created} <=> $b->{created} || $a->{id} cmp $b->{id} }
               grep { $_->{object} eq 'customer' && ($_->{metadata}{$k} // '') eq $v } values %obj;
    my $limit = $p->{limit} // 10;
    return ok({ object => 'search_result', url => '/v1/customers/search',
                has_more => @hits > $limit ? JSON::PP::true : JSON::PP::false, next_page => undef,
                data => [ @hits[ 0 .. ($limit < @hits ? $limit : scalar @hits) - 1 ] ] });
}

sub customer_update {
    my ($id, $p) = @_;
    my $c = $obj{$id};
    return missing('customer', $id) unless $c && $c->{object} eq 'customer';
    my $e = unknown($p, qw(metadata name email description invoice_settings));
    return $e if $e;
    if (my $is = $p->{invoice_settings}) {
        for my $k (sort keys %$is) {
            return error(400, 'invalid_request_error',
                         "Received unknown parameter: invoice_settings[$k]",
                         param => "invoice_settings[$k]") unless $k eq 'default_payment_method';
        }
        my $pm = $is->{default_payment_method};
        if (defined $pm && $pm ne '') {
            return missing('PaymentMethod', $pm, 'invoice_settings[default_payment_method]')
                unless $obj{$pm} && $obj{$pm}{object} eq 'payment_method';
            return error(400, 'invalid_request_error', "The customer does not have a payment "
                         . "method with the ID $pm. The payment method must be attached to the "
                         . "customer.", param => 'invoice_settings[default_payment_method]',
                         code => 'resource_missing')
                unless ($obj{$pm}{customer} // '') eq $id;
        }
        $c->{invoice_settings}{default_payment_method} = $pm eq '' ? undef : $pm;
    }
    $c->{metadata} = { %{ $c->{metadata} }, %{ $p->{metadata} } } if ref $p->{metadata};
    return ok(expand($c, $p));
}

sub checkout_create {
    my $p = shift;
    my $e = unknown($p, qw(mode customer client_reference_id line_items success_url cancel_url
                           metadata subscription_data allow_promotion_codes));
    return $e if $e;
    return error(400, 'invalid_request_error', 'Missing required param: mode.', param => 'mode',
                 code => 'parameter_missing') unless defined $p->{mode};
    return error(400, 'invalid_request_error', "Invalid mode: must be one of payment, setup, or "
                 . "subscription", param => 'mode')
        unless $p->{mode} =~ /^(?:payment|setup|subscription)\z/;
    return error(400, 'invalid_request_error', 'Missing required param: success_url.',
                 param => 'success_url', code => 'parameter_missing') unless $p->{success_url};
    for my $u (qw(success_url cancel_url)) {
        next unless defined $p->{$u};
        return error(400, 'invalid_request_error', 'Not a valid URL', param => $u,
                     code => 'url_invalid') unless $p->{$u} =~ m{^https?://[^\s/]+};
    }
    if (defined $p->{customer}) {
        return missing('customer', $p->{customer}, 'customer')
            unless $obj{ $p->{customer} } && $obj{ $p->{customer} }{object} eq 'customer';
    }
    my $items = $p->{line_items};
    return error(400, 'invalid_request_error', 'You must provide at least one recurring price '
                 . 'in `subscription` mode when using prices.', param => 'line_items')
        if $p->{mode} eq 'subscription' && (ref $items ne 'ARRAY' || !@$items);
    for my $i (0 .. $#{ $items // [] }) {
        my $li = $items->[$i];
        return missing('price', $li->{price} // '', "line_items[$i][price]")
            unless ref $li eq 'HASH' && price($li->{price} // '');
        return error(400, 'invalid_request_error', 'Invalid positive integer',
                     param => "line_items[$i][quantity]")
            unless ($li->{quantity} // '1') =~ /^[1-9]\d*\z/;
    }
    my $id = 'cs_test_' . rand_str(58);
    my $s = { id => $id, object => 'checkout.session', mode => $p->{mode},
              customer => $p->{customer}, client_reference_id => $p->{client_reference_id},
              success_url => $p->{success_url}, cancel_url => $p->{cancel_url},
              metadata => $p->{metadata} // {}, status => 'open', payment_status => 'unpaid',
              subscription => undef, created => time, expires_at => time + 86400,
              livemode => JSON::PP::false, currency => 'usd',
              url => "https://checkout.stripe.com/c/pay/$id#fidkdWxOYHwnPyd1blpxYHZxWjA0",
              _items => $items, _subscription_data => $p->{subscription_data} // {} };
    $obj{$id} = $s;
    return ok(public($s));
}

sub portal_create {
    my $p = shift;
    my $e = unknown($p, qw(customer return_url configuration locale));
    return $e if $e;
    return error(400, 'invalid_request_error', 'Missing required param: customer.',
                 param => 'customer', code => 'parameter_missing') unless $p->{customer};
    return missing('customer', $p->{customer}, 'customer')
        unless $obj{ $p->{customer} } && $obj{ $p->{customer} }{object} eq 'customer';
    my $id = 'bps_' . rand_str(24);
    return ok({ id => $id, object => 'billing_portal.session', customer => $p->{customer},
                return_url => $p->{return_url}, created => time, livemode => JSON::PP::false,
                url => 'https://billing.stripe.com/p/session/test_' . rand_str(40) });
}

my %TEST_CARDS = (
    pm_card_visa       => { brand => 'visa', last4 => '4242' },
    pm_card_mastercard => { brand => 'mastercard', last4 => '4444' },
    pm_card_amex       => { brand => 'amex', last4 => '8431' },
);

sub pm_attach {
    my ($id, $p) = @_;
    my $e = unknown($p, qw(customer));
    return $e if $e;
    return error(400, 'invalid_request_error', 'Missing required param: customer.',
                 param => 'customer', code => 'parameter_missing') unless $p->{customer};
    return missing('customer', $p->{customer}, 'customer')
        unless $obj{ $p->{customer} } && $obj{ $p->{customer} }{object} eq 'customer';
    if ($id eq 'pm_card_chargeDeclined') {
        return error(402, 'card_error', 'Your card was declined.', code => 'card_declined',
                     decline_code => 'generic_decline', save => 1);
    }
    my $pm;
    if (my $card = $TEST_CARDS{$id}) {
        # Test mode makes a new payment method from the test token.
        $pm = { id => 'pm_1' . rand_str(23), object => 'payment_method', type => 'card',
                created => time, livemode => JSON::PP::false, customer => undef,
                card => { %$card, exp_month => 12, exp_year => (gmtime)[5] + 1900 + 3,
                          funding => 'credit', country => 'US' },
                billing_details => {}, metadata => {} };
        $obj{ $pm->{id} } = $pm;
    }
    else {
        $pm = $obj{$id};
        return missing('PaymentMethod', $id, 'payment_method')
            unless $pm && $pm->{object} eq 'payment_method';
        return error(400, 'invalid_request_error', 'The payment method you provided has already '
                     . 'been attached to a customer.', code => 'payment_method_unexpected_state')
            if $pm->{customer} && $pm->{customer} ne $p->{customer};
    }
    $pm->{customer} = $p->{customer};
    return ok($pm);
}

sub subscription_update {
    my ($id, $p) = @_;
    my $s = $obj{$id};
    return missing('subscription', $id) unless $s && $s->{object} eq 'subscription';
    my $e = unknown($p, qw(default_payment_method metadata cancel_at_period_end));
    return $e if $e;
    if (defined(my $pm = $p->{default_payment_method})) {
        return missing('PaymentMethod', $pm, 'default_payment_method')
            unless $obj{$pm} && ($obj{$pm}{customer} // '') eq $s->{customer};
        $s->{default_payment_method} = $pm;
    }
    return ok($s);
}

sub invoice_of {
    my ($s, %o) = @_;
    my $item = $s->{items}{data}[0];
    my $amount = $item->{price}{unit_amount} * $item->{quantity};
    return { id => $o{id} // ('in_' . rand_str(24)), object => 'invoice',
             customer => $s->{customer}, currency => $item->{price}{currency},
             amount_due => $amount, amount_paid => $o{paid} ? $amount : 0,
             amount_remaining => $o{paid} ? 0 : $amount,
             status => $o{status} // 'draft', attempt_count => $o{attempts} // 0,
             created => time, livemode => JSON::PP::false,
             period_start => $item->{current_period_start},
             period_end => $item->{current_period_end},
             next_payment_attempt => $o{next_payment_attempt},
             parent => { type => 'subscription_details', quote_details => undef,
                         subscription_details => { subscription => $s->{id},
                                                   metadata => $s->{metadata} } },
             lines => { object => 'list', has_more => JSON::PP::false,
                        data => [ { object => 'line_item', amount => $amount,
                                    currency => $item->{price}{currency}, quantity => 1 } ] } };
}

sub invoice_preview {
    my $p = shift;
    my $e = unknown($p, qw(customer subscription));
    return $e if $e;
    my $s = $p->{subscription} ? $obj{ $p->{subscription} } : undef;
    return missing('subscription', $p->{subscription} // '', 'subscription')
        unless $s && $s->{object} eq 'subscription';
    return error(400, 'invalid_request_error', 'The subscription does not belong to this '
                 . 'customer.', param => 'subscription')
        if $p->{customer} && $p->{customer} ne $s->{customer};
    return error(400, 'invalid_request_error', 'No upcoming invoices for customer: '
                 . $s->{customer}, code => 'invoice_upcoming_none')
        if $s->{status} eq 'canceled';
    my $end = $s->{items}{data}[0]{current_period_end};
    my $inv = invoice_of($s, id => 'upcoming_in_' . rand_str(24), next_payment_attempt => $end + 3600);
    # The preview bills the next period.
    $inv->{period_start} = $end;
    $inv->{period_end} = $end + 30 * 86400;
    return ok($inv);
}

# The object as the API shows it (without the fake's own members).
sub public {
    my $o = shift;
    return { map { $_ => $o->{$_} } grep { !/^_/ } keys %$o };
}

# --- events ---------------------------------------------------------------------

sub event {
    my ($type, $object, %o) = @_;
    my $ev = { id => 'evt_1' . rand_str(23), object => 'event', api_version => $VERSION,
               created => $o{created} // time, type => $type, livemode => JSON::PP::false,
               pending_webhooks => 1, request => { id => undef, idempotency_key => undef },
               data => { object => $object } };
    $ev->{data}{previous_attributes} = $o{previous} if $o{previous};
    $events{ $ev->{id} } = $ev;
    return $ev;
}

# The Stripe-Signature header of a delivery: t=T, one v1 per secret (the
# current one first; a rolled one until it expires), and v0, the scheme of
# test-mode events that receivers must not accept as a signature.
sub signature {
    my ($t, $body, @secrets) = @_;
    return join ',', "t=$t", (map { 'v1=' . Digest::SHA::hmac_sha256_hex("$t.$body", $_) } @secrets),
                     'v0=' . Digest::SHA::hmac_sha256_hex("$t.$body", 'whsec_test_mode_v0');
}

# POST /_control/deliver: the events to the endpoint, one request each, as
# Stripe's webhook delivery makes them.
sub deliver {
    my $d = shift;
    return json_res(400, { error => 'url: an http(s) URL' })
        unless ($d->{url} // '') =~ m{^https?://[^\s/]+/};
    my @evs = @{ $d->{events} // [] };
    for my $id (@{ $d->{ids} // [] }) {
        return json_res(404, { error => "no such event $id" }) unless $events{$id};
        push @evs, $events{$id};
    }
    return json_res(400, { error => 'events or ids: at least one' }) unless @evs;
    my @secrets = @{ $d->{secrets} // [ $ENV{BILLING_WEBHOOK_SECRET} // '' ] };
    return json_res(400, { error => 'secrets: whsec_... each' })
        if grep { !defined || !/^whsec_\w+\z/ } @secrets;
    my $http = HTTP::Tiny->new(timeout => 30, agent => 'Stripe/1.0 (+https://stripe.com/docs/webhooks)',
                               verify_SSL => 0);
    my @out;
    for my $ev (@evs) {
        my $body = JSON::PP->new->utf8->pretty->canonical->encode($ev);
        my $t = $d->{t} // time;
        my $sig = signature($t, $body, @secrets);
        my $r = $http->request(POST => $d->{url}, {
            content => $body,
            headers => { 'Content-Type' => 'application/json; charset=utf-8',
                         'Accept' => '*/*; q=0.5, application/xml',
                         'Cache-Control' => 'no-cache',
                         'Stripe-Signature' => $sig } });
        push @out, { id => $ev->{id}, type => $ev->{type}, status => $r->{status},
                     body => $r->{content}, signature => $sig };
    }
    return json_res(200, { deliveries => \@out });
}

sub complete_checkout {
    my $d = shift;
    my $s = $obj{ $d->{session} // '' };
    return json_res(404, { error => 'no such session' }) unless $s && $s->{object} eq 'checkout.session';
    return json_res(409, { error => 'session completed already' }) if $s->{status} ne 'open';
    my $customer = $s->{customer};
    unless ($customer) {
        my $c = customer_create({})->{body};
        $customer = $c->{id};
    }
    my $now = time;
    my $li = $s->{_items}[0];
    my $sub = { id => 'sub_1' . rand_str(23), object => 'subscription', customer => $customer,
                status => 'active', created => $now, start_date => $now,
                livemode => JSON::PP::false, cancel_at_period_end => JSON::PP::false,
                default_payment_method => undef, latest_invoice => undef,
                metadata => $s->{_subscription_data}{metadata} // {},
                items => { object => 'list', has_more => JSON::PP::false,
                           url => '/v1/subscription_items',
                           data => [ { id => 'si_' . rand_str(14), object => 'subscription_item',
                                       price => price($li->{price}), quantity => $li->{quantity} // 1,
                                       current_period_start => $now,
                                       current_period_end => $now + 30 * 86400 } ] } };
    $sub->{items}{data}[0]{subscription} = $sub->{id};
    $obj{ $sub->{id} } = $sub;
    $s->{status} = 'complete';
    $s->{payment_status} = 'paid';
    $s->{customer} = $customer;
    $s->{subscription} = $sub->{id};
    my $inv = invoice_of($sub, paid => 1, status => 'paid', attempts => 1);
    $sub->{latest_invoice} = $inv->{id};
    return json_res(200, { subscription => $sub->{id}, customer => $customer, events => [
        event('checkout.session.completed', public($s)),
        event('customer.subscription.created', $JSON->decode($JSON->encode($sub))),
        event('invoice.paid', $inv) ] });
}

sub change_subscription {
    my $d = shift;
    my $s = $obj{ $d->{id} // '' };
    return json_res(404, { error => 'no such subscription' }) unless $s && $s->{object} eq 'subscription';
    my %prev;
    if (defined $d->{status}) { $prev{status} = $s->{status}; $s->{status} = $d->{status} }
    if (defined $d->{price}) {
        my $pr = price($d->{price}) or return json_res(400, { error => 'no such price' });
        $prev{items} = $JSON->decode($JSON->encode($s->{items}));
        $s->{items}{data}[0]{price} = $pr;
    }
    my $type = 'customer.subscription.updated';
    if ($d->{delete}) {
        $s->{status} = 'canceled';
        $s->{canceled_at} = $s->{ended_at} = time;
        $type = 'customer.subscription.deleted';
    }
    return json_res(200, { events => [ event($type, $JSON->decode($JSON->encode($s)),
                                             previous => %prev ? \%prev : undef,
                                             created => $d->{created}) ] });
}

sub invoice_event {
    my $d = shift;
    my $s = $obj{ $d->{subscription} // '' };
    return json_res(404, { error => 'no such subscription' }) unless $s && $s->{object} eq 'subscription';
    my $inv = $d->{paid} ? invoice_of($s, paid => 1, status => 'paid', attempts => 1)
                         : invoice_of($s, status => 'open', attempts => 1,
                                      next_payment_attempt => time + 3 * 86400);
    return json_res(200, { events => [ event($d->{paid} ? 'invoice.paid' : 'invoice.payment_failed',
                                             $inv) ] });
}

# --- plumbing -------------------------------------------------------------------

sub json_res {
    my ($code, $data) = @_;
    my $res = HTTP::Response->new($code);
    $res->header('Content-Type' => 'application/json');
    $res->content($JSON->encode($data));
    return $res;
}

sub key_of {
    my $req = shift;
    my $auth = $req->header('Authorization') // '';
    return $1 if $auth =~ /^Bearer\s+(\S+)\z/;
    if ($auth =~ /^Basic\s+(\S+)\z/) {
        my ($u) = split /:/, decode_base64($1), 2;
        return $u;
    }
    return undef;
}

sub masked { my $k = shift // ''; return length $k > 4 ? substr($k, 0, 8) . '****' . substr($k, -4) : '****' }

# The endpoint for a request, or undef.
sub route {
    my ($m, $path) = @_;
    return (\&customer_create) if $m eq 'POST' && $path eq '/v1/customers';
    # (Each id is copied: $1 is another match's by the time the sub runs.)
    if ($m eq 'POST' && $path =~ m{^/v1/customers/([^/]+)\z}) {
        my $id = $1;
        return (sub { customer_update($id, @_) });
    }
    return (\&customer_search) if $m eq 'GET' && $path eq '/v1/customers/search';
    if ($m eq 'GET' && $path =~ m{^/v1/customers/([^/]+)\z}) {
        my $id = $1;
        return (sub {
            my $p = shift;
            my $e = unknown($p);
            return $e if $e;
            my $c = $obj{$id};
            return missing('customer', $id) unless $c && $c->{object} eq 'customer';
            return ok(expand($c, $p));
        });
    }
    return (\&checkout_create) if $m eq 'POST' && $path eq '/v1/checkout/sessions';
    return (\&portal_create) if $m eq 'POST' && $path eq '/v1/billing_portal/sessions';
    if ($m eq 'POST' && $path =~ m{^/v1/payment_methods/([^/]+)/attach\z}) {
        my $id = $1;
        return (sub { pm_attach($id, @_) });
    }
    if ($m eq 'POST' && $path =~ m{^/v1/subscriptions/([^/]+)\z}) {
        my $id = $1;
        return (sub { subscription_update($id, @_) });
    }
    return (\&invoice_preview) if $m eq 'POST' && $path eq '/v1/invoices/create_preview';
    return ();
}

sub hang {
    my ($c, $res, $seconds) = @_;
    my $pid = fork();
    if (defined $pid && $pid == 0) {
        $SIG{TERM} = 'DEFAULT';
        if ($res) {
            Time::HiRes::sleep($seconds);
            $res->header(Connection => 'close');
            $c->send_response($res);
        }
        else {
            sleep($seconds);
        }
        POSIX::_exit(0);
    }
    $hanging{$pid} = 1 if $pid;
    return;
}

sub api {
    my ($c, $req) = @_;
    my $m = $req->method;
    my $uri = $req->uri;
    my $path = $uri->path;
    my $rid = 'req_' . rand_str(14);
    my @pairs = $m eq 'GET' ? $uri->query_form : decode_form($req->content);
    my $version = $req->header('Stripe-Version');
    my $ikey = $req->header('Idempotency-Key');
    my $key = key_of($req);
    my $rec = { method => $m, path => $path, params => { @pairs }, idempotency_key => $ikey,
                version => $version, content_type => $req->header('Content-Type'),
                auth => (defined $key && $key eq ($ENV{BILLING_SECRET_KEY} // '') ? 'ok'
                         : defined $key ? 'wrong' : 'none') };
    push @{ $st{requests} }, $rec;
    shift @{ $st{requests} } while @{ $st{requests} } > 200;
    my $reply = sub {
        my ($r) = @_;
        $rec->{status} = $r->{status};
        return answer($r->{status}, with_log_url($r->{body}, $rid), $rid);
    };

    # The switches first: an outage is an outage whoever asks.
    my $mode = $st{mode};
    my $active = $mode ne 'ok' && (!defined $st{path} || $path =~ $st{path});
    if ($active) {
        if (defined $st{times} && --$st{times} <= 0) {
            $st{mode} = 'ok';
            $st{times} = undef;
        }
        if ($mode eq 'timeout') { $rec->{status} = 0; hang($c, undef, $st{hang_seconds}); return undef }
        if ($mode eq 'unavailable') {
            return $reply->(error(503, 'api_error', 'The service is temporarily unavailable.'));
        }
        if ($mode eq 'rate_limited') {
            return $reply->(error(429, 'invalid_request_error', 'Too many requests hit the API '
                                  . 'too quickly.', code => 'rate_limit'));
        }
        if ($mode eq 'garbage') {
            my $res = HTTP::Response->new(200);
            $res->header('Content-Type' => 'application/json');
            $res->header('Request-Id' => $rid);
            $res->content('<html>upstream connect error</html>');
            $rec->{status} = 200;
            return $res;
        }
    }
    unless (defined $key && $key eq ($ENV{BILLING_SECRET_KEY} // "\0")) {
        return $reply->(error(401, 'invalid_request_error', defined $key
                              ? 'Invalid API Key provided: ' . masked($key)
                              : 'You did not provide an API key. You need to provide your API '
                                . 'key in the Authorization header, using Bearer auth (e.g. '
                                . "'Authorization: Bearer YOUR_SECRET_KEY')."));
    }
    if (defined $version && !$VERSIONS{$version}) {
        return $reply->(error(400, 'invalid_request_error', "Invalid Stripe API version: $version",
                              param => 'Stripe-Version'));
    }
    if ($m eq 'POST' && ($req->header('Content-Type') // '') !~ m{^application/x-www-form-urlencoded}i
        && length($req->content // '')) {
        return $reply->(error(400, 'invalid_request_error', 'Invalid request: the body must be '
                              . 'application/x-www-form-urlencoded.'));
    }
    my ($handler) = route($m, $path);
    return $reply->(error(404, 'invalid_request_error', "Unrecognized request URL ($m: $path). "
                          . 'Please see https://stripe.com/docs or we can help at '
                          . 'https://support.stripe.com/.')) unless $handler;
    my ($p, $bad) = nest(@pairs);
    return $reply->(error(400, 'invalid_request_error', "Invalid parameter name: $bad",
                          param => $bad)) unless $p;

    # The idempotency layer.
    my $fingerprint = $JSON->encode([ $m, $path, [ sort { $a->[0] cmp $b->[0] || $a->[1] cmp $b->[1] }
                                                   map { [ $pairs[2 * $_], $pairs[2 * $_ + 1] ] }
                                                   0 .. $#pairs / 2 ] ]);
    if ($m eq 'POST' && defined $ikey) {
        return $reply->(error(400, 'invalid_request_error', 'Invalid Idempotency-Key: keys can '
                              . 'be at most 255 characters long.'))
            if length $ikey > 255 || $ikey eq '';
        if (my $saved = $st{idem}{$ikey}) {
            if ($saved->{fingerprint} ne $fingerprint) {
                return $reply->(error(400, 'idempotency_error', 'Keys for idempotent requests can '
                                      . 'only be used with the same parameters they were first '
                                      . "used with. Try using a key other than '$ikey' if you "
                                      . 'meant to execute a different request.'));
            }
            $rec->{replayed} = 1;
            $rec->{status} = $saved->{status};
            my $res = answer($saved->{status}, $saved->{body}, $rid);
            $res->header('Idempotent-Replayed' => 'true');
            $res->header('Original-Request' => $saved->{request_id});
            return $res;
        }
    }
    my $r;
    if ($active && $mode eq 'server_error') {
        # Inside the endpoint: the idempotency layer keeps this 500.
        $r = error(500, 'api_error', 'An unknown error occurred', save => 1);
    }
    else {
        $r = $handler->($p);
        $r->{body} = public($r->{body}) if $r->{status} == 200;
    }
    if ($m eq 'POST' && defined $ikey && $r->{save}) {
        $st{idem}{$ikey} = { fingerprint => $fingerprint, status => $r->{status},
                             body => $r->{body}, request_id => $rid };
    }
    my $res = $reply->($r);
    if ($active && $mode eq 'slow') {
        hang($c, $res, $st{delay_ms} / 1000);
        return undef;
    }
    return $res;
}

sub control {
    my ($req) = @_;
    my $path = $req->uri->path;
    my $d = {};
    if ($req->method eq 'POST') {
        $d = eval { $JSON->decode($req->content || '{}') };
        return json_res(400, { error => "bad JSON: $@" }) unless ref $d eq 'HASH';
    }
    return complete_checkout($d) if $path eq '/_control/complete_checkout';
    return change_subscription($d) if $path eq '/_control/subscription';
    return invoice_event($d) if $path eq '/_control/invoice';
    return deliver($d) if $path eq '/_control/deliver';
    if ($path eq '/_control/reset') {
        reset_state(1);
    }
    elsif ($req->method eq 'POST') {
        for my $k (sort keys %$d) {
            return json_res(400, { error => "unknown control field $k" })
                unless $k =~ /^(?:mode|times|path|delay_ms|hang_seconds|prices)\z/;
        }
        if (defined $d->{mode}) {
            return json_res(400, { error => "unknown mode $d->{mode}" })
                unless $d->{mode} =~ /^(?:ok|server_error|unavailable|rate_limited|slow|timeout|garbage)\z/;
            $st{mode} = $d->{mode};
        }
        $st{times} = $d->{times} if exists $d->{times};
        $st{path} = defined $d->{path} ? qr/$d->{path}/ : undef if exists $d->{path};
        $st{delay_ms} = $d->{delay_ms} if defined $d->{delay_ms};
        $st{hang_seconds} = $d->{hang_seconds} if defined $d->{hang_seconds};
        $st{prices}{$_} //= 1000 for @{ $d->{prices} // [] };
    }
    my (%customers, %subs, %sessions);
    for my $o (values %obj) {
        $customers{ $o->{id} } = $o if $o->{object} eq 'customer';
        $subs{ $o->{id} } = $o if $o->{object} eq 'subscription';
        $sessions{ $o->{id} } = public($o) if $o->{object} eq 'checkout.session';
    }
    return json_res(200, { mode => $st{mode}, requests => $st{requests}, customers => \%customers,
                           subscriptions => \%subs, sessions => \%sessions,
                           prices => [ sort keys %{ $st{prices} } ] });
}

sub handle {
    my ($c, $req) = @_;
    my $path = $req->uri->path;
    return control($req) if $path =~ m{^/_control(?:/[a-z_]+)?\z};
    return api($c, $req) if $path =~ m{^/v1/};
    return json_res(404, { error => { type => 'invalid_request_error',
                                      message => 'Unrecognized request URL' } });
}

sub main {
    my @args = @_ ? @_ : @ARGV;
    my ($port_file, $prices);
    while (@args) {
        my $a = shift @args;
        if ($a eq '--port-file') { $port_file = shift @args }
        elsif ($a eq '--prices') { $prices = shift @args }
    }
    die "usage: FakeStripe::main --port-file FILE [--prices price_a:AMOUNT,...]\n" unless $port_file;
    reset_state();
    for (split /,/, $prices // '') {
        my ($id, $amount) = split /:/;
        $st{prices}{$id} = $amount // 1000;
    }
    $SIG{CHLD} = 'IGNORE';
    $SIG{PIPE} = 'IGNORE';
    $SIG{TERM} = sub { kill 'TERM', keys %hanging; POSIX::_exit(0) };
    my $d = HTTP::Daemon->new(LocalAddr => '127.0.0.1', LocalPort => 0, Listen => 64,
                              ReuseAddr => 1)
        or die "FakeStripe: cannot listen: $!\n";
    open my $fh, '>', "$port_file.tmp" or die "FakeStripe: $port_file: $!\n";
    print $fh $d->sockport, "\n";
    close $fh;
    rename "$port_file.tmp", $port_file or die "FakeStripe: $port_file: $!\n";
    while (1) {
        my $c = $d->accept or next;
        $c->timeout(10);
        my $req = $c->get_request;
        if ($req) {
            my $res = eval { handle($c, $req) };
            if ($@) {
                $res = HTTP::Response->new(500, 'Internal Server Error', undef, "fake: $@");
            }
            if ($res) {
                $res->header(Connection => 'close');
                $c->force_last_request;
                $c->send_response($res);
            }
        }
        $c->close;
    }
}

1;
