# Improvements: filed by members (never viewers), listed and filtered,
# decided once by an admin or a maintainer of the project: approved into a
# request of kind improvement in intake (each naming the other), or
# rejected with a reason. Events and audit entries; files bound to an
# improvement; the incident source is the service's (t/unit/test_pipeline.c
# files them).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $owner  = new_user('imp-owner');
my $maint  = new_user('imp-maint');
my $dev    = new_user('imp-dev');
my $member = new_user('imp-member');
my $viewer = new_user('imp-viewer');
my $org    = new_org($owner, prefix => 'imp');
svcctl('org', 'add-member', $org, $_, '--role', 'member') for $maint, $dev, $member;
svcctl('org', 'add-member', $org, $viewer, '--role', 'viewer');
my %tok = (owner => new_token($owner, scope => 'admin'), maint => new_token($maint, scope => 'write'),
           dev => new_token($dev, scope => 'write'), member => new_token($member, scope => 'write'),
           viewer => new_token($viewer, scope => 'write'));
my $proj = new_project($org, $tok{owner}, 'Improvable');
my $st;
for ([ $maint, 'maintainer' ], [ $dev, 'developer' ]) {
    ($st) = api(POST => "/api/orgs/$org/projects/$proj/team", token => $tok{owner},
                json => { user_id => user_id_of($_->[0]), role => $_->[1] });
    is($st, 201, "$_->[1] on the team");
}
my $I = "/api/orgs/$org/projects/$proj/improvements";
my $stream = sse_open("/api/orgs/$org/events?last_event_id=0", token => $tok{owner});

