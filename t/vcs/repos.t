# Repositories through the code-hosting App (issue 12): listing what the
# org's installations reach (the provider's pages followed), linking one to
# a project only when the provider says the installation reaches it,
# provisioning (and the 409 when the App may not create repositories), the
# installation tokens' cache, and no installation token anywhere in the
# database (the log check hunts for them in the logs).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

plan skip_all => 'the fake code-hosting provider is not running (use tools/test.sh)'
    unless $ENV{VCS_WEB_URL} && $ENV{VCS_APP_ID};

sub problem_code { my ($st, $p) = @_; return "$st " . ($p && $p->{code} // '') }

my $owner = new_user('rp-owner');
my $org = new_org($owner);
my $tok = new_token($owner, scope => 'admin');
my $proj = uniq('p');
my ($st) = api(POST => "/api/orgs/$org/projects", token => $tok,
               json => { slug => $proj, name => 'Repos project' });
is($st, 201, 'a project');
my $dev = new_user('rp-dev');
svcctl('org', 'add-member', $org, $dev, '--role', 'member');
api(POST => "/api/orgs/$org/projects/$proj/team", token => $tok,
    json => { user_id => user_id_of($dev), role => 'developer' });
my $devtok = new_token($dev, scope => 'admin');

my $many = vcs_record_installation($org, vcs_installation(repos => [ map { "r$_" } 1 .. 250 ]));
my $admin_perm = { contents => 'read', metadata => 'read', administration => 'write' };
my $main = vcs_record_installation($org, vcs_installation(
    repos => [ { name => 'api', private => JSON::PP::true(), default_branch => 'trunk' }, 'web' ],
    permissions => $admin_perm));
my $gone = vcs_record_installation($org, vcs_installation(repos => ['hidden']), status => 'suspended');

# --- listing ---------------------------------------------------------------------
{
    my ($st, $list) = api(GET => "/api/orgs/$org/vcs/repositories", token => $tok);
    is($st, 200, 'GET /api/orgs/:org/vcs/repositories');
    my @data = @{ $list->{data} // [] };
    is(scalar @data, 252, '... every repository of the active installations (250 over 3 pages, and 2)');
    is(scalar(grep { $_->{installation_id} == $many->{id} } @data), 250,
       '... following the provider\'s Link rel="next" pages');
    my ($api) = grep { $_->{full_name} eq "$main->{login}/api" } @data;
    is_deeply($api, { full_name => "$main->{login}/api", private => JSON::PP::true(),
                      default_branch => 'trunk', installation_id => $main->{id} },
              '... each with full_name, private, default_branch and installation_id');
    ok(!grep({ $_->{full_name} =~ /hidden/ } @data), '... none of a suspended installation');
    is($list->{next_cursor}, undef, '... on one page');
    my $viewer = new_user('rp-viewer');
    svcctl('org', 'add-member', $org, $viewer, '--role', 'viewer');
    ($st) = api(GET => "/api/orgs/$org/vcs/repositories", token => new_token($viewer, scope => 'read'));
    is($st, 200, '... which a viewer may read');
}

# --- linking ---------------------------------------------------------------------
my $link_path = "/api/orgs/$org/projects/$proj/repository";
{
    my ($st, $got) = api(GET => $link_path, token => $tok);
    is($st, 200, 'GET a project\'s repository before any link: 200');
    is_deeply($got, { repository => undef }, '... none');

    my $before = db_digest();
    is(problem_code(api(PUT => $link_path, token => $tok,
                        json => { installation_id => $main->{id} + 0,
                                  full_name => "$main->{login}/secret" })),
       '409 repository_not_reachable', 'a repository outside the installation\'s selection: 409');
    is(problem_code(api(PUT => $link_path, token => $tok,
                        json => { installation_id => $main->{id} + 0, full_name => 'elsewhere/api' })),
       '409 repository_not_reachable', 'a repository of another account: 409');
    is(problem_code(api(PUT => $link_path, token => $tok,
                        json => { installation_id => $gone->{id} + 0,
                                  full_name => "$gone->{login}/hidden" })),
       '409 installation_suspended', 'through a suspended installation: 409');
    my $stranger = vcs_installation(repos => ['api']);
    my ($s, $p) = api(PUT => $link_path, token => $tok,
                      json => { installation_id => $stranger->{id} + 0,
                                full_name => "$stranger->{login}/api" });
    is("$s " . ($p->{errors}[0]{field} // ''), '400 installation_id',
       'an installation the org has not linked: 400 on installation_id');
    ($s, $p) = api(PUT => $link_path, token => $tok,
                   json => { installation_id => $main->{id} + 0, full_name => 'not a name' });
    is("$s " . ($p->{errors}[0]{field} // ''), '400 full_name', 'a malformed full_name: 400');
    is(problem_code(api(PUT => $link_path, token => $devtok,
                        json => { installation_id => $main->{id} + 0,
                                  full_name => "$main->{login}/api" })),
       '403 forbidden', 'a developer of the project: 403');
    is_deeply(db_digest(), $before, '... none of these changed anything');

    ($st, $got) = api(PUT => $link_path, token => $tok,
                      json => { installation_id => $main->{id} + 0,
                                full_name => uc($main->{login}) . '/API' });
    is($st, 200, 'PUT a reachable repository: 200');
    my $r = $got->{repository} // {};
    is($r->{full_name}, "$main->{login}/api", '... as the provider spells it');
    is($r->{installation_id}, $main->{id}, '... through the installation');
    is($r->{default_branch}, 'trunk', '... its default branch');
    ok($r->{private} && $r->{repo_id} > 0, '... private, with the provider\'s id');
    is($r->{installation_status}, 'active', '... and the installation\'s status');
    my $app = vcs_app_state();
    is_deeply($app->{last}{token_request},
              { repositories => ['API'], permissions => { contents => 'read', metadata => 'read' } },
              'the provider was asked for a token of that one repository, contents and metadata read');
    ($st, $got) = api(GET => $link_path, token => $devtok);
    is($st, 200, 'GET the link (a developer may read it)');
    is($got->{repository}{full_name}, "$main->{login}/api", '... the repository');
    is(psql_value("SELECT data->>'full_name' FROM audit_log WHERE action = 'project.repository.linked'"
                  . " AND target_id = (SELECT id FROM projects WHERE slug = '$proj')"),
       "$main->{login}/api", 'audit: project.repository.linked');

    # The token for one repository is minted once per process, then reused.
    my $mints = sub { vcs_app_state()->{mints}{"$main->{id}:api"} // 0 };
    my $m0 = $mints->();
    for (1 .. 12) {
        api(PUT => $link_path, token => $tok,
            json => { installation_id => $main->{id} + 0, full_name => "$main->{login}/api" });
    }
    cmp_ok($mints->() - $m0, '<=', 4, 'twelve more links: at most one new token per httpd child ('
           . ($mints->() - $m0) . ')');

    ($st) = api(DELETE => $link_path, token => $tok);
    is($st, 204, 'DELETE the link: 204');
    ($st, $got) = api(GET => $link_path, token => $tok);
    is_deeply($got, { repository => undef }, '... gone');
    ($st) = api(DELETE => $link_path, token => $tok);
    is($st, 204, 'DELETE again: 204');
    is(psql_value("SELECT count(*) FROM audit_log WHERE action = 'project.repository.unlinked'"
                  . " AND target_id = (SELECT id FROM projects WHERE slug = '$proj')"), 1,
       'audit: one project.repository.unlinked');
}

# --- provisioning --------------------------------------------------------------------
{
    my $name = uniq('made');
    my $before = db_digest();
    my ($st, $p) = api(POST => "/api/orgs/$org/vcs/repositories", token => $tok,
                       json => { name => $name, installation_id => $many->{id} + 0 });
    is("$st " . ($p->{code} // ''), '409 vcs_permission_missing',
       'creating a repository without administration: write: 409 vcs_permission_missing');
    like($p->{detail} // '', qr/Administration: Read and write/, '... saying what to grant');
    is_deeply(db_digest(), $before, '... nothing changed');
    ok(!grep({ $_->{name} eq $name } @{ vcs_app_state()->{installations}{ $many->{id} }{repos} }),
       '... nor at the provider');

    my $got;
    ($st, $got) = api(POST => "/api/orgs/$org/vcs/repositories", token => $tok,
                      json => { name => $name, installation_id => $main->{id} + 0,
                                private => JSON::PP::false(), description => 'made by a test',
                                project => $proj });
    is($st, 201, 'creating one with the permission, for a project: 201');
    is($got->{repository}{full_name}, "$main->{login}/$name", '... in the installation\'s account');
    is($got->{link}{full_name}, "$main->{login}/$name", '... and linked to the project');
    is_deeply(vcs_app_state()->{last}{create_repo},
              { name => $name, private => JSON::PP::false(), auto_init => JSON::PP::true(),
                description => 'made by a test' }, 'the provider was asked for it so');
    my ($st2, $link) = api(GET => $link_path, token => $tok);
    is($link->{repository}{full_name}, "$main->{login}/$name", 'GET shows the new link');
    is(join(' ', map { $_->[0] } psql("SELECT action FROM audit_log WHERE org_id = "
       . sql_quote(org_id_of($org)) . " AND action IN ('vcs.repository.created',"
       . " 'project.repository.linked') AND (target_id = " . sql_quote("$main->{login}/$name")
       . " OR data->>'full_name' = " . sql_quote("$main->{login}/$name") . ') ORDER BY id')),
       'vcs.repository.created project.repository.linked', 'audit: created, then linked');

    is(problem_code(api(POST => "/api/orgs/$org/vcs/repositories", token => $tok,
                        json => { name => $name, installation_id => $main->{id} + 0 })),
       '409 repository_exists', 'the same name again: 409 repository_exists');
    ($st, $p) = api(POST => "/api/orgs/$org/vcs/repositories", token => $tok,
                    json => { name => 'x', installation_id => $main->{id} + 0, project => 'nope' });
    is("$st " . ($p->{errors}[0]{field} // ''), '400 project', 'an unknown project: 400');
    is(problem_code(api(POST => "/api/orgs/$org/vcs/repositories", token => $devtok,
                        json => { name => 'x', installation_id => $main->{id} + 0 })),
       '403 forbidden', 'a member who is no admin: 403');
}

# --- the provider does not answer --------------------------------------------------------
{
    vcs_control(mode => 'app_timeout', hang_seconds => 6);
    my $org2 = new_org($owner);
    vcs_record_installation($org2, vcs_installation());
    is(problem_code(api(GET => "/api/orgs/$org2/vcs/repositories", token => $tok)),
       '504 provider_timeout', 'the provider hangs: 504 within SvcVcsTimeout');
    vcs_control(mode => 'ok');
}

# --- no installation token in the database ------------------------------------------------
{
    my @tokens = grep { /^ghs_/ } @{ vcs_state()->{issued} // [] };
    ok(@tokens >= 3, scalar(@tokens) . ' installation tokens were minted');
    my @tables = map { $_->[0] } psql("SELECT tablename FROM pg_tables WHERE schemaname = 'public'");
    my $all = join ' UNION ALL ', map { "SELECT to_jsonb(t)::text AS x FROM \"$_\" t" } @tables;
    my $found = 0;
    for my $t (@tokens) {
        $found += psql_value("SELECT count(*) FROM ($all) a WHERE a.x LIKE " . sql_quote("%$t%"));
    }
    is($found, 0, '... and none of them is anywhere in the database');
}

done_testing();
