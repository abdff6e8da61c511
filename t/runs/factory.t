# build/svc-factory driven through its protocol (docs/api/factory-protocol.md)
# by this file playing the supervisor with scripted model replies, in
# temporary directories standing in for /workspace. git is real; no network
# and no httpd are needed. Single mode (one answer with every file) and
# agent mode (tool calls, a step at a time: the tools, their refusals, the
# limits, the context budget) both.
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
    my @bad = grep { ($_->{type} // '') !~ /\A(?:log|model|step|result|error)\z/ } @{ $r->{msgs} };
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

# --- agent mode ------------------------------------------------------------------------

my $n_call = 0;

# tc('write_file', path => 'a', content => 'b') → one tool call as the supervisor passes it
sub tc {
    my ($name, %args) = @_;
    return { id => 'call_' . ++$n_call, name => $name, arguments => \%args };
}

# A model_reply of agent mode carrying these tool calls (none: a text answer).
sub calls {
    my @calls = @_;
    return { ok => JSON::PP::true, content => @calls ? '' : 'I think it is done.',
             tool_calls => \@calls, stop => @calls ? 'tool_calls' : 'end',
             usage => { input_tokens => 100, output_tokens => 20 } };
}

sub agent_task {
    my ($ws, %o) = @_;
    my $limits = delete $o{limits} // {};
    return task($ws, mode => 'agent', limits => { command_timeout => 5, %$limits }, %o);
}

# The results of the tool calls, as the factory sent them back in request $i.
sub results_in {
    my ($r, $i) = @_;
    my $m = $r->{models}[$i] or return [];
    my ($last) = reverse @{ $m->{messages} };
    return $last->{role} eq 'tool' ? $last->{results} : [];
}

sub steps_of { return [ grep { $_->{type} eq 'step' } @{ $_[0]{msgs} } ] }

subtest 'agent: write, run, see the failure, fix, run again, finish' => sub {
    my ($root, $ws) = workspace();
    my $r = factory(task => agent_task($ws), replies => [
        calls(tc('write_file', path => 'calc.py', content => "def add(a, b):\n    return a - b\n"),
              tc('write_file', path => 'test_calc.py',
                 content => "from calc import add\nassert add(2, 3) == 5, 'add(2, 3) is not 5'\nprint('all good')\n")),
        calls(tc('run', command => 'python3 test_calc.py')),
        calls(tc('edit_file', path => 'calc.py', old_text => 'return a - b', new_text => 'return a + b')),
        calls(tc('run', command => 'python3 test_calc.py && echo built > out.txt')),
        calls(tc('finish', summary => "Add add()\nwith a test")),
    ]);
    is($r->{exit}, 0, 'exit 0') or diag $r->{stderr};
    protocol_ok($r, 'agent');
    is($r->{last}{type}, 'result', 'a result');
    is($r->{last}{summary}, 'Add add() with a test', 'the summary, made one line');
    is_deeply($r->{last}{files}, [ qw(calc.py out.txt test_calc.py) ],
              'files: what git sees changed, the file a command made included');
    ok(!exists $r->{last}{stopped}, 'not stopped');
    my $m0 = $r->{models}[0];
    is_deeply([ map { $_->{name} } @{ $m0->{tools} } ],
              [ qw(list_files read_file write_file edit_file run finish) ], 'the tools offered');
    ok(!exists $m0->{json}, 'no JSON mode');
    like($m0->{messages}[0]{content}, qr/^# Task\n\nWrite a greeting program\./, 'the task first');
    like($m0->{system}, qr/at most 5 seconds/, 'the system prompt gives the command limit');
    my $fail = results_in($r, 2)->[0];
    like($fail->{content}, qr/^exit status 1 .*AssertionError: add\(2, 3\) is not 5/s,
         'the failure reaches the model with its output');
    ok($fail->{is_error}, '... as an error');
    my $pass = results_in($r, 4)->[0];
    like($pass->{content}, qr/^exit status 0 .*all good/s, 'the second run passes');
    is_deeply([ map { [ $_->{n}, $_->{tool}, $_->{ok} ? 1 : 0, $_->{exit} ] } @{ steps_of($r) } ],
              [ [ 1, 'write_file', 1, undef ], [ 2, 'write_file', 1, undef ], [ 3, 'run', 0, 1 ],
                [ 4, 'edit_file', 1, undef ], [ 5, 'run', 1, 0 ], [ 6, 'finish', 1, undef ] ],
              'a step line for each call, in order, with the exit statuses');
    my ($run) = grep { $_->{tool} eq 'run' } @{ steps_of($r) };
    is($run->{args}, 'python3 test_calc.py', 'a run step names its command');
    ok(defined $run->{duration_ms} && !$run->{timed_out}, '... its duration');
    my $repo = "$ws/repo";
    is(slurp("$repo/calc.py"), "def add(a, b):\n    return a + b\n", 'the fix is in the file');
    is(git($repo, 'rev-parse', 'HEAD'), $r->{last}{commit}, 'HEAD is the commit');
    is(git($repo, 'status', '--porcelain'), '', 'nothing left uncommitted');
    ok(grep({ $_ eq '| all good' } @{ $r->{logs} }), "the command's output is in the log");
    ok(!-e "$repo/__pycache__", 'no bytecode cache in the repository');
};

subtest 'agent: edit_file with an absent and a repeated span, the run goes on' => sub {
    my ($root, $ws) = workspace();
    existing_repo($ws, 'notes.txt' => "alpha\nbeta\nalpha\n");
    my $r = factory(task => agent_task($ws), replies => [
        calls(tc('read_file', path => 'notes.txt'),
              tc('edit_file', path => 'notes.txt', old_text => 'gamma', new_text => 'x'),
              tc('edit_file', path => 'notes.txt', old_text => 'alpha', new_text => 'x'),
              tc('edit_file', path => 'notes.txt', old_text => "alpha\nbeta", new_text => 'ALPHA')),
        calls(tc('finish', summary => 'Edit notes')),
    ]);
    is($r->{exit}, 0, 'the run finishes') or diag $r->{stderr};
    my $res = results_in($r, 1);
    is($res->[0]{content}, "alpha\nbeta\nalpha\n", 'read_file gives the text as it is');
    like($res->[1]{content}, qr/old_text was not found in notes\.txt; nothing was changed/,
         'an absent span: the model is told');
    ok($res->[1]{is_error}, '... as an error');
    like($res->[2]{content}, qr/old_text occurs 2 times in notes\.txt; it must occur exactly once/,
         'a repeated span: the model is told');
    like($res->[3]{content}, qr/^edited notes\.txt/, 'a unique span is replaced');
    is(slurp("$ws/repo/notes.txt"), "ALPHA\nalpha\n", 'only the unique edit happened');
    is_deeply($r->{last}{files}, [ 'notes.txt' ], 'files: the one changed path');
};

subtest 'agent: paths obey the rules, symlinks are not followed' => sub {
    my ($root, $ws) = workspace();
    my $repo = existing_repo($ws, 'README.md' => "hi\n", 'src/a.c' => "int a;\n");
    spew("$root/outside.txt", "secret\n");
    symlink("$root", "$repo/link") or die "symlink: $!";
    symlink("$root/outside.txt", "$repo/file-link") or die "symlink: $!";
    git($repo, 'add', 'link', 'file-link');
    git($repo, 'commit', '-q', '-m', 'links');
    my $before = snapshot($root);
    my $r = factory(task => agent_task($ws), replies => [
        calls(tc('write_file', path => '../escape.txt', content => 'x'),
              tc('write_file', path => '.git/config', content => 'x'),
              tc('write_file', path => 'link/escape.txt', content => 'x'),
              tc('read_file', path => 'file-link'),
              tc('read_file', path => '/etc/passwd'),
              tc('edit_file', path => 'file-link', old_text => 'secret', new_text => 'x'),
              tc('list_files', path => 'link'),
              tc('list_files'),
              tc('read_file', path => 'nothere.txt')),
        calls(tc('finish', summary => 'Nothing')),
    ]);
    is($r->{exit}, 0, 'refusals do not end the run') or diag $r->{stderr};
    my $res = results_in($r, 1);
    like($res->[0]{content}, qr/'\.\.' component/, '.. refused');
    like($res->[1]{content}, qr/\.git directory/, '.git refused');
    like($res->[2]{content}, qr/symbolic link/, 'a directory symlink is not followed');
    like($res->[3]{content}, qr/symbolic link|not a plain file/, 'a file symlink is not read');
    like($res->[4]{content}, qr/absolute/, 'an absolute path refused');
    like($res->[5]{content}, qr/symbolic link|not a plain file/, '... nor edited');
    like($res->[6]{content}, qr/not a directory|symbolic link/, '... nor listed');
    is($res->[7]{content}, "README.md\nfile-link (symbolic link: not followed)\n"
                          . "link (symbolic link: not followed)\nsrc/a.c\n",
       'list_files: the paths, .git left out, links marked');
    like($res->[8]{content}, qr/does not exist/, 'a missing file');
    ok((grep { $_->{is_error} } @$res) == 8, 'each refusal is an error for the model');
    is(slurp("$root/outside.txt"), "secret\n", 'nothing outside changed');
    ok(!-e "$root/escape.txt", 'nothing written outside');
};

subtest 'agent: read_file ranges and caps' => sub {
    my ($root, $ws) = workspace();
    my $big = join '', map { "line $_\n" } 1 .. 20000;
    existing_repo($ws, 'big.txt' => $big, 'bin.dat' => "\0\1\2binary");
    my $r = factory(task => agent_task($ws), replies => [
        calls(tc('read_file', path => 'big.txt', start_line => 3, end_line => 5),
              tc('read_file', path => 'big.txt'),
              tc('read_file', path => 'bin.dat'),
              tc('read_file', path => 'big.txt', start_line => 30000)),
        calls(tc('finish', summary => 'Read')),
    ]);
    my $res = results_in($r, 1);
    is($res->[0]{content}, "line 3\nline 4\nline 5\n[lines 3-5 of 20000 shown]\n", 'a range');
    ok(length($res->[1]{content}) <= 65 * 1024, 'a big file is capped');
    like($res->[1]{content}, qr/\[lines 1-\d+ of 20000 shown: the rest did not fit/, '... and says so');
    like($res->[2]{content}, qr/binary file/, 'a binary file is not shown');
    like($res->[3]{content}, qr/past its end/, 'a start past the end');
};

subtest 'agent: run output, exit status, time limit, what is left behind' => sub {
    my ($root, $ws) = workspace();
    my $r = factory(task => agent_task($ws, limits => { command_timeout => 2 }), replies => [
        calls(tc('run', command => 'i=0; while [ $i -lt 3000 ]; do echo "out line $i"; i=$((i+1)); done; echo err >&2; exit 3')),
        calls(tc('run', command => 'sleep 60')),
        calls(tc('run', command => '(sleep 4242 &); setsid sleep 4243 & echo started')),
        calls(tc('run', command => 'for p in /proc/[0-9]*; do tr "\0" " " 2>/dev/null < $p/cmdline; echo; done 2>/dev/null | grep -c "slee[p] 424" || true')),
        calls(tc('run', command => 'exit 0')),
        calls(tc('finish', summary => 'Ran things')),
    ]);
    is($r->{exit}, 0, 'the run finishes') or diag $r->{stderr};
    my $out = results_in($r, 1)->[0]{content};
    like($out, qr/^exit status 3 /, 'the exit status');
    like($out, qr/output \(the last 16384 of \d+ bytes\):\n/, 'the output is capped to its last 16 KiB');
    like($out, qr/out line 2999\nerr\n\z/, '... stdout and stderr, the end kept');
    unlike($out, qr/out line 0\n/, '... the start dropped');
    is(scalar(grep { /^\| out line \d+$/ } @{ $r->{logs} }), 3000, 'the whole output is in the log');
    like(results_in($r, 2)->[0]{content}, qr/^killed: the command took longer than its limit of 2 s/,
         'a command past its limit is killed and reported');
    my ($slow) = grep { $_->{args} eq 'sleep 60' } @{ steps_of($r) };
    ok($slow->{timed_out} && !defined $slow->{exit}, '... its step says so');
    like(results_in($r, 3)->[0]{content}, qr/^exit status 0 .*2 process\(es\) it left running were stopped/s,
         'processes left behind are stopped');
    like(results_in($r, 4)->[0]{content}, qr/output:\n0\n\z/, '... and are gone at the next step');
};

subtest 'agent: the step limit commits the work so far' => sub {
    my ($root, $ws) = workspace();
    my $r = factory(task => agent_task($ws, limits => { max_steps => 3 }), replies => [
        calls(tc('write_file', path => 'one.txt', content => "1\n"),
              tc('write_file', path => 'two.txt', content => "2\n")),
        calls(tc('write_file', path => 'three.txt', content => "3\n")),
        calls(tc('write_file', path => 'four.txt', content => "4\n"),
              tc('finish', summary => 'Too late')),
    ]);
    is($r->{exit}, 0, 'exit 0: a result') or diag $r->{stderr};
    is($r->{last}{type}, 'result', 'a result line');
    is($r->{last}{stopped}{code}, 'step_limit', '... stopped at step_limit');
    like($r->{last}{stopped}{message}, qr/limit of 3 steps/, '... saying which');
    like($r->{last}{summary}, qr/^Work so far \(the run stopped at its step limit after 3 steps\)/,
         '... the summary says so');
    is_deeply($r->{last}{files}, [ qw(one.txt three.txt two.txt) ], 'the work so far is committed');
    ok(!-e "$ws/repo/four.txt", 'the call past the limit was not carried out');
    is(git("$ws/repo", 'rev-parse', 'HEAD'), $r->{last}{commit}, '... on the branch');
    is(scalar @{ $r->{models} }, 3, 'one more model call after the last step: finish would have been taken');
};

subtest 'agent: token_limit and step_limit from the supervisor commit the work so far' => sub {
    for my $code (qw(token_limit step_limit)) {
        my ($root, $ws) = workspace();
        my $r = factory(task => agent_task($ws), replies => [
            calls(tc('write_file', path => 'a.txt', content => "a\n")),
            { ok => JSON::PP::false, error => { code => $code, message => "budget ($code)" } },
        ]);
        is($r->{exit}, 0, "$code: a result") or diag $r->{stderr};
        is_deeply($r->{last}{stopped}, { code => $code, message => "budget ($code)" },
                  "$code: stopped says why");
        is_deeply($r->{last}{files}, [ 'a.txt' ], "$code: the work so far is committed");
    }
};

subtest 'agent: answers without tools, bad calls, finish without a summary' => sub {
    my ($root, $ws) = workspace();
    my $r = factory(task => agent_task($ws), replies => [
        calls(),
        calls(tc('frobnicate', x => 1),
              { id => 'call_bad', name => 'write_file', arguments => {},
                arguments_error => 'not JSON: {"path": "a' },
              tc('finish')),
        calls(tc('finish', summary => 'Done')),
    ]);
    is($r->{exit}, 0, 'the run goes on and finishes') or diag $r->{stderr};
    like($r->{models}[1]{messages}[-1]{content}, qr/Continue the work with the tools/,
         'a text answer is met with a nudge');
    my $res = results_in($r, 2);
    like($res->[0]{content}, qr/no tool named 'frobnicate'/, 'an unknown tool');
    like($res->[1]{content}, qr/not a JSON object/, 'arguments that were not JSON');
    like($res->[2]{content}, qr/finish needs summary/, 'finish without a summary');

    $r = factory(task => agent_task($ws), replies => [ calls(), calls(), calls() ]);
    failed_with($r, 'model_reply_invalid', qr/3 times in a row without calling a tool/,
                'three text answers');
};

subtest 'agent: the conversation is kept within its context budget, never the task' => sub {
    my ($root, $ws) = workspace();
    my $r = factory(task => agent_task($ws, limits => { context_bytes => 20000 }), replies => [
        (map { calls(tc('run', command => "seq 1 2000; echo round $_")) } 1 .. 6),
        calls(tc('finish', summary => 'Long')),
    ]);
    is($r->{exit}, 0, 'the run finishes') or diag $r->{stderr};
    my $last = $r->{models}[-1];
    my $size = length($J->encode($last->{messages}));
    ok($size <= 20000, "the last request's messages fit the budget ($size bytes)");
    like($last->{messages}[0]{content}, qr/^# Task\n\nWrite a greeting program\./, 'the task is whole');
    like(results_in($r, 6)->[0]{content}, qr/round 6\n\z/, 'the latest output is whole');
    my @old = map { $_->{results}[0]{content} } grep { $_->{role} eq 'tool' } @{ $last->{messages} };
    like($old[0], qr/left out to keep the conversation within the model's context/,
         'old outputs were shortened or dropped');
    ok(grep({ /^context: \d+ old output/ } @{ $r->{logs} }), 'the log says so');
};

subtest 'agent: protocol' => sub {
    my ($root, $ws) = workspace();
    my $r = factory(task => agent_task($ws), replies => [
        { ok => JSON::PP::true, content => '', tool_calls => [ { id => 'x', name => 'run' } ],
          stop => 'tool_calls', usage => { input_tokens => 1, output_tokens => 1 } } ]);
    failed_with($r, 'internal', qr/tool_calls must be an array of \{id, name, arguments\}/,
                'a tool call without arguments');
    $r = factory(task => agent_task($ws), replies => [ { ok => JSON::PP::true, content => '' } ]);
    failed_with($r, 'internal', qr/tool_calls must be/, 'a reply without tool_calls');
    $r = factory(task => agent_task($ws), replies => [ reply_ok(\%GREETING) ]);
    failed_with($r, 'internal', qr/tool_calls must be/, 'a single-mode reply');
    $r = factory(task => task($ws, mode => 'swarm'));
    failed_with($r, 'task_invalid', qr/mode must be "single" or "agent"/, 'an unknown mode');
    $r = factory(task => task($ws, limits => { max_files => 1, max_file_bytes => 1,
                                               max_total_bytes => 1, command_timeout => 0 }));
    failed_with($r, 'task_invalid', qr/limits\.command_timeout must be between 1 and/, 'a bad command timeout');
    $r = factory(task => task($ws), replies => [ { ok => JSON::PP::false,
        error => { code => 'step_limit', message => 'x' } } ]);
    failed_with($r, 'internal', qr/unknown model_reply\.error\.code/, 'single mode knows no step_limit');
    $r = factory(task => task($ws), replies => [ { ok => JSON::PP::false,
        error => { code => 'model_reply_invalid', message => 'too big' } } ]);
    failed_with($r, 'model_reply_invalid', qr/^too big\z/, 'model_reply_invalid is passed on');
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
        $r = factory(task => agent_task($ws), valgrind => $log, replies => [
            calls(tc('write_file', path => 'v.txt', content => "v\n"), tc('run', command => 'cat v.txt; sleep 5 & echo bg'),
                  tc('edit_file', path => 'v.txt', old_text => 'v', new_text => 'w'), tc('list_files'),
                  tc('read_file', path => 'v.txt')),
            calls(tc('finish', summary => 'Agent under valgrind')) ]);
        is($r->{exit}, 0, 'an agent run under valgrind: exit 0') or diag $r->{stderr};
        is(slurp($log), '', 'valgrind reports nothing');
        $r = factory(task => '{"type":"task"}', valgrind => $log);
        is($r->{last}{code}, 'task_invalid', 'a bad task under valgrind');
        is(slurp($log), '', 'valgrind reports nothing');
    };
}

# --- the bundle (the run's artifact, made in the factory's own sandbox) -------------

# The refs a bundle file holds: { name => sha }, from its header.
sub bundle_refs {
    my $f = shift;
    my $data = slurp($f) // return undef;
    my ($head) = $data =~ /\A(# v[23] git bundle\n.*?)\n\n/s or return undef;
    my %refs = map { (split / /, $_, 2)[1] => (split / /, $_, 2)[0] }
               grep { /\A[0-9a-f]{40,64} / } split /\n/, $head;
    return \%refs;
}

subtest 'the bundle: HEAD and the branch, written where the task says' => sub {
    my ($root, $ws) = workspace();
    make_path("$ws/bundle");
    my $r = factory(task => task($ws, bundle => "$ws/bundle/run.bundle"),
                    replies => [ reply_ok(\%GREETING) ]);
    is($r->{exit}, 0, 'exit 0') or diag $r->{stderr};
    is($r->{last}{type}, 'result', 'a result line last');
    protocol_ok($r, 'with a bundle');
    my $refs = bundle_refs("$ws/bundle/run.bundle");
    is_deeply($refs, { HEAD => $r->{last}{commit}, 'refs/heads/svc/run-t1' => $r->{last}{commit} },
              'the bundle holds HEAD and the branch at the reported commit')
        or diag explain $refs;
    ok((grep { m{^bundle: \Q$ws\E/bundle/run\.bundle} } @{ $r->{logs} }), 'the log says so');
    my ($rc, undef, $err) = run_cmd([ 'git', 'clone', '-q', "$ws/bundle/run.bundle", "$root/clone" ],
                                    env => { HOME => $GIT_HOME, GIT_CONFIG_NOSYSTEM => 1 });
    is($rc, 0, 'it clones') or diag $err;
    is(slurp("$root/clone/src/hello.c"), $GREETING{files}[1]{content}, '... with the files');

    ($root, $ws) = workspace();
    $r = factory(task => task($ws), replies => [ reply_ok(\%GREETING) ]);
    is($r->{exit}, 0, 'no "bundle" in the task: exit 0');
    ok(!grep({ /^bundle: / } @{ $r->{logs} }), '... and no bundle made');

    ($root, $ws) = workspace();
    make_path("$ws/bundle");
    $r = factory(task => agent_task($ws, bundle => "$ws/bundle/run.bundle",
                                     limits => { max_steps => 2 }), replies => [
        calls(tc('run', command => 'ln -s ../victim.txt ../bundle/run.bundle && echo planted')),
        calls(tc('write_file', path => 'a.txt', content => "a\n")),
        calls(tc('write_file', path => 'late.txt', content => "late\n"),
              tc('finish', summary => 'Too late')),
    ]);
    is($r->{exit}, 0, 'agent mode, stopped at its step limit: a result') or diag $r->{stderr};
    is($r->{last}{stopped}{code}, 'step_limit', '... stopped');
    like(results_in($r, 1)->[0]{content}, qr/planted/, 'a symlink was planted at the bundle path');
    ok(!-l "$ws/bundle/run.bundle", '... and replaced by the bundle, not written through');
    ok(!-e "$ws/victim.txt", '... nothing written where it pointed');
    is_deeply(bundle_refs("$ws/bundle/run.bundle"),
              { HEAD => $r->{last}{commit}, 'refs/heads/svc/run-t1' => $r->{last}{commit} },
              'the work so far is in the bundle');

    ($root, $ws) = workspace();
    $r = factory(task => task($ws, bundle => "$ws/no-such-dir/run.bundle"),
                 replies => [ reply_ok(\%GREETING) ]);
    failed_with($r, 'bundle_failed', qr/no-such-dir/, 'a bundle with no directory');

    # The directory a link elsewhere: refused, nothing written there.
    ($root, $ws) = workspace();
    make_path("$ws/elsewhere");
    symlink('elsewhere', "$ws/bundle") or die "symlink: $!";
    $r = factory(task => task($ws, bundle => "$ws/bundle/run.bundle"),
                 replies => [ reply_ok(\%GREETING) ]);
    failed_with($r, 'bundle_failed', qr/bundle's directory/, 'a bundle directory that is a link');
    ok(!-e "$ws/elsewhere/run.bundle", '... nothing written where it points');

    # A directory at the bundle's path: git cannot write the bundle.
    ($root, $ws) = workspace();
    make_path("$ws/bundle/run.bundle");
    $r = factory(task => task($ws, bundle => "$ws/bundle/run.bundle"),
                 replies => [ reply_ok(\%GREETING) ]);
    failed_with($r, 'bundle_failed', qr/cannot be replaced/, 'a directory at the bundle path');

    for my $bad ('relative/run.bundle', "$ws/../x.bundle", "$ws//x.bundle", '') {
        ($root, $ws) = workspace();
        $r = factory(task => task($ws, bundle => $bad));
        failed_with($r, 'task_invalid', qr/bundle/, "bundle '$bad'");
    }
};

done_testing();
