# Idempotency-Key on deployment creation (sql/026): the same request again
# answers the deployment the first made (200, Idempotent-Replayed), another
# request with the key 409 idempotency_conflict, simultaneous requests with
# one key make one deployment, a bad key 400 changing nothing, a key older
# than 24 hours free again; and the sweep removes the expired keys of runs,
# requests and deployments alike.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;
use SvcDeploy;

my $owner = new_user('idem-owner');
my $org = new_org($owner, prefix => 'idem');
my $tok = new_token($owner, scope => 'admin');
my $proj = new_project($org, $tok, 'Keyed');
my $deps = "/api/orgs/$org/deployments";

my ($st, $t) = api(POST => "/api/orgs/$org/deploy-targets", token => $tok,
                   json => { name => 'keyed-1' });
is($st, 201, 'a target');
my ($bundle, $commit) = git_bundle('Procfile' => "web: python3 -m http.server \$PORT\n");
my $run = run_fixture($org, $proj, bundle => $bundle, commit => $commit);
my $run2 = run_fixture($org, $proj, bundle => $bundle, commit => $commit);
my %body = (project => $proj, target_id => $t->{id}, run_id => $run);
my $count = sub {
    psql_value("SELECT count(*) FROM deployments WHERE org_id = '" . org_id_of($org) . "'");
};

# --- a bad key changes nothing ---------------------------------------------------------
my $before = db_digest();
($st, my $p) = api(POST => $deps, token => $tok, json => \%body,
                   headers => { 'Idempotency-Key' => "bad\x01key" });
is($st, 400, 'an Idempotency-Key with control characters: 400');
is_deeply(db_digest(), $before, '... and nothing changed');
($st, $p) = api(POST => $deps, token => $tok, json => \%body,
                headers => { 'Idempotency-Key' => 'k' x 256 });
is($st, 400, 'a key of 256 characters: 400');

# --- the same request twice: one deployment ---------------------------------------------
my $key = uniq('dkey');
($st, my $d1) = api(POST => $deps, token => $tok, json => \%body,
                    headers => { 'Idempotency-Key' => $key });
is($st, 201, 'a deployment with an Idempotency-Key') or diag(explain($d1));
like($d1->{id}, qr/^dep_/, '... made');
($st, my $d2, my $res) = api(POST => $deps, token => $tok, json => \%body,
                             headers => { 'Idempotency-Key' => $key });
is($st, 200, 'the same request again: 200');
is($d2->{id}, $d1->{id}, '... the same deployment');
is($res->header('Idempotent-Replayed'), 'true', '... Idempotent-Replayed: true');
is($count->(), 1, 'one deployment was made');
is(psql_value("SELECT count(*) FROM audit_log WHERE action = 'deployment.created' "
              . "AND target_id = '$d1->{id}'"), 1, '... audited once');

# --- another request with the key: 409 ---------------------------------------------------
$before = db_digest();
($st, $p) = api(POST => $deps, token => $tok, json => { %body, run_id => $run2 },
                headers => { 'Idempotency-Key' => $key });
is($st, 409, 'the same key with another body: 409');
is($p->{code}, 'idempotency_conflict', '... idempotency_conflict');
is_deeply(db_digest(), $before, '... and nothing changed');

# --- without a key, each request makes one ------------------------------------------------
($st, my $d3) = api(POST => $deps, token => $tok, json => \%body);
is($st, 201, 'without a key: a new deployment');
isnt($d3->{id}, $d1->{id}, '... another one');

# --- simultaneous requests with one key: one deployment ------------------------------------
my $k2 = uniq('dkey');
my $n0 = $count->();
my @r = race(map { my $tk = $tok; sub {
    my ($s, $r) = api(POST => $deps, token => $tk, json => { %body, run_id => $run2 },
                      headers => { 'Idempotency-Key' => $k2 });
    return ($s, $r->{id});
} } 1 .. 4);
my %ids = map { $_->[1] => 1 } grep { defined $_->[1] } @r;
is(scalar keys %ids, 1, 'four simultaneous requests with one key: one deployment');
is(scalar(grep { $_->[0] == 201 } @r), 1, '... one 201');
is(scalar(grep { $_->[0] == 200 } @r), 3, '... three 200');
is($count->(), $n0 + 1, '... one row more');

# --- after 24 hours the key is free again ---------------------------------------------------
psql("UPDATE deployment_idempotency SET created_at = now() - interval '25 hours' "
     . "WHERE key = '$key'");
($st, my $d4) = api(POST => $deps, token => $tok, json => \%body,
                    headers => { 'Idempotency-Key' => $key });
is($st, 201, 'after 24 hours the key makes a new deployment');
isnt($d4->{id}, $d1->{id}, '... a different one');

# --- the sweep: expired keys of every kind go, fresh ones stay -----------------------------
my ($rs, $rr) = api(POST => "/api/orgs/$org/projects/$proj/runs", token => $tok,
                    json => { instructions => 'Keyed run' },
                    headers => { 'Idempotency-Key' => uniq('rkey') });
is($rs, 201, 'a run with a key');
my ($qs, $qr) = api(POST => "/api/orgs/$org/requests", token => $tok,
                    json => { project => $proj, kind => 'build', title => 'Keyed',
                              body => 'A request with a key.' },
                    headers => { 'Idempotency-Key' => uniq('qkey') });
is($qs, 201, 'a request with a key') or diag(explain($qr));
my $org_id = org_id_of($org);
for my $tbl (qw(run_idempotency request_idempotency deployment_idempotency)) {
    psql("UPDATE $tbl SET created_at = now() - interval '25 hours' WHERE org_id = '$org_id'");
}
($st, my $d5) = api(POST => $deps, token => $tok, json => { %body, run_id => $run2 },
                    headers => { 'Idempotency-Key' => uniq('dkey') });
is($st, 201, 'a fresh key');
my $swept = psql_value('SELECT svc_idempotency_sweep()');
cmp_ok($swept, '>=', 4, 'the sweep removed the expired keys') or diag($swept);
for my $tbl (qw(run_idempotency request_idempotency)) {
    is(psql_value("SELECT count(*) FROM $tbl WHERE org_id = '$org_id'"), 0,
       "... of $tbl");
}
is(psql_value("SELECT count(*) FROM deployment_idempotency WHERE org_id = '$org_id'"), 1,
   '... and kept the fresh deployment key');

done_testing();
