# The per-child authentication cache only saves a round trip; it never
# decides. Over one keep-alive connection (so the same httpd child, whose
# cache holds the token), a revoked or expired token is refused on the very
# next request, also on routes that write or that a cached scope would have
# refused first, and a change to the user is seen at once.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use HTTP::Request ();
use LWP::UserAgent ();
use SvcTest;

# One persistent connection: every request of $ua reaches the same child.
my $ua = LWP::UserAgent->new(keep_alive => 1, timeout => 30);
my $url = base_url();

sub call {
    my ($method, $path, $token, $body) = @_;
    my $req = HTTP::Request->new($method => "$url$path");
    $req->header(Authorization => "Bearer $token");
    if (defined $body) {
        $req->header('Content-Type' => 'application/json');
        $req->content(json()->encode($body));
    }
    my $res = $ua->request($req);
    my $data = eval { json()->decode($res->content) };
    record_secret($data->{token}) if ref $data eq 'HASH' && $data->{token};
    return ($res->code, $data, $res);
}

# Several requests first, so the child surely holds the token.
sub warm {
    my $token = shift;
    my $ok = 0;
    for (1 .. 4) {
        my ($st) = call(GET => '/api/me', $token);
        $ok++ if $st == 200;
    }
    return $ok == 4;
}

my $alice = new_user('cachealice');
my $admin = new_token($alice, scope => 'admin');
my $alice_id = psql_value("SELECT id FROM users WHERE email = '$alice'");

# --- revocation, then a read ---------------------------------------------
{
    my ($st, $t) = call(POST => '/api/me/tokens', $admin, { name => 'victim', scope => 'admin' });
    is($st, 201, 'a token to revoke');
    ok(warm($t->{token}), 'it works, and the child has seen it');
    # Revoked on another connection (maybe another child), as a user would.
    my ($d) = api(DELETE => "/api/me/tokens/$t->{id}", token => $admin);
    is($d, 204, 'revoked elsewhere');
    my @codes = map { (call(GET => '/api/me/tokens', $t->{token}))[0] } 1 .. 10;
    is("@codes", join(' ', (401) x 10), 'every later request on the warm connection: 401');
    my ($s, $p) = call(GET => '/api/me', $t->{token});
    is($p->{code}, 'unauthenticated', '... unauthenticated');
    like($p->{detail}, qr/revoked/, '... saying it was revoked');
}

# --- revocation, then a write: nothing is written ---------------------------
{
    my ($st, $t) = call(POST => '/api/me/tokens', $admin, { name => 'writer', scope => 'admin' });
    ok(warm($t->{token}), 'a warm admin token');
    api(DELETE => "/api/me/tokens/$t->{id}", token => $admin);
    my $before = psql_value("SELECT count(*) FROM api_tokens WHERE user_id = '$alice_id'");
    my ($s, $p) = call(POST => '/api/me/tokens', $t->{token}, { name => 'should-not', scope => 'read' });
    is($s, 401, 'a revoked token cannot create a token: 401');
    is(psql_value("SELECT count(*) FROM api_tokens WHERE user_id = '$alice_id'"), $before,
       '... and nothing was written');
}

# --- revocation of a read token: 401 wins over the cached scope's 403 --------
{
    my ($st, $t) = call(POST => '/api/me/tokens', $admin, { name => 'reader', scope => 'read' });
    ok(warm($t->{token}), 'a warm read token');
    my ($s, $p) = call(POST => '/api/me/tokens', $t->{token}, { name => 'x', scope => 'read' });
    is($s, 403, 'while valid, a read token gets 403 for a write');
    api(DELETE => "/api/me/tokens/$t->{id}", token => $admin);
    ($s, $p) = call(POST => '/api/me/tokens', $t->{token}, { name => 'x', scope => 'read' });
    is($s, 401, 'once revoked, 401, not 403');
    ($s, $p) = call(POST => '/api/me/tokens', $t->{token}, { bogus => 1 });
    is($s, 401, 'once revoked, 401 even for an invalid body');
}

# --- expiry by the clock ---------------------------------------------------------
{
    my ($st, $t) = call(POST => '/api/me/tokens', $admin,
                        { name => 'short', scope => 'read', expires_in_days => 1 });
    ok(warm($t->{token}), 'a warm expiring token');
    psql("UPDATE api_tokens SET expires_at = now() - interval '1 second' WHERE id = '$t->{id}'");
    my ($s, $p) = call(GET => '/api/me', $t->{token});
    is($s, 401, 'expired in the database: the next request is 401');
    like($p->{detail}, qr/expired/, '... saying it expired');
}

