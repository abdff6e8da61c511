# Runs through the factory in single-answer mode (providers whose `tools`
# is off: the model answers once with every file, as before the agent),
# against fake model providers: a run that succeeds (its artifact clones
# and holds the files the model gave), a reply that is not the JSON asked
# for, a reply that names paths outside the repository, a provider that
# fails, an answer larger than the old cap but within the limits the
# factory is told, and one larger than those (issue 17, Low 1); the model's
# usage recorded against the run; the provider's key nowhere.
use strict;
use warnings;
use utf8;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use SvcTest;

my $owner = new_user('factory-owner', name => 'Ada Factory');
my $org   = new_org($owner, prefix => 'factory');
my $tok   = new_token($owner, scope => 'admin');
my $proj  = uniq('p');
my ($st) = api(POST => "/api/orgs/$org/projects", token => $tok,
               json => { slug => $proj, name => 'Factory' });
is($st, 201, 'project');
my $llm = new_llm(flavor => 'openai');
my $prov = new_provider($org, $tok, $llm, tools => 'off');
my $runs = "/api/orgs/$org/projects/$proj/runs";
my $work = Apache::Test::vars('t_logs') . '/runs';

sub start_run {
    my ($instructions) = @_;
    my ($s, $r) = api(POST => $runs, token => $tok, json => { instructions => $instructions });
    is($s, 201, "run started: $instructions");
    return $r;
}

