# A write is answered from inside its transaction, in every area (issue 18,
# point 1): stopping PostgreSQL between a handler's change and its COMMIT
# leaves neither the change nor a success (503), and a COMMIT that went
# through is answered as a success, whatever happens to the database right
# after it. Never a 503 for a change that is saved.
#
# The moments are made by PostgreSQL itself, every time, not by timing:
#
#   - the requests go to a virtual host with connections of their own
#     (application_name=svc_write_fault); every route here writes an audit
#     entry, and a deferred constraint trigger on audit_log runs inside the
#     COMMIT of those connections only, where the handler has made its
#     change and (as it must) built its answer, and nothing is saved yet;
#   - "stop": the trigger waits there; the test stops PostgreSQL (pg_ctl
#     stop -m fast), starts it again, and expects 503 and no change;
#   - "hold": the trigger waits until another session (a background psql)
#     queues for an exclusive lock on the table the answer is read from,
#     then lets the COMMIT finish; that session gets the lock the moment
#     the change is saved. A handler that read its answer after COMMIT
#     waits on that lock now: the test sees it waiting and terminates its
#     backend, as a restart would, and the handler answers 503 for a change
#     that is saved, which fails the test. A handler that answers from
#     inside its transaction has nothing left to read: 2xx, and the change.
#
# The audit log area only reads (its routes are all GETs: checked below);
# the events area only streams.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use HTTP::Request ();
use LWP::UserAgent ();
use POSIX ();
use Time::HiRes qw(sleep);
use SvcTest;

my $base = vhost_url('write_fault');
my $dir = tempdir(CLEANUP => 1);
my $APP = 'svc_write_fault';

psql(<<"SQL");
CREATE TABLE IF NOT EXISTS svc_test_fault (mode text, tbl regclass, release text);
DELETE FROM svc_test_fault;
INSERT INTO svc_test_fault VALUES (NULL, NULL, NULL);
CREATE OR REPLACE FUNCTION svc_test_fault_commit() RETURNS trigger LANGUAGE plpgsql AS \$\$
DECLARE
    m text;
    t regclass;
BEGIN
    IF current_setting('application_name') <> '$APP' THEN
        RETURN NULL;
    END IF;
    SELECT mode, tbl INTO m, t FROM svc_test_fault;
    IF m = 'stop' THEN
        -- Until PostgreSQL stops (a minute at most, for a test that failed).
        FOR i IN 1 .. 1200 LOOP
            PERFORM pg_sleep(0.05);
        END LOOP;
    ELSIF m = 'hold' THEN
        -- The holder queues behind this transaction for table t.
        EXECUTE format('SELECT 1 FROM %s LIMIT 0', t);
        FOR i IN 1 .. 1200 LOOP
            EXIT WHEN EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'relation'
                              AND relation = t AND mode = 'AccessExclusiveLock'
                              AND NOT granted);
            PERFORM pg_sleep(0.05);
        END LOOP;
    END IF;
    RETURN NULL;
END \$\$;
DROP TRIGGER IF EXISTS svc_test_fault_commit ON audit_log;
CREATE CONSTRAINT TRIGGER svc_test_fault_commit AFTER INSERT ON audit_log
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION svc_test_fault_commit();
SQL

sub set_mode {
    my ($mode, $table) = @_;
    psql('UPDATE svc_test_fault SET mode = ' . ($mode ? sql_quote($mode) : 'NULL')
         . ', tbl = ' . ($table ? sql_quote($table) : 'NULL') . ', release = NULL');
}

# The request, in a child of its own → its pid; the answer lands in a file.
my $n = 0;
sub send_request {
    my ($r) = @_;
    my $out = "$dir/answer." . ++$n;
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        my $req = HTTP::Request->new($r->{method} => $base . $r->{path});
        $req->header(Authorization => "Bearer $r->{token}");
        if (exists $r->{json}) {
            $req->header('Content-Type' => 'application/json');
            $req->content(json()->encode($r->{json}));
        }
        elsif (defined $r->{raw}) {
            $req->header('Content-Type' => $r->{type});
            $req->content($r->{raw});
        }
        my $res = LWP::UserAgent->new(keep_alive => 0, timeout => 120)->request($req);
        open my $fh, '>', "$out.tmp" or POSIX::_exit(2);
        print $fh $res->code, "\n", $res->content;
        close $fh;
        rename "$out.tmp", $out;
        POSIX::_exit(0);
    }
    return ($pid, $out);
}

