# The factory as an agent (issue 19), against fake providers that answer
# with tool calls in their own wire forms (FakeLLM.pm: OpenAI's tools,
# tool_calls with arguments as JSON text, finish_reason "tool_calls", role
# "tool" results; Anthropic's tools, tool_use blocks, stop_reason
# "tool_use", tool_result blocks). A greenfield run in both forms writes a
# program and a failing test, runs it, gets the failure in its next request
# (asserted from the fake's record), fixes, runs again, finishes; its stream
# carried every run.step in order. In the sandbox: curl reaches nothing, a
# command past SvcRunCommandTimeout is killed, what a command leaves running
# is gone at the next step, edit_file refuses an absent and a repeated span,
# the provider key is nowhere. The step limit and the token budget end runs
# failed with their work committed. A provider whose test finds no tool
# calling keeps the single answer. The run's log hides the org's own
# provider keys and secret shapes (issue 17, Low 2).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use Time::HiRes qw(time);
use SvcTest;

my $tmp = tempdir(CLEANUP => 1);

sub vhost_base { return 'http://127.0.0.1:' . Apache::Test::vars($_[0] . '_port') }

# An org with a project and a provider of this flavor (tools auto: runs
# are agents until a test finds otherwise).
sub setup {
    my ($flavor, %opt) = @_;
    my $owner = new_user("agent-$flavor", name => 'Alan Agent');
    my $org   = new_org($owner, prefix => "agent-$flavor");
    my $tok   = new_token($owner, scope => 'admin');
    my $proj  = uniq('p');
    my ($st) = api(POST => "/api/orgs/$org/projects", token => $tok,
                   json => { slug => $proj, name => 'Agent' });
    die "project: $st" unless $st == 201;
    my $llm = new_llm(flavor => $flavor);
    my $prov = new_provider($org, $tok, $llm, %opt);
    return { owner => $owner, org => $org, tok => $tok, proj => $proj, llm => $llm,
             prov => $prov, runs => "/api/orgs/$org/projects/$proj/runs" };
}

sub start_run {
    my ($o, $instructions, %opt) = @_;
    my ($s, $r) = api(POST => $o->{runs}, token => $o->{tok},
                      json => { instructions => $instructions },
                      $opt{base} ? (base => $opt{base}) : ());
    is($s, 201, "run started: $instructions");
    return $r;
}

sub finished {
    my ($o, $id) = @_;
    return wait_for(sub {
        my (undef, $r) = api(GET => "$o->{runs}/$id", token => $o->{tok});
        return $r && $r->{status} =~ /^(?:succeeded|failed|cancelled)$/ ? $r : undef;
    }, timeout => 120, interval => 0.2);
}

sub run_log {
    my ($o, $id) = @_;
    my (undef, undef, $res) = api(GET => "/api/orgs/$o->{org}/runs/$id/logs", token => $o->{tok});
    return $res->content;
}

sub call { my ($name, %args) = @_; return { name => $name, arguments => \%args } }
sub turn { return { tool_calls => [ @_ ] } }

# The chat requests the fake received, in order.
sub chats {
    my $llm = shift;
    return [ grep { $_->{path} =~ m{^/v1/(?:chat/completions|messages)$} } @{ $llm->requests } ];
}

# The bundle of a run, cloned: the directory.
sub clone_artifact {
    my ($o, $id) = @_;
    my ($as, undef, $ares) = api(GET => "/api/orgs/$o->{org}/runs/$id/artifact", token => $o->{tok});
    is($as, 200, 'the artifact') or return;
    my $dir = "$tmp/$id";
    mkdir $dir;
    open my $fh, '>:raw', "$dir/run.bundle" or die $!;
    print $fh $ares->content;
    close $fh;
    my ($rc, undef, $err) = SvcTest::run([ 'git', 'clone', '-q', "$dir/run.bundle", "$dir/clone" ]);
    is($rc, 0, '... it clones') or diag($err);
    return "$dir/clone";
}

sub slurp {
    open my $fh, '<:raw', $_[0] or return undef;
    local $/;
    return scalar <$fh>;
}

