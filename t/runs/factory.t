# build/svc-factory driven through its protocol (docs/api/factory-protocol.md)
# by this file playing the supervisor with scripted model replies, in
# temporary directories standing in for /workspace. git is real; no network
# and no httpd are needed.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Digest::SHA qw(sha1_hex);
use File::Find ();
use File::Path qw(make_path);
use File::Temp qw(tempdir);
use IO::Select ();
use IPC::Open3 qw(open3);
use JSON::PP ();
use POSIX ();
use Symbol qw(gensym);

my $TOP = $ENV{SVC_TOP} // "$FindBin::Bin/../..";
my $BIN = "$TOP/build/svc-factory";
my $J = JSON::PP->new->utf8->canonical;
# The model's text is a character string inside the supervisor's line, which
# $J turns into UTF-8 once.
my $JC = JSON::PP->new->canonical;
my $HEX = qr/\A(?:[0-9a-f]{40}|[0-9a-f]{64})\z/;

-x $BIN or BAIL_OUT("$BIN is not built (make all)");

# run_cmd(\@cmd, env => {...}, in => $bytes) → (exit status, stdout, stderr)
sub run_cmd {
    my ($cmd, %o) = @_;
    local %ENV = (%ENV, %{ $o{env} // {} });
    my $err = gensym;
    my $pid = open3(my $in, my $out, $err, @$cmd);
    print $in $o{in} if defined $o{in};
    close $in;
    my %fh = (out => $out, err => $err);
    my %buf = (out => '', err => '');
    while (%fh) {
        my $sel = IO::Select->new(values %fh);
        for my $h ($sel->can_read) {
            my ($k) = grep { $fh{$_} == $h } keys %fh;
            my $n = sysread($h, my $chunk, 65536);
            if ($n) { $buf{$k} .= $chunk } else { delete $fh{$k} }
        }
    }
    waitpid($pid, 0);
    return ($?, $buf{out}, $buf{err});
}

my $ROOT = tempdir(CLEANUP => 1);
my $GIT_HOME = "$ROOT/test-home";
make_path($GIT_HOME);

# git as the test uses it to prepare and inspect repositories: no host
# configuration, a fixed identity.
sub git {
    my ($dir, @args) = @_;
    my ($rc, $out, $err) = run_cmd(
        [ 'git', '-C', $dir, '-c', 'user.name=Test Setup', '-c', 'user.email=setup@example.test',
          '-c', 'init.defaultBranch=main', @args ],
        env => { HOME => $GIT_HOME, GIT_CONFIG_NOSYSTEM => 1, LC_ALL => 'C' });
    die "git @args: $err" if $rc;
    chomp $out;
    return $out;
}

sub git_ok {
    my ($dir, @args) = @_;
    my ($rc) = run_cmd([ 'git', '-C', $dir, @args ],
                       env => { HOME => $GIT_HOME, GIT_CONFIG_NOSYSTEM => 1 });
    return $rc == 0;
}

my ($git_rc) = run_cmd([ 'git', '--version' ]);
BAIL_OUT('git is needed (tools/deps.sh installs it)') if $git_rc;

my $n_ws = 0;

# A fresh directory standing in for /workspace (inside a fresh root, so
# "../../x" from the repository lands in the root, which we watch).
sub workspace {
    my $root = "$ROOT/case" . ++$n_ws;
    make_path("$root/ws");
    return ($root, "$root/ws");
}

sub task {
    my ($ws, %o) = @_;
    my %limits = (max_files => 200, max_file_bytes => 1048576, max_total_bytes => 8388608,
                  %{ delete $o{limits} // {} });
    return { type => 'task', run_id => 'run_t1', instructions => 'Write a greeting program.',
             repo => "$ws/repo", branch => 'svc/run-t1',
             author => { name => 'Ada Lovelace', email => 'ada@example.test' },
             limits => \%limits, %o };
}

sub reply_ok {
    my ($data) = @_;
    return { ok => JSON::PP::true, content => ref $data ? $JC->encode($data) : $data };
}

my $HAVE_VALGRIND = do { my ($rc) = run_cmd([ 'valgrind', '--version' ]); $rc == 0 };
my $INSTRUMENTED = ($ENV{SANITIZE} // '') eq '1' || do {
    open my $fh, '<:raw', $BIN or die "$BIN: $!";
    local $/;
    my $bin = <$fh>;
    index($bin, 'AddressSanitizer') >= 0;
};

# factory(task => \%task | $raw_line | undef, replies => [ {ok,...} | 'eof' |
#         sub { $model_msg → raw line } | { partial => $bytes_then_eof } ], before_reply => sub { $model_msg },
#         env => {...}, valgrind => $log_file)
#   → { exit, signal, msgs => [every line, decoded], raw => [lines], logs =>
#       [log texts], models => [model requests], last => last message, stderr }
# Replies go out one per model request; when none is left, stdin is closed.
sub factory {
    my (%o) = @_;
    pipe(my $child_in, my $to_child) or die "pipe: $!";
    pipe(my $from_child, my $child_out) or die "pipe: $!";
    my $err_file = "$ROOT/stderr." . $$ . '.' . int(rand(1e9));
    my @cmd = ($BIN);
    unshift @cmd, 'valgrind', '-q', '--leak-check=full', '--error-exitcode=99',
                  "--log-file=$o{valgrind}" if $o{valgrind};
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        close $to_child;
        close $from_child;
        open STDIN, '<&', $child_in or POSIX::_exit(126);
        open STDOUT, '>&', $child_out or POSIX::_exit(126);
        open STDERR, '>', $err_file or POSIX::_exit(126);
        $ENV{$_} = $o{env}{$_} for keys %{ $o{env} // {} };
        { exec @cmd };
        POSIX::_exit(127);
    }
    close $child_in;
    close $child_out;
    local $SIG{PIPE} = 'IGNORE';
    $to_child->autoflush(1);
    my %r = (msgs => [], raw => [], logs => [], models => []);
    if (exists $o{task} && defined $o{task}) {
        print $to_child (ref $o{task} ? $J->encode($o{task}) : $o{task}), "\n";
    }
    else {
        close $to_child;
        undef $to_child;
    }
    my @replies = @{ $o{replies} // [] };
    my $buf = '';
    my $sel = IO::Select->new($from_child);
    while (1) {
        # Generous: under valgrind on a busy machine; never a timing assertion.
        die "svc-factory said nothing for 300 s\n" unless $sel->can_read(300);
        my $n = sysread($from_child, $buf, 65536, length $buf);
        last unless $n;
        while ($buf =~ s/\A([^\n]*)\n//) {
            my $line = $1;
            push @{ $r{raw} }, $line;
            my $msg = eval { $J->decode($line) };
            push @{ $r{msgs} }, $msg // { type => 'NOT JSON', line => $line };
            next unless $msg;
            push @{ $r{logs} }, $msg->{line} if ($msg->{type} // '') eq 'log';
            next unless ($msg->{type} // '') eq 'model';
            push @{ $r{models} }, $msg;
            $o{before_reply}->($msg) if $o{before_reply};
            my $rep = shift @replies;
            if (!defined $rep || (!ref $rep && $rep eq 'eof')) {
                close $to_child if $to_child;
                undef $to_child;
                next;
            }
            if (ref $rep eq 'HASH' && exists $rep->{partial}) {
                print $to_child $rep->{partial};
                close $to_child;
                undef $to_child;
                next;
            }
            my $out = ref $rep eq 'CODE' ? $rep->($msg)
                    : $J->encode({ type => 'model_reply', id => $msg->{id}, %$rep });
            print $to_child $out, "\n" if $to_child;
        }
    }
    close $to_child if $to_child;
    waitpid($pid, 0);
    $r{exit} = $? >> 8;
    $r{signal} = $? & 127;
    $r{partial} = $buf;
    $r{last} = $r{msgs}[-1];
    open my $eh, '<', $err_file or die "$err_file: $!";
    $r{stderr} = do { local $/; <$eh> } // '';
    close $eh;
    unlink $err_file;
    return \%r;
}

# Every line the factory wrote is a JSON object of a known type, no longer
# than 4 KiB; exactly one result or error comes last, or none at all.
sub protocol_ok {
    my ($r, $what) = @_;
    my @bad = grep { ($_->{type} // '') !~ /\A(?:log|model|result|error)\z/ } @{ $r->{msgs} };
    ok(!@bad, "$what: every line is a protocol message") or diag explain \@bad;
    my @long = grep { $_->{type} eq 'log' } grep { length($J->encode($_)) + 1 > 4096 }
               @{ $r->{msgs} };
    ok(!@long, "$what: log lines fit 4 KiB");
    my @final = grep { $_->{type} eq 'result' || $_->{type} eq 'error' } @{ $r->{msgs} };
    ok(@final <= 1 && (!@final || $final[0] == $r->{last}),
       "$what: at most one result or error, and it is the last line");
    is($r->{partial}, '', "$what: no unterminated line");
}

sub failed_with {
    my ($r, $code, $re, $what) = @_;
    is($r->{exit}, 1, "$what: exit 1");
    is($r->{last}{type}, 'error', "$what: an error line") or diag explain $r->{msgs};
    is($r->{last}{code}, $code, "$what: $code") or diag $r->{last}{message};
    like($r->{last}{message} // '', $re, "$what: the message says what") if $re;
    ok(!grep({ $_->{type} eq 'result' } @{ $r->{msgs} }), "$what: no result");
    like($r->{stderr}, qr/svc-factory: \Q$code\E: /, "$what: stderr says it too");
    protocol_ok($r, $what);
}

# snapshot($dir) → one string describing every entry below $dir (type,
# size, links, content digest, symlink target), to prove nothing changed.
sub snapshot {
    my $dir = shift;
    my @e;
    File::Find::find({ no_chdir => 1, wanted => sub {
        my @st = lstat $_ or return;
        (my $rel = $_) =~ s/\A\Q$dir\E//;
        if (-l _) { push @e, "L $rel -> " . readlink($_) }
        elsif (-d _) { push @e, "D $rel" }
        else {
            open my $fh, '<:raw', $_ or die "$_: $!";
            local $/;
            my $c = <$fh> // '';
            push @e, "F $rel $st[7] $st[3] " . sha1_hex($c);
        }
    } }, $dir);
    return join "\n", sort @e;
}

sub slurp {
    my $f = shift;
    open my $fh, '<:raw', $f or return undef;
    local $/;
    return scalar <$fh>;
}

sub spew {
    my ($f, $c) = @_;
    open my $fh, '>:raw', $f or die "$f: $!";
    print $fh $c;
    close $fh or die "$f: $!";
}

# An existing repository at $ws/repo with one commit on main.
sub existing_repo {
    my ($ws, %files) = @_;
    my $repo = "$ws/repo";
    make_path($repo);
    git($repo, 'init', '-q');
    for my $p (sort keys %files) {
        (my $d = "$repo/$p") =~ s{/[^/]+\z}{};
        make_path($d);
        spew("$repo/$p", $files{$p});
    }
    git($repo, 'add', '-A');
    git($repo, 'commit', '-q', '-m', 'initial');
    return $repo;
}

my %GREETING = (
    summary => 'Add a greeting program',
    files => [
        { path => 'README.md', content => "# Greeting\n\nSays hello.\n" },
        { path => 'src/hello.c', content => "#include <stdio.h>\nint main(void) { puts(\"hi\"); }\n" },
        { path => 'docs/guide/intro.md', content => "Caf\x{e9} \x{2014} \"quoted\"\n" },
    ],
);

# --- success -------------------------------------------------------------------

subtest 'a new repository: the commit holds exactly the files' => sub {
    my ($root, $ws) = workspace();
    my $r = factory(task => task($ws, context => 'Use C11.'), replies => [ reply_ok(\%GREETING) ]);
    is($r->{exit}, 0, 'exit 0') or diag $r->{stderr};
    is($r->{last}{type}, 'result', 'a result line last');
    protocol_ok($r, 'success');
    is($r->{stderr}, '', 'nothing on stderr');
    my $res = $r->{last};
    like($res->{commit}, $HEX, 'commit is a sha');
    is($res->{summary}, $GREETING{summary}, 'the summary');
    is_deeply($res->{files}, [ map { $_->{path} } @{ $GREETING{files} } ], 'the files, in order');

    my $repo = "$ws/repo";
    is(git($repo, 'rev-parse', 'refs/heads/svc/run-t1'), $res->{commit}, 'the branch points at it');
    is(git($repo, 'symbolic-ref', 'HEAD'), 'refs/heads/svc/run-t1', 'HEAD is the branch');
    is(git($repo, 'rev-list', '--count', 'HEAD'), 1, 'one commit');
    is_deeply([ sort split /\n/, git($repo, 'ls-tree', '-r', '--name-only', $res->{commit}) ],
              [ sort map { $_->{path} } @{ $GREETING{files} } ], 'the tree holds exactly the files');
    for my $f (@{ $GREETING{files} }) {
        my $want = $f->{content};
        utf8::encode($want);
        is(git($repo, 'show', "$res->{commit}:$f->{path}") . "\n", $want,
           "$f->{path}: the content, byte for byte");
        is(slurp("$repo/$f->{path}"), $want, "$f->{path}: and in the working tree");
    }
    is(git($repo, 'log', '-1', '--format=%an <%ae>|%cn <%ce>'),
       'Ada Lovelace <ada@example.test>|Ada Lovelace <ada@example.test>',
       'author and committer from the task');
    is(git($repo, 'log', '--format=%s'), $GREETING{summary}, 'git log shows the summary');
    is(git($repo, 'status', '--porcelain'), '', 'nothing left uncommitted');
    is(sprintf('%o', (stat "$repo/src/hello.c")[2] & 0777), '644', 'files are 0644');
    ok(-d "$ws/.svc-factory-home", 'HOME is a directory of the workspace');
    ok(!-e "$repo/.svc-factory-home", 'beside the repository, not inside it');

    is(scalar @{ $r->{models} }, 1, 'one model request');
    my $m = $r->{models}[0];
    is($m->{id}, 1, 'id 1');
    ok($m->{json} && JSON::PP::is_bool($m->{json}), 'json: true');
    is($m->{max_tokens}, 16000, 'max_tokens');
    like($m->{system}, qr/exactly one JSON object/, 'the system prompt demands one JSON object');
    like($m->{system}, qr/"summary".*"files".*"path".*"content"/s, 'and gives its shape');
    like($m->{system}, qr/At most 200 files, each at most 1048576 bytes, at most 8388608 bytes/,
         'and the limits');
    is(scalar @{ $m->{messages} }, 1, 'one message');
    is($m->{messages}[0]{role}, 'user', 'from the user');
    like($m->{messages}[0]{content}, qr/Write a greeting program\./, 'with the instructions');
    like($m->{messages}[0]{content}, qr/# Context\n\nUse C11\./, 'and the context');
    like($m->{messages}[0]{content}, qr/\(no files yet\)/, 'and the (empty) file list');
    ok((grep { /^committed [0-9a-f]{40}/ } @{ $r->{logs} }), 'the log tells the commit');
    ok((grep { /^wrote src\/hello\.c \(\d+ bytes\)\z/ } @{ $r->{logs} }), 'and each file');
    ok(@{ $r->{logs} } >= 8, 'every step logs');
};

subtest 'an existing repository: a commit on top' => sub {
    my ($root, $ws) = workspace();
    my $repo = existing_repo($ws, 'existing.txt' => "old\n", 'lib/keep.txt' => "keep\n");
    my $base = git($repo, 'rev-parse', 'HEAD');
    my $r = factory(task => task($ws), replies => [ reply_ok({ summary => 'Change and add',
        files => [ { path => 'existing.txt', content => "new\n" },
                   { path => 'lib/new.txt', content => "fresh\n" } ] }) ]);
    is($r->{exit}, 0, 'exit 0') or diag $r->{stderr};
    my $c = $r->{last}{commit};
    like($c, $HEX, 'a commit');
    is(git($repo, 'rev-parse', "$c^"), $base, 'its parent is the existing commit');
    is(git($repo, 'rev-parse', 'svc/run-t1'), $c, 'on the run\'s branch');
    is(git($repo, 'rev-parse', 'main'), $base, 'main is untouched');
    is(git($repo, 'diff', '--name-only', $base, $c), "existing.txt\nlib/new.txt",
       'the commit changes exactly the files');
    is(git($repo, 'show', "$c:lib/keep.txt"), 'keep', 'other files stay');
    like($r->{models}[0]{messages}[0]{content}, qr/^- existing\.txt\n- lib\/keep\.txt\n/m,
         'the model was told which files exist');
    ok((grep { /^repository: 2 files tracked\z/ } @{ $r->{logs} }), 'and the log says how many');

    # A second run on the same workspace: another commit on top.
    $r = factory(task => task($ws, branch => 'svc/run-t2', run_id => 'run_t2'),
                 replies => [ reply_ok({ summary => 'Second', files => [
                     { path => 'second.txt', content => "2\n" } ] }) ]);
    is($r->{exit}, 0, 'a second run: exit 0');
    is(git($repo, 'rev-parse', "$r->{last}{commit}^"), $c, 'on top of the first run\'s commit');
    is(git($repo, 'rev-list', '--count', 'svc/run-t2'), 3, 'three commits on its branch');
};

subtest 'a fenced reply; literal paths; ignored files; host configuration' => sub {
    my ($root, $ws) = workspace();
    my $repo = existing_repo($ws, 'a.md' => "a\n", '.gitignore' => "*.log\n");
    spew("$repo/a.md", "changed but not by the model\n");
    # What the factory must not read: the caller's git configuration (with a
    # failing hook and signing) and identity.
    my $evil = "$root/evil-home";
    make_path("$evil/hooks");
    spew("$evil/hooks/pre-commit", "#!/bin/sh\ntouch $root/hook-ran\nexit 1\n");
    chmod 0755, "$evil/hooks/pre-commit";
    spew("$evil/.gitconfig", "[core]\n\thooksPath = $evil/hooks\n[commit]\n\tgpgsign = true\n"
                            . "[user]\n\tname = Wrong Person\n\temail = wrong\@example.test\n");
    my $fenced = "```json\n" . $JC->encode({ summary => 'Odd names', files => [
        { path => '*.md', content => "star\n" },
        { path => 'debug.log', content => "kept\n" },
        { path => '-n', content => "dash\n" } ] }) . "\n```\n";
    my $r = factory(task => task($ws), replies => [ reply_ok($fenced) ],
                    env => { HOME => $evil, GIT_AUTHOR_NAME => 'Env Person',
                             GIT_CONFIG_GLOBAL => "$evil/.gitconfig",
                             GIT_DIR => "$root/nowhere" });
    is($r->{exit}, 0, 'a reply inside one ```json fence is accepted') or diag $r->{stderr};
    my $c = $r->{last}{commit};
    is(git($repo, 'diff', '--name-only', "$c^", $c), "*.md\n-n\ndebug.log",
       'exactly the three files: "*.md" is a name, not a pattern, and an ignored file counts');
    is(git($repo, 'log', '-1', '--format=%an <%ae>'), 'Ada Lovelace <ada@example.test>',
       'the task\'s author, not the environment\'s or the configuration\'s');
    ok(!-e "$root/hook-ran", 'no hook ran');
    is(slurp("$repo/a.md"), "changed but not by the model\n", 'a.md is left as it was');
};

# --- replies that are refused ------------------------------------------------------

my @INVALID = (
    [ 'prose', 'I would write a README with a greeting.', qr/not one JSON object/ ],
    [ 'empty', '', qr/empty/ ],
    [ 'prose around a fence', "Here you go:\n```json\n{\"summary\":\"x\",\"files\":[]}\n```",
      qr/not one JSON object/ ],
    [ 'two fences', "```json\n{}\n```\n```json\n{}\n```", qr/fence|JSON/ ],
    [ 'an unclosed fence', "```json\n{\"summary\":\"x\",\"files\":[{\"path\":\"a\",\"content\":\"b\"}]}",
      qr/fence/ ],
    [ 'another language', "```python\nprint(1)\n```", qr/fence/ ],
    [ 'two objects', '{"summary":"x","files":[]} {"summary":"y","files":[]}', qr/not one JSON/ ],
    [ 'an array', '[]', qr/array, not an object/ ],
    [ 'no files', { summary => 'Nothing', files => [] }, qr/^the reply has no files\z/ ],
    [ 'files missing', { summary => 'Nothing' }, qr/files is missing/ ],
    [ 'summary missing', { files => [ { path => 'a', content => 'b' } ] }, qr/summary is missing/ ],
    [ 'a two-line summary', { summary => "one\ntwo", files => [ { path => 'a', content => 'b' } ] },
      qr/one line/ ],
    [ 'a non-string content', { summary => 'x', files => [ { path => 'a.txt', content => 'ok' },
        { path => 'b.txt', content => 42 } ] }, qr/^files\[1\]\.content is not a string\z/ ],
    [ 'a null content', { summary => 'x', files => [ { path => 'a.txt', content => undef } ] },
      qr/files\[0\]\.content is not a string/ ],
    [ 'a non-string path', { summary => 'x', files => [ { path => [ 'a' ], content => 'x' } ] },
      qr/files\[0\]\.path is not a string/ ],
    [ 'a duplicate path', { summary => 'x', files => [ { path => 'a.txt', content => '1' },
        { path => 'b.txt', content => '2' }, { path => 'a.txt', content => '3' } ] },
      qr/files\[2\]\.path repeats files\[0\]\.path \('a\.txt'\)/ ],
    [ 'an unexpected member', { summary => 'x', files => [ { path => 'a', content => 'b' } ],
        notes => 'hi' }, qr/unexpected member 'notes'/ ],
    [ 'an unexpected file member', { summary => 'x', files => [ { path => 'a', content => 'b',
        mode => '0755' } ] }, qr/unexpected member 'mode' in files\[0\]/ ],
    [ 'a duplicate key', '{"summary":"x","summary":"y","files":[{"path":"a","content":"b"}]}',
      qr/duplicate/ ],
    [ 'a NUL in content', '{"summary":"x","files":[{"path":"a","content":"x\u0000y"}]}',
      qr/not one JSON object/ ],
);

subtest 'replies that are not the one object' => sub {
    my ($root, $ws) = workspace();
    for my $case (@INVALID) {
        my ($what, $content, $re) = @$case;
        my $before;
        my $r = factory(task => task($ws), replies => [ reply_ok($content) ],
                        before_reply => sub { $before = snapshot($root) });
        failed_with($r, 'model_reply_invalid', $re, $what);
        is(snapshot($root), $before, "$what: nothing written");
    }
    ok(!git_ok("$ws/repo", 'rev-parse', '--verify', '-q', 'HEAD'), 'no commit was ever made');
};

subtest '../../etc/passwd: refused, and nothing written anywhere' => sub {
    my ($root, $ws) = workspace();
    make_path("$root/etc");
    my $before;
    my $r = factory(task => task($ws), replies => [ reply_ok({ summary => 'Sneaky', files => [
        { path => 'fine.txt', content => "fine\n" },
        { path => 'dir/also-fine.txt', content => "fine\n" },
        { path => '../../etc/passwd', content => "root::0:0::/:/bin/sh\n" } ] }) ],
        before_reply => sub { $before = snapshot($root) });
    failed_with($r, 'path_refused', qr/'\.\.\/\.\.\/etc\/passwd'/, '../../etc/passwd');
    ok(!-e "$root/etc/passwd", 'not written outside');
    ok(!-e "$ws/repo/fine.txt" && !-e "$ws/repo/dir", 'nor the valid files of the same reply');
    is(snapshot($root), $before, 'nothing changed anywhere under the root');
};

my @REFUSED = (
    [ '.git/config', qr/\.git/ ],
    [ '.GIT/hooks/pre-commit', qr/\.git/ ],
    [ 'sub/.Git/config', qr/\.git/ ],
    [ ".git./config", qr/\.git/ ],
    [ ".git /config", qr/\.git/ ],
    [ "git~1/config", qr/\.git/ ],
    [ ".g\x{200c}it/config", qr/\.git/ ],
    [ '/etc/passwd', qr/absolute/ ],
    [ '/tmp/x', qr/absolute/ ],
    [ "a\\b.txt", qr/backslash/ ],
    [ 'a//b.txt', qr/empty component/ ],
    [ 'dir/', qr/empty component/ ],
    [ './a.txt', qr/'\.' or '\.\.'/ ],
    [ 'a/./b.txt', qr/'\.' or '\.\.'/ ],
    [ 'a/../b.txt', qr/'\.' or '\.\.'/ ],
    [ '..', qr/'\.' or '\.\.'/ ],
    [ '', qr/empty/ ],
    [ "a\x{1}b.txt", qr/control character/ ],
    [ "a\nb.txt", qr/control character/ ],
    [ "a\x{85}b.txt", qr/control character/ ],
    [ join('/', ('d') x 33), qr/deeper than 32/ ],
    [ join('/', ('x' x 204) x 5) . 'x', qr/longer than 1024 bytes/ ],
    [ 'z' x 256, qr/component longer than 255 bytes/ ],
);

subtest 'paths that are refused' => sub {
    my ($root, $ws) = workspace();
    for my $case (@REFUSED) {
        my ($path, $re) = @$case;
        (my $what = $path) =~ s/([^\x20-\x7e])/sprintf('\\x{%x}', ord $1)/ge;
        $what = substr($what, 0, 40) . '...' if length $what > 40;
        my $before;
        my $r = factory(task => task($ws), replies => [ reply_ok({ summary => 'x', files => [
            { path => 'valid.txt', content => "v\n" }, { path => $path, content => "x\n" } ] }) ],
            before_reply => sub { $before = snapshot($root) });
        failed_with($r, 'path_refused', $re, "path '$what'");
        is(snapshot($root), $before, "path '$what': nothing written");
    }
    # Paths that look odd but are fine.
    my $r = factory(task => task($ws), replies => [ reply_ok({ summary => 'Fine names', files => [
        { path => '.github/workflows/ci.yml', content => "on: push\n" },
        { path => '.gitignore', content => "*.o\n" },
        { path => 'a..b/..c', content => "dots\n" },
        { path => "caf\x{e9}/\x{65e5}\x{672c}.txt", content => "utf-8\n" },
        { path => join('/', ('d') x 32), content => "deep\n" },
        { path => join('/', ('y' x 204) x 5), content => "long\n" },
        { path => 'n' x 255, content => "a long name\n" } ] }) ]);
    is($r->{exit}, 0, 'odd but acceptable paths are written') or diag $r->{last}{message};
    is(scalar split(/\n/, git("$ws/repo", 'ls-tree', '-r', '--name-only', 'HEAD')), 7,
       'all seven committed');
};

subtest 'a symlink planted in the repository' => sub {
    my ($root, $ws) = workspace();
    make_path("$root/outside");
    spew("$root/outside/target.txt", "outside\n");
    spew("$root/outside/hard-target.txt", "hard\n");
    my $repo = existing_repo($ws, 'README.md' => "hi\n");
    symlink("$root/outside", "$repo/docs") or die "symlink: $!";
    make_path("$repo/a");
    symlink("$root/outside", "$repo/a/b") or die "symlink: $!";
    symlink("$root/outside/target.txt", "$repo/link.txt") or die "symlink: $!";
    symlink("$root/outside/new.txt", "$repo/dangling.txt") or die "symlink: $!";
    link("$root/outside/hard-target.txt", "$repo/hard.txt") or die "link: $!";
    git($repo, 'add', '-A');
    git($repo, 'commit', '-q', '-m', 'links');

    for my $case ([ 'docs/x', qr/'docs\/x': 'docs' is a symbolic link/ ],
                  [ 'docs/new/deeper.txt', qr/'docs' is a symbolic link/ ],
                  [ 'a/b/c/d.txt', qr/'b' is a symbolic link/ ],
                  [ 'link.txt', qr/'link\.txt' is a symbolic link/ ],
                  [ 'dangling.txt', qr/symbolic link/ ],
                  [ 'hard.txt', qr/'hard\.txt' has other hard links/ ],
                  [ 'README.md/x', qr/not a directory|symbolic link/ ]) {
        my ($path, $re) = @$case;
        my $before;
        my $r = factory(task => task($ws), replies => [ reply_ok({ summary => 'x', files => [
            { path => 'fine.txt', content => "fine\n" }, { path => $path, content => "pwned\n" } ] }) ],
            before_reply => sub { $before = snapshot($root) });
        failed_with($r, 'path_refused', $re, $path);
        is(snapshot($root), $before, "$path: nothing written, inside or outside");
    }
    is(slurp("$root/outside/target.txt"), "outside\n", 'the symlink\'s target is untouched');
    is(slurp("$root/outside/hard-target.txt"), "hard\n", 'the hard link\'s other name too');
    ok(!-e "$root/outside/x" && !-e "$root/outside/new.txt", 'nothing created outside');
};

subtest 'limits' => sub {
    my ($root, $ws) = workspace();
    my @cases = (
        [ 'too many files', { max_files => 2 },
          [ map { { path => "f$_.txt", content => "$_\n" } } 1 .. 3 ],
          qr/^path 'f3\.txt' is one file more than the limit of 2 files/ ],
        [ 'a file too large', { max_file_bytes => 10 },
          [ { path => 'small.txt', content => 'x' x 10 }, { path => 'big.txt', content => 'x' x 11 } ],
          qr/^path 'big\.txt' is 11 bytes, more than the limit of 10/ ],
        [ 'too many bytes in all', { max_total_bytes => 15 },
          [ { path => 'one.txt', content => 'x' x 8 }, { path => 'two.txt', content => 'x' x 8 } ],
          qr/^path 'two\.txt' brings the reply over the limit of 15 bytes/ ],
        [ 'a file and a directory of the same name', {},
          [ { path => 'a', content => "x\n" }, { path => 'a/b', content => "y\n" } ],
          qr/'a\/b' needs 'a' to be a directory/ ],
    );
    for my $case (@cases) {
        my ($what, $limits, $files, $re) = @$case;
        my $before;
        my $r = factory(task => task($ws, limits => $limits),
                        replies => [ reply_ok({ summary => 'x', files => $files }) ],
                        before_reply => sub { $before = snapshot($root) });
        failed_with($r, 'path_refused', $re, $what);
        is(snapshot($root), $before, "$what: nothing written");
    }
    my $r = factory(task => task($ws, limits => { max_files => 2, max_file_bytes => 10,
                                                  max_total_bytes => 20 }),
                    replies => [ reply_ok({ summary => 'Exactly at the limits', files => [
                        { path => 'a.txt', content => 'x' x 10 },
                        { path => 'b.txt', content => 'y' x 10 } ] }) ]);
    is($r->{exit}, 0, 'exactly at every limit: accepted') or diag $r->{last}{message};

    # A reply line far beyond what the limits could need is not even read.
    $r = factory(task => task($ws, limits => { max_files => 1, max_file_bytes => 10,
                                               max_total_bytes => 10 }),
                 replies => [ reply_ok('x' x (3 * 1024 * 1024)) ]);
    failed_with($r, 'model_reply_invalid', qr/larger than the limits allow/, 'a huge reply line');
};

subtest 'the model call failed: the code is passed through' => sub {
    my ($root, $ws) = workspace();
    for my $code (qw(provider_error no_provider timeout)) {
        my $r = factory(task => task($ws), replies => [ { ok => JSON::PP::false,
            error => { code => $code, message => "upstream said no ($code)" } } ]);
        failed_with($r, $code, qr/^upstream said no \(\Q$code\E\)\z/, "ok:false $code");
    }
    my $r = factory(task => task($ws), replies => [ { ok => JSON::PP::false,
        error => { code => 'bogus', message => 'x' } } ]);
    failed_with($r, 'internal', qr/unknown model_reply\.error\.code/, 'an unknown code');
};

subtest 'protocol violations by the supervisor' => sub {
    my ($root, $ws) = workspace();
    my @cases = (
        [ 'not JSON', sub { 'hello' }, qr/not a JSON object/ ],
        [ 'another type', sub { '{"type":"task"}' }, qr/expected a model_reply/ ],
        [ 'the wrong id', sub { $J->encode({ type => 'model_reply', id => 2, ok => JSON::PP::true,
                                              content => '{}' }) }, qr/not for request 1/ ],
        [ 'ok not a boolean', sub { $J->encode({ type => 'model_reply', id => 1, ok => 1,
                                                  content => '{}' }) }, qr/ok must be/ ],
        [ 'content missing', sub { $J->encode({ type => 'model_reply', id => 1,
                                                 ok => JSON::PP::true }) }, qr/content must be/ ],
        [ 'an unexpected member', sub { $J->encode({ type => 'model_reply', id => 1,
            ok => JSON::PP::true, content => '{}', extra => 1 }) }, qr/unexpected member 'extra'/ ],
    );
    for my $case (@cases) {
        my ($what, $line, $re) = @$case;
        my $r = factory(task => task($ws), replies => [ $line ]);
        failed_with($r, 'internal', $re, $what);
    }
};

subtest 'the run is cancelled: stdin ends' => sub {
    my ($root, $ws) = workspace();
    my $r = factory(task => task($ws), replies => ['eof']);
    is($r->{exit}, 1, 'EOF while waiting for the reply: exit 1');
    is($r->{last}{type}, 'model', 'the model request was the last line');
    ok(!grep({ $_->{type} eq 'result' || $_->{type} eq 'error' } @{ $r->{msgs} }),
       'no result, no error line');
    protocol_ok($r, 'cancelled');

    $r = factory(task => task($ws), replies => [ { partial => '{"type":"model_reply","id":1,"ok"' } ]);
    is($r->{exit}, 1, 'half a reply line, then EOF: exit 1');
    ok(!grep({ $_->{type} eq 'result' || $_->{type} eq 'error' } @{ $r->{msgs} }),
       'no result, no error line');

    $r = factory(task => undef);
    is($r->{exit}, 1, 'EOF before the task: exit 1');
    is(scalar @{ $r->{raw} }, 0, 'not a line written');
};

my @BAD_TASKS = (
    [ 'not JSON', 'hello', qr/not JSON/ ],
    [ 'an array', '[]', qr/JSON object/ ],
    [ 'a duplicate key', sub { my $t = $J->encode($_[0]); $t =~ s/^\{/{"run_id":"run_x",/; $t },
      qr/duplicate/ ],
    [ 'another type', { type => 'model' }, qr/type "task"/ ],
    [ 'run_id missing', { run_id => undef }, qr/run_id is missing/ ],
    [ 'a bad run_id', { run_id => 'abc' }, qr/run_id/ ],
    [ 'instructions empty', { instructions => '' }, qr/instructions are empty/ ],
    [ 'instructions not a string', { instructions => [ 'x' ] }, qr/instructions must be a string/ ],
    [ 'a relative repo', { repo => 'ws/repo' }, qr/absolute path/ ],
    [ 'a repo with ..', { repo => '/tmp/../etc' }, qr/absolute path/ ],
    [ 'a branch with ..', { branch => 'svc/../x' }, qr/branch/ ],
    [ 'a branch starting with -', { branch => '-f' }, qr/branch/ ],
    [ 'a branch ending in .lock', { branch => 'svc/x.lock' }, qr/branch/ ],
    [ 'a branch with a space', { branch => 'svc/a b' }, qr/branch/ ],
    [ 'author missing', { author => undef }, qr/author must be an object/ ],
    [ 'an author name with <', { author => { name => 'A <b>', email => 'a@b.c' } }, qr/author\.name/ ],
    [ 'a bad email', { author => { name => 'A', email => 'nobody' } }, qr/author\.email/ ],
    [ 'an author member too many', { author => { name => 'A', email => 'a@b.c', x => 1 } },
      qr/unexpected member 'author\.x'/ ],
    [ 'limits missing', { limits => undef }, qr/limits must be an object/ ],
    [ 'a zero limit', { limits => { max_files => 0, max_file_bytes => 1, max_total_bytes => 1 } },
      qr/limits\.max_files must be between/ ],
    [ 'a limit as a string', { limits => { max_files => '5', max_file_bytes => 1,
                                           max_total_bytes => 1 } },
      qr/limits\.max_files must be an integer/ ],
    [ 'an absurd limit', { limits => { max_files => 1, max_file_bytes => 1,
                                       max_total_bytes => 1e12 } },
      qr/limits\.max_total_bytes must be/ ],
    [ 'context not a string', { context => 5 }, qr/context must be a string/ ],
    [ 'an unknown member', { bogus => 1 }, qr/unexpected member 'bogus'/ ],
);

subtest 'tasks that are refused' => sub {
    my ($root, $ws) = workspace();
    for my $case (@BAD_TASKS) {
        my ($what, $change, $re) = @$case;
        my $line;
        if (ref $change eq 'HASH') {
            my $t = task($ws);
            for my $k (keys %$change) {
                if (defined $change->{$k}) { $t->{$k} = $change->{$k} }
                else { delete $t->{$k} }
            }
            $line = $J->encode($t);
        }
        elsif (ref $change eq 'CODE') { $line = $change->(task($ws)) }
        else { $line = $change }
        my $r = factory(task => $line);
        failed_with($r, 'task_invalid', $re, $what);
        is(scalar @{ $r->{msgs} }, 1, "$what: the error is the only line");
    }
    ok(!-e "$ws/repo", 'no repository was created');
    my ($rc) = run_cmd([ $BIN, '--help' ]);
    is($rc >> 8, 2, 'called with an argument: exit 2');
};

SKIP: {
    skip 'valgrind is not installed', 1 unless $HAVE_VALGRIND;
    skip 'the binary is built with a sanitizer (SANITIZE=1)', 1 if $INSTRUMENTED;
    subtest 'under valgrind: no error, no leak' => sub {
        my ($root, $ws) = workspace();
        my $log = "$root/valgrind.log";
        my $r = factory(task => task($ws), replies => [ reply_ok(\%GREETING) ], valgrind => $log);
        is($r->{exit}, 0, 'success under valgrind: exit 0 (99 would be a valgrind error)');
        is($r->{last}{type}, 'result', 'a result');
        is(slurp($log), '', 'valgrind reports nothing');
        my $before;
        $r = factory(task => task($ws), valgrind => $log, replies => [ reply_ok({ summary => 'x',
            files => [ { path => 'ok.txt', content => 'x' }, { path => '../x', content => 'y' } ] }) ]);
        is($r->{exit}, 1, 'a refused path under valgrind: exit 1');
        is($r->{last}{code}, 'path_refused', 'path_refused');
        is(slurp($log), '', 'valgrind reports nothing');
        $r = factory(task => task($ws), valgrind => $log, replies => ['eof']);
        is($r->{exit}, 1, 'cancelled under valgrind: exit 1');
        is(slurp($log), '', 'valgrind reports nothing');
        $r = factory(task => '{"type":"task"}', valgrind => $log);
        is($r->{last}{code}, 'task_invalid', 'a bad task under valgrind');
        is(slurp($log), '', 'valgrind reports nothing');
    };
}

done_testing();
