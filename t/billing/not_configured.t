# Without the payment provider's secret key (issue 23): httpd starts, says
# so once (SVC0700 billing_not_configured, naming the variable, never a
# value), the payment routes and the webhook answer 503
# billing_not_configured, and plans, billing, usage and the budget answer
# as usual.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $off = vhost_url('billing_off');
my $owner = new_user('off-owner');
my $org = new_org($owner, prefix => 'off');
my $tok = new_token($owner, scope => 'admin');

for my $r ([ POST => 'billing/checkout', { plan => 'team', success_url => "$off/a",
                                            cancel_url => "$off/b" } ],
           [ POST => 'billing/portal', { return_url => "$off/a" } ],
           [ GET => 'billing/payment-method' ],
           [ PUT => 'billing/payment-method', { payment_method => 'pm_card_visa' } ]) {
    my ($m, $path, $body) = @$r;
    my ($st, $p) = api($m => "/api/orgs/$org/$path", token => $tok, base => $off,
                       $body ? (json => $body) : ());
    is($st, 503, "$m $path without the key: 503");
    is($p->{code}, 'billing_not_configured', '... billing_not_configured');
    like($p->{detail}, qr/BILLING_SECRET_KEY/, '... saying what is missing');
}
is(psql_value("SELECT count(*) FROM billing_accounts WHERE org_id = '" . org_id_of($org) . "'"), 0,
   'nothing was written');

my ($st, $p) = billing_deliver({ id => 'evt_off1', type => 'invoice.paid', created => time,
                                 data => { object => {} } }, base => $off);
is($st, 503, 'the webhook without its secret: 503');
is($p->{code}, 'billing_not_configured', '... billing_not_configured');

for my $path ('billing/plans', 'billing', 'usage', 'usage?group_by=kind', 'billing/budget') {
    my ($s, $d) = api(GET => "/api/orgs/$org/$path", token => $tok, base => $off);
    is($s, 200, "GET $path still answers");
}
my ($s, $b) = api(GET => "/api/orgs/$org/billing", token => $tok, base => $off);
is($b->{status}, 'none', 'the billing says none');
($s, my $u) = api(GET => "/api/orgs/$org/usage", token => $tok, base => $off);
is(ref $u->{data}, 'ARRAY', 'the usage is a list');

my $log = do { local (@ARGV, $/) = error_log_path(); <> };
my @lines = $log =~ /^(.*SVC0700: billing_not_configured.*)$/mg;
is(scalar @lines, 1, 'the start-up log says so once (the one server without the key)')
    or diag(join "\n", @lines);
like($lines[0] // '', qr/payments are off: missing SVC_TEST_UNSET_BILLING_SECRET_KEY \(SvcBillingSecretKey\)/,
     '... naming the variable');
unlike($log, qr/\Q$ENV{BILLING_SECRET_KEY}\E/, '... never a value');
my @hook = $log =~ /^(.*SVC0702:.*)$/mg;
is(scalar @hook, 0, 'the webhook line is not repeated where payments are off already');

done_testing();
