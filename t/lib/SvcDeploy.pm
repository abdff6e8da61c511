package SvcDeploy;
# Helpers of the deployment tests (t/deploy/): artifacts made with git,
# deploy targets, real agents (build/svc-agent) started against the test
# httpd, and waiting for a deployment's status.
#
#   my ($bundle, $commit) = git_bundle('Procfile' => "web: ...\n", 'app.py' => ...);
#   my ($bundle, $commit) = ok_app_bundle();         # a web app that answers "ok"
#   ok_app_bundle(start => "print('hi', flush=True)\n", files => {k => ...});
#   my $run = run_fixture($org, $proj, bundle => $bundle, commit => $commit);
#   my $t = new_target($org, $token, 'web-1');        # {id, ..., key}
#   my $d = planned_deployment($org, $token, $proj, $t, $bundle, $commit);
#   my $a = start_agent(key => $t->{key}, name => 'web-1');  # {pid, dir, log, ...}
#   my $d = wait_deployment($org, $token, $id, 'running', timeout => 60);
#   stop_agent($a);     # SIGTERM, as systemd stops it
#   kill_agent($a);     # SIGKILL, as a crash
#   skip_without_sandbox();  # the whole file is skipped where bwrap cannot run
use strict;
use warnings;

use Exporter 'import';
use File::Spec::Functions qw(catfile);
use File::Temp qw(tempdir);
use IO::Socket::INET;
use POSIX qw(:sys_wait_h);
use SvcTest;

our @EXPORT = qw(git_bundle ok_app_bundle new_target planned_deployment start_agent stop_agent
                 kill_agent agent_log
                 wait_deployment deployment workload_pids processes_under http_get
                 agent_binary skip_without_sandbox);

# Skips the whole test file where bubblewrap cannot make the namespaces the
# agent's sandbox needs (a container without user namespaces).
sub skip_without_sandbox {
    return if (SvcTest::run([ 'bwrap', '--unshare-all', '--ro-bind', '/usr', '/usr', '--symlink',
                              'usr/bin', '/bin', '--symlink', 'usr/lib', '/lib', '--symlink',
                              'usr/lib64', '/lib64', '/bin/true' ]))[0] == 0;
    Test::More::plan(skip_all => 'bubblewrap cannot make namespaces here');
}

