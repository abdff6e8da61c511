# LLM providers (issue 9): create, list, read, update, delete, test, the
# default, against fake OpenAI-compatible and Anthropic servers
# (t/lib/FakeLLM.pm). The key is write-only: no answer ever carries it (every
# answer of this file is searched for it), the database holds it sealed, and
# tools/check-logs.pl fails the run if any log shows it.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $owner  = new_user('prov-owner');
my $member = new_user('prov-member');
my $viewer = new_user('prov-viewer');
my $org    = new_org($owner, prefix => 'prov');
svcctl('org', 'add-member', $org, $member, '--role', 'member');
svcctl('org', 'add-member', $org, $viewer, '--role', 'viewer');
my $tok  = new_token($owner, scope => 'admin');
my $mtok = new_token($member, scope => 'admin');
my $vtok = new_token($viewer, scope => 'admin');
my $org_id = org_id_of($org);

my $oa = new_llm(flavor => 'openai');
my $an = new_llm(flavor => 'anthropic');
my @keys = ($oa->key, $an->key);

# Every answer of this file, to search for keys at the end.
my @bodies;
sub call {
    my @r = api(@_);
    push @bodies, $r[2]->content;
    return @r;
}

sub usage_rows {
    return psql_value("SELECT count(*) FROM model_usage WHERE org_id = '$org_id'");
}

# --- create -------------------------------------------------------------------
my ($st, $p) = call(POST => "/api/orgs/$org/providers", token => $tok,
                    json => { name => 'OpenAI', kind => 'openai', base_url => $oa->url . '/v1/',
                              model => 'gpt-4o-mini', api_key => $oa->key });
is($st, 201, 'create an OpenAI-compatible provider') or diag(explain($p));
my $op = $p;
like($op->{id}, qr/^llm_[A-Za-z0-9]{22}$/, '... an llm_ id');
is($op->{base_url}, $oa->url, '... the base URL without /v1 and trailing slashes');
is($op->{kind}, 'openai', '... kind');
is($op->{model}, 'gpt-4o-mini', '... model');
is($op->{key_hint}, substr($oa->key, -4), '... key_hint is the last four characters');
ok(!exists $op->{api_key} && !exists $op->{key}, '... and no key');
ok($op->{is_default}, '... the first provider is the default');

($st, $p) = call(POST => "/api/orgs/$org/providers", token => $tok,
                 json => { name => 'Anthropic', kind => 'anthropic', base_url => $an->url,
                           model => 'claude-sonnet-4-20250514', api_key => $an->key });
is($st, 201, 'create an Anthropic provider');
my $ap = $p;
ok(!$ap->{is_default}, '... not the default: there is one');

($st, $p) = call(POST => "/api/orgs/$org/providers", token => $tok,
                 json => { name => 'Anthropic', kind => 'openai', model => 'x', api_key => 'k' });
is($st, 409, 'a second provider with the same name: 409');
is($p->{code}, 'conflict', '... conflict');

($st, $p) = call(POST => "/api/orgs/$org/providers", token => $tok,
                 json => { name => 'Vendor', kind => 'anthropic', model => 'claude-x',
                           api_key => 'sk-ant-' . ('x' x 30) });
is($st, 201, 'no base_url: the vendor\'s public API');
is($p->{base_url}, 'https://api.anthropic.com', '... https://api.anthropic.com');
my $vendor = $p;

for my $bad ([ { base_url => 'ftp://example.com' }, 'base_url' ],
             [ { base_url => 'http://user:pw@example.com' }, 'base_url' ],
             [ { base_url => 'http://example.com/?q=1' }, 'base_url' ],
             [ { api_key => 'has a space' }, 'api_key' ],
             [ { kind => 'gemini' }, 'kind' ],
             [ { key => 'x' }, 'key' ]) {
    my ($over, $field) = @$bad;
    my %body = (name => uniq('bad'), kind => 'openai', model => 'm', api_key => 'sk-ok', %$over);
    ($st, $p) = call(POST => "/api/orgs/$org/providers", token => $tok, json => \%body);
    is($st, 400, "invalid $field: 400");
    is($p->{errors}[0]{field}, $field, "... naming $field");
}

