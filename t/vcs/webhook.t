# The code-hosting provider's webhook, POST /webhooks/vcs (issue 12): the
# signature over the raw body before anything else (GitHub's published test
# vector included), de-duplication on X-GitHub-Delivery (replays, and
# concurrent replays of one delivery: one 202, the rest 200), the effects
# on installation records, a delivery whose processing failed left
# unrecorded, the body limit, and the founder's view of the deliveries.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use IO::Socket::INET ();
use SvcTest;

plan skip_all => 'the fake code-hosting provider is not running (use tools/test.sh)'
    unless $ENV{VCS_WEB_URL} && $ENV{VCS_APP_WEBHOOK_SECRET};

sub stored {
    my $id = shift;
    return psql_value('SELECT count(*) FROM vcs_webhook_deliveries WHERE delivery_id = '
                      . sql_quote($id));
}

sub status_of {
    my $id = shift;
    return join ' ', map { $_ // 'null' } @{ (psql('SELECT status, deleted_at IS NOT NULL'
        . " FROM vcs_installations WHERE installation_id = $id"))[0] // [] };
}

my $owner = new_user('wh-owner');
my $org = new_org($owner);
my $oid = org_id_of($org);

# --- GitHub's test vector ------------------------------------------------------
{
    my $vector = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';
    is(vcs_sign("It's a Secret to Everybody", 'Hello, World!'), $vector,
       'the test helper signs as GitHub does');
    my $base = vcs_base('vcs_vector');
    my ($st, $p, undef, $d) = vcs_webhook('ping', undef, raw => 'Hello, World!',
                                          signature => $vector, base => $base);
    is($st, 400, 'test vector: the signature holds, so the body is looked at: 400');
    is($p && $p->{code}, 'invalid_json', '... invalid_json ("Hello, World!" is no object)');
    is(stored($d), 0, '... nothing stored');
    (my $off_by_one = $vector) =~ s/e17$/e18/;
    ($st, $p) = vcs_webhook('ping', undef, raw => 'Hello, World!', signature => $off_by_one,
                            base => $base);
    is($st, 401, 'test vector, one digit off: 401');
    is($p && $p->{code}, 'invalid_signature', '... invalid_signature');
    ($st) = vcs_webhook('ping', undef, raw => 'Hello, World!', signature => $vector);
    is($st, 401, 'the vector under another secret (the main server\'s): 401');
}

# --- signatures ------------------------------------------------------------------
{
    my $payload = { zen => 'Design for failure.', hook_id => 1 };
    my $body = json()->encode($payload);
    my @bad = (
        [ 'no signature'                 => signature => undef ],
        [ 'an empty signature'           => signature => '' ],
        [ 'a sha1 signature'             => signature => 'sha1=' . ('0' x 40) ],
        [ 'the right MAC without prefix' => signature => substr(vcs_sign($ENV{VCS_APP_WEBHOOK_SECRET}, $body), 7) ],
        [ 'another secret'               => secret => 'not the secret' ],
        [ 'a MAC of another body'        => signature => vcs_sign($ENV{VCS_APP_WEBHOOK_SECRET}, "$body ") ],
        [ 'a truncated MAC'              => signature => substr(vcs_sign($ENV{VCS_APP_WEBHOOK_SECRET}, $body), 0, 70) ],
    );
    for my $b (@bad) {
        my ($name, %o) = @$b;
        my ($st, $p, $res, $d) = vcs_webhook('ping', $payload, %o);
        is($st, 401, "$name: 401");
        is($p && $p->{code}, 'invalid_signature', '... invalid_signature');
        is(stored($d), 0, '... nothing stored');
    }
    # Before the signature, nothing else is looked at: a bad signature on a
    # delivery that is wrong in every other way is still just a 401.
    my ($st, $p) = vcs_webhook(undef, undef, raw => '[not json', delivery => undef,
                               signature => 'sha256=' . ('a' x 64));
    is($st, 401, 'garbage with a bad signature: 401, not 400');
    # A session cookie or a bearer token means nothing here: no CSRF, no scope.
    my $d;
    ($st, $p, undef, $d) = vcs_webhook('ping', $payload,
                                       headers => { Cookie => 'service_session=x.y.z',
                                                    Authorization => 'Bearer svc_pat_nonsense',
                                                    Origin => 'https://evil.example' });
    is($st, 202, 'a signed delivery with a stray cookie, token and Origin: 202');
}

