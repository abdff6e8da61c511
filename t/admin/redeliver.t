# Redelivery (issue 24): a code-hosting delivery whose processing failed is
# kept, as failed, with its attempts and last error, and an operator
# processes it again (POST /api/admin/vcs/deliveries/:id/redeliver), as does
# the provider's own redelivery of the same delivery id. The failure here
# is a real one: the installation's row is held locked by another
# transaction for longer than the statement timeout of the server the
# delivery reaches (the readback virtual host: SvcStatementTimeout 1500).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

plan skip_all => 'the fake code-hosting provider is not running (use tools/test.sh)'
    unless $ENV{VCS_WEB_URL} && $ENV{VCS_APP_WEBHOOK_SECRET};

my $founder = new_user('redeliver-founder', founder => 1);
my $ftok    = new_token($founder, scope => 'admin');
my $owner   = new_user('redeliver-owner');
my $org     = new_org($owner);
my $short   = vcs_base('readback');

sub status_of {
    my $id = shift;
    return join ' ', map { $_ // 'null' } @{ (psql('SELECT status, deleted_at IS NOT NULL'
        . " FROM vcs_installations WHERE installation_id = $id"))[0] // [] };
}

sub delivery {
    my $d = shift;
    my (undef, $p) = api(GET => '/api/admin/vcs/deliveries?limit=200', token => $ftok);
    my ($x) = grep { $_->{delivery_id} eq $d } @{ $p->{data} // [] };
    return $x;
}

# A delivery about installation $id, sent while its row is locked: it fails.
sub failing_delivery {
    my ($id, $inst, %opt) = @_;
    my $h = lock_hold("SELECT 1 FROM vcs_installations WHERE installation_id = $id FOR UPDATE",
                      1000);
    my $mark = expect_errors_begin();
    my @r = vcs_webhook('installation', { action => 'suspend', installation => $inst },
                        base => $short, %opt);
    # The holder sleeps in the server: its backend is ended there (a client
    # that goes away is noticed only when the backend next talks to it).
    psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
         . " WHERE application_name LIKE 'svc\\_test\\_lock\\_%' AND pid <> pg_backend_pid()");
    waitpid($h, 0);
    expect_errors_end($mark);
    return @r;
}

my $i = vcs_record_installation($org, vcs_installation());
my $id = $i->{id};
my $inst = { id => $id, account => { login => $i->{login}, type => 'Organization' },
             repository_selection => 'selected' };

# --- an operator's redelivery ----------------------------------------------------------------
my ($st, $p, undef, $d) = failing_delivery($id, $inst);
cmp_ok($st, '>=', 500, "the delivery's processing fails: $st");
is(status_of($id), 'active f', '... nothing of it applied');
my $x = delivery($d);
ok($x, 'the delivery is kept all the same');
is($x->{status}, 'failed', '... as failed');
is($x->{attempts}, 1, '... after one attempt');
like($x->{last_error} // '', qr/timeout/, '... with why, in the database\'s words');

my ($nst, $np) = api(POST => "/api/admin/vcs/deliveries/$d/redeliver",
                     token => new_token($owner, scope => 'admin'));
is($nst, 404, 'an org owner who is no founder: 404');
is(status_of($id), 'active f', '... and nothing happened');

($st, $p) = api(POST => "/api/admin/vcs/deliveries/$d/redeliver", token => $ftok);
is($st, 200, 'the founder redelivers it');
is($p->{status}, 'processed', '... processed');
is($p->{attempts}, 2, '... as a second attempt');
ok(!defined $p->{last_error}, '... without an error now');
is(status_of($id), 'suspended f', '... and it is applied: the record is suspended');
is(delivery($d)->{status}, 'processed', 'the list says so');
($st, $p) = api(POST => "/api/admin/vcs/deliveries/$d/redeliver", token => $ftok);
is($st, 409, 'a processed delivery is not redelivered: 409');
is($p->{code}, 'invalid_status', '... invalid_status');
($st, $p) = api(POST => '/api/admin/vcs/deliveries/' . vcs_uuid() . '/redeliver', token => $ftok);
is($st, 404, 'an unknown delivery: 404');
($st, $p) = api(GET => '/api/admin/audit', token => $ftok);
my ($a) = grep { $_->{target_id} eq $d } @{ $p->{data} };
is($a && $a->{action}, 'vcs_delivery.redelivered', 'in the platform audit log');

# --- the provider's own redelivery -------------------------------------------------------------
my $j = vcs_record_installation($org, vcs_installation());
my $inst2 = { id => $j->{id}, account => { login => $j->{login}, type => 'Organization' },
              repository_selection => 'selected' };
my ($st2, undef, undef, $d2) = failing_delivery($j->{id}, $inst2);
cmp_ok($st2, '>=', 500, 'another delivery fails');
is(delivery($d2)->{status}, 'failed', '... kept as failed');
($st2) = vcs_webhook('installation', { action => 'suspend', installation => $inst2 },
                     delivery => $d2);
is($st2, 202, 'the provider sends it again: accepted, processed this time');
is(status_of($j->{id}), 'suspended f', '... applied');
is(delivery($d2)->{attempts}, 2, '... its second attempt');
($st2, $p) = vcs_webhook('installation', { action => 'suspend', installation => $inst2 },
                         delivery => $d2);
is($st2, 200, 'and once more: a duplicate, as before');
is($p->{status}, 'duplicate', '... duplicate');
is(delivery($d2)->{attempts}, 2, '... no new attempt');

done_testing();
