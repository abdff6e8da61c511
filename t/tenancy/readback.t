# A change that succeeded is answered as one (issue 14, item 3). Several
# handlers committed, then read the record back to build the answer; when
# that read failed (a lock, a restart), the client got 503 "try again"
# although the change was saved, and the retry got 409. Each handler now
# builds its answer inside the transaction.
#
# How the test makes "the read after the COMMIT fails" happen every time,
# not by chance of timing:
#
#   - the requests go to a virtual host with connections of their own
#     (application_name=svc_readback) and a statement timeout of 1.5 s;
#   - a deferred constraint trigger on audit_log (every change here writes
#     an audit entry) runs inside the COMMIT of those connections only: it
#     touches the tables the answers are read from (users, orgs,
#     org_members, projects, project_members), so its transaction holds
#     them, and waits until another session queues for an exclusive lock
#     on one of them;
#   - that session (a background psql) asks for an exclusive lock on the
#     one table the handler's answer reads as soon as the trigger waits: it
#     queues behind the request's transaction, gets the lock the moment
#     that transaction commits, and keeps it until the test has its answer.
#     (One table only: a session that waited for a second one could
#     deadlock with a read that already holds it.)
#
# So whatever a handler reads from that table after its COMMIT waits until
# the statement timeout (503), while what it read before the COMMIT was
# read in time. The test then checks the answer is the success status and
# the change is in the database.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use HTTP::Request ();
use LWP::UserAgent ();
use POSIX ();
use SvcTest;

Apache::TestRequest::module('readback');
my $base = 'http://' . Apache::TestRequest::hostport();
Apache::TestRequest::module('default');

my $TABLES = 'users, orgs, org_members, projects, project_members';

psql(<<"SQL");
CREATE TABLE IF NOT EXISTS svc_test_release (k text PRIMARY KEY);
CREATE OR REPLACE FUNCTION svc_test_hold_commit() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
    IF current_setting('application_name') <> 'svc_readback' THEN
        RETURN NULL;
    END IF;
    PERFORM 1 FROM $TABLES LIMIT 0;
    FOR i IN 1 .. 200 LOOP
        EXIT WHEN EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'relation'
                          AND relation IN ('users'::regclass, 'orgs'::regclass,
                                           'org_members'::regclass, 'projects'::regclass,
                                           'project_members'::regclass)
                          AND mode = 'AccessExclusiveLock' AND NOT granted);
        PERFORM pg_sleep(0.05);
    END LOOP;
    RETURN NULL;
END \$\$;
DROP TRIGGER IF EXISTS svc_test_hold_commit ON audit_log;
CREATE CONSTRAINT TRIGGER svc_test_hold_commit AFTER INSERT ON audit_log
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION svc_test_hold_commit();
SQL

# holder($key, $table) → pid of a psql that takes an exclusive lock on
# $table once a request waits in its COMMIT, and keeps it until the test
# writes $key to svc_test_release.
sub holder {
    my ($key, $table) = @_;
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open STDOUT, '>', '/dev/null';
        my $wait_commit = "DO \$\$ BEGIN FOR i IN 1 .. 400 LOOP PERFORM pg_stat_clear_snapshot(); "
            . "EXIT WHEN EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = "
            . "'svc_readback' AND wait_event = 'PgSleep'); PERFORM pg_sleep(0.05); END LOOP; "
            . "END \$\$";
        my $wait_release = "DO \$\$ BEGIN FOR i IN 1 .. 1200 LOOP EXIT WHEN EXISTS (SELECT 1 "
            . "FROM svc_test_release WHERE k = '$key'); PERFORM pg_sleep(0.05); END LOOP; "
            . "END \$\$";
        my $psql = ($ENV{SVC_TEST_PGBIN} ? "$ENV{SVC_TEST_PGBIN}/" : '') . 'psql';
        { exec($psql, '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $ENV{SVC_DB}, '-c',
               "$wait_commit; BEGIN; LOCK TABLE $table IN ACCESS EXCLUSIVE MODE; "
               . "$wait_release; COMMIT;") };
        POSIX::_exit(127);
    }
    return $pid;
}

my $ua = LWP::UserAgent->new(keep_alive => 0, timeout => 60);

# call($table, $method, $path, $token, $body) with the holder of $table in
# place → (status, json)
my $n = 0;
sub call {
    my ($table, $method, $path, $token, $body) = @_;
    my $key = 'k' . ++$n . "-$$";
    my $pid = holder($key, $table);
    my $req = HTTP::Request->new($method => "$base$path");
    $req->header(Authorization => "Bearer $token");
    if ($body) {
        $req->header('Content-Type' => 'application/json');
        $req->content(json()->encode($body));
    }
    my $res = $ua->request($req);
    psql("INSERT INTO svc_test_release VALUES ('$key')");
    waitpid($pid, 0);
    is($? >> 8, 0, "$method $path: the lock holder did its part");
    my $data = eval { json()->decode($res->content) };
    return ($res->code, $data);
}