# --- a change to the user is seen at once -----------------------------------------
{
    ok(warm($admin), 'the admin token is warm');
    my $new = SvcTest::uniq('renamed') . '@example.test';
    psql("UPDATE users SET email = '$new', founder = true WHERE id = '$alice_id'");
    my ($s, $me) = call(GET => '/api/me', $admin);
    is($s, 200, 'after the user changed: 200');
    is($me->{email}, $new, '... with the new email');
    ok($me->{founder}, '... and the new founder flag');
    # An invite to the new address, from another org: the caller's email is
    # a parameter of the invites query, so a stale one would hide it.
    my $bob = new_user('cachebob');
    my $org = new_org($bob);
    my $bob_admin = new_token($bob, scope => 'admin');
    my ($is) = api(POST => "/api/orgs/$org/members", token => $bob_admin,
                   json => { email => $new, role => 'member' });
    is($is, 201, 'an invite to the new address');
    psql("UPDATE users SET name = 'Renamed Again' WHERE id = '$alice_id'");
    my ($ls, $inv) = call(GET => '/api/me/invites', $admin);
    is($ls, 200, 'my invites: 200');
    ok((grep { ($_->{org}{slug} // '') eq $org } @{ $inv->{data} // [] }),
       '... and the invite to the new address is there');
    psql("UPDATE users SET founder = false WHERE id = '$alice_id'");
    ($s, $me) = call(GET => '/api/me', $admin);
    ok($s == 200 && !$me->{founder}, 'a demotion is seen at once too');
}

# --- what bumps a token's user revision (sql/005), and what does not ---------------
{
    my $carol = new_user('cachecarol');
    my $carol_id = psql_value("SELECT id FROM users WHERE email = '$carol'");
    my $t1 = new_token($carol, scope => 'read');
    my $t2 = new_token($carol, scope => 'admin');
    my $rev = sub {
        psql_value("SELECT string_agg(user_rev::text, ',' ORDER BY seq) FROM api_tokens"
                   . " WHERE user_id = '$_[0]'");
    };
    my $alice_before = $rev->($alice_id);
    is($rev->($carol_id), '0,0', 'new tokens start at revision 0');
    psql("UPDATE users SET updated_at = now(), vcs_login = 'carol-gh' WHERE id = '$carol_id'");
    is($rev->($carol_id), '0,0', 'other columns do not bump the revision');
    psql("UPDATE users SET name = name WHERE id = '$carol_id'");
    is($rev->($carol_id), '0,0', 'neither does writing the same value');
    psql("UPDATE users SET name = 'Carol C' WHERE id = '$carol_id'");
    is($rev->($carol_id), '1,1', 'a new name bumps every token of the user');
    psql("UPDATE users SET email = upper(email), founder = true WHERE id = '$carol_id'");
    is($rev->($carol_id), '2,2', 'email and founder together: one bump');
    is($rev->($alice_id), $alice_before, "other users' tokens are left alone");
    psql("UPDATE users SET founder = false WHERE id = '$carol_id'");
}

# --- a token made while a change to its user is in flight ----------------------------
# The change bumps the tokens that exist; a token inserted before it commits
# must wait for it (sql/005's SHARE lock), or it would be read and cached
# with the old identity at revision 0 and keep both after the commit. The
# cached email is what /api/me/invites matches on, so a stale one shows.
{
    my $dave = new_user('cachedave');
    my $dave_id = psql_value("SELECT id FROM users WHERE email = '$dave'");
    my $dave_admin = new_token($dave, scope => 'admin');
    ok(warm($dave_admin), "dave's admin token is warm");
    my $new = SvcTest::uniq('davenew') . '@example.test';
    my $h = lock_hold("UPDATE users SET email = '$new' WHERE id = '$dave_id'", 1);
    # With the lock, this waits until the change commits (the holder commits
    # once it sees a waiter). Without it, it would not wait, and the token
    # would be used and cached at once, with the identity of before.
    my ($s, $t) = call(POST => '/api/me/tokens', $dave_admin,
                       { name => 'during-change', scope => 'admin' });
    is($s, 201, 'a token created while the user changes');
    is(psql_value("SELECT email FROM users WHERE id = '$dave_id'"), $new,
       '... exists only once the change has committed');
    ok(warm($t->{token}), '... is used (and cached) at once');
    lock_release($h);
    my $erin = new_user('cacheerin');
    my $org = new_org($erin);
    my ($is) = api(POST => "/api/orgs/$org/members", token => new_token($erin, scope => 'admin'),
                   json => { email => $new, role => 'member' });
    is($is, 201, 'an invite to the new address');
    my ($ls, $inv) = call(GET => '/api/me/invites', $t->{token});
    ok($ls == 200 && (grep { ($_->{org}{slug} // '') eq $org } @{ $inv->{data} // [] }),
       '... is seen through the token made during the change');
}

done_testing();
