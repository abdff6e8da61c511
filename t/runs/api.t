# The runs API without a model: starting runs, Idempotency-Key, the run
# document, lists and their filter, the 409s, another org's runs, and a run
# of an org without a default provider, which the supervisor fails at once
# with no_provider (its events, its log, no artifact).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $owner = new_user('runs-owner');
my $org   = new_org($owner, prefix => 'runs');
my $tok   = new_token($owner, scope => 'write');
my $proj  = uniq('p');
my ($st) = api(POST => "/api/orgs/$org/projects", token => $tok,
               json => { slug => $proj, name => 'Runs' });
is($st, 201, 'project');
my $runs = "/api/orgs/$org/projects/$proj/runs";

# --- start: validation -----------------------------------------------------------
{
    my ($s, $p) = api(POST => $runs, token => $tok, json => {});
    is($s, 400, 'instructions are required');
    is($p->{errors}[0]{field}, 'instructions', '... named');
    ($s, $p) = api(POST => $runs, token => $tok, json => { instructions => '' });
    is($s, 400, 'empty instructions are refused');
    ($s, $p) = api(POST => $runs, token => $tok,
                   json => { instructions => 'x' x 65537 });
    is($s, 400, 'instructions over 65536 characters are refused');
    ($s, $p) = api(POST => $runs, token => $tok,
                   json => { instructions => 'Build it', colour => 'red' });
    is($s, 400, 'unknown fields are refused');
    ($s, $p) = api(POST => $runs, token => $tok,
                   json => { instructions => 'Build it', repository => 'acme/site' });
    is($s, 409, 'a repository cannot be linked yet');
    is($p->{code}, 'repository_not_linked', '... repository_not_linked');
    ($s, $p) = api(POST => $runs, token => $tok, json => { instructions => 'Build it' },
                   headers => { 'Idempotency-Key' => "bad\x01key" });
    is($s, 400, 'an Idempotency-Key with control characters is refused');
}

# --- a run of an org without a provider ----------------------------------------
my $before = psql_value("SELECT coalesce(max(id), 0) FROM events WHERE org_id = '"
                        . org_id_of($org) . "'");
my ($s, $run, $res) = api(POST => $runs, token => $tok,
                          json => { instructions => "# Hello\n\nMake a README.",
                                    request_id => 'req_1', task_id => 'task_1' });
is($s, 201, 'a run is started');
is($run->{status}, 'queued', '... queued');
like($run->{id}, qr/^run_[A-Za-z0-9]{22}$/, '... with a run_ id');
is($run->{project}, $proj, '... in the project');
is($run->{instructions}, "# Hello\n\nMake a README.", '... with its instructions');
is($run->{created_by}, user_id_of($owner), '... by its creator');
is($run->{request_id}, 'req_1', '... request_id');
is($run->{task_id}, 'task_1', '... task_id');
like($run->{created_at}, qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/, '... created_at');
ok(!defined $run->{started_at} && !defined $run->{finished_at}, '... not started');
ok(!defined $run->{result} && !defined $run->{error}, '... no result, no error');

my $done = wait_for(sub {
    my (undef, $r) = api(GET => "$runs/$run->{id}", token => $tok);
    return $r && $r->{status} =~ /^(?:succeeded|failed|cancelled)$/ ? $r : undef;
}, timeout => 30);
ok($done, 'the supervisor took the run') or BAIL_OUT('no supervisor');
is($done->{status}, 'failed', '... and failed it');
is($done->{error}{code}, 'no_provider', '... with no_provider');
like($done->{error}{message}, qr/default model provider/, '... saying why');
ok($done->{started_at} && $done->{finished_at}, '... started and finished');
ok(!defined $done->{result}, '... no result');

my @events = psql("SELECT kind, data::text FROM events WHERE run_id = '$run->{id}' ORDER BY id");
my @status = map { json()->decode($_->[1])->{status} } grep { $_->[0] eq 'run.status' } @events;
is_deeply(\@status, [qw(queued running failed)], 'run.status events: queued, running, failed');
my ($last) = grep { $_->[0] eq 'run.status' } reverse @events;
is_deeply(json()->decode($last->[1]),
          { run_id => $run->{id}, status => 'failed',
            error => { code => 'no_provider', message => $done->{error}{message} } },
          '... the last with its error');

