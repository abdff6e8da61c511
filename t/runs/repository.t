# Runs on a linked repository (issue 12): the init step mints an
# installation token for the one repository, clones it into /workspace/repo
# through the fake provider's git server (Basic auth, x-access-token), and
# exits; the factory commits on top of the cloned history on svc/run-<id>,
# and the bundle holds both. The token is searched for in the run's log, its
# events, the workspace while the run is at the model (.git/config
# included), the bundle and a clone of it, and a pg_dump; the error log is
# searched by tools/check-logs.pl (every token the fake minted is recorded).
# A repository removed from the selection, or deleted, fails the run with
# clone_failed; a suspended installation (the webhook) or an unlinked one
# with installation_suspended, before any clone; a `repository` that is not
# the project's linked one is 409 repository_not_linked; greenfield runs
# are as before.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use File::Find ();
use File::Temp qw(tempdir);
use SvcTest;

plan skip_all => 'the fake code-hosting provider is not running (use tools/test.sh)'
    unless $ENV{VCS_WEB_URL} && $ENV{VCS_APP_ID};

my $owner = new_user('vrun-owner', name => 'Rita Repo');
my $org   = new_org($owner, prefix => 'vrun');
my $tok   = new_token($owner, scope => 'admin');
my $proj  = uniq('p');
my ($st) = api(POST => "/api/orgs/$org/projects", token => $tok,
               json => { slug => $proj, name => 'On a repository' });
is($st, 201, 'project');
my $llm = new_llm(flavor => 'openai');
my $provider = new_provider($org, $tok, $llm, tools => 'off');
my $runs = "/api/orgs/$org/projects/$proj/runs";
my $work = Apache::Test::vars('t_logs') . '/runs';
my $tmp = tempdir(CLEANUP => 1);

sub git {
    my ($dir, @args) = @_;
    my ($rc, $out, $err) = SvcTest::run([ 'git', '-C', $dir, '-c', 'user.name=Origin',
                                          '-c', 'user.email=origin@example.test', @args ]);
    die "git @args: $err" if $rc != 0;
    chomp $out;
    return $out;
}

# A repository at the provider: two commits on main, as a bare repository
# the fake serves.
sub make_origin {
    my $name = shift;
    my ($src, $bare) = ("$tmp/$name-src", "$tmp/$name.git");
    mkdir $src or die "$src: $!";
    git($src, 'init', '-q', '-b', 'main');
    open my $fh, '>', "$src/README.md" or die $!;
    print $fh "# $name\n";
    close $fh;
    git($src, 'add', 'README.md');
    git($src, 'commit', '-q', '-m', 'First commit');
    mkdir "$src/src";
    open $fh, '>', "$src/src/lib.c" or die $!;
    print $fh "int lib(void) { return 1; }\n";
    close $fh;
    git($src, 'add', 'src/lib.c');
    git($src, 'commit', '-q', '-m', 'Second commit');
    my ($rc, undef, $err) = SvcTest::run([ 'git', 'clone', '-q', '--bare', $src, $bare ]);
    die "clone --bare: $err" if $rc;
    return { bare => $bare, head => git($src, 'rev-parse', 'HEAD'),
             first => git($src, 'rev-list', '--max-parents=0', 'HEAD') };
}

