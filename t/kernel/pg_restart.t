# PostgreSQL restarts under load: a few seconds of 503 at most, never a
# wrong 401 or 404, never a lost acknowledged write, and every request
# issued 5 s after the restart returned succeeds. While the database is
# down, a malformed token is still refused (no lookup needed) and a valid
# one gets 503, not 401.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use HTTP::Request ();
use LWP::UserAgent ();
use POSIX ();
use Time::HiRes qw(time sleep);
use SvcTest;

my $user = new_user('restart');
my $admin = new_token($user, scope => 'admin');
# Token creation is rate limited per user (20 a minute): writers spread their
# writes over several users, as real traffic would be.
my @writers = map { new_token(new_user("writer$_"), scope => 'admin') } 1 .. 10;
my $dir = tempdir(CLEANUP => 1);
my $url = base_url();

# A worker loops until told to stop, writing "time status [id]" lines.
sub worker {
    my ($n, $kind) = @_;
    my $pid = fork() // die "fork: $!";
    return $pid if $pid;
    my $ua = LWP::UserAgent->new(timeout => 30, keep_alive => 1);
    open my $out, '>', "$dir/$kind.$n" or POSIX::_exit(2);
    my $i = 0;
    until (-e "$dir/stop") {
        my ($req, $t0);
        if ($kind eq 'read') {
            $req = HTTP::Request->new(GET => "$url/api/me/tokens?limit=5");
        }
        else {
            $req = HTTP::Request->new(POST => "$url/api/me/tokens");
            $req->header('Content-Type' => 'application/json');
            $req->content(qq({"name":"w$n-$i","scope":"read"}));
        }
        $req->header(Authorization => 'Bearer '
                     . ($kind eq 'read' ? $admin : $writers[($n * 5 + $i) % @writers]));
        $t0 = time;
        my $res = $ua->request($req);
        my $id = '';
        if ($res->code == 201 && $res->content =~ /"id":"(tok_[0-9A-Za-z]+)"/) {
            $id = $1;
            # The secret came back too: note it for the log check.
            record_secret($1) if $res->content =~ /"token":"(svc_pat_[0-9A-Za-z]+)"/;
        }
        printf $out "%.3f %d %s\n", $t0, $res->code, $id;
        $i++;
        sleep($kind eq 'read' ? 0.02 : 0.2);
    }
    close $out;
    POSIX::_exit(0);
}

sub run_restart {
    my ($mode) = @_;
    unlink "$dir/stop";
    unlink glob "$dir/read.* $dir/write.*";
    psql("DELETE FROM rate_limits");
    my @pids = ((map { worker($_, 'read') } 1 .. 3), (map { worker($_, 'write') } 1 .. 2));
    sleep 1.5;
    my $mark = expect_errors_begin();
    pg_restart($mode);
    my $back = time;
    sleep 7;
    open my $stop, '>', "$dir/stop" or die;
    close $stop;
    waitpid($_, 0) for @pids;
    expect_errors_end($mark);

    my (%codes, @late_failures, @acked);
    for my $f (glob "$dir/read.* $dir/write.*") {
        open my $in, '<', $f or die;
        while (<$in>) {
            my ($t, $code, $id) = split;
            $codes{$code}++;
            push @late_failures, "$t $code" if $t > $back + 5 && $code !~ /^2/;
            push @acked, $id if $id;
        }
    }
    my $total = 0;
    $total += $_ for values %codes;
    diag("$mode restart: " . join(', ', map { "$_ x$codes{$_}" } sort keys %codes));
    ok($total > 50, "$mode: requests were flowing ($total)");
    ok(!grep({ !/^(200|201|503)$/ } keys %codes),
       "$mode: only 200, 201 and 503 (never a wrong 401 or 404)")
        or diag(join ', ', keys %codes);
    is(scalar(@late_failures), 0, "$mode: every request issued 5 s after the restart succeeded")
        or diag("@late_failures[0 .. ($#late_failures > 5 ? 5 : $#late_failures)]");
    ok(scalar(@acked) > 0, "$mode: writes were acknowledged");
    my $list = join ',', map { "'$_'" } @acked;
    is(psql_value("SELECT count(*) FROM api_tokens WHERE id IN ($list)"), scalar(@acked),
       "$mode: every acknowledged write is in the database");
    is(psql_value("SELECT count(*) FROM audit_log WHERE action = 'token.created' "
                  . "AND target_id IN ($list)"), scalar(@acked),
       "$mode: ... with its audit entry");
    return $codes{503} // 0;
}

# The 503s of the restarts: a process's count of failed requests is written
# with its next SVC0012 line, so some may be told after the mark below.
my $earlier_503 = run_restart('fast');
$earlier_503 += run_restart('immediate');

# --- the database is down ---------------------------------------------------------
{
    my $mark = expect_errors_begin();
    pg_ctl('stop', '-m', 'fast');
    my $bad = $admin;
    substr($bad, -1, 1) = substr($bad, -1, 1) eq 'A' ? 'B' : 'A';
    my ($st, $p) = api(GET => '/api/me', token => $bad);
    is($st, 401, 'database down: a malformed token is still 401 (no lookup needed)');
    ($st, $p, my $res) = api(GET => '/api/me', token => $admin);
    is($st, 503, 'database down: a valid token gets 503, not 401');
    is($p->{code}, 'service_unavailable', '... service_unavailable');
    ok($res->header('Retry-After'), '... with Retry-After');
    ($st, $p) = api(GET => '/internal/health');
    is($st, 503, 'database down: health is 503');
    ($st) = api(GET => '/api/openapi.json');
    is($st, 200, 'database down: the OpenAPI document is still served');

    # A long outage under load must not fill the disk: mod_dbd's two error
    # lines per request are turned down, and ours come at most once a
    # second per process, with how many requests failed since the last.
    my $t0 = time;
    my $n503 = 0;
    for (1 .. 300) {
        $n503++ if (api(GET => '/api/me', token => $admin))[0] == 503;
    }
    my $secs = time - $t0;
    is($n503, 300, 'database down: a burst of requests all get 503');
    my $log = do {
        open my $fh, '<', error_log_path() or die "error_log: $!";
        seek($fh, $mark, 0);
        local $/;
        <$fh>;
    };
    my @dbd = $log =~ /^.*AH0(?:0629|2655).*$/mg;
    is(scalar(@dbd), 0, '... and mod_dbd wrote none of its per-request lines')
        or diag(join "\n", @dbd[0 .. ($#dbd > 3 ? 3 : $#dbd)]);
    my @ours = $log =~ /^.*SVC0012: the database is unavailable: (\d+) request.*$/mg;
    my $max = (int($secs) + 2) * 4;      # ServerLimit 4 in t/conf/extra.conf.in
    ok(@ours >= 1 && @ours <= $max,
       sprintf('... while ours came at most once a second per process (%d lines in %.1f s)',
               scalar(@ours), $secs));
    my $counted = 0;
    $counted += $_ for @ours;
    ok($counted >= 1 && $counted <= $n503 + 3 + $earlier_503,
       "... and count the requests that failed ($counted of $n503 so far, "
       . "$earlier_503 during the restarts)");
    pg_ctl('start');
    my $ok = wait_for(sub { (api(GET => '/api/me', token => $admin))[0] == 200 }, timeout => 15);
    ok($ok, 'database back: requests succeed again');
    expect_errors_end($mark);
}

done_testing();
