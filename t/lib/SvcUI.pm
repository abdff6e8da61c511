package SvcUI;
# What every browser test of the web UI (t/ui/*.t) shares: finding the
# system chromium and the pinned node modules, and running a walk
# (t/ui/*.mjs, built on t/ui/lib.mjs) whose "ok - ..." lines become this
# test's assertions.
#
#   my $chromium = SvcUI::chromium_or_skip();     # plans skip_all without it
#   my $r = SvcUI::run_walk('docs.mjs', min_checks => 30,
#                           env => { SVC_UI_ORG => $org });
#   # $r: the walk's result object (SVC_UI_RESULT)
#
# Without chromium a test skips, saying so, unless it runs in CI (CI set):
# there tools/deps.sh installs it, and its absence is a failure.
use strict;
use warnings;

use File::Temp qw(tempdir);
use File::Spec::Functions qw(catfile);
use Test::More ();
use SvcTest ();

my $top = $ENV{SVC_TOP} // do { require FindBin; "$FindBin::Bin/../.." };

sub which {
    for my $c (@_) {
        for my $dir (split /:/, $ENV{PATH} // '') {
            return "$dir/$c" if -x "$dir/$c";
        }
    }
    return undef;
}

# The chromium to drive: SVC_UI_CHROMIUM, else the system's; undef if none.
sub chromium_path {
    return $ENV{SVC_UI_CHROMIUM} // which(qw(chromium chromium-browser));
}

sub chromium_or_skip {
    my $chromium = chromium_path();
    if (!$chromium) {
        if ($ENV{CI}) {
            Test::More::plan(tests => 1);
            Test::More::fail('chromium is installed (tools/deps.sh --group test installs it in CI)');
            exit 0;
        }
        Test::More::plan(skip_all => 'chromium is not installed (apt-get install chromium, or '
                                   . 'tools/deps.sh); the browser tests of the web UI need it');
    }
    my $modules = catfile($top, 't', 'ui', 'node_modules');
    Test::More::ok(-f catfile($modules, 'playwright-core', 'package.json')
                   && -f catfile($modules, 'axe-core', 'axe.min.js'),
                   'playwright-core and axe-core are installed (t/ui/package-lock.json; '
                   . 'tools/deps.sh runs npm ci)')
        or Test::More::BAIL_OUT('t/ui/node_modules is missing: run tools/deps.sh');
    return $chromium;
}

# The processes this walk started that are still there: every process
# inherits the walk's SVC_UI_WALK mark in its environment, so another
# test's browser (another shard runs its own walk at the same time) is not
# counted, and an orphaned chromium still is.
sub walk_pids {
    my ($mark) = @_;
    my @pids;
    opendir(my $dh, '/proc') or return ();
    for my $pid (grep { /^\d+$/ } readdir $dh) {
        open(my $fh, '<', "/proc/$pid/environ") or next;
        local $/;
        my $env = <$fh> // '';
        push @pids, $pid if index("\0$env", "\0SVC_UI_WALK=$mark\0") >= 0;
    }
    closedir $dh;
    return @pids;
}

# $text with every share token (svc_shr_...) masked: what a walk printed
# goes through it on its way into the test's output (t/ui/lib.mjs masks
# them too; this catches what node itself prints, as an uncaught error).
sub redact {
    my ($text) = @_;
    return $text =~ s{svc_shr_[^\s"'`<>\\/?#&]*}{svc_shr_[REDACTED]}gr;
}

# Runs t/ui/$script with SVC_UI_URL (the 'ui' vhost), SVC_UI_CHROMIUM,
# SVC_UI_RESULT and %{$o{env}}; one assertion per check it prints, then that
# it exited 0, made at least $o{min_checks} checks and left no chromium.
sub run_walk {
    my ($script, %o) = @_;
    my $node = which('node') or Test::More::BAIL_OUT('node is missing: run tools/deps.sh');
    my $work = tempdir(CLEANUP => 1);
    my $result_file = catfile($work, 'result.json');
    my $mark = join '', $$, '-', map { ('a' .. 'z')[rand 26] } 1 .. 12;
    local %ENV = (%ENV,
                  SVC_UI_WALK     => $mark,
                  SVC_UI_URL      => SvcTest::vhost_url('ui'),
                  SVC_UI_CHROMIUM => chromium_path(),
                  SVC_UI_RESULT   => $result_file,
                  %{ $o{env} // {} });
    my ($rc, $out, $err) = SvcTest::run([ $node, catfile($top, 't', 'ui', $script) ]);
    ($out, $err) = (redact($out), redact($err));
    my $checks = 0;
    for my $line (split /\n/, $out) {
        if ($line =~ /^(not ok|ok) - (.*)$/) {
            Test::More::ok($1 eq 'ok', "browser: $2");
            $checks++;
        }
        elsif ($line =~ /^# ?(.*)$/) {
            Test::More::diag($1);
        }
    }
    Test::More::diag($err) if length $err;
    Test::More::is($rc >> 8, 0, "$script exits 0");
    Test::More::ok($checks >= ($o{min_checks} // 1), "$checks checks in the browser");
    my $r = eval { SvcTest::json()->decode(do { local (@ARGV, $/) = ($result_file); <> }) } // {};
    Test::More::ok(SvcTest::wait_for(sub { !walk_pids($mark) }, timeout => 15),
                   'no process of the walk (chromium) is left running')
        or Test::More::diag('left: ' . join ' ', walk_pids($mark));
    return $r;
}


1;
