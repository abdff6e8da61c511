# svc_vcs_clone_token, the hook the runs area's init step will call (issue
# 12, "Runs on a linked repository", designed ahead): an installation token
# for one repository, contents and metadata read, an hour; not for another
# org's installation, a suspended or unlinked one, or a repository outside
# the selection. Driven through build/unit/test_vcs --clone-token against
# the fake provider; the token it prints is checked at the provider.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use LWP::UserAgent ();
use SvcTest;

plan skip_all => 'the fake code-hosting provider is not running (use tools/test.sh)'
    unless $ENV{VCS_WEB_URL} && $ENV{VCS_APP_ID} && $ENV{SVC_TOP};

my $bin = "$ENV{SVC_TOP}/build/unit/test_vcs";

sub clone {
    my ($org_id, $id, $name) = @_;
    my ($rc, $out, $err) = SvcTest::run([ $bin, '--clone-token', $org_id, $id, $name ]);
    die "test_vcs --clone-token: $rc $err" if $rc != 0;
    chomp $out;
    my @w = split ' ', $out;
    record_secret($w[1]) if $w[0] eq 'ok';
    return @w;
}

sub with_token {
    my ($token, $path) = @_;
    my $res = LWP::UserAgent->new->get("$ENV{VCS_API_URL}$path",
                                       Authorization => "Bearer $token");
    return ($res->code, eval { json()->decode($res->content) });
}

my $owner = new_user('ct-owner');
my $org = new_org($owner);
my $oid = org_id_of($org);
my $other = new_org($owner);

my $i = vcs_record_installation($org, vcs_installation(repos => [ 'api', 'web' ]));
{
    my ($ok, $token, $expires) = clone($oid, $i->{id}, "$i->{login}/api");
    is($ok, 'ok', 'the org\'s active installation, a repository in its selection: a token');
    like($token // '', qr/^ghs_\w+$/, '... an installation token');
    my $now = time;
    ok($expires > $now + 3500 && $expires <= $now + 3600, '... good for an hour');
    is_deeply(vcs_app_state()->{last}{token_request},
              { repositories => ['api'], permissions => { contents => 'read', metadata => 'read' } },
              '... asked for that one repository, contents: read and metadata: read');
    my ($st, $list) = with_token($token, '/installation/repositories');
    is(join(',', map { $_->{full_name} } @{ $list->{repositories} // [] }), "$i->{login}/api",
       '... and at the provider it reaches that repository only');
    ($st) = with_token($token, "/repos/$i->{login}/web");
    is($st, 404, '... not the installation\'s other one');
}

is((clone(org_id_of($other), $i->{id}, "$i->{login}/api"))[1], 'not_found',
   'another org\'s installation: not found (the run fails with installation_suspended)');
is((clone($oid, $i->{id}, "$i->{login}/secret"))[1], 'refused',
   'a repository outside the selection: refused (clone_failed)');
is((clone($oid, $i->{id}, "someone-else/api"))[1], 'refused',
   'a repository of another account: refused');

my $s = vcs_record_installation($org, vcs_installation(repos => ['api']), status => 'suspended');
is((clone($oid, $s->{id}, "$s->{login}/api"))[1], 'not_found', 'a suspended installation: not found');
my $u = vcs_record_installation($org, vcs_installation(repos => ['api']), status => 'unlinked');
is((clone($oid, $u->{id}, "$u->{login}/api"))[1], 'not_found', 'an unlinked installation: not found');
my $late = vcs_record_installation($org, vcs_installation(repos => ['api'], suspended => 1));
is((clone($oid, $late->{id}, "$late->{login}/api"))[1], 'not_found',
   'suspended at the provider before its event came: not found');

vcs_state();    # records every token the fake issued
done_testing();
