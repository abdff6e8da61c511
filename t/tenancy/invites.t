# Invites to an org and to a project's team: the whole lifecycle, from both
# sides, including expiry, revocation, someone else's invite and the
# org viewer's cap.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $owner = new_user('inv-owner');
my $admin = new_user('inv-admin');
my $org   = new_org($owner, prefix => 'inv');
svcctl('org', 'add-member', $org, $admin, '--role', 'admin');
my $t_owner = new_token($owner, scope => 'admin');
my $t_admin = new_token($admin, scope => 'admin');
my $org_id  = org_id_of($org);

# The invitee exists as a user, with an address in another case.
my $invitee = new_user('inv-invitee');
my $t_inv   = new_token($invitee, scope => 'write');
my $t_inv_r = new_token($invitee, scope => 'read');
my $other   = new_user('inv-other');
my $t_other = new_token($other, scope => 'admin');

sub my_invites {
    my $tok = shift;
    my ($st, $p) = api(GET => '/api/me/invites', token => $tok);
    die "my invites: $st\n" unless $st == 200;
    return @{ $p->{data} };
}

# --- invite, list, accept --------------------------------------------------
my ($st, $inv, $res) = api(POST => "/api/orgs/$org/members", token => $t_admin,
                           json => { email => uc $invitee, role => 'member' });
is($st, 201, 'an admin invites by email');
like($inv->{id}, qr/^inv_[A-Za-z0-9]{16,}$/, '... an inv_ id');
is($inv->{status}, 'pending', '... pending');
is($inv->{role}, 'member', '... with the role');
is($inv->{kind}, 'org', '... to the org');
is($inv->{invited_by}{id}, user_id_of($admin), '... by the admin');
my $days = psql_value("SELECT round(extract(epoch FROM expires_at - created_at) / 86400) "
                      . "FROM invites WHERE id = '$inv->{id}'");
is($days, 14, '... expiring in 14 days (SvcInviteLifetime default)');
my ($audit) = psql("SELECT action, actor_user_id, request_id, data->>'email' FROM audit_log "
                   . "WHERE target_id = '$inv->{id}'");
is_deeply($audit, [ 'invite.created', user_id_of($admin), $res->header('X-Request-Id'),
                    uc $invitee ], '... audit-logged');

($st, my $p) = api(POST => "/api/orgs/$org/members", token => $t_owner,
                   json => { email => $invitee, role => 'admin' });
is($st, 409, 'a second pending invite of the same address: 409');
is($p->{code}, 'invite_pending', '... invite_pending');

($st, $p) = api(GET => "/api/orgs/$org/invites", token => $t_owner);
is_deeply([ map { $_->{id} } @{ $p->{data} } ], [ $inv->{id} ], 'the org lists it as pending');

my @mine = my_invites($t_inv_r);
is_deeply([ map { $_->{id} } @mine ], [ $inv->{id} ],
          'the invitee sees it (address matched case-insensitively), with a read PAT');
is(scalar(my_invites($t_other)), 0, 'someone else does not');

for my $verb (qw(accept decline)) {
    ($st, $p) = api(POST => "/api/me/invites/$inv->{id}/$verb", token => $t_other);
    is($st, 404, "someone else's invite: $verb is 404");
    is($p->{code}, 'not_found', '... not_found');
}
($st, $p) = api(POST => "/api/me/invites/$inv->{id}/accept", token => $t_inv_r);
is($st, 403, 'accepting needs write scope');
($st, $p) = api(POST => "/api/me/invites/$inv->{id}/accept",
                token => new_token($invitee, scope => 'write',
                                   org => new_org($invitee, prefix => 'inv-own')));
is($st, 404, 'a PAT bound to another org cannot accept it');