# --- recorded once; replays change nothing --------------------------------------
{
    my $payload = { action => 'opened', number => 7, installation => { id => 77 } };
    my ($st, $p, undef, $d) = vcs_webhook('pull_request', $payload);
    is($st, 202, 'a signed delivery: 202');
    is($p && $p->{status}, 'accepted', '... accepted');
    is($p && $p->{delivery_id}, $d, '... its delivery id');
    my ($row) = psql('SELECT event, action, installation_id, payload::text, received_at IS NOT NULL'
                     . ' FROM vcs_webhook_deliveries WHERE delivery_id = ' . sql_quote($d));
    is($row->[0], 'pull_request', 'recorded: the event from X-GitHub-Event');
    is($row->[1], 'opened', '... the action');
    is($row->[2], 77, '... the installation id');
    is_deeply(json()->decode($row->[3]), $payload, '... the payload');
    is($row->[4], 't', '... the time it came');
    my $before = db_digest();
    ($st, $p) = vcs_webhook('pull_request', $payload, delivery => $d);
    is($st, 200, 'the same delivery again: 200');
    is($p && $p->{status}, 'duplicate', '... duplicate');
    ($st) = vcs_webhook('pull_request', { other => 'payload' }, delivery => $d);
    is($st, 200, 'the same delivery id with another payload: 200');
    is_deeply(db_digest(), $before, '... and nothing changed');
}

# --- 400 after a valid signature: nothing stored -----------------------------------
{
    for my $c ([ 'no X-GitHub-Event'      => 'invalid_webhook', undef, '{"a":1}' ],
               [ 'a JSON array'           => 'invalid_json', 'ping', '[1,2,3]' ],
               [ 'a JSON string'          => 'invalid_json', 'ping', '"ping"' ],
               [ 'invalid JSON'           => 'invalid_json', 'ping', '{"a":' ],
               [ 'duplicate keys'         => 'invalid_json', 'ping', '{"a":1,"a":2}' ],
               [ 'an empty body'          => 'invalid_json', 'ping', '' ]) {
        my ($name, $code, $event, $raw) = @$c;
        my ($st, $p, undef, $d) = vcs_webhook($event, undef, raw => $raw);
        is($st, 400, "$name: 400");
        is($p && $p->{code}, $code, "... $code");
        is(stored($d), 0, '... nothing stored');
    }
    my ($st, $p) = vcs_webhook('ping', { a => 1 }, delivery => undef);
    is($st, 400, 'no X-GitHub-Delivery: 400');
    is($p && $p->{code}, 'invalid_webhook', '... invalid_webhook');
}

# --- the body limit: 25 MiB ----------------------------------------------------------
{
    my $big = '{"action":"big","pad":"' . ('x' x (3 * 1024 * 1024)) . '"}';
    my ($st, undef, undef, $d) = vcs_webhook('ping', undef, raw => $big);
    is($st, 202, 'a 3 MiB delivery: 202');
    is(stored($d), 1, '... stored');

    my $port = Apache::Test::vars('port');
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Timeout => 10)
        or die "connect: $!";
    my $len = 25 * 1024 * 1024 + 1;
    print $s "POST /webhooks/vcs HTTP/1.1\r\nHost: 127.0.0.1:$port\r\n"
        . "Content-Type: application/json\r\nX-GitHub-Event: ping\r\n"
        . "X-GitHub-Delivery: " . vcs_uuid() . "\r\nX-Hub-Signature-256: sha256=" . ('0' x 64)
        . "\r\nContent-Length: $len\r\n\r\n{\"a\":";
    local $/;
    my $answer = <$s> // '';
    SvcContract::contract_raw('POST /webhooks/vcs HTTP/1.1', $answer);
    like($answer, qr{^HTTP/1\.1 413 }, 'a body over 25 MiB: 413, before it is read');
    like($answer, qr/"code":"payload_too_large"/, '... payload_too_large');
}

# --- effects on installation records -----------------------------------------------
sub event_kinds {
    my $id = shift;
    return join ' ', map { $_->[0] } psql("SELECT data->>'status' FROM events WHERE org_id = "
        . sql_quote($oid) . " AND kind = 'vcs.installation' AND (data->>'installation_id')::bigint = $id"
        . ' ORDER BY id');
}

sub audit_of {
    my $id = shift;
    return join ' ', map { "$_->[0]/$_->[1]" } psql('SELECT action, actor_kind FROM audit_log'
        . " WHERE target_type = 'vcs_installation' AND target_id = '$id' ORDER BY id");
}

