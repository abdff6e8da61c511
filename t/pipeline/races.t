# Simultaneous changes of one request: two advances move it one stage,
# not two (with and without the model's call in between); two run-alls
# start one run per task, not two; two decisions of one improvement make
# one request. "Simultaneous" is made exact where a lock decides: both
# calls are made to wait for the request's row (lock_hold) and released
# together.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $owner = new_user('race-owner');
my $org   = new_org($owner, prefix => 'race');
my $tok   = new_token($owner, scope => 'admin');
my $proj = new_project($org, $tok, 'Races');
my $st;

sub both { return race(map { my $a = $_; sub { (advance($org, $tok, @$a))[0] } } @_) }

sub statuses { [ sort map { $_->[0] } @_ ] }

sub stage_entries {
    my ($id, $stage) = @_;
    return psql_value("SELECT count(*) FROM request_stages WHERE request_id = '$id' "
                      . "AND stage = '$stage' AND via <> 'pause' AND via <> 'resume'");
}

# --- two advances from planning, held at the request's row -------------------------------------
my $r = new_request($org, $tok, project => $proj);
my (undef, $x) = advance($org, $tok, $r->{id});
new_document($org, $x->{product_id}, $tok, kind => 'section');
# Everything approved: a second move (review -> build) would be allowed.
approve_documents($org, $tok, $x->{product_id});
my $h = lock_hold("SELECT 1 FROM requests WHERE id = '$r->{id}' FOR UPDATE", 2);
my @res = both([ $r->{id} ], [ $r->{id} ]);
lock_release($h);
is_deeply(statuses(@res), [ 200, 409 ], 'two advances at once: one moves it, one is refused');
my (undef, $now) = api(GET => "/api/orgs/$org/requests/$r->{id}", token => $tok);
is($now->{stage}, 'review', '... one stage on: review, not build');
is(stage_entries($r->{id}, 'review'), 1, '... entered once');

# --- the same from intake, where each first asks the model -------------------------------------
my $llm = new_llm(flavor => 'openai');
new_provider($org, $tok, $llm, tools => 'off');
$llm->control(reply => json()->encode({ body => "# Plan\n\n1. One part.\n" }));
my $r2 = new_request($org, $tok, project => $proj);
@res = both([ $r2->{id} ], [ $r2->{id} ]);
is_deeply(statuses(@res), [ 200, 409 ], 'two advances from intake: one 200, one 409');
(undef, $now) = api(GET => "/api/orgs/$org/requests/$r2->{id}", token => $tok);
is($now->{stage}, 'planning', '... planning');
is(psql_value("SELECT count(*) FROM products WHERE project_id = "
              . "(SELECT project_id FROM requests WHERE id = '$r2->{id}') "
              . "AND id = '$now->{product_id}'"), 1, '... with its product');
is(psql_value("SELECT count(*) FROM products WHERE created_at >= (SELECT created_at FROM "
              . "requests WHERE id = '$r2->{id}') AND project_id = (SELECT project_id FROM "
              . "requests WHERE id = '$r2->{id}')"), 1, '... and only one product was made');
is(stage_entries($r2->{id}, 'planning'), 1, '... planning entered once');
is(psql_value("SELECT count(*) FROM model_usage WHERE subject_id = '$r2->{id}'"), 1,
   '... and one model call was paid for');

