# tools/check-layers.pl, which every build runs, fails on a transaction
# ended by hand (issue 18): a BEGIN, COMMIT or ROLLBACK sent outside
# base/svc_db.c, a call of svc_db_begin/commit/rollback outside it, or a
# request handler's file calling svc_db_tx instead of svc_write. Each is
# tried on a copy of the tree, beside the tree as it is (which passes).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use File::Basename qw(dirname);
use File::Copy qw(copy);
use File::Find;
use File::Path qw(make_path);
use File::Temp qw(tempdir);
use SvcTest;

my $top = $ENV{SVC_TOP} // die "SVC_TOP is not set\n";
my $tmp = tempdir(CLEANUP => 1);

# The sources, and the object files the check reads with nm.
sub copy_tree {
    my ($from, $to, $want) = @_;
    find({ no_chdir => 1, wanted => sub {
        return unless -f $_ && $want->($_);
        (my $rel = $_) =~ s{^\Q$from\E/}{};
        make_path(dirname("$to/$rel"));
        copy($_, "$to/$rel") or die "copy $_: $!";
    } }, $from);
}
copy_tree("$top/mod_svc", "$tmp/mod_svc", sub { /\.[ch]$/ });
copy_tree("$top/build", "$tmp/build", sub { /\.o$/ && !m{/unit/} });

sub check {
    my ($rc, $out, $err) = SvcTest::run(['perl', "$top/tools/check-layers.pl", '--build',
                                         "$tmp/build", "$tmp/mod_svc"]);
    return ($rc >> 8, "$out$err");
}

sub append {
    my ($file, $text) = @_;
    open my $fh, '>>', "$tmp/mod_svc/$file" or die "$file: $!";
    print $fh $text;
    close $fh;
}

my ($rc, $out) = check();
is($rc, 0, 'the tree as it is passes') or diag($out);

# A COMMIT written into a handler's file.
my $orgs = "$tmp/mod_svc/areas/tenancy/svc_orgs.c";
copy($orgs, "$orgs.orig") or die;
append('areas/tenancy/svc_orgs.c',
       "static const char *const by_hand = \"COMMIT\";\n");
($rc, $out) = check();
isnt($rc, 0, 'a COMMIT sent by hand fails the build');
like($out, qr{svc_orgs\.c:\d+ sends COMMIT by hand}, '... naming the file and line');
copy("$orgs.orig", $orgs) or die;
append('areas/tenancy/svc_orgs.c', "static const char *const by_hand = \"ROLLBACK\";\n");
($rc, $out) = check();
like($out, qr{sends ROLLBACK by hand}, 'a ROLLBACK too');
copy("$orgs.orig", $orgs) or die;
append('areas/tenancy/svc_orgs.c', "/* a comment may say COMMIT */\n");
($rc) = check();
is($rc, 0, 'a comment that says COMMIT is no transaction');
copy("$orgs.orig", $orgs) or die;

# A handler's file that calls the low-level steps, or svc_db_tx.
my $src = "int svc_db_commit(void *db);\n"
        . "int svc_db_tx(void *db, void *p, void *fn, void *baton);\n"
        . "int svc_hand_write(void *db);\n"
        . "int svc_hand_write(void *db) { return svc_db_commit(db) + svc_db_tx(db, 0, 0, 0); }\n";
append('areas/tenancy/svc_hand.c', $src);
make_path("$tmp/build/areas/tenancy");
my ($crc, undef, $cerr) = SvcTest::run([$ENV{CC} // 'cc', '-c',
                                         "$tmp/mod_svc/areas/tenancy/svc_hand.c",
                                         '-o', "$tmp/build/areas/tenancy/svc_hand.o"]);
is($crc, 0, 'a file that ends a transaction by hand compiles') or diag($cerr);
($rc, $out) = check();
isnt($rc, 0, '... and fails the check');
like($out, qr{svc_hand calls svc_db_commit}, '... for calling svc_db_commit');
like($out, qr{svc_hand calls svc_db_tx}, '... and for calling svc_db_tx in an area');

done_testing();
