# /internal/metrics (issue 24): the whole server's metrics in Prometheus's
# text format. Like /internal/health, other addresses get 404; from
# loopback the exposition passes `promtool check metrics`, and a route's
# request counter grows by exactly the requests sent, however many child
# processes and threads served them (the counters are in memory every
# child shares).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use File::Spec::Functions qw(catfile);
use File::Temp qw(tempfile);
use LWP::UserAgent;
use SvcTest;

plan skip_all => 'needs SVC_DB and SVC_SECRET (use tools/test.sh)'
    unless $ENV{SVC_DB} && $ENV{SVC_SECRET};

# promtool (Debian's prometheus package) judges the exposition. Without it
# this skips, saying so, unless it runs in CI (CI set), where
# tools/deps.sh --group test installs it.
my $promtool;
for my $dir (split /:/, $ENV{PATH} // '') {
    $promtool //= "$dir/promtool" if -x "$dir/promtool";
}
if (!$promtool) {
    if ($ENV{CI}) {
        plan tests => 1;
        fail('promtool is installed (tools/deps.sh --group test installs prometheus in CI)');
        exit 0;
    }
    plan skip_all => 'promtool is not installed (apt-get install prometheus, or '
                     . 'tools/deps.sh); the metrics test needs it';
}

sub scrape {
    my ($st, undef, $res) = api(GET => '/internal/metrics', @_);
    return ($st, $res);
}

# The value of one series (name and labels exactly as the exposition
# writes them), or undef when the exposition has no such line.
sub value {
    my ($text, $series) = @_;
    for my $line (split /\n/, $text) {
        return $1 if $line =~ /^\Q$series\E (\S+)$/;
    }
    return undef;
}

# --- outside SvcInternalAllow: not even confirmed to exist ----------------------------------
Apache::TestRequest::module('svc_restricted');
my $restricted = 'http://' . Apache::TestRequest::hostport();
Apache::TestRequest::module('default');
my ($st, $res) = scrape(base => $restricted);
is($st, 404, 'from an address SvcInternalAllow does not list: 404');
like($res->content, qr/"code"\s*:\s*"not_found"/, '... not_found');
unlike($res->content, qr/svc_http_requests_total/, '... and no metrics');

# --- from loopback: the format, and promtool's judgement -------------------------------------
($st, $res) = scrape();
is($st, 200, 'from loopback: 200');
is($res->header('Content-Type'), 'text/plain; version=0.0.4; charset=utf-8',
   '... in the text exposition format 0.0.4');
