# The deployments pages of the web UI and filing an improvement (issue
# 26), in a real headless Chromium against this server and its PostgreSQL,
# with a REAL deploy agent (build/svc-agent, its workloads in bubblewrap):
# t/ui/deploy.mjs adds a target named <img src=x onerror=alert(1)> (its key
# shown once, copied), which the agent enrolls with; creates a deployment of
# a run, approves its plan, sees it run and scales it to two; asks for its
# logs and sees the lines the agent uploads (a <script> among them, as
# text), its metrics and uptime; sees the incident the service files when
# the workload fails its health checks appear, and approves it; rotates the
# key (the new one shown once); is refused the target's removal while the
# deployment is on it, tears it down and removes the target; files an
# improvement on the pipeline page and sees it listed. axe-core on every
# page, 375 px on the main ones.
#
# The walk and this test's helper (a child process: the agent is started
# only once the browser has made the target and shown its key) talk through
# files in a directory: see t/ui/deploy.mjs. Then this checks from outside
# what the browser did: the old key refused after the rotation and the new
# one taken (tried by the helper in between), the stored deployment, its
# scaling and approval, the incident's decision, the target removed, the
# filed improvement.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use File::Spec::Functions qw(catfile);
use File::Temp qw(tempdir);
use POSIX ();
use SvcTest;
use SvcDeploy;
use SvcUI;

skip_without_sandbox();
SvcUI::chromium_or_skip();

# --- the data ---------------------------------------------------------------------------------
my $email = new_user('uidep', name => 'Dee Deploy', allow_email_link => 1);
my $org   = new_org($email, prefix => 'uidep', name => 'Deploy Works');
my $tok   = new_token($email, scope => 'admin');
my $proj  = new_project($org, $tok, 'Served');
SvcTest::vcs_reset();
SvcTest::new_vcs_user('dee', email => $email, name => 'Dee Deploy');

# The workload: says hello with a script tag (its log is shown as text),
# answers 500 while the file "fail" is in its checkout.
my ($bundle, $commit) = ok_app_bundle(start => <<'PY');
print('hello <script>window.__svcPwned=1</script> from port %d' % port, flush=True)
PY
my $run = run_fixture($org, $proj, bundle => $bundle, commit => $commit);

# --- the helper: the agent, started with the key the browser shows ---------------------------
my $coord = tempdir(CLEANUP => 1);
chmod 0777, $coord;
my $agent_dir = tempdir('agent-uidep-XXXX', DIR => SvcTest::t_logs(), CLEANUP => 0);
my %agent_env = (SVC_AGENT_METRICS_INTERVAL => 2, SVC_AGENT_PROBE_INTERVAL => 1);

sub slurp_file {
    my $f = shift;
    open my $fh, '<', $f or return undef;
    local $/;
    return scalar <$fh>;
}

sub spit_file {
    my ($name, $text) = @_;
    my $f = catfile($coord, $name);
    open my $fh, '>', "$f.tmp" or die "$f: $!";
    print $fh $text;
    close $fh;
    rename "$f.tmp", $f or die "$f: $!";
}

# The helper waits for what the walk writes; SIGTERM (or the walk's end)
# stops it and its agent.
sub heard {
    my $name = shift;
    my $v = wait_for(sub { slurp_file(catfile($coord, $name)) }, timeout => 600, interval => 0.2);
    die "the walk never wrote $name\n" unless defined $v;
    return $v;
}

