# Installing the code-hosting App (issue 12): the install flow from the API
# and from the UI's path, the provider's return to /auth/vcs-app/callback
# with a forged installation id, a forged state, a reused state, someone
# else's state and another org's installation; setup_action=request; the
# installation records, unlinking, and the App JWT as the fake checks it.
# The return's OAuth code (request_oauth_on_install): missing, refused,
# reused, or of a provider user who cannot reach the installation (someone
# else's unlinked installation, its id learnt): refused, nothing linked.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use URI ();
use SvcTest;

plan skip_all => 'the fake code-hosting provider is not running (use tools/test.sh)'
    unless $ENV{VCS_WEB_URL} && $ENV{VCS_APP_ID};

my $WEB = $ENV{VCS_WEB_URL};

sub start {
    my ($org, @auth) = @_;
    my ($st, $j) = api(POST => "/api/orgs/$org/vcs/install", @auth);
    my ($state) = ($j && $j->{url} // '') =~ /[?&]state=([^&]+)/;
    record_secret($state);
    return ($st, $j, $state);
}

# The provider's return. Unless `code` is given (undef: none), it carries a
# fresh OAuth code of the provider's user 'octo', who reaches the
# installations vcs_installation makes (request_oauth_on_install).
sub callback {
    my ($state, $id, $action, %opt) = @_;
    my $code = exists $opt{code} ? delete $opt{code} : vcs_install_code('octo');
    my @q;
    push @q, "installation_id=$id" if defined $id;
    push @q, "setup_action=$action" if defined $action;
    push @q, "state=$state" if defined $state;
    push @q, "code=$code" if defined $code;
    return api(GET => '/auth/vcs-app/callback?' . join('&', @q), %opt);
}

sub record_of {
    my $id = shift;
    my ($r) = psql('SELECT o.slug, i.status, i.account_login, i.account_type,'
                   . ' i.repository_selection, u.email FROM vcs_installations i'
                   . ' JOIN orgs o ON o.id = i.org_id LEFT JOIN users u ON u.id = i.linked_by'
                   . " WHERE i.installation_id = $id");
    return $r ? join(' ', map { $_ // '-' } @$r) : 'none';
}

sub problem_code { my ($st, $p) = @_; return "$st " . ($p && $p->{code} // '') }

my $owner = new_user('in-owner');
my $org = new_org($owner);
my $tok = new_token($owner, scope => 'admin');
my $member = new_user('in-member');
svcctl('org', 'add-member', $org, $member, '--role', 'member');

# --- starting the flow --------------------------------------------------------------
{
    my ($st, $j, $state) = start($org, token => $tok);
    is($st, 200, 'POST /api/orgs/:org/vcs/install: 200');
    like($j->{url} // '', qr{^\Q$WEB\E/apps/\Q$ENV{VCS_APP_SLUG}\E/installations/new\?state=[A-Za-z0-9]{43}\z},
         '... the provider\'s install page of our App, with a 256-bit state');
    is(psql_value('SELECT count(*) FROM vcs_states s JOIN orgs o ON o.id = s.org_id'
                  . " WHERE s.purpose = 'install' AND o.slug = " . sql_quote($org)
                  . " AND s.expires_at BETWEEN now() + interval '9 minutes' AND now() + interval '10 minutes'"),
       1, '... kept for ten minutes, bound to the org');
    is(psql_value("SELECT count(*) FROM vcs_states WHERE encode(state_hash, 'escape') LIKE "
                  . sql_quote("%$state%")), 0, '... as a hash only');

    my $cookie = new_session($owner);
    my ($st2, undef, $res) = api(GET => "/orgs/$org/vcs/install", cookie => $cookie);
    is($st2, 302, 'GET /orgs/:org/vcs/install with a session: 302');
    like($res->header('Location') // '', qr{^\Q$WEB\E/apps/\Q$ENV{VCS_APP_SLUG}\E/installations/new\?state=[A-Za-z0-9]{43}\z},
         '... to the provider\'s install page');
    is($res->header('Referrer-Policy'), 'no-referrer', '... without a Referer');
    my ($s) = ($res->header('Location') // '') =~ /state=(\w+)/;
    record_secret($s);

    my $mtok = new_token($member, scope => 'admin');
    is(problem_code(api(POST => "/api/orgs/$org/vcs/install", token => $mtok)), '403 forbidden',
       'a member who is no admin: 403');
    is(problem_code(api(GET => "/orgs/$org/vcs/install", cookie => new_session($member))),
       '403 forbidden', '... on the UI path too');
    ($st2) = api(GET => "/orgs/$org/vcs/install");
    is($st2, 401, 'the UI path without credentials: 401');
}

# --- the callback links a real installation ---------------------------------------
my $linked;
{
    my $i = vcs_installation(selection => 'all');
    my (undef, undef, $state) = start($org, token => $tok);
    my ($st, undef, $res) = callback($state, $i->{id}, 'install', token => $tok);
    is($st, 200, 'callback with the state and a real installation: 200');
    like($res->header('Content-Type') // '', qr{^text/html}, '... a page');
    like($res->content, qr/Installation <b>$i->{id}<\/b>.*<b>\Q$i->{login}\E<\/b> is linked to <b>\Q$org\E<\/b>/s,
         '... saying what was linked');
    like($res->header('Content-Security-Policy') // '', qr/default-src 'none'/,
         '... with a policy that allows no script');
    is(record_of($i->{id}), "$org active $i->{login} Organization all $owner",
       'the installation record: the org, active, account, selection, who linked it');
    my $app = vcs_app_state();
    is($app->{last}{jwt}{ok}, 1, 'the provider was asked with an App JWT it verified (RS256, '
       . 'iss, iat, exp)');
    is($app->{last}{jwt}{path}, "/app/installations/$i->{id}", '... about this installation');
    is(join(' ', map { $_->[0] } psql("SELECT action FROM audit_log WHERE target_type = "
       . "'vcs_installation' AND target_id = '$i->{id}' ORDER BY id")), 'vcs.installation.linked',
       'audit: vcs.installation.linked');
    is(psql_value("SELECT data->>'status' FROM events WHERE kind = 'vcs.installation'"
                  . " AND (data->>'installation_id')::bigint = $i->{id}"), 'active',
       'event: vcs.installation on the org stream');
    is(problem_code(callback($state, $i->{id}, 'install', token => $tok)),
       '400 invalid_state', 'the same state again: 400 invalid_state');
    $linked = $i;

    # update: the user changed the selection at the provider; linked anew.
    (undef, undef, $state) = start($org, token => $tok);
    ($st) = callback($state, $i->{id}, 'update', token => $tok);
    is($st, 200, 'setup_action=update for the org\'s own installation: 200');
}

# --- what proves nothing ------------------------------------------------------------
{
    my $forged = 30_000_000 + int(rand(1e9));
    my (undef, undef, $state) = start($org, token => $tok);
    my $before = db_digest();
    is(problem_code(callback($state, $forged, 'install', token => $tok)),
       '403 installation_not_accessible',
       'a forged installation id (unknown to the provider): 403, the user reaches no such one');
    delete $before->{vcs_states};
    my $after = db_digest();
    delete $after->{vcs_states};
    is_deeply($after, $before, '... nothing recorded');
    is(problem_code(callback($state, $linked->{id}, 'install', token => $tok)),
       '400 invalid_state', '... and the state is used up');

    my $i = vcs_installation();
    is(problem_code(callback('F0rgedStateF0rgedStateF0rgedStateF0rgedSta', $i->{id}, 'install',
                             token => $tok)), '400 invalid_state', 'a forged state: 400');
    is(problem_code(callback(undef, $i->{id}, 'install', token => $tok)), '400 invalid_state',
       'no state: 400');
    is(record_of($i->{id}), 'none', '... nothing recorded');

    # Another admin of the same org cannot finish someone else's flow.
    my $admin = new_user('in-admin');
    svcctl('org', 'add-member', $org, $admin, '--role', 'admin');
    (undef, undef, $state) = start($org, token => $tok);
    is(problem_code(callback($state, $i->{id}, 'install', token => new_token($admin, scope => 'admin'))),
       '400 invalid_state', 'someone else\'s state: 400');
    is(problem_code(callback($state, $i->{id}, 'install', token => $tok)), '400 invalid_state',
       '... which used it up');
    is(record_of($i->{id}), 'none', '... nothing recorded');

    # An expired state.
    (undef, undef, $state) = start($org, token => $tok);
    psql("UPDATE vcs_states SET created_at = now() - interval '11 minutes', expires_at = now()"
         . " - interval '1 minute' WHERE purpose = 'install' AND expires_at > now()"
         . " AND org_id = " . sql_quote(org_id_of($org)));
    is(problem_code(callback($state, $i->{id}, 'install', token => $tok)), '400 invalid_state',
       'an expired state: 400');

    (undef, undef, $state) = start($org, token => $tok);
    is(problem_code(callback($state, $i->{id}, 'delete', token => $tok)), '400 invalid_request',
       'an unknown setup_action: 400');
    my ($st) = callback($state, $i->{id}, 'install');
    is($st, 401, 'the callback without credentials: 401');
}

# --- the OAuth code: who came back must reach the installation -----------------------
{
    # Someone else's installation that no org linked: its id is easy to learn
    # (it is in URLs at the provider), and this admin holds a state of their
    # own org. Their provider account does not reach it.
    my $victim = vcs_installation(users => [ 'victim-owner' ]);
    my (undef, undef, $state) = start($org, token => $tok);
    my $before = db_digest();
    my ($st, $p) = callback($state, $victim->{id}, 'install', token => $tok,
                            code => vcs_install_code('mallory'));
    is("$st " . ($p->{code} // ''), '403 installation_not_accessible',
       'someone else\'s unlinked installation, its id forged into the return: 403');
    like($p->{detail} // '', qr/no access to installation $victim->{id}.*Nothing was linked/s,
         '... saying why, and that nothing was linked');
    is(vcs_app_state()->{last}{user_installations}{user}, 'mallory',
       '... the provider was asked with the returning user\'s token');
    delete $before->{vcs_states};
    my $after = db_digest();
    delete $after->{vcs_states};
    is_deeply($after, $before, '... nothing recorded');
    is(record_of($victim->{id}), 'none', '... no record');

    # The same once its owner's org had linked and unlinked it.
    my $o2 = new_user('in-victim');
    my $vorg = new_org($o2);
    vcs_record_installation($vorg, $victim, status => 'unlinked');
    (undef, undef, $state) = start($org, token => $tok);
    is(problem_code(callback($state, $victim->{id}, 'update', token => $tok,
                             code => vcs_install_code('mallory'))),
       '403 installation_not_accessible', 'an installation another org unlinked: 403 too');
    like(record_of($victim->{id}), qr/^\Q$vorg\E unlinked /, '... it stays as it was');

    # No code: an App created without request_oauth_on_install.
    my $i = vcs_installation();
    (undef, undef, $state) = start($org, token => $tok);
    ($st, $p) = callback($state, $i->{id}, 'install', token => $tok, code => undef);
    is("$st " . ($p->{code} // ''), '400 install_code_missing', 'a return without a code: 400');
    like($p->{detail} // '', qr/request user authorization \(OAuth\) during installation/,
         '... saying what the App must be set to');
    is(record_of($i->{id}), 'none', '... nothing recorded');

    # A code the provider never issued, and one used already.
    (undef, undef, $state) = start($org, token => $tok);
    is(problem_code(callback($state, $i->{id}, 'install', token => $tok,
                             code => 'f00dfeedf00dfeedf00d')),
       '400 install_code_rejected', 'a code the provider refuses (bad_verification_code): 400');
    is(vcs_app_state()->{last}{user_token}{error}, 'bad_verification_code',
       '... as the provider answered it');
    my $code = vcs_install_code('octo');
    (undef, undef, $state) = start($org, token => $tok);
    ($st) = callback($state, $i->{id}, 'install', token => $tok, code => $code);
    is($st, 200, 'the installing user\'s code: linked');
    is(record_of($i->{id}), "$org active $i->{login} Organization selected $owner",
       '... recorded');
    (undef, undef, $state) = start($org, token => $tok);
    is(problem_code(callback($state, $i->{id}, 'update', token => $tok, code => $code)),
       '400 install_code_rejected', 'the same code again: 400');
    (undef, undef, $state) = start($org, token => $tok);
    is(problem_code(callback($state, $i->{id}, 'update', token => $tok, code => 'not%20a%20code!')),
       '400 install_code_rejected', 'a code that is no code: 400, the provider not asked');

    # The user token served one question: it is nowhere in the database.
    my $ut = (grep { /^ghu_/ } @{ vcs_state()->{issued} })[-1];
    ok($ut, 'the provider issued a user token');
    my $dump = pg_dump_text();
    unlike($dump, qr/\Q$ut\E/, '... which no table holds') if $ut;

    # Many installations: the user's list is paged.
    my $many = uniq('many');
    my @ids = map { vcs_installation(users => [ $many ])->{id} } 1 .. 3;
    my $target = vcs_installation(users => [ $many ], id => 9_000_000_000 + int(rand(1e6)));
    (undef, undef, $state) = start($org, token => $tok);
    vcs_control(page_max => 2);
    ($st) = callback($state, $target->{id}, 'install', token => $tok,
                     code => vcs_install_code($many));
    vcs_control(page_max => undef);
    is($st, 200, 'an installation on the last page of the user\'s list: linked');
    is(vcs_app_state()->{last}{user_installations}{pages}, 2, '... after following Link to page 2');
}

# --- another org's installation ------------------------------------------------------
{
    my $other = new_user('in-other');
    my $org2 = new_org($other);
    my $tok2 = new_token($other, scope => 'admin');
    my (undef, undef, $state) = start($org2, token => $tok2);
    is(problem_code(callback($state, $linked->{id}, 'install', token => $tok2)),
       '409 installation_linked_elsewhere', 'an installation linked to another org: 409');
    is(record_of($linked->{id}), "$org active $linked->{login} Organization all $owner",
       '... it stays with its org');
}

# --- setup_action=request: nothing recorded -----------------------------------------
{
    my $i = vcs_installation();
    my $count = 'SELECT count(*) FROM vcs_installations i JOIN orgs o ON o.id = i.org_id'
                . ' WHERE o.slug = ' . sql_quote($org);
    my $before = psql_value($count);
    my (undef, undef, $state) = start($org, token => $tok);
    my ($st, undef, $res) = callback($state, undef, 'request', token => $tok);
    is($st, 202, 'setup_action=request: 202');
    like($res->content, qr/An owner of the account must approve/, '... says an owner must approve');
    like($res->content, qr/Nothing was linked/, '... and that nothing was linked');
    is(psql_value($count), $before, '... no record');
}

# --- an installation the provider reports suspended -----------------------------------
{
    my $i = vcs_installation(suspended => 1, type => 'User');
    my (undef, undef, $state) = start($org, token => $tok);
    my ($st, undef, $res) = callback($state, $i->{id}, 'install', token => $tok);
    is($st, 200, 'a suspended installation: linked');
    like($res->content, qr/reports it suspended/, '... the page says it is suspended');
    is(record_of($i->{id}), "$org suspended $i->{login} User selected $owner",
       '... recorded as suspended');
}

# --- the admin who started was demoted meanwhile --------------------------------------
{
    my $admin = new_user('in-demoted');
    svcctl('org', 'add-member', $org, $admin, '--role', 'admin');
    my $atok = new_token($admin, scope => 'admin');
    my $i = vcs_installation();
    my (undef, undef, $state) = start($org, token => $atok);
    my $uid = user_id_of($admin);
    psql("UPDATE org_members SET role = 'member' WHERE user_id = '$uid'");
    is(problem_code(callback($state, $i->{id}, 'install', token => $atok)), '403 forbidden',
       'an admin demoted before the provider sent them back: 403');
    is(record_of($i->{id}), 'none', '... nothing recorded');
}

# --- the provider misbehaves ------------------------------------------------------------
{
    my $i = vcs_installation();
    my (undef, undef, $state) = start($org, token => $tok);
    vcs_control(mode => 'app_500');
    is(problem_code(callback($state, $i->{id}, 'install', token => $tok)), '502 provider_error',
       'the provider answers 500: 502 provider_error');
    vcs_control(mode => 'ok');
    is(record_of($i->{id}), 'none', '... nothing recorded');
}

# --- the records, and unlinking -------------------------------------------------------------
{
    my ($st, $list) = api(GET => "/api/orgs/$org/vcs/installations", token => $tok);
    is($st, 200, 'GET /api/orgs/:org/vcs/installations');
    my ($item) = grep { $_->{installation_id} == $linked->{id} } @{ $list->{data} // [] };
    is($item && $item->{status}, 'active', '... lists the installation, active');
    is($item && $item->{account}{login}, $linked->{login}, '... with its account');
    is($item && $item->{repository_selection}, 'all', '... and selection');
    my $viewer = new_user('in-viewer');
    svcctl('org', 'add-member', $org, $viewer, '--role', 'viewer');
    ($st) = api(GET => "/api/orgs/$org/vcs/installations", token => new_token($viewer, scope => 'read'));
    is($st, 200, '... which a viewer may read');

    # A project linked to one of its repositories loses the link.
    my $proj = uniq('p');
    api(POST => "/api/orgs/$org/projects", token => $tok, json => { slug => $proj, name => 'P' });
    my $pid = psql_value("SELECT id FROM projects WHERE slug = '$proj'");
    psql("INSERT INTO vcs_project_repos (project_id, org_id, installation_id, full_name, repo_id,"
         . " private, default_branch) VALUES ('$pid', " . sql_quote(org_id_of($org))
         . ", $linked->{id}, " . sql_quote("$linked->{login}/api") . ", 1, true, 'main')");

    my ($st2, $un) = api(DELETE => "/api/orgs/$org/vcs/installations/$linked->{id}", token => $tok);
    is($st2, 200, 'DELETE unlinks: 200');
    is($un->{installation}{status}, 'unlinked', '... the record says unlinked');
    is($un->{uninstall_url},
       "$WEB/organizations/$linked->{login}/settings/installations/$linked->{id}",
       '... where the account\'s owner uninstalls the App at the provider');
    like($un->{detail} // '', qr/stays installed .* at the code-hosting provider/,
         '... and says the App stays installed there');
    is(record_of($linked->{id}), "$org unlinked $linked->{login} Organization all $owner",
       'the record is kept');
    is(psql_value("SELECT count(*) FROM vcs_project_repos WHERE project_id = '$pid'"), 0,
       'the project\'s link to its repository is gone');
    is(psql_value("SELECT data->'repositories_unlinked'->0->>'full_name' FROM audit_log WHERE"
                  . " action = 'vcs.installation.unlinked' AND target_id = '$linked->{id}'"),
       "$linked->{login}/api", 'audit: vcs.installation.unlinked, with the links it ended');
    ($st2, $un) = api(DELETE => "/api/orgs/$org/vcs/installations/$linked->{id}", token => $tok);
    is($st2, 200, 'unlinking again: 200');
    is(psql_value("SELECT count(*) FROM audit_log WHERE action = 'vcs.installation.unlinked'"
                  . " AND target_id = '$linked->{id}'"), 1, '... with no second entry');
    is(join(' ', map { $_->[0] } psql("SELECT data->>'status' FROM events WHERE kind = "
       . "'vcs.installation' AND (data->>'installation_id')::bigint = $linked->{id} ORDER BY id")),
       'active active unlinked', 'events: linked, linked again, unlinked');
    ($st2) = api(DELETE => "/api/orgs/$org/vcs/installations/999999999", token => $tok);
    is($st2, 404, 'unlinking an installation the org does not have: 404');

    # Once unlinked, another org may link it.
    my $other = new_user('in-next');
    my $org3 = new_org($other);
    my $tok3 = new_token($other, scope => 'admin');
    my (undef, undef, $state) = start($org3, token => $tok3);
    ($st2) = callback($state, $linked->{id}, 'update', token => $tok3);
    is($st2, 200, 'an unlinked installation, linked by another org: 200');
    is(record_of($linked->{id}), "$org3 active $linked->{login} Organization all $other",
       '... it is theirs now');
}

done_testing();
