# The audit log is append-only in the database itself, and hash-chained.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $u = new_user('auditor');
my $org = new_org($u);
my $tok = new_token($u, scope => 'admin', org => $org);
my $org_id = psql_value("SELECT id FROM orgs WHERE slug = '$org'");
my $n = psql_value("SELECT count(*) FROM audit_log WHERE org_id = '$org_id'");
ok($n >= 2, 'org creation and the bound token are in the org chain');

for my $sql ("UPDATE audit_log SET action = 'x.y' WHERE org_id = '$org_id'",
             "DELETE FROM audit_log WHERE org_id = '$org_id'",
             'TRUNCATE audit_log') {
    my $ok = eval { psql($sql); 1 };
    ok(!$ok, "refused: $sql");
    like($@, qr/append-only/, '... by the append-only trigger');
}
is(psql_value("SELECT count(*) FROM audit_log WHERE org_id = '$org_id'"), $n,
   'nothing changed');

# Each entry links to the previous one of its chain.
my @rows = psql("SELECT encode(prev_hash, 'hex'), encode(hash, 'hex') FROM audit_log "
                . "WHERE org_id = '$org_id' ORDER BY id");
ok(!defined $rows[0][0], 'the first entry of a chain has no predecessor');
for my $i (1 .. $#rows) {
    is($rows[$i][0], $rows[$i - 1][1], "entry $i links to entry " . ($i - 1));
}
ok(!defined psql_value("SELECT svc_audit_verify('$org_id')"), 'the org chain verifies');
ok(!defined psql_value('SELECT svc_audit_verify(NULL)'), 'the user-level chain verifies');

# A superuser who disables the triggers can change a row; the chain shows it.
my $victim = $rows[-1] ? psql_value("SELECT max(id) FROM audit_log WHERE org_id = '$org_id'") : undef;
# (audit_tamper also records the org, so t/zz_final/audit_chain.t expects it broken.)
audit_tamper($victim);
is(psql_value("SELECT svc_audit_verify('$org_id')"), $victim, 'verification names the tampered entry');

done_testing();
