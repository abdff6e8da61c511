# Personal access tokens: every rule of SPEC.md's Authentication, Tokens,
# Limits and States sections, through the real module and database.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;


my $PAT_RE = qr/\Asvc_pat_[0-9A-Za-z]{49}\z/;

my $alice = new_user('alice');
my $bob   = new_user('bob');
my $org   = new_org($alice);
my $other = new_org($bob);
my $admin = new_token($alice, scope => 'admin');

sub create {
    my ($token, $body, %opt) = @_;
    return api(POST => '/api/me/tokens', token => $token, json => $body, %opt);
}

sub problem_ok {
    my ($status, $p, $res, $want_status, $want_code, $name) = @_;
    is($status, $want_status, "$name: status $want_status");
    like($res->header('Content-Type') // '', qr{^application/problem\+json}, "$name: problem+json");
    is(ref $p eq 'HASH' ? $p->{code} : undef, $want_code, "$name: code $want_code");
}

# --- creation ----------------------------------------------------------------
my ($st, $t, $res) = create($admin, { name => 'ci', scope => 'write', org => $org,
                                      expires_in_days => 30 });
is($st, 201, 'create: 201');
like($t->{token} // '', $PAT_RE, 'create: the secret has the documented form');
like($t->{id} // '', qr/\Atok_[0-9A-Za-z]{22}\z/, 'create: an opaque tok_ id');
is($t->{scope}, 'write', 'create: scope');
is($t->{name}, 'ci', 'create: name');
is($t->{org}{slug}, $org, 'create: bound to the org');
is($t->{status}, 'active', 'create: active');
like($t->{expires_at} // '', qr/\A\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\z/, 'create: RFC 3339 expiry');
is($t->{prefix}, substr($t->{token}, 0, 12), 'create: display prefix is the secret\'s start');
ok(!defined $t->{last_used_at}, 'create: never used yet');
my $write_bound = $t->{token};

# The secret is stored only as a keyed hash: no column holds any part of it.
{
    my $random = substr($write_bound, 8, 20);
    is(psql_value("SELECT count(*) FROM api_tokens t WHERE row_to_json(t)::text LIKE '%$random%'"),
       0, 'the plaintext is stored nowhere');
    is(psql_value("SELECT octet_length(secret_hash) FROM api_tokens WHERE id = '$t->{id}'"),
       32, 'a 32-byte hash is stored');
}

# --- the list shows metadata, never secrets ------------------------------------
($st, my $list) = api(GET => '/api/me/tokens', token => $admin);
is($st, 200, 'list: 200');
my ($item) = grep { $_->{id} eq $t->{id} } @{ $list->{data} // [] };
ok($item, 'list: the new token is there');
ok(!exists $item->{token}, 'list: no secret in the item');
ok(!grep({ /hash/ } keys %$item), 'list: no hash in the item');
is_deeply([sort keys %$item],
          [sort qw(id name scope org prefix status created_at expires_at last_used_at
                   last_used_ip revoked_at)], 'list: exactly the documented fields');
ok(exists $list->{next_cursor}, 'list: has next_cursor');

# Pages: ?limit= pages through the same items, newest first, none twice, and
# the last page says there is no next one.
{
    my ($s, $all) = api(GET => '/api/me/tokens', token => $admin);
    my @want = map { $_->{id} } @{ $all->{data} // [] };
    ok(@want >= 2, 'paging: at least two tokens to page through');
    my (@got, $cursor, $pages);
    do {
        my $q = '/api/me/tokens?limit=1' . (defined $cursor ? "&cursor=$cursor" : '');
        my ($ps, $page) = api(GET => $q, token => $admin);
        is($ps, 200, 'paging: a page') unless $ps == 200;
        push @got, map { $_->{id} } @{ $page->{data} // [] };
        $cursor = $page->{next_cursor};
        $pages++;
    } while (defined $cursor && $pages <= @want);
    is_deeply(\@got, \@want, 'paging: one item per page, all of them, in order');
    is($pages, scalar @want, 'paging: the last page has next_cursor null');
}

# The list and the creation response build an item the same way (from plain
# columns, in C): the list shows exactly what creation showed, less the secret.
{
    my %created = %$t;
    delete $created{token};
    is_deeply($item, \%created, 'list: the item is the creation response without the secret');
}

# Every value as the database holds it: times in UTC to the second (as
# PostgreSQL formats them), names with quotes, backslashes and non-ASCII
# characters intact, NULLs as null.
{
    my $name = qq{q"uote \\back\\slash \x{e9}t\x{e9} \x{1F680} </script>};
    my ($s, $odd) = create($admin, { name => $name, scope => 'read', expires_in_days => 2 });
    is($s, 201, 'create with an unusual name');
    is($odd->{name}, $name, 'create: the name comes back intact');
    psql("UPDATE api_tokens SET last_used_at = '2001-02-03 04:05:06.999+07',"
         . " last_used_ip = '192.0.2.1' WHERE id = '$odd->{id}'");
    my ($s2, $l) = api(GET => '/api/me/tokens', token => $admin);
    my ($it) = grep { $_->{id} eq $odd->{id} } @{ $l->{data} // [] };
    is($it->{name}, $name, 'list: the name comes back intact');
    is($it->{last_used_at}, '2001-02-02T21:05:06Z', 'list: a time is UTC, seconds truncated');
    is($it->{last_used_ip}, '192.0.2.1', 'list: last_used_ip');
    for my $col (qw(created_at expires_at)) {
        is($it->{$col},
           psql_value("SELECT to_char($col AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
                      . " FROM api_tokens WHERE id = '$odd->{id}'"),
           "list: $col as the database holds it");
    }
    ok(exists $it->{revoked_at} && !defined $it->{revoked_at}, 'list: revoked_at is null');
    ok(exists $it->{org} && !defined $it->{org}, 'list: an unbound token has org null');
    my ($bound) = grep { $_->{id} eq $t->{id} } @{ $l->{data} // [] };
    is_deeply($bound->{org},
              { id => psql_value("SELECT id FROM orgs WHERE slug = '$org'"), slug => $org },
              'list: a bound token has org {id, slug}');
    # Expiry is the database clock's call, shown as a status.
    psql("UPDATE api_tokens SET created_at = now() - interval '3 days',"
         . " expires_at = now() - interval '1 day' WHERE id = '$odd->{id}'");
    ($s2, $l) = api(GET => '/api/me/tokens', token => $admin);
    ($it) = grep { $_->{id} eq $odd->{id} } @{ $l->{data} // [] };
    is($it->{status}, 'expired', 'list: an expired token shows as expired');
}

# --- GET /api/me for a token caller ------------------------------------------------
($st, my $me) = api(GET => '/api/me', token => $write_bound);
is($st, 200, 'me: 200 with a write token');
is($me->{email}, $alice, 'me: email');
is($me->{auth}{method}, 'token', 'me: authenticated by token');
is($me->{auth}{token}{id}, $t->{id}, 'me: token id');
is($me->{auth}{token}{scope}, 'write', 'me: token scope');
is($me->{auth}{token}{org}{slug}, $org, 'me: token binding');
is($me->{auth}{token}{expires_at}, $t->{expires_at}, 'me: token expiry');
is_deeply([map { $_->{slug} } @{ $me->{orgs} }], [$org], 'me: a bound token sees only its org');
is($me->{orgs}[0]{role}, 'owner', 'me: role in the org');

# --- scope: token management needs a session or an admin token -----------------------
my $read = new_token($alice, scope => 'read');
for my $case (['read', $read], ['write', $write_bound]) {
    my ($name, $tok) = @$case;
    my @r = api(GET => '/api/me/tokens', token => $tok);
    problem_ok(@r, 403, 'insufficient_scope', "$name token lists tokens");
    like($r[2]->header('WWW-Authenticate') // '', qr/error="insufficient_scope"/,
         "$name token: RFC 6750 challenge");
    problem_ok(create($tok, { name => 'x', scope => 'read' }), 403, 'insufficient_scope',
               "$name token creates a token");
    problem_ok(api(DELETE => "/api/me/tokens/$t->{id}", token => $tok), 403,
               'insufficient_scope', "$name token revokes a token");
}
($st) = api(GET => '/api/me', token => $read);
is($st, 200, 'a read token may read /api/me');

# A session counts as admin; its changes need a trusted origin.
my $cookie = new_session($alice);
($st) = api(GET => '/api/me/tokens', cookie => $cookie);
is($st, 200, 'a session lists tokens');
($st, my $ct) = create(undef, { name => 'from-ui', scope => 'read' }, cookie => $cookie,
                       headers => { 'X-Requested-With' => 'XMLHttpRequest' });
is($st, 201, 'a session creates a token');
record_secret($ct->{token});
problem_ok(create(undef, { name => 'csrf', scope => 'read' }, cookie => $cookie,
                  headers => { Origin => 'https://evil.example' }),
           403, 'csrf_failed', 'a cross-site POST with a valid cookie');

# --- creation rules ----------------------------------------------------------------------
{
    my @r = create($admin, { name => 'nope', scope => 'read', org => $other });
    problem_ok(@r, 400, 'validation_failed', 'binding to an org you are not in');
    is($r[1]{errors}[0]{field}, 'org', '... names the field');
    @r = create($admin, { name => 'nope', scope => 'read', org => 'no-such-org-at-all' });
    problem_ok(@r, 400, 'validation_failed', 'binding to an org that does not exist');
    is($r[1]{errors}[0]{code}, 'not_found', '... the same answer as not being a member');
}
{
    my $bound_admin = new_token($alice, scope => 'admin', org => $org);
    problem_ok(create($bound_admin, { name => 'escape', scope => 'admin' }), 403,
               'insufficient_scope', 'a bound token cannot create an unbound token');
    my ($s, $b) = create($bound_admin, { name => 'same', scope => 'read', org => $org });
    is($s, 201, 'a bound token creates a token bound to the same org');
    my ($s2, $l) = api(GET => '/api/me/tokens?limit=200', token => $bound_admin);
    ok(!grep({ !$_->{org} || $_->{org}{slug} ne $org } @{ $l->{data} }),
       'a bound token lists only tokens bound to its org');
    my ($s3) = api(DELETE => "/api/me/tokens/$b->{id}", token => $bound_admin);
    my $unbound_id = psql_value("SELECT id FROM api_tokens WHERE user_id = "
                                . "(SELECT id FROM users WHERE email = '$alice') AND org_id IS NULL LIMIT 1");
    my @r = api(DELETE => "/api/me/tokens/$unbound_id", token => $bound_admin);
    problem_ok(@r, 404, 'not_found', 'a bound token cannot revoke an unbound token');
    is($s3, 204, 'a bound token revokes a token of its org');

    my $expiring = new_token($alice, scope => 'admin', days => 2);
    problem_ok(create($expiring, { name => 'forever', scope => 'read' }), 403,
               'insufficient_scope', 'an expiring token cannot create a token that never expires');
    problem_ok(create($expiring, { name => 'longer', scope => 'read', expires_in_days => 30 }),
               403, 'insufficient_scope', '... nor one that outlives it');
    ($s) = create($expiring, { name => 'shorter', scope => 'read', expires_in_days => 1 });
    is($s, 201, '... but may create one that expires sooner');
}
{
    my @r = create($admin, { name => 'x' x 101, scope => 'read' });
    problem_ok(@r, 400, 'validation_failed', 'a 101-character name');
    @r = create($admin, { name => 'x', scope => 'read', expires_in_days => 366 });
    problem_ok(@r, 400, 'validation_failed', 'expiry of 366 days');
    is($r[1]{errors}[0]{field}, 'expires_in_days', '... names the field');
    @r = create($admin, { name => 'x', scope => 'read', expires_in_days => 0 });
    problem_ok(@r, 400, 'validation_failed', 'expiry of 0 days');
    my ($s, $ok) = create($admin, { name => 'year', scope => 'read', expires_in_days => 365 });
    is($s, 201, 'expiry of 365 days is fine');
    ($s, $ok) = create($admin, { name => 'never', scope => 'read', expires_in_days => undef });
    is($s, 201, 'null expiry means never');
    ok(!defined $ok->{expires_at}, '... and expires_at is null');
}

reset_rate_limits($alice);

# --- cross-user isolation ------------------------------------------------------------------
{
    my $bob_admin = new_token($bob, scope => 'admin');
    my ($s, $l) = api(GET => '/api/me/tokens?limit=200', token => $bob_admin);
    ok(!grep({ $_->{id} eq $t->{id} } @{ $l->{data} }), "bob's list does not show alice's token");
    problem_ok(api(DELETE => "/api/me/tokens/$t->{id}", token => $bob_admin), 404, 'not_found',
               "bob revoking alice's token");
    is(psql_value("SELECT revoked_at IS NULL FROM api_tokens WHERE id = '$t->{id}'"), 't',
       "... and alice's token is untouched");
    problem_ok(api(DELETE => '/api/me/tokens/tok_doesnotexist00000000', token => $bob_admin),
               404, 'not_found', 'revoking an unknown id');
}

# --- revocation is immediate -----------------------------------------------------------------
{
    my ($s, $victim) = create($admin, { name => 'victim', scope => 'read' });
    ($s) = api(GET => '/api/me', token => $victim->{token});
    is($s, 200, 'the token works before revocation');
    my ($d, undef, $dres) = api(DELETE => "/api/me/tokens/$victim->{id}", token => $admin);
    is($d, 204, 'revoke: 204');
    is($dres->content, '', 'revoke: no body');
    my @r = api(GET => '/api/me', token => $victim->{token});
    problem_ok(@r, 401, 'unauthenticated', 'the next request with the revoked token');
    like($r[1]{detail}, qr/revoked/, '... says it was revoked');
    like($r[2]->header('WWW-Authenticate') // '', qr/^Bearer/, '... with a Bearer challenge');
    ($d) = api(DELETE => "/api/me/tokens/$victim->{id}", token => $admin);
    is($d, 204, 'revoking again is 204 (idempotent)');
    is(psql_value("SELECT count(*) FROM audit_log WHERE action = 'token.revoked' "
                  . "AND target_id = '$victim->{id}'"), 1, '... and audited once');
    my (undef, $l) = api(GET => '/api/me/tokens?limit=200', token => $admin);
    my ($it) = grep { $_->{id} eq $victim->{id} } @{ $l->{data} };
    is($it->{status}, 'revoked', 'the list shows it revoked');
    ok($it->{revoked_at}, '... with revoked_at');
}

# --- expiry ----------------------------------------------------------------------------------
{
    my ($s, $e) = create($admin, { name => 'short', scope => 'read', expires_in_days => 1 });
    ($s) = api(GET => '/api/me', token => $e->{token});
    is($s, 200, 'an unexpired token works');
    psql("UPDATE api_tokens SET expires_at = now() - interval '1 second' WHERE id = '$e->{id}'");
    my @r = api(GET => '/api/me', token => $e->{token});
    problem_ok(@r, 401, 'unauthenticated', 'an expired token');
    like($r[1]{detail}, qr/expired/, '... says it expired');
}

# --- malformed and unknown tokens --------------------------------------------------------------
{
    my $bad = $admin;
    substr($bad, -1, 1) = substr($bad, -1, 1) eq 'A' ? 'B' : 'A';
    my @r = api(GET => '/api/me', token => $bad);
    problem_ok(@r, 401, 'unauthenticated', 'a token with a bad checksum');
    like($r[1]{detail}, qr/malformed/, '... is refused as malformed');
    @r = api(GET => '/api/me', headers => { Authorization => "Basic $admin" });
    problem_ok(@r, 401, 'unauthenticated', 'a token under another scheme');
    @r = api(GET => '/api/me');
    problem_ok(@r, 401, 'unauthenticated', 'no credentials');
}

reset_rate_limits($alice);

# --- last use is recorded, but not on every request -----------------------------------------------
{
    my ($s, $u) = create($admin, { name => 'touch', scope => 'read' });
    api(GET => '/api/me', token => $u->{token});
    my $first = psql_value("SELECT last_used_at FROM api_tokens WHERE id = '$u->{id}'");
    ok(defined $first, 'last_used_at is set by the first use');
    is(psql_value("SELECT last_used_ip FROM api_tokens WHERE id = '$u->{id}'"), '127.0.0.1',
       'last_used_ip is the client address');
    api(GET => '/api/me', token => $u->{token}) for 1 .. 3;
    is(psql_value("SELECT last_used_at FROM api_tokens WHERE id = '$u->{id}'"), $first,
       'later uses within the interval write nothing');
}

# --- audit entries ----------------------------------------------------------------------------------
{
    my ($s, $a, $r) = create($admin, { name => 'audited', scope => 'read', org => $org },
                             headers => { 'User-Agent' => 'audit-test/1.0' });
    my $rid = $r->header('X-Request-Id');
    my ($row) = psql("SELECT actor_kind, actor_user_id, actor_token_id, org_id, ip, user_agent, "
                     . "request_id, data->>'scope', data->>'name' FROM audit_log "
                     . "WHERE action = 'token.created' AND target_id = '$a->{id}'");
    ok($row, 'token creation is audited');
    my $alice_id = psql_value("SELECT id FROM users WHERE email = '$alice'");
    my $admin_id = psql_value("SELECT id FROM api_tokens WHERE org_id IS NULL AND scope = 'admin' "
                              . "AND user_id = '$alice_id' AND name = 'svcctl' ORDER BY seq LIMIT 1");
    is_deeply($row, ['user', $alice_id, $admin_id,
                     psql_value("SELECT id FROM orgs WHERE slug = '$org'"), '127.0.0.1',
                     'audit-test/1.0', $rid, 'read', 'audited'],
              '... with actor, token, org, ip, user agent, request id, scope and name');
    my ($d, undef, $dr) = api(DELETE => "/api/me/tokens/$a->{id}", token => $admin);
    is(psql_value("SELECT request_id FROM audit_log WHERE action = 'token.revoked' "
                  . "AND target_id = '$a->{id}'"), $dr->header('X-Request-Id'),
       'revocation is audited with its request id');
}

# --- rate limiting (shared through the database) ---------------------------------------------------
{
    my $carol = new_user('carol');
    my $ctok = new_token($carol, scope => 'admin');
    my ($limited, @codes);
    # A fixed window may roll over in the middle; then try once more.
    for my $attempt (1 .. 2) {
        my $w0 = psql_value("SELECT floor(extract(epoch FROM now()) / 60)");
        @codes = ();
        for my $i (1 .. 22) {
            my @r = create($ctok, { name => "burst$i", scope => 'read' });
            push @codes, $r[0];
            $limited = [@r] if $r[0] == 429 && !$limited;
        }
        my $w1 = psql_value("SELECT floor(extract(epoch FROM now()) / 60)");
        last if $w0 eq $w1;
        psql("DELETE FROM rate_limits WHERE key LIKE 'tokens:%'");
        undef $limited;
    }
    is(scalar(grep { $_ == 201 } @codes), 20, 'the first 20 creations in a minute succeed');
    is(scalar(grep { $_ == 429 } @codes), 2, 'the rest are rate limited');
    problem_ok(@$limited, 429, 'rate_limited', 'over the limit');
    like($limited->[2]->header('Retry-After') // '', qr/\A[1-9]\d*\z/, '... with Retry-After');
    my ($s) = api(GET => '/api/me/tokens', token => $ctok);
    is($s, 200, 'reading is not limited');
    my ($s2) = create($admin, { name => 'others', scope => 'read' });
    is($s2, 201, "another user's budget is separate");
}

# --- a stolen token cannot block its own revocation (issue 14, item 1) ------------------------
# Creation and revocation shared one budget of 20 a minute per user: whoever
# held any admin token could spend it at each minute boundary, and the
# owner's revocations, by session too, got 429. Revocation now has a class of
# its own (token_revoke, 100 a minute), counted per token, and a session (the
# account's human owner) is never counted.
{
    my $dave = new_user('dave');
    my $owner_tok = new_token($dave, scope => 'admin');
    my $stolen = new_token($dave, scope => 'admin');
    my $session = new_session($dave);
    my (undef, $me) = api(GET => '/api/me', token => $stolen);
    my $stolen_id = $me->{auth}{token}{id};
    my @codes;
    for my $attempt (1 .. 2) {
        my $w0 = psql_value("SELECT floor(extract(epoch FROM now()) / 60)");
        @codes = ();
        # The thief spends the creation budget and its own revocation budget.
        push @codes, (create($stolen, { name => "thief$_", scope => 'read' }))[0] for 1 .. 21;
        push @codes, (api(DELETE => '/api/me/tokens/tok_doesnotexist00000000',
                          token => $stolen))[0] for 1 .. 101;
        my $w1 = psql_value("SELECT floor(extract(epoch FROM now()) / 60)");
        last if $w0 eq $w1;
        reset_rate_limits($dave);
        psql("DELETE FROM rate_limits WHERE key = 'token_revoke:$stolen_id'");
    }
    is(scalar(grep { $_ == 429 } @codes[0 .. 20]), 1, 'the thief spent the creation budget');
    is(scalar(grep { $_ == 404 } @codes[21 .. 121]), 100,
       '... and made 100 revocations (of nothing) in a minute');
    is($codes[-1], 429, '... the 101st of them is rate limited');
    my @r = api(DELETE => "/api/me/tokens/tok_doesnotexist00000000", token => $owner_tok);
    is($r[0], 404, "the owner's other token still may revoke (its budget is its own)");
    like($r[2]->header('RateLimit-Limit') // '', qr/\A100\z/, '... counted in token_revoke');
    # Through the session nothing is counted, however many.
    my @sess = map { (api(DELETE => '/api/me/tokens/tok_doesnotexist00000000',
                          cookie => $session, csrf_ok()))[0] } 1 .. 110;
    is(scalar(grep { $_ == 404 } @sess), 110, 'through a session: 110 revocations, none limited');
    my ($st, undef, $res) = api(DELETE => "/api/me/tokens/$stolen_id", cookie => $session,
                                csrf_ok());
    is($st, 204, 'the owner revokes the stolen token through the session');
    ok(!defined $res->header('RateLimit-Limit'), '... uncounted (no RateLimit headers)');
    ($st) = api(GET => '/api/me', token => $stolen);
    is($st, 401, 'the stolen token is dead');
}
done_testing();
