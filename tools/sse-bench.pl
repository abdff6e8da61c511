#!/usr/bin/perl
# tools/sse-bench.pl: the event-stream part of `make bench` (issue 25's
# target: 10,000 open streams on one node, each receiving an event within
# 1 s of its commit at the 99th percentile, GET /api/me keeping at least
# 80 % of its rate without the streams, httpd's memory growing by at most
# 30 KB per stream). One process holds every socket (IO::Poll): its file
# descriptor limit must be above --streams (tools/bench.sh raises it).
#
#   perl tools/sse-bench.pl --url http://127.0.0.1:8080 --org demo --org-id ORG_ID \
#       --token PAT --httpd-pid PID --psql 'psql -X -q -tA -h SOCK -d svc' \
#       [--streams 2000] [--events 20] [--seconds 10] [--rounds 3] [--batch 500]
#
# 1. GET /api/me with wrk, --rounds times for --seconds each, and httpd's RSS
#    (parent + children); the rate is the median round's (one round on the
#    two shared vCPUs here varied by up to 30 % between back-to-back runs);
# 2. opens --streams streams on /api/orgs/ORG/events and waits until each
#    has its head and first line; RSS again: the growth per stream;
# 3. GET /api/me with wrk again, as in 1, the streams idle: the rate kept;
# 4. commits --events events, one at a time (psql returns after the commit),
#    and times each stream's receipt of each: p50, p99, max, and how many
#    deliveries took over 1 s;
#    and between 2 and 3, the CPU the idle streams cost: httpd, PostgreSQL,
#    and this client.
# Prints one block of figures. Plain Perl (IO::Poll, no modules to install).
use strict;
use warnings;

use Getopt::Long;
use IO::Poll qw(POLLIN POLLOUT POLLERR POLLHUP);
use IO::Socket::INET;
use Socket qw(SOL_SOCKET SO_ERROR);
use Errno qw(EINPROGRESS EAGAIN);
use Time::HiRes qw(time sleep);
use POSIX qw(WNOHANG);

my %o = (streams => 2000, events => 20, seconds => 10, rounds => 3, batch => 500);
GetOptions(\%o, 'url=s', 'org=s', 'org-id=s', 'token=s', 'stream-token=s@', 'httpd-pid=i', 'psql=s',
           'streams=i', 'events=i', 'seconds=i', 'rounds=i', 'batch=i')
    or die "sse-bench: bad arguments\n";
