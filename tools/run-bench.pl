#!/usr/bin/env perl
# tools/run-bench.pl: the run phase of `make bench` (tools/bench.sh): what a
# run costs beyond its model.
#
# Starts --runs runs through the API on a project whose org's default
# provider is a fake that answers at once (t/lib/FakeLLM.pm, single-answer
# mode: one model call, every file in it), either one at a time (--serial:
# the next is started when the last has ended, so no run waits for another)
# or all at once (a burst: the node's SvcRunConcurrency sets the pace).
# When they have all ended it reads, for each run, the database's created_at,
# started_at and finished_at, and the supervisor's SVC0790 line in the error
# log (LogLevel svc:debug): the run's parts in microseconds, measured by the
# run's own thread. Prints p50 and p99 of every part, of queued → succeeded
# (the claim, then the thread until the outcome is committed), and of that
# less the model's time; a burst also prints runs per minute (the
# runs over the time from the first created_at to the last finished_at).
#
#   run-bench.pl --url URL --token PAT --org SLUG --project SLUG --runs N
#                --log ERRORLOG --psql 'psql ... -tA' [--serial] [--label TEXT]
use strict;
use warnings;

use Getopt::Long qw(GetOptions);
use HTTP::Tiny;
use JSON::PP ();
use Time::HiRes qw(sleep time);

my %o = (runs => 100, label => '');
GetOptions(\%o, 'url=s', 'token=s', 'org=s', 'project=s', 'runs=i', 'log=s', 'psql=s',
           'serial', 'label=s')
    or die "run-bench: bad arguments\n";
for (qw(url token org project log psql)) {
    die "run-bench: --$_ is required\n" unless defined $o{$_};
}
die "run-bench: --runs must be 1 or more\n" unless $o{runs} >= 1;

my $J = JSON::PP->new->utf8->canonical;
my $http = HTTP::Tiny->new(keep_alive => 1, timeout => 30);
my %auth = (Authorization => "Bearer $o{token}");
my $runs = "$o{url}/api/orgs/$o{org}/projects/$o{project}/runs";

sub api {
    my ($method, $url, $body) = @_;
    my $res = $http->request($method, $url, {
        headers => { %auth, $body ? ('Content-Type' => 'application/json') : () },
        $body ? (content => $J->encode($body)) : () });
    my $doc = eval { $J->decode($res->{content}) };
    return ($res->{status}, $doc);
}

my $FINAL = qr/\A(?:succeeded|failed|cancelled)\z/;