# --- the key at rest -------------------------------------------------------------
my $in_db = psql_value("SELECT count(*) FROM llm_providers WHERE org_id = '$org_id' AND ("
                       . join(' OR ', map { "position(convert_to(" . sql_quote($_)
                                            . ", 'UTF8') IN key_box) > 0" } @keys) . ')');
is($in_db, 0, 'the database holds no key in clear');
is(psql_value("SELECT count(*) FROM llm_providers WHERE id = '$op->{id}' "
              . "AND octet_length(key_box) = " . (length($oa->key) + 40)), 1,
   '... but a sealed box: nonce, MAC and ciphertext');

# --- list and read ----------------------------------------------------------------
($st, $p) = call(GET => "/api/orgs/$org/providers", token => $mtok);
is($st, 200, 'a member lists the providers');
is(scalar @{ $p->{data} }, 3, '... all three');
is($p->{data}[0]{id}, $vendor->{id}, '... newest first');
($st) = call(GET => "/api/orgs/$org/providers", token => $vtok);
is($st, 403, 'a viewer may not');
($st, $p) = call(GET => "/api/orgs/$org/providers/$op->{id}", token => $mtok);
is($st, 200, 'a member reads one');
is_deeply($p, $op, '... as it was created');
($st) = call(POST => "/api/orgs/$org/providers", token => $mtok,
             json => { name => 'm', kind => 'openai', model => 'm', api_key => 'k' });
is($st, 403, 'a member may not create one');
($st, $p) = call(GET => "/api/orgs/$org/providers/llm_0000000000000000000000", token => $tok);
is($st, 404, 'an unknown id: 404');

# --- test ---------------------------------------------------------------------------
my $before = usage_rows();
($st, $p) = call(POST => "/api/orgs/$org/providers/$op->{id}/test", token => $tok);
is($st, 200, 'test the OpenAI provider') or diag(explain($p));
ok($p->{ok}, '... ok');
ok((grep { $_ eq 'gpt-4o-mini' } @{ $p->{models} }), '... its models are listed');
ok(defined $p->{latency_ms} && $p->{latency_ms} >= 0, '... latency_ms');
is($p->{error}, undef, '... no error');
my @req = @{ $oa->requests };
is($req[-3]{method} . ' ' . $req[-3]{path}, 'GET /v1/models', '... GET /v1/models first');
is($req[-2]{path}, '/v1/chat/completions', '... then one completion');
is($req[-2]{body}{max_tokens}, 1, '... of max_tokens 1');
is($req[-2]{headers}{authorization}, 'Bearer ' . $oa->key, '... with the key as a bearer');
is($req[-1]{path}, '/v1/chat/completions', '... then the tool-calling probe');
is_deeply([ map { $_->{function}{name} } @{ $req[-1]{body}{tools} } ], [ 'report_status' ],
          '... offering one tool');
is($p->{tools}, JSON::PP::true, '... which the model called: tools work');
is(usage_rows(), $before + 2, '... both calls recorded in model_usage');
my ($row) = psql("SELECT provider_id, provider_kind, model, purpose, status, subject_type, "
                 . "subject_id, user_id, input_tokens > 0, output_tokens >= 0 FROM model_usage "
                 . "WHERE org_id = '$org_id' ORDER BY id DESC LIMIT 1");
is_deeply($row, [ $op->{id}, 'openai', 'gpt-4o-mini', 'provider.test', 'ok', 'provider',
                  $op->{id}, user_id_of($owner), 't', 't' ], '... with what, who and why');

($st, $p) = call(POST => "/api/orgs/$org/providers/$ap->{id}/test", token => $tok);
is($st, 200, 'test the Anthropic provider');
ok($p->{ok}, '... ok') or diag(explain($p));
ok((grep { $_ eq 'claude-sonnet-4-20250514' } @{ $p->{models} }), '... models');
@req = @{ $an->requests };
is($req[-1]{path}, '/v1/messages', '... the Messages API');
is($req[-1]{headers}{'x-api-key'}, $an->key, '... x-api-key');
is($req[-1]{headers}{'anthropic-version'}, '2023-06-01', '... anthropic-version 2023-06-01');
is_deeply($req[-1]{body}{tool_choice}, { type => 'tool', name => 'report_status' },
          '... the probe forces its tool, in Anthropic\'s form');
