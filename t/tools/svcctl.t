# svcctl: the operator's tool. Clear usage errors with exit status 2, runtime
# failures with 1, and only the secret on stdout for token creation.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $bin = $ENV{SVCCTL};

sub ctl {
    my ($rc, $out, $err) = SvcTest::run([$bin, @_]);
    record_secret($1) if $out =~ /(svc_pat_\w+|eyJ[\w.-]+)/;
    return ($rc >> 8, $out, $err);
}

my @usage = (
    [[], 'no command'],
    [['bogus'], 'an unknown command'],
    [['user', 'add'], 'user add without an email'],
    [['user', 'add', 'not-an-email'], 'user add with a bad email'],
    [['user', 'add', 'a@b.example', '--bogus'], 'user add with an unknown option'],
    [['user', 'add', 'a@b.example', '--name'], 'an option without its value'],
    [['org', 'create', 'Bad_Slug', '--owner', 'a@b.example'], 'org create with a bad slug'],
    [['org', 'create', 'fine-slug'], 'org create without --owner'],
    [['token', 'create', 'a@b.example'], 'token create without --scope'],
    [['token', 'create', 'a@b.example', '--scope', 'root'], 'token create with a bad scope'],
    [['token', 'create', 'a@b.example', '--scope', 'read', '--days', '366'], 'too many days'],
    [['token', 'create', 'a@b.example', '--scope', 'read', '--days', '1x'], 'days not a number'],
    [['session', 'create'], 'session create without an email'],
    [['token', 'list'], 'token list without an email'],
    [['token', 'list', 'a@b.example', '--yaml'], 'token list with an unknown option'],
    [['token', 'revoke'], 'token revoke without an id'],
    [['token', 'revoke', 'usr_abc'], 'token revoke with something else than a token id'],
    [['token', 'revoke', 'tok_a', 'tok_b'], 'token revoke with two ids'],
    [['routes', '--yaml'], 'routes with an unknown option'],
    [['migrate', 'now'], 'migrate with an argument'],
);
for my $c (@usage) {
    my ($args, $name) = @$c;
    my ($rc, $out, $err) = ctl(@$args);
    is($rc, 2, "$name: exit 2");
    like($err, qr/usage: svcctl/, "$name: usage on stderr");
    is($out, '', "$name: nothing on stdout");
}

# Runtime failures: exit 1 and a clear sentence.
{
    my ($rc, $out, $err) = ctl('token', 'create', 'nobody@nowhere.example', '--scope', 'read');
    is($rc, 1, 'token create for an unknown user: exit 1');
    like($err, qr/no such user/, '... says so');
    my $u = new_user('dup');
    ($rc, undef, $err) = ctl('user', 'add', $u);
    is($rc, 1, 'adding an existing user: exit 1');
    like($err, qr/already exists/, '... says so');
    my $slug = new_org($u);
    ($rc, undef, $err) = ctl('org', 'create', $slug, '--owner', $u);
    is($rc, 1, 'creating a taken slug: exit 1');
    like($err, qr/taken/, '... says so');
    my $v = new_user('outsider');
    ($rc, undef, $err) = ctl('token', 'create', $v, '--scope', 'read', '--org', $slug);
    is($rc, 1, 'a token bound to an org the user is not in: exit 1');
    local $ENV{SVC_DB} = 'host=/nonexistent dbname=x connect_timeout=1';
    ($rc, undef, $err) = ctl('migrate');
    is($rc, 1, 'an unreachable database: exit 1');
    like($err, qr/cannot connect/, '... says so');
}
{
    local $ENV{SVC_SECRET} = 'inline-secret-value-that-is-long-enough-0123456789';
    my ($rc, undef, $err) = ctl('token', 'create', new_user('s'), '--scope', 'read');
    is($rc, 1, 'an inline secret is refused');
    like($err, qr/reference/, '... asking for a reference');
}