# --- five advances from intake while the model thinks (issue 17) --------------------------------
# One claims the request before asking the model; the others are refused at
# once instead of paying for an answer that would be thrown away.
{
    my $title = 'Claimed ' . uniq('c');
    my $r4 = new_request($org, $tok, project => $proj, title => $title);
    $llm->control(mode => 'slow', delay_ms => 2500,
                  reply => json()->encode({ body => "# Plan\n\n1. One part.\n" }));
    my $asked = sub { scalar grep { $_->{path} eq '/v1/chat/completions'
                                    && index(json()->encode($_->{body}), $title) >= 0 }
                      @{ $llm->requests } };
    @res = race(map { sub { my ($s, $j) = advance($org, $tok, $r4->{id});
                            ($s, $s == 409 ? $j->{code} . ' ' . $j->{detail} : '') } } 1 .. 5);
    is_deeply(statuses(@res), [ 200, 409, 409, 409, 409 ],
              'five advances from intake at once: one 200, four 409');
    is(scalar(grep { $_->[1] =~ /^conflict .*being advanced by another call/ } @res), 4,
       '... conflict, saying another call is advancing it');
    is($asked->(), 1, '... and the model was asked once (the fake saw one call)');
    is(psql_value("SELECT count(*) FROM model_usage WHERE subject_id = '$r4->{id}'"), 1,
       '... one call recorded');
    is(stage_entries($r4->{id}, 'planning'), 1, '... planning entered once');
    is(psql_value("SELECT count(*) FROM model_claims WHERE subject LIKE '%$r4->{id}'"), 0,
       '... and the claim was given back');
    # A failed call gives the claim back too: the next advance asks again.
    my $r5 = new_request($org, $tok, project => $proj);
    $llm->control(mode => 'server_error', times => 1);
    my ($s5) = advance($org, $tok, $r5->{id});
    is($s5, 502, 'a failed model call: 502');
    ($s5) = advance($org, $tok, $r5->{id});
    is($s5, 200, '... and the next advance is not refused by a claim left behind');
    # A claim whose holder died expires.
    my $r6 = new_request($org, $tok, project => $proj);
    psql("INSERT INTO model_claims (subject, org_id, token, expires_at) VALUES ("
         . "'request:' || (SELECT org_id FROM requests WHERE id = '$r6->{id}') || '/$r6->{id}', "
         . "(SELECT org_id FROM requests WHERE id = '$r6->{id}'), 'dead', now() + interval '1 hour')");
    my ($s6, $j6) = advance($org, $tok, $r6->{id});
    is($s6, 409, 'a claim held elsewhere: 409');
    psql("UPDATE model_claims SET expires_at = now() - interval '1 second' WHERE token = 'dead'");
    ($s6) = advance($org, $tok, $r6->{id});
    is($s6, 200, '... taken over once it expired');
    $llm->control(mode => 'ok');
}

# --- two run-alls at once -------------------------------------------------------------------
my $r3 = new_request($org, $tok, project => $proj);
(undef, $x) = advance($org, $tok, $r3->{id});
new_document($org, $x->{product_id}, $tok, kind => 'section', title => 'One');
new_document($org, $x->{product_id}, $tok, kind => 'section', title => 'Two');
approve_documents($org, $tok, $x->{product_id});
($st) = advance($org, $tok, $r3->{id}, 'advance-to-build');
is($st, 200, 'a request in build with two tasks');
# The model answers slowly, so the runs are still going when both calls end.
$llm->control(mode => 'slow', delay_ms => 3000,
              reply => json()->encode({ summary => 'Part', files => [ { path => 'p.txt',
                                                                         content => "p\n" } ] }));
$h = lock_hold("SELECT 1 FROM requests WHERE id = '$r3->{id}' FOR UPDATE", 2);
@res = race(map { sub {
    my ($s, $j) = advance($org, $tok, $r3->{id}, 'build-tasks/run-all');
    return ($s, scalar @{ $j->{started} // [] });
} } 1 .. 2);
lock_release($h);
is_deeply(statuses(@res), [ 200, 200 ], 'two run-alls at once: both answer');
is_deeply([ sort map { $_->[1] } @res ], [ 0, 2 ], '... one started both tasks, the other none');
is(psql_value("SELECT count(*) FROM runs WHERE request_id = '$r3->{id}'"), 2,
   '... two runs in all');
is(psql_value("SELECT count(DISTINCT task_id) FROM runs WHERE request_id = '$r3->{id}'"), 2,
   '... one per task');
my $l = wait_request($org, $tok, $r3->{id}, sub { $_[0]{request}{stage} eq 'integration' },
                     timeout => 120);
ok($l, 'the runs succeed and the request moves to integration');
$llm->control(mode => 'ok');

# --- two decisions of one improvement -----------------------------------------------------------
my ($fs, $imp) = api(POST => "/api/orgs/$org/projects/$proj/improvements", token => $tok,
                     json => { kind => 'bug', title => 'Race', body => 'Twice.' });
is($fs, 201, 'an improvement');
$h = lock_hold("SELECT 1 FROM improvements WHERE id = '$imp->{id}' FOR UPDATE", 2);
@res = race(sub { (api(POST => "/api/orgs/$org/improvements/$imp->{id}/approve", token => $tok))[0] },
            sub { (api(POST => "/api/orgs/$org/improvements/$imp->{id}/reject", token => $tok,
                       json => { reason => 'No.' }))[0] });
lock_release($h);
is_deeply(statuses(@res), [ 200, 409 ], 'approved and rejected at once: one decision');
my $decided = psql_value("SELECT status FROM improvements WHERE id = '$imp->{id}'");
is(psql_value("SELECT count(*) FROM requests r JOIN improvements i ON i.request_id = r.id "
              . "WHERE i.id = '$imp->{id}'"), $decided eq 'approved' ? 1 : 0,
   "... ($decided), with a request exactly when approved");

done_testing();
