#!/usr/bin/perl
# Embeds the numbered migrations of sql/ into C, so svcctl carries them and
# the module knows, from the same files, which schema version it needs.
use strict;
use warnings;

my @files = sort @ARGV;
print "/* Generated from sql/ by tools/embed-sql.pl; do not edit. */\n";
print "#include \"svc_migrate.h\"\n\n";
print "const svc_migration_t svc_migrations[] = {\n";
my $last = 0;
for my $f (@files) {
    my ($v, $name) = $f =~ m{(?:^|/)(\d+)_([a-z0-9_]+)\.sql$}
        or die "migration file name must be NNN_name.sql: $f\n";
    $v += 0;
    # Increasing, and gaps allowed: branches take numbers in the order they
    # were started and may be merged out of order (svc_migrate.c applies
    # every one that is missing, not just those above the highest).
    die "migrations must have increasing numbers: $f\n" unless $v > $last;
    $last = $v;
    open my $fh, '<', $f or die "$f: $!\n";
    local $/;
    my $sql = <$fh>;
    close $fh;
    my $c = join "\n", map {
        my $l = $_;
        $l =~ s/\\/\\\\/g;
        $l =~ s/"/\\"/g;
        $l =~ s/\t/\\t/g;
        "    \"$l\\n\""
    } split /\n/, $sql;
    print "    { $v, \"$name\",\n$c },\n";
}
print "    { 0, NULL, NULL }\n};\n\n";
print "const int svc_schema_version = $last;\n";
