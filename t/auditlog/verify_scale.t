# Verifying audit chains is linear (issue 14, item 2). The verify-all of
# svcctl ran the whole-chain walk once per audit row (the planner pushed
# its filter below the DISTINCT), each walk a scan of the whole table: 13,210
# rows took over 12 minutes. Here one org of its own gets 100,000 entries,
# written through the real chaining trigger in one statement; then both
# `svcctl audit verify` and the API's per-org check must give the right
# answer, before and after a superuser tampers with one entry. The elapsed
# times are printed for the record; nothing asserts on them.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use Time::HiRes qw(time);
use SvcTest;

my $N = 100_000;
my $owner = new_user('scale');
my $org = new_org($owner, prefix => 'scale');
my $oid = org_id_of($org);
my $tok = new_token($owner, scope => 'admin');

my $t0 = time;
psql("INSERT INTO audit_log (org_id, actor_kind, action, target_type, target_id, data) "
     . "SELECT '$oid', 'system', 'scale.entry', 'test', g::text, jsonb_build_object('n', g) "
     . "FROM generate_series(1, $N) g");
diag(sprintf 'inserting %d chained entries took %.1f s', $N, time - $t0);
my $count = psql_value("SELECT count(*) FROM audit_log WHERE org_id = '$oid'");
ok($count > $N, "the org's chain has $count entries");

sub verify_all {
    my $t = time;
    my ($rc, $out, $err) = SvcTest::run([ $ENV{SVCCTL}, 'audit', 'verify' ]);
    my $total = psql_value('SELECT count(*) FROM audit_log');
    diag(sprintf 'svcctl audit verify over %d entries (%d in this chain): %.2f s',
         $total, $count, time - $t);
    return ($rc >> 8, $out, $err);
}

sub verify_api {
    my $t = time;
    my ($st, $p) = api(GET => "/api/orgs/$org/audit/verify", token => $tok);
    diag(sprintf 'GET .../audit/verify of %d entries: %.2f s', $count, time - $t);
    return ($st, $p);
}

# --- intact ----------------------------------------------------------------------
{
    my ($rc, $out, $err) = verify_all();
    # Other tests tamper with their own chains on purpose; this one must not
    # be named, and the command must have finished.
    unlike($err, qr/\Q$oid\E/, 'svcctl audit verify: this chain verifies');
    ok($rc == 0 || $rc == 1, "... and the command finished (exit $rc)");
    like($out . $err, qr/every audit chain verifies|is broken at entry/, '... with a verdict');
    my ($st, $p) = verify_api();
    is($st, 200, 'the API check: 200');
    is_deeply($p, { ok => JSON::PP::true(), entries => $count }, '... the chain holds');
}

# --- tampered in the middle --------------------------------------------------------------
{
    my $victim = psql_value("SELECT id FROM audit_log WHERE org_id = '$oid' "
                            . "AND action = 'scale.entry' AND target_id = '" . int($N / 2) . "'");
    audit_tamper($victim);
    my ($rc, $out, $err) = verify_all();
    is($rc, 1, 'after tampering: svcctl audit verify exits 1');
    like($err, qr/\Q$oid\E is broken at entry $victim\b/, '... naming the chain and the entry');
    my ($st, $p) = verify_api();
    is_deeply($p, { ok => JSON::PP::false(), first_broken_id => $victim, entries => $count },
              'the API check names the same entry');
}

done_testing();