# Success: token create prints only the secret; the token works.
{
    my $u = new_user('ctl');
    my $slug = new_org($u);
    my ($rc, $out, $err) = ctl('token', 'create', $u, '--scope', 'write', '--org', $slug,
                               '--days', '7', '--name', 'deploy');
    is($rc, 0, 'token create: exit 0');
    like($out, qr/\Asvc_pat_[0-9A-Za-z]{49}\n\z/, '... prints only the secret');
    chomp $out;
    my ($st, $me) = api(GET => '/api/me', token => $out);
    is($st, 200, '... which authenticates');
    is($me->{auth}{token}{scope}, 'write', '... with the scope asked for');
    is($me->{auth}{token}{org}{slug}, $slug, '... bound to the org asked for');
    ok($me->{auth}{token}{expires_at}, '... expiring');
    is(psql_value("SELECT actor_kind FROM audit_log WHERE action = 'token.created' "
                  . "AND target_id = '$me->{auth}{token}{id}'"), 'operator',
       '... and audited as the operator\'s doing');
    ($rc, $out) = ctl('session', 'create', $u);
    is($rc, 0, 'session create: exit 0');
    chomp $out;
    ($st, $me) = api(GET => '/api/me', cookie => $out);
    is($st, 200, '... the cookie value signs in');
    is($me->{auth}{method}, 'session', '... as a session');
    ($rc, $out) = ctl('schema-version');
    is($rc, 0, 'schema-version: exit 0 when current');
    like($out, qr/\Adatabase (\d+), build \1\n\z/, '... and says both versions');
    ($rc, $out) = ctl('migrate');
    is($rc, 0, 'migrate again: exit 0');
    like($out, qr/0 migrations applied/, '... nothing to do');
}

# token list and token revoke: the operator's way to find and kill a token
# (issue 14, item 1), whoever's it is, audited as the operator.
{
    my $u = new_user('listed');
    my $slug = new_org($u);
    my $bound = new_token($u, scope => 'read', org => $slug, days => 3, name => 'ci');
    my $loose = new_token($u, scope => 'admin');
    my ($rc, $out, $err) = ctl('token', 'list', $u, '--json');
    is($rc, 0, 'token list --json: exit 0');
    my $list = json()->decode($out);
    is(scalar @$list, 2, '... both tokens');
    is_deeply([ map { $_->{name} } @$list ], ['svcctl', 'ci'], '... newest first');
    is($list->[1]{org}{slug}, $slug, '... with the binding');
    is($list->[1]{status}, 'active', '... and the status');
    unlike($out, qr/svc_pat_\w{20}/, '... and no secret (only the display prefix)');
    ok(index($out, $bound) < 0 && index($out, $loose) < 0, '... not even in part');
    ($rc, $out) = ctl('token', 'list', $u);
    is($rc, 0, 'token list: exit 0');
    like($out, qr/^ID\s+STATUS\s+SCOPE/m, '... a table');
    like($out, qr/^\Q$list->[1]{id}\E\s+active\s+read\s+\Q$slug\E/m, '... a row per token');

    my $id = $list->[0]{id};
    my ($st) = api(GET => '/api/me', token => $loose);
    is($st, 200, 'the token works');
    ($rc, $out) = ctl('token', 'revoke', $id);
    is($rc, 0, 'token revoke: exit 0');
    is($out, "$id revoked\n", '... says so');
    ($st) = api(GET => '/api/me', token => $loose);
    is($st, 401, '... and the token is refused from the next request on');
    is(psql_value("SELECT actor_kind FROM audit_log WHERE action = 'token.revoked' "
                  . "AND target_id = '$id'"), 'operator', '... audited as the operator\'s doing');
    ($rc, $out) = ctl('token', 'revoke', $id);
    is($rc, 0, 'revoking again: exit 0');
    like($out, qr/revoked already/, '... saying so');
    is(psql_value("SELECT count(*) FROM audit_log WHERE action = 'token.revoked' "
                  . "AND target_id = '$id'"), 1, '... audited once');
    ($rc, undef, $err) = ctl('token', 'revoke', 'tok_doesnotexist00000000');
    is($rc, 1, 'an unknown token id: exit 1');
    like($err, qr/no such token/, '... says so');
    ($rc, undef, $err) = ctl('token', 'list', 'nobody@nowhere.example');
    is($rc, 1, 'token list of an unknown user: exit 1');
}

done_testing();
