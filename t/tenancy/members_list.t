# GET /api/orgs/:orgSlug/members: members with their roles, and, for those
# who manage them, the pending invites with the first page.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $owner = new_user('ml-owner');
my $org = new_org($owner, prefix => 'ml');
my $member = new_user('ml-member');
svcctl('org', 'add-member', $org, $member, '--role', 'member');
my $admin_tok = new_token($owner, scope => 'admin');
my $read_tok = new_token($owner, scope => 'read');
my $member_tok = new_token($member, scope => 'admin');

my @emails = map { SvcTest::uniq("ml-inv$_") . '@example.test' } 1 .. 3;
for my $e (@emails) {
    my ($st) = api(POST => "/api/orgs/$org/members", token => $admin_tok,
                   json => { email => $e, role => 'viewer' });
    is($st, 201, "invite $e");
}
# One more that is no longer pending.
my ($st, $gone) = api(POST => "/api/orgs/$org/members", token => $admin_tok,
                      json => { email => SvcTest::uniq('ml-gone') . '@example.test',
                                role => 'member' });
api(DELETE => "/api/orgs/$org/invites/$gone->{id}", token => $admin_tok);

my ($s, $list) = api(GET => "/api/orgs/$org/members", token => $admin_tok);
is($s, 200, 'the owner lists members');
is_deeply([sort map { $_->{role} } @{ $list->{data} }], [qw(member owner)],
          '... with their roles');
is($list->{invites_total}, 3, '... and 3 pending invites in all');
is_deeply([sort map { lc $_->{email} } @{ $list->{invites} }], [sort map { lc } @emails],
          '... listed with the first page (the revoked one is not)');
ok(!(grep { $_->{email} =~ /ml-gone/ } @{ $list->{invites} }), '... no revoked invite');

($s, $list) = api(GET => "/api/orgs/$org/members?limit=1", token => $admin_tok);
ok($list->{next_cursor}, 'paging: a next page');
is(scalar @{ $list->{invites} }, 3, '... invites come with the first page');
($s, $list) = api(GET => "/api/orgs/$org/members?limit=1&cursor=$list->{next_cursor}",
                  token => $admin_tok);
is($s, 200, 'the second page');
ok(!exists $list->{invites}, '... carries no invites');

($s, $list) = api(GET => "/api/orgs/$org/members", token => $member_tok);
is($s, 200, 'a member lists members');
ok(!exists $list->{invites}, '... but sees no invites (outsiders\' addresses)');
($s, $list) = api(GET => "/api/orgs/$org/members", token => $read_tok);
is($s, 200, 'the owner with a read token lists members');
ok(!exists $list->{invites}, '... but sees no invites (needs admin scope)');

done_testing();