is($p->{tools}, JSON::PP::true, '... tools work');

# A provider that refuses the key is an answer, not a failure of ours.
$oa->control(mode => 'unauthorized');
$before = usage_rows();
($st, $p) = call(POST => "/api/orgs/$org/providers/$op->{id}/test", token => $tok);
is($st, 200, 'a refused key: still 200');
ok(!$p->{ok}, '... ok false');
is($p->{error_code}, 'provider_refused', '... provider_refused');
like($p->{error}, qr/401.*Incorrect API key/s, "... with the provider's message");
is(usage_rows(), $before + 1, '... and recorded (no probe of tools after a failure)');
is($p->{tools}, undef, '... tools not tried');
is(psql_value("SELECT status || ' ' || error_code FROM model_usage WHERE org_id = '$org_id' "
              . 'ORDER BY id DESC LIMIT 1'), 'error provider_refused', '... as an error');

$oa->control(mode => 'server_error');
($st, $p) = call(POST => "/api/orgs/$org/providers/$op->{id}/test", token => $tok);
is($st, 200, 'a provider answering 500: 200');
is($p->{error_code}, 'provider_error', '... provider_error');
like($p->{error}, qr/500/, '... naming the status');

$oa->control(mode => 'garbage');
($st, $p) = call(POST => "/api/orgs/$org/providers/$op->{id}/test", token => $tok);
ok(!$p->{ok}, 'garbage from the provider: ok false');
is($p->{error_code}, 'provider_error', '... provider_error');
$oa->reset;

# The provider's message may quote the key: it never comes back.
my $echo = new_llm(flavor => 'openai');
my $echo_p = new_provider($org, $tok, $echo, name => 'echo');
$echo->control(mode => 'unauthorized', key => 'sk-something-else-entirely-0000');
($st, $p) = call(POST => "/api/orgs/$org/providers/$echo_p->{id}/test", token => $tok);
ok(!$p->{ok}, 'a wrong key: ok false');

# --- the timeout ---------------------------------------------------------------------
{
    my $short = vhost_url('llm_short_timeout');
    $oa->control(mode => 'timeout', hang_seconds => 20);
    ($st, $p) = call(POST => "/api/orgs/$org/providers/$op->{id}/test", token => $tok,
                     base => $short);
    is($st, 200, 'a provider that never answers: 200 (SvcModelTimeout 3)');
    is($p->{error_code}, 'provider_timeout', '... provider_timeout');
    like($p->{error}, qr/within 3 s/, '... saying how long we waited');
    $oa->reset;
}

# --- update -------------------------------------------------------------------------------
($st, $p) = call(PATCH => "/api/orgs/$org/providers/$op->{id}", token => $tok,
                 json => { api_key => 'sk-wrong-' . ('0' x 24) . 'WXYZ', model => 'gpt-4o' });
is($st, 200, 'replace the key and the model');
is($p->{key_hint}, 'WXYZ', '... the new hint');
is($p->{model}, 'gpt-4o', '... the new model');
($st, $p) = call(POST => "/api/orgs/$org/providers/$op->{id}/test", token => $tok);
is($p->{error_code}, 'provider_refused', '... the provider refuses the new (wrong) key');
($st, $p) = call(PATCH => "/api/orgs/$org/providers/$op->{id}", token => $tok,
                 json => { api_key => $oa->key, model => 'gpt-4o-mini' });
($st, $p) = call(POST => "/api/orgs/$org/providers/$op->{id}/test", token => $tok);
ok($p->{ok}, '... and accepts the right one again');
($st, $p) = call(PATCH => "/api/orgs/$org/providers/$op->{id}", token => $tok,
                 json => { kind => 'anthropic' });
is($st, 400, 'kind cannot change');

