#!/usr/bin/perl
# tools/check-logs.pl: the last word of `make test` on the logs of the run.
#
#   check-logs.pl [--logs t/logs] [--pg-log FILE] [--secrets FILE]...
#
# Fails (exit 1) when
#   * error_log shows a crash or a sanitizer report (anywhere, always):
#     "exit signal", "Segmentation fault", AH00052/AH00060, AddressSanitizer,
#     LeakSanitizer, "runtime error:" (UBSan), glibc heap-corruption aborts;
#   * error_log has an [<module>:error|crit|alert|emerg] line outside the byte
#     ranges listed in <logs>/expected-errors ("START END" per line, written
#     by SvcTest::expect_errors_end);
#   * the same in <logs>/nodes/*/error_log, the second httpd nodes of the
#     two-node tests (t/lib/SvcNode.pm; their ranges in expected-errors
#     beside each);
#   * an ASan/UBSan log file (asan.*, ubsan.*) exists in <logs>;
#   * the PostgreSQL log shows PANIC or a backend killed by a signal;
#   * any secret listed in <logs>/secrets.txt (or a --secrets file; one per
#     line) appears in any file under <logs> or in the PostgreSQL log.
# Secrets are never printed whole: the report names the file and line only.
use strict;
use warnings;

use File::Find qw(find);
use File::Spec::Functions qw(catfile);
use Getopt::Long qw(GetOptions);

my $logs = 't/logs';
my $pg_log;
my @secret_files;
GetOptions(
    'logs=s'    => \$logs,
    'pg-log=s'  => \$pg_log,
    'secrets=s' => \@secret_files,
) or die "usage: $0 [--logs DIR] [--pg-log FILE] [--secrets FILE]...\n";

my @fail;        # [category, message]
my $MAX_SHOWN = 20;

sub fail { push @fail, [@_] }

my $CRASH = qr{
    exit\ signal | Segmentation\ fault | \bAH00052\b | \bAH00060\b
  | AddressSanitizer | LeakSanitizer | UndefinedBehaviorSanitizer
  | runtime\ error: | stack\ smashing | \b(?:free|malloc|realloc)\(\):
  | corrupted\ (?:size|double-linked) | double\ free
  | \*\*\*\ [^*]+\ \*\*\*:\ terminated
}x;
my $ERROR_LINE = qr{^\[[^\]]*\]\s+\[[^\]:]+:(?:error|crit|alert|emerg)\]};

# --- error logs ------------------------------------------------------------
# <logs>/error_log is the test server's (node A's); <logs>/nodes/*/error_log
# are the second httpd nodes' of the two-node tests (t/lib/SvcNode.pm), each
# with its own expected-errors beside it.

# check_error_log($file, $expected_ranges_file, $required) → (lines, expected)
sub check_error_log {
    my ($file, $ranges_file, $required) = @_;
    my @ranges;
    if (open my $rf, '<', $ranges_file) {
        while (<$rf>) {
            next unless /^\s*(\d+)\s+(\d+)/;
            push @ranges, [$1, $2];
        }
    }
    my $expected = sub {
        my $off = shift;
        for my $r (@ranges) { return 1 if $off >= $r->[0] && $off < $r->[1] }
        return 0;
    };
    my ($n, $n_expected) = (0, 0);
    (my $name = $file) =~ s{^\Q$logs\E/}{};
    my $fh;
    if (!open $fh, '<', $file) {
        fail(missing => "$file: $!") if $required;
        return (0, 0, 0);
    }
    my $off = 0;
    while (my $line = <$fh>) {
        $n++;
        my $here = $off;
        $off += length $line;
        chomp $line;
        if ($line =~ $CRASH) {
            fail(crash => "$name:$n: $line");
        }
        elsif ($line =~ $ERROR_LINE) {
            if ($expected->($here)) { $n_expected++ }
            else { fail(error => "$name:$n: $line") }
        }
    }
    return ($n, $n_expected, scalar @ranges);
}

my ($lines, $errors_expected, $n_ranges) =
    check_error_log(catfile($logs, 'error_log'), catfile($logs, 'expected-errors'), 1);
