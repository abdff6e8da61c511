# Runs last: after every other test file has written its entries, every
# audit chain in the database verifies, except those a test tampered with on
# purpose (SvcTest::audit_tamper records them), which must be broken.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my %tampered = map { $_ => 1 } tampered_orgs();
# One pass over every chain (svc_audit_check_all, sql/008_hardening.sql).
my @chains = psql('SELECT coalesce(c.org_id, \'\'), c.first_broken_id, c.entries '
                  . 'FROM svc_audit_check_all() c ORDER BY 1');
ok(@chains > 1, scalar(@chains) . ' audit chains after the run');
my ($ok, $entries) = (0, 0);
for my $c (@chains) {
    my ($org, $broken, $n) = @$c;
    my $name = $org eq '' ? 'the user-level chain' : "chain of $org";
    if ($tampered{$org}) {
        ok(defined $broken, "$name was tampered with, and verification says so");
        next;
    }
    ok(!defined $broken, "$name verifies ($n entries)") or diag("broken at entry $broken");
    $ok++;
    $entries += $n;
}
ok($ok > 0, "$ok chains with $entries entries verify");
# And the org chains say the same through the API's own statement.
my ($rc, $out, $err) = SvcTest::run([ $ENV{SVCCTL}, 'audit', 'verify' ]);
my @named = $err =~ /audit chain of (\S+) is broken/g;
is_deeply([ sort grep { $_ ne 'the' } @named ], [ sort grep { $_ ne '' } keys %tampered ],
          'svcctl audit verify names exactly the tampered chains');
is($rc >> 8, %tampered ? 1 : 0, '... and exits accordingly');

done_testing();
