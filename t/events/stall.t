# Streams that never read (issue 17, the high defect): 300 event streams
# opened with a 2 KiB receive buffer and never read, then about 6 MB of
# events in their org; another org's owner keeps being answered at once,
# and the streams that took nothing are dropped, their memory with them.
# Before the fix every write to such a stream blocked a worker until httpd's
# Timeout, and with a few hundred of them no worker was left for anyone.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use Time::HiRes qw(time sleep);
use SvcTest;
use SseFlood;

my $port = Apache::Test::vars('port');

# The attacker's org, and three users to hold 300 streams (100 each).
my $attacker = new_user('stall');
my $org = new_org($attacker, prefix => 'stall');
my $org_id = org_id_of($org);
my ($tokens, $principals) = stream_viewers($org, 3, 'stall');
my @tokens = @$tokens;

sub places_held { return stream_places_held($principals) }

# The victim: another org's owner.
my $victim = new_user('victim');
new_org($victim, prefix => 'victim');
my $victim_pat = new_token($victim, scope => 'read');

# 300 streams woken at once keep the workers busy: httpd's parent may say
# so (AH10159, AH00484) on its own schedule while they are open.
my $mark = expect_errors_begin();
my $f = SseFlood->new(port => $port, path => "/api/orgs/$org/events", tokens => \@tokens);
is($f->open(300, wait => 30, rcvbuf => 2048, read => 0), 300,
   '300 streams that will never read are open');

# About 6 MB of events: six transactions of 1,000 events of 1 KB, as six
# runs whose model named 1,000 files would log.
my $line = 'x' x 1000;
my $t0 = time;
for my $run (1 .. 6) {
    psql(sprintf("INSERT INTO events (org_id, kind, data) SELECT %s, 'run.log', "
                 . "jsonb_build_object('n', g, 'line', %s) FROM generate_series(1, 1000) g",
                 SvcTest::sql_quote($org_id), SvcTest::sql_quote($line)));
}

# Meanwhile and after: the other tenant is answered, every time. (Not a
# timing assertion: a request that waits 10 s for a worker has failed.)
my ($asked, $answered) = (0, 0);
while (time - $t0 < 25) {
    $asked++;
    my $ua = LWP::UserAgent->new(timeout => 10);
    my $r = $ua->get("http://127.0.0.1:$port/api/me", Authorization => "Bearer $victim_pat");
    $answered++ if $r->code == 200;
    sleep 0.5;
}
is($answered, $asked, "another org's owner was answered $asked times out of $asked");

# A stream that took nothing for a heartbeat interval (15 s) is dropped, so
# within two of them the server has closed every one: none of the server's
# sockets is still established (its kernel may still hold the bytes it
# could not send, in FIN-WAIT-1, until the client reads them or gives up).
sub established {
    my $out = `ss -Htn state established '( sport = :$port )' 2>/dev/null`;
    return scalar grep { /\S/ } split /\n/, $out;
}
ok(wait_for(sub { established() == 0 }, timeout => 50, interval => 1),
   'every stream that did not read was dropped by the server')
    or diag(established() . ' still established');
# Given back by each child as its streams end, one statement each: on a
# loaded machine that can take more than 10 s (a full run did), still well
# inside the 90 s after which a place not given back would stop counting.
ok(wait_for(sub { places_held() == 0 }, timeout => 45),
   '... and their places were given back');
$f->close_all;
expect_errors_end($mark);

# A reader that keeps up is not dropped, however much there is.
{
    my $g = SseFlood->new(port => $port, path => "/api/orgs/$org/events", tokens => [$tokens[0]]);
    is($g->open(1, wait => 10), 1, 'a stream that reads');
    my $last = psql_value(sprintf(
        "WITH ins AS (INSERT INTO events (org_id, kind, data) SELECT %s, 'run.log', "
        . "jsonb_build_object('n', g, 'line', %s) FROM generate_series(1, 5000) g "
        . "RETURNING id) SELECT max(id) FROM ins", SvcTest::sql_quote($org_id),
        SvcTest::sql_quote($line)));
    is($g->wait_for_id($last, wait => 60), 1, '... receives 5 MB of events to the last (past the ring: from the table)');
    $g->close_all;
}

done_testing();