# The write-only key cannot be taken by pointing the provider elsewhere
# (issue 17): a new base_url needs the key again, in the same request.
{
    my $thief = new_llm(flavor => 'openai');
    my $row_before = psql_value("SELECT base_url || ' ' || encode(key_box, 'hex') || ' ' || "
                                . "updated_at FROM llm_providers WHERE id = '$op->{id}'");
    ($st, $p) = call(PATCH => "/api/orgs/$org/providers/$op->{id}", token => $tok,
                     json => { base_url => $thief->url });
    is($st, 400, 'a new base_url without api_key: 400');
    is($p->{code}, 'validation_failed', '... validation_failed');
    is($p->{errors}[0]{field}, 'api_key', '... naming api_key');
    like($p->{errors}[0]{message}, qr/base_url/, '... saying why');
    ($st, $p) = call(PATCH => "/api/orgs/$org/providers/$op->{id}", token => $tok,
                     json => { base_url => $thief->url, model => 'gpt-4o' });
    is($st, 400, '... with another field too: 400');
    is(psql_value("SELECT base_url || ' ' || encode(key_box, 'hex') || ' ' || updated_at "
                  . "FROM llm_providers WHERE id = '$op->{id}'"), $row_before,
       '... and nothing changed');
    ($st, $p) = call(POST => "/api/orgs/$org/providers/$op->{id}/test", token => $tok);
    ok($p->{ok}, '... the provider still calls its own address');
    is(scalar @{ $thief->requests }, 0, '... and the other address got nothing');
    ($st, $p) = call(PATCH => "/api/orgs/$org/providers/$op->{id}", token => $tok,
                     json => { base_url => $thief->url, api_key => $thief->key });
    is($st, 200, 'a new base_url with its key: 200');
    is($p->{base_url}, $thief->url, '... moved');
    ($st, $p) = call(POST => "/api/orgs/$org/providers/$op->{id}/test", token => $tok);
    ok($p->{ok}, '... and tested there');
    is($thief->requests->[-1]{headers}{authorization}, 'Bearer ' . $thief->key,
       '... with the key given for it');
    ($st, $p) = call(PATCH => "/api/orgs/$org/providers/$op->{id}", token => $tok,
                     json => { base_url => $oa->url, api_key => $oa->key });
    is($st, 200, '... and back');
    push @keys, $thief->key;
    $thief->stop;
}
($st, $p) = call(PATCH => "/api/orgs/$org/providers/$op->{id}", token => $tok, json => {});
is($st, 400, 'nothing to change: 400');
($st, $p) = call(PATCH => "/api/orgs/$org/providers/$op->{id}", token => $tok,
                 json => { name => 'Anthropic' });
is($st, 409, 'renaming onto another provider\'s name: 409');

# --- the default --------------------------------------------------------------------------
($st, $p) = call(POST => "/api/orgs/$org/providers/$ap->{id}/default", token => $tok);
is($st, 200, 'make the Anthropic provider the default');
ok($p->{is_default}, '... it is');
($st, $p) = call(GET => "/api/orgs/$org/providers/$op->{id}", token => $tok);
ok(!$p->{is_default}, '... and the other is not');
is(psql_value("SELECT count(*) FROM llm_providers WHERE org_id = '$org_id' AND is_default"), 1,
   '... exactly one default');
($st, $p) = call(POST => "/api/orgs/$org/providers/$ap->{id}/default", token => $tok);
is($st, 200, 'again: 200, no change');
($st) = call(POST => "/api/orgs/$org/providers/$op->{id}/default", token => $mtok);
is($st, 403, 'a member may not choose the default');

# Simultaneous choices end with exactly one default.
my @res = race(map { my $id = $_; sub { (api(POST => "/api/orgs/$org/providers/$id/default",
                                              token => $tok))[0] } }
               ($op->{id}, $ap->{id}, $vendor->{id}, $echo_p->{id}));
is_deeply([ map { $_->[0] } @res ], [ 200, 200, 200, 200 ], 'four simultaneous defaults: 200');
is(psql_value("SELECT count(*) FROM llm_providers WHERE org_id = '$org_id' AND is_default"), 1,
   '... and one default');