# The log says the same, line by line, and every line has its event.
my ($ls, undef, $lres) = api(GET => "/api/orgs/$org/runs/$run->{id}/logs", token => $tok);
is($ls, 200, 'the log');
is($lres->header('Content-Type'), 'text/plain; charset=utf-8', '... plain text');
my $log = $lres->content;
like($log, qr/^\[mod_svc\] run \Q$run->{id}\E started on /m, '... says where it ran');
like($log, qr/no default model provider/, '... and why it failed');
is($lres->header('X-Next-Offset'), length($log), '... X-Next-Offset is its length');
is($lres->header('X-Run-Status'), 'failed', '... X-Run-Status');
my @lines = map { json()->decode($_->[1]) } grep { $_->[0] eq 'run.log' } @events;
is(join('', map { "$_->{line}\n" } @lines), $log, 'the run.log events carry the log');
is_deeply([ map { $_->{offset} } @lines ],
          [ do { my $o = 0; map { my $x = $o; $o += length($_->{line}) + 1; $x } @lines } ],
          '... each with its byte offset');
my $from = $lines[1]{offset};
my (undef, undef, $tail) = api(GET => "/api/orgs/$org/runs/$run->{id}/logs?offset=$from",
                               token => $tok);
is($tail->content, substr($log, $from), '?offset= gives the rest');
(undef, undef, $tail) = api(GET => "/api/orgs/$org/runs/$run->{id}/logs?offset=3",
                            token => $tok);
is($tail->content, substr($log, 3), '... from any byte');
(undef, undef, $tail) = api(GET => "/api/orgs/$org/runs/$run->{id}/logs?offset=999999",
                            token => $tok);
is($tail->content, '', '... and nothing past the end');
is($tail->header('X-Next-Offset'), length($log),
   '... where X-Next-Offset is the log\'s end, not the offset asked for');
(undef, undef, $tail) = api(GET => "/api/orgs/$org/runs/$run->{id}/logs?offset="
                                   . (length($log) + 1), token => $tok);
is($tail->header('X-Next-Offset'), length($log), '... one byte past the end too');
(undef, undef, $tail) = api(GET => "/api/orgs/$org/runs/$run->{id}/logs?offset=9223372036854775807",
                            token => $tok);
is($tail->code, 200, '... and the largest offset');
is($tail->header('X-Next-Offset'), length($log), '... the same');
my ($bad) = api(GET => "/api/orgs/$org/runs/$run->{id}/logs?offset=-1", token => $tok);
is($bad, 400, 'a negative offset is refused');

my ($as, $ap) = api(GET => "/api/orgs/$org/runs/$run->{id}/artifact", token => $tok);
is($as, 404, 'a failed run has no artifact');
is($ap->{code}, 'not_found', '... not_found');

my ($cs, $cp) = api(POST => "$runs/$run->{id}/cancel", token => $tok);
is($cs, 409, 'a finished run cannot be cancelled');
is($cp->{code}, 'invalid_status', '... invalid_status');

