# The organization's model at work on documents (issue 9): regeneration
# and proposed patches, end to end against the fake providers, and every
# way a provider fails (a refused key, 500, a timeout, garbage, an empty or
# unusable answer, a cut-off one): 502 provider_error with the provider's
# message, nothing written but the usage record, and no key in any answer.
use strict;
use warnings;
use utf8;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $owner  = new_user('ai-owner');
my $member = new_user('ai-member');
my $org    = new_org($owner, prefix => 'ai');
svcctl('org', 'add-member', $org, $member, '--role', 'member');
my $tok  = new_token($owner, scope => 'admin');
my $mtok = new_token($member, scope => 'write');
my $org_id = org_id_of($org);
my $proj = uniq('proj');
my ($st, $p) = api(POST => "/api/orgs/$org/projects", token => $tok,
                   json => { slug => $proj, name => 'AI project' });
my $prd = new_product($org, $proj, $tok, name => 'Shop');
my $toc = new_document($org, $prd->{id}, $tok, kind => 'toc', title => 'Contents',
                       body => "# Shop\n\n1. Cart\n2. Payments\n");
my $cart = new_document($org, $prd->{id}, $tok, title => 'Cart',
                        body => "# Cart\n\nThe cart holds items.\nIt has a total.\n");
my $pay = new_document($org, $prd->{id}, $tok, title => 'Payments',
                       body => "# Payments\n\nCards only, in SEK-PAYMENT-MARKER.\n");

my $oa = new_llm(flavor => 'openai');
my $an = new_llm(flavor => 'anthropic');
my @bodies;
sub call {
    my @r = api(@_);
    push @bodies, $r[2]->content;
    return @r;
}

# What must stay as it is when a call fails: documents, versions, patches.
sub written {
    return join '|', map { $_->[0] } psql(
        "SELECT (SELECT count(*) FROM doc_versions WHERE org_id = '$org_id') || ' ' || "
        . "(SELECT count(*) FROM doc_patches WHERE org_id = '$org_id') || ' ' || "
        . "(SELECT string_agg(current_version_id, ',' ORDER BY id) FROM documents "
        . "WHERE org_id = '$org_id')");
}
sub last_usage {
    my ($row) = psql("SELECT purpose, status, coalesce(error_code, ''), subject_id, model "
                     . "FROM model_usage WHERE org_id = '$org_id' ORDER BY id DESC LIMIT 1");
    return $row;
}
sub usage_count { psql_value("SELECT count(*) FROM model_usage WHERE org_id = '$org_id'") }

# --- no default provider ----------------------------------------------------------
my $before = written();
($st, $p) = call(POST => "/api/orgs/$org/documents/$cart->{id}/regenerate", token => $mtok,
                 json => {});
is($st, 409, 'regenerate without a default provider: 409');
is($p->{code}, 'no_provider', '... no_provider');
($st, $p) = call(POST => "/api/orgs/$org/documents/$cart->{id}/patches", token => $mtok,
                 json => { instructions => 'x' });
is($p->{code}, 'no_provider', 'a patch too');
is(written(), $before, '... nothing written');

my $op = new_provider($org, $tok, $oa);
my $ap = new_provider($org, $tok, $an);

# --- regenerate, OpenAI-compatible ---------------------------------------------------
my $new_cart = "# Cart\n\nThe cart holds items and shows a running total.\n\n## Limits\n\nAt most 100 items.\n";
$oa->control(replies => [ json()->encode({ body => $new_cart }) ]);
($st, $p) = call(POST => "/api/orgs/$org/documents/$cart->{id}/regenerate", token => $mtok,
                 json => { instructions => 'Mention the item limit (100).' });