# --- delete -------------------------------------------------------------------------------
($st) = call(POST => "/api/orgs/$org/providers/$ap->{id}/default", token => $tok);
($st) = call(DELETE => "/api/orgs/$org/providers/$ap->{id}", token => $tok);
is($st, 204, 'delete the default');
is(psql_value("SELECT count(*) FROM llm_providers WHERE org_id = '$org_id' AND is_default"), 0,
   '... leaves none');
($st) = call(DELETE => "/api/orgs/$org/providers/$ap->{id}", token => $tok);
is($st, 404, 'again: 404');
ok(psql_value("SELECT count(*) FROM model_usage WHERE org_id = '$org_id' "
              . "AND provider_id IS NULL AND provider_kind = 'anthropic'") >= 1,
   'its usage stays, without the reference');

# A new org's first provider becomes its default even when created at once.
{
    my $o2 = new_org($owner, prefix => 'prov-race');
    my @r = race(map { my $n = $_; sub {
        my ($s, $x) = api(POST => "/api/orgs/$o2/providers", token => $tok,
                          json => { name => "p$n", kind => 'openai', base_url => $oa->url,
                                    model => 'gpt-4o-mini', api_key => $oa->key });
        ($s, $x->{is_default} ? 1 : 0) } } 1 .. 4);
    is_deeply([ sort map { $_->[0] } @r ], [ 201, 201, 201, 201 ], 'four first providers at once');
    is((grep { $_->[1] } @r), 1, '... exactly one of them the default');
}