die "sse-bench: --rounds must be at least 1\n" if $o{rounds} < 1;
for (qw(url org org-id token httpd-pid psql)) {
    die "sse-bench: --$_ is required\n" unless defined $o{$_};
}
my ($host, $port) = $o{url} =~ m{^http://([^/:]+):(\d+)} or die "sse-bench: --url http://HOST:PORT\n";

sub rss_kib {
    my $parent = $o{'httpd-pid'};
    my $total = 0;
    for my $st (glob '/proc/[0-9]*/status') {
        open my $fh, '<', $st or next;
        my ($pid, $ppid, $rss) = (0, 0, 0);
        while (<$fh>) {
            $pid = $1 if /^Pid:\s+(\d+)/;
            $ppid = $1 if /^PPid:\s+(\d+)/;
            $rss = $1 if /^VmRSS:\s+(\d+)/;
        }
        $total += $rss if $pid == $parent || $ppid == $parent;
    }
    return $total;
}

# CPU time (user + system, in seconds) of httpd (parent and children) and
# of PostgreSQL's processes (all of them: the service's sessions, the
# hub's LISTEN connections, the server's own).
my $hz = POSIX::sysconf(POSIX::_SC_CLK_TCK()) || 100;
sub cpu_seconds {
    my $parent = $o{'httpd-pid'};
    my ($httpd, $pg) = (0, 0);
    for my $st (glob '/proc/[0-9]*/stat') {
        open my $fh, '<', $st or next;
        my $line = <$fh> // next;
        # pid (comm) state ppid ... utime stime: fields 14 and 15.
        my ($pid, $comm, $rest) = $line =~ /^(\d+) \((.*)\) (.*)$/ or next;
        my @f = split ' ', $rest;
        my $t = ($f[11] + $f[12]) / $hz;
        if ($pid == $parent || $f[1] == $parent) {
            $httpd += $t;
        }
        elsif ($comm eq 'postgres' || $comm =~ /^postgres:/) {
            $pg += $t;
        }
    }
    return ($httpd, $pg);
}

# Every socket must fit in this process (and its child, wrk).
if (open my $lim, '<', '/proc/self/limits') {
    while (<$lim>) {
        next unless /^Max open files\s+(\d+)/;
        die "sse-bench: $o{streams} streams need more file descriptors than the $1 "
          . "allowed (ulimit -n)\n" if $1 < $o{streams} + 64;
    }
}

# GET /api/me with wrk; pumps the streams meanwhile (when they are open),
# so that their heartbeats are timed as they come.
sub pump;
my $streams_open = 0;
sub wrk_me {
    my $pid = open(my $fh, '-|',
                   "wrk -t2 -c32 -d$o{seconds}s -H 'Authorization: Bearer $o{token}' "
                   . "$o{url}/api/me 2>&1") or die "sse-bench: wrk: $!\n";
    if ($streams_open) {
        paced_pump() while waitpid($pid, WNOHANG) == 0;
    }
    my $out = do { local $/; <$fh> } // '';
    close $fh;
    my ($rps) = $out =~ /Requests\/sec:\s+([\d.]+)/;
    my ($non2xx) = $out =~ /Non-2xx or 3xx responses:\s+(\d+)/;
    return ($rps // 0, $non2xx // 0);
}

# --rounds runs of wrk_me: the median rate, every round's rate, and the
# non-2xx answers of all of them.
sub wrk_rounds {
    my (@rates, $bad);
    for (1 .. $o{rounds}) {
        my ($rps, $non2xx) = wrk_me();
        push @rates, $rps;
        $bad += $non2xx;
    }
    my @sorted = sort { $a <=> $b } @rates;
    return ($sorted[int($#sorted / 2)], $bad, \@rates);
}

# A first short run warms httpd (its children's threads, the database
# sessions, the token cache) so that the first round does not pay for it.
{
    local $o{seconds} = 3;
    wrk_me();
}
my ($rps0, $bad0, $rates0) = wrk_rounds();
sleep 1;
my $rss0 = rss_kib();

# --- open the streams ------------------------------------------------------------
# The streams' tokens, taken in turn (one user may hold SvcStreamLimit
# streams: --stream-token once per user), else --token for all.
my @stream_tokens = @{ $o{'stream-token'} // [ $o{token} ] };
sub stream_request {
    my $t = $stream_tokens[ $_[0] % @stream_tokens ];
    return "GET /api/orgs/$o{org}/events HTTP/1.1\r\nHost: $host:$port\r\n"
         . "Authorization: Bearer $t\r\nAccept: text/event-stream\r\n\r\n";
}
my (@s, %by_fd);
my $poll = IO::Poll->new;
my $t_open = time;
# Opened --batch at a time (the next when those have their first line), as
# clients arrive, not all in one burst: a connection the server accepted
# but whose request this one process had no time to write yet would meet
# mod_reqtimeout's 20 s on a loaded machine.
sub open_stream {
    my ($i) = @_;
    my $sock = IO::Socket::INET->new(PeerAddr => $host, PeerPort => $port, Proto => 'tcp',
                                     Blocking => 0);
    die "sse-bench: socket $i: $!\n" unless $sock;
    my $st = { sock => $sock, out => stream_request($i), buf => '', ready => 0, got => {} };
    push @s, $st;
    $by_fd{fileno $sock} = $st;
    $poll->mask($sock => POLLOUT);
}

# Pumps at most five times a second: each pass costs this process work
# for every one of its sockets (IO::Poll has no epoll), and pumping
# whenever a heartbeat came (667 a second from 10,000 streams) took 30 %
# of a vCPU (run 20 in docs/performance.md) from the two that httpd and
# wrk share with it. A heartbeat's time is then up to 0.2 s late.
sub paced_pump {
    my $t = time;
    pump(0.2);
    my $left = 0.2 - (time - $t);
    sleep $left if $left > 0;
}

# Reads and parses what arrived; records the time each event id first came.
sub pump {
    my ($wait) = @_;
    $poll->poll($wait);
    for my $sock ($poll->handles(POLLOUT)) {
        my $st = $by_fd{fileno $sock};
        my $n = syswrite($sock, $st->{out});
        if (defined $n) {
            substr($st->{out}, 0, $n) = '';
            $poll->mask($sock => POLLIN) unless length $st->{out};
        }
    }
    my $now = time;
    for my $sock ($poll->handles(POLLIN | POLLERR | POLLHUP)) {
        my $st = $by_fd{fileno $sock};
        my $n = sysread($sock, my $chunk, 65536);
        if (!$n) {
            next if !defined $n && $! == EAGAIN;
            $poll->remove($sock);
            $st->{closed} = 1;
            next;
        }
        # Heartbeats (": heartbeat", every 15 s): the longest gap between
        # two a stream received.
        if ($chunk =~ /^: heartbeat\n/m) {
            my $gap = $st->{beat} ? $now - $st->{beat} : 0;
            $st->{gap} = $gap if $gap > ($st->{gap} // 0);
            $st->{beat} = $now;
            $st->{beats}++;
        }
        $st->{buf} .= $chunk;
        $st->{ready} = 1 if !$st->{ready} && $st->{buf} =~ /retry: \d+/;
        while ($st->{buf} =~ /id: (\d+)\n/g) {
            $st->{got}{$1} //= $now;
        }
        # Keep only the tail, where a frame may be cut.
        $st->{buf} = substr($st->{buf}, -200) if length $st->{buf} > 4096;
    }
}

my $pending = 0;
while (time - $t_open < 300) {
    $pending = grep { !$_->{ready} && !$_->{closed} } @s;
    last if !$pending && @s >= $o{streams};
    open_stream(scalar @s + 1) while @s < $o{streams} && $pending++ < $o{batch};
    pump(0.2);
}
my $open = grep { $_->{ready} } @s;
my $t_opened = time - $t_open;
sleep 2;
pump(0);
my $rss1 = rss_kib();
$streams_open = 1;

# --- what the idle streams cost -----------------------------------------------------
# CPU over --seconds with the streams open and nothing else asked of the
# server: their heartbeats (every 15 s) and access checks (every 30 s),
# the MPM's timers, and this client reading the heartbeats. What the API
# loses below is mostly this, on the same two vCPUs.
my @c0 = (cpu_seconds(), (times)[0] + (times)[1]);
my $t_idle = time;
paced_pump() while time - $t_idle < $o{seconds};
my @c1 = (cpu_seconds(), (times)[0] + (times)[1]);
my $idle = time - $t_idle;

# --- the API with the streams open -------------------------------------------------
my ($rps1, $bad1, $rates1) = wrk_rounds();

# --- events --------------------------------------------------------------------------
my @lat;
my $late = 0;
my $missed = 0;
for my $k (1 .. $o{events}) {
    my $sql = "INSERT INTO events (org_id, kind, data) VALUES ('$o{'org-id'}', 'bench.tick', "
            . "'{\"n\": $k}') RETURNING id";
    (my $quoted = $sql) =~ s/'/'\\''/g;
    my $id = `$o{psql} -c '$quoted'`;
    my $t_commit = time;
    ($id) = $id =~ /(\d+)/ or die "sse-bench: could not emit an event\n";
    my $deadline = $t_commit + 10;
    while (time < $deadline) {
        last unless grep { $_->{ready} && !$_->{closed} && !exists $_->{got}{$id} } @s;
        pump(0.05);
    }
    for my $st (grep { $_->{ready} } @s) {
        if (!exists $st->{got}{$id}) {
            $missed++;
            next;
        }
        my $d = $st->{got}{$id} - $t_commit;
        push @lat, $d;
        $late++ if $d > 1;
    }
    %{ $_->{got} } = () for @s;
    sleep 0.5;
    pump(0);
}
@lat = sort { $a <=> $b } @lat;
sub pct { my $p = shift; return @lat ? $lat[int($p * $#lat)] : 0 }

printf "  streams: %d of %d open in %.1f s\n", $open, $o{streams}, $t_opened;
printf "  httpd RSS: %.1f MiB before, %.1f MiB with the streams: %.1f KiB per stream\n",
       $rss0 / 1024, $rss1 / 1024, $open ? ($rss1 - $rss0) / $open : 0;
printf "  idle streams for %.0f s: CPU of httpd %.1f %%, PostgreSQL %.1f %%, this client %.1f %% "
       . "(of one vCPU)\n", $idle, map { 100 * ($c1[$_] - $c0[$_]) / $idle } 0 .. 2;
printf "  GET /api/me: %.0f req/s without streams, %.0f req/s with them open: %.1f %% "
       . "(median of %d rounds of %d s: %s and %s; non-2xx: %d, %d)\n", $rps0, $rps1,
       $rps0 ? 100 * $rps1 / $rps0 : 0, $o{rounds}, $o{seconds},
       join('/', map { sprintf '%.0f', $_ } @$rates0), join('/', map { sprintf '%.0f', $_ } @$rates1),
       $bad0, $bad1;
printf "  %d events x %d streams: delivery after commit p50 %.0f ms, p99 %.0f ms, max %.0f ms; "
       . "over 1 s: %d; not delivered within 10 s: %d\n", $o{events}, $open,
       1000 * pct(0.5), 1000 * pct(0.99), 1000 * ($lat[-1] // 0), $late, $missed;
# Heartbeats are due 15 s apart; the MPM's timers run at least every second.
my @gaps = sort { $a <=> $b } map { $_->{gap} } grep { $_->{beats} && $_->{beats} > 1 } @s;
printf "  heartbeats: %d streams received two or more; longest gap between two: p50 %.1f s, "
       . "max %.1f s (due every 15 s); streams closed by the server: %d\n", scalar @gaps,
       @gaps ? $gaps[int(0.5 * $#gaps)] : 0, @gaps ? $gaps[-1] : 0,
       scalar grep { $_->{closed} } @s;
close $_->{sock} for @s;
