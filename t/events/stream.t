# The organization's live event stream (GET /api/orgs/:orgSlug/events):
# replay after Last-Event-ID, live delivery as events commit, order, access
# (401, cross-org 404, a revoked token's stream closed), and that streams
# hold no worker thread while they wait (more open streams than the server
# has threads, and the API still answers).
#
# Events are written straight into the events table here, as any area's
# transaction writes them (svc_event_emit): the stream neither knows nor
# cares who wrote them.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use Time::HiRes qw(time sleep);
use SvcTest;

my $owner = new_user('sse');
my $org = new_org($owner, prefix => 'sse');
my $org_id = org_id_of($org);
my $pat = new_token($owner, scope => 'read');
my $path = "/api/orgs/$org/events";

# emit($kind, \%data) → the new event's id; committed when it returns.
sub emit {
    my ($kind, $data, $run) = @_;
    return emit_in($org_id, $kind, $data, $run);
}

# emit_in($org_id, $kind, \%data) → the same in another org.
sub emit_in {
    my ($oid, $kind, $data, $run) = @_;
    my $json = json()->encode($data // {});
    return psql_value(sprintf(
        "INSERT INTO events (org_id, run_id, kind, data) VALUES (%s, %s, %s, %s::jsonb) "
        . "RETURNING id", SvcTest::sql_quote($oid),
        defined $run ? SvcTest::sql_quote($run) : 'NULL',
        SvcTest::sql_quote($kind), SvcTest::sql_quote($json)));
}

# --- access -------------------------------------------------------------------
{
    my $s = sse_open($path);
    is($s->{status}, 401, 'no credentials: 401');
    my $other = new_org(new_user('sseother'), prefix => 'sseother');
    $s = sse_open("/api/orgs/$other/events", token => $pat);
    is($s->{status}, 404, "another org's stream: 404");
    is($s->{problem} && $s->{problem}{code}, 'not_found', '... not_found');
    $s = sse_open($path, token => $pat, last_event_id => 'abc');
    is($s->{status}, 400, 'a Last-Event-ID that is not an id: 400');
    $s = sse_open("$path?last_event_id=-1", token => $pat);
    is($s->{status}, 400, '... and a negative last_event_id');
}

# --- live, in order, from now ----------------------------------------------------
my $before = emit('test.before', { n => 0 });
{
    my $s = sse_open($path, token => $pat);
    is($s->{status}, 200, 'the stream opens: 200');
    like($s->{headers}{'content-type'} // '', qr{^text/event-stream}, '... text/event-stream');
    is($s->{headers}{'cache-control'}, 'no-store', '... not cached');
    ok(!defined sse_next($s, 1), 'without Last-Event-ID nothing older is replayed');
    is($s->{retry}, 2000, '... and the client is told how soon to reconnect');

    my @ids = map { emit('test.live', { n => $_ }) } 1 .. 20;
    my @got = sse_drain($s, 3);
    is_deeply([ map { $_->{id} } @got ], \@ids, '20 events arrive live, each once, in order');
    is_deeply([ map { $_->{event} } @got ], [ ('test.live') x 20 ], '... with their kind');
    is_deeply([ map { $_->{data}{n} } @got ], [ 1 .. 20 ], '... and their data');
    sse_close($s);
}

# --- replay across a reconnect ----------------------------------------------------
{
    my $s = sse_open($path, token => $pat);
    my @first = map { emit('test.replay', { n => $_ }) } 1 .. 5;
    my @got = sse_drain($s, 2);
    is(scalar(@got), 5, 'five events before the client drops');
    sse_close($s);
    my @missed = map { emit('test.replay', { n => $_ }) } 6 .. 12;
    $s = sse_open($path, token => $pat, last_event_id => $got[-1]{id});
    my @more = map { emit('test.replay', { n => $_ }) } 13 .. 15;
    my @after = sse_drain($s, 2);
    is_deeply([ map { $_->{data}{n} } @after ], [ 6 .. 15 ],
              'reconnecting with Last-Event-ID: what was missed, then the new ones, '
              . 'nothing twice, nothing lost');
    sse_close($s);

    # A browser's first connect cannot send the header.
    $s = sse_open("$path?last_event_id=$first[1]", token => $pat);
    my @q = sse_drain($s, 2);
    is($q[0] && $q[0]{data}{n}, 3, '?last_event_id= resumes too');
    sse_close($s);
}

# --- ids are the org's own (issue 17) ----------------------------------------------
# Another org's activity between two of this org's events shows nowhere on
# this org's stream: not as events, and not as a gap in the ids.
{
    my $other = new_org(new_user('sse-ids'), prefix => 'sse-ids');
    my $other_id = org_id_of($other);
    my $s = sse_open($path, token => $pat);
    my $a1 = emit('test.ids', { n => 1 });
    my @b = map { emit_in($other_id, 'test.ids', { n => $_ }) } 1 .. 7;
    my $a2 = emit('test.ids', { n => 2 });
    is($a2, $a1 + 1, "seven events of another org in between: no gap in this org's ids");
    is_deeply(\@b, [ 1 .. 7 ], "... and the other org's ids are its own, from 1");
    # A rolled-back event gives its id back.
    psql("BEGIN; INSERT INTO events (org_id, kind) VALUES ('$org_id', 'test.ids'); ROLLBACK;");
    my $a3 = emit('test.ids', { n => 3 });
    is($a3, $a2 + 1, '... nor after a rolled-back event');
    my @got = sse_drain($s, 2);
    is_deeply([ map { $_->{id} } @got ], [ $a1, $a2, $a3 ],
              '... on the stream: consecutive ids, nothing of the other org');
    sse_close($s);
    $s = sse_open($path, token => $pat, last_event_id => $a1);
    @got = sse_drain($s, 2);
    is_deeply([ map { $_->{id} } @got ], [ $a2, $a3 ], '... and Last-Event-ID resumes after them');
    sse_close($s);
}

# --- streams hold no worker ---------------------------------------------------------
# The test server has 4 children of 25 threads: 150 open streams would
# pin every worker if they each held one. (Two users: one may hold 100.)
{
    my $second = new_user('sse2');
    svcctl('org', 'add-member', $org, $second, '--role', 'viewer');
    my $pat2 = new_token($second, scope => 'read');
    my @streams = map { sse_open($path, token => $_ % 2 ? $pat : $pat2) } 1 .. 150;
    is(scalar(grep { $_->{status} == 200 } @streams), 150, '150 streams are open at once');
    my ($st) = api(GET => '/api/me', token => $pat);
    is($st, 200, '... and the API still answers');
    my $id = emit('test.fanout', { n => 1 });
    my $t0 = time;
    my $all = 0;
    for my $s (@streams) {
        my $e = sse_next($s, 5);
        $all++ if $e && $e->{id} == $id;
    }
    is($all, 150, 'one event reaches every one of them');
    diag(sprintf('fan-out to 150 streams took %.2f s', time - $t0));
    sse_close($_) for @streams;
}

# --- heartbeats spread out ---------------------------------------------------------
# Streams opened together do not beat together: the first heartbeat comes
# after a random 1 to 15 s, so that a node whose clients all reconnected
# at once (after a restart) is not woken for all of them in one burst
# every 15 s. Ten streams opened within a moment: every first heartbeat
# within its window (with room for the MPM's timers on a loaded machine),
# and not all within one second (with the same first interval for all,
# they came within a tenth of a second of each other).
{
    my @s;
    for (1 .. 10) {
        my $one = sse_open($path, token => $pat);
        $one->{opened} = time;
        push @s, $one;
    }
    is(scalar(grep { $_->{status} == 200 } @s), 10, 'ten streams opened together');
    my $t0 = time;
    while (time - $t0 < 20 && grep { !@{ $_->{comment_times} // [] } } @s) {
        sse_next($_, 0.01) for @s;
    }
    my @after = map { defined $_->{comment_times} ? $_->{comment_times}[0] - $_->{opened} : undef } @s;
    is(scalar(grep { defined } @after), 10, 'each had its first heartbeat within 20 s');
    my @ok = grep { defined && $_ >= 0.5 && $_ <= 17.5 } @after;
    is(scalar @ok, 10, '... each 1 to 15 s after it opened')
        or diag(join ', ', map { defined ? sprintf('%.2f s', $_) : 'none' } @after);
    my @at = sort { $a <=> $b } map { $_->{comment_times}[0] } grep { $_->{comment_times} } @s;
    ok(@at == 10 && $at[-1] - $at[0] > 1,
       sprintf('... not together: %.2f s between the first and the last', @at ? $at[-1] - $at[0] : 0));
    sse_close($_) for @s;
}

# --- heartbeats and revocation ----------------------------------------------------
# A stream lets its request go a second after it starts and checks access
# every 30 s with the credential it kept: a revoked token or session ends
# it, a live token or session (a cookie, no Authorization) keeps it.
{
    my $doomed = new_token($owner, scope => 'read', name => 'doomed');
    my $s = sse_open($path, token => $doomed);
    is($s->{status}, 200, 'a stream on a token about to be revoked');
    my $cookie = new_session($owner);
    my $ended = new_session($owner);
    my $live_cookie = sse_open($path, cookie => $cookie);
    my $ended_cookie = sse_open($path, cookie => $ended);
    my $live_token = sse_open($path, token => $pat);
    is($_->{status}, 200, 'a stream on a live credential, and one on a session about to end')
        for $live_cookie, $ended_cookie, $live_token;
    my $tid = psql_value("SELECT id FROM api_tokens WHERE name = 'doomed' AND user_id = "
                         . SvcTest::sql_quote(SvcTest::user_id_of($owner)));
    my ($st) = api(DELETE => "/api/me/tokens/$tid", token => new_token($owner));
    is($st, 204, 'the token is revoked');
    my ($sst, $sessions) = api(GET => '/api/me/sessions', cookie => $ended);
    my ($sid) = map { $_->{id} } grep { $_->{current} } @{ $sessions->{data} // [] };
    ($sst) = api(DELETE => "/api/me/sessions/$sid", token => new_token($owner));
    is($sst, 204, 'the session is ended');
    my $t0 = time;
    1 while (!$s->{closed} || !$ended_cookie->{closed}) && time - $t0 < 70
        && (sse_next($s, 1) || sse_next($ended_cookie, 1) || 1);
    ok($s->{closed}, 'the server closed the stream');
    ok($ended_cookie->{closed}, "... and the ended session's");
    my $took = time - $t0;
    ok($took <= 60, sprintf('... within 60 s of the revocation (%.0f s)', $took));
    ok(scalar(@{ $s->{comments} }) >= 1, '... and heartbeats came meanwhile');
    # Every one of them has had its access checked by now.
    my $id = emit('test.after_recheck', { n => 1 });
    for ([$live_cookie, 'a session cookie'], [$live_token, 'a token']) {
        my ($l, $how) = @$_;
        my $e;
        do { $e = sse_next($l, 10) } while $e && $e->{id} < $id;
        is($e && $e->{id}, $id, "a stream on $how lives past its access check, and delivers");
        ok(!$l->{closed}, '... open');
        sse_close($l);
    }
}

# --- the database away: streams stay, and catch up -------------------------------
{
    my $s = sse_open($path, token => $pat);
    my $mark = expect_errors_begin();
    pg_restart('fast');
    wait_for(sub { (api(GET => '/api/me', token => $pat))[0] == 200 }, timeout => 15);
    my $id = emit('test.after_restart', { n => 1 });
    my $e = sse_next($s, 20);
    is($e && $e->{id}, $id, 'after a database restart the stream still delivers');
    expect_errors_end($mark);
    sse_close($s);
}

done_testing();
