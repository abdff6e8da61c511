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

done_testing();
