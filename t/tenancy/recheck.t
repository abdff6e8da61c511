# Authorization is checked again under the org's lock before a change is
# written: a caller demoted while their request was on its way is refused,
# even though they passed authorization with the old role. The demotion is
# made, uncommitted, by a session that holds the org's row lock; it commits
# only once the request waits on that lock (SvcTest::lock_hold).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $owner = new_user('recheck-owner');
my $org = new_org($owner, prefix => 'recheck');
my $oid = org_id_of($org);
my $otok = new_token($owner, scope => 'admin');

# --- a project maintainer demoted to viewer in the team ---------------------------
{
    my $m = new_user('recheck-maint');
    svcctl('org', 'add-member', $org, $m, '--role', 'member');
    my $mid = user_id_of($m);
    my $mtok = new_token($m, scope => 'admin');
    my ($st, $p) = api(POST => "/api/orgs/$org/projects", token => $otok,
                       json => { slug => 'recheck-p', name => 'Before' });
    is($st, 201, 'a project');
    my $pid = $p->{id};
    ($st) = api(POST => "/api/orgs/$org/projects/recheck-p/team", token => $otok,
                json => { user_id => $mid, role => 'maintainer' });
    is($st, 201, 'the member maintains it');

    my $h = lock_hold("SELECT 1 FROM orgs WHERE id = '$oid' FOR UPDATE; "
                      . "UPDATE project_members SET role = 'viewer' "
                      . "WHERE project_id = '$pid' AND user_id = '$mid'", 1);
    my ($s, $pp) = api(PATCH => "/api/orgs/$org/projects/recheck-p", token => $mtok,
                       json => { name => 'After' });
    lock_release($h);
    is($s, 403, 'demoted while the request waited: 403');
    is($pp->{code}, 'forbidden', '... forbidden');
    is(psql_value("SELECT name FROM projects WHERE id = '$pid'"), 'Before',
       '... and the project is unchanged');
}

# --- an org admin demoted to member ---------------------------------------------------
{
    my $a = new_user('recheck-admin');
    svcctl('org', 'add-member', $org, $a, '--role', 'admin');
    my $aid = user_id_of($a);
    my $atok = new_token($a, scope => 'admin');
    my $name = psql_value("SELECT name FROM orgs WHERE id = '$oid'");

    my $h = lock_hold("SELECT 1 FROM orgs WHERE id = '$oid' FOR UPDATE; "
                      . "UPDATE org_members SET role = 'member' "
                      . "WHERE org_id = '$oid' AND user_id = '$aid'", 1);
    my ($s) = api(PATCH => "/api/orgs/$org", token => $atok, json => { name => 'Renamed' });
    lock_release($h);
    is($s, 403, 'an admin demoted while renaming: 403');
    is(psql_value("SELECT name FROM orgs WHERE id = '$oid'"), $name, '... the name is unchanged');

    my $invitee = SvcTest::uniq('recheck-inv') . '@example.test';
    svcctl('org', 'add-member', $org, new_user('recheck-other'), '--role', 'viewer');
    psql("UPDATE org_members SET role = 'admin' WHERE org_id = '$oid' AND user_id = '$aid'");
    $h = lock_hold("SELECT 1 FROM orgs WHERE id = '$oid' FOR UPDATE; "
                   . "UPDATE org_members SET role = 'member' "
                   . "WHERE org_id = '$oid' AND user_id = '$aid'", 1);
    ($s) = api(POST => "/api/orgs/$org/members", token => $atok,
               json => { email => $invitee, role => 'member' });
    lock_release($h);
    is($s, 403, 'an admin demoted while inviting: 403');
    is(psql_value("SELECT count(*) FROM invites WHERE lower(email) = lower('$invitee')"), 0,
       '... no invite was made');
}

done_testing();