{
    my $i = vcs_record_installation($org, vcs_installation());
    my $id = $i->{id};
    my $inst = { id => $id, account => { login => $i->{login}, type => 'Organization' },
                 repository_selection => 'selected' };
    my ($st) = vcs_webhook('installation', { action => 'suspend', installation => $inst });
    is($st, 202, 'installation suspend: 202');
    is(status_of($id), 'suspended f', '... the record is suspended');
    ($st) = vcs_webhook('installation', { action => 'unsuspend', installation => $inst });
    is($st, 202, 'installation unsuspend: 202');
    is(status_of($id), 'active f', '... active again');
    my $d;
    ($st, undef, undef, $d) = vcs_webhook('installation', { action => 'deleted', installation => $inst });
    is($st, 202, 'installation deleted: 202');
    is(status_of($id), 'suspended t', '... suspended, and marked deleted at the provider');
    is(psql_value("SELECT count(*) FROM vcs_installations WHERE installation_id = $id"), 1,
       '... the record is kept for audit');
    ($st) = vcs_webhook('installation', { action => 'deleted', installation => $inst },
                        delivery => $d);
    is($st, 200, '... its replay: 200');
    ($st) = vcs_webhook('installation', { action => 'unsuspend', installation => $inst });
    is($st, 202, 'unsuspend after deleted: 202');
    is(status_of($id), 'suspended t', '... a deleted installation stays suspended');
    is(event_kinds($id), 'suspended active suspended',
       'a vcs.installation event for each change of status, none for the rest');
    is(audit_of($id), 'vcs.installation.suspended/provider vcs.installation.unsuspended/provider '
       . 'vcs.installation.deleted/provider', 'audit: each change, by the provider');
}
{
    my $id = 20_000_000 + int(rand(1e9));
    my ($st, undef, undef, $d) = vcs_webhook('installation', {
        action => 'created', installation => { id => $id, account => { login => 'nobody' },
                                                repository_selection => 'all' } });
    is($st, 202, 'installation created for an unknown installation: 202');
    is(stored($d), 1, '... recorded');
    is(psql_value("SELECT count(*) FROM vcs_installations WHERE installation_id = $id"), 0,
       '... and nothing else');
}
{
    my $i = vcs_record_installation($org, vcs_installation());
    my $id = $i->{id};
    my $repo = sub { my ($n, $rid) = @_;
                     { id => $rid, name => $n, full_name => "$i->{login}/$n", private => JSON::PP::true() } };
    my ($st) = vcs_webhook('installation_repositories', {
        action => 'added', installation => { id => $id, repository_selection => 'selected' },
        repository_selection => 'selected',
        repositories_added => [ $repo->('api', 11), $repo->('web', 12) ], repositories_removed => [] });
    is($st, 202, 'installation_repositories added: 202');
    my $list = sub { join ',', map { $_->[0] } psql(
        "SELECT r->>'full_name' FROM vcs_installations, jsonb_array_elements(repositories) r"
        . " WHERE installation_id = $id ORDER BY 1") };
    is($list->(), "$i->{login}/api,$i->{login}/web", '... the record lists them');
    ($st) = vcs_webhook('installation_repositories', {
        action => 'removed', installation => { id => $id, repository_selection => 'selected' },
        repositories_added => [], repositories_removed => [ $repo->('api', 11) ] });
    is($st, 202, 'installation_repositories removed: 202');
    is($list->(), "$i->{login}/web", '... and no longer lists the removed one');
    ($st) = vcs_webhook('installation_repositories', {
        action => 'added', installation => { id => $id },
        repositories_added => [ $repo->('web', 12), $repo->('docs', 13) ] });
    is($list->(), "$i->{login}/docs,$i->{login}/web", '... each repository once');
    my $before = db_digest();
    ($st) = vcs_webhook('push', { ref => 'refs/heads/main', installation => { id => $id } });
    is($st, 202, 'another event: 202');
    my $after = db_digest();
    delete $before->{vcs_webhook_deliveries};
    delete $after->{vcs_webhook_deliveries};
    is_deeply($after, $before, '... recorded and otherwise ignored');
}