# --- the address guard ----------------------------------------------------------------------
{
    my $strict = vhost_url('llm_no_private');
    ($st, $p) = call(POST => "/api/orgs/$org/providers", token => $tok, base => $strict,
                     json => { name => uniq('local'), kind => 'openai', base_url => $oa->url,
                               model => 'gpt-4o-mini', api_key => $oa->key });
    is($st, 400, 'SvcProviderAllowPrivate Off: a loopback address is refused');
    like($p->{errors}[0]{message}, qr/SvcProviderAllowPrivate/, '... saying why');
    # A name that resolves to loopback passes creation, and is refused at the call.
    (my $by_name = $oa->url) =~ s/127\.0\.0\.1/localhost/;
    ($st, $p) = call(POST => "/api/orgs/$org/providers", token => $tok, base => $strict,
                     json => { name => uniq('byname'), kind => 'openai', base_url => $by_name,
                               model => 'gpt-4o-mini', api_key => $oa->key });
    is($st, 201, '... a name is accepted');
    my $n_before = scalar @{ $oa->requests };
    ($st, $p) = call(POST => "/api/orgs/$org/providers/$p->{id}/test", token => $tok,
                     base => $strict);
    ok(!$p->{ok}, '... and refused when called');
    like($p->{error}, qr/loopback, private, link-local or metadata/, '... by the address guard');
    is(scalar @{ $oa->requests }, $n_before, '... without reaching the server');
    # What the call-time guard refuses is refused when stored, on creation
    # and on update, with the same words (issue 17). Non-canonical IPv4
    # spellings, zones and bad ports whatever the server allows.
    my $port = $oa->port;
    my @refused = (
        [ "http://127.1:$port", 'four decimal numbers' ],
        [ "http://2130706433:$port", 'four decimal numbers' ],
        [ "http://0x7f000001:$port", 'four decimal numbers' ],
        [ "http://0177.0.0.1:$port", 'four decimal numbers' ],
        [ "http://0:$port", 'four decimal numbers' ],
        [ "http://[fe80::1%25lo]:$port", 'zone' ],
        [ 'http://127.0.0.1:99999', '1 to 65535' ],
    );
    # Metadata addresses in every spelling, on the server that allows private ones.
    push @refused, map { [ $_, 'metadata' ] }
        'http://169.254.169.254', 'http://[fd00:ec2::254]', 'http://[::ffff:169.254.169.254]',
        'http://[::ffff:a9fe:a9fe]', 'http://[64:ff9b::a9fe:a9fe]',
        'http://[64:ff9b:1::a9fe:a9fe]', 'http://[2001:0:4136:e378:8000:63bf:5601:5601]',
        'http://[2002:a9fe:a9fe::]';
    push @refused, map { [ $_, 'four decimal numbers' ] }
        'http://2852039166', 'http://0251.0376.0251.0376', 'http://0xa9fea9fe', 'http://169.254.43518';
    for my $c (@refused) {
        my ($url, $why) = @$c;
        my $n = psql_value("SELECT count(*) FROM llm_providers WHERE org_id = '$org_id'");
        ($st, $p) = call(POST => "/api/orgs/$org/providers", token => $tok,
                         json => { name => uniq('guard'), kind => 'openai', base_url => $url,
                                   model => 'm', api_key => 'sk-guard-0000000000' });
        is($st, 400, "create with $url: 400");
        is($p->{errors}[0]{field}, 'base_url', '... on base_url');
        like($p->{errors}[0]{message}, qr/\Q$why\E/, "... saying why ($why)");
        is(psql_value("SELECT count(*) FROM llm_providers WHERE org_id = '$org_id'"), $n,
           '... nothing stored');
        ($st, $p) = call(PATCH => "/api/orgs/$org/providers/$op->{id}", token => $tok,
                         json => { base_url => $url, api_key => $oa->key });
        is($st, 400, "update to $url: 400");
        like($p->{errors}[0]{message} // '', qr/\Q$why\E/, '... saying why');
    }
    ($st, $p) = call(GET => "/api/orgs/$org/providers/$op->{id}", token => $tok);
    is($p->{base_url}, $oa->url, '... and the provider kept its address');
    # A row stored before these rules (or written by hand) is refused at the
    # call by the same guard, and nothing reaches the address.
    ($st, $p) = call(POST => "/api/orgs/$org/providers", token => $tok,
                     json => { name => uniq('meta'), kind => 'openai', base_url => $oa->url,
                               model => 'm', api_key => 'sk-meta-0000000000' });
    is($st, 201, 'a provider');
    for my $url ('http://169.254.169.254', "http://127.1:$port", 'http://[64:ff9b:1::a9fe:a9fe]') {
        psql("UPDATE llm_providers SET base_url = " . sql_quote($url) . " WHERE id = '$p->{id}'");
        my ($s2, $t) = call(POST => "/api/orgs/$org/providers/$p->{id}/test", token => $tok);
        ok(!$t->{ok}, "stored as $url: never called");
        like($t->{error}, qr/metadata address|four decimal numbers/, '... refused by the guard');
    }
    is(scalar(grep { $_->{headers}{authorization} eq 'Bearer sk-meta-0000000000' }
              @{ $oa->requests }), 0, '... nothing reached the server');
}

# --- a key that cannot be opened -------------------------------------------------------------
psql("UPDATE llm_providers SET key_box = '\\x" . ('00' x 60) . "' WHERE id = '$vendor->{id}'");
($st, $p) = call(POST => "/api/orgs/$org/providers/$vendor->{id}/test", token => $tok);
is($st, 200, 'a sealed key that does not open: 200');
is($p->{error_code}, 'key_unreadable', '... key_unreadable');

# --- audit ---------------------------------------------------------------------------------------
my @actions = map { $_->[0] } psql("SELECT action FROM audit_log WHERE org_id = '$org_id' "
                                   . "AND target_type = 'provider' ORDER BY id");
for my $a (qw(provider.created provider.updated provider.default_set provider.deleted)) {
    ok((grep { $_ eq $a } @actions), "audit: $a");
}
is(psql_value("SELECT count(*) FROM audit_log WHERE org_id = '$org_id' AND ("
              . join(' OR ', map { 'data::text LIKE ' . sql_quote("%$_%") } @keys) . ')'), 0,
   'no audit entry holds a key');

# --- no key in any answer --------------------------------------------------------------------
my $leaks = 0;
for my $b (@bodies) {
    for my $k (@keys, $echo->key) {
        $leaks++ if index($b, $k) >= 0;
    }
}
is($leaks, 0, 'no answer of this file carried a key (' . scalar(@bodies) . ' answers)');

done_testing();