($st, $p, $res) = api(POST => "/api/me/invites/$inv->{id}/accept", token => $t_inv);
is($st, 200, 'the invitee accepts');
is($p->{org}{slug}, $org, '... joining the org');
is($p->{org}{role}, 'member', '... as member');
ok(!defined $p->{project}, '... (no project)');
is(psql_value("SELECT role FROM org_members WHERE org_id = '$org_id' AND user_id = '"
              . user_id_of($invitee) . "'"), 'member', '... in the database');
is_deeply([ map { $_->[0] } psql("SELECT action FROM audit_log WHERE request_id = '"
                                 . $res->header('X-Request-Id') . "' ORDER BY id") ],
          [ 'member.added', 'invite.accepted' ], '... audit-logged');
is(scalar(my_invites($t_inv)), 0, '... and it is no longer pending');
($st, $p) = api(POST => "/api/me/invites/$inv->{id}/accept", token => $t_inv);
is($st, 409, 'accepting twice: 409');
is($p->{code}, 'invite_closed', '... invite_closed');
($st, $p) = api(DELETE => "/api/orgs/$org/invites/$inv->{id}", token => $t_admin);
is($st, 409, 'revoking an accepted invite: 409');
($st, $p) = api(POST => "/api/orgs/$org/members", token => $t_admin,
                json => { email => $invitee, role => 'viewer' });
is($st, 409, 'inviting a member: 409');
is($p->{code}, 'already_member', '... already_member');

# --- decline ------------------------------------------------------------------
{
    my $u = new_user('inv-decliner');
    my $t = new_token($u, scope => 'write');
    ($st, my $i) = api(POST => "/api/orgs/$org/members", token => $t_admin,
                       json => { email => $u, role => 'viewer' });
    is($st, 201, 'invite to decline');
    ($st) = api(POST => "/api/me/invites/$i->{id}/decline", token => $t);
    is($st, 204, 'declined');
    is(psql_value("SELECT declined_at IS NOT NULL FROM invites WHERE id = '$i->{id}'"), 't',
       '... marked');
    is(psql_value("SELECT count(*) FROM org_members WHERE user_id = '" . user_id_of($u) . "'"),
       0, '... not a member');
    ($st, $p) = api(POST => "/api/me/invites/$i->{id}/accept", token => $t);
    is($st, 409, 'accepting a declined invite: 409');
    is(psql_value("SELECT action FROM audit_log WHERE target_id = '$i->{id}' ORDER BY id DESC "
                  . 'LIMIT 1'), 'invite.declined', '... audit-logged');
    ($st, my $again) = api(POST => "/api/orgs/$org/members", token => $t_admin,
                           json => { email => $u, role => 'viewer' });
    is($st, 201, 'after a decline, the address can be invited again');
}

# --- revoke ------------------------------------------------------------------------
{
    my $u = new_user('inv-revoked');
    my $t = new_token($u, scope => 'write');
    ($st, my $i) = api(POST => "/api/orgs/$org/members", token => $t_admin,
                       json => { email => $u, role => 'member' });
    is($st, 201, 'invite to revoke');
    ($st) = api(DELETE => "/api/orgs/$org/invites/$i->{id}", token => $t_admin);
    is($st, 204, 'revoked');
    ($st) = api(DELETE => "/api/orgs/$org/invites/$i->{id}", token => $t_admin);
    is($st, 204, 'revoking again: 204 (idempotent)');
    is(psql_value("SELECT count(*) FROM audit_log WHERE target_id = '$i->{id}' "
                  . "AND action = 'invite.revoked'"), 1, '... one audit entry');
    is(scalar(my_invites($t)), 0, 'a revoked invite is not offered');
    ($st, $p) = api(POST => "/api/me/invites/$i->{id}/accept", token => $t);
    is($st, 410, 'accepting a revoked invite: 410');
    is($p->{code}, 'invite_revoked', '... invite_revoked');
    ($st) = api(DELETE => "/api/orgs/$org/invites/inv_doesnotexist0000000000", token => $t_admin);
    is($st, 404, 'revoking an unknown invite: 404');
    # An invite of another org is not found through this one.
    my $o = new_user('inv-other-owner');
    my $oorg = new_org($o, prefix => 'inv-other');
    ($st, my $oi) = api(POST => "/api/orgs/$oorg/members", token => new_token($o, scope => 'admin'),
                        json => { email => $u, role => 'member' });
    is($st, 201, 'another org invites');
    ($st) = api(DELETE => "/api/orgs/$org/invites/$oi->{id}", token => $t_admin);
    is($st, 404, '... and its invite cannot be revoked through this org');
    is(psql_value("SELECT revoked_at IS NULL FROM invites WHERE id = '$oi->{id}'"), 't',
       '... it is still pending');
}

