# Sign-in through the code-hosting provider's OAuth app (issue 4), walked
# as a browser walks it (cookie jar, one redirect at a time) against the
# fake provider tools/test.sh starts (t/lib/FakeVcs.pm, GitHub's API), with
# every refusal the issue lists. Sessions themselves: t/identity/sessions.t.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use Digest::SHA qw(hmac_sha256);
use File::Spec ();
use IO::Socket::INET ();
use Time::HiRes qw(time sleep);
use URI ();
use URI::Escape qw(uri_escape);
use SvcTest;

plan skip_all => 'the fake code-hosting provider is not running (use tools/test.sh)'
    unless $ENV{VCS_WEB_URL};

my $BASE = base_url();
my $UI = 'http://ui.example.test';          # SvcUIURL http://ui.example.test/home
my $TRUE = JSON::PP::true();
my $FALSE = JSON::PP::false();

record_secret($ENV{VCS_OAUTH_CLIENT_SECRET});
vcs_reset();

sub problem {
    my $res = shift;
    return (eval { json()->decode($res->content) }) // {};
}

sub refused {
    my ($res, $status, $code, $name) = @_;
    if (!$res) {
        fail("$name: no response");
        return;
    }
    is($res->code, $status, "$name: $status");
    like($res->header('Content-Type') // '', qr{^application/problem\+json},
         "$name: a problem document");
    is(problem($res)->{code}, $code, "$name: code $code");
    ok(!grep({ /^service_session=[^;]/ } $res->header('Set-Cookie')),
       "$name: no session cookie");
}

sub cookie_line {
    my ($res, $name) = @_;
    my ($line) = grep { /^\Q$name\E=/ } $res->header('Set-Cookie');
    return $line // '';
}

sub me { my ($st, $me) = api(GET => '/api/me', cookie => shift); return $st == 200 ? $me : undef }

sub audit_actions {
    my $target = shift;
    return join ' ', map { "$_->[0]/$_->[1]" }
        psql("SELECT action, actor_kind FROM audit_log WHERE target_id = '$target' ORDER BY id");
}