is($st, 201, 'regenerate with the default provider') or diag(explain($p));
my $rv = $p;
is($rv->{number}, 2, '... a new version');
is($rv->{status}, 'draft', '... a draft');
is($rv->{source}, 'regenerate', '... from regeneration');
is($rv->{author}{kind}, 'ai', '... written by the model');
is($rv->{author}{model}, 'gpt-4o-mini', '... naming it');
is($rv->{author}{user_id}, user_id_of($member), '... for who asked');
is($rv->{base_version_id}, $cart->{current_version}{id}, '... based on the current version');
my (undef, undef, $res) = call(GET => "/api/orgs/$org/doc-versions/$rv->{id}/content",
                               token => $mtok);
is($res->content, $new_cart, '... its body is what the model wrote');
my $req = $oa->requests->[-1];
is($req->{path}, '/v1/chat/completions', 'the model was asked through chat completions');
is($req->{body}{response_format}{type}, 'json_object', '... in JSON mode');
is($req->{body}{messages}[0]{role}, 'system', '... with a system message');
my $asked = $req->{body}{messages}[1]{content};
like($asked, qr/Mention the item limit \(100\)\./, '... the instructions');
like($asked, qr/The cart holds items\.\nIt has a total\./, '... the current text');
like($asked, qr/SEK-PAYMENT-MARKER/, '... the other sections as context');
like($asked, qr/1\. Cart\n2\. Payments/, '... and the table of contents');
is_deeply(last_usage(), [ 'document.regenerate', 'ok', '', $cart->{id}, 'gpt-4o-mini' ],
          'the call is in the usage table');
ok(psql_value("SELECT input_tokens > 0 AND output_tokens > 0 FROM model_usage "
              . "WHERE org_id = '$org_id' ORDER BY id DESC LIMIT 1") eq 't', '... with tokens');

# --- regenerate, Anthropic (the JSON inside prose and a fence) ------------------------
($st) = call(POST => "/api/orgs/$org/providers/$ap->{id}/default", token => $tok);
my $new_pay = "# Payments\n\nCards and invoices.\n";
$an->control(replies => [ "Here is the document:\n```json\n"
                          . json()->encode({ body => $new_pay }) . "\n```\n" ]);
($st, $p) = call(POST => "/api/orgs/$org/documents/$pay->{id}/regenerate", token => $mtok,
                 json => {});
is($st, 201, 'regenerate with Anthropic as the default') or diag(explain($p));
is($p->{author}{model}, 'claude-sonnet-4-20250514', '... its model');
(undef, undef, $res) = call(GET => "/api/orgs/$org/doc-versions/$p->{id}/content", token => $tok);
is($res->content, $new_pay, '... the JSON was found in the prose');
$req = $an->requests->[-1];
is($req->{path}, '/v1/messages', '... through the Messages API');
like($req->{body}{system}, qr/one JSON object/, '... told to answer in JSON');
is($req->{body}{messages}[0]{role}, 'user', '... one user message');
($st) = call(POST => "/api/orgs/$org/providers/$op->{id}/default", token => $tok);

