# The build cost estimate's prices (docs/api/pipeline.md): a model no
# price is known for gives `cost: null` and a `basis` that says so (and how
# to set one), before and after the runs; a model priced by SvcModelPrice
# (t/conf/extra.conf.in: house-priced-1 at 3 and 9 USD per million tokens)
# is priced by it, and the lifecycle prices the runs' actual usage the same
# way.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $files = json()->encode({ summary => 'Part', files => [ { path => 'p.txt',
                                                             content => "p\n" } ] });

# A request of a fresh org whose default provider uses `model`, in build
# with one task.
sub request_in_build {
    my ($model) = @_;
    my $owner = new_user('est-owner');
    my $org   = new_org($owner, prefix => 'est');
    my $tok   = new_token($owner, scope => 'admin');
    my $proj = new_project($org, $tok, 'Estimates');
    my $llm = new_llm(flavor => 'openai', models => [ $model ]);
    new_provider($org, $tok, $llm, model => $model, tools => 'off');
    $llm->control(reply => json()->encode({ body => "# Plan\n\n1. Part.\n" }));
    my $r = new_request($org, $tok, project => $proj, title => 'Priced');
    my ($as, $x) = advance($org, $tok, $r->{id});
    die "advance: $as " . json()->encode($x // {}) . "\n" unless $as == 200;
    new_document($org, $x->{product_id}, $tok, kind => 'section', title => 'Part',
                 body => "# Part\n\n" . ("Do this and that. " x 50) . "\n");
    approve_documents($org, $tok, $x->{product_id});
    my ($st) = advance($org, $tok, $r->{id}, 'advance-to-build');
    die "advance-to-build: $st\n" unless $st == 200;
    return ($org, $tok, $r->{id}, $llm);
}

# --- an unknown model ----------------------------------------------------------------------
my ($org, $tok, $id, $llm) = request_in_build('house-model-7');
my ($st, $e) = api(GET => "/api/orgs/$org/requests/$id/build-cost-estimate", token => $tok);
is($st, 200, 'the estimate for a model no price is known for');
is($e->{model}, 'house-model-7', '... names the model');
is(scalar @{ $e->{tasks} }, 1, '... a line for the task');
ok($e->{tasks}[0]{input_tokens} > 0 && $e->{tasks}[0]{output_tokens} > 0,
   '... with its tokens estimated all the same');
ok(exists $e->{tasks}[0]{cost} && !defined $e->{tasks}[0]{cost}, '... and cost null');
ok(exists $e->{total} && !defined $e->{total}, '... the total null');
like($e->{basis}, qr/No price is known for model house-model-7/, '... the basis says so');
like($e->{basis}, qr/SvcModelPrice house-model-7 /, '... and how an operator sets one');

$llm->control(reply => $files);
($st) = advance($org, $tok, $id, 'build-tasks/run-all');
is($st, 200, 'run-all');
my $l = wait_request($org, $tok, $id, sub { $_[0]{request}{stage} eq 'integration' });
ok($l, 'the run succeeds') or diag(explain(lifecycle($org, $tok, $id)));
my $u = $l->{build_tasks}[0]{usage};
ok($u->{calls} >= 1 && $u->{input_tokens} > 0, 'the task\'s actual usage is shown');
ok(exists $u->{cost} && !defined $u->{cost}, '... unpriced: cost null');
is($l->{build_tasks}[0]{estimate}{input_tokens}, $e->{tasks}[0]{input_tokens},
   '... next to its estimate');
ok(!defined $l->{usage}{estimate}, 'the request\'s estimated total is null too');

# --- a model priced by SvcModelPrice ------------------------------------------------------------
($org, $tok, $id, $llm) = request_in_build('house-priced-1');
($st, $e) = api(GET => "/api/orgs/$org/requests/$id/build-cost-estimate", token => $tok);
is($st, 200, 'the estimate for a model priced by SvcModelPrice');
my $t = $e->{tasks}[0];
my $want = ($t->{input_tokens} * 3 + $t->{output_tokens} * 9) / 1e6;
ok(abs($t->{cost} - $want) < 1e-6, '... at the configured 3 and 9 USD per million tokens')
    or diag("cost $t->{cost}, want $want");
ok(abs($e->{total} - $t->{cost}) < 1e-6, '... the total');
like($e->{basis}, qr/house-priced-1 at 3\.00 USD per million input tokens and 9\.00 per million output/,
     '... the basis gives the price');
like($e->{basis}, qr/SvcModelPrice entry house-priced-1/, '... and where it comes from');

$llm->control(reply => $files);
($st) = advance($org, $tok, $id, 'build-tasks/run-all');
is($st, 200, 'run-all');
$l = wait_request($org, $tok, $id, sub { $_[0]{request}{stage} eq 'integration' });
ok($l, 'the run succeeds') or diag(explain(lifecycle($org, $tok, $id)));
$u = $l->{build_tasks}[0]{usage};
my $spent = ($u->{input_tokens} * 3 + $u->{output_tokens} * 9) / 1e6;
ok($u->{input_tokens} > 0 && abs($u->{cost} - $spent) < 1e-6,
   'the actual usage is priced the same way') or diag(explain($u));

done_testing();
