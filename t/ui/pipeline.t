# The pipeline and the org's administration pages of the web UI (issue 26),
# in a real headless Chromium against this server and its PostgreSQL, with
# the fake code-hosting provider (sign-in, an installation) and the fake
# model provider (the table of contents, the build run in the sandbox):
# t/ui/pipeline.mjs creates a request and walks it to done from its page
# (a refusal shown on the way), invites someone, changes a role, puts a
# member on a project's team, lists the installations and links a
# repository, rejects one improvement and approves another, adds a deploy
# target (its key shown once), sets a budget, reads and filters the audit
# log page by page; names holding
# markup run nothing; axe-core on every page; 375 px. Then the database is
# asked what the browser did.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;
use SvcUI;

SvcUI::chromium_or_skip();
plan skip_all => 'the fake code-hosting provider is not running (use tools/test.sh)'
    unless $ENV{VCS_WEB_URL} && $ENV{VCS_APP_ID};

# --- the data ---------------------------------------------------------------------------------
my $email  = new_user('uip', name => 'Pia Pipeline', allow_email_link => 1);
my $member = new_user('uip-m', name => '<img src=x onerror=alert(1)>');
my $org    = new_org($email, prefix => 'uip', name => 'Pipeline Works');
svcctl('org', 'add-member', $org, $member, '--role', 'member');
my $tok    = new_token($email, scope => 'admin');
my $proj   = new_project($org, $tok, 'Greeter');
my $llm    = new_llm(flavor => 'openai');
new_provider($org, $tok, $llm, model => 'gpt-4o-mini', tools => 'off');
# Single-answer mode: the planning call's table of contents, then the build
# run's files.
$llm->control(replies => [
    json()->encode({ body => "# Greeter\n\n1. Greeting: says hello.\n" }),
    json()->encode({ summary => 'Build the greeting',
                     files => [ { path => 'greeting.txt', content => "hello\n" } ] }),
]);
SvcTest::vcs_reset();
SvcTest::new_vcs_user('pia', email => $email, name => 'Pia Pipeline');
my $inst = vcs_record_installation($org, vcs_installation(repos => [ 'api', 'web' ]));
my $invitee = uniq('invitee') . '@example.test';
my %imp;
for my $t ('<img src=x onerror=alert(1)>', 'Make it blue') {
    my ($st, $i) = api(POST => "/api/orgs/$org/projects/$proj/improvements", token => $tok,
                       json => { kind => 'feature', title => $t, body => "Please.\n" });
    die "improvement: $st\n" unless $st == 201;
    $imp{$t} = $i->{id};
}

# --- the browser ------------------------------------------------------------------------------
my $r = SvcUI::run_walk('pipeline.mjs', min_checks => 70,
                        env => { SVC_UI_ORG => $org, SVC_UI_PROJECT => $proj,
                                 SVC_UI_MEMBER => '<img src=x onerror=alert(1)>',
                                 SVC_UI_INVITEE => $invitee, SVC_UI_INST => $inst->{login},
                                 SVC_UI_OWNER => 'Pia Pipeline' });
SvcTest::vcs_state();       # records what the fake provider issued: never in a log

# --- what the browser did, from the database ------------------------------------------------------
my $rid = ($r->{request_id} // '') =~ s/[^A-Za-z0-9_]//gr;
ok($rid =~ /^rqs_/, 'the browser made a request');
is(join('/', map { $_ // '' } @{ (psql("SELECT stage, status, integration_approved_by FROM requests "
                                       . "WHERE id = '$rid'"))[0] // [] }),
   'done/done/' . user_id_of($email), 'the request is done, approved by the signed-in user');
is(psql_value("SELECT title FROM requests WHERE id = '$rid'"), '<img src=x onerror=alert(1)>',
   '... its title stored as typed');
is(psql_value("SELECT count(*) FROM build_tasks WHERE request_id = '$rid' AND status = 'succeeded'"),
   1, '... its one build task succeeded');
is(psql_value("SELECT role FROM invites WHERE lower(email) = lower(" . sql_quote($invitee)
              . ") AND org_id = '" . org_id_of($org) . "' AND project_id IS NULL "
              . "AND accepted_at IS NULL AND declined_at IS NULL AND revoked_at IS NULL "
              . "AND lapsed_at IS NULL AND expires_at > now()"),
   'member', 'the invite made in the browser is stored, pending');
is(psql_value("SELECT role FROM org_members WHERE org_id = '" . org_id_of($org)
              . "' AND user_id = '" . user_id_of($member) . "'"), 'admin',
   'the role changed in the browser');
my (undef, $team) = api(GET => "/api/orgs/$org/projects/$proj/team", token => $tok);
is(join(',', map { "$_->{user_id}:$_->{role}" } grep { $_->{user_id} eq user_id_of($member) }
           @{ $team->{data} }),
   user_id_of($member) . ':developer', 'the member put on the team in the browser');
my (undef, $repo) = api(GET => "/api/orgs/$org/projects/$proj/repository", token => $tok);
is($repo->{repository}{full_name} // '', "$inst->{login}/api", 'the repository linked in the browser');
my $irid = ($r->{improvement_request} // '') =~ s/[^A-Za-z0-9_]//gr;
is(psql_value("SELECT status || '/' || coalesce(request_id, '') FROM improvements WHERE id = '"
              . $imp{'<img src=x onerror=alert(1)>'} . "'"), "approved/$irid",
   'the improvement approved in the browser made the request it opened');
is(psql_value("SELECT stage FROM requests WHERE id = '$irid'"), 'intake', '... in intake');
is(psql_value("SELECT status || '/' || reason FROM improvements WHERE id = '$imp{'Make it blue'}'"),
   'rejected/Not now.', 'the other was rejected with its reason');
record_secret($r->{target_key}) if $r->{target_key};
is(psql_value("SELECT count(*) FROM deploy_targets WHERE org_id = '" . org_id_of($org)
              . "' AND name = '<img src=x onerror=alert(1)>'"), 1, 'the deploy target made in the browser');
my (undef, $budget) = api(GET => "/api/orgs/$org/billing/budget", token => $tok);
is($budget->{monthly_usd}, 50, 'the budget set in the browser');

done_testing();