# --- failures: 502, nothing written, the call recorded ----------------------------------
my $short = vhost_url('llm_short_timeout');
my $small = vhost_url('docs_small');
my @cases = (
    [ 'a refused key (401)', sub { $oa->control(mode => 'unauthorized') },
      qr/refused the key \(401\)/, 'provider_refused' ],
    [ 'a 500', sub { $oa->control(mode => 'server_error') }, qr/answered 500/, 'provider_error' ],
    [ 'overloaded (503)', sub { $oa->control(mode => 'overloaded') }, qr/answered 503/,
      'provider_error' ],
    [ 'rate limited (429)', sub { $oa->control(mode => 'rate_limited') }, qr/429/,
      'provider_rate_limited' ],
    [ 'garbage', sub { $oa->control(mode => 'garbage') }, qr/not a chat completion/,
      'provider_error' ],
    [ 'an empty answer', sub { $oa->control(mode => 'empty') }, qr/JSON object/,
      'provider_error' ],
    [ 'a cut-off answer', sub { $oa->control(mode => 'truncated') }, qr/reached|connection|transfer|end/i,
      'provider_error' ],
    [ 'JSON without a body', sub { $oa->control(replies => [ '{"text": "hello"}' ]) },
      qr/no "body" string/, 'provider_error' ],
    [ 'a body that is JSON, not Markdown',
      sub { $oa->control(replies => [ json()->encode({ body => '{"a": 1}' }) ]) },
      qr/JSON, not Markdown/, 'provider_error' ],
    [ 'an empty body', sub { $oa->control(replies => [ '{"body": "  \n "}' ]) }, qr/empty/,
      'provider_error' ],
    [ 'control characters', sub { $oa->control(replies => [ '{"body": "a\u0007b"}' ]) },
      qr/control characters/, 'provider_error' ],
    [ 'a body over SvcDocumentLimit (4096 on this server)',
      sub { $oa->control(replies => [ json()->encode({ body => 'x' x 5000 }) ]) },
      qr/over SvcDocumentLimit/, 'provider_error', $small ],
    [ 'a timeout (SvcModelTimeout 3)', sub { $oa->control(mode => 'timeout', hang_seconds => 20) },
      qr/did not answer within 3 s/, 'provider_timeout', $short ],
    # Counts no model reaches would overflow the usage sums (issue 17).
    [ 'INT64_MAX input tokens',
      sub { $oa->control(usage => { input => 9223372036854775807, output => 0 },
                         replies => [ json()->encode({ body => "# Cart\n\nCounted.\n" }) ]) },
      qr/reported 9223372036854775807 input and 0 output tokens.*outside 0 to 100000000/,
      'provider_error' ],
    [ 'negative output tokens',
      sub { $oa->control(usage => { input => 10, output => -5 },
                         replies => [ json()->encode({ body => "# Cart\n\nCounted.\n" }) ]) },
      qr/reported 10 input and -5 output tokens/, 'provider_error' ],
    [ 'one token over the bound',
      sub { $oa->control(usage => { input => 1, output => 100000001 },
                         replies => [ json()->encode({ body => "# Cart\n\nCounted.\n" }) ]) },
      qr/outside 0 to 100000000/, 'provider_error' ],
);
for my $c (@cases) {
    my ($name, $setup, $detail, $code, $base) = @$c;
    $oa->reset;
    $setup->();
    my $n = usage_count();
    $before = written();
    ($st, $p) = call(POST => "/api/orgs/$org/documents/$cart->{id}/regenerate", token => $mtok,
                     json => {}, $base ? (base => $base) : ());
    is($st, 502, "regenerate, $name: 502");
    is($p->{code}, 'provider_error', '... provider_error');
    like($p->{detail}, $detail, '... saying what happened');
    is(written(), $before, '... nothing written');
    is(usage_count(), $n + 1, '... the call recorded');
    is(last_usage()->[1] . ' ' . last_usage()->[2], "error $code", "... as an error ($code)");
}
$oa->reset;
is(psql_value("SELECT count(*) FROM model_usage WHERE org_id = '$org_id' "
              . "AND (input_tokens > 100000000 OR output_tokens > 100000000)"), 0,
   'no absurd token count was recorded');
is(psql_value("SELECT sum(input_tokens) + sum(output_tokens) < 1000000000 FROM model_usage "
              . "WHERE org_id = '$org_id'"), 't', '... and the sums stay small');
{
    # At the bound itself, the answer is used and the counts kept.
    $oa->control(usage => { input => 100000000, output => 0 },
                 replies => [ json()->encode({ body => "# Shop\n\nAt the bound.\n" }) ]);
    ($st) = call(POST => "/api/orgs/$org/documents/$toc->{id}/regenerate", token => $mtok,
                 json => {});
    is($st, 201, 'a count at the bound (100000000): used');
    is(psql_value("SELECT input_tokens FROM model_usage WHERE org_id = '$org_id' "
                  . 'ORDER BY id DESC LIMIT 1'), 100000000, '... and recorded as reported');
    $oa->reset;
}

