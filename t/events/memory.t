# What an idle event stream costs httpd (issue 25): at most 30 KB (30,000
# bytes) of memory each, measured as `make bench` measures it: the resident
# memory of httpd's processes with the streams open, less before. Here it
# is the second of two waves of 400 streams, with an event delivered to
# every stream of both: the first wave pays for what a child touches once
# (its threads' stacks and malloc arenas, the hub's ring), the second for
# the streams alone. Only the children that were there for both snapshots
# count, with the streams each of them holds (ss names the process of each
# socket): a child the MPM starts meanwhile would add its own start-up.
# Before the cut a stream kept about 38 KiB: its connection's allocator
# kept an 8 KiB block that each frame took again, the frames were 8 KiB
# buffers, and the request's pool held its context for as long as the
# stream lived.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use File::Spec::Functions qw(catfile);
use Time::HiRes qw(sleep);
use SvcTest;
use SseFlood;

my $port = Apache::Test::vars('port');
my $owner = new_user('mem');
my $org = new_org($owner, prefix => 'mem');
my $org_id = org_id_of($org);
my $path = "/api/orgs/$org/events";
my $wave = 400;

# 800 streams from 8 users at the cap (SvcStreamLimit 100).
my (@tokens, @principals);
for my $i (1 .. 8) {
    my $u = new_user("mem$i");
    svcctl('org', 'add-member', $org, $u, '--role', 'viewer');
    push @tokens, new_token($u, scope => 'read');
    push @principals, sql_quote('user:' . user_id_of($u));
}

sub emit {
    return psql_value(sprintf(
        "INSERT INTO events (org_id, kind, data) VALUES (%s, 'test.memory', '{}') RETURNING id",
        sql_quote($org_id)));
}

# httpd's processes (the parent and its children): pid => resident bytes.
sub httpd_rss {
    open my $fh, '<', catfile(t_logs(), 'httpd.pid') or die "httpd.pid: $!";
    my ($parent) = <$fh> =~ /(\d+)/;
    my %rss;
    for my $st (glob '/proc/[0-9]*/status') {
        open my $s, '<', $st or next;
        my ($pid, $ppid, $kib) = (0, 0, undef);
        while (<$s>) {
            $pid = $1 if /^Pid:\s+(\d+)/;
            $ppid = $1 if /^PPid:\s+(\d+)/;
            $kib = $1 if /^VmRSS:\s+(\d+)/;
        }
        $rss{$pid} = $kib * 1024 if defined $kib && ($pid == $parent || $ppid == $parent);
    }
    return \%rss;
}

# The server's established connections on the test port, per process.
sub streams_per_pid {
    my %n;
    for (split /\n/, `ss -Htnp state established '( sport = :$port )' 2>/dev/null`) {
        $n{$1}++ if /pid=(\d+)/;
    }
    return \%n;
}

my $first = SseFlood->new(port => $port, path => $path, tokens => \@tokens);
is($first->open($wave, wait => 60), $wave, "a first wave of $wave streams is open");
my $id = emit();
is($first->wait_for_id($id, wait => 30), $wave, '... and each received an event');
my ($rss0, $n0) = (httpd_rss(), streams_per_pid());

my $second = SseFlood->new(port => $port, path => $path, tokens => \@tokens);
is($second->open($wave, wait => 60), $wave, "a second wave of $wave streams is open");
$id = emit();
is($first->wait_for_id($id, wait => 30) + $second->wait_for_id($id, wait => 30), 2 * $wave,
   '... and every stream of both waves received another event');
my ($rss1, $n1) = (httpd_rss(), streams_per_pid());

my ($grown, $streams) = (0, 0);
for my $pid (grep { exists $rss1->{$_} } keys %$rss0) {
    $grown += $rss1->{$pid} - $rss0->{$pid};
    $streams += ($n1->{$pid} // 0) - ($n0->{$pid} // 0);
}
cmp_ok($streams, '>=', $wave / 2, "the children there throughout took $streams of the streams")
    or diag('ss named no process: ' . `ss -Htnp state established '( sport = :$port )' | head -3`);
my $per = $streams > 0 ? $grown / $streams : 0;
cmp_ok($per, '<=', 30_000,
       sprintf('an idle stream costs httpd %.0f bytes (%.1f KiB): at most 30 KB', $per, $per / 1024));

$first->close_all;
$second->close_all;
# Every stream is freed by the next heartbeat (t/events/flood.t proves it);
# the places are given back for the tests after this one.
ok(wait_for(sub {
    psql_value('SELECT count(*) FROM event_streams WHERE principal IN ('
               . join(', ', @principals) . ')') == 0
}, timeout => 45), 'every place of the waves was given back');

done_testing();