# ok_app_bundle(start => $python, files => {path => content}) → ($bytes,
# $commit): git_bundle of a small workload, a Python server on $PORT
# answering every GET 200 "ok" (its probes pass), or 500 "failing" while a
# file "fail" is in its checkout. `start` is Python run before it serves
# (what the test wants in its log, or a crash); `files` go beside it.
sub ok_app_bundle {
    my %o = @_;
    my $app = "import http.server, os, sys\nport = int(os.environ['PORT'])\n"
            . ($o{start} // '') . <<'PY';
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        code = 500 if os.path.exists('fail') else 200
        self.send_response(code)
        self.end_headers()
        self.wfile.write(b'ok\n' if code == 200 else b'failing\n')
    def log_message(self, *a):
        pass
http.server.HTTPServer(('', port), H).serve_forever()
PY
    return git_bundle('Procfile' => "web: python3 app.py\n", 'app.py' => $app,
                      %{ $o{files} // {} });
}

# git_bundle(path => content, ...) → ($bytes, $commit): a repository with
# those files, one commit on svc/run-fixture, as a bundle holding HEAD and
# that branch (as a run's artifact is).
sub git_bundle {
    my %files = @_;
    my $dir = tempdir(CLEANUP => 1);
    my $git = sub {
        my ($rc, $out, $err) = SvcTest::run(['git', '-C', $dir, '-c', 'user.name=Fixture',
                                             '-c', 'user.email=fixture@example.test', @_]);
        die "git @_: $err" if $rc;
        return $out;
    };
    $git->('init', '-q', '-b', 'svc/run-fixture');
    for my $path (sort keys %files) {
        my $full = catfile($dir, $path);
        (my $parent = $full) =~ s{/[^/]+$}{};
        SvcTest::run(['mkdir', '-p', $parent]);
        open my $fh, '>', $full or die "$full: $!";
        print $fh $files{$path};
        close $fh;
    }
    $git->('add', '-A');
    $git->('commit', '-q', '-m', 'fixture');
    my $commit = $git->('rev-parse', 'HEAD');
    chomp $commit;
    my $b = catfile($dir, 'run.bundle');
    $git->('bundle', 'create', '-q', $b, 'HEAD', 'svc/run-fixture');
    open my $fh, '<:raw', $b or die "$b: $!";
    local $/;
    my $bytes = <$fh>;
    close $fh;
    return ($bytes, $commit);
}

# new_target($org, $token, $name) → the target with its key (recorded as a
# secret: no log may show it).
sub new_target {
    my ($org, $token, $name) = @_;
    my ($st, $t) = api(POST => "/api/orgs/$org/deploy-targets", token => $token,
                       json => { name => $name // uniq('target') });
    die "new_target: $st " . json()->encode($t // {}) . "\n" unless $st == 201;
    return $t;
}

# planned_deployment($org, $token, $proj, $target, $bundle, $commit) → a
# deployment on $target of a new run of that artifact, once planned (from
# its Procfile); dies otherwise.
sub planned_deployment {
    my ($org, $token, $proj, $target, $bundle, $commit) = @_;
    my $run = run_fixture($org, $proj, bundle => $bundle, commit => $commit);
    my ($st, $d) = api(POST => "/api/orgs/$org/deployments", token => $token,
                       json => { project => $proj, target_id => $target->{id}, run_id => $run });
    die "planned_deployment: $st\n" unless $st == 201;
    return wait_deployment($org, $token, $d->{id}, 'planned')
        // die "planned_deployment: $d->{id} was not planned\n";
}

sub agent_binary {
    my $top = $ENV{SVC_TOP} // catfile(SvcTest::t_logs(), '..', '..');
    return catfile($top, 'build', 'svc-agent');
}

# Agents this test started and has not stopped: a test that dies halfway
# leaves none running (nor their replicas, which die with them).
my %started;
my $starter = $$;
END {
    local $?;   # the test's own exit status stands
    return unless $$ == $starter;
    for my $pid (keys %started) {
        next unless kill 0, $pid;
        kill 'TERM', $pid;
        waitpid($pid, 0);
    }
}

# start_agent(key => ..., name => ..., env => {...}, dir => ...) → the
# agent: its pid, data directory, log file, ports. The agent reads the
# service's URL, its key and its directory from the environment (never
# argv); its log (stderr) goes to t/logs/agent-NAME.log, which the log
# check reads too.
sub start_agent {
    my %opt = @_;
    my $name = $opt{name} // uniq('agent');
    my $dir = $opt{dir} // tempdir("agent-$name-XXXX", DIR => SvcTest::t_logs(), CLEANUP => 0);
    my $log = $opt{log} // catfile(SvcTest::t_logs(), "agent-$name.log");
    my $base = 20000 + int(rand(20000));
    my %env = (SVC_AGENT_URL => SvcTest::base_url(), SVC_AGENT_KEY => $opt{key},
               SVC_AGENT_DIR => $dir, SVC_AGENT_PORTS => "$base-" . ($base + 99),
               SVC_AGENT_HEARTBEAT => 2, %{ $opt{env} // {} });
    my $pid = fork // die "fork: $!";
    if (!$pid) {
        open STDIN, '<', '/dev/null';
        open STDOUT, '>>', $log or die "$log: $!";
        open STDERR, '>&', \*STDOUT;
        delete $ENV{$_} for grep { /^SVC_AGENT_/ } keys %ENV;
        $ENV{$_} = $env{$_} for grep { defined $env{$_} } keys %env;
        exec agent_binary() or die "exec: $!";
    }
    $started{$pid} = 1;
    return { pid => $pid, dir => $dir, log => $log, name => $name, env => \%env,
             key => $opt{key} };
}

sub _reap {
    my ($a, $timeout) = @_;
    my $deadline = time + $timeout;
    while (time < $deadline) {
        if (waitpid($a->{pid}, WNOHANG) == $a->{pid}) {
            delete $started{$a->{pid}};
            return 1;
        }
        select(undef, undef, undef, 0.05);
    }
    return 0;
}

# stop_agent($agent) → its exit status (SIGTERM, as systemd stops it).
sub stop_agent {
    my $a = shift;
    kill 'TERM', $a->{pid};
    unless (_reap($a, 20)) {
        kill 'KILL', $a->{pid};
        waitpid($a->{pid}, 0);
        return -1;
    }
    return $?;
}

# kill_agent($agent): SIGKILL, as a crash (its replicas die with it).
sub kill_agent {
    my $a = shift;
    kill 'KILL', $a->{pid};
    waitpid($a->{pid}, 0);
    delete $started{$a->{pid}};
}

sub agent_log {
    my $a = shift;
    open my $fh, '<', $a->{log} or return '';
    local $/;
    return scalar <$fh>;
}

# deployment($org, $token, $id) → the deployment document
sub deployment {
    my ($org, $token, $id) = @_;
    my ($st, $d) = api(GET => "/api/orgs/$org/deployments/$id", token => $token);
    die "deployment: $st\n" unless $st == 200;
    return $d;
}

# wait_deployment($org, $token, $id, $status|qr//, timeout => 60) → the
# deployment once in that status (or undef).
sub wait_deployment {
    my ($org, $token, $id, $want, %opt) = @_;
    return wait_for(sub {
        my $d = deployment($org, $token, $id);
        return (ref $want ? $d->{status} =~ $want : $d->{status} eq $want) ? $d : undef;
    }, timeout => $opt{timeout} // 60, interval => 0.2);
}

# processes_under($dir) → pids of processes whose working directory is in
# $dir (a workload's replicas run in their checkout).
sub processes_under {
    my $dir = shift;
    my @pids;
    opendir my $dh, '/proc' or return ();
    for my $pid (grep { /^\d+$/ } readdir $dh) {
        my $cwd = readlink "/proc/$pid/cwd";
        next unless defined $cwd && index($cwd, $dir) == 0;
        my $cmd = do { local $/; open my $f, '<', "/proc/$pid/cmdline" or next; <$f> } // '';
        next if $cmd eq '';     # a zombie
        push @pids, $pid + 0;
    }
    my @sorted = sort { $a <=> $b } @pids;
    return @sorted;     # in scalar context: how many
}

# workload_pids($agent, $deployment_id) → pids of the deployment's
# processes (bubblewrap and what it started), found by their working
# directory under the agent's data directory.
sub workload_pids {
    my ($a, $dep) = @_;
    return processes_under(catfile($a->{dir}, 'deployments', $dep));
}

# http_get($port, $path) → (status, body) of a GET on 127.0.0.1:$port, or
# (0, error).
sub http_get {
    my ($port, $path) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Timeout => 3)
        or return (0, "$!");
    print $s "GET $path HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    local $/;
    my $res = <$s> // '';
    close $s;
    my ($code) = $res =~ m{^HTTP/\S+ (\d+)};
    my (undef, $body) = split /\r\n\r\n/, $res, 2;
    return ($code // 0, $body // '');
}

1;