my $helper = fork // die "fork: $!";
if (!$helper) {
    my $agent;
    local $SIG{TERM} = sub { stop_agent($agent) if $agent; POSIX::_exit(0) };
    my $ok = eval {
        my $key1 = heard('key1');
        $agent = start_agent(key => $key1, name => 'uidep-1', dir => $agent_dir, env => \%agent_env);
        my $dep = heard('fail') =~ s/[^A-Za-z0-9_]//gr;
        my $appdir = catfile($agent_dir, 'deployments', $dep, 'app');
        open my $fh, '>', catfile($appdir, 'fail') or die "fail: $!";
        close $fh;
        heard('heal');
        unlink catfile($appdir, 'fail');
        my $key2 = heard('key2');
        # Between the rotation and the removal: the old key refused, the new one taken.
        my ($old) = api(GET => '/api/agent/deployments', token => $key1);
        my ($new) = api(GET => '/api/agent/deployments', token => $key2);
        my $told = wait_for(sub { agent_log($agent) =~ /refused this agent's key \(401\)/ },
                            timeout => 60) ? 1 : 0;
        stop_agent($agent);
        $agent = start_agent(key => $key2, name => 'uidep-2', dir => $agent_dir,
                             env => \%agent_env);
        spit_file('rotated', json()->encode({ old => $old, new => $new, told => $told }));
        1;
    };
    spit_file('helper-error', $@) unless $ok;
    sleep 1 while 1;        # until SIGTERM
}

# --- the browser ------------------------------------------------------------------------------
my $r = SvcUI::run_walk('deploy.mjs', min_checks => 40,
                        env => { SVC_UI_ORG => $org, SVC_UI_PROJECT => $proj, SVC_UI_RUN => $run,
                                 SVC_UI_COORD => $coord });
kill 'TERM', $helper;
waitpid $helper, 0;
is(slurp_file(catfile($coord, 'helper-error')), undef, 'the helper did its part');
record_secret($r->{key1}, $r->{key2});

# --- what the browser did, from outside ----------------------------------------------------------
my $rot = eval { json()->decode(slurp_file(catfile($coord, 'rotated')) // '') } // {};
is($rot->{old}, 401, 'after the rotation in the browser, the old key is refused (401)');
is($rot->{new}, 200, '... and the new one shown there is taken');
ok($rot->{told}, '... and the agent, its stream ended, says in its log that its key was refused');
my ($st) = api(GET => '/api/agent/deployments', token => $r->{key2} // 'svc_dek_none');
is($st, 401, 'after the removal in the browser, the new key is refused too');

my $tid = ($r->{target_id} // '') =~ s/[^A-Za-z0-9_]//gr;
like($tid, qr/^dtg_/, 'the browser made a target');
is(psql_value("SELECT name || '/' || (removed_at IS NOT NULL)::text FROM deploy_targets "
              . "WHERE id = '$tid'"), '<img src=x onerror=alert(1)>/true',
   '... named as typed, and removed');
my $did = ($r->{deployment_id} // '') =~ s/[^A-Za-z0-9_]//gr;
is(psql_value("SELECT status || '/' || run_id || '/' || target_id FROM deployments "
              . "WHERE id = '$did'"), "torn_down/$run/$tid",
   'the deployment made in the browser, of that run on that target, is torn down');
is(psql_value("SELECT count(*) FROM deployment_idempotency WHERE deployment_id = '$did'"), 1,
   '... made with an Idempotency-Key');
my $uid = user_id_of($email);
for my $action (qw(deployment.created deployment.approve deployment.scale deployment.teardown
                   deploy_target.key_rotated deploy_target.removed)) {
    is(psql_value("SELECT count(*) FROM audit_log WHERE action = '$action' AND actor_user_id = '$uid' "
                  . "AND target_id IN ('$did', '$tid')"), 1, "$action by the signed-in user");
}
is(psql_value("SELECT count(*) FROM audit_log WHERE action = 'deployment.scale' AND "
              . "target_id = '$did' AND data->>'replicas' = '2'"), 1, '... scaled to 2');
my $inc = ($r->{incident} // '') =~ s/[^A-Za-z0-9_]//gr;
is(psql_value("SELECT source || '/' || source_ref || '/' || status || '/' || decided_by "
              . "FROM improvements WHERE id = '$inc'"), "incident/$did/approved/$uid",
   'the incident shown in the browser, of that deployment, approved there');
is(psql_value("SELECT r.stage FROM requests r JOIN improvements i ON i.request_id = r.id "
              . "WHERE i.id = '$inc'"), 'intake',
   '... into a request in intake');
my $imp = ($r->{improvement} // '') =~ s/[^A-Za-z0-9_]//gr;
is(psql_value("SELECT kind || '/' || source || '/' || status || '/' || title || '/' || created_by "
              . "FROM improvements WHERE id = '$imp'"),
   "bug/user/open/<img src=x onerror=alert(1)>/$uid",
   'the improvement filed in the browser: a bug, open, its title as typed');

done_testing();
