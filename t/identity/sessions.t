# Signed-in sessions (issue 4): GET /api/me/sessions, DELETE
# /api/me/sessions/:id, POST /api/me/sessions/revoke-others. Revocation takes
# effect on the next request; cookie-authenticated changes pass the Origin
# check; tokens manage sessions only with admin scope and no org binding.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

plan skip_all => 'the fake code-hosting provider is not running (use tools/test.sh)'
    unless $ENV{VCS_WEB_URL};

my $BASE = base_url();
my %SAME = (Origin => $BASE);
my %EVIL = (Origin => 'https://evil.example');

vcs_reset();
new_vcs_user('sess');
my @cookies = map { sign_in(browser())->{session} } 1 .. 3;
my ($A, $B, $C) = @cookies;
my %sid;
for my $c (@cookies) {
    my (undef, $me) = api(GET => '/api/me', cookie => $c);
    $sid{$c} = $me->{auth}{session}{id};
}
my (undef, $me) = api(GET => '/api/me', cookie => $A);
my $email = $me->{email};
my $admin = new_token($email, scope => 'admin');

sub live { my ($st) = api(GET => '/api/me', cookie => shift); return $st == 200 }

sub revocations {
    my $id = shift;
    return psql_value("SELECT string_agg(data->>'reason', ',' ORDER BY id) FROM audit_log"
                      . " WHERE action = 'session.revoked' AND target_id = '$id'") // '';
}

