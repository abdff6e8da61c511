# Every log call site has a tag of its own (tools/check-logtags.pl, run by
# `make`, as httpd checks APLOGNO): the tree passes, and the checker refuses
# a tag used at two sites, a log call without a tag, and a run supervisor
# message without one (issue 18: SVC0060 was used at five sites, SVC0071 in
# two files).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use File::Path qw(make_path);
use File::Temp qw(tempdir);
use SvcTest;

my $top = $ENV{SVC_TOP} // "$FindBin::Bin/../..";
my $check = "$top/tools/check-logtags.pl";

sub check {
    my ($dir) = @_;
    my ($rc, $out, $err) = SvcTest::run(['perl', $check, $dir]);
    return ($rc >> 8, "$out$err");
}

my ($rc, $out) = check("$top/mod_svc");
is($rc, 0, 'the tree: every tag at one call site') or diag($out);
like($out, qr/check-logtags: \d+ tags, each at one call site/, '... and it says how many');

sub tree {
    my (%files) = @_;
    my $dir = tempdir(CLEANUP => 1);
    for my $f (keys %files) {
        my ($d) = $f =~ m{^(.*)/} ? ($1) : ('');
        make_path("$dir/$d") if $d;
        open my $fh, '>', "$dir/$f" or die "$dir/$f: $!";
        print $fh $files{$f};
        close $fh;
    }
    return $dir;
}

my $ok = <<'EOC';
/* SVC0001 is named in a comment: that is not a call site. */
static void a(server_rec *s)
{
    ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, "SVC0001: one");
    ap_log_error(APLOG_MARK, APLOG_TRACE1, 0, s, "a trace needs no tag");
    ap_log_error(APLOG_MARK, APLOG_INFO, 0, s, "%s", msg);
}
EOC
($rc, $out) = check(tree('a.c' => $ok));
is($rc, 0, 'tags once, a trace line, a message passed on: accepted') or diag($out);

($rc, $out) = check(tree('a.c' => $ok, 'b.c' => <<'EOC'));
static void b(request_rec *r)
{
    ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r,
                  "SVC0001: the same tag elsewhere");
}
EOC
isnt($rc, 0, 'a tag at two call sites: refused');
like($out, qr{b\.c:4: SVC0001 is used already at .*a\.c:4}, '... naming both places');

($rc, $out) = check(tree('a.c' => $ok, 'c.c' => <<'EOC'));
static void c(request_rec *r)
{
    ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, "%s answered %d", x, y);
}
EOC
isnt($rc, 0, 'a log call without a tag: refused');
like($out, qr{c\.c:3: ap_log_rerror without a tag}, '... naming the call');

($rc, $out) = check(tree('a.c' => $ok, 'areas/runs/d.c' => <<'EOC'));
static void d(sup_t *s)
{
    say(s, SVC_SUP_ERR, "run %s: no tag", id);
}
EOC
isnt($rc, 0, "the run supervisor's say() without a tag: refused");
like($out, qr{d\.c:3: say without a tag}, '... naming the call');

done_testing();