sub finished {
    my ($id, $timeout, $base) = @_;
    return wait_for(sub {
        my (undef, $r) = api(GET => ($base // $runs) . "/$id", token => $tok);
        return $r && $r->{status} =~ /^(?:succeeded|failed|cancelled)$/ ? $r : undef;
    }, timeout => $timeout // 90, interval => 0.2);
}

sub run_log {
    my $id = shift;
    my (undef, undef, $res) = api(GET => "/api/orgs/$org/runs/$id/logs", token => $tok);
    return $res->content;
}

sub start_run {
    my (%body) = @_;
    my ($s, $r) = api(POST => $runs, token => $tok,
                      json => { instructions => 'Add a greeting file.', %body });
    is($s, 201, 'run started' . ($body{repository} ? " on $body{repository}" : ''));
    return $r;
}

sub reply {
    my $path = shift // 'hello.txt';
    return JSON::PP->new->canonical->encode(
        { summary => 'Add a greeting', files => [ { path => $path, content => "hello\n" } ] });
}

# Every installation token the fake has minted (all recorded as secrets).
sub minted { return grep { /^ghs_/ } @{ vcs_state()->{issued} // [] } }

sub count_git { return vcs_app_state()->{git_requests}{ lc shift } // 0 }

sub contains_any {
    my ($text, @tokens) = @_;
    return scalar grep { index($text, $_) >= 0 } @tokens;
}

# --- the installation, the repository, the link ---------------------------------------
my $inst = vcs_record_installation($org, vcs_installation(repos => [ 'app', 'other' ]));
my $full = "$inst->{login}/app";
my $origin = make_origin('app');
vcs_git_repo($full, $origin->{bare});
($st) = api(PUT => "/api/orgs/$org/projects/$proj/repository", token => $tok,
            json => { installation_id => $inst->{id} + 0, full_name => $full });
is($st, 200, 'the project is linked to the repository');

# The fake's git server answers as GitHub does, before the service uses it.
{
    my ($rc, undef, $err) = SvcTest::run([ 'env', 'GIT_TERMINAL_PROMPT=0', 'git', 'ls-remote',
                                           "$ENV{VCS_WEB_URL}/$full.git" ]);
    isnt($rc, 0, 'the fake\'s git server: no credentials, no repository');
    like($err, qr/Authentication failed|could not read Username|terminal prompts disabled/i,
         '... it asked for credentials (401)');
}

# --- a run on the linked repository ---------------------------------------------------
my $minted_before = vcs_app_state()->{mints}{"$inst->{id}:app"} // 0;
$llm->control(mode => 'slow', delay_ms => 4000, times => 1, replies => [ reply() ]);
my $run = start_run();
is($run->{repository}, $full, 'the run works on the linked repository (repository omitted)');

# While the factory waits for the model, the workspace holds the clone.
my $ws = "$work/$run->{id}";
ok(wait_for(sub { run_log($run->{id}) =~ /model call 1|asking the model/ }, timeout => 60,
            interval => 0.2), 'the factory reached the model');
my $gitconfig = do { local (@ARGV, $/) = ("$ws/repo/.git/config"); <> } // '';
like($gitconfig, qr{url = \Q$ENV{VCS_WEB_URL}/$full.git\E\n},
     'the clone\'s remote URL is the repository\'s, without credentials');
unlike($gitconfig, qr/x-access-token|credential|extraheader/i,
       '... and .git/config holds no user, helper or header');
my @tokens = minted();
ok(scalar @tokens, 'the fake minted installation tokens');
my ($files, $hits) = (0, 0);
File::Find::find({ no_chdir => 1, wanted => sub {
    return unless -f $_ && !-l $_;
    open my $fh, '<:raw', $_ or return;
    local $/;
    my $c = <$fh>;
    $files++;
    $hits++ if contains_any($c, @tokens);
} }, $ws) if -d $ws;
ok($files > 5, "the workspace has the clone ($files files)");
is($hits, 0, '... and no file in it holds the token');

my $done = finished($run->{id});
is($done->{status}, 'succeeded', 'the run on the repository succeeded') or diag(run_log($run->{id}));
is((vcs_app_state()->{mints}{"$inst->{id}:app"} // 0) - $minted_before, 1,
   'one token was minted, for that one repository');
is_deeply(vcs_app_state()->{last}{token_request},
          { repositories => [ 'app' ], permissions => { contents => 'read', metadata => 'read' } },
          '... with contents: read and metadata: read');
is(vcs_app_state()->{git_last}{user}, 'x-access-token', 'git authenticated as x-access-token');
ok(vcs_app_state()->{git_served}{ lc $full }, '... and the fake served the clone');

# The artifact: the original history plus the run's commit on svc/run-<id>.
my ($as, undef, $ares) = api(GET => "/api/orgs/$org/runs/$run->{id}/artifact", token => $tok);
is($as, 200, 'the artifact');
{
    open my $fh, '>:raw', "$tmp/run.bundle" or die $!;
    print $fh $ares->content;
    close $fh;
}
my ($rc, $out, $err) = SvcTest::run([ 'git', 'clone', '-q', "$tmp/run.bundle", "$tmp/clone" ]);
is($rc, 0, 'git clone run.bundle') or diag($err);
is(git("$tmp/clone", 'rev-parse', '--abbrev-ref', 'HEAD'), "svc/run-$run->{id}",
   '... on svc/run-<id>');
is(git("$tmp/clone", 'rev-parse', 'HEAD'), $done->{result}{commit}, '... at the run\'s commit');
is(git("$tmp/clone", 'rev-parse', 'HEAD~1'), $origin->{head},
   '... whose parent is the repository\'s head');
is(git("$tmp/clone", 'log', '--format=%s'), "Add a greeting\nSecond commit\nFirst commit",
   '... the whole original history below it');
ok(-f "$tmp/clone/README.md" && -f "$tmp/clone/src/lib.c" && -f "$tmp/clone/hello.txt",
   '... the repository\'s files and the run\'s');

# The token, searched for everywhere.
@tokens = minted();
my $log = run_log($run->{id});
like($log, qr/init: cloning \Q$full\E/, 'the log shows the init step');
like($log, qr/init: cloned \Q$full\E/, '... and its end');
is(contains_any($log, @tokens), 0, 'no token in the run\'s log');
is(contains_any(join("\n", map { $_->[0] } psql("SELECT data::text FROM events WHERE run_id = "
                                              . sql_quote($run->{id}))), @tokens), 0,
   '... nor in its events');
is(contains_any($ares->content, @tokens), 0, '... nor in the bundle');
my $cloned = '';
File::Find::find({ no_chdir => 1, wanted => sub {
    return unless -f $_;
    open my $fh, '<:raw', $_ or return;
    local $/;
    $cloned .= <$fh> // '';
} }, "$tmp/clone");
is(contains_any($cloned, @tokens), 0, '... nor in any file of its clone');
is(contains_any(pg_dump_text(), @tokens), 0, '... nor in a pg_dump of the database');
ok(!-e $ws, 'the workspace is gone');

# --- `repository` given ---------------------------------------------------------------------
{
    $llm->control(mode => 'ok', replies => [ reply('second.txt') ]);
    my $r = start_run(repository => uc $full);
    is($r->{repository}, $full, 'repository given, in another case: the linked one');
    my $d = finished($r->{id});
    is($d->{status}, 'succeeded', '... succeeded') or diag(run_log($r->{id}));

    my $count = psql_value('SELECT count(*) FROM runs');
    my ($s, $p) = api(POST => $runs, token => $tok,
                      json => { instructions => 'x', repository => "$inst->{login}/other" });
    is("$s " . ($p->{code} // ''), '409 repository_not_linked',
       'a repository of the installation that is not the project\'s: 409');
    like($p->{detail} // '', qr/not linked to project \Q$proj\E, which works on \Q$full\E/,
         '... saying which one is');
    my $bare = uniq('bare');
    api(POST => "/api/orgs/$org/projects", token => $tok, json => { slug => $bare, name => 'B' });
    ($s, $p) = api(POST => "/api/orgs/$org/projects/$bare/runs", token => $tok,
                   json => { instructions => 'x', repository => $full });
    is("$s " . ($p->{code} // ''), '409 repository_not_linked',
       'a repository on a project without a link: 409');
    is(psql_value('SELECT count(*) FROM runs'), $count, '... no run was made');

    # Greenfield, beside it: as before.
    $llm->control(replies => [ reply() ]);
    ($s, $p) = api(POST => "/api/orgs/$org/projects/$bare/runs", token => $tok,
                   json => { instructions => 'Start fresh.' });
    is($s, 201, 'a greenfield run');
    is($p->{repository}, undef, '... on no repository');
    my $g = finished($p->{id}, undef, "/api/orgs/$org/projects/$bare/runs");
    is($g->{status}, 'succeeded', '... succeeded') or diag(run_log($p->{id}));
    unlike(run_log($p->{id}), qr/init: /, '... without an init step');
}

# --- an agent on the linked repository reads before it edits ---------------------------------
{
    my ($ps, $pp) = api(PATCH => "/api/orgs/$org/providers/$provider->{id}", token => $tok,
                        json => { tools => 'on' });
    is("$ps $pp->{tools}", '200 on', 'the provider calls tools now: runs are agents');
    $llm->control(mode => 'ok', replies => [
        { tool_calls => [ { name => 'list_files', arguments => {} },
                          { name => 'read_file', arguments => { path => 'src/lib.c' } } ] },
        { tool_calls => [ { name => 'edit_file', arguments => {
              path => 'src/lib.c', old_text => 'return 1;', new_text => 'return 2;' } } ] },
        { tool_calls => [ { name => 'run', arguments => { command => 'git log --oneline | wc -l; grep -c "return 2" src/lib.c' } } ] },
        { tool_calls => [ { name => 'finish', arguments => { summary => 'lib returns 2' } } ] },
    ]);
    my $r = start_run(instructions => 'Make lib() return 2.');
    my $d = finished($r->{id});
    is($d->{status}, 'succeeded', 'an agent run on the repository succeeded') or diag(run_log($r->{id}));
    is($d->{result}{mode}, 'agent', '... as an agent');
    my @chats = grep { $_->{path} eq '/v1/chat/completions' } @{ $llm->requests };
    my @last = @chats[-4 .. -1];
    my @seen = map { $_->{content} } grep { $_->{role} eq 'tool' } @{ $last[1]{body}{messages} };
    like($seen[0], qr/^README\.md\nsrc\/lib\.c\n\z/, 'it listed the clone\'s files');
    is($seen[1], "int lib(void) { return 1; }\n", '... and read the existing file before editing it');
    like($last[3]{body}{messages}[-1]{content}, qr/output:\n2\n1\n\z/,
         '... whose edit is on top of the history (its two commits, the edit not committed yet)');
    is_deeply($d->{result}{files}, [ 'src/lib.c' ], 'files: the one the run changed');
    is_deeply($d->{result}{checks}, { command => 'git log --oneline | wc -l; grep -c "return 2" src/lib.c',
                                      exit => 0 }, 'checks: the last command');
    my ($as, undef, $ares) = api(GET => "/api/orgs/$org/runs/$r->{id}/artifact", token => $tok);
    is($as, 200, 'the artifact');
    open my $fh, '>:raw', "$tmp/agent.bundle" or die $!;
    print $fh $ares->content;
    close $fh;
    my ($rc, undef, $err) = SvcTest::run([ 'git', 'clone', '-q', "$tmp/agent.bundle",
                                           "$tmp/agent-clone" ]);
    is($rc, 0, '... clones') or diag($err);
    is(git("$tmp/agent-clone", 'rev-parse', 'HEAD~1'), $origin->{head},
       '... the run\'s commit on top of the repository\'s head');
    is(git("$tmp/agent-clone", 'show', 'HEAD:src/lib.c'), 'int lib(void) { return 2; }',
       '... with the edit');
    ($ps) = api(PATCH => "/api/orgs/$org/providers/$provider->{id}", token => $tok,
                json => { tools => 'off' });
    is($ps, 200, 'back to single answers for what follows');
}

# --- the pipeline's build tasks run on the linked repository too ---------------------------
{
    $llm->control(mode => 'ok',
                  replies => [ json()->encode({ body => "# Greeter\n\n1. Greeting\n" }) ]);
    my $req = new_request($org, $tok, project => $proj, title => 'Greeter');
    my ($s, $r) = advance($org, $tok, $req->{id});
    is("$s $r->{stage}", '200 planning', 'a request on the linked project: planning');
    new_document($org, $r->{product_id}, $tok, kind => 'section', title => 'Greeting',
                 body => "# Greeting\n\nSays hello.\n");
    ($s, $r) = advance($org, $tok, $req->{id});
    is("$s $r->{stage}", '200 review', '... review');
    approve_documents($org, $tok, $r->{product_id});
    ($s, $r) = advance($org, $tok, $req->{id});
    is("$s $r->{stage}", '200 build', '... build');
    my $before = count_git($full);
    $llm->control(replies => [ reply('greeting.txt') ]);
    ($s, $r) = advance($org, $tok, $req->{id}, 'build-tasks/run-all');
    is($s, 200, '... run-all');
    my $id = $r->{started}[0]{run_id};
    my $d = finished($id);
    is($d && $d->{repository}, $full, 'the build task\'s run works on the linked repository');
    is($d && $d->{status}, 'succeeded', '... and succeeded') or diag(run_log($id));
    like(run_log($id), qr/init: cloned \Q$full\E/, '... after its init step cloned it');
    ok(count_git($full) > $before, '... through the provider\'s git server');
    my ($as, undef, $ares) = api(GET => "/api/orgs/$org/runs/$id/artifact", token => $tok);
    open my $fh, '>:raw', "$tmp/task.bundle" or die $!;
    print $fh $ares->content;
    close $fh;
    my ($rc, undef, $err) = SvcTest::run([ 'git', 'clone', '-q', "$tmp/task.bundle",
                                           "$tmp/task" ]);
    is($rc, 0, '... its bundle clones') or diag($err);
    is(git("$tmp/task", 'rev-parse', 'HEAD~1'), $origin->{head},
       '... with the task\'s commit on top of the repository\'s head');
    is(lifecycle($org, $tok, $req->{id})->{request}{stage}, 'integration',
       'the request moved on to integration');
}

# --- the repository left the installation's selection ------------------------------------
{
    vcs_installation(id => $inst->{id}, login => $inst->{login}, repos => [ 'other' ]);
    my $r = start_run();
    my $d = finished($r->{id});
    is($d->{status}, 'failed', 'the repository removed from the selection: failed');
    is($d->{error}{code}, 'clone_failed', '... clone_failed');
    like($d->{error}{message}, qr/removed from the installation's repository selection, or deleted/,
         '... saying the likely cause');
    vcs_installation(id => $inst->{id}, login => $inst->{login}, repos => [ 'app', 'other' ]);
}

# --- the repository is gone at the provider (the clone itself fails) ----------------------
{
    vcs_git_repo($full, undef);
    my $before = count_git($full);
    my $r = start_run();
    my $d = finished($r->{id});
    is($d->{error}{code}, 'clone_failed', 'the repository deleted: clone_failed');
    like($d->{error}{message}, qr/git exited with status \d+\. The repository was probably removed/,
         '... from the clone, with the likely cause');
    ok(count_git($full) > $before, '... after git asked the provider');
    like(run_log($r->{id}), qr/not found/i, '... git\'s words are in the log');
    vcs_git_repo($full, $origin->{bare});
}

# --- a suspended installation: no clone attempted ----------------------------------------------
{
    my $payload = { id => $inst->{id} + 0, account => { login => $inst->{login}, type => 'Organization' },
                    repository_selection => 'selected' };
    my ($s) = vcs_webhook('installation', { action => 'suspend', installation => $payload });
    is($s, 202, 'the provider says the installation is suspended (webhook)');
    my ($git, $mints) = (count_git($full), vcs_app_state()->{mints}{"$inst->{id}:app"} // 0);
    my $r = start_run();
    my $d = finished($r->{id});
    is($d->{status}, 'failed', 'a run through a suspended installation: failed');
    is($d->{error}{code}, 'installation_suspended', '... installation_suspended');
    is(count_git($full), $git, '... no clone was attempted');
    is(vcs_app_state()->{mints}{"$inst->{id}:app"} // 0, $mints, '... nor a token minted');
    ($s) = vcs_webhook('installation', { action => 'unsuspend', installation => $payload });
    is($s, 202, 'unsuspended again');
}

# --- an unlinked installation ---------------------------------------------------------------------
{
    # As if the org had unlinked it after the run was queued (unlinking
    # through the API also removes the project's link, so later runs would
    # be greenfield): the run keeps the repository it was started on.
    psql("UPDATE vcs_installations SET status = 'unlinked' WHERE installation_id = $inst->{id}");
    my $git = count_git($full);
    my $r = start_run();
    my $d = finished($r->{id});
    is($d->{error}{code}, 'installation_suspended', 'an unlinked installation: installation_suspended');
    is(count_git($full), $git, '... no clone was attempted');
    psql("UPDATE vcs_installations SET status = 'active' WHERE installation_id = $inst->{id}");
}

# --- cancelling during the clone ------------------------------------------------------------------
{
    vcs_control(git_delay => 30);
    my $g0 = count_git($full);
    my $r = start_run();
    ok(wait_for(sub { run_log($r->{id}) =~ /init: cloning/ }, timeout => 30, interval => 0.1),
       'the init step started (the provider\'s git server is slow)');
    # git is waiting for the provider now, holding the token: no process's
    # argv shows it.
    ok(wait_for(sub { count_git($full) > $g0 }, timeout => 10, interval => 0.1),
       '... git is talking to the provider');
    my @now = minted();
    my ($procs, $seen) = (0, 0);
    for my $f (glob '/proc/[0-9]*/cmdline') {
        open my $fh, '<:raw', $f or next;
        local $/;
        my $cmd = <$fh> // '';
        $procs++;
        $seen++ if contains_any($cmd, @now);
    }
    ok($procs > 10, "... ($procs processes looked at)");
    is($seen, 0, '... and no process\'s argv holds the token');
    my ($s) = api(POST => "$runs/$r->{id}/cancel", token => $tok);
    is($s, 200, 'cancel during the clone');
    my $d = finished($r->{id}, 20);
    is($d && $d->{status}, 'cancelled', '... the run is cancelled');

    # The run's timeout (4 s through this virtual host) stops a clone too.
    my $short = 'http://127.0.0.1:' . Apache::Test::vars('runs_short_port');
    ($s, my $t) = api(POST => $runs, token => $tok, base => $short,
                      json => { instructions => 'Too slow a provider.' });
    is($s, 201, 'a run with a 4-second timeout');
    $d = finished($t->{id}, 30);
    is($d && $d->{error} && $d->{error}{code}, 'timeout', '... a hanging clone times out');
    like(run_log($t->{id}), qr/init: cloning.*longer than its 4 seconds/s,
         '... during the init step');
    vcs_control(git_delay => 0);
}

runs_settle();
done_testing();