sub file {
    my ($who, %b) = @_;
    return api(POST => $I, token => $tok{$who},
               json => { kind => $b{kind} // 'bug', title => $b{title} // 'It breaks',
                         body => $b{body} // "Steps.\n" });
}

# --- filing --------------------------------------------------------------------------------------
my ($fs, $bug) = file('member', title => 'Crash on save');
is($fs, 201, 'a member who is not on the team files a bug');
is_deeply([ @$bug{qw(project kind title status source request_id reason created_by)} ],
          [ $proj, 'bug', 'Crash on save', 'open', 'user', undef, undef, user_id_of($member) ],
          '... open, filed by them');
like($bug->{id}, qr/^imp_/, '... an imp_ id');
my ($vs, $vp) = file('viewer');
is($vs, 403, 'a viewer files nothing');
is($vp->{code}, 'forbidden', '... forbidden');
my ($ks) = api(POST => $I, token => $tok{member}, json => { kind => 'wish', title => 'x', body => '' });
is($ks, 400, 'an unknown kind: 400');
my (undef, $feat) = file('dev', kind => 'feature', title => 'Dark mode');
my (undef, $third) = file('owner', title => 'Typo');

# --- lists ---------------------------------------------------------------------------------------
my ($ls, $l) = api(GET => $I, token => $tok{viewer});
is($ls, 200, 'a viewer lists them');
is_deeply([ map { $_->{id} } @{ $l->{data} } ], [ $third->{id}, $feat->{id}, $bug->{id} ],
          '... newest first');
(undef, $l) = api(GET => "$I?kind=feature", token => $tok{viewer});
is_deeply([ map { $_->{id} } @{ $l->{data} } ], [ $feat->{id} ], '... by kind');
($ls) = api(GET => "$I?status=closed", token => $tok{viewer});
is($ls, 400, '... an unknown status: 400');

# --- decisions -----------------------------------------------------------------------------------
for my $who ('member', 'dev', 'viewer') {
    my ($s) = api(POST => "/api/orgs/$org/improvements/$bug->{id}/approve", token => $tok{$who});
    is($s, 403, "$who cannot approve");
}
my ($as, $ap) = api(POST => "/api/orgs/$org/improvements/$bug->{id}/approve", token => $tok{maint});
is($as, 200, 'the project\'s maintainer approves');
is($ap->{status}, 'approved', '... approved');
like($ap->{request_id} // '', qr/^rqs_/, '... into a request');
is($ap->{decided_by}, user_id_of($maint), '... decided by them');
my ($rs, $req) = api(GET => "/api/orgs/$org/requests/$ap->{request_id}", token => $tok{viewer});
is($rs, 200, 'the request');
is_deeply([ @$req{qw(kind stage status title improvement_id project)} ],
          [ 'improvement', 'intake', 'active', 'Crash on save', $bug->{id}, $proj ],
          '... of kind improvement, in intake, naming the improvement');
my $life = lifecycle($org, $tok{viewer}, $req->{id});
is_deeply([ map { $_->{id} } @{ $life->{improvements} } ], [ $bug->{id} ],
          '... whose lifecycle lists it');
($as, $ap) = api(POST => "/api/orgs/$org/improvements/$bug->{id}/approve", token => $tok{maint});
is($as, 409, 'a second decision: 409');
is($ap->{code}, 'invalid_status', '... invalid_status');
is_deeply([ map { "$_->{field}:$_->{code}" } @{ $ap->{errors} } ], [ 'status:approved' ],
          '... it is approved');
($as) = api(POST => "/api/orgs/$org/improvements/$bug->{id}/reject", token => $tok{owner},
            json => { reason => 'Too late.' });
is($as, 409, '... rejecting it now: 409');

($as, $ap) = api(POST => "/api/orgs/$org/improvements/$feat->{id}/reject", token => $tok{owner},
                 json => {});
is($as, 400, 'a rejection without a reason: 400');
is($ap->{errors}[0]{field}, 'reason', '... naming it');
($as, $ap) = api(POST => "/api/orgs/$org/improvements/$feat->{id}/reject", token => $tok{owner},
                 json => { reason => 'Not this year.' });
is($as, 200, 'an org owner rejects one');
is_deeply([ @$ap{qw(status reason request_id)} ], [ 'rejected', 'Not this year.', undef ],
          '... with the reason, and no request');
($as) = api(POST => "/api/orgs/$org/improvements/$feat->{id}/approve", token => $tok{owner});
is($as, 409, '... and approving it then: 409');
(undef, $l) = api(GET => "$I?status=open", token => $tok{viewer});
is_deeply([ map { $_->{id} } @{ $l->{data} } ], [ $third->{id} ], 'the open ones');

# --- files bound to an improvement -----------------------------------------------------------------
my ($us, $att) = api(POST => "/api/orgs/$org/attachments?improvement_id=$third->{id}&filename=log.txt",
                     token => $tok{member}, raw => "stack trace\n",
                     headers => { 'Content-Type' => 'text/plain' });
is($us, 201, 'a file bound to an improvement');
is($att->{improvement_id}, $third->{id}, '... bound to it');
my (undef, $al) = api(GET => "/api/orgs/$org/attachments?improvement_id=$third->{id}",
                      token => $tok{viewer});
is_deeply([ map { $_->{id} } @{ $al->{data} } ], [ $att->{id} ], '... listed with it');
($us, $att) = api(POST => "/api/orgs/$org/attachments?request_id=$req->{id}&filename=r.txt",
                  token => $tok{member}, raw => 'r', headers => { 'Content-Type' => 'text/plain' });
is($us, 201, 'a file bound to a request');
$life = lifecycle($org, $tok{viewer}, $req->{id});
is_deeply([ map { $_->{filename} } @{ $life->{attachments} } ], [ 'r.txt' ],
          '... listed in its lifecycle');

# --- another org sees nothing ------------------------------------------------------------------------
my $other = new_user('imp-other');
my $org2 = new_org($other, prefix => 'imp-other');
my $tok2 = new_token($other, scope => 'admin');
my ($xs) = api(POST => "/api/orgs/$org2/improvements/$third->{id}/approve", token => $tok2);
is($xs, 404, 'another org\'s admin cannot decide it');
($xs) = api(POST => "/api/orgs/$org/improvements/$third->{id}/approve", token => $tok2);
is($xs, 404, '... nor through this org');

# --- events and audit ----------------------------------------------------------------------------------
my @ev = sse_drain($stream, 2);
sse_close($stream);
is(scalar(grep { $_->{event} eq 'improvement.filed' } @ev), 3, 'improvement.filed, thrice');
is_deeply([ map { "$_->{data}{improvement_id}:$_->{data}{status}" }
            grep { $_->{event} eq 'improvement.decision' } @ev ],
          [ "$bug->{id}:approved", "$feat->{id}:rejected" ], 'improvement.decision, twice');
ok((grep { $_->{event} eq 'request.stage' && $_->{data}{request_id} eq $req->{id}
           && $_->{data}{stage} eq 'intake' } @ev), '... and the request\'s intake');
my %audit = map { $_->[0] => $_->[1] } psql(
    "SELECT action, count(*) FROM audit_log WHERE org_id = '" . org_id_of($org) . "' "
    . "AND action LIKE 'improvement.%' GROUP BY action");
is_deeply(\%audit, { 'improvement.filed' => 3, 'improvement.approved' => 1,
                     'improvement.rejected' => 1 }, 'audited');

done_testing();