my $node_logs = 0;
for my $f (sort glob(catfile($logs, 'nodes', '*', 'error_log'))) {
    (my $dir = $f) =~ s{/error_log\z}{};
    my ($l, $e, $r) = check_error_log($f, catfile($dir, 'expected-errors'), 0);
    $lines += $l;
    $errors_expected += $e;
    $n_ranges += $r;
    $node_logs++;
}

# --- sanitizer log files ----------------------------------------------------

my @all_files;
if (-d $logs) {
    find({ no_chdir => 1, wanted => sub { push @all_files, $_ if -f $_ } }, $logs);
}
for my $f (sort @all_files) {
    next unless (split m{/}, $f)[-1] =~ /^(?:asan|ubsan|lsan)\./;
    my $head = '';
    if (open my $fh, '<', $f) { local $/; $head = <$fh> // ''; }
    my ($summary) = $head =~ /^(SUMMARY: .*)$/m;
    my ($first) = $head =~ /^(==\d+==ERROR: .*|.*runtime error: .*)$/m;
    fail(sanitizer => "$f: " . ($first // $summary // 'sanitizer report'));
}

# --- PostgreSQL log ---------------------------------------------------------

my ($pg_errors, $pg_fatals) = (0, 0);
if (defined $pg_log) {
    if (open my $fh, '<', $pg_log) {
        my $n = 0;
        while (my $line = <$fh>) {
            $n++;
            chomp $line;
            if ($line =~ /\bPANIC:|was terminated by signal|terminated by exception/) {
                fail(postgres => "$pg_log:$n: $line");
            }
            $pg_errors++ if $line =~ /\bERROR:/;
            $pg_fatals++ if $line =~ /\bFATAL:/;
        }
    }
    else {
        fail(missing => "$pg_log: $!");
    }
}

# --- secrets ---------------------------------------------------------------

my %secret;
for my $sf (catfile($logs, 'secrets.txt'), @secret_files) {
    open my $fh, '<', $sf or next;
    while (<$fh>) {
        chomp;
        s/\r\z//;
        $secret{$_} = 1 if length >= 8;
    }
}
my @secrets = sort keys %secret;
my %not_scanned = map { $_ => 1 }
    catfile($logs, 'secrets.txt'), catfile($logs, 'expected-errors'), @secret_files;

my @scan = grep { !$not_scanned{$_} } @all_files;
push @scan, $pg_log if defined $pg_log && -f $pg_log && !grep { $_ eq $pg_log } @scan;

my $leaks = 0;
if (@secrets) {
    for my $f (sort @scan) {
        open my $fh, '<:raw', $f or next;
        my $n = 0;
        while (my $line = <$fh>) {
            $n++;
            for my $s (@secrets) {
                next if index($line, $s) < 0;
                $leaks++;
                fail(secret => sprintf "%s:%d: contains a recorded secret (%s...)",
                     $f, $n, substr($s, 0, 10));
            }
        }
    }
}

# --- report ------------------------------------------------------------------

printf "check-logs: error_log%s %d lines, %d expected error lines in %d range(s); "
     . "%d secrets checked in %d files",
     ($node_logs ? " (+ $node_logs other node(s))" : ''), $lines, $errors_expected,
     $n_ranges, scalar @secrets, scalar @scan;
printf "; PostgreSQL log: %d ERROR, %d FATAL (not failures by themselves)",
     $pg_errors, $pg_fatals if defined $pg_log;
print "\n";

if (@fail) {
    my %count;
    $count{$_->[0]}++ for @fail;
    my %shown;
    for my $f (@fail) {
        next if ++$shown{$f->[0]} > $MAX_SHOWN;
        my $msg = $f->[1];
        # The report itself ends up in CI logs: never echo a secret.
        for my $s (@secrets) {
            $msg =~ s/\Q$s\E/[secret]/g;
        }
        print "check-logs: FAIL [$f->[0]] $msg\n";
    }
    for my $cat (sort keys %count) {
        print "check-logs: ... and ", $count{$cat} - $MAX_SHOWN, " more [$cat]\n"
            if $count{$cat} > $MAX_SHOWN;
    }
    print "check-logs: FAILED (", join(', ', map { "$count{$_} $_" } sort keys %count), ")\n";
    exit 1;
}
print "check-logs: ok\n";
exit 0;