# --- Idempotency-Key -------------------------------------------------------------------
{
    my $key = uniq('key');
    my %body = (instructions => 'Idempotent');
    my ($s1, $r1) = api(POST => $runs, token => $tok, json => \%body,
                        headers => { 'Idempotency-Key' => $key });
    is($s1, 201, 'a run with an Idempotency-Key');
    my ($s2, $r2, $res2) = api(POST => $runs, token => $tok, json => \%body,
                               headers => { 'Idempotency-Key' => $key });
    is($s2, 200, 'the same request again: 200');
    is($r2->{id}, $r1->{id}, '... the same run');
    is($res2->header('Idempotent-Replayed'), 'true', '... Idempotent-Replayed');
    my ($s3, $p3) = api(POST => $runs, token => $tok, json => { instructions => 'Other' },
                        headers => { 'Idempotency-Key' => $key });
    is($s3, 409, 'the same key with another body: 409');
    is($p3->{code}, 'idempotency_conflict', '... idempotency_conflict');
    is(psql_value("SELECT count(*) FROM runs WHERE instructions = 'Idempotent' "
                  . "AND project_id = (SELECT id FROM projects WHERE slug = '$proj')"), 1,
       'one run was made');
    # Older than 24 hours: the key is free again.
    psql("UPDATE run_idempotency SET created_at = now() - interval '25 hours' "
         . "WHERE key = '$key'");
    my ($s4, $r4) = api(POST => $runs, token => $tok, json => \%body,
                        headers => { 'Idempotency-Key' => $key });
    is($s4, 201, 'after 24 hours the key makes a new run');
    isnt($r4->{id}, $r1->{id}, '... a different one');

    # Two at once with one key: one run.
    my $k2 = uniq('key');
    my @r = race(map { my $t = $tok; sub {
        my ($s, $r) = api(POST => $runs, token => $t, json => { instructions => 'Race' },
                          headers => { 'Idempotency-Key' => $k2 });
        return ($s, $r->{id});
    } } 1 .. 4);
    my %ids = map { $_->[1] => 1 } @r;
    is(scalar keys %ids, 1, 'four simultaneous requests with one key: one run');
    is(scalar(grep { $_->[0] == 201 } @r), 1, '... one 201');
    is(scalar(grep { $_->[0] == 200 } @r), 3, '... three 200');
}

# --- lists ----------------------------------------------------------------------------
{
    my ($ls2, $list) = api(GET => $runs, token => $tok);
    is($ls2, 200, 'the list');
    ok(@{ $list->{data} } >= 4, '... has the runs');
    is($list->{data}[0]{instructions}, 'Race', '... newest first');
    my $n = wait_for(sub {
        my (undef, $l) = api(GET => "$runs?status=queued", token => $tok);
        return @{ $l->{data} } == 0;
    }, timeout => 30);
    ok($n, 'the supervisor takes every queued run');
    my (undef, $failed) = api(GET => "$runs?status=failed&limit=2", token => $tok);
    is(scalar @{ $failed->{data} }, 2, '?status=failed&limit=2: two');
    ok($failed->{next_cursor}, '... and a cursor');
    ok(!grep({ $_->{status} ne 'failed' } @{ $failed->{data} }), '... all failed');
    my ($bs) = api(GET => "$runs?status=finished", token => $tok);
    is($bs, 400, 'an unknown status is refused');
}

# --- another org's runs --------------------------------------------------------
{
    my $other = new_user('runs-other');
    my $oorg  = new_org($other, prefix => 'runs-other');
    my $otok  = new_token($other, scope => 'admin');
    my ($os) = api(POST => "/api/orgs/$oorg/projects", token => $otok,
                   json => { slug => $proj, name => 'Same slug' });
    is($os, 201, 'another org, a project with the same slug');
    for my $path ("/api/orgs/$oorg/projects/$proj/runs/$run->{id}",
                  "/api/orgs/$oorg/runs/$run->{id}/logs",
                  "/api/orgs/$oorg/runs/$run->{id}/artifact",
                  "/api/orgs/$oorg/projects/$proj/runs/$run->{id}/events") {
        my ($xs, $xp) = api(GET => $path, token => $otok);
        is($xs, 404, "another org's run through its own org: $path");
    }
    my ($xs) = api(POST => "/api/orgs/$oorg/projects/$proj/runs/$run->{id}/cancel",
                   token => $otok);
    is($xs, 404, '... and cancel');
}

# --- an archived project takes no runs ------------------------------------------
{
    my ($ps) = api(PATCH => "/api/orgs/$org/projects/$proj", token => $tok,
                   json => { archived => JSON::PP::true() });
    is($ps, 200, 'project archived');
    my ($s5, $p5) = api(POST => $runs, token => $tok, json => { instructions => 'No' });
    is($s5, 409, 'an archived project takes no runs');
    is($p5->{code}, 'project_archived', '... project_archived');
}

done_testing();
