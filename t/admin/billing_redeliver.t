# Redelivery of the payment provider's events (issue 24): an event whose
# processing failed is kept, as failed, with its attempts and last error;
# an operator processes it again (POST
# /api/admin/billing/events/:eventId/redeliver), as does the provider's own
# retry of the same event id. The failure is a real one: the org's billing
# account is held locked by another transaction for longer than the
# statement timeout of the server the event reaches (the readback virtual
# host: SvcStatementTimeout 1500), as t/admin/redeliver.t does for the
# code-hosting provider's deliveries.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

plan skip_all => 'the fake payment provider is not running (use tools/test.sh)'
    unless $ENV{BILLING_API_URL} && $ENV{BILLING_WEBHOOK_SECRET};

my $founder = new_user('bredeliver-founder', founder => 1);
my $ftok    = new_token($founder, scope => 'admin');
my $owner   = new_user('bredeliver-owner');
my $org     = new_org($owner, prefix => 'brd');
my $org_id  = org_id_of($org);
my $tok     = new_token($owner, scope => 'admin');
my $base    = base_url();
my $short   = vcs_base('readback');

sub plan_of {
    my (undef, $b) = api(GET => "/api/orgs/$org/billing", token => $tok);
    return ($b->{plan} // {})->{id} // 'none';
}
sub event_of {
    my $id = shift;
    my (undef, $p) = api(GET => '/api/admin/billing/events?limit=200', token => $ftok);
    my ($x) = grep { $_->{event_id} eq $id } @{ $p->{data} // [] };
    return $x;
}
sub audits { return psql_value("SELECT count(*) FROM audit_log WHERE org_id = '$org_id'"
                               . " AND action = '$_[0]'") }

# The events delivered to the readback host while the org's account is
# locked: their processing fails.
sub failing_delivery {
    my ($events) = @_;
    my $h = lock_hold("SELECT 1 FROM billing_accounts WHERE org_id = '$org_id' FOR UPDATE", 1000);
    my $mark = expect_errors_begin();
    my $d = stripe_deliver(events => $events, base => $short);
    psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
         . " WHERE application_name LIKE 'svc\\_test\\_lock\\_%' AND pid <> pg_backend_pid()");
    waitpid($h, 0);
    expect_errors_end($mark);
    return $d;
}

# --- the org subscribes (its events processed at once) --------------------------------------------
my ($st, $co) = api(POST => "/api/orgs/$org/billing/checkout", token => $tok,
                    json => { plan => 'team', success_url => "$base/ok", cancel_url => "$base/no" });
is($st, 201, 'a checkout for the team plan');
my $paid = stripe_do('complete_checkout', { session => $co->{id} });
my $d = stripe_deliver(events => $paid->{events});
is_deeply([ map { $_->{status} } @$d ], [ 200, 200, 200 ], 'its events are processed');
is(plan_of(), 'team', '... the org is on the team plan');
my $first = event_of($d->[0]{id});
is($first->{status}, 'processed', 'an event processed at once is listed processed');
is($first->{attempts}, 1, '... after one attempt');
ok(!defined $first->{last_error}, '... with no error');

# --- an operator's redelivery ----------------------------------------------------------------------
my $ev = stripe_do('subscription', { id => $paid->{subscription}, price => 'price_business' });
my $r = failing_delivery($ev->{events});
my $id = $r->[0]{id};
cmp_ok($r->[0]{status}, '>=', 500, "a plan change's processing fails: $r->[0]{status}");
is(plan_of(), 'team', '... nothing of it applied');
my $x = event_of($id);
ok($x, 'the event is kept all the same');
is($x && $x->{status}, 'failed', '... as failed');
is($x && $x->{attempts}, 1, '... after one attempt');
like($x && $x->{last_error} // '', qr/timeout/, '... with why, in the database\'s words');
my (undef, $detail) = api(GET => "/api/admin/billing/events/$id", token => $ftok);
is($detail->{payload}{id}, $id, '... with its payload');

my ($nst) = api(POST => "/api/admin/billing/events/$id/redeliver", token => $tok);
is($nst, 404, 'an org owner who is no founder: 404');
is(plan_of(), 'team', '... and nothing happened');

my $p;
($st, $p) = api(POST => "/api/admin/billing/events/$id/redeliver", token => $ftok);
is($st, 200, 'the founder redelivers it');
is($p->{status}, 'processed', '... processed');
is($p->{attempts}, 2, '... as a second attempt');
ok(!defined $p->{last_error}, '... without an error now');
is($p->{org_id}, $org_id, '... about the org');
is(plan_of(), 'business', '... and it is applied: the org is on the business plan');
is(audits('billing.subscription.updated'), 2, '... audited in the org\'s log, as any change');
is(event_of($id)->{status}, 'processed', 'the list says so');
($st, $p) = api(POST => "/api/admin/billing/events/$id/redeliver", token => $ftok);
is($st, 409, 'a processed event is not redelivered: 409');
is($p->{code}, 'invalid_status', '... invalid_status');
($st, $p) = api(POST => '/api/admin/billing/events/evt_nosuchevent/redeliver', token => $ftok);
is($st, 404, 'an unknown event: 404');
($st, $p) = api(POST => '/api/admin/billing/events/not%20an%20id/redeliver', token => $ftok);
is($st, 404, 'a malformed id: 404');
($st, $p) = api(GET => '/api/admin/audit', token => $ftok);
my ($a) = grep { ($_->{target_id} // '') eq $id } @{ $p->{data} };
is($a && $a->{action}, 'billing_event.redelivered', 'in the platform audit log');

# --- a redelivery that fails again ---------------------------------------------------------------
my $ev2 = stripe_do('invoice', { subscription => $paid->{subscription}, paid => 0 });
my $r2 = failing_delivery($ev2->{events});
my $id2 = $r2->[0]{id};
cmp_ok($r2->[0]{status}, '>=', 500, 'a failed invoice\'s processing fails too');
{
    my $h = lock_hold("SELECT 1 FROM billing_accounts WHERE org_id = '$org_id' FOR UPDATE", 1000);
    my $mark = expect_errors_begin();
    ($st) = api(POST => "/api/admin/billing/events/$id2/redeliver", token => $ftok, base => $short);
    psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
         . " WHERE application_name LIKE 'svc\\_test\\_lock\\_%' AND pid <> pg_backend_pid()");
    waitpid($h, 0);
    expect_errors_end($mark);
}
cmp_ok($st, '>=', 500, "redelivered while the account is still locked: it fails again ($st)");
my $y = event_of($id2);
is($y->{status}, 'failed', '... still failed');
is($y->{attempts}, 2, '... after two attempts');
like($y->{last_error} // '', qr/timeout/, '... with why');
is(billing_status(), 'active', '... and the org is untouched');

# --- the provider's own retry ------------------------------------------------------------------------
my $again = stripe_deliver(ids => [ $id2 ]);
is($again->[0]{status}, 200, 'the provider retries it: 200, processed this time');
is(billing_status(), 'past_due', '... applied: the org is past due');
is(event_of($id2)->{attempts}, 3, '... its third attempt');
is(event_of($id2)->{status}, 'processed', '... processed');
$again = stripe_deliver(ids => [ $id2 ]);
like($again->[0]{body}, qr/"duplicate"/, 'and once more: a duplicate, as before');
is(event_of($id2)->{attempts}, 3, '... no new attempt');

sub billing_status {
    my (undef, $b) = api(GET => "/api/orgs/$org/billing", token => $tok);
    return $b->{status};
}

done_testing();