sub answer_of {
    my ($pid, $out) = @_;
    waitpid($pid, 0);
    open my $fh, '<', $out or return (0, undef);
    my $code = <$fh>;
    chomp $code;
    my $body = do { local $/; <$fh> };
    return ($code, eval { json()->decode($body) });
}

# The backends of the fault host that wait on `what` (a wait_event_type or
# wait_event).
sub fault_backends {
    my ($what) = @_;
    return map { $_->[0] } psql("SELECT pid FROM pg_stat_activity WHERE application_name = "
                                . "'$APP' AND (wait_event = '$what' OR wait_event_type = "
                                . "'$what')");
}

sub in_commit { return fault_backends('PgSleep') }

# "stop": PostgreSQL stops while the request waits in its COMMIT.
sub stop_in_commit {
    my ($r) = @_;
    set_mode('stop');
    my ($pid, $out) = send_request($r);
    my $waited = wait_for(sub { in_commit() || -e $out }, timeout => 60);
    ok($waited && !-e $out, "$r->{name}: the request waits in its COMMIT")
        or return answer_of($pid, $out);
    my $mark = expect_errors_begin();
    pg_ctl('stop', '-m', 'fast');
    pg_ctl('start');
    set_mode(undef);
    my ($code, $p) = answer_of($pid, $out);
    ok(wait_for(sub { (api(GET => '/internal/health'))[0] == 200 }, timeout => 30),
       "$r->{name}: the database is back");
    expect_errors_end($mark);
    return ($code, $p);
}

# "hold": the answer's table is locked the moment the COMMIT is through.
sub hold_after_commit {
    my ($r) = @_;
    my $key = "k$n-$$";
    set_mode('hold', $r->{table});
    my $holder = fork // die "fork: $!";
    if ($holder == 0) {
        open STDOUT, '>', '/dev/null';
        my $wait_commit = "DO \$\$ BEGIN FOR i IN 1 .. 1200 LOOP PERFORM pg_stat_clear_snapshot(); "
            . "EXIT WHEN EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = "
            . "'$APP' AND wait_event = 'PgSleep'); PERFORM pg_sleep(0.05); END LOOP; END \$\$";
        my $wait_release = "DO \$\$ BEGIN FOR i IN 1 .. 2400 LOOP EXIT WHEN EXISTS (SELECT 1 "
            . "FROM svc_test_fault WHERE release = '$key'); PERFORM pg_sleep(0.05); END LOOP; "
            . "END \$\$";
        my $psql = ($ENV{SVC_TEST_PGBIN} ? "$ENV{SVC_TEST_PGBIN}/" : '') . 'psql';
        { exec($psql, '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $ENV{SVC_DB}, '-c',
               "$wait_commit; BEGIN; LOCK TABLE $r->{table} IN ACCESS EXCLUSIVE MODE; "
               . "$wait_release; COMMIT;") };
        POSIX::_exit(127);
    }
    my $mark = expect_errors_begin();
    my ($pid, $out) = send_request($r);
    my $read_after = 0;
    # Either the answer comes, or the handler waits on the lock after its
    # COMMIT: then its backend goes, as in a restart.
    wait_for(sub {
        return 1 if -e $out;
        my $held = psql_value("SELECT count(*) FROM pg_locks WHERE locktype = 'relation' AND "
                              . "relation = '$r->{table}'::regclass AND mode = "
                              . "'AccessExclusiveLock' AND granted");
        return 0 unless $held;
        for my $b (fault_backends('Lock')) {
            $read_after++;
            psql("SELECT pg_terminate_backend($b)");
        }
        return 0;
    }, timeout => 60, interval => 0.05);
    psql("UPDATE svc_test_fault SET release = '$key'");
    waitpid($holder, 0);
    my ($code, $p) = answer_of($pid, $out);
    set_mode(undef);
    expect_errors_end($mark);
    is($read_after, 0, "$r->{name}: nothing is read after the COMMIT");
    return ($code, $p);
}

