#!/usr/bin/perl
# tools/check-logtags.pl: every log call of the module has a tag of its own,
# as httpd's APLOGNO numbers do (docs/operations.md lists them).
#
#   perl tools/check-logtags.pl mod_svc
#
# Fails (exit 1, one line per finding) when
#  - a tag "SVCnnnn: " opens the message of two call sites (a string literal
#    that starts with it, anywhere in the tree);
#  - a log call's message does not start with a tag: httpd's ap_log_*error
#    (trace levels excepted, as httpd excepts them; a "%s" format passes on a
#    message tagged where it was made), and the run supervisor's say() and
#    ->log() (areas/runs, kernel/svc_hub.c).
# Comments are not read, so a comment may name a tag it explains.
use strict;
use warnings;
use File::Find;

my @roots = @ARGV ? @ARGV : ('mod_svc');
my (@files, %seen, @fail);
-d $_ or die "check-logtags: $_ is not a folder\n" for @roots;
find(sub { push @files, $File::Find::name if /\.c$/ }, @roots);

# The file's text with comments blanked (newlines kept, so lines still count)
# and a list of its string literals: [offset, contents].
sub scan {
    my ($text) = @_;
    my ($out, @strings) = ('');
    my $i = 0;
    my $n = length $text;
    while ($i < $n) {
        my $c = substr($text, $i, 1);
        my $two = substr($text, $i, 2);
        if ($two eq '/*') {
            my $end = index($text, '*/', $i + 2);
            $end = $n - 2 if $end < 0;
            (my $blank = substr($text, $i, $end + 2 - $i)) =~ s/[^\n]/ /g;
            $out .= $blank;
            $i = $end + 2;
        }
        elsif ($two eq '//') {
            my $end = index($text, "\n", $i);
            $end = $n if $end < 0;
            $out .= ' ' x ($end - $i);
            $i = $end;
        }
        elsif ($c eq '"' || $c eq "'") {
            my $j = $i + 1;
            while ($j < $n && substr($text, $j, 1) ne $c) {
                $j += substr($text, $j, 1) eq '\\' ? 2 : 1;
            }
            push @strings, [ length $out, substr($text, $i + 1, $j - $i - 1) ] if $c eq '"';
            $out .= substr($text, $i, $j + 1 - $i);
            $i = $j + 1;
        }
        else {
            $out .= $c;
            $i++;
        }
    }
    return ($out, \@strings);
}

sub line_of { my ($text, $off) = @_; return 1 + (substr($text, 0, $off) =~ tr/\n//) }

for my $file (sort @files) {
    open my $fh, '<', $file or die "$file: $!\n";
    my $text = do { local $/; <$fh> };
    my ($code, $strings) = scan($text);

    for my $s (@$strings) {
        next unless $s->[1] =~ /^(SVC\d{4}):/;
        my $where = "$file:" . line_of($code, $s->[0]);
        if ($seen{$1}) {
            push @fail, "$where: $1 is used already at $seen{$1}: each call site takes a "
                      . "new number (grep for the highest)";
        }
        else {
            $seen{$1} = $where;
        }
    }

    # Files whose messages go through a say() of their own or a ->log()
    # callback: the run supervisor's (areas/runs) and the event hub's.
    my $is_runs = $file =~ m{/areas/runs/|/kernel/svc_hub\.c$};
    while ($code =~ /\b(ap_log_[rpc]?error|say|->log)\s*\(/g) {
        my ($call, $start) = ($1, pos($code));
        next if ($call eq 'say' || $call eq '->log') && !$is_runs;
        # The call's arguments: up to the matching parenthesis.
        my ($depth, $j) = (1, $start);
        while ($j < length $code && $depth) {
            my $c = substr($code, $j, 1);
            if ($c eq '"') {
                $j++;
                $j += substr($code, $j, 1) eq '\\' ? 2 : 1 while substr($code, $j, 1) ne '"';
            }
            $depth++ if $c eq '(';
            $depth-- if $c eq ')';
            $j++;
        }
        my $args = substr($code, $start, $j - $start);
        next if $args =~ /\bAPLOG_TRACE\d\b/;
        # The definition (a parameter list), not a call.
        next if $call eq 'say' && $args =~ /^\s*(?:const\s+)?\w+\s*\*\s*\w+\s*,\s*int\b/;
        my ($first) = grep { $_->[0] >= $start && $_->[0] < $j } @$strings;
        next unless $first;                                 # a message built elsewhere
        next if $first->[1] eq '%s';
        next if $first->[1] =~ /^SVC\d{4}: /;
        push @fail, "$file:" . line_of($code, $start) . ": $call without a tag: \""
                  . substr($first->[1], 0, 40) . "...\" must start with SVCnnnn: (a new number)";
    }
}

if (@fail) {
    print STDERR "check-logtags: $_\n" for @fail;
    exit 1;
}
printf "check-logtags: %d tags, each at one call site\n", scalar keys %seen;