sub finished {
    my ($id, $timeout) = @_;
    return wait_for(sub {
        my (undef, $r) = api(GET => "$runs/$id", token => $tok);
        return $r && $r->{status} =~ /^(?:succeeded|failed|cancelled)$/ ? $r : undef;
    }, timeout => $timeout // 60, interval => 0.2);
}

sub run_log {
    my $id = shift;
    my (undef, undef, $res) = api(GET => "/api/orgs/$org/runs/$id/logs", token => $tok);
    return $res->content;
}

# --- a run that succeeds --------------------------------------------------------------
my %files = ('README.md' => "# Hello\n\nBuilt by a run.\n",
             'src/main.c' => "int main(void) { return 0; }\n",
             'docs/deep/nested/ü.txt' => "unicode path and content: \x{e9}t\x{e9}\n");
# The fake's control takes characters: encode the reply as text, not bytes.
my $text_json = JSON::PP->new->canonical;
my $reply = $text_json->encode({ summary => 'Add a README and a main',
                             files => [ map { { path => $_, content => $files{$_} } }
                                        sort keys %files ] });
$llm->control(replies => [ $reply ]);
my $run = start_run('Create a README and a C main.');
my $done = finished($run->{id});
is($done->{status}, 'succeeded', 'the run succeeded') or diag(run_log($run->{id}));
is($done->{result}{summary}, 'Add a README and a main', '... with the summary');
like($done->{result}{commit}, qr/^[0-9a-f]{40}$/, '... the commit');
is_deeply([ sort @{ $done->{result}{files} } ], [ sort keys %files ], '... and the files');
ok(!defined $done->{error}, '... no error');

# What the provider was asked: JSON mode, the instructions, never the sandbox's key.
my ($req) = grep { $_->{path} eq '/v1/chat/completions' } @{ $llm->requests };
ok($req, 'the supervisor called the provider');
my $body = ref $req->{body} ? $req->{body} : json()->decode($req->{body});
is_deeply($body->{response_format}, { type => 'json_object' }, '... in JSON mode');
like(join("\n", map { $_->{content} } @{ $body->{messages} }),
     qr/Create a README and a C main\./, '... with the instructions');

# The artifact: a bundle that clones into the run's branch with the files.
my ($as, undef, $ares) = api(GET => "/api/orgs/$org/runs/$run->{id}/artifact", token => $tok);
is($as, 200, 'the artifact');
is($ares->header('Content-Type'), 'application/octet-stream', '... bytes');
like($ares->header('Content-Disposition') // '', qr/^attachment; filename="\Q$run->{id}\E\.bundle"$/,
     '... an attachment');
my $dir = tempdir(CLEANUP => 1);
{
    open my $fh, '>:raw', "$dir/run.bundle" or die $!;
    print $fh $ares->content;
    close $fh;
}
my ($rc, $out, $err) = SvcTest::run([ 'git', 'clone', '-q', "$dir/run.bundle", "$dir/clone" ]);
is($rc, 0, 'git clone run.bundle works') or diag($err);
($rc, $out) = SvcTest::run([ 'git', '-C', "$dir/clone", 'rev-parse', '--abbrev-ref', 'HEAD' ]);
chomp $out;
is($out, "svc/run-$run->{id}", '... on the branch svc/run-<id>');
($rc, $out) = SvcTest::run([ 'git', '-C', "$dir/clone", 'rev-parse', 'HEAD' ]);
chomp $out;
is($out, $done->{result}{commit}, '... at the run\'s commit');
for my $f (sort keys %files) {
    my ($name, $want) = ("$dir/clone/$f", $files{$f});
    utf8::encode($name);
    utf8::encode($want);
    open my $fh, '<:raw', $name or do { fail("a file is missing from the clone"); next };
    local $/;
    my $c = <$fh>;
    is($c, $want, '... a file holds what the model wrote');
}
($rc, $out) = SvcTest::run([ 'git', '-C', "$dir/clone", 'log', '-1', '--format=%an <%ae>|%s' ]);
chomp $out;
is($out, "Ada Factory <$owner>|Add a README and a main", '... committed as the run\'s author');

# Usage, the log, the workspace.
is(psql_value("SELECT count(*) FROM model_usage WHERE subject_type = 'run' "
              . "AND subject_id = '$run->{id}' AND purpose = 'run' AND status = 'ok' "
              . "AND input_tokens > 0 AND output_tokens > 0 AND provider_id = '$prov->{id}'"),
   1, 'the model call is recorded against the run');
my $log = run_log($run->{id});
like($log, qr/asking the model/, 'the log has the factory\'s lines');
like($log, qr/\[mod_svc\] model call 1: answered/, '... the supervisor\'s notes');
like($log, qr/committed [0-9a-f]{40} on svc\/run-/, '... the commit');
unlike($log, qr/\Q@{[ $llm->key ]}\E/, '... and never the key');
ok(!-e "$work/$run->{id}", 'the workspace is gone');

# --- secrets in what the runner writes are redacted in the log --------------------------
{
    my $pat = 'svc_pat_' . join('', map { ('a'..'z', 'A'..'Z', 0..9)[rand 62] } 1 .. 43) . 'Zz0000';
    record_secret($pat);
    $llm->control(replies => [ $text_json->encode({
        summary => "Deploy with $pat and password=hunter2hunter2",
        files => [ { path => 'deploy.txt', content => "token\n" } ] }) ]);
    my $r = start_run('Write the deploy notes');
    my $d = finished($r->{id});
    is($d->{status}, 'succeeded', 'a run whose model put a secret in its summary');
    my $l = run_log($r->{id});
    like($l, qr/reply: 1 files, \d+ bytes: Deploy with \[REDACTED\] and password=\[REDACTED\]/,
         '... its log shows the line with the secrets redacted');
    unlike($l, qr/\Q$pat\E|hunter2hunter2/, '... and nowhere in clear');
    my $ev = join "\n", map { $_->[0] } psql("SELECT data::text FROM events WHERE run_id = '"
                                             . $r->{id} . "' AND kind = 'run.log'");
    unlike($ev, qr/\Q$pat\E|hunter2hunter2/, '... nor in its run.log events');
}

# --- a reply that is not the JSON asked for ------------------------------------------
$llm->control(replies => [ "Sure! Here is your code:\n\nprint('hi')" ]);
$run = start_run('Anything');
$done = finished($run->{id});
is($done->{status}, 'failed', 'a garbage reply fails the run');
is($done->{error}{code}, 'model_reply_invalid', '... model_reply_invalid');
ok(length $done->{error}{message}, '... with a message');
my ($nas) = api(GET => "/api/orgs/$org/runs/$run->{id}/artifact", token => $tok);
is($nas, 404, '... and no artifact');

# --- paths outside the repository ------------------------------------------------------
for my $bad ('../../etc/passwd', '../escape.txt', '/tmp/absolute.txt', 'a/../../up.txt',
             '.git/hooks/pre-commit') {
    $llm->control(replies => [ json()->encode({ summary => 'Escape',
        files => [ { path => 'ok.txt', content => "fine\n" },
                   { path => $bad, content => "root::0:0::/:/bin/sh\n" } ] }) ]);
    $run = start_run("Escape with $bad");
    $done = finished($run->{id});
    is($done->{status}, 'failed', "a reply naming $bad fails the run");
    is($done->{error}{code}, 'path_refused', '... path_refused');
    like(run_log($run->{id}), qr/path_refused/, '... and the log says so');
}
ok(!-e "$work/escape.txt" && !-e "$work/up.txt" && !-e '/tmp/absolute.txt',
   'nothing was written outside the workspaces');
ok(!-e "$work/../escape.txt", '... nor beside the work directory');
my @left = glob("$work/run_*");
is(scalar @left, 0, 'every workspace is gone');

# --- answers as large as the limits allow, and larger (issue 17, Low 1) ------------------
{
    # The answer is padded with white space after its JSON (the same answer,
    # only larger): 8 MB is past the 6,553,600 bytes that once cut answers
    # the factory's limits allow ("provider_error ... could not be reached").
    $llm->control(pad_bytes => 8 * 1024 * 1024, replies => [ json()->encode({
        summary => 'Large', files => [ { path => 'large.txt', content => "large\n" } ] }) ]);
    my $r = start_run('A large answer');
    my $d = finished($r->{id});
    is($d->{status}, 'succeeded', 'an 8 MB answer within the limits the factory is told succeeds')
        or diag(explain($d->{error}));
    is($d->{result}{mode}, 'single', '... in single-answer mode');
    # Past what the limits could ever need: the model's answer is wrong.
    $llm->control(pad_bytes => 48 * 1024 * 1024, replies => [ json()->encode({
        summary => 'Huge', files => [ { path => 'huge.txt', content => "huge\n" } ] }) ]);
    $r = start_run('A huge answer');
    $d = finished($r->{id});
    is($d->{status}, 'failed', 'a 48 MB answer fails the run');
    is($d->{error}{code}, 'model_reply_invalid', '... model_reply_invalid, not provider_error');
    like($d->{error}{message}, qr/larger than \d+ bytes/, '... saying it was too large');
    unlike($d->{error}{message}, qr/could not be reached/, '... not that the provider was away');
    $llm->control(pad_bytes => 0);
}

# --- the provider fails -----------------------------------------------------------------
$llm->control(mode => 'server_error', times => 1);
$run = start_run('The provider is down');
$done = finished($run->{id});
is($done->{status}, 'failed', 'a failing provider fails the run');
is($done->{error}{code}, 'provider_error', '... provider_error');
is(psql_value("SELECT status FROM model_usage WHERE subject_id = '$run->{id}'"), 'error',
   '... and the failed call is recorded too');

# --- the Anthropic flavor -----------------------------------------------------------------
{
    my $owner2 = new_user('factory-anthropic');
    my $org2 = new_org($owner2, prefix => 'factory-a');
    my $tok2 = new_token($owner2, scope => 'admin');
    my ($s2) = api(POST => "/api/orgs/$org2/projects", token => $tok2,
                   json => { slug => 'app', name => 'App' });
    is($s2, 201, 'a project in an org with an Anthropic provider');
    my $a = new_llm(flavor => 'anthropic');
    new_provider($org2, $tok2, $a, tools => 'off');
    $a->control(replies => [ json()->encode({ summary => 'One file',
        files => [ { path => 'hello.txt', content => "hello\n" } ] }) ]);
    my ($s3, $r3) = api(POST => "/api/orgs/$org2/projects/app/runs", token => $tok2,
                        json => { instructions => 'Say hello' });
    is($s3, 201, '... a run');
    my $d = wait_for(sub {
        my (undef, $r) = api(GET => "/api/orgs/$org2/projects/app/runs/$r3->{id}",
                             token => $tok2);
        return $r && $r->{status} =~ /^(?:succeeded|failed|cancelled)$/ ? $r : undef;
    }, timeout => 60);
    is($d->{status}, 'succeeded', '... succeeds') or diag(explain($d));
    is_deeply($d->{result}{files}, ['hello.txt'], '... with its file');
}

done_testing();
