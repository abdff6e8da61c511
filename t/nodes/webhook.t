# Two nodes, one record of deliveries (issue 25): the provider sends one
# delivery to both nodes at once (a retry racing the original through the
# load balancer): one node applies it (202), the other answers duplicate
# (200), and its effect happens once. Also: a delivery applied through node
# A is a duplicate on node B afterwards.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;
use SvcNode;

plan skip_all => 'the fake code-hosting provider is not running (use tools/test.sh)'
    unless $ENV{VCS_WEB_URL} && $ENV{VCS_APP_WEBHOOK_SECRET};

my $owner = new_user('nodes-wh');
my $org = new_org($owner);
my $oid = org_id_of($org);

sub stored {
    my $id = shift;
    return psql_value('SELECT count(*) FROM vcs_webhook_deliveries WHERE delivery_id = '
                      . sql_quote($id));
}

sub event_kinds {
    my $id = shift;
    return join ' ', map { $_->[0] } psql("SELECT data->>'status' FROM events WHERE org_id = "
        . sql_quote($oid) . " AND kind = 'vcs.installation' AND (data->>'installation_id')::bigint = $id"
        . ' ORDER BY id');
}

my $b = SvcNode->start(name => 'b');

# --- one delivery to both nodes at once ----------------------------------------------------
{
    my $i = vcs_record_installation($org, vcs_installation());
    my $payload = { action => 'suspend', installation => { id => $i->{id} } };
    my $d = vcs_uuid();
    # The first copy waits on the installation's row while the other waits
    # on its delivery id: both are in flight at once, one on each node.
    my $h = lock_hold("SELECT 1 FROM vcs_installations WHERE installation_id = $i->{id} FOR UPDATE", 2);
    my $burl = $b->url;
    my @r = race(sub { (vcs_webhook('installation', $payload, delivery => $d))[0] },
                 sub { (vcs_webhook('installation', $payload, delivery => $d, base => $burl))[0] });
    lock_release($h);
    my @codes = sort map { $_->[0] } @r;
    is(join(' ', @codes), '200 202', 'one delivery sent to both nodes at once: one 202, one 200')
        or diag(explain(\@r));
    is(stored($d), 1, '... recorded once');
    is(event_kinds($i->{id}), 'suspended', '... applied once');
    is(psql_value("SELECT status FROM vcs_installations WHERE installation_id = $i->{id}"),
       'suspended', '... the installation is suspended');
}

# --- applied on A, a duplicate on B ---------------------------------------------------------
{
    my $i = vcs_record_installation($org, vcs_installation());
    my $payload = { action => 'suspend', installation => { id => $i->{id} } };
    my ($st, $p, undef, $d) = vcs_webhook('installation', $payload);
    is($st, 202, 'a delivery applied through node A: 202');
    my ($st2, $p2) = vcs_webhook('installation', $payload, delivery => $d, base => $b->url);
    is($st2, 200, 'its redelivery through node B: 200');
    is($p2 && $p2->{status}, 'duplicate', '... duplicate');
    is(stored($d), 1, '... recorded once');
    is(event_kinds($i->{id}), 'suspended', '... applied once');
}

$b->stop;

done_testing();