# --- expiry -----------------------------------------------------------------------
{
    my $u = new_user('inv-late');
    my $t = new_token($u, scope => 'write');
    ($st, my $i) = api(POST => "/api/orgs/$org/members", token => $t_admin,
                       json => { email => $u, role => 'member' });
    is($st, 201, 'invite that will expire');
    psql("UPDATE invites SET created_at = now() - interval '15 days', "
         . "expires_at = now() - interval '1 second' WHERE id = '$i->{id}'");
    is(scalar(my_invites($t)), 0, 'an expired invite is not offered');
    ($st, $p) = api(GET => "/api/orgs/$org/invites", token => $t_admin);
    ok(!(grep { $_->{id} eq $i->{id} } @{ $p->{data} }), '... nor listed as pending');
    ($st, $p) = api(POST => "/api/me/invites/$i->{id}/accept", token => $t);
    is($st, 410, 'accepting an expired invite: 410');
    is($p->{code}, 'invite_expired', '... invite_expired');
    ($st, $p) = api(POST => "/api/me/invites/$i->{id}/decline", token => $t);
    is($st, 410, 'declining it: 410 too');
    is(psql_value("SELECT count(*) FROM org_members WHERE user_id = '" . user_id_of($u) . "'"),
       0, '... and nobody joined');
    ($st, my $fresh) = api(POST => "/api/orgs/$org/members", token => $t_admin,
                           json => { email => $u, role => 'member' });
    is($st, 201, 'the address can be invited again');
    is(psql_value("SELECT lapsed_at IS NOT NULL FROM invites WHERE id = '$i->{id}'"), 't',
       '... the expired invite is marked lapsed');
    ($st) = api(POST => "/api/me/invites/$fresh->{id}/accept", token => $t);
    is($st, 200, '... and the new one accepted');
}

# --- project invites -----------------------------------------------------------
my $proj = uniq('invp');
($st) = api(POST => "/api/orgs/$org/projects", token => $t_owner,
            json => { slug => $proj, name => 'Invite project' });
