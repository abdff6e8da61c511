# Bad input to the pipeline's routes (bad input gets a 4xx and changes
# nothing: docs/api/conventions.md): every body,
# query and header a client could get wrong is a 4xx problem document
# naming what is wrong, never a 5xx, and changes nothing in the database
# (the digest of every table but the audit log's and the rate windows',
# before and after, including the event log).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $owner = new_user('bad-owner');
my $org   = new_org($owner, prefix => 'bad');
my $tok   = new_token($owner, scope => 'admin');
my $proj = new_project($org, $tok, 'Bad input');
my $req = new_request($org, $tok, project => $proj);
my ($fs, $imp) = api(POST => "/api/orgs/$org/projects/$proj/improvements", token => $tok,
                     json => { kind => 'bug', title => 'Broken', body => 'It is.' });
is($fs, 201, 'an improvement');

my $R = "/api/orgs/$org/requests";
my $I = "/api/orgs/$org/projects/$proj/improvements";
my $long = 'x' x 201;
my @cases = (
    # [ name, method, path, json or { -raw => bytes }, status, code, field, headers ]
    [ 'create: no body', POST => $R, undef, 400, undef ],
    [ 'create: not an object', POST => $R, [ 1, 2 ], 400, undef ],
    [ 'create: a bare string', POST => $R, { -raw => '"build"' }, 400, undef ],
    [ 'create: invalid JSON', POST => $R, { -raw => '{"project":' }, 400, 'invalid_json' ],
    [ 'create: duplicate keys', POST => $R,
      { -raw => qq({"project":"$proj","kind":"build","title":"a","title":"b","body":""}) },
      400, 'invalid_json' ],
    [ 'create: no project', POST => $R, { kind => 'build', title => 't', body => '' },
      400, 'validation_failed', 'project' ],
    [ 'create: the project a number', POST => $R,
      { project => 7, kind => 'build', title => 't', body => '' }, 400, 'validation_failed',
      'project' ],
    [ 'create: an unknown kind', POST => $R,
      { project => $proj, kind => 'deploy', title => 't', body => '' }, 400, 'validation_failed',
      'kind' ],
    [ 'create: the kind null', POST => $R,
      { project => $proj, kind => undef, title => 't', body => '' }, 400, 'validation_failed',
      'kind' ],
    [ 'create: an empty title', POST => $R,
      { project => $proj, kind => 'build', title => '', body => '' }, 400, 'validation_failed',
      'title' ],
    [ 'create: a title of 201 characters', POST => $R,
      { project => $proj, kind => 'build', title => $long, body => '' }, 400,
      'validation_failed', 'title' ],
    [ 'create: the title an object', POST => $R,
      { project => $proj, kind => 'build', title => { a => 1 }, body => '' }, 400,
      'validation_failed', 'title' ],
    [ 'create: a body over 65536 characters', POST => $R,
      { project => $proj, kind => 'build', title => 't', body => 'b' x 65537 }, 400,
      'validation_failed', 'body' ],
    [ 'create: a stage given', POST => $R,
      { project => $proj, kind => 'build', title => 't', body => '', stage => 'done' }, 400,
      'validation_failed', 'stage' ],
    [ 'create: a malformed project slug', POST => $R,
      { project => 'Not A Slug', kind => 'build', title => 't', body => '' }, 400,
      'validation_failed', 'project' ],
    [ 'create: an Idempotency-Key too long', POST => $R,
      { project => $proj, kind => 'build', title => 't', body => '' }, 400, undef, undef,
      { 'Idempotency-Key' => 'k' x 256 } ],
    [ 'create: an empty Idempotency-Key', POST => $R,
      { project => $proj, kind => 'build', title => 't', body => '' }, 400, undef, undef,
      { 'Idempotency-Key' => '' } ],
    [ 'create: another content type', POST => $R,
      { -raw => qq({"project":"$proj","kind":"build","title":"t","body":""}),
        -type => 'text/plain' }, 415, 'unsupported_media_type' ],
    [ 'update: the title a number', PATCH => "$R/$req->{id}", { title => 5 }, 400,
      'validation_failed', 'title' ],
    [ 'update: the body null', PATCH => "$R/$req->{id}", { body => undef }, 400,
      'validation_failed', 'body' ],
    [ 'update: the status', PATCH => "$R/$req->{id}", { status => 'done' }, 400,
      'validation_failed', 'status' ],
    [ 'update: the product', PATCH => "$R/$req->{id}", { product_id => 'prd_x' }, 400,
      'validation_failed', 'product_id' ],
    [ 'update: a malformed id', PATCH => "$R/rqs_!", { title => 'x' }, 404, 'not_found' ],
    [ 'update: a run id for a request id', PATCH => "$R/run_" . ('a' x 22), { title => 'x' },
      404, 'not_found' ],
    [ 'advance: a body', POST => "$R/$req->{id}/advance", { stage => 'done' }, 400,
      'body_not_allowed' ],
    [ 'run-all: a body', POST => "$R/$req->{id}/build-tasks/run-all", { tasks => [] }, 400,
      'body_not_allowed' ],
    [ 'cancel: a body', POST => "$R/$req->{id}/cancel", { reason => 'x' }, 400,
      'body_not_allowed' ],
    [ 'list: a bad limit', GET => "$R?limit=0", undef, 400, undef ],
    [ 'list: an absurd limit', GET => "$R?limit=99999999999999999999", undef, 400, undef ],
    [ 'list: a forged cursor', GET => "$R?cursor=AAAA", undef, 400, undef ],
    [ 'file: an unknown kind', POST => $I, { kind => 'wish', title => 't', body => '' }, 400,
      'validation_failed', 'kind' ],
    [ 'file: no title', POST => $I, { kind => 'bug', body => '' }, 400, 'validation_failed',
      'title' ],
    [ 'file: a source given', POST => $I,
      { kind => 'bug', title => 't', body => '', source => 'incident' }, 400,
      'validation_failed', 'source' ],
    [ 'file: the status given', POST => $I,
      { kind => 'bug', title => 't', body => '', status => 'approved' }, 400,
      'validation_failed', 'status' ],
    [ 'improvements: an unknown status filter', GET => "$I?status=closed", undef, 400,
      undef, 'status' ],
    [ 'improvements: an unknown source filter', GET => "$I?source=robot", undef, 400,
      undef, 'source' ],
    [ 'reject: no reason', POST => "/api/orgs/$org/improvements/$imp->{id}/reject", {}, 400,
      'validation_failed', 'reason' ],
    [ 'reject: an empty reason', POST => "/api/orgs/$org/improvements/$imp->{id}/reject",
      { reason => '' }, 400, 'validation_failed', 'reason' ],
    [ 'reject: the reason a list', POST => "/api/orgs/$org/improvements/$imp->{id}/reject",
      { reason => [ 'no' ] }, 400, 'validation_failed', 'reason' ],
    [ 'approve: a body', POST => "/api/orgs/$org/improvements/$imp->{id}/approve",
      { request => 'x' }, 400, 'body_not_allowed' ],
    [ 'approve: an unknown improvement', POST => "/api/orgs/$org/improvements/imp_"
      . ('z' x 22) . '/approve', undef, 404, 'not_found' ],
);