# --- list -----------------------------------------------------------------------------
{
    my ($st, $list) = api(GET => '/api/me/sessions', cookie => $A);
    is($st, 200, 'list: 200');
    my @data = @{ $list->{data} // [] };
    is(scalar @data, 3, 'list: the three sessions');
    ok(exists $list->{next_cursor} && !defined $list->{next_cursor}, 'list: one page');
    is(join(',', map { $_->{id} } @data), join(',', map { $sid{$_} } $C, $B, $A),
       'list: newest first');
    is(join(',', map { $_->{id} } grep { $_->{current} } @data), $sid{$A},
       'list: exactly the session in use is current');
    my ($item) = @data;
    is_deeply([sort keys %$item],
              [sort qw(id current created_at expires_at last_seen_at ip user_agent)],
              'list: exactly the documented fields');
    ok(JSON::PP::is_bool($item->{current}), 'list: current is a JSON boolean');
    like($item->{created_at} // '', qr/\A\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\z/, 'list: created_at');
    like($item->{expires_at} // '', qr/\A\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\z/, 'list: expires_at');
    ok(exists $item->{last_seen_at}, 'list: last_seen_at');
    is($item->{ip}, '127.0.0.1', 'list: the address it was opened from');
    is($item->{user_agent}, 'Mozilla/5.0 (mod_svc tests)', 'list: the browser');

    my ($st1, $p1) = api(GET => '/api/me/sessions?limit=2', cookie => $A);
    is(scalar @{ $p1->{data} // [] }, 2, 'paged: 2 of 3');
    ok($p1->{next_cursor}, 'paged: a next cursor');
    my ($st2, $p2) = api(GET => "/api/me/sessions?limit=2&cursor=$p1->{next_cursor}", cookie => $A);
    is(join(',', map { $_->{id} } @{ $p2->{data} // [] }), $sid{$A}, 'paged: the last one');
    ok(!defined $p2->{next_cursor}, 'paged: no further page');
    my ($st3) = api(GET => '/api/me/sessions?limit=0', cookie => $A);
    is($st3, 400, 'paged: limit 0 is refused');

    ($st, $list) = api(GET => '/api/me/sessions', token => $admin);
    is($st, 200, 'list with an admin token: 200');
    is(scalar @{ $list->{data} // [] }, 3, '... the same sessions');
    ok(!grep({ $_->{current} } @{ $list->{data} // [] }), '... none of them current');

    for my $scope (qw(read write)) {
        my ($s, $p) = api(GET => '/api/me/sessions', token => new_token($email, scope => $scope));
        is($s, 403, "list with a $scope token: 403");
        is($p && $p->{code}, 'insufficient_scope', "... insufficient_scope");
    }
    my $org = new_org($email);
    my ($s, $p) = api(GET => '/api/me/sessions',
                      token => new_token($email, scope => 'admin', org => $org));
    is($s, 403, 'list with an org-bound admin token: 403');
    is($p && $p->{code}, 'insufficient_scope', '... sessions reach every org');
    ($s) = api(GET => '/api/me/sessions');
    is($s, 401, 'list without credentials: 401');

    # Someone else sees only their own.
    my $other = new_session(new_user('other'));
    ($s, $p) = api(GET => '/api/me/sessions', cookie => $other);
    is(scalar @{ $p->{data} // [] }, 1, 'another user sees only their session');
    my $other_sid = $p->{data}[0]{id};

    # --- revoke one ------------------------------------------------------------------
    ($s, $p) = api(DELETE => "/api/me/sessions/$sid{$B}", cookie => $A, headers => \%EVIL);
    is($s, 403, 'cross-site revoke with a valid cookie: 403');
    is($p && $p->{code}, 'csrf_failed', '... csrf_failed');
    ok(live($B), '... and nothing was revoked');

    # Our own origin is SvcPublicURL's, never one the Host header makes up
    # (issue 14, a decision): a page of the attacker's site, reaching this
    # server under the attacker's name (DNS rebinding, a proxy passing Host
    # through), is not "this server".
    my ($port) = $BASE =~ /:(\d+)$/;
    ($s, $p) = api(DELETE => "/api/me/sessions/$sid{$B}", cookie => $A,
                   headers => { Host => "evil.example:$port",
                                Origin => "http://evil.example:$port" });
    is($s, 403, 'an Origin that matches only the Host header: 403');
    is($p && $p->{code}, 'csrf_failed', '... csrf_failed');
    ok(live($B), '... and nothing was revoked');

    my $res;
    ($s, $p, $res) = api(DELETE => "/api/me/sessions/$sid{$B}", cookie => $A, headers => \%SAME);
    is($s, 204, 'revoke one: 204');
    ok(!grep({ /^service_session=/ } $res->header('Set-Cookie')),
       '... another session: the caller\'s cookie stays');
    ok(!live($B), 'the revoked session: 401 on its next request');
    ok(live($A), 'the caller\'s session: still good');
    ($s) = api(DELETE => "/api/me/sessions/$sid{$B}", cookie => $A, headers => \%SAME);
    is($s, 204, 'revoke again: 204 (idempotent)');
    is(revocations($sid{$B}), 'revoked', '... audited once');
    ($s, $p) = api(DELETE => "/api/me/sessions/$other_sid", cookie => $A, headers => \%SAME);
    is($s, 404, 'another user\'s session: 404');
    ok(live($other), '... untouched');
    ($s) = api(DELETE => '/api/me/sessions/ses_AAAAAAAAAAAAAAAAAAAAAA', cookie => $A,
               headers => \%SAME);
    is($s, 404, 'an unknown session: 404');
    ($s) = api(DELETE => "/api/me/sessions/$sid{$C}", cookie => $A,
               headers => { 'X-Requested-With' => 'XMLHttpRequest' });
    is($s, 204, 'a non-browser client with X-Requested-With may revoke');
    ok(!live($C), '... and did');
    ($s) = api(DELETE => "/api/me/sessions/$sid{$A}", token => new_token($email, scope => 'write'));
    is($s, 403, 'revoke with a write token: 403');

    ($s, $p) = api(GET => '/api/me/sessions', cookie => $A);
    is(join(',', map { $_->{id} } @{ $p->{data} // [] }), $sid{$A},
       'ended sessions leave the list');
}

# --- revoke the others ---------------------------------------------------------------------
{
    my @more = map { sign_in(browser())->{session} } 1 .. 2;
    my ($s, $p) = api(POST => '/api/me/sessions/revoke-others', cookie => $A, headers => \%EVIL);
    is($s, 403, 'cross-site revoke-others: 403');
    ok(live($more[0]) && live($more[1]), '... nothing revoked');

    ($s, $p) = api(POST => '/api/me/sessions/revoke-others', cookie => $A, headers => \%SAME);
    is($s, 200, 'revoke-others: 200');
    is($p && $p->{revoked}, 2, 'revoke-others: two sessions ended');
    ok(!live($more[0]) && !live($more[1]), 'the others: 401 at once');
    ok(live($A), 'the session in use: still good');
    my $ended = psql_value("SELECT count(*) FROM audit_log WHERE action = 'session.revoked'"
                           . " AND data->>'reason' = 'revoke_others'"
                           . " AND actor_user_id = (SELECT id FROM users WHERE email = '$email')");
    is($ended, 2, 'revoke-others: one audit entry per session');
    ($s, $p) = api(POST => '/api/me/sessions/revoke-others', cookie => $A, headers => \%SAME);
    is($p && $p->{revoked}, 0, 'revoke-others again: nothing left to end');
    ($s) = api(POST => '/api/me/sessions/revoke-others', token => new_token($email, scope => 'read'));
    is($s, 403, 'revoke-others with a read token: 403');

    # A token caller has no session of its own: every session ends.
    my @two = map { sign_in(browser())->{session} } 1 .. 2;
    ($s, $p) = api(POST => '/api/me/sessions/revoke-others', token => $admin);
    is($s, 200, 'revoke-others with an admin token: 200');
    is($p && $p->{revoked}, 3, '... ends every session, the browser ones included');
    ok(!live($A) && !live($two[0]) && !live($two[1]), '... all 401');
    ($s) = api(GET => '/api/me', token => $admin);
    is($s, 200, 'the token itself is not a session and still works');
}

# --- ending the session in use ------------------------------------------------------------
{
    my $cookie = sign_in(browser())->{session};
    my (undef, $m) = api(GET => '/api/me', cookie => $cookie);
    my $id = $m->{auth}{session}{id};
    my ($s, $p, $res) = api(DELETE => "/api/me/sessions/$id", cookie => $cookie, headers => \%SAME);
    is($s, 204, 'revoke the session in use: 204');
    ok(grep({ /^service_session=; Path=\/; Max-Age=0/ } $res->header('Set-Cookie')),
       '... and its cookie is cleared');
    ok(!live($cookie), '... which no longer works');
}

done_testing();