is($st, 201, 'a project');
my $team = "/api/orgs/$org/projects/$proj/team";
{
    # A stranger invited as developer joins the org as member and the team.
    my $u = new_user('inv-dev');
    my $t = new_token($u, scope => 'write');
    ($st, my $i) = api(POST => $team, token => $t_owner,
                       json => { email => $u, role => 'developer' });
    is($st, 201, 'invite to the team');
    is($i->{kind}, 'project', '... a project invite');
    is($i->{project}{slug}, $proj, '... naming the project');
    ($st, $p) = api(GET => "$team/invites", token => $t_owner);
    is_deeply([ map { $_->{id} } @{ $p->{data} } ], [ $i->{id} ], 'the team lists it');
    ($st, $p) = api(GET => "/api/orgs/$org/invites", token => $t_owner);
    ok(!(grep { $_->{id} eq $i->{id} } @{ $p->{data} }), '... the org list does not');
    ($st) = api(DELETE => "/api/orgs/$org/invites/$i->{id}", token => $t_owner);
    is($st, 404, '... nor revokes it as an org invite');
    ($st, $p) = api(POST => "/api/me/invites/$i->{id}/accept", token => $t);
    is($st, 200, 'accepted');
    is($p->{org}{role}, 'member', '... member of the org');
    is($p->{project}{role}, 'developer', '... developer on the team');
    ($st, $p) = api(GET => "/api/orgs/$org/projects/$proj", token => $t);
    is($p->{role}, 'developer', '... and it shows');

    # A stranger invited as project viewer joins the org as viewer.
    my $v = new_user('inv-pview');
    ($st, $i) = api(POST => $team, token => $t_owner, json => { email => $v, role => 'viewer' });
    ($st, $p) = api(POST => "/api/me/invites/$i->{id}/accept",
                    token => new_token($v, scope => 'write'));
    is($st, 200, 'a project viewer invite accepted');
    is($p->{org}{role}, 'viewer', '... joins the org as viewer');

    # An org viewer cannot be invited above viewer, nor accept above it.
    ($st, $p) = api(POST => $team, token => $t_owner,
                    json => { email => $v, role => 'maintainer' });
    is($st, 409, 'inviting an org viewer to maintain: 409');
    is($p->{code}, 'already_member', '... they are on the team already');
    my $w = new_user('inv-watch');
    svcctl('org', 'add-member', $org, $w, '--role', 'viewer');
    ($st, $p) = api(POST => $team, token => $t_owner, json => { email => $w, role => 'developer' });
    is($st, 409, 'inviting an org viewer as developer: 409');
    is($p->{code}, 'viewer_limited', '... viewer_limited');
    # Invited while a member, demoted before accepting: the accept is refused.
    my $d = new_user('inv-demoted');
    svcctl('org', 'add-member', $org, $d, '--role', 'member');
    ($st, $i) = api(POST => $team, token => $t_owner, json => { email => $d, role => 'developer' });
    is($st, 201, 'a member invited to the team as developer');
    ($st) = api(PATCH => "/api/orgs/$org/members/" . user_id_of($d), token => $t_owner,
                json => { role => 'viewer' });
    is($st, 200, '... demoted to viewer before accepting');
    ($st, $p) = api(POST => "/api/me/invites/$i->{id}/accept",
                    token => new_token($d, scope => 'write'));
    is($st, 409, '... cannot accept');
    is($p->{code}, 'viewer_limited', '... viewer_limited');

    # Revoke a team invite; a maintainer below the org's admins may.
    my $r = new_user('inv-team-revoked');
    ($st, $i) = api(POST => $team, token => $t_owner, json => { email => $r, role => 'viewer' });
    ($st) = api(DELETE => "$team/invites/$i->{id}", token => $t_owner);
    is($st, 204, 'team invite revoked');
    ($st, $p) = api(POST => "/api/me/invites/$i->{id}/accept",
                    token => new_token($r, scope => 'write'));
    is($st, 410, '... and cannot be accepted');

    # Two pending invites of one address, one to the org and one to a
    # project, are independent.
    my $both = new_user('inv-both');
    ($st) = api(POST => "/api/orgs/$org/members", token => $t_owner,
                json => { email => $both, role => 'admin' });
    is($st, 201, 'an org invite');
    ($st) = api(POST => $team, token => $t_owner, json => { email => $both, role => 'maintainer' });
    is($st, 201, '... and a team invite of the same address');
    ($st) = api(POST => $team, token => $t_owner, json => { email => $both, role => 'viewer' });
    is($st, 409, '... but not two team invites');
    is(scalar(my_invites(new_token($both, scope => 'read'))), 2, 'the invitee sees both');

    # Giving both user_id and email, or neither, is refused by name.
    ($st, $p) = api(POST => $team, token => $t_owner,
                    json => { email => $both, user_id => user_id_of($admin), role => 'viewer' });
    is($st, 400, 'user_id and email together: 400');
    ($st, $p) = api(POST => $team, token => $t_owner, json => { role => 'viewer' });
    is($st, 400, 'neither: 400');
    is($p->{errors}[0]{field}, 'user_id', '... naming user_id');
}