sub read_stream {
    my ($s, $limit) = @_;
    my @got;
    my $deadline = time + ($limit // 120);
    while (time < $deadline) {
        my $e = sse_next($s, 5);
        if ($e) {
            push @got, $e;
            next;
        }
        last if $s->{closed};
    }
    return @got;
}

# ===========================================================================
# A greenfield run, in each provider's form
# ===========================================================================
my $BUGGY = "def add(a, b):\n    return a - b\n";
my $TEST  = "from calc import add\n"
          . "assert add(2, 3) == 5, 'add(2, 3) should be 5, got %r' % add(2, 3)\n"
          . "print('tests passed')\n";

for my $flavor (qw(openai anthropic)) {
    my $o = setup($flavor);
    my $llm = $o->{llm};
    $llm->control(replies => [
        turn(call('write_file', path => 'calc.py', content => $BUGGY),
             call('write_file', path => 'test_calc.py', content => $TEST)),
        turn(call('run', command => 'python3 test_calc.py')),
        turn(call('edit_file', path => 'calc.py', old_text => 'return a - b',
                  new_text => 'return a + b')),
        turn(call('run', command => 'python3 test_calc.py')),
        turn(call('finish', summary => 'Add add() with a test that passes')),
    ]);
    my $t0 = time;
    my $run = start_run($o, 'Write add(a, b) in calc.py with a test, and make the test pass.');
    my $stream = sse_open("$o->{runs}/$run->{id}/events", token => $o->{tok});
    is($stream->{status}, 200, "$flavor: the run's stream opens");
    my @events = read_stream($stream, 120);
    my $done = finished($o, $run->{id});
    my $took = time - $t0;
    note(sprintf "$flavor: the greenfield agent run took %.1f s (five model calls, six steps)", $took);
    is($done->{status}, 'succeeded', "$flavor: the run succeeded") or diag(run_log($o, $run->{id}));
    my $res = $done->{result};
    is($res->{mode}, 'agent', '... as an agent');
    is($res->{summary}, 'Add add() with a test that passes', '... with the summary');
    is_deeply($res->{files}, [ 'calc.py', 'test_calc.py' ], '... the files git sees changed');
    is($res->{steps}, 6, '... in six steps');
    is_deeply($res->{checks}, { command => 'python3 test_calc.py', exit => 0 },
              '... and checks: the last run, exit 0');

    # What the model was sent.
    my $chats = chats($llm);
    is(scalar @$chats, 5, '... five model calls');
    my $first = $chats->[0]{body};
    my $fail = $chats->[2]{body};
    if ($flavor eq 'openai') {
        is_deeply([ map { $_->{type} . ':' . $_->{function}{name} } @{ $first->{tools} } ],
                  [ map { "function:$_" } qw(list_files read_file write_file edit_file run finish) ],
                  'the tools, in OpenAI\'s form');
        ok(!exists $first->{response_format}, '... no JSON mode');
        my ($asst) = grep { $_->{role} eq 'assistant' } reverse @{ $fail->{messages} };
        my $call = $asst->{tool_calls}[0];
        like($call->{id}, qr/^call_/, 'the run call went back with the provider\'s id');
        ok(!ref $call->{function}{arguments}
           && json()->decode($call->{function}{arguments})->{command} eq 'python3 test_calc.py',
           '... its arguments as a JSON string');
        my $result = $fail->{messages}[-1];
        is($result->{role}, 'tool', 'the failure comes back as a tool message');
        is($result->{tool_call_id}, $call->{id}, '... answering that call');
        like($result->{content}, qr/^exit status 1 .*AssertionError: add\(2, 3\) should be 5, got -1/s,
             '... with the exit status and the test\'s own words');
    }
    else {
        is_deeply([ map { $_->{name} } @{ $first->{tools} } ],
                  [ qw(list_files read_file write_file edit_file run finish) ], 'the tools');
        ok((!grep { !$_->{input_schema} || exists $_->{parameters} } @{ $first->{tools} }),
           '... in Anthropic\'s form (input_schema)');
        my $asst = $fail->{messages}[-2];
        my ($use) = grep { $_->{type} eq 'tool_use' } @{ $asst->{content} };
        like($use->{id}, qr/^toolu_/, 'the run call went back as a tool_use block');
        is($use->{input}{command}, 'python3 test_calc.py', '... its input an object');
        my $user = $fail->{messages}[-1];
        is($user->{role}, 'user', 'the failure comes back in the user\'s turn');
        my ($tr) = @{ $user->{content} };
        is($tr->{type}, 'tool_result', '... as a tool_result');
        is($tr->{tool_use_id}, $use->{id}, '... answering that call');
        ok($tr->{is_error}, '... marked an error');
        like($tr->{content}, qr/^exit status 1 .*AssertionError: add\(2, 3\) should be 5, got -1/s,
             '... with the exit status and the test\'s own words');
    }
    my $last = json()->encode($chats->[4]{body});
    like($last, qr/exit status 0 .*tests passed/s, 'the second run passed, and the model saw it');
    unlike(json()->encode([ map { $_->{body} } @$chats ]), qr/\Q@{[ $o->{llm}->key ]}\E/,
           'the key is in no request body (only in the provider\'s own header)');

    # The stream: every step, in order, with the log.
    ok($stream->{closed}, 'the stream ended with the run');
    my @steps = map { $_->{data} } grep { $_->{event} eq 'run.step' } @events;
    is_deeply([ map { "$_->{n}:$_->{tool}" } @steps ],
              [ '1:write_file', '2:write_file', '3:run', '4:edit_file', '5:run', '6:finish' ],
              'the stream carried every run.step, in order');
    is_deeply([ map { $_->{exit} } grep { $_->{tool} eq 'run' } @steps ], [ 1, 0 ],
              '... the runs with their exit statuses');
    ok((!grep { $_->{run_id} ne $run->{id} } @steps), '... of this run');
    ok(defined $steps[2]{duration_ms} && !$steps[2]{timed_out}, '... a run step has its duration');
    is($steps[0]{args}, 'calc.py (' . length($BUGGY) . ' bytes)', '... a short form of the arguments');
    my @kinds = map { $_->{event} } @events;
    my ($i_step) = grep { $kinds[$_] eq 'run.step' } 0 .. $#kinds;
    is($events[$i_step - 1]{data}{line},
       '[mod_svc] step 1: write_file calc.py (' . length($BUGGY) . ' bytes)',
       '... each right after its log line');

    # The artifact holds the fix, and its tests pass.
    my $clone = clone_artifact($o, $run->{id});
    is(slurp("$clone/calc.py"), "def add(a, b):\n    return a + b\n", 'the artifact holds the fix');
    my ($rc, $out) = SvcTest::run([ 'sh', '-c', "cd '$clone' && python3 test_calc.py" ]);
    is($rc, 0, '... and its test passes');
    ($rc, $out) = SvcTest::run([ 'git', '-C', $clone, 'log', '-1', '--format=%s' ]);
    chomp $out;
    is($out, 'Add add() with a test that passes', '... committed with the summary');

    # Usage, call by call.
    my $rows = psql_value("SELECT count(*) FROM model_usage WHERE subject_type = 'run' "
                          . "AND subject_id = '$run->{id}' AND status = 'ok'");
    is($rows, 5, 'a usage record per model call');
    my $sum = psql_value("SELECT sum(input_tokens) || '/' || sum(output_tokens) FROM model_usage "
                         . "WHERE subject_id = '$run->{id}'");
    is("$res->{tokens}{input}/$res->{tokens}{output}", $sum, 'the result\'s tokens are theirs');
    is($done->{usage}{calls}, 5, 'the run\'s detail shows the calls');
    is(scalar @{ $done->{usage}{by_call} }, 5, '... one by one');
    ok((!grep { $_->{input_tokens} <= 0 || $_->{output_tokens} <= 0 } @{ $done->{usage}{by_call} }),
       '... each with its tokens');
    is($done->{usage}{input_tokens}, $res->{tokens}{input}, '... adding up');

    my $log = run_log($o, $run->{id});
    like($log, qr/agent mode: the model works with tools \(tools auto: not tested yet/,
         'the log says which mode ran');
    like($log, qr/^\[mod_svc\] step 3: run python3 test_calc\.py: exit 1, /m, 'the log has each step');
    like($log, qr/^\| AssertionError/m, '... and the command\'s output');
    unlike($log, qr/\Q@{[ $o->{llm}->key ]}\E/, '... never the key');
}

# ===========================================================================
# The sandbox: no network, a time limit per command, nothing left behind,
# edit_file's refusals, no key inside
# ===========================================================================
{
    my $o = setup('openai');
    my $port = $o->{llm}->port;
    $o->{llm}->control(replies => [
        turn(call('run', command => "curl -sS --max-time 5 http://127.0.0.1:$port/v1/models; "
                                    . 'echo "curl exit $?"'),
             call('run', command => 'curl -sS --max-time 5 http://1.1.1.1/; echo "curl exit $?"'),
             call('run', command => 'curl -sS --max-time 5 https://example.com/; '
                                    . 'echo "curl exit $?"')),
        turn(call('run', command => 'sleep 30; echo never')),
        turn(call('run', command => '(sleep 4242 &); setsid sleep 4243 & echo started')),
        turn(call('run', command => 'for p in /proc/[0-9]*; do tr "\0" " " 2>/dev/null '
                                    . '< $p/cmdline; echo; done 2>/dev/null '
                                    . '| grep -c "slee[p] 424" || true')),
        turn(call('run', command => 'env; cat /proc/self/environ | tr "\0" "\n"')),
        turn(call('write_file', path => 'notes.txt', content => "alpha\nbeta\nalpha\n"),
             call('edit_file', path => 'notes.txt', old_text => 'gamma', new_text => 'x'),
             call('edit_file', path => 'notes.txt', old_text => 'alpha', new_text => 'x'),
             call('edit_file', path => 'notes.txt', old_text => "alpha\nbeta", new_text => 'ALPHA')),
        turn(call('finish', summary => 'Probe the sandbox')),
    ]);
    my $run = start_run($o, 'Probe the sandbox.', base => vhost_base('runs_cmd'));
    my $done = finished($o, $run->{id});
    is($done->{status}, 'succeeded', 'the sandbox run finishes') or diag(run_log($o, $run->{id}));
    my $chats = chats($o->{llm});
    # The results the factory sent back in request $i: those of the turn before.
    my $results = sub {
        my $i = shift;
        my @m = @{ $chats->[$i]{body}{messages} };
        my @last;
        unshift @last, pop @m while @m && $m[-1]{role} eq 'tool';
        return [ map { $_->{content} } @last ];
    };
    my $curl = $results->(1);
    like($curl->[0], qr/Failed to connect.*\ncurl exit 7\n\z/s,
         'curl to the host\'s own loopback fails: nothing listens in the sandbox\'s');
    like($curl->[1], qr/(?:Failed to connect|Couldn't connect|unreachable).*\ncurl exit 7\n\z/s,
         'curl to an address fails (no network)');
    like($curl->[2], qr/Could not resolve host.*\ncurl exit 6\n\z/s,
         'curl to a name fails (no network, no DNS)');
    ok((!grep { $_->{path} eq '/v1/models' && ($_->{headers}{'user-agent'} // '') =~ /curl/ }
        @{ $o->{llm}->requests }), '... the fake on the host heard nothing from inside');
    my $slow = $results->(2)->[-1];
    like($slow, qr/^killed: the command took longer than its limit of 3 s/,
         'a command past SvcRunCommandTimeout is killed, and the model told');
    unlike($slow, qr/never/, '... before it got further');
    like($results->(3)->[-1], qr/2 process\(es\) it left running were stopped/,
         'what a command leaves running is stopped with its step');
    like($results->(4)->[-1], qr/output:\n0\n\z/, '... and is gone at the next step');
    my $env = $results->(5)->[-1];
    like($env, qr/^PATH=/m, 'the commands\' environment');
    unlike($env, qr/\Q@{[ $o->{llm}->key ]}\E/, '... holds no provider key');
    unlike($env, qr/svc_|SVC_|VCS_/, '... nor anything of the service');
    my $edits = $results->(6);
    like($edits->[1], qr/old_text was not found in notes\.txt; nothing was changed/,
         'edit_file with an absent span: the model is told');
    like($edits->[2], qr/old_text occurs 2 times in notes\.txt; it must occur exactly once/,
         'edit_file with a repeated span: the model is told');
    like($edits->[3], qr/^edited notes\.txt/, '... and the run goes on');
    my $clone = clone_artifact($o, $run->{id});
    is(slurp("$clone/notes.txt"), "ALPHA\nalpha\n", 'only the unique edit happened');
    my @steps = map { json()->decode($_->[0]) }
        psql("SELECT data::text FROM events WHERE run_id = '$run->{id}' AND kind = 'run.step' "
             . 'ORDER BY id');
    my ($killed) = grep { $_->{tool} eq 'run' && $_->{timed_out} } @steps;
    ok($killed && !defined $killed->{exit}, 'the killed command\'s step says so');
    like(run_log($o, $run->{id}), qr/^\[mod_svc\] step 4: run sleep 30; echo never: killed at its time limit \(3 s\)$/m,
         '... and the log');
}

# ===========================================================================
# The step limit and the token budget: failed, the work so far committed
# ===========================================================================
{
    my $o = setup('anthropic');
    $o->{llm}->control(replies => [
        map { turn(call('write_file', path => "f$_.txt", content => "$_\n")) } 1 .. 6
    ]);
    my $run = start_run($o, 'Write many files.', base => vhost_base('runs_steps'));
    my $done = finished($o, $run->{id});
    is($done->{status}, 'failed', 'the step limit: failed');
    is($done->{error}{code}, 'step_limit', '... step_limit');
    like($done->{error}{message}, qr/limit of 3 steps \(SvcRunMaxSteps\)/, '... saying which');
    is($done->{result}{stopped}, 'step_limit', 'the result says it stopped');
    is_deeply($done->{result}{files}, [ qw(f1.txt f2.txt f3.txt) ], '... with the work so far');
    is($done->{result}{steps}, 3, '... three steps');
    my $clone = clone_artifact($o, $run->{id});
    is(slurp("$clone/f3.txt"), "3\n", 'the work so far is on the branch');
    ok(!-e "$clone/f4.txt", '... and nothing past the limit');
    my ($rc, $out) = SvcTest::run([ 'git', '-C', $clone, 'rev-parse', '--abbrev-ref', 'HEAD' ]);
    chomp $out;
    is($out, "svc/run-$run->{id}", '... the run\'s branch');
    like(run_log($o, $run->{id}), qr/stopped at a limit; the work so far is committed/, '... the log says so');
}
{
    my $o = setup('openai');
    $o->{llm}->control(replies => [
        map { turn(call('write_file', path => "t$_.txt", content => "$_\n")) } 1 .. 12
    ]);
    my $run = start_run($o, 'Write many files.', base => vhost_base('runs_tokens'));
    my $done = finished($o, $run->{id});
    is($done->{status}, 'failed', 'the token budget: failed');
    is($done->{error}{code}, 'token_limit', '... token_limit');
    like($done->{error}{message}, qr/budget of 3000 \(SvcRunMaxTokens\)/, '... saying which');
    my $used = psql_value("SELECT sum(input_tokens + output_tokens) FROM model_usage "
                          . "WHERE subject_id = '$run->{id}'");
    ok($used >= 3000, "... the calls used the budget ($used tokens)");
    my $calls = scalar @{ chats($o->{llm}) };
    ok($calls < 12, "... no more calls were made ($calls)");
    is($done->{result}{stopped}, 'token_limit', 'the result says it stopped');
    is_deeply($done->{result}{files}, [ map { "t$_.txt" } 1 .. $calls ],
              '... with every file written so far');
    my $clone = clone_artifact($o, $run->{id});
    is(slurp("$clone/t1.txt"), "1\n", 'the work so far is on the branch');
    like(run_log($o, $run->{id}), qr/model call refused: the run is at its token budget/,
         'the log says why');
}

# ===========================================================================
# tools auto: a provider whose test finds no tool calling keeps the single
# answer; one whose test finds it works is an agent
# ===========================================================================
{
    my $o = setup('openai');
    my $P = "/api/orgs/$o->{org}/providers/$o->{prov}{id}";
    is($o->{prov}{tools}, 'auto', 'a provider\'s tools: auto by default');
    ok(!defined $o->{prov}{tools_detected}, '... nothing detected yet');
    $o->{llm}->control(tools => 'ignored');
    my ($s, $t) = api(POST => "$P/test", token => $o->{tok});
    is($s, 200, 'a test of a server that ignores tools');
    ok($t->{ok}, '... the provider works');
    is($t->{tools}, JSON::PP::false, '... but calls no tools');
    my (undef, $p) = api(GET => $P, token => $o->{tok});
    is($p->{tools_detected}, JSON::PP::false, '... which the provider remembers');
    $o->{llm}->control(replies => [ json()->encode({ summary => 'One file',
        files => [ { path => 'one.txt', content => "1\n" } ] }) ]);
    my $run = start_run($o, 'One file.');
    my $done = finished($o, $run->{id});
    is($done->{status}, 'succeeded', 'its run succeeds') or diag(run_log($o, $run->{id}));
    is($done->{result}{mode}, 'single', '... in single-answer mode');
    is_deeply($done->{result}{files}, [ 'one.txt' ], '... as today');
    is($done->{result}{steps}, 0, '... no steps');
    my ($req) = grep { $_->{path} eq '/v1/chat/completions' } reverse @{ $o->{llm}->requests };
    ok(!exists $req->{body}{tools}, '... no tools offered');
    is_deeply($req->{body}{response_format}, { type => 'json_object' }, '... JSON mode');
    like(run_log($o, $run->{id}), qr/single-answer mode: the model answers once with every file \(tools auto: the provider test found no tool calling\)/,
         '... and the log says so');

    $o->{llm}->control(tools => 'refused');
    ($s, $t) = api(POST => "$P/test", token => $o->{tok});
    ok($t->{ok} && $t->{tools} eq JSON::PP::false, 'a server that refuses tools (400): no tools');
    $o->{llm}->control(tools => 'native');
    ($s, $t) = api(POST => "$P/test", token => $o->{tok});
    is($t->{tools}, JSON::PP::true, 'a server with tools: the test finds them');
    my ($probe) = grep { $_->{body}{tools} } reverse @{ $o->{llm}->requests };
    is_deeply($probe->{body}{tool_choice}, { type => 'function', function => { name => 'report_status' } },
              '... by making the model call a tool');
    (undef, $p) = api(GET => $P, token => $o->{tok});
    is($p->{tools_detected}, JSON::PP::true, '... remembered');
    ($s, $p) = api(PATCH => $P, token => $o->{tok}, json => { tools => 'off' });
    is($s, 200, 'tools can be turned off');
    is($p->{tools}, 'off', '... and are');
    is($p->{tools_detected}, JSON::PP::true, '... what the test found stays');
    ($s, $p) = api(PATCH => $P, token => $o->{tok}, json => { model => 'gpt-4o' });
    ok(!defined $p->{tools_detected}, 'another model: what the test found is forgotten');
    ($s, $p) = api(PATCH => $P, token => $o->{tok}, json => { tools => 'sometimes' });
    is($s, 400, 'tools is auto, on or off');
}

# ===========================================================================
# The run's log hides the org's provider keys and secret shapes
# ===========================================================================
{
    my $o = setup('openai');
    my $key = $o->{llm}->key;
    # A local server's key has no shape to find it by: only its value.
    my $other = 'ollama-local-' . join('', map { ('a' .. 'z', 0 .. 9)[rand 36] } 1 .. 24);
    record_secret($other);
    my ($s) = api(POST => "/api/orgs/$o->{org}/providers", token => $o->{tok},
                  json => { name => 'Second', kind => 'openai', base_url => $o->{llm}->url,
                            model => 'gpt-4o', api_key => $other });
    is($s, 201, 'a second provider of the org');
    my %shapes = (
        ghs => 'ghs_' . 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8',
        ghp => 'ghp_' . 'Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2',
        password_colon => 'hunter2-colon',
        password_json => 'hunter2-json',
        aws => 'AKIAIOSFODNN7EXAMPLE',
        pg => 'pgsecret77',
    );
    record_secret($_) for values %shapes;
    my @lines = ("the key $key here", "and $other too", "token $shapes{ghs}",
                 "old $shapes{ghp}", "password: $shapes{password_colon}",
                 qq({"user":"u","password":"$shapes{password_json}"}),
                 "api_key=$shapes{aws}", "postgres://u:$shapes{pg}\@db.example:5432/app");
    my $printf = 'printf "%s\n" ' . join ' ', map { my $l = $_; $l =~ s/'/'\\''/g; "'$l'" } @lines;
    $o->{llm}->control(replies => [
        turn(call('run', command => $printf)),
        turn(call('finish', summary => 'Print things')),
    ]);
    my $run = start_run($o, 'Print things.');
    my $done = finished($o, $run->{id});
    is($done->{status}, 'succeeded', 'a run that prints secrets') or diag(run_log($o, $run->{id}));
    my $log = run_log($o, $run->{id});
    my $events = join "\n", map { $_->[0] }
        psql("SELECT data::text FROM events WHERE run_id = '$run->{id}'");
    for my $what ([ 'the org\'s provider key', $key ], [ 'its other provider\'s key', $other ],
                  map { [ $_, $shapes{$_} ] } sort keys %shapes) {
        unlike($log, qr/\Q$what->[1]\E/, "the log hides $what->[0]");
        unlike($events, qr/\Q$what->[1]\E/, "... and so do the run's events");
    }
    like($log, qr/^\| the key \[REDACTED\] here$/m, 'a key is replaced where it was');
    like($log, qr/^\| postgres:\/\/u:\[REDACTED\]\@db\.example:5432\/app$/m,
         'a URL keeps all but its password');
}

done_testing();