# --- a delivery whose processing failed is kept as failed; its redelivery works ------
# (Until issue 24 it was not recorded at all; now an operator can redeliver
# it too: t/admin/redeliver.t.)
{
    my $i = vcs_record_installation($org, vcs_installation(login => uniq('failme')));
    my $fn = 'svc_test_fail_' . join '', map { ('a'..'z')[rand 26] } 1 .. 8;
    psql("CREATE FUNCTION $fn() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN "
         . "IF NEW.installation_id = $i->{id} THEN RAISE EXCEPTION 'injected failure'; END IF; "
         . "RETURN NEW; END \$\$; CREATE TRIGGER $fn BEFORE UPDATE ON vcs_installations "
         . "FOR EACH ROW EXECUTE FUNCTION $fn()");
    my $mark = expect_errors_begin();
    my $payload = { action => 'suspend', installation => { id => $i->{id} } };
    my ($st, undef, undef, $d) = vcs_webhook('installation', $payload);
    expect_errors_end($mark);
    is($st, 500, 'a delivery whose effect fails: 500');
    is(psql_value('SELECT status || \' \' || attempts FROM vcs_webhook_deliveries'
                  . ' WHERE delivery_id = ' . sql_quote($d)), 'failed 1',
       '... kept, as failed after one attempt');
    like(psql_value('SELECT last_error FROM vcs_webhook_deliveries WHERE delivery_id = '
                    . sql_quote($d)), qr/injected failure/, '... with why');
    is(status_of($i->{id}), 'active f', '... and nothing of it applied');
    psql("DROP TRIGGER $fn ON vcs_installations; DROP FUNCTION $fn()");
    ($st) = vcs_webhook('installation', $payload, delivery => $d);
    is($st, 202, 'its redelivery: 202');
    is(psql_value('SELECT status || \' \' || attempts FROM vcs_webhook_deliveries'
                  . ' WHERE delivery_id = ' . sql_quote($d)), 'processed 2',
       '... processed, at the second attempt');
    is(status_of($i->{id}), 'suspended f', '... and applied');
}

# --- concurrent replays of one delivery: one 202, the rest 200 -----------------------
{
    my $i = vcs_record_installation($org, vcs_installation());
    my $payload = { action => 'suspend', installation => { id => $i->{id} } };
    my $d = vcs_uuid();
    # The first delivery waits on the record's row while the others wait on
    # its delivery id: all eight are in flight at once.
    my $h = lock_hold("SELECT 1 FROM vcs_installations WHERE installation_id = $i->{id} FOR UPDATE", 8);
    my @r = race(map { sub { (vcs_webhook('installation', $payload, delivery => $d))[0] } } 1 .. 8);
    lock_release($h);
    my @codes = sort map { $_->[0] } @r;
    is(join(' ', @codes), '200 200 200 200 200 200 200 202',
       'eight simultaneous copies of one delivery: one 202, seven 200');
    is(stored($d), 1, '... recorded once');
    is(event_kinds($i->{id}), 'suspended', '... applied once');
}

# --- the founder's view -------------------------------------------------------------
{
    my $founder = new_user('wh-founder', founder => 1);
    my $ftok = new_token($founder, scope => 'read');
    my (undef, undef, undef, $d1) = vcs_webhook('ping', { zen => 'first', hook => { id => 3 } });
    my (undef, undef, undef, $d2) = vcs_webhook('star', { action => 'created', starred => 1 });
    my ($st, $list) = api(GET => '/api/admin/vcs/deliveries?limit=2', token => $ftok);
    is($st, 200, 'founder: GET /api/admin/vcs/deliveries');
    is(join(',', map { $_->{delivery_id} } @{ $list->{data} // [] }), "$d2,$d1",
       '... newest first');
    is_deeply([ sort keys %{ $list->{data}[0] // {} } ],
              [ qw(action attempts delivery_id event installation_id last_attempt_at last_error
                   received_at status) ],
              '... without payloads');
    ok($list->{next_cursor}, '... paged');
    my $one;
    ($st, $one) = api(GET => "/api/admin/vcs/deliveries/$d2", token => $ftok);
    is($st, 200, 'founder: one delivery');
    is_deeply($one->{payload}, { action => 'created', starred => 1 }, '... with its payload');
    is($one->{event}, 'star', '... and its event');
    ($st) = api(GET => '/api/admin/vcs/deliveries/' . vcs_uuid(), token => $ftok);
    is($st, 404, 'an unknown delivery: 404');
    my $p;
    ($st, $p) = api(GET => '/api/admin/vcs/deliveries', token => new_token($owner, scope => 'admin'));
    is($st, 404, 'an org owner who is no founder: 404, as if it did not exist (issue 24)');
}

done_testing();
