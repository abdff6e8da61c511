#!/usr/bin/perl
# tools/check-layers.pl: the house rule of docs/architecture.md, checked on
# every build: no file calls or includes a file that calls or includes it
# back, directly or through others.
#
#   perl tools/check-layers.pl --build build mod_svc
#
# A "file" is a module: foo.c and foo.h together. Its edges are
#   - the headers its .c and .h include ("..." only; system headers aside),
#   - the modules defining the symbols its object file uses (from nm),
# and the graph of modules must have no cycle. The httpd glue files
# (mod_svc.c, mod_svc_request.c) share the module record, and so call each
# other: that use is exempt, as the module record must be defined once.
# Also checked: base/ includes nothing above it, the kernel includes no
# area, and an area includes another area's public header only.
use strict;
use warnings;
use File::Find;
use File::Basename qw(basename dirname);
use Getopt::Long;

my $build = 'build';
GetOptions('build=s' => \$build) or die "usage: $0 [--build DIR] SRC_DIR\n";
my $src = shift // 'mod_svc';

my (%files, %module_of_header, %layer);
find(sub {
    return unless /\.[ch]$/;
    my $path = $File::Find::name;
    my $mod = $path =~ s/\.[ch]$//r;
    $files{$path} = $mod;
    $module_of_header{basename($path)} = $mod if /\.h$/;
}, $src);

sub layer_of {
    my $m = shift;
    return 'base' if $m =~ m{/base/};
    return 'kernel' if $m =~ m{/kernel/};
    return "area:$1" if $m =~ m{/areas/([^/]+)/};
    return 'registry' if $m =~ m{/areas/[^/]+$};
    return 'top';
}

my (%edges, @problems);
sub edge {
    my ($from, $to, $why) = @_;
    return if $from eq $to;
    $edges{$from}{$to} //= $why;
}

# Includes.
for my $path (sort keys %files) {
    my $mod = $files{$path};
    open my $fh, '<', $path or die "$path: $!";
    while (<$fh>) {
        next unless /^\s*#\s*include\s+"([^"]+)"/;
        my $h = basename($1);
        my $to = $module_of_header{$h} or next;   # generated or foreign
        edge($mod, $to, "includes $h");
        my ($lf, $lt) = (layer_of($mod), layer_of($to));
        if ($lf eq 'base' && $lt ne 'base') {
            push @problems, "$path includes $h: base/ may include only base/";
        }
        if ($lf eq 'kernel' && $lt !~ /^(base|kernel)$/) {
            push @problems, "$path includes $h: the kernel may not include an area";
        }
        if ($lf =~ /^area:(.+)/ && $lt =~ /^area:(.+)/ && $1 ne (split /:/, $lf)[1]) {
            my $other = (split /:/, $lt)[1];
            push @problems, "$path includes $h: another area's private header"
                unless $h eq "svc_$other.h";
        }
    }
    close $fh;
}

# Calls, from the object files.
my (%defined_in, %uses);
my @objs;
find(sub { push @objs, $File::Find::name if /\.o$/ && $File::Find::dir !~ m{/unit\b} },
     $build);
for my $o (@objs) {
    my $rel = $o =~ s{^\Q$build\E/}{}r;
    my $mod;
    if ($rel =~ m{^glue/(.+)\.o$}) { $mod = "$src/$1" }
    elsif ($rel eq 'svcctl.o') { $mod = "$src/svcctl" }
    elsif ($rel =~ m{^(.+)\.o$}) { $mod = "$src/$1" }
    next unless exists $files{"$mod.c"};
    for (`nm $o`) {
        my @f = split;
        if (@f == 3 && $f[1] =~ /^[TDBR]$/) { $defined_in{$f[2]} = $mod }
        elsif (@f == 2 && $f[0] eq 'U') { push @{ $uses{$mod} }, $f[1] }
    }
}
for my $mod (keys %uses) {
    for my $sym (@{ $uses{$mod} }) {
        my $to = $defined_in{$sym} or next;
        edge($mod, $to, "calls $sym");
    }
}