my $text = $res->content;
{
    my ($fh, $file) = tempfile(UNLINK => 1);
    print $fh $text;
    close $fh;
    my $out = `'$promtool' check metrics < '$file' 2>&1`;
    is($?, 0, 'promtool check metrics passes') or diag($out);
    is($out, '', '... without a complaint') or diag($out);
}
like($text, qr/^svc_build_info\{version="[^"]+"\} 1$/m, 'build info');
is(value($text, 'svc_database_up'), 1, 'the run figures were read from the database');
like(value($text, 'svc_runs{status="queued"}') // '', qr/^\d+$/, 'queued runs counted');
like(value($text, 'svc_run_queue_oldest_age_seconds') // '', qr/^\d+(\.\d+)?$/,
     'the queue\'s age');
like(value($text, 'svc_db_connections_in_use') // '', qr/^\d+$/,
     'database connections in use: a gauge, never negative');
like(value($text, 'svc_rate_limited_total{class="tokens"}') // '', qr/^\d+$/,
     'rate-limit refusals by class');
for my $kind (qw(org agent)) {
    like(value($text, qq{svc_event_streams_open{kind="$kind"}}) // '', qr/^\d+$/,
         "open event streams: $kind");
}

# --- the counters add up across children ---------------------------------------------------
# Many requests, each on a connection of its own, from several processes
# at once: the test server runs two or more children of 25 threads
# (t/conf/extra.conf.in). served_by_log names the child of each request.
my $health = 'svc_http_requests_total{route="/internal/health",method="GET",code="2xx"}';
my $unmatched = 'svc_http_requests_total{route="unmatched",method="",code="4xx"}';
my $tmpl = '/api/orgs/:orgSlug';
my $org_runs = qq{svc_http_requests_total{route="$tmpl",method="GET",code="4xx"}};
my $hist = qq{svc_http_request_duration_seconds_count{route="/internal/health",method="GET"}};
my %before = map { $_ => value($text, $_) // 0 } $health, $unmatched, $org_runs, $hist;

my $tag = uniq('metrics');
my $secret_slug = uniq('nosuchorg');
my ($clients, $each) = (8, 25);
my $base = base_url();
my @pids;
for my $c (1 .. $clients) {
    my $pid = fork // die "fork: $!";
    if (!$pid) {
        my $ok = 1;
        for my $i (1 .. $each) {
            # keep_alive 0: every request its own connection, so the
            # children's listeners share them out.
            my $ua = LWP::UserAgent->new(keep_alive => 0, timeout => 60);
            my @h = ('X-Svc-Test-Tag' => $tag);
            my @codes = ($ua->get("$base/internal/health", @h)->code,
                         $ua->get("$base/api/no/such/route/$i", @h)->code,
                         $ua->get("$base/api/orgs/$secret_slug", @h)->code);
            $ok = 0 unless "@codes" eq '200 404 401';
        }
        # Out of the way of Test::More: nothing of the parent's runs here.
        require POSIX;
        POSIX::_exit($ok ? 0 : 1);
    }
    push @pids, $pid;
}
my $all_ok = 1;
for my $pid (@pids) {
    waitpid($pid, 0);
    $all_ok &&= $? == 0;
}
ok($all_ok, "$clients clients x $each requests x 3 routes answered as expected");
my $sent = $clients * $each;

($st, $res) = scrape();
$text = $res->content;
is((value($text, $health) // 0) - $before{$health}, $sent,
   "GET /internal/health 2xx grew by exactly the $sent requests sent");
is((value($text, $hist) // 0) - $before{$hist}, $sent,
   '... and its duration histogram counted each of them');
is((value($text, $unmatched) // 0) - $before{$unmatched}, $sent,
   "unmatched paths: one label for all, grew by exactly $sent");
is((value($text, $org_runs) // 0) - $before{$org_runs}, $sent,
   "a tenant route is counted by its template, 4xx: grew by exactly $sent");
unlike($text, qr/\Q$secret_slug\E|no\/such\/route/, 'no raw path appears in the metrics');

# Who served them: more than one child, or the test proved nothing about
# the sharing.
my %served_by;
{
    my $log = catfile(t_logs(), 'served_by_log');
    open my $fh, '<', $log or die "$log: $!";
    while (<$fh>) {
        $served_by{$1}++ if /^(\d+) \Q$tag\E$/;
    }
}
my $n = 0;
$n += $_ for values %served_by;
is($n, 3 * $sent, 'served_by_log has every request');
cmp_ok(scalar(keys %served_by), '>', 1,
       'more than one child process served them (pids ' . join(', ', sort keys %served_by) . ')');

# --- webhooks by result ----------------------------------------------------------------------
my $rejected = 'svc_webhook_deliveries_total{source="vcs",result="rejected"}';
my $was = value($text, $rejected) // 0;
($st) = api(POST => '/webhooks/vcs', raw => '{}',
            headers => { 'Content-Type' => 'application/json', 'X-GitHub-Event' => 'ping',
                         'X-GitHub-Delivery' => uniq('d'),
                         'X-Hub-Signature-256' => 'sha256=' . ('0' x 64) });
is($st, 401, 'a code-hosting delivery with a wrong signature: 401');
($st, $res) = scrape();
is((value($res->content, $rejected) // 0) - $was, 1, '... counted once as rejected');

# --- SvcMetrics Off: nothing counted, nothing to scrape --------------------------------------
{
    my $h = scratch_httpd_start("SvcRunSupervisor Off\nSvcMetrics Off\n"
                                . "<Location /internal/>\n    SetHandler svc\n</Location>\n"
                                . "DBDParams \"$ENV{SVC_DB}\"");
    ($st) = api(GET => '/internal/health', base => $h->{url});
    is($st, 200, 'a server with SvcMetrics Off serves');
    my $r;
    ($st, $r) = api(GET => '/internal/metrics', base => $h->{url});
    is($st, 404, '... and answers 404 for its metrics');
    like($r->{detail} // '', qr/SvcMetrics Off/, '... saying why');
    scratch_httpd_stop($h);
}
my ($cst, $cout) = httpd_config_test("<VirtualHost _default_:80>\n    SvcMetrics Off\n"
                                     . "</VirtualHost>");
isnt($cst, 0, 'SvcMetrics in a virtual host: httpd refuses the configuration');
like($cout, qr/SvcMetrics cannot occur within/, '... saying it is server-wide') or diag($cout);

done_testing();
