# The operator's lists (issue 24): a founder, by session or by an admin
# token bound to no org, sees every organization, user and queued or
# running run across tenants, and usage per org; anyone else, an org-bound
# token of a founder included, gets 404 on every /api/admin/ route
# (t/kernel/conformance.t calls each of them so).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $founder = new_user('lists-founder', founder => 1);
my $ftok    = new_token($founder, scope => 'admin');
my $fses    = new_session($founder);
my $owner   = new_user('lists-owner', name => 'Lists Owner');
my $member  = new_user('lists-member');
my $org     = new_org($owner, prefix => 'lists', name => 'Lists Inc');
svcctl('org', 'add-member', $org, $member, '--role', 'member');
my $otok    = new_token($owner, scope => 'admin');
new_session($owner);    # a sign-in to show

# --- who may: a founder's session or unbound admin token; nobody else ----------------------
my @denied = (
    [ 'a signed-in user who is no founder' => token => $otok ],
    [ 'a non-founder\'s session' => cookie => new_session($owner) ],
    [ 'a founder\'s token bound to an org' =>
        token => new_token($founder, scope => 'admin', org => new_org($founder, prefix => 'fb')) ],
);
for my $path ('/api/admin/orgs', '/api/admin/users', '/api/admin/runs', '/api/admin/usage',
              '/api/admin/audit', '/api/admin/vcs/deliveries', '/api/admin/billing/events') {
    for my $d (@denied) {
        my ($name, @auth) = @$d;
        my ($st, $p) = api(GET => $path, @auth);
        is($st, 404, "$name: GET $path is 404");
        is($p && $p->{code}, 'not_found', '... not_found, as if it did not exist');
    }
}
my ($st, $p) = api(GET => '/api/admin/orgs', token => new_token($founder, scope => 'read'));
is($st, 403, 'the founder\'s read token: 403 (the operator may know the route exists)');
is($p->{code}, 'insufficient_scope', '... insufficient_scope');

# --- orgs ------------------------------------------------------------------------------------
($st, $p) = api(GET => "/api/admin/orgs?q=$org", token => $ftok);
is($st, 200, 'the founder lists orgs');
is(scalar @{ $p->{data} }, 1, '... q finds the one');
my ($o) = @{ $p->{data} };
is($o->{slug}, $org, '... by slug');
is($o->{name}, 'Lists Inc', '... its name');
is($o->{members}, 2, '... its members');
is($o->{runs_this_month}, 0, '... no runs yet');
ok(!$o->{suspended} && !defined $o->{suspended_at}, '... not suspended');
($st, $p) = api(GET => '/api/admin/orgs?q=LISTS%20INC', cookie => $fses);
ok($st == 200 && grep({ $_->{slug} eq $org } @{ $p->{data} }),
   'by name, case ignored, through the founder\'s session');
($st, $p) = api(GET => '/api/admin/orgs?limit=1', token => $ftok);
is(scalar @{ $p->{data} }, 1, 'paged: one');
ok($p->{next_cursor}, '... and a cursor to the next');
my ($st2, $p2) = api(GET => "/api/admin/orgs?limit=1&cursor=$p->{next_cursor}", token => $ftok);
ok($st2 == 200 && $p2->{data}[0]{id} ne $p->{data}[0]{id}, '... which is another org');
($st, $p) = api(GET => '/api/admin/orgs?q=' . ('x' x 201), token => $ftok);
is($st, 400, 'q over 200 characters: 400');
is($p->{code}, 'invalid_query', '... invalid_query');

# --- users -----------------------------------------------------------------------------------
($st, $p) = api(GET => "/api/admin/users?q=$owner", token => $ftok);
is($st, 200, 'the founder lists users');
is(scalar @{ $p->{data} }, 1, '... q finds the one');
my ($u) = @{ $p->{data} };
is($u->{email}, $owner, '... by e-mail address');
is($u->{name}, 'Lists Owner', '... its name');
ok(!$u->{founder}, '... no founder');
is_deeply($u->{orgs}, [ $org ], '... its orgs');
ok($u->{last_sign_in_at}, '... its last sign-in');
($st, $p) = api(GET => "/api/admin/users?q=$member", token => $ftok);
ok(!defined $p->{data}[0]{last_sign_in_at}, 'a user who never signed in: null');
($st, $p) = api(GET => "/api/admin/users?q=$founder", token => $ftok);
ok($p->{data}[0]{founder}, 'the founder is one');

# --- runs across orgs --------------------------------------------------------------------------
api(POST => "/api/orgs/$org/projects", token => $otok, json => { slug => 'app', name => 'App' });
my $slow = new_llm(flavor => 'openai');
new_provider($org, $otok, $slow, tools => 'off');
$slow->control(mode => 'slow', delay_ms => 60000);
my ($rs, $run) = api(POST => "/api/orgs/$org/projects/app/runs", token => $otok,
                     json => { instructions => 'Slow' });
is($rs, 201, 'a run');
my $seen;
ok(wait_for(sub {
    my (undef, $l) = api(GET => '/api/admin/runs?status=running', token => $ftok);
    ($seen) = grep { $_->{id} eq $run->{id} } @{ $l->{data} // [] };
    return $seen;
}, timeout => 60), 'the founder sees it running');
is($seen->{org}, $org, '... its org');
is($seen->{project}, 'app', '... its project');
like($seen->{lease_owner} // '', qr{^[^/]+/\d+/\w+$}, '... the node holding its lease');
ok($seen->{lease_expires_at}, '... the lease\'s expiry');
cmp_ok($seen->{age_seconds}, '>=', 0, '... its age');
($st, $p) = api(GET => '/api/admin/runs?status=queued', token => $ftok);
ok(!grep({ $_->{id} eq $run->{id} } @{ $p->{data} }), 'not among the queued');
($st, $p) = api(GET => '/api/admin/runs?status=done', token => $ftok);
is($st, 400, 'another status: 400');
($st, $p) = api(GET => "/api/admin/orgs?q=$org", token => $ftok);
is($p->{data}[0]{runs_this_month}, 1, 'the org counts it this month');
api(POST => "/api/orgs/$org/projects/app/runs/$run->{id}/cancel", token => $otok);
$slow->stop;

# --- usage -------------------------------------------------------------------------------------
ok(wait_for(sub { (api(GET => "/api/orgs/$org/projects/app/runs/$run->{id}", token => $otok))[1]
                  {status} eq 'cancelled' }, timeout => 30), 'the run is cancelled');
($st, $p) = api(GET => '/api/admin/usage', token => $ftok);
is($st, 200, 'usage this month');
my ($us) = grep { $_->{org} eq $org } @{ $p->{data} };
ok($us, '... the org, which used something') or diag(explain($p));
cmp_ok($us->{run_minutes}, '>', 0, '... run minutes') if $us;
($st, $p) = api(GET => '/api/admin/usage?month=2001-01', token => $ftok);
ok($st == 200 && !grep({ $_->{org} eq $org } @{ $p->{data} }), 'another month: not there');
($st, $p) = api(GET => '/api/admin/usage?month=2026-13', token => $ftok);
is($st, 400, 'no such month: 400');

done_testing();