# --- only admins admit members, project invites included (issue 14) --------------
# A plain member could create a project, invite an outsider as its
# maintainer, and so make them an org member who reads every project and
# every member's email. Now a project invite admits a non-member only with
# an admin's approval: on creation, and again on acceptance.
{
    my $mem = new_user('inv-maint');
    svcctl('org', 'add-member', $org, $mem, '--role', 'member');
    my $t_mem = new_token($mem, scope => 'admin');
    my $own = uniq('own');
    ($st) = api(POST => "/api/orgs/$org/projects", token => $t_mem,
                json => { slug => $own, name => 'Mine' });
    is($st, 201, 'a member creates a project (and maintains it)');
    my $own_team = "/api/orgs/$org/projects/$own/team";
    my $outsider = new_user('inv-outsider');
    my $before = db_digest();
    ($st, $p) = api(POST => $own_team, token => $t_mem,
                    json => { email => $outsider, role => 'maintainer' });
    is($st, 403, 'the member invites an outsider to it: 403');
    is($p->{code}, 'forbidden', '... forbidden');
    like($p->{detail}, qr/only an org admin/, '... saying who can');
    is_deeply(db_digest(), $before, '... and nothing was written');
    ($st, $p) = api(POST => $own_team, token => $t_mem,
                    json => { email => uniq('nobody') . '@example.test', role => 'viewer' });
    is($st, 403, '... nor an address nobody has yet');
    my $colleague = new_user('inv-colleague');
    svcctl('org', 'add-member', $org, $colleague, '--role', 'member');
    ($st, my $ci) = api(POST => $own_team, token => $t_mem,
                        json => { email => $colleague, role => 'developer' });
    is($st, 201, 'the member invites an org member by email: 201');
    ($st) = api(POST => $own_team, token => $t_mem,
                json => { user_id => user_id_of(new_user('inv-stranger')), role => 'viewer' });
    is($st, 400, '... and cannot add a stranger by id either');

    # Checked again on acceptance: whoever is not an org member then joins
    # only if an admin made the invite (and still is one).
    ($st, my $ai) = api(POST => $team, token => $t_admin,
                        json => { email => $outsider, role => 'developer' });
    is($st, 201, 'an org admin invites the outsider to a team');
    ($st) = api(PATCH => "/api/orgs/$org/members/" . user_id_of($admin), token => $t_owner,
                json => { role => 'member' });
    is($st, 200, '... and is made a plain member before it is accepted');
    my $t_out = new_token($outsider, scope => 'write');
    $before = db_digest();
    ($st, $p) = api(POST => "/api/me/invites/$ai->{id}/accept", token => $t_out);
    is($st, 409, 'the outsider accepts: 409');
    is($p->{code}, 'org_invite_required', '... org_invite_required');
    is_deeply(db_digest(), $before, '... and joins nothing');
    ($st) = api(PATCH => "/api/orgs/$org/members/" . user_id_of($admin), token => $t_owner,
                json => { role => 'admin' });
    ($st, $p) = api(POST => "/api/me/invites/$ai->{id}/accept", token => $t_out);
    is($st, 200, 'made an admin again, the same invite admits them');
    is($p->{org}{role}, 'member', '... into the org');

    # The colleague leaves the org before accepting the member's invite.
    ($st) = api(DELETE => "/api/orgs/$org/members/" . user_id_of($colleague),
                token => new_token($colleague, scope => 'admin'));
    is($st, 204, 'the invited colleague leaves the org');
    ($st, $p) = api(POST => "/api/me/invites/$ci->{id}/accept",
                    token => new_token($colleague, scope => 'write'));
    is($st, 409, '... and the member\'s team invite no longer admits them: 409');
    is($p->{code}, 'org_invite_required', '... org_invite_required');
}

# --- every invite lasts SvcInviteLifetime (default 14 days) ---------------------
is(psql_value("SELECT bool_and(expires_at - created_at = interval '14 days') FROM invites "
              . "WHERE org_id = '$org_id' AND lapsed_at IS NULL"), 't',
   'every invite made here lasts 14 days');

done_testing();