sub check_route {
    my ($r) = @_;
    my $before = $r->{changed}->();
    ok(!$before, "$r->{name}: the change is not there before") or return;

    my ($code, $p) = stop_in_commit($r);
    is($code, 503, "$r->{name}: PostgreSQL stopped before the COMMIT: 503")
        or diag(explain($p));
    ok(!$r->{changed}->(), "$r->{name}: ... and nothing of the change is saved");

    $r->{again}->() if $r->{again};
    ($code, $p) = hold_after_commit($r);
    is($code, $r->{status}, "$r->{name}: the COMMIT went through: $r->{status}")
        or diag(explain($p));
    ok($r->{changed}->(), "$r->{name}: ... and the change is saved");
    $r->{answered}->($p) if $r->{answered} && $p;
}

# --- the fixtures ---------------------------------------------------------------------
my $owner = new_user('wf-owner');
my $tok = new_token($owner, scope => 'admin');
my $org = new_org($owner, prefix => 'wf');
my $oid = org_id_of($org);
my $proj = new_project($org, $tok, 'Write faults');
my $product = new_product($org, $proj, $tok);
my $doc = new_document($org, $product->{id}, $tok);
# The token's last use is recorded now, not after a request under test.
api(GET => '/api/me', token => $tok);

my @routes = (
    {
        name => 'tenancy: PATCH /api/orgs/:org',
        method => 'PATCH', path => "/api/orgs/$org", token => $tok,
        json => { name => 'Renamed by a write' }, table => 'orgs', status => 200,
        changed => sub { psql_value("SELECT name FROM orgs WHERE id = '$oid'")
                         eq 'Renamed by a write' },
        answered => sub { is($_[0]{name}, 'Renamed by a write', '... answered with it') },
    },
    {
        name => 'identity: POST /api/me/tokens',
        method => 'POST', path => '/api/me/tokens', token => $tok,
        json => { name => 'wf-token', scope => 'read' }, table => 'api_tokens',
        status => 201,
        changed => sub { psql_value("SELECT count(*) FROM api_tokens WHERE name = 'wf-token'") },
        answered => sub { record_secret($_[0]{token}); is($_[0]{name}, 'wf-token',
                                                          '... answered with it') },
    },
    {
        name => 'share: POST /api/orgs/:org/products/:id/shares',
        method => 'POST', path => "/api/orgs/$org/products/$product->{id}/shares",
        token => $tok, json => {}, table => 'shares', status => 201,
        changed => sub { psql_value("SELECT count(*) FROM shares WHERE product_id = "
                                    . "'$product->{id}'") },
        answered => sub { record_secret($_[0]{token}); is($_[0]{status}, 'active',
                                                          '... answered with it') },
    },
    {
        name => 'attachments: POST /api/orgs/:org/attachments',
        method => 'POST', path => "/api/orgs/$org/attachments?document_id=$doc->{id}"
                                  . '&filename=wf.txt',
        token => $tok, raw => "written\n", type => 'text/plain', table => 'attachments',
        status => 201,
        changed => sub { psql_value("SELECT count(*) FROM attachments WHERE document_id = "
                                    . "'$doc->{id}'") },
        answered => sub { is($_[0]{filename}, 'wf.txt', '... answered with it') },
    },
);

# providers: a new one (no call to the provider is made when one is added).
push @routes, {
    name => 'providers: POST /api/orgs/:org/providers',
    method => 'POST', path => "/api/orgs/$org/providers", token => $tok,
    json => { name => 'wf-provider', kind => 'openai', model => 'wf-model',
              api_key => 'sk-wf-not-a-real-key' },
    table => 'llm_providers', status => 201,
    changed => sub { psql_value("SELECT count(*) FROM llm_providers WHERE org_id = '$oid' "
                                . "AND name = 'wf-provider'") },
    answered => sub { is($_[0]{name}, 'wf-provider', '... answered with it') },
};
record_secret('sk-wf-not-a-real-key');