# One way to write (docs/architecture.md, "How a handler writes"): a
# transaction is begun, committed and rolled back in base/svc_db.c only, by
# svc_db_tx; request handlers reach it through the kernel's svc_write, and
# only what answers no request calls svc_db_tx itself.
my %tx_owner = map { ("$src/$_" => 1) } qw(base/svc_db);
my %tx_callers = map { ("$src/$_" => 1) } (
    'kernel/svc_write',         # svc_write: a handler's change and its answer
    'base/svc_migrate',         # one migration per transaction
    'svcctl',                   # the operator's commands
    'areas/runs/svc_run_store', # the run supervisor's status changes and logs
    'areas/deploy/svc_planner', # a plan written, in the run supervisor's process
    'areas/billing/svc_budget_sweep', # the run supervisors' budget sweep
);
for my $mod (sort keys %uses) {
    for my $sym (@{ $uses{$mod} }) {
        if ($sym =~ /^svc_db_(begin|commit|rollback)$/ && !$tx_owner{$mod}) {
            push @problems, "$mod calls $sym: transactions are svc_db_tx's alone "
                . "(a handler writes through svc_write)";
        }
        if ($sym eq 'svc_db_tx' && !$tx_owner{$mod} && !$tx_callers{$mod}) {
            push @problems, "$mod calls svc_db_tx: a handler writes through svc_write "
                . "(kernel/svc_write.h); svc_db_tx is for what answers no request";
        }
        if ($sym =~ /^PQ(exec|execParams|sendQuery)$/ && $mod !~ m{/base/svc_db$}) {
            push @problems, "$mod calls $sym: SQL goes through base/svc_db.c";
        }
    }
}
# ... and no SQL text anywhere else ends a transaction by hand.
for my $path (sort grep { /\.c$/ } keys %files) {
    next if $tx_owner{ $files{$path} } || $path =~ m{/factory/};
    open my $fh, '<', $path or die "$path: $!";
    my $text = do { local $/; <$fh> };
    close $fh;
    $text =~ s{/\*.*?\*/}{ $& =~ tr/\n//cdr }gse;    # comments, keeping the lines
    while ($text =~ /"\s*(BEGIN|COMMIT|ROLLBACK|ABORT|START\s+TRANSACTION|SAVEPOINT
                          |RELEASE\s+SAVEPOINT|END(?=\s*(?:"|;|TRANSACTION\b|WORK\b)))\b/gx) {
        my $line = 1 + (substr($text, 0, $-[0]) =~ tr/\n//);
        push @problems, "$path:$line sends $1 by hand: a transaction is svc_write's "
            . "(svc_db_tx's outside requests)";
    }
}

# The accepted exception: the glue files may use the module record
# (svc_module), which httpd needs defined once, next to the hooks.
for my $from (keys %edges) {
    for my $to (keys %{ $edges{$from} }) {
        delete $edges{$from}{$to} if $edges{$from}{$to} eq 'calls svc_module';
    }
}

# Cycles: Tarjan's strongly connected components.
my ($index, @stack, %on, %idx, %low, @sccs) = (0);
sub visit {
    my $v = shift;
    $idx{$v} = $low{$v} = $index++;
    push @stack, $v; $on{$v} = 1;
    for my $w (sort keys %{ $edges{$v} // {} }) {
        if (!defined $idx{$w}) { visit($w); $low{$v} = $low{$w} if $low{$w} < $low{$v} }
        elsif ($on{$w}) { $low{$v} = $idx{$w} if $idx{$w} < $low{$v} }
    }
    if ($low{$v} == $idx{$v}) {
        my @c;
        while (1) { my $w = pop @stack; delete $on{$w}; push @c, $w; last if $w eq $v }
        push @sccs, [sort @c] if @c > 1;
    }
}
my %all = map { $_ => 1 } values %files;
visit($_) for grep { !defined $idx{$_} } sort keys %all;

for my $c (@sccs) {
    my %in = map { $_ => 1 } @$c;
    push @problems, "loop between " . scalar(@$c) . " files:";
    for my $a (@$c) {
        for my $b (sort keys %{ $edges{$a} }) {
            push @problems, "  $a -> $b ($edges{$a}{$b})" if $in{$b};
        }
    }
}

if (@problems) {
    print STDERR "check-layers: $_\n" for @problems;
    exit 1;
}
printf "check-layers: %d files, no loops, layers respected\n", scalar keys %all;
exit 0;