# --- the whole flow ----------------------------------------------------------
{
    my $u = new_vcs_user('alice', name => 'Alice Example');
    my $b = browser();
    my $si = sign_in($b, return_to => '/orgs?tab=runs', stop_before_callback => 1);

    my $login = $si->{login};
    is($login->code, 302, 'login: 302');
    my $loc = URI->new($login->header('Location') // '');
    is($loc->scheme . '://' . $loc->host_port . $loc->path, vcs_url() . '/login/oauth/authorize',
       'login: to the provider\'s authorize URL');
    my %q = $loc->query_form;
    is($q{client_id}, $ENV{VCS_OAUTH_CLIENT_ID}, 'login: our client_id');
    is($q{redirect_uri}, "$BASE/auth/callback", 'login: redirect_uri is our callback');
    is($q{scope}, 'read:user user:email', 'login: the profile and email scopes');
    is($q{code_challenge_method}, 'S256', 'login: PKCE S256');
    like($q{code_challenge} // '', qr/\A[A-Za-z0-9_-]{43}\z/, 'login: a SHA-256 challenge');
    like($q{state} // '', qr/\A[A-Za-z0-9]{43}\z/, 'login: a 256-bit state');
    my $bind = cookie_line($login, 'svc_signin');
    like($bind, qr/^svc_signin=[A-Za-z0-9]{43}; /, 'login: a browser-binding cookie');
    like($bind, qr/; Path=\/auth\/;/, '... only for /auth/');
    like($bind, qr/; Max-Age=600;/, '... for the 10 minutes a sign-in may take');
    like($bind, qr/; HttpOnly\b/, '... HttpOnly');
    like($bind, qr/; SameSite=Lax\b/, '... SameSite=Lax');
    unlike($bind, qr/Secure/, '... not Secure over plain HTTP');
    unlike($bind, qr/\Q$q{state}\E/, '... and it is not the state');
    is($login->header('Referrer-Policy'), 'no-referrer', 'login: Referrer-Policy no-referrer');
    is($login->header('Cache-Control'), 'no-store', 'login: not cached');
    is(psql_value('SELECT count(*) FROM oauth_states WHERE return_to = \'/orgs?tab=runs\''), 1,
       'login: the sign-in is kept server-side');

    is($si->{authorize} && $si->{authorize}->code, 302, 'provider: back to the callback');
    my $cb = $si->{callback} = $b->get($si->{callback_url});
    ($si->{session}) = map { /^service_session=([^;]+)/ ? $1 : () } $cb->header('Set-Cookie');
    record_secret($si->{session});
    is($cb && $cb->code, 302, 'callback: 302');
    is($cb && $cb->header('Location'), "$UI/orgs?tab=runs",
       'callback: to the UI\'s origin plus return_to');
    my $sess = cookie_line($cb, 'service_session');
    like($sess, qr/^service_session=eyJ[\w-]+\.[\w-]+\.[\w-]+; Path=\/; Max-Age=604800; HttpOnly; SameSite=Lax\z/,
         'callback: service_session, HttpOnly, SameSite=Lax, Path=/, SvcSessionLifetime');
    like(cookie_line($cb, 'svc_signin'), qr/^svc_signin=; Path=\/auth\/; Max-Age=0;/,
         'callback: the browser-binding cookie is cleared');
    is(psql_value('SELECT count(*) FROM oauth_states WHERE return_to = \'/orgs?tab=runs\''), 0,
       'callback: the sign-in row is consumed');

    my $st = vcs_state();
    is($st->{last}{token}{pkce_ok}, 1, 'provider saw: the PKCE verifier matches the challenge');
    is($st->{last}{token}{accept}, 'application/json', 'provider saw: Accept: application/json');
    is(join(',', @{ $st->{last}{token}{fields} // [] }),
       'client_id,client_secret,code,code_verifier,redirect_uri',
       'provider saw: the exchange fields');
    is($st->{last}{user}{accept}, 'application/vnd.github+json', 'provider saw: the API media type');
    is($st->{last}{user}{api_version}, '2022-11-28', 'provider saw: X-GitHub-Api-Version');
    is($st->{last}{emails}{authorized}, 1, 'provider saw: the bearer token on /user/emails');

    my $me = me($si->{session});
    ok($me, 'the session cookie authenticates');
    is($me && $me->{email}, $u->{email}, '... as the provider\'s verified primary email');
    is($me && $me->{name}, 'Alice Example', '... with the provider\'s name');
    is($me && $me->{auth}{method}, 'session', '... through a session');
    is($b->get("$BASE/api/me")->code, 200, 'the browser\'s own cookie jar is signed in');
    my $id = $me ? $me->{id} : 'none';
    is(psql_value("SELECT vcs_user_id || ' ' || vcs_login FROM users WHERE id = '$id'"),
       "$u->{id} $u->{login}", 'the user is matched by the provider\'s numeric id');
    is(audit_actions($id), 'user.created/provider user.signed_in/user',
       'audit: user.created by the provider, user.signed_in by the user');
    is(psql_value("SELECT data->>'session_id' FROM audit_log WHERE target_id = '$id'"
                  . " AND action = 'user.signed_in'"), $me && $me->{auth}{session}{id},
       'audit: the session opened');

    # Without return_to the browser lands on SvcUIURL itself.
    my $again = sign_in(browser());
    is($again->{callback} && $again->{callback}->header('Location'), "$UI/home",
       'no return_to: to SvcUIURL');
}

# --- returning users: matched by id, email/name/login refreshed ------------------
{
    my $u = new_vcs_user('bob');
    my $first = me(sign_in(browser())->{session});
    my $new_email = uniq('bob-new') . '@example.test';
    vcs_control(user => { id => $u->{id}, login => "$u->{login}-x", name => 'Bob Renamed',
                          emails => [ { email => $u->{email}, primary => $FALSE, verified => $TRUE },
                                      { email => $new_email, primary => $TRUE, verified => $TRUE } ] });
    my $second = me(sign_in(browser())->{session});
    ok($first && $second, 'returning user: signed in twice');
    is($second->{id}, $first->{id}, 'returning user: the same account');
    is($second->{email}, $new_email, 'returning user: the new primary email');
    is($second->{name}, 'Bob Renamed', 'returning user: the new name');
    is(psql_value("SELECT vcs_login FROM users WHERE id = '$first->{id}'"), "$u->{login}-x",
       'returning user: the new login');
    is(audit_actions($first->{id}), 'user.created/provider user.signed_in/user user.signed_in/user',
       'returning user: created once, signed in twice');

    # A name-less profile keeps the name we have.
    vcs_control(user => { id => $u->{id}, login => "$u->{login}-x", name => undef,
                          emails => [ { email => $new_email, primary => $TRUE, verified => $TRUE } ] });
    my $third = me(sign_in(browser())->{session});
    is($third && $third->{name}, 'Bob Renamed', 'returning user without a name: name kept');
}

# --- an account made by svcctl is linked on its first sign-in, if allowed ------
{
    my $email = new_user('carol', name => 'Carol Ops', allow_email_link => 1);
    my $local = psql_value("SELECT id FROM users WHERE email = '$email'");
    my $u = new_vcs_user('carol', email => uc $email, name => 'Carol GitHub');
    my $me = me(sign_in(browser())->{session});
    is($me && $me->{id}, $local, 'link: the existing account (email matched case-insensitively)');
    is($me && $me->{name}, 'Carol Ops', 'link: the name set by the operator is kept');
    is(psql_value("SELECT vcs_user_id FROM users WHERE id = '$local'"), $u->{id},
       'link: the provider id is recorded');
    is(psql_value("SELECT link_by_email FROM users WHERE id = '$local'"), 'f',
       'link: the permission is used up');
    is(audit_actions($local), 'user.created/operator user.linked/provider user.signed_in/user',
       'link: audit user.linked by the provider');
}

# --- ... and never without the operator's permission (issue 14, a decision) ------
# A provider account with the verified address of an account an operator
# made used to take that account over. Now it is refused unless the
# operator allowed the link, and the account stays as it was.
{
    my $email = new_user('heidi', name => 'Heidi Ops');
    my $local = user_id_of($email);
    my $before = psql_value("SELECT count(*) FROM sessions WHERE user_id = '$local'");
    my $u = new_vcs_user('heidi', email => $email);
    my $si = sign_in(browser());
    refused($si->{callback}, 409, 'account_exists', 'an existing account, link not allowed');
    like($si->{callback} && $si->{callback}->content, qr/svcctl user allow-email-link/,
         '... saying how an operator allows it');
    is(psql_value("SELECT vcs_user_id IS NULL FROM users WHERE id = '$local'"), 't',
       '... the account is not linked');
    is(psql_value("SELECT count(*) FROM sessions WHERE user_id = '$local'"), $before,
       '... no session was opened for it');
    is(psql_value("SELECT count(*) FROM users WHERE lower(email) = lower('$email')"), 1,
       '... and no second account was made');

    # The operator allows it: the next sign-in claims the account.
    like(svcctl('user', 'allow-email-link', $email), qr/may now be claimed/,
         'svcctl user allow-email-link');
    my $me = me(sign_in(browser())->{session});
    is($me && $me->{id}, $local, '... then the sign-in links the account');
    is(audit_actions($local),
       'user.created/operator user.email_link_allowed/operator user.linked/provider '
       . 'user.signed_in/user', '... all of it audited');
    my ($rc, undef, $err) = SvcTest::run([ $ENV{SVCCTL}, 'user', 'allow-email-link', $email ]);
    is($rc >> 8, 1, 'allowing it again once claimed: exit 1');
    like($err, qr/claimed/, '... saying why');
}

# --- invites to the signed-in address become visible -----------------------------
{
    my $owner = new_user('inviter');
    my $org = new_org($owner);
    my $admin = new_token($owner, scope => 'admin');
    my $email = uniq('invitee') . '@example.test';
    my ($st, $inv) = api(POST => "/api/orgs/$org/members", token => $admin,
                         json => { email => $email, role => 'member' });
    is($st, 201, 'invites: an owner invites an address nobody has signed in with');
    new_vcs_user('invitee', email => $email);
    my $cookie = sign_in(browser())->{session};
    my $list;
    ($st, $list) = api(GET => '/api/me/invites', cookie => $cookie);
    is($st, 200, 'invites: GET /api/me/invites with the new session');
    is(join(',', map { "$_->{org}{slug}/$_->{role}" } @{ $list->{data} // [] }), "$org/member",
       'invites: the pending invite to the verified address is visible');
    ($st) = api(POST => "/api/me/invites/$inv->{id}/accept", cookie => $cookie,
                headers => { Origin => $BASE });
    is($st, 200, 'invites: accepted through the session');
    my $me = me($cookie);
    is(join(',', map { "$_->{slug}/$_->{role}" } @{ $me->{orgs} // [] }), "$org/member",
       'invites: the user is now a member');
}

# --- an address another provider identity has is not taken over ----------------
{
    my $dave = new_vcs_user('dave');
    ok(me(sign_in(browser())->{session}), 'dave signs in');
    my $eve = new_vcs_user('eve', email => $dave->{email});
    my $si = sign_in(browser());
    refused($si->{callback}, 409, 'email_in_use', 'another identity with an address in use');
    is(psql_value("SELECT count(*) FROM users WHERE vcs_user_id = $eve->{id}"), 0,
       '... and no user is created');
}

# --- no verified primary email --------------------------------------------------
{
    my $u = new_vcs_user('frank', verified => 0);
    my $si = sign_in(browser());
    refused($si->{callback}, 403, 'email_not_verified', 'an unverified primary email');
    is(psql_value("SELECT count(*) FROM users WHERE vcs_user_id = $u->{id}"
                  . " OR lower(email) = lower('$u->{email}')"), 0, '... no user created');

    $u = new_vcs_user('grace', primary => 0);
    $si = sign_in(browser());
    refused($si->{callback}, 403, 'no_primary_email', 'no primary email');
    is(psql_value("SELECT count(*) FROM users WHERE vcs_user_id = $u->{id}"), 0,
       '... no user created');
}

# --- state: missing, wrong, without the browser's cookie, replayed, expired ---------
{
    new_vcs_user('state');
    my $b = browser();
    refused($b->get("$BASE/auth/callback?code=abc"), 400, 'invalid_state', 'no state');

    my $si = sign_in($b, stop_before_callback => 1);
    (my $wrong = $si->{callback_url}) =~ s/state=[^&]+/'state=' . ('Q' x 43)/e;
    refused($b->get($wrong), 400, 'invalid_state', 'a state the server never issued');

    # The right state from another browser: someone else's sign-in (login CSRF).
    refused(browser()->get($si->{callback_url}), 400, 'invalid_state',
            'the state without the browser\'s cookie');
    refused($b->get($si->{callback_url}), 400, 'invalid_state',
            '... which used it up: a state is good for one callback');

    my ($b1, $b2) = (browser(), browser());
    my $s1 = sign_in($b1, stop_before_callback => 1);
    sign_in($b2, stop_before_callback => 1);
    refused($b2->get($s1->{callback_url}), 400, 'invalid_state',
            'another browser\'s state with this browser\'s cookie');

    my $b3 = browser();
    my $ok = sign_in($b3);
    is($ok->{callback} && $ok->{callback}->code, 302, 'a sign-in completes');
    refused($b3->get($ok->{callback_url}), 400, 'invalid_state', 'its callback replayed');

    # The same code under a fresh, valid state: the provider refuses it.
    my $s4 = sign_in($b3, stop_before_callback => 1);
    (my $replay = $s4->{callback_url}) =~ s/code=[^&]+/code=$ok->{code}/;
    refused($b3->get($replay), 401, 'code_rejected', 'a replayed code');

    my $s5 = sign_in($b3, stop_before_callback => 1);
    psql("UPDATE oauth_states SET created_at = now() - interval '20 minutes',"
         . " expires_at = now() - interval '10 minutes'");
    refused($b3->get($s5->{callback_url}), 400, 'invalid_state', 'a sign-in older than 10 minutes');
    sign_in(browser(), stop_before_callback => 1);
    psql("UPDATE oauth_states SET created_at = now() - interval '20 minutes',"
         . " expires_at = now() - interval '10 minutes'");
    sign_in(browser(), stop_before_callback => 1);
    is(psql_value('SELECT count(*) FROM oauth_states WHERE expires_at < now()'), 0,
       'abandoned sign-ins are swept by the next one');
}

# --- the user declines, the provider fails --------------------------------------
{
    new_vcs_user('deny');
    vcs_control(mode => 'deny');
    my $si = sign_in(browser());
    refused($si->{callback}, 401, 'sign_in_denied', 'the user declines at the provider');
    like(problem($si->{callback})->{detail} // '', qr/access_denied/, '... and is told so');

    for my $mode (qw(token_error token_500 token_garbage user_500)) {
        vcs_control(mode => $mode);
        $si = sign_in(browser());
        refused($si->{callback}, 502, 'provider_error', "provider failure: $mode");
        my $body = $si->{callback} ? $si->{callback}->content : '';
        unlike($body, qr/\Q$ENV{VCS_OAUTH_CLIENT_SECRET}\E/, "$mode: no client secret in the answer");
        unlike($body, qr/\Q$si->{code}\E/, "$mode: no code in the answer") if $si->{code};
    }
    vcs_control(mode => 'ok');
    # The operator is told why, at warning level, without the secret.
    my $log = do { local (@ARGV, $/) = (error_log_path()); <> } // '';
    like($log, qr/SVC0022: signInCallback answered 502 \(provider_error\).*incorrect_client_credentials/,
         'the error log says the provider refused our client credentials');
    like($log, qr/\[svc:warn\][^\n]*SVC0022/, '... as a warning, not an error');
}

# --- a provider that never answers -------------------------------------------------
for my $mode (qw(token_timeout emails_timeout)) {
    new_vcs_user('slow');
    vcs_control(mode => $mode, hang_seconds => 20);
    my $t0 = time;
    my $si = sign_in(browser());
    my $took = time - $t0;
    refused($si->{callback}, 504, 'provider_timeout', "the provider never answers ($mode)");
    # SvcVcsTimeout is 3 s for the whole sign-in; the client would wait 60 s.
    cmp_ok($took, '<', 9, "$mode: the worker is let go after the configured timeout");
    vcs_control(mode => 'ok');
}

# --- redirect targets outside the UI's origin --------------------------------------
for my $bad ('//evil.example/', 'https://evil.example/', '/\\evil.example', 'evil.example',
             "/\r\nSet-Cookie: x=y", 'javascript:alert(1)', '/ok/../\\evil') {
    (my $shown = $bad) =~ s/([^\x21-\x7e])/sprintf '\\x%02x', ord $1/ge;
    my $r = browser()->get("$BASE/auth/login?return_to=" . uri_escape($bad));
    is($r->code, 400, "return_to $shown: 400");
    is(problem($r)->{errors}[0]{code}, 'invalid_return_to', "return_to $shown: invalid_return_to");
    ok(!defined $r->header('Location'), "return_to $shown: no redirect");
}

# --- forged and altered cookies, and the JWT negative vectors ------------------------
{
    my $u = new_vcs_user('jwt');
    my $good = sign_in(browser())->{session};
    my $me = me($good);
    my ($sub, $sid) = ($me->{id}, $me->{auth}{session}{id});
    my $other = psql_value("SELECT id FROM users WHERE id <> '$sub' LIMIT 1");
    my $exp = int(time) + 3600;
    my $H = '{"alg":"HS256","typ":"JWT"}';
    my $claims = qq({"sub":"$sub","sid":"$sid","exp":$exp});

    # The forge signs as the server does: its honest token is accepted, so
    # each refusal below is the verifier's doing, not a broken forgery.
    my ($status) = api(GET => '/api/me', cookie => jwt_forge($H, $claims));
    is($status, 200, 'a correctly signed token for the live session is accepted');

    my ($h64, $c64, $s64) = split /\./, $good;
    (my $altered = $c64) =~ s/^(.)/$1 eq 'A' ? 'B' : 'A'/e;
    my %vectors = (
        'alg none, no signature'    => b64url('{"alg":"none","typ":"JWT"}') . '.' . b64url($claims) . '.',
        'alg none, signed'          => jwt_forge('{"alg":"none","typ":"JWT"}', $claims),
        'alg HS512'                 => jwt_forge('{"alg":"HS512","typ":"JWT"}', $claims),
        'alg RS256 (key confusion)' => jwt_forge('{"alg":"RS256","typ":"JWT"}', $claims),
        'RS256 signed with a public key as HMAC secret' =>
            do { my $in = b64url('{"alg":"RS256","typ":"JWT"}') . '.' . b64url($claims);
                 "$in." . b64url(hmac_sha256($in, "-----BEGIN PUBLIC KEY-----\nMIIBIjANBg\n")) },
        'a header naming its own key' => jwt_forge('{"alg":"HS256","typ":"JWT","jwk":{"kty":"oct","k":"AA"}}', $claims),
        'no exp'                    => jwt_forge($H, qq({"sub":"$sub","sid":"$sid"})),
        'expired'                   => jwt_forge($H, qq({"sub":"$sub","sid":"$sid","exp":@{[int(time) - 60]}})),
        'nbf in the future'         => jwt_forge($H, qq({"sub":"$sub","sid":"$sid","exp":$exp,"nbf":@{[int(time) + 600]}})),
        'two segments'              => "$h64.$c64",
        'four segments'             => "$good.$s64",
        'one segment'               => $h64,
        'non-base64url characters'  => "$h64.$c64." . ('+/' . substr($s64, 2)),
        'padding'                   => "$good=",
        'altered claims'            => "$h64.$altered.$s64",
        'signed with another key'   => do { my $in = "$h64.$c64"; "$in." . b64url(hmac_sha256($in, 'k' x 32)) },
        'a session id that does not exist' => jwt_forge($H, qq({"sub":"$sub","sid":"ses_AAAAAAAAAAAAAAAAAAAAAA","exp":$exp})),
        'the session of another user' => jwt_forge($H, qq({"sub":"$other","sid":"$sid","exp":$exp})),
        'garbage'                   => 'not-a-jwt',
    );
    for my $name (sort keys %vectors) {
        record_secret($vectors{$name});
        my ($st, $p, $res) = api(GET => '/api/me', cookie => $vectors{$name});
        is($st, 401, "cookie refused: $name");
        is($p && $p->{code}, 'unauthenticated', "cookie refused: $name: unauthenticated");
    }

    # A 1 MB cookie: httpd itself refuses the header line (400), never a 5xx.
    my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => Apache::Test::vars('port'),
                                     Timeout => 30);
    my $req = "GET /api/me HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: service_session="
        . ('A' x (1024 * 1024)) . "\r\nConnection: close\r\n\r\n";
    my ($off, $resp) = (0, '');
    local $SIG{PIPE} = 'IGNORE';
    $sock->blocking(0);
    my $deadline = time + 30;
    while (time < $deadline && $resp !~ /\r\n/) {
        my ($rin, $win) = ('', '');
        vec($rin, fileno $sock, 1) = 1;
        vec($win, fileno $sock, 1) = 1 if $off < length $req;
        next unless select(my $rout = $rin, my $wout = $win, undef, 1);
        if (vec($rout, fileno $sock, 1)) {
            my $n = sysread($sock, my $buf, 65536);
            last unless $n;
            $resp .= $buf;
        }
        if ($off < length $req && vec($wout, fileno $sock, 1)) {
            my $n = syswrite($sock, $req, 65536, $off);
            $off = defined $n ? $off + $n : length $req;
        }
    }
    close $sock;
    like($resp, qr{\AHTTP/1\.[01] 4\d\d }, 'a 1 MB cookie: 4xx');
    is(me($good) && me($good)->{id}, $sub, '... and the server carries on');
}

# --- logout -----------------------------------------------------------------------
{
    my $u = new_vcs_user('logout');
    my $b = browser();
    my $cookie = sign_in($b)->{session};
    my $me = me($cookie);

    my ($st, $p) = api(POST => '/auth/logout', cookie => $cookie,
                       headers => { Origin => 'https://evil.example' });
    is($st, 403, 'cross-site logout with a valid cookie: 403');
    is($p && $p->{code}, 'csrf_failed', '... csrf_failed');
    ok(me($cookie), '... and the session is still good');

    my $res;
    ($st, $p, $res) = api(POST => '/auth/logout', cookie => $cookie, headers => { Origin => $BASE });
    is($st, 204, 'logout: 204');
    like(cookie_line($res, 'service_session'), qr/^service_session=; Path=\/; Max-Age=0; HttpOnly; SameSite=Lax/,
         'logout: the cookie is cleared');
    ($st, $p) = api(GET => '/api/me', cookie => $cookie);
    is($st, 401, 'a logged-out session: 401 at once');
    is(psql_value("SELECT data->>'reason' FROM audit_log WHERE action = 'session.revoked'"
                  . " AND target_id = '$me->{auth}{session}{id}'"), 'logout',
       'logout: audit session.revoked (logout)');
    ($st) = api(POST => '/auth/logout', cookie => $cookie, headers => { Origin => $BASE });
    is($st, 401, 'logout again with the dead cookie: 401');

    # The browser way: its jar drops the cookie.
    my $b2 = browser();
    sign_in($b2);
    is($b2->get("$BASE/api/me")->code, 200, 'browser: signed in');
    my $r = $b2->post("$BASE/auth/logout", Origin => $BASE);
    is($r->code, 204, 'browser: logout');
    is($b2->get("$BASE/api/me")->code, 401, 'browser: signed out');

    my $write = new_token($me->{email}, scope => 'write');
    ($st, $p) = api(POST => '/auth/logout', token => $write);
    is($st, 400, 'logout with a token: 400');
    is($p && $p->{code}, 'not_a_session', '... not_a_session');
    ($st, $p) = api(POST => '/auth/logout', token => new_token($me->{email}, scope => 'read'));
    is($st, 403, 'logout with a read token: 403');
}

# --- sign-in is rate-limited per client address -------------------------------------
{
    my $r = browser()->get("$BASE/auth/login");
    is($r->header('RateLimit-Limit'), 1000, 'GET /auth/login counts against SvcRateLimit signin');
    $r = browser()->get("$BASE/auth/callback?state=x");
    is($r->header('RateLimit-Limit'), 1000, 'GET /auth/callback too');
}

# --- behind a TLS-terminating proxy ----------------------------------------------------
# httpd speaks plain HTTP there; ServerName https://... (docs/operations.md)
# makes the cookies Secure and every URL we build the public https one.
{
    my $offload = 'http://127.0.0.1:' . Apache::Test::vars('tls_offload_port');
    my $r = browser()->get("$offload/auth/login");
    is($r->code, 302, 'TLS offload: /auth/login redirects');
    my @cookies = $r->header('Set-Cookie');
    ok(@cookies && !grep({ !/; Secure(;|$)/ } @cookies), '... with Secure cookies')
        or diag(join "\n", @cookies);
    like($r->header('Location') // '',
         qr/redirect_uri=https%3A%2F%2Fsvc\.example\.test%2Fauth%2Fcallback(&|$)/,
         '... and the public https callback');
    # A cookie-authenticated change is trusted from the public origin only.
    my $session = new_session(new_user('offload'));
    my $post = sub {
        my ($origin) = @_;
        my $req = HTTP::Request->new(POST => "$offload/api/orgs");
        $req->header(Cookie => "service_session=$session", Origin => $origin,
                     'Content-Type' => 'application/json');
        $req->content(json()->encode({ slug => SvcTest::uniq('offload'), name => 'Offload' }));
        return LWP::UserAgent->new->request($req);
    };
    is($post->('https://svc.example.test')->code, 201,
       '... a cookie POST from the public origin is trusted');
    my $r2 = $post->($offload);
    is($r2->code, 403, '... one from the internal address is not');
    like($r2->content, qr/csrf_failed/, '... csrf_failed');
    my $plain = browser()->get("$BASE/auth/login");
    ok(!grep({ /; Secure/ } $plain->header('Set-Cookie')),
       'served as plain HTTP without a proxy: no Secure (the browser would drop it)');
}

# --- where sign-in is not configured -------------------------------------------------
{
    my $off = 'http://127.0.0.1:' . Apache::Test::vars('signin_off_port');
    refused(browser()->get("$off/auth/login"), 503, 'sign_in_not_configured',
            'sign-in off: /auth/login');
    refused(browser()->get("$off/auth/callback?code=x&state=y"), 503, 'sign_in_not_configured',
            'sign-in off: /auth/callback');
    my $pat = new_token(new_user('offpat'), scope => 'read');
    my $r = LWP::UserAgent->new->get("$off/api/me", Authorization => "Bearer $pat");
    is($r->code, 200, 'sign-in off: personal access tokens still work');

    open my $fh, '<', error_log_path() or die "error_log: $!";
    my ($warned, $starts, $main_warned) = (0, 0, 0);
    while (<$fh>) {
        $starts++ if /AH00489:/;
        next unless /SVC0020: sign-in is off/;
        if (/SVC_TEST_UNSET_CLIENT_ID.*SVC_TEST_UNSET_CLIENT_SECRET/) { $warned++ } else { $main_warned++ }
    }
    ok($starts >= 1, 'the server started');
    is($warned, $starts, 'the log says why sign-in is off, once per start, at warning level')
        or diag("$warned warnings for $starts starts");
    is($main_warned, 0, '... and nothing for the server where it is on');
}

# --- the routes are documented --------------------------------------------------------
{
    my (undef, $doc) = api(GET => '/api/openapi.json');
    ok($doc->{paths}{'/auth/login'}{get}, 'OpenAPI: GET /auth/login');
    ok($doc->{paths}{'/auth/callback'}{get}, 'OpenAPI: GET /auth/callback');
    ok($doc->{paths}{'/auth/logout'}{post}, 'OpenAPI: POST /auth/logout');
}

# --- no secret of the flow in the logs ------------------------------------------------
{
    # A mistyped callback URL still carries a live code and state: every
    # path under /auth/ is masked in the access log, matched or not.
    my $code = 'unmatched' . join '', map { ('a'..'z')[rand 26] } 1 .. 24;
    my $state = 'unmatchedstate' . join '', map { ('a'..'z')[rand 26] } 1 .. 24;
    record_secret($code, $state);
    my $r = browser()->get("$BASE/auth/calback?code=$code&state=$state");
    is($r->code, 404, 'an unmatched /auth/ path: 404');
    vcs_state();    # every code and token the fake issued is now recorded
    sleep 0.5;
    my $access = do { local (@ARGV, $/) = (catfile_logs('access_log')); <> } // '';
    like($access, qr{GET /auth/callback\?code=\[REDACTED\]&state=\[REDACTED\] HTTP},
         'access log: the callback\'s code and state are redacted');
    unlike($access, qr{/auth/callback\?[^ ]*code=(?!\[REDACTED\])}, 'access log: no code at all');
    like($access, qr{GET /auth/calback\?code=\[REDACTED\]&state=\[REDACTED\] HTTP},
         'access log: an unmatched /auth/ path is redacted too');
    unlike($access, qr{\Q$code\E|\Q$state\E}, '... its code and state nowhere');
    # tools/check-logs.pl fails the run if any recorded secret (client secret,
    # codes, access tokens, states, nonces, cookies) is in any log.
}

sub catfile_logs { return File::Spec->catfile(SvcTest::t_logs(), shift) }

done_testing();