my $before = db_digest();
for my $c (@cases) {
    my ($name, $method, $path, $body, $want, $code, $field, $headers) = @$c;
    my %opt = (token => $tok, headers => { %{ $headers // {} } });
    if (ref $body eq 'HASH' && exists $body->{-raw}) {
        $opt{raw} = $body->{-raw};
        $opt{headers}{'Content-Type'} = $body->{-type} // 'application/json';
    }
    elsif (defined $body) {
        $opt{json} = $body;
    }
    my ($s, $p, $res) = api($method => $path, %opt);
    is($s, $want, "$name: $want");
    like($res->header('Content-Type') // '', qr{^application/problem\+json}, '... a problem document');
    ok($p && $p->{code} && $p->{detail}, '... with a code and a detail') or diag(explain($p));
    is($p->{code}, $code, "... $code") if defined $code;
    ok((grep { ($_->{field} // '') eq $field } @{ $p->{errors} // [] }), "... naming $field")
        or diag(explain($p)) if defined $field;
}
is_deeply(db_digest(), $before, 'nothing changed in the database');
my (undef, $now) = api(GET => "$R/$req->{id}", token => $tok);
is_deeply([ @$now{qw(stage status title)} ], [ 'intake', 'active', $req->{title} ],
          'the request is as it was');

done_testing();
