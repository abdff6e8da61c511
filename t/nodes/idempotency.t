# Two nodes, one idempotency record (issue 25): a run started through node A
# with an Idempotency-Key, replayed through node B, answers the same run
# (200, Idempotent-Replayed); the same key with another body is a 409 on B
# too; simultaneous requests with one key, half to each node, make one run.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;
use SvcNode;

my $owner = new_user('nodes-idem');
my $org   = new_org($owner, prefix => 'nodes-idem');
my $tok   = new_token($owner, scope => 'write');
my ($st) = api(POST => "/api/orgs/$org/projects", token => $tok,
               json => { slug => 'app', name => 'App' });
is($st, 201, 'project');
my $runs = "/api/orgs/$org/projects/app/runs";
my $pid = psql_value("SELECT id FROM projects WHERE slug = 'app' AND org_id = "
                     . SvcTest::sql_quote(org_id_of($org)));

my $b = SvcNode->start(name => 'b');

sub count_runs {
    my $text = shift;
    return psql_value("SELECT count(*) FROM runs WHERE project_id = " . SvcTest::sql_quote($pid)
                      . ' AND instructions = ' . SvcTest::sql_quote($text));
}

{
    my $key = uniq('key');
    my %body = (instructions => 'Idempotent across nodes');
    my ($s1, $r1) = api(POST => $runs, token => $tok, json => \%body,
                        headers => { 'Idempotency-Key' => $key });
    is($s1, 201, 'a run started through node A with an Idempotency-Key');
    my ($s2, $r2, $res2) = api(POST => $runs, token => $tok, json => \%body, base => $b->url,
                               headers => { 'Idempotency-Key' => $key });
    is($s2, 200, 'the same request through node B: 200');
    is($r2 && $r2->{id}, $r1->{id}, '... the same run');
    is($res2->header('Idempotent-Replayed'), 'true', '... Idempotent-Replayed');
    my ($s3, $p3) = api(POST => $runs, token => $tok, base => $b->url,
                        json => { instructions => 'Something else' },
                        headers => { 'Idempotency-Key' => $key });
    is($s3, 409, 'the same key with another body through node B: 409');
    is($p3 && $p3->{code}, 'idempotency_conflict', '... idempotency_conflict');
    is(count_runs('Idempotent across nodes'), 1, 'one run was made');
    is(count_runs('Something else'), 0, '... and none of the conflicting request');
}

# Simultaneous requests with one key, half to each node.
{
    my $key = uniq('key');
    my $burl = $b->url;
    my @r = race(map { my $i = $_; sub {
        my ($s, $r) = api(POST => $runs, token => $tok, json => { instructions => 'Race' },
                          headers => { 'Idempotency-Key' => $key },
                          $i % 2 ? (base => $burl) : ());
        return ($s, $r && $r->{id});
    } } 1 .. 6);
    my %ids = map { ($_->[1] // 'none') => 1 } @r;
    is(scalar keys %ids, 1, 'six simultaneous requests with one key on both nodes: one run')
        or diag(explain(\@r));
    is(scalar(grep { $_->[0] == 201 } @r), 1, '... one 201');
    is(scalar(grep { $_->[0] == 200 } @r), 5, '... five 200');
    is(count_runs('Race'), 1, '... one run in the database');
}

$b->stop;
runs_settle();

done_testing();