# documents: a new document of the product.
push @routes, {
    name => 'documents: POST /api/orgs/:org/products/:id/documents',
    method => 'POST', path => "/api/orgs/$org/products/$product->{id}/documents",
    token => $tok, json => { kind => 'section', title => 'wf-section', body => "# WF\n" },
    table => 'documents', status => 201,
    changed => sub { psql_value("SELECT count(*) FROM documents WHERE product_id = "
                                . "'$product->{id}' AND title = 'wf-section'") },
    answered => sub { is($_[0]{title}, 'wf-section', '... answered with it') },
};

# pipeline: a new request.
push @routes, {
    name => 'pipeline: POST /api/orgs/:org/requests',
    method => 'POST', path => "/api/orgs/$org/requests", token => $tok,
    json => { project => $proj, kind => 'build', title => 'wf-request',
              body => 'Made while the database stops.' },
    table => 'requests', status => 201,
    changed => sub { psql_value("SELECT count(*) FROM requests WHERE org_id = '$oid' AND "
                                . "title = 'wf-request'") },
    answered => sub { is($_[0]{title}, 'wf-request', '... answered with it') },
};

# runs: cancelling a running run (a fixture no supervisor works on, so
# nothing else changes it meanwhile).
{
    my $run = run_fixture($org, $proj, status => 'running');
    push @routes, {
        name => 'runs: POST .../runs/:id/cancel',
        method => 'POST', path => "/api/orgs/$org/projects/$proj/runs/$run/cancel",
        token => $tok, table => 'runs', status => 200,
        changed => sub { psql_value("SELECT cancel_requested FROM runs WHERE id = '$run'")
                         eq 't' },
        answered => sub { ok($_[0]{cancel_requested}, '... answered with it') },
    };
}

# vcs: unlinking an installation (recorded straight in the database: linking
# one goes through the provider, which is not what this is about).
{
    my $inst = vcs_record_installation($org, vcs_installation());
    push @routes, {
        name => 'vcs: DELETE /api/orgs/:org/vcs/installations/:id',
        method => 'DELETE', path => "/api/orgs/$org/vcs/installations/$inst->{id}",
        token => $tok, table => 'vcs_installations', status => 200,
        changed => sub { psql_value("SELECT status FROM vcs_installations WHERE "
                                    . "installation_id = $inst->{id}") eq 'unlinked' },
        answered => sub { is($_[0]{installation}{status}, 'unlinked', '... answered with it') },
    };
}

# deploy: a new deploy target (its key shown once, in the answer).
push @routes, {
    name => 'deploy: POST /api/orgs/:org/deploy-targets',
    method => 'POST', path => "/api/orgs/$org/deploy-targets", token => $tok,
    json => { name => 'wf-target' }, table => 'deploy_targets', status => 201,
    changed => sub { psql_value("SELECT count(*) FROM deploy_targets WHERE org_id = '$oid' "
                                . "AND name = 'wf-target'") },
    answered => sub { record_secret($_[0]{key}); is($_[0]{name}, 'wf-target',
                                                    '... answered with it') },
};

# billing: setting the org's budget (the service's own data; the payment
# provider's routes write only their audit entry once it has answered).
push @routes, {
    name => 'billing: PUT /api/orgs/:org/billing/budget',
    method => 'PUT', path => "/api/orgs/$org/billing/budget", token => $tok,
    json => { monthly_usd => 77, alerts => [ 50, 100 ] }, table => 'billing_accounts',
    status => 200,
    changed => sub { (psql_value("SELECT coalesce(max(budget_usd), 0) FROM billing_accounts "
                                 . "WHERE org_id = '$oid'") // 0) == 77 },
    answered => sub { is($_[0]{monthly_usd}, 77, '... answered with it') },
};

check_route($_) for @routes;

# The audit log area has no route that writes.
my @writes = grep { $_->{path} =~ m{/audit} && $_->{method} ne 'GET' } route_table();
is(scalar(@writes), 0, 'auditlog: no route of the audit log writes');

psql('DROP TRIGGER svc_test_fault_commit ON audit_log; DROP FUNCTION svc_test_fault_commit(); '
     . 'DROP TABLE svc_test_fault');
done_testing();
