# Races between changes that build on a membership and the removal of that
# membership: whatever the interleaving, no 5xx (the lock order is fixed:
# row locks first, the audit chain's lock last), and nothing is left that
# the removal should have taken with it.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $ROUNDS = 6;

for my $round (1 .. $ROUNDS) {
    my $owner = new_user('races-owner');
    my $org = new_org($owner, prefix => 'races');
    my $member = new_user('races-member');
    svcctl('org', 'add-member', $org, $member, '--role', 'member');
    my $mtok = new_token($member, scope => 'admin', org => $org);
    my $otok = new_token($owner, scope => 'admin');
    my $mid = user_id_of($member);
    my $slug = SvcTest::uniq('p');

    my @res = race(
        sub {
            my ($st, $p) = api(POST => "/api/orgs/$org/projects", token => $mtok,
                               json => { slug => $slug, name => 'Racing' });
            return ($st, $p->{code}, 'create project');
        },
        sub {
            my ($st, $p) = api(POST => '/api/me/tokens', token => $mtok,
                               json => { name => 'racing', scope => 'read', org => $org });
            record_secret($p->{token}) if ref $p eq 'HASH' && $p->{token};
            return ($st, $p->{code}, 'create bound token');
        },
        sub {
            my ($st, $p) = api(DELETE => "/api/orgs/$org/members/$mid", token => $otok);
            return ($st, $p ? $p->{code} : '', 'remove member');
        },
    );
    my @server_errors = grep { $_->[0] >= 500 } @res;
    is(scalar(@server_errors), 0, "round $round: no 5xx")
        or diag(explain(\@res));
    is(psql_value("SELECT count(*) FROM org_members m JOIN orgs o ON o.id = m.org_id "
                  . "WHERE o.slug = '$org' AND m.user_id = '$mid'"), 0,
       "round $round: the member is gone");
    is(psql_value("SELECT count(*) FROM api_tokens t JOIN orgs o ON o.id = t.org_id "
                  . "WHERE o.slug = '$org' AND t.user_id = '$mid' AND t.revoked_at IS NULL"), 0,
       "round $round: no live token of the removed member is bound to the org");
    is(psql_value("SELECT count(*) FROM project_members pm JOIN orgs o ON o.id = pm.org_id "
                  . "WHERE o.slug = '$org' AND pm.user_id = '$mid'"), 0,
       "round $round: and no team keeps them");
}

done_testing();
