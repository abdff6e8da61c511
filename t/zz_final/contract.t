# Runs last: what the contract check (t/lib/SvcContract.pm) saw over the
# run, from t/logs/contract.log. Every answer a test file received was
# checked there already (a violation failed that file); this file shows the
# check ran at all, that no violation went unreported (an answer checked
# where no test could fail, say), and which operations the run exercised:
# in a whole run (tools/test.sh with no file named, SVC_TEST_ALL=1) every
# documented operation must have answered at least once. A shard of a whole
# run (SVC_TEST_SHARD, tools/test-shards.sh) sees only its own files'
# answers: it writes what it did not see to t/logs/contract-shard.txt, and
# the shards' driver requires every operation (and some event) to have
# been seen by at least one shard.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;
use File::Spec::Functions qw(catfile);

my $log = catfile(t_logs(), 'contract.log');
ok(-s $log, 'the contract check logged the answers it checked') or BAIL_OUT('no contract.log');
open my $fh, '<', $log or die "$log: $!";
my (%seen, @violations, $answers, $events);
while (<$fh>) {
    chomp;
    if (/^VIOLATION (.*)/) { push @violations, $1; next }
    if (/^(OK|FAIL) event (\S+)/) { $events++; next }
    if (/^(OK|FAIL) (\S+) (\d+)$/) {
        $answers++;
        $seen{$2}{$3}++ if $1 eq 'OK';
    }
}
close $fh;
ok($answers, ($answers // 0) . ' answers checked');
# Events are read by the event-stream tests; a run of other files reads none.
ok($events, ($events // 0) . ' events checked') if $ENV{SVC_TEST_ALL};
is(scalar @violations, 0, 'no answer broke the document') or diag(join "\n", @violations);

# Which operations answered, and which only failed.
my (undef, $doc) = api(GET => '/api/openapi.json');
my (@never, @no_success);
for my $path (sort keys %{ $doc->{paths} }) {
    for my $m (sort keys %{ $doc->{paths}{$path} }) {
        my $op = $doc->{paths}{$path}{$m}{operationId};
        if (!$seen{$op}) {
            push @never, $op;
        }
        elsif (!grep { /^[23]/ } keys %{ $seen{$op} }) {
            push @no_success, $op;
        }
    }
}
if ($ENV{SVC_TEST_SHARD}) {
    my $out = catfile(t_logs(), 'contract-shard.txt');
    open my $sh, '>', $out or die "$out: $!";
    print $sh "events ", ($events // 0), "\n";
    print $sh "never $_\n" for @never;
    close $sh or die "$out: $!";
    note("shard $ENV{SVC_TEST_SHARD}: " . scalar(@never) . ' operations left to the other shards');
}
else {
    diag('operations no answer of this run exercised: ' . join(', ', @never)) if @never;
}
diag('operations that answered only errors: ' . join(', ', @no_success)) if @no_success;
if ($ENV{SVC_TEST_ALL}) {
    is(scalar @never, 0, 'a whole run exercises every documented operation');
}
done_testing();