# Simultaneous regenerations of one document pay for one model call
# (issue 17): the first claims the document, the others are refused at once.
{
    $oa->control(mode => 'slow', delay_ms => 2500,
                 replies => [ json()->encode({ body => "# Payments\n\nOnce.\n" }) ]);
    my $n = usage_count();
    my $v = psql_value("SELECT count(*) FROM doc_versions WHERE document_id = '$pay->{id}'");
    my @r = race(map { sub { my ($x, $y) = api(POST => "/api/orgs/$org/documents/$pay->{id}/regenerate",
                                               token => $mtok, json => {});
                             ($x, $x == 409 ? "$y->{code} $y->{detail}" : '') } } 1 .. 4);
    is_deeply([ sort map { $_->[0] } @r ], [ 201, 409, 409, 409 ],
              'four regenerations at once: one 201, three 409');
    is(scalar(grep { $_->[1] =~ /^conflict .*being regenerated by another call/ } @r), 3,
       '... conflict, saying another call is at it');
    is(scalar(grep { $_->{path} eq '/v1/chat/completions' } @{ $oa->requests }), 1,
       '... the model was asked once (the fake saw one call)');
    is(usage_count(), $n + 1, '... one call recorded');
    is(psql_value("SELECT count(*) FROM doc_versions WHERE document_id = '$pay->{id}'"), $v + 1,
       '... one version written');
    is(psql_value("SELECT count(*) FROM model_claims WHERE subject LIKE '%$pay->{id}'"), 0,
       '... and the claim given back');
    # Proposed patches are not claimed: each proposal is kept.
    $oa->reset;
    $oa->control(mode => 'slow', delay_ms => 1500, replies => [
        json()->encode({ summary => 'One.', body => "# Payments\n\nOne.\n" }),
        json()->encode({ summary => 'Two.', body => "# Payments\n\nTwo.\n" }) ]);
    @r = race(map { sub { (api(POST => "/api/orgs/$org/documents/$pay->{id}/patches",
                               token => $mtok, json => { instructions => 'Shorter.' }))[0] } } 1 .. 2);
    is_deeply([ sort map { $_->[0] } @r ], [ 201, 201 ], 'two patches at once: both proposed');
    $oa->reset;
}

# A key shorter than 8 characters (a local server's placeholder) is never
# echoed either: OpenAI quotes a short refused key whole, and neither the
# answer nor the log line of the 502 may carry it (issue 17).
{
    my $short_key = 'Zq7vX2';
    my $sk = new_llm(flavor => 'openai', key => $short_key);
    my $sp = new_provider($org, $tok, $sk, name => 'short-key');
    ($st) = call(POST => "/api/orgs/$org/providers/$sp->{id}/default", token => $tok);
    $sk->control(mode => 'unauthorized');
    my $log_from = -s error_log_path();
    ($st, $p) = call(POST => "/api/orgs/$org/documents/$cart->{id}/regenerate", token => $mtok,
                     json => {});
    is($st, 502, 'a refused short key: 502');
    like($p->{detail}, qr/Incorrect API key provided: \[REDACTED\]/,
         '... the provider\'s message, the key redacted');
    unlike($p->{detail}, qr/\Q$short_key\E/, '... the short key not in the answer');
    my $logged = '';
    wait_for(sub {
        open my $fh, '<', error_log_path() or return 0;
        seek $fh, $log_from, 0;
        local $/;
        $logged = <$fh> // '';
        return $logged =~ /SVC0022/;
    }, timeout => 10);
    like($logged, qr/SVC0022.*REDACTED/, '... logged (SVC0022), redacted');
    unlike($logged, qr/\Q$short_key\E/, '... the short key not in the log');
    ($st, $p) = call(POST => "/api/orgs/$org/providers/$sp->{id}/test", token => $tok);
    is($p->{error_code}, 'provider_refused', 'the test call: provider_refused');
    unlike($p->{error}, qr/\Q$short_key\E/, '... its error without the short key');
    ($st) = call(POST => "/api/orgs/$org/providers/$op->{id}/default", token => $tok);
    ($st) = call(DELETE => "/api/orgs/$org/providers/$sp->{id}", token => $tok);
    $sk->stop;
}