my $owner = new_user('rb-owner');
my $tok = new_token($owner, scope => 'admin');
my $admin = new_user('rb-admin');
my $member = new_user('rb-member');
my $org = new_org($owner, prefix => 'rb');
svcctl('org', 'add-member', $org, $admin, '--role', 'admin');
svcctl('org', 'add-member', $org, $member, '--role', 'member');
my $oid = org_id_of($org);

# --- organizations ---------------------------------------------------------------
{
    my $slug = uniq('rb-new');
    my ($st, $p) = call(orgs => POST => '/api/orgs', $tok, { slug => $slug, name => 'New' });
    is($st, 201, 'org create: 201') or diag(explain($p));
    is($p && $p->{slug}, $slug, '... answered with the org');
    ok(org_id_of($slug), '... and it exists');

    ($st, $p) = call(orgs => PATCH => "/api/orgs/$org", $tok, { name => 'Renamed' });
    is($st, 200, 'org rename: 200') or diag(explain($p));
    is($p && $p->{name}, 'Renamed', '... answered with the new name');
    is(psql_value("SELECT name FROM orgs WHERE id = '$oid'"), 'Renamed', '... saved');

    my $other = new_org($owner, prefix => 'rb-t');
    svcctl('org', 'add-member', $other, $admin, '--role', 'admin');
    ($st, $p) = call(orgs => POST => "/api/orgs/$other/transfer-ownership", $tok,
                     { user_id => user_id_of($admin) });
    is($st, 200, 'ownership transfer: 200') or diag(explain($p));
    is($p && $p->{owner}{id}, user_id_of($admin), '... answered with the new owner');
    is(psql_value("SELECT role FROM org_members WHERE org_id = '" . org_id_of($other)
                  . "' AND user_id = '" . user_id_of($admin) . "'"), 'owner', '... saved');
}

# --- members ----------------------------------------------------------------------
{
    my $target = user_id_of($member);
    my ($st, $p) = call(org_members => PATCH => "/api/orgs/$org/members/$target", $tok,
                        { role => 'viewer' });
    is($st, 200, 'member role change: 200') or diag(explain($p));
    is($p && $p->{role}, 'viewer', '... answered with the new role');
    is(psql_value("SELECT role FROM org_members WHERE org_id = '$oid' AND user_id = '$target'"),
       'viewer', '... saved');
}

# --- projects and teams ---------------------------------------------------------------
{
    my ($st, $p) = call(projects => POST => "/api/orgs/$org/projects", $tok,
                        { slug => 'rb-proj', name => 'Readback' });
    is($st, 201, 'project create: 201') or diag(explain($p));
    is($p && $p->{slug}, 'rb-proj', '... answered with the project');
    ok(psql_value("SELECT id FROM projects WHERE org_id = '$oid' AND slug = 'rb-proj'"), '... saved');

    ($st, $p) = call(projects => PATCH => "/api/orgs/$org/projects/rb-proj", $tok,
                     { description => 'changed' });
    is($st, 200, 'project update: 200') or diag(explain($p));
    is($p && $p->{description}, 'changed', '... answered with the change');
    is(psql_value("SELECT description FROM projects WHERE org_id = '$oid' AND slug = 'rb-proj'"),
       'changed', '... saved');

    my $dev = user_id_of($admin);
    ($st, $p) = call(project_members => POST => "/api/orgs/$org/projects/rb-proj/team",
                     $tok, { user_id => $dev, role => 'developer' });
    is($st, 201, 'team add: 201') or diag(explain($p));
    is($p && $p->{role}, 'developer', '... answered with the team member');
    ($st, $p) = call(project_members => PATCH => "/api/orgs/$org/projects/rb-proj/team/$dev",
                     $tok, { role => 'maintainer' });
    is($st, 200, 'team update: 200') or diag(explain($p));
    is($p && $p->{role}, 'maintainer', '... answered with the new role');
    is(psql_value("SELECT role FROM project_members WHERE user_id = '$dev'"
                  . " AND project_id = (SELECT id FROM projects WHERE org_id = '$oid'"
                  . " AND slug = 'rb-proj')"), 'maintainer', '... saved');
}

# --- accepting an invite ---------------------------------------------------------------
{
    my $invitee = new_user('rb-invitee');
    my ($st, $inv) = api(POST => "/api/orgs/$org/members", token => $tok,
                         json => { email => $invitee, role => 'member' });
    is($st, 201, 'an invite (made the usual way)');
    my $p;
    ($st, $p) = call(orgs => POST => "/api/me/invites/$inv->{id}/accept",
                     new_token($invitee, scope => 'write'));
    is($st, 200, 'invite accept: 200') or diag(explain($p));
    is($p && $p->{org}{slug}, $org, '... answered with the org joined');
    is(psql_value("SELECT role FROM org_members WHERE org_id = '$oid' AND user_id = '"
                  . user_id_of($invitee) . "'"), 'member', '... saved');
}

psql('DROP TRIGGER svc_test_hold_commit ON audit_log; DROP FUNCTION svc_test_hold_commit(); '
     . 'DROP TABLE svc_test_release');
done_testing();
