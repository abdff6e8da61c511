# Tenancy rules beyond the role matrix: mass assignment, the owner's
# protections, ownership transfer, the org viewer's cap, leaving, org and
# project details, and the operator's svcctl commands.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $owner  = new_user('rules-owner');
my $admin  = new_user('rules-admin');
my $member = new_user('rules-member');
my $viewer = new_user('rules-viewer');
my $org    = new_org($owner, prefix => 'rules', name => 'Rules Inc');
svcctl('org', 'add-member', $org, $admin, '--role', 'admin');
svcctl('org', 'add-member', $org, $member, '--role', 'member');
svcctl('org', 'add-member', $org, $viewer, '--role', 'viewer');
# (A loop, not map: svcctl's helpers may clobber $_, which map aliases.)
my %tok;
for my $u ([owner => $owner], [admin => $admin], [member => $member], [viewer => $viewer]) {
    $tok{ $u->[0] } = new_token($u->[1], scope => 'admin');
}
my %id = (owner => user_id_of($owner), admin => user_id_of($admin),
          member => user_id_of($member), viewer => user_id_of($viewer));
my $org_id = org_id_of($org);

sub problem_fields {
    my $p = shift;
    return join ',', sort map { "$_->{field}:$_->{code}" } @{ $p->{errors} // [] };
}

sub row {
    my $sql = shift;
    return join '|', map { $_ // 'NULL' } @{ (psql($sql))[0] // [] };
}

# --- mass assignment: every field a caller may not set is refused by name ----
my $proj = uniq('rp');
my ($st, $p) = api(POST => "/api/orgs/$org/projects", token => $tok{member},
                   json => { slug => $proj, name => 'Rules project' });
is($st, 201, 'a member creates a project');
is($p->{role}, 'maintainer', '... and maintains it');

my $org_row  = "SELECT slug, name, created_at, updated_at FROM orgs WHERE id = '$org_id'";
my $proj_row = "SELECT id, slug, name, description, archived, org_id, created_at, updated_at "
             . "FROM projects WHERE org_id = '$org_id' AND slug = '$proj'";
my $mem_row  = "SELECT role, created_at, updated_at FROM org_members "
             . "WHERE org_id = '$org_id' AND user_id = '$id{member}'";
my @mass = (
    # [ method, path, token, valid body, forbidden field => value, row query ]
    [ POST => '/api/orgs', 'member', { slug => uniq('mass'), name => 'M' },
      [ role => 'admin' ], [ owner => $id{member} ], [ org_id => $org_id ], [ id => 'org_x' ],
      [ created_at => '2020-01-01T00:00:00Z' ] ],
    [ PATCH => "/api/orgs/$org", 'owner', { name => 'Renamed' },
      [ slug => 'other' ], [ id => 'org_x' ], [ owner => $id{admin} ],
      [ created_at => '2020-01-01T00:00:00Z' ], [ role => 'viewer' ] ],
    [ POST => "/api/orgs/$org/members", 'admin',
      { email => uniq('mass') . '@example.test', role => 'member' },
      [ owner => JSON::PP::true() ], [ org_id => $org_id ], [ invited_by => $id{owner} ],
      [ expires_at => '2099-01-01T00:00:00Z' ], [ status => 'accepted' ] ],
    [ PATCH => "/api/orgs/$org/members/$id{member}", 'admin', { role => 'member' },
      [ owner => JSON::PP::true() ], [ user_id => $id{admin} ], [ org_id => 'org_x' ],
      [ created_at => '2020-01-01T00:00:00Z' ] ],
    [ POST => "/api/orgs/$org/transfer-ownership", 'owner', { user_id => $id{admin} },
      [ role => 'owner' ], [ org_id => $org_id ] ],
    [ POST => "/api/orgs/$org/projects", 'member', { slug => uniq('mass'), name => 'M' },
      [ org_id => 'org_x' ], [ id => 'prj_x' ], [ created_at => '2020-01-01T00:00:00Z' ],
      [ role => 'maintainer' ], [ archived => JSON::PP::true() ], [ created_by => $id{owner} ] ],
    [ PATCH => "/api/orgs/$org/projects/$proj", 'member', { name => 'Renamed project' },
      [ slug => 'moved' ], [ org_id => 'org_x' ], [ id => 'prj_x' ],
      [ created_at => '2020-01-01T00:00:00Z' ], [ role => 'viewer' ] ],
    [ POST => "/api/orgs/$org/projects/$proj/team", 'member',
      { user_id => $id{viewer}, role => 'viewer' },
      [ org_id => 'org_x' ], [ project_id => 'prj_x' ], [ org_role => 'admin' ] ],
    [ PATCH => "/api/orgs/$org/projects/$proj/team/$id{member}", 'member',
      { role => 'maintainer' }, [ user_id => $id{owner} ], [ org_role => 'owner' ] ],
);
for my $m (@mass) {
    my ($method, $path, $who, $valid, @bad) = @$m;
    for my $b (@bad) {
        my ($field, $value) = @$b;
        my $before = db_digest();
        my ($s, $pr) = api($method => $path, token => $tok{$who},
                           json => { %$valid, $field => $value });
        is($s, 400, "$method $path with $field: 400");
        is(problem_fields($pr), "$field:unknown_field", "... naming $field");
        is_deeply(db_digest(), $before, '... and nothing changed');
    }
}
like(row($org_row), qr/^\Q$org\E\|Rules Inc\|/, 'the org row is as it was');

# --- the owner cannot be removed or demoted; nobody is made owner ------------
for my $t (
    [ admin => PATCH  => "/api/orgs/$org/members/$id{owner}", { role => 'member' } ],
    [ owner => PATCH  => "/api/orgs/$org/members/$id{owner}", { role => 'admin' } ],
    [ admin => DELETE => "/api/orgs/$org/members/$id{owner}", undef ],
    [ owner => DELETE => "/api/orgs/$org/members/$id{owner}", undef ],
) {
    my ($who, $method, $path, $body) = @$t;
    my ($s, $pr) = api($method => $path, token => $tok{$who}, $body ? (json => $body) : ());
    is($s, 409, "$who: $method the owner is 409");
    is($pr->{code}, 'owner_protected', '... owner_protected');
}
is(psql_value("SELECT role FROM org_members WHERE org_id = '$org_id' "
              . "AND user_id = '$id{owner}'"), 'owner', 'the owner is still the owner');
for my $t ([ PATCH => "/api/orgs/$org/members/$id{member}", { role => 'owner' } ],
           [ POST => "/api/orgs/$org/members",
             { email => uniq('o') . '@example.test', role => 'owner' } ]) {
    my ($method, $path, $body) = @$t;
    my ($s, $pr) = api($method => $path, token => $tok{admin}, json => $body);
    is($s, 400, "an admin asking for role owner ($method $path): 400");
    is(problem_fields($pr), 'role:invalid_value', '... naming role');
}
is(psql_value("SELECT count(*) FROM org_members WHERE org_id = '$org_id' AND role = 'owner'"),
   1, 'one owner');

# An admin may make another member an admin (their own role), not more.
($st, $p) = api(PATCH => "/api/orgs/$org/members/$id{member}", token => $tok{admin},
                json => { role => 'admin' });
is($st, 200, 'an admin makes a member an admin');
is($p->{role}, 'admin', '... who is one');
($st) = api(PATCH => "/api/orgs/$org/members/$id{member}", token => $tok{admin},
            json => { role => 'member' });
is($st, 200, '... and back');
($st, $p) = api(PATCH => "/api/orgs/$org/members/usr_nobody0000000000000000", token => $tok{admin},
                json => { role => 'member' });
is($st, 404, 'changing the role of a non-member: 404');

# --- ownership transfer ------------------------------------------------------
{
    my $o2 = new_user('xfer-owner');
    my $m2 = new_user('xfer-member');
    my $stranger = new_user('xfer-stranger');
    my $xorg = new_org($o2, prefix => 'xfer');
    svcctl('org', 'add-member', $xorg, $m2, '--role', 'viewer');
    my $t_o = new_token($o2, scope => 'admin');
    my $t_m = new_token($m2, scope => 'admin');
    my ($o2id, $m2id) = (user_id_of($o2), user_id_of($m2));

    ($st, $p) = api(POST => "/api/orgs/$xorg/transfer-ownership", token => $t_o,
                    json => { user_id => user_id_of($stranger) });
    is($st, 400, 'transfer to a non-member: 400');
    is(problem_fields($p), 'user_id:not_a_member', '... user_id not_a_member');
    ($st, $p) = api(POST => "/api/orgs/$xorg/transfer-ownership", token => $t_o,
                    json => { user_id => $o2id });
    is($st, 409, 'transfer to yourself: 409');
    ($st, $p) = api(POST => "/api/orgs/$xorg/transfer-ownership",
                    token => new_token($o2, scope => 'write'), json => { user_id => $m2id });
    is($st, 403, 'transfer with a write-scope PAT: 403');
    is($p->{code}, 'insufficient_scope', '... insufficient_scope');

    ($st, $p, my $res) = api(POST => "/api/orgs/$xorg/transfer-ownership", token => $t_o,
                             json => { user_id => $m2id });
    is($st, 200, 'the owner transfers to a viewer member');
    is($p->{role}, 'admin', '... and is an admin now');
    is($p->{owner}{id}, $m2id, '... the org names the new owner');
    is(row("SELECT string_agg(user_id || ':' || role, ',' ORDER BY role) FROM org_members "
           . "WHERE org_id = '" . org_id_of($xorg) . "'"), "$o2id:admin,$m2id:owner",
       '... the roles are swapped in the database');
    my ($entry) = psql("SELECT actor_user_id, target_id, request_id, data->>'from', "
                       . "data->>'to' FROM audit_log WHERE org_id = '" . org_id_of($xorg)
                       . "' AND action = 'ownership.transferred'");
    is_deeply($entry, [ $o2id, $m2id, $res->header('X-Request-Id'), $o2id, $m2id ],
              '... audit-logged with actor, target and request id');

    ($st, $p) = api(POST => "/api/orgs/$xorg/transfer-ownership", token => $t_o,
                    json => { user_id => $m2id });
    is($st, 403, 'the former owner cannot transfer again');
    ($st) = api(DELETE => "/api/orgs/$xorg/members/$o2id", token => $t_m);
    is($st, 204, 'the new owner can remove the former owner');
    ($st, $p) = api(DELETE => "/api/orgs/$xorg/members/$m2id", token => $t_m);
    is($st, 409, 'the new owner cannot leave');
}

# --- the org viewer's cap -------------------------------------------------------
($st, $p) = api(POST => "/api/orgs/$org/projects/$proj/team", token => $tok{member},
                json => { user_id => $id{viewer}, role => 'developer' });
is($st, 409, 'an org viewer cannot join a team as developer');
is($p->{code}, 'viewer_limited', '... viewer_limited');
($st, $p) = api(POST => "/api/orgs/$org/projects/$proj/team", token => $tok{member},
                json => { user_id => $id{viewer}, role => 'viewer' });
is($st, 201, '... but as viewer');
($st, $p) = api(PATCH => "/api/orgs/$org/projects/$proj/team/$id{viewer}",
                token => $tok{member}, json => { role => 'maintainer' });
is($st, 409, '... and cannot be promoted');
is($p->{code}, 'viewer_limited', '... viewer_limited');
($st, $p) = api(GET => "/api/orgs/$org/projects/$proj", token => $tok{viewer});
is($p->{role}, 'viewer', 'the org viewer views the project');
($st) = api(POST => "/api/orgs/$org/projects", token => $tok{viewer},
            json => { slug => uniq('vp'), name => 'V' });
is($st, 403, 'an org viewer cannot create projects');

# Demoting a member to viewer lowers their team roles in the same change.
{
    my $dev = new_user('rules-dev');
    svcctl('org', 'add-member', $org, $dev, '--role', 'member');
    my $dev_id = user_id_of($dev);
    ($st) = api(POST => "/api/orgs/$org/projects/$proj/team", token => $tok{member},
                json => { user_id => $dev_id, role => 'maintainer' });
    is($st, 201, 'a member joins the team as maintainer');
    ($st, $p) = api(PATCH => "/api/orgs/$org/members/$dev_id", token => $tok{admin},
                    json => { role => 'viewer' });
    is($st, 200, 'demoted to org viewer');
    is(psql_value("SELECT role FROM project_members WHERE user_id = '$dev_id'"), 'viewer',
       '... and their team role is viewer');
    my ($e) = psql("SELECT data->>'before', data->>'after', "
                   . "data->'projects_capped_to_viewer'->>0 FROM audit_log "
                   . "WHERE action = 'member.role_changed' AND target_id = '$dev_id'");
    is_deeply($e, [ 'member', 'viewer', psql_value("SELECT id FROM projects WHERE "
                                                   . "org_id = '$org_id' AND slug = '$proj'") ],
              '... audit-logged with before, after and the capped project');
    # The database itself refuses the combination.
    my $ok = eval {
        psql("UPDATE project_members SET role = 'developer' WHERE user_id = '$dev_id'");
        1;
    };
    ok(!$ok, 'the database refuses a developer role for an org viewer');
    like($@, qr/org_viewer_project_cap|only the viewer role/, '... by its constraint');
}

# --- leaving --------------------------------------------------------------------
{
    my $leaver = new_user('rules-leaver');
    svcctl('org', 'add-member', $org, $leaver, '--role', 'member');
    my $lid = user_id_of($leaver);
    my $bound = new_token($leaver, scope => 'admin', org => $org);
    ($st) = api(POST => "/api/orgs/$org/projects/$proj/team", token => $tok{member},
                json => { user_id => $lid, role => 'developer' });
    is($st, 201, 'the leaver is on a team');
    ($st) = api(DELETE => "/api/orgs/$org/members/$lid", token => $bound);
    is($st, 204, 'a member leaves the org');
    is(psql_value("SELECT count(*) FROM project_members WHERE user_id = '$lid'"), 0,
       '... and every team of it');
    ($st) = api(GET => "/api/orgs/$org", token => $bound);
    is($st, 401, '... and their token bound to it is revoked');
    is(psql_value("SELECT action FROM audit_log WHERE target_id = '$lid' ORDER BY id DESC "
                  . 'LIMIT 1'), 'member.left', '... audit-logged as member.left');
    ($st) = api(GET => "/api/orgs/$org", token => new_token($leaver, scope => 'admin'));
    is($st, 404, '... and the org is not found for them any more');
}

# --- orgs: list, create, detail, rename --------------------------------------------
{
    my $u = new_user('orgs');
    my $a = new_org($u, prefix => 'orgs-a');
    my $b = new_org($u, prefix => 'orgs-b');
    my $t = new_token($u, scope => 'read');
    ($st, $p) = api(GET => '/api/orgs', token => $t);
    is($st, 200, 'GET /api/orgs');
    is_deeply([ sort map { "$_->{slug}:$_->{role}" } @{ $p->{data} } ],
              [ "$a:owner", "$b:owner" ], '... lists the caller\'s orgs with roles');
    ($st, $p) = api(GET => '/api/orgs?limit=1', token => $t);
    is(scalar @{ $p->{data} }, 1, '... paginated');
    my ($st2, $p2) = api(GET => "/api/orgs?limit=1&cursor=$p->{next_cursor}", token => $t);
    is(scalar @{ $p2->{data} }, 1, '... second page');
    isnt($p2->{data}[0]{slug}, $p->{data}[0]{slug}, '... another org');
    ok(!defined $p2->{next_cursor}, '... and the last');
    my $bound = new_token($u, scope => 'write', org => $a);
    ($st, $p) = api(GET => '/api/orgs', token => $bound);
    is_deeply([ map { $_->{slug} } @{ $p->{data} } ], [$a], 'a bound PAT sees only its org');
    ($st, $p) = api(POST => '/api/orgs', token => $bound, json => { slug => uniq('n'), name => 'N' });
    is($st, 403, 'a bound PAT cannot create an org');
    is($p->{code}, 'insufficient_scope', '... insufficient_scope');
    ($st, $p) = api(POST => '/api/orgs', token => $t, json => { slug => uniq('n'), name => 'N' });
    is($st, 403, 'a read PAT cannot create an org');

    my $slug = uniq('created');
    ($st, $p) = api(POST => '/api/orgs', token => new_token($u, scope => 'write'),
                    json => { slug => $slug, name => 'Created' });
    is($st, 201, 'a write PAT creates an org');
    is($p->{role}, 'owner', '... owned by the caller');
    is($p->{owner}{id}, user_id_of($u), '... named as owner');
    # The whole document, value by value, as the database holds it.
    {
        my $oid = psql_value("SELECT id FROM orgs WHERE slug = '$slug'");
        my $ts = sub {
            psql_value("SELECT to_char($_[0] AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
                       . " FROM orgs WHERE id = '$oid'");
        };
        is_deeply($p, {
            id => $oid, slug => $slug, name => 'Created', role => 'owner',
            owner => { id => user_id_of($u), email => $u,
                       name => psql_value("SELECT name FROM users WHERE email = '$u'") },
            members => 1, projects => 0,
            created_at => $ts->('created_at'), updated_at => $ts->('updated_at'),
        }, '... the org document, every field');
        like(json()->encode($p), qr/"members":1\b/, '... counts are JSON numbers');
        my ($ls, $list) = api(GET => '/api/orgs', token => new_token($u, scope => 'read'));
        my ($item) = grep { $_->{slug} eq $slug } @{ $list->{data} // [] };
        is_deeply($item, { map { $_ => $p->{$_} } qw(id slug name role created_at updated_at) },
                  '... and its item in the caller\'s list');
    }
    for my $bad ('Upper', '-dash', 'dash-', 'a' x 64, 'sp ace', '') {
        ($st, $p) = api(POST => '/api/orgs', token => new_token($u, scope => 'write'),
                        json => { slug => $bad, name => 'Bad' });
        is($st, 400, "slug '$bad' is refused");
        is(problem_fields($p), 'slug:invalid_slug', '... naming slug');
    }
    ($st, $p) = api(PATCH => "/api/orgs/$slug", token => new_token($u, scope => 'write'),
                    json => { name => 'Renamed' });
    is($st, 200, 'rename');
    is($p->{name}, 'Renamed', '... renamed');
    my ($e) = psql("SELECT data->'before'->>'name', data->'after'->>'name' FROM audit_log "
                   . "WHERE org_id = '" . org_id_of($slug) . "' AND action = 'org.updated'");
    is_deeply($e, [ 'Created', 'Renamed' ], '... audit-logged with before and after');
}

# --- projects ------------------------------------------------------------------------
{
    ($st, $p) = api(PATCH => "/api/orgs/$org/projects/$proj", token => $tok{member}, json => {});
    is($st, 400, 'PATCH of a project with nothing to change: 400');
    ($st, $p) = api(PATCH => "/api/orgs/$org/projects/$proj", token => $tok{member},
                    json => { archived => JSON::PP::true(), description => 'Old' });
    is($st, 200, 'archive a project');
    ok($p->{archived}, '... archived');
    ($st, $p) = api(GET => "/api/orgs/$org/projects?archived=true", token => $tok{viewer});
    ok((grep { $_->{slug} eq $proj } @{ $p->{data} }), '?archived=true lists it');
    ($st, $p) = api(GET => "/api/orgs/$org/projects?archived=false", token => $tok{viewer});
    ok(!(grep { $_->{slug} eq $proj } @{ $p->{data} }), '?archived=false does not');
    ($st, $p) = api(GET => "/api/orgs/$org/projects?archived=maybe", token => $tok{viewer});
    is($st, 400, '?archived=maybe: 400');
    is(problem_fields($p), 'archived:invalid_value', '... naming archived');
    ($st, $p) = api(GET => "/api/orgs/$org/projects/nope-$$", token => $tok{owner});
    is($st, 404, 'an unknown project: 404');
    ($st, $p) = api(GET => "/api/orgs/$org/projects/NOT_A_SLUG", token => $tok{owner});
    is($st, 404, 'a malformed project slug: 404');
    # A project of another org is not found through this one.
    my $o = new_user('other-proj');
    my $other = new_org($o, prefix => 'other');
    my $oslug = uniq('theirs');
    ($st) = api(POST => "/api/orgs/$other/projects", token => new_token($o, scope => 'write'),
                json => { slug => $oslug, name => 'Theirs' });
    is($st, 201, 'another org has a project');
    ($st) = api(GET => "/api/orgs/$org/projects/$oslug", token => $tok{owner});
    is($st, 404, '... which is not found through this org');
    my ($e) = psql("SELECT data->'before'->>'archived', data->'after'->>'archived' "
                   . "FROM audit_log WHERE org_id = '$org_id' AND action = 'project.updated' "
                   . 'ORDER BY id DESC LIMIT 1');
    is_deeply($e, [ 'false', 'true' ], 'project.updated has before and after');
    ($st, $p) = api(GET => "/api/orgs/$org/projects/$proj", token => $tok{admin});
    is($p->{role}, 'maintainer', 'an org admin maintains a project without being on its team');
}

# --- svcctl ------------------------------------------------------------------------
{
    my $list = SvcTest::json()->decode(svcctl('org', 'list', '--json'));
    my ($mine) = grep { $_->{slug} eq $org } @$list;
    ok($mine, 'svcctl org list --json lists the org');
    is($mine->{owner}, $owner, '... with its owner');
    like(svcctl('org', 'list'), qr/^\Q$org\E\s+org_/m, 'svcctl org list (text)');
    my $newbie = new_user('svcctl-added');
    is(svcctl('org', 'add-member', $org, $newbie, '--role', 'viewer'), "$org $newbie viewer",
       'svcctl org add-member');
    is(psql_value("SELECT role FROM org_members WHERE org_id = '$org_id' "
                  . "AND user_id = '" . user_id_of($newbie) . "'"), 'viewer', '... added');
    is(psql_value("SELECT actor_kind || ' ' || action FROM audit_log WHERE org_id = '$org_id' "
                  . "AND target_id = '" . user_id_of($newbie) . "'"), 'operator member.added',
       '... audit-logged as the operator');
    for my $t ([ [qw(org add-member), $org, $newbie, '--role', 'owner'], 2, 'role owner' ],
               [ [qw(org add-member), $org, $newbie], 2, 'no --role' ],
               [ [qw(org add-member), $org], 2, 'no EMAIL' ],
               [ [qw(org add-member), $org, $newbie, '--role', 'boss'], 2, 'unknown role' ],
               [ [qw(org add-member), 'Bad_Slug', $newbie, '--role', 'member'], 2, 'bad slug' ],
               [ [qw(org list --bogus)], 2, 'org list --bogus' ],
               [ [qw(org add-member), $org, $newbie, '--role', 'member'], 1, 'already a member' ],
               [ [qw(org add-member), "nope-$$", $newbie, '--role', 'member'], 1, 'no such org' ],
              ) {
        my ($args, $code, $what) = @$t;
        my ($rc) = SvcTest::run([ $ENV{SVCCTL}, @$args ]);
        is($rc >> 8, $code, "svcctl org ...: $what exits $code");
    }
}

# --- member, team member and project documents, field by field ---------------------
# Each is written from plain columns by a row shape; what the database holds
# is what the API shows, the same in a document and in its list.
{
    my $own = new_user('docown');
    my $mem = new_user('docmem');
    my $org = new_org($own);
    my $tok = new_token($own, scope => 'admin');
    svcctl('org', 'add-member', $org, $mem, '--role', 'member');
    my ($oid, $mid) = (org_id_of($org), user_id_of($mem));
    my $ts = sub {
        my ($col, $from) = @_;
        psql_value("SELECT to_char($col AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
                   . " FROM $from");
    };
    my $mname = psql_value("SELECT name FROM users WHERE id = '$mid'");

    my ($st, $m) = api(PATCH => "/api/orgs/$org/members/$mid", token => $tok,
                       json => { role => 'viewer' });
    is($st, 200, 'member document: 200');
    my $mrow = "org_members WHERE org_id = '$oid' AND user_id = '$mid'";
    is_deeply($m, { user_id => $mid, email => $mem, name => $mname, role => 'viewer',
                    joined_at => $ts->('created_at', $mrow),
                    updated_at => $ts->('updated_at', $mrow) },
              'member document: every field');
    my ($ls, $list) = api(GET => "/api/orgs/$org/members", token => $tok);
    my ($item) = grep { $_->{user_id} eq $mid } @{ $list->{data} // [] };
    is_deeply($item, $m, '... the same in the members list');

    my $pslug = uniq('docprj');
    ($st, my $p) = api(POST => "/api/orgs/$org/projects", token => $tok,
                       json => { slug => $pslug, name => "Doc \"P\" \\ \x{e9}",
                                 description => "line 1\nline 2\t<b>" });
    is($st, 201, 'project document: 201');
    my $prow = "projects WHERE org_id = '$oid' AND slug = '$pslug'";
    ok(JSON::PP::is_bool($p->{archived}) && !$p->{archived},
       'project document: archived is a JSON false');
    my %pdoc = %$p;
    delete $pdoc{archived};
    is_deeply(\%pdoc, { id => psql_value("SELECT id FROM $prow"), slug => $pslug,
                        name => "Doc \"P\" \\ \x{e9}", description => "line 1\nline 2\t<b>",
                        role => 'maintainer',
                        created_at => $ts->('created_at', $prow),
                        updated_at => $ts->('updated_at', $prow) },
              'project document: every field');
    ($ls, $list) = api(GET => "/api/orgs/$org/projects", token => $tok);
    ($item) = grep { $_->{slug} eq $pslug } @{ $list->{data} // [] };
    is_deeply($item, $p, '... the same in the projects list');

    ($st, my $t) = api(POST => "/api/orgs/$org/projects/$pslug/team", token => $tok,
                       json => { user_id => $mid, role => 'viewer' });
    is($st, 201, 'team member document: 201');
    my $trow = "project_members WHERE user_id = '$mid' AND project_id = '$p->{id}'";
    is_deeply($t, { user_id => $mid, email => $mem, name => $mname, role => 'viewer',
                    org_role => 'viewer',
                    added_at => $ts->('created_at', $trow),
                    updated_at => $ts->('updated_at', $trow) },
              'team member document: every field');
    ($ls, $list) = api(GET => "/api/orgs/$org/projects/$pslug/team", token => $tok);
    ($item) = grep { $_->{user_id} eq $mid } @{ $list->{data} // [] };
    is_deeply($item, $t, '... the same in the team list');
}

done_testing();