# A long call holds no transaction (nor a pooled connection) while it waits.
{
    $oa->control(mode => 'slow', delay_ms => 2500,
                 replies => [ json()->encode({ body => "# Cart\n\nSlow but fine.\n" }) ]);
    my @r = race(
        sub { (api(POST => "/api/orgs/$org/documents/$pay->{id}/regenerate", token => $mtok,
                   json => {}))[0] },
        sub {
            select(undef, undef, undef, 1.2);
            psql_value("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                       . "AND state LIKE 'idle in transaction%'");
        });
    is($r[0][0], 201, 'a slow model: 201');
    is($r[1][0], 0, '... and while it thought, no transaction was open');
    $oa->reset;
}

# The document changed while the model was writing: 409, nothing of the model's written.
{
    my ($s, $d) = api(GET => "/api/orgs/$org/documents/$cart->{id}", token => $tok);
    $oa->control(mode => 'slow', delay_ms => 2500,
                 replies => [ json()->encode({ body => "# Cart\n\nToo late.\n" }) ]);
    my @r = race(
        sub { my ($x, $y) = api(POST => "/api/orgs/$org/documents/$cart->{id}/regenerate",
                                token => $mtok, json => {});
              ($x, $y->{code} // '') },
        sub { select(undef, undef, undef, 0.8);
              (api(POST => "/api/orgs/$org/documents/$cart->{id}/edit", token => $tok,
                   json => { body => "# Cart\n\nEdited meanwhile.\n",
                             base_version_id => $d->{current_version}{id} }))[0] });
    is_deeply($r[0], [ 409, 'conflict' ], 'the document changed during the call: 409 conflict');
    is($r[1][0], 201, '... the edit won');
    is(psql_value("SELECT count(*) FROM doc_versions WHERE document_id = '$cart->{id}' "
                  . "AND source = 'regenerate'"), 1, '... and the late answer was not written');
    $oa->reset;
}

# --- patches -------------------------------------------------------------------------------
my ($s0, $doc) = api(GET => "/api/orgs/$org/documents/$cart->{id}", token => $tok);
my $base_id = $doc->{current_version}{id};
my (undef, undef, $base_res) = api(GET => "/api/orgs/$org/doc-versions/$base_id/content",
                                   token => $tok);
my $base_body = $base_res->decoded_content(charset => 'none');
my $proposal = $base_body . "\n## Discounts\n\nCodes apply at checkout.\n";
$oa->control(replies => [ json()->encode({ summary => 'Adds discounts.', body => $proposal }) ]);
($st, $p) = call(POST => "/api/orgs/$org/documents/$cart->{id}/patches", token => $mtok,
                 json => { instructions => 'Add a section on discount codes.' });
is($st, 201, 'ask for a patch') or diag(explain($p));
my $patch = $p;
like($patch->{id}, qr/^pch_/, '... a pch_ id');
is($patch->{status}, 'proposed', '... proposed');
is($patch->{document_id}, $cart->{id}, '... for the document');
is($patch->{base_version_id}, $base_id, '... based on its current version');
is($patch->{summary}, 'Adds discounts.', '... with the model\'s summary');
like($patch->{diff}, qr/\A--- a\/\S+\n\+\+\+ b\/\S+\n@@ -\d+,\d+ \+\d+,\d+ @@\n/, '... a unified diff');
like($patch->{diff}, qr/^\+## Discounts$/m, '... adding the section');
unlike($patch->{diff}, qr/^-(?!-- )/m, '... removing nothing');
is_deeply(last_usage(), [ 'document.patch', 'ok', '', $cart->{id}, 'gpt-4o-mini' ],
          '... the call recorded');
is(psql_value("SELECT count(*) FROM doc_versions WHERE document_id = '$cart->{id}'"),
   $doc->{versions_total}, '... no version written yet');
($st, $p) = call(GET => "/api/orgs/$org/documents/$cart->{id}/patches", token => $tok);
is($p->{data}[0]{id}, $patch->{id}, 'the document\'s patches list it');

($st, $p) = call(POST => "/api/orgs/$org/patches/$patch->{id}/accept", token => $mtok);
is($st, 200, 'accept the patch') or diag(explain($p));
is($p->{status}, 'accepted', '... accepted');
ok($p->{result_version_id}, '... naming the version it made');
($st, my $nv) = call(GET => "/api/orgs/$org/documents/$cart->{id}", token => $tok);
is($nv->{current_version}{id}, $p->{result_version_id}, '... now the current version');
is($nv->{current_version}{source}, 'patch', '... from a patch');
is($nv->{current_version}{status}, 'draft', '... a draft');
(undef, undef, $res) = call(GET => "/api/orgs/$org/doc-versions/$p->{result_version_id}/content",
                            token => $tok);
is($res->decoded_content(charset => 'none'), $proposal, '... exactly the text the model proposed');
($st, $p) = call(POST => "/api/orgs/$org/patches/$patch->{id}/accept", token => $mtok);
is($st, 409, 'accepting it again: 409');
is($p->{code}, 'invalid_status', '... invalid_status');
($st, $p) = call(POST => "/api/orgs/$org/patches/$patch->{id}/reject", token => $mtok);
is($p->{code}, 'invalid_status', 'rejecting an accepted patch: invalid_status');

# A patch whose base is no longer current.
my $cur = $nv->{current_version}{id};
$oa->control(replies => [ json()->encode({ summary => 'Shorter.', body => "# Cart\n\nShort.\n" }) ]);
($st, my $p2) = call(POST => "/api/orgs/$org/documents/$cart->{id}/patches", token => $mtok,
                     json => { instructions => 'Shorten it.' });
is($st, 201, 'a second patch');
($st) = call(POST => "/api/orgs/$org/documents/$cart->{id}/edit", token => $tok,
             json => { body => "# Cart\n\nEdited by hand.\n", base_version_id => $cur });
$before = written();
($st, $p) = call(POST => "/api/orgs/$org/patches/$p2->{id}/accept", token => $mtok);
is($st, 409, 'accepting a patch whose base is no longer current: 409');
is($p->{code}, 'conflict', '... conflict');
is(written(), $before, '... nothing written');
($st, $p) = call(POST => "/api/orgs/$org/patches/$p2->{id}/reject", token => $mtok);
is($st, 200, 'reject it');
is($p->{status}, 'rejected', '... rejected');
($st, $p) = call(POST => "/api/orgs/$org/patches/$p2->{id}/accept", token => $mtok);
is($p->{code}, 'invalid_status', 'accepting a rejected patch: invalid_status');

# The model proposes nothing new, or no summary: 502, nothing written.
my (undef, undef, $now) = api(GET => "/api/orgs/$org/documents/$cart->{id}", token => $tok);
my $now_doc = json()->decode($now->content);
(undef, undef, $res) = api(GET => "/api/orgs/$org/doc-versions/"
                                  . "$now_doc->{current_version}{id}/content", token => $tok);
my $same = $res->decoded_content(charset => 'none');
for my $bad ([ 'the same text', { summary => 'Nothing.', body => $same }, qr/no change/ ],
             [ 'no summary', { body => "# Cart\n\nOther.\n" }, qr/summary/ ]) {
    my ($name, $reply, $detail) = @$bad;
    $oa->control(replies => [ json()->encode($reply) ]);
    $before = written();
    ($st, $p) = call(POST => "/api/orgs/$org/documents/$cart->{id}/patches", token => $mtok,
                     json => { instructions => 'Improve.' });
    is($st, 502, "a patch with $name: 502");
    like($p->{detail}, $detail, '... saying why');
    is(written(), $before, '... nothing written');
    is(last_usage()->[1], 'error', '... the call recorded as an error');
}

# A stored diff that no longer rebuilds the proposal is refused, never applied.
{
    $oa->control(replies => [ json()->encode({ summary => 'One more line.',
                                               body => $same . "One more line.\n" }) ]);
    ($st, my $p3) = call(POST => "/api/orgs/$org/documents/$cart->{id}/patches", token => $mtok,
                         json => { instructions => 'Add a line.' });
    is($st, 201, 'a third patch');
    (my $forged = $p3->{diff}) =~ s/^\+One more line\.$/+Another line./m;
    psql('ALTER TABLE doc_patches DISABLE TRIGGER USER; '
         . 'UPDATE doc_patches SET diff = ' . sql_quote($forged) . " WHERE id = '$p3->{id}'; "
         . 'ALTER TABLE doc_patches ENABLE TRIGGER USER');
    $before = written();
    ($st, $p) = call(POST => "/api/orgs/$org/patches/$p3->{id}/accept", token => $mtok);
    is($st, 409, 'a diff that applies but does not rebuild the proposal: 409');
    like($p->{detail}, qr/does not rebuild/, '... saying so');
    (my $broken = $p3->{diff}) =~ s/^ /-/m;
    psql('ALTER TABLE doc_patches DISABLE TRIGGER USER; '
         . 'UPDATE doc_patches SET diff = ' . sql_quote($broken) . " WHERE id = '$p3->{id}'; "
         . 'ALTER TABLE doc_patches ENABLE TRIGGER USER');
    ($st, $p) = call(POST => "/api/orgs/$org/patches/$p3->{id}/accept", token => $mtok);
    is($st, 409, 'a diff that does not apply: 409');
    like($p->{detail}, qr/does not apply/, '... saying so');
    is(written(), $before, '... nothing written either time');
}

# Two acceptances at once: one wins.
{
    (undef, undef, $res) = api(GET => "/api/orgs/$org/documents/$cart->{id}", token => $tok);
    my $d = json()->decode($res->content);
    (undef, undef, $res) = api(GET => "/api/orgs/$org/doc-versions/$d->{current_version}{id}/content",
                               token => $tok);
    my $text = $res->decoded_content(charset => 'none');
    $oa->control(replies => [ json()->encode({ summary => 'Race.', body => $text . "Race.\n" }) ]);
    ($st, my $p4) = call(POST => "/api/orgs/$org/documents/$cart->{id}/patches", token => $mtok,
                         json => { instructions => 'Race.' });
    my @r = race(map { sub { my ($x, $y) = api(POST => "/api/orgs/$org/patches/$p4->{id}/accept",
                                               token => $tok);
                             ($x, $y->{code} // '') } } 1 .. 2);
    is_deeply([ sort map { $_->[0] } @r ], [ 200, 409 ], 'two acceptances: one 200, one 409');
    is(psql_value("SELECT count(*) FROM doc_versions WHERE document_id = '$cart->{id}' "
                  . "AND source = 'patch'"), 2, '... one version from it');
}

# --- audit, keys ---------------------------------------------------------------------------
my %act = map { $_->[0] => 1 } psql("SELECT action FROM audit_log WHERE org_id = '$org_id'");
for my $a (qw(document.regenerated patch.proposed patch.accepted patch.rejected)) {
    ok($act{$a}, "audit: $a");
}
my $leaks = grep { my $b = $_; grep { index($b, $_) >= 0 } ($oa->key, $an->key) } @bodies;
is($leaks, 0, 'no answer carried a provider key (' . scalar(@bodies) . ' answers)');

done_testing();