sub start_run {
    my $n = shift;
    my ($st, $run) = api(POST => $runs, { instructions => "Bench run $n: write a.txt." });
    die "run-bench: starting a run answered $st: " . $J->encode($run // {}) . "\n"
        unless $st == 201;
    return $run->{id};
}

sub wait_run {
    my ($id, $limit) = @_;
    my $deadline = time + $limit;
    while (time < $deadline) {
        my ($st, $run) = api(GET => "$runs/$id");
        die "run-bench: reading run $id answered $st\n" unless $st == 200;
        return $run->{status} if $run->{status} =~ $FINAL;
        sleep 0.02;
    }
    die "run-bench: run $id did not end within $limit s\n";
}

# Only this pass's lines of the error log are read.
my $log_from = -s $o{log} // 0;
my @ids;
if ($o{serial}) {
    for my $n (1 .. $o{runs}) {
        my $id = start_run($n);
        push @ids, $id;
        wait_run($id, 120);
    }
}
else {
    push @ids, start_run($_) for 1 .. $o{runs};
    # Runs are claimed oldest first: waiting on each in turn ends with the last.
    wait_run($_, 600) for @ids;
}

# The database's times, in seconds since the epoch (its clock: one machine).
my $list = join ',', map { "'$_'" } @ids;
my $sql = "SELECT id, status, extract(epoch FROM created_at), extract(epoch FROM started_at), "
        . "extract(epoch FROM finished_at) FROM runs WHERE id IN ($list)";
my @rows = `printf '%s\\n' "$sql" | $o{psql}`;
die "run-bench: psql failed\n" if $?;
my %db;
for (@rows) {
    chomp;
    my ($id, $status, $c, $s, $f) = split /\|/;
    next unless $id;
    $db{$id} = { status => $status, created => $c, started => $s, finished => $f };
}

# The supervisor's lines, once each run has ended (written before it is
# settled in the table, so they are there).
my %parts;
my $wait_log = time + 10;
while (1) {
    open(my $fh, '<', $o{log}) or die "run-bench: $o{log}: $!\n";
    seek($fh, $log_from, 0);
    while (my $line = <$fh>) {
        next unless $line =~ /SVC0790: run (\S+) timings \(us\): (.*)$/;
        my ($id, $rest) = ($1, $2);
        $parts{$id} = { map { split /=/, $_, 2 } split ' ', $rest };
    }
    close $fh;
    last if !grep({ !$parts{$_} } @ids) || time > $wait_log;
    sleep 0.2;
}

my @missing = grep { !$parts{$_} || !$db{$_} } @ids;
my @failed = grep { $db{$_} && $db{$_}{status} ne 'succeeded' } @ids;
die "run-bench: " . scalar(@failed) . " of the runs did not succeed (first: $failed[0], "
    . "$db{$failed[0]}{status})\n" if @failed;
die "run-bench: no SVC0790 line for " . scalar(@missing) . " run(s) (is LogLevel svc:debug "
    . "set?)\n" if @missing;

sub pct {
    my ($p, @v) = @_;
    @v = sort { $a <=> $b } @v;
    my $i = int($p / 100 * @v + 0.999999) - 1;
    $i = 0 if $i < 0;
    return $v[$i];
}

# Every figure in milliseconds.
my (%fig, @order);
sub add { my ($name, $ms) = @_; push @order, $name unless $fig{$name}; push @{ $fig{$name} }, $ms }
for my $id (@ids) {
    my ($d, $t) = ($db{$id}, $parts{$id});
    # finished_at is the start of the transaction that writes the outcome
    # (now()); the run is succeeded for its users once that commits.
    my $claim = ($d->{started} - $d->{created}) * 1000;
    my $total = $claim + ($t->{total} - $t->{cleanup}) / 1000;
    add('queued -> succeeded (committed)', $total);
    add('  less the model', $total - $t->{model} / 1000);
    add('claim (created_at -> started_at)', $claim);
    add('the run\'s thread (until its slot is free)', $t->{total} / 1000);
    add('  provider (db reads)', $t->{provider} / 1000);
    add('  workspace', $t->{workspace} / 1000);
    add('  clone', $t->{clone} / 1000) if $t->{clone};
    add('  factory (sandboxed)', $t->{factory} / 1000);
    add('    sandbox start (to its first line)', $t->{sandbox} / 1000);
    add('    git preparation (to the model request)', $t->{prepare} / 1000);
    add('    model call', $t->{model} / 1000);
    add('    files, git commit and bundle', $t->{commit} / 1000);
    add('    exit (result line -> reaped)', $t->{exit} / 1000);
    add('  bundle (read and checked)', $t->{bundle} / 1000);
    add('  outcome (db writes)', $t->{outcome} / 1000);
    add('  cleanup (after the outcome)', $t->{cleanup} / 1000);
    my $sum = 0;
    $sum += $t->{$_} for qw(provider workspace clone factory bundle outcome cleanup);
    add('  between the parts (log notes, threads)', ($t->{total} - $sum) / 1000);
}

printf "  %d runs%s\n", scalar(@ids), $o{label} ne '' ? ", $o{label}" : '';
printf "  %-54s %9s %9s\n", 'part (ms)', 'p50', 'p99';
printf "  %-54s %9.1f %9.1f\n", $_, pct(50, @{ $fig{$_} }), pct(99, @{ $fig{$_} }) for @order;
unless ($o{serial}) {
    my ($first) = sort { $a <=> $b } map { $db{$_}{created} } @ids;
    my ($last) = sort { $b <=> $a } map { $db{$_}{finished} } @ids;
    printf "  %.1f runs a minute (%d runs in %.1f s, first queued to last ended)\n",
        @ids * 60 / ($last - $first), scalar(@ids), $last - $first;
}
