# Expired rate-limit windows are swept whatever their key (issue 14, item
# 6). A window used to be deleted only by the next hit of the same key, so
# the windows of one-off subjects (unauthenticated clients with many
# addresses; IPv6 has plenty) stayed forever and the table grew without
# bound. Here waves of clients with new addresses call a rate-limited route
# (sign-in, limited per client address) on a virtual host whose windows
# last one second; between waves the windows expire. The rows of the test's
# addresses must stay bounded by about one wave, not grow by one wave each
# time.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use LWP::UserAgent ();
use Time::HiRes qw(sleep);
use SvcTest;

Apache::TestRequest::module('rate_sweep');
my $base = 'http://' . Apache::TestRequest::hostport();
Apache::TestRequest::module('default');

my $WAVES = 6;
my $PER_WAVE = 150;
my $tag = sprintf '2001:db8:%x', int(rand(0xffff));
my $ua = LWP::UserAgent->new(keep_alive => 4, timeout => 30, max_redirect => 0);

sub rows {
    return psql_value("SELECT count(*) FROM rate_limits WHERE key LIKE 'signin:$tag:%'");
}

my ($first_status, $limit_header, $opened) = (undef, undef, 0);
my @after;
for my $wave (1 .. $WAVES) {
    for my $n (1 .. $PER_WAVE) {
        my $res = $ua->get("$base/auth/callback?state=x",
                           'X-Forwarded-For' => sprintf('%s:%x::%x', $tag, $wave, $n));
        $first_status //= $res->code;
        $limit_header //= $res->header('RateLimit-Limit');
        # The first hit of a window leaves all but one of the budget.
        $opened++ if ($res->header('RateLimit-Remaining') // '') eq '999';
    }
    push @after, rows();
    # The windows of this wave end within a second; wait them out (this is
    # the stream's pause, not a measurement).
    sleep 1.2;
}
is($first_status, 400, 'each client got an answer (400 invalid_state)');
is($limit_header, 1000, '... counted in the sign-in class of this host');
diag("rows of the test's clients after each wave: @after");
is($opened, $WAVES * $PER_WAVE, 'every client opened a window of its own');
# Without the sweep every wave adds its $PER_WAVE rows; with it, whoever
# opens a window deletes expired ones, so at most the windows of the wave
# still open (and a few stragglers) remain.
ok($after[-1] <= 2 * $PER_WAVE,
   "after $WAVES waves of new clients the table holds $after[-1] rows, not "
   . $WAVES * $PER_WAVE);
# And one more client after the last windows expired sweeps them.
$ua->get("$base/auth/callback?state=x", 'X-Forwarded-For' => "$tag:ffff::1");
ok(rows() <= $PER_WAVE, 'a client after the stream sweeps what is left: ' . rows());

done_testing();
