# Suspension (issue 24): an operator suspends a user or an organization,
# by the API or svcctl, and lifts it again. A suspended user's tokens and
# sessions get 403 account_suspended from the next request on (a principal
# the child had cached included), and the user's open event streams end; a
# suspended org's routes answer 403 org_suspended, its open streams end, its
# share links answer 404, its queued runs wait. Each change is an entry of
# the platform audit log, whose hash chain verifies.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $founder = new_user('susp-founder', founder => 1);
my $ftok    = new_token($founder, scope => 'admin');
my $owner   = new_user('susp-owner');
my $member  = new_user('susp-member');
my $org     = new_org($owner, prefix => 'susp');
svcctl('org', 'add-member', $org, $member, '--role', 'member');
my $otok    = new_token($owner, scope => 'admin');
my $mtok    = new_token($member, scope => 'read');
my $mses    = new_session($member);
my $mid     = user_id_of($member);
my $why     = { reason => 'Chargebacks under review (ticket 4411)' };

sub code_of { my ($s, $p) = @_; return "$s " . ($p && ref $p eq 'HASH' ? $p->{code} // '' : '') }

# The member's token is used before the suspension, so each child that
# answered has the principal in its authentication cache.
is((api(GET => "/api/orgs/$org", token => $mtok))[0], 200, 'the member reads the org') for 1 .. 4;

# --- a user --------------------------------------------------------------------------------
my $stream = sse_open("/api/orgs/$org/events", token => $mtok);
is($stream->{status}, 200, 'the member has an event stream open');
my ($st, $p) = api(POST => "/api/admin/users/$mid/suspend", token => $ftok, json => $why);
is($st, 200, 'the founder suspends the member');
ok($p->{suspended}, '... suspended');
is($p->{suspended_reason}, $why->{reason}, '... with the reason');
my @after = map { code_of(api(GET => "/api/orgs/$org", token => $mtok)) } 1 .. 6;
is_deeply(\@after, [ ('403 account_suspended') x 6 ],
          'the member\'s token: 403 account_suspended on every request, cached or not');
is(code_of(api(GET => '/api/me', cookie => $mses)), '403 account_suspended',
   '... the session too');
# Within seconds, not at the stream's periodic check of access (30 s).
my $ended = wait_for(sub { sse_next($stream, 1); $stream->{closed} || $stream->{eof} },
                     timeout => 5);
ok($ended, '... and the open event stream is closed');
is(code_of(api(GET => "/api/orgs/$org", token => $otok)), '200 ',
   'the other members go on');
is(code_of(api(POST => "/api/admin/users/$mid/suspend", token => $ftok, json => $why)),
   '409 invalid_status', 'suspending again: 409');
($st, $p) = api(GET => "/api/admin/users?q=$member", token => $ftok);
ok($p->{data}[0]{suspended}, 'the list shows it');
($st, $p) = api(POST => "/api/admin/users/$mid/unsuspend", token => $ftok,
                json => { reason => 'Resolved' });
ok($st == 200 && !$p->{suspended}, 'lifted');
is(code_of(api(GET => "/api/orgs/$org", token => $mtok)), '200 ', 'the token works again');
is(code_of(api(GET => '/api/me', cookie => $mses)), '200 ', '... and the session');

# svcctl does the same.
svcctl('user', 'suspend', $member, '--reason', 'From the host');
is(code_of(api(GET => "/api/orgs/$org", token => $mtok)), '403 account_suspended',
   'svcctl user suspend');
svcctl('user', 'unsuspend', $member, '--reason', 'From the host');
is(code_of(api(GET => "/api/orgs/$org", token => $mtok)), '200 ', 'svcctl user unsuspend');

# --- an org --------------------------------------------------------------------------------
api(POST => "/api/orgs/$org/projects", token => $otok, json => { slug => 'app', name => 'App' });
my $prd = new_product($org, 'app', $otok);
my ($ss, $share) = api(POST => "/api/orgs/$org/products/$prd->{id}/shares", token => $otok,
                       json => {});
is($ss, 201, 'a share link');
record_secret($share->{token});
is((api(GET => "/api/share/$share->{token}"))[0], 200, '... that answers');
my $ostream = sse_open("/api/orgs/$org/events", token => $otok);
is($ostream->{status}, 200, 'the owner has an event stream open');

($st, $p) = api(POST => "/api/admin/orgs/$org/suspend", token => $ftok, json => $why);
is($st, 200, 'the founder suspends the org');
ok($p->{suspended}, '... suspended');
is(code_of(api(GET => "/api/orgs/$org", token => $otok)), '403 org_suspended',
   'its owner: 403 org_suspended');
is(code_of(api(GET => "/api/orgs/$org/projects", token => $mtok)), '403 org_suspended',
   '... its member too');
is(code_of(api(GET => "/api/orgs/$org", token => new_token(new_user('susp-out')))),
   '404 not_found', 'an outsider still learns nothing: 404');
is((api(GET => "/api/share/$share->{token}"))[0], 404, 'its share link: 404');
ok(wait_for(sub { sse_next($ostream, 1); $ostream->{closed} || $ostream->{eof} },
            timeout => 5), 'its open event stream is closed');
is((api(GET => '/api/me', token => $otok))[0], 200, 'the owner\'s own account works');

svcctl('org', 'unsuspend', $org, '--reason', 'Resolved');
is(code_of(api(GET => "/api/orgs/$org", token => $otok)), '200 ', 'svcctl org unsuspend');
is((api(GET => "/api/share/$share->{token}"))[0], 200, 'the share link answers again');

# The run queue: a run queued just before the suspension is not started
# while it lasts. The supervisor is held (SIGSTOP) while the run is queued
# and the org suspended, so it cannot take the run first.
my $llm = new_llm(flavor => 'openai');
$llm->control(replies => [ json()->encode({ summary => 'A file',
                                            files => [ { path => 'a.txt', content => "a\n" } ] }) ]);
new_provider($org, $otok, $llm, tools => 'off');
my $pidfile = Apache::Test::vars('t_logs') . '/svc-supervisor.pid';
my $sup = do { open my $fh, '<', $pidfile or die "$pidfile: $!"; local $/; <$fh> };
chomp $sup;
kill 'STOP', $sup;
my ($rs, $run) = api(POST => "/api/orgs/$org/projects/app/runs", token => $otok,
                     json => { instructions => 'Queued before the suspension' });
# A run's event stream follows that run's events only, not the org's
# (access.suspension is one of the org's); a suspension ends it within
# seconds all the same, and only the suspended caller's.
my $run_events = "/api/orgs/$org/projects/app/runs/$run->{id}/events";
my $mrun = sse_open($run_events, token => $mtok);
my $orun = sse_open($run_events, token => $otok);
is("$mrun->{status} $orun->{status}", '200 200', 'the member and the owner follow the run');
($st) = api(POST => "/api/admin/users/$mid/suspend", token => $ftok, json => $why);
is($st, 200, 'the member suspended again');
ok(wait_for(sub { sse_next($mrun, 1); $mrun->{closed} || $mrun->{eof} }, timeout => 5),
   '... and the member\'s stream of the run is closed');
sse_next($orun, 1);
ok(!$orun->{closed} && !$orun->{eof}, '... the owner\'s goes on');
($st) = api(POST => "/api/admin/users/$mid/unsuspend", token => $ftok, json => $why);
is($st, 200, '... lifted');
($st) = api(POST => "/api/admin/orgs/$org/suspend", token => $ftok, json => $why);
ok(wait_for(sub { sse_next($orun, 1); $orun->{closed} || $orun->{eof} }, timeout => 5),
   'the org suspended: the owner\'s stream of the run is closed');
kill 'CONT', $sup;
is($rs, 201, 'a run queued');
is($st, 200, '... then the org suspended');
sleep 3;
is(psql_value("SELECT status FROM runs WHERE id = '$run->{id}'"), 'queued',
   'the suspended org\'s queued run is not started');
($st, $p) = api(GET => '/api/admin/runs?status=queued', token => $ftok);
my ($q) = grep { $_->{id} eq $run->{id} } @{ $p->{data} };
ok($q && $q->{org_suspended}, 'the operator sees it waiting, and why');
($st) = api(POST => "/api/admin/orgs/$org/unsuspend", token => $ftok, json => $why);
is($st, 200, 'lifted');
my $done = wait_for(sub {
    my $s = psql_value("SELECT status FROM runs WHERE id = '$run->{id}'");
    return $s =~ /^(?:succeeded|failed|cancelled)$/ ? $s : undef;
}, timeout => 60);
is($done, 'succeeded', 'the run is carried out once lifted');
$llm->stop;

# --- the platform audit log ----------------------------------------------------------------
($st, $p) = api(GET => '/api/admin/audit?limit=200', token => $ftok);
is($st, 200, 'the platform audit log');
my @mine = grep { $_->{target_id} eq $mid || $_->{target_id} eq org_id_of($org) }
           @{ $p->{data} };
is_deeply([ reverse map { "$_->{actor_kind} $_->{action}" } @mine ],
          [ 'user user.suspended', 'user user.unsuspended', 'operator user.suspended',
            'operator user.unsuspended', 'user org.suspended', 'operator org.unsuspended',
            'user user.suspended', 'user user.unsuspended', 'user org.suspended',
            'user org.unsuspended' ],
          'every change, in order, by whom') or diag(explain(\@mine));
is($mine[-1]{data}{reason}, $why->{reason}, '... with its reason');
($st, $p) = api(GET => '/api/admin/audit/verify', token => $ftok);
ok($st == 200 && $p->{valid}, 'its hash chain verifies');
# Only the platform's own actions: an org's log rightly holds others of
# the same ending (a code-hosting installation suspended, in vcs tests).
is(psql_value("SELECT count(*) FROM audit_log WHERE action IN ('user.suspended', "
              . "'user.unsuspended', 'org.suspended', 'org.unsuspended')"), 0,
   'no org\'s audit log has them');

# --- input ---------------------------------------------------------------------------------
is(code_of(api(POST => "/api/admin/orgs/$org/suspend", token => $ftok, json => {})),
   '400 validation_failed', 'no reason: 400');
is(code_of(api(POST => "/api/admin/orgs/$org/suspend", token => $ftok,
               json => { reason => 'x' x 501 })), '400 validation_failed',
   'a reason over 500 characters: 400');
is(code_of(api(POST => '/api/admin/orgs/no-such-org-x/suspend', token => $ftok, json => $why)),
   '404 not_found', 'no such org: 404');
is(code_of(api(POST => '/api/admin/users/usr_nosuchuserxxxxxxxxxxx/suspend', token => $ftok,
               json => $why)), '404 not_found', 'no such user: 404');

done_testing();
