# Strict input: every JSON edge case (duplicate keys, 2049-deep nesting,
# \u0000, huge integers, invalid UTF-8, bare scalars, 10 MB strings, wrong
# types, absurd limits) against
# POST /api/me/tokens, each a 4xx problem document, never a 5xx, and none
# creating anything; body limits with Content-Length and chunked; absurd
# query parameters.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use IO::Socket::INET;
use SvcTest;

my $user = new_user('jsonedge');
my $tok = new_token($user, scope => 'admin');
my $uid = psql_value("SELECT id FROM users WHERE email = '$user'");

sub count_tokens { psql_value("SELECT count(*) FROM api_tokens WHERE user_id = '$uid'") }

my $deep = ('[' x 2049) . (']' x 2049);
my @cases = (
    # name, raw body, expected status, expected code
    ['duplicate keys', '{"name":"a","scope":"read","name":"b"}', 400, 'invalid_json'],
    ['2049-deep nesting', qq({"name":"a","scope":"read","x":$deep}), 400, 'invalid_json'],
    ['2049-deep nesting alone', $deep, 400, 'invalid_json'],
    ['\\u0000 in a string', '{"name":"a\u0000b","scope":"read"}', 400, 'invalid_json'],
    ['\\u0000 in a key', '{"na\u0000me":"a","scope":"read"}', 400, 'invalid_json'],
    ['a huge integer', '{"name":"a","scope":"read","expires_in_days":123456789012345678901234567890}',
     400, 'invalid_json'],
    ['a huge real', '{"name":"a","scope":"read","expires_in_days":1e400}', 400, 'invalid_json'],
    ['an int64 out of range', '{"name":"a","scope":"read","expires_in_days":9223372036854775807}',
     400, 'validation_failed'],
    ['a negative integer', '{"name":"a","scope":"read","expires_in_days":-1}', 400,
     'validation_failed'],
    ['a real for an integer', '{"name":"a","scope":"read","expires_in_days":1.5}', 400,
     'validation_failed'],
    ['invalid UTF-8', qq({"name":"\xff\xfe","scope":"read"}), 400, 'invalid_json'],
    ['overlong UTF-8', qq({"name":"\xc0\xaf","scope":"read"}), 400, 'invalid_json'],
    ['an encoded surrogate', qq({"name":"\xed\xa0\x80","scope":"read"}), 400, 'invalid_json'],
    # jansson's message quotes the body near an error cut inside a character:
    # the problem document must still be one (found by t/fuzz/fuzz_json_body.c).
    ['an invalid escape after 2-byte characters',
     qq({"name":"\xcc\x92\xcc\x904\\\xcc\x92\xcc\x904","scope":"read"}), 400, 'invalid_json'],
    ['a bare number', '1', 400, 'invalid_json'],
    ['a bare string', '"svc"', 400, 'invalid_json'],
    ['a bare true', 'true', 400, 'invalid_json'],
    ['a bare null', 'null', 400, 'invalid_json'],
    ['an array', '[{"name":"a","scope":"read"}]', 400, 'invalid_json'],
    ['trailing garbage', '{"name":"a","scope":"read"} x', 400, 'invalid_json'],
    ['two objects', '{"name":"a","scope":"read"}{}', 400, 'invalid_json'],
    ['truncated', '{"name":"a","scope":', 400, 'invalid_json'],
    ['an empty object', '{}', 400, 'validation_failed'],
    ['wrong type: number for name', '{"name":5,"scope":"read"}', 400, 'validation_failed'],
    ['wrong type: array for scope', '{"name":"a","scope":["read"]}', 400, 'validation_failed'],
    ['wrong type: string for days', '{"name":"a","scope":"read","expires_in_days":"30"}', 400,
     'validation_failed'],
    ['wrong type: object for org', '{"name":"a","scope":"read","org":{"slug":"x"}}', 400,
     'validation_failed'],
    ['wrong type: bool for name', '{"name":true,"scope":"read"}', 400, 'validation_failed'],
    ['null for a required field', '{"name":null,"scope":"read"}', 400, 'validation_failed'],
    ['an unknown field', '{"name":"a","scope":"read","admin":true}', 400, 'validation_failed'],
    ['mass assignment: id', '{"name":"a","scope":"read","id":"tok_x"}', 400,
     'validation_failed'],
    ['mass assignment: user_id', '{"name":"a","scope":"read","user_id":"usr_x"}', 400,
     'validation_failed'],
    ['mass assignment: created_at', '{"name":"a","scope":"read","created_at":"2020-01-01T00:00:00Z"}',
     400, 'validation_failed'],
    ['a control character in the name', qq({"name":"a\\nb","scope":"read"}), 400,
     'validation_failed'],
    ['an unknown scope', '{"name":"a","scope":"root"}', 400, 'validation_failed'],
    ['an invalid org slug', '{"name":"a","scope":"read","org":"Not A Slug"}', 400,
     'validation_failed'],
    ['not JSON at all', 'name=a&scope=read', 400, 'invalid_json'],
    ['an empty body', '', 400, 'validation_failed'],
);


my $before = count_tokens();
for my $c (@cases) {
    my ($name, $raw, $status, $code) = @$c;
    my ($st, $p, $res) = api(POST => '/api/me/tokens', token => $tok, raw => $raw,
                             headers => { 'Content-Type' => 'application/json' });
    is($st, $status, "$name: $status");
    like($res->header('Content-Type') // '', qr{^application/problem\+json}, "$name: problem document");
    is(ref $p eq 'HASH' ? $p->{code} : '', $code, "$name: code $code");
    ok(ref $p eq 'HASH' && $p->{request_id}, "$name: request_id");
    is(count_tokens(), $before, "$name: nothing created");
}

# Field errors name the field.
{
    my ($st, $p) = api(POST => '/api/me/tokens', token => $tok,
                       json => { name => 'a', scope => 'read', role => 'owner' });
    is($p->{errors}[0]{field}, 'role', 'an unknown field is named');
    is($p->{errors}[0]{code}, 'unknown_field', '... as unknown_field');
    ($st, $p) = api(POST => '/api/me/tokens', token => $tok, json => {});
    is_deeply([sort map { $_->{field} } @{ $p->{errors} }], [qw(name scope)],
              'every missing required field is named');
    is($p->{errors}[0]{code}, 'required', '... as required');
}

# Content types.
for my $ct ('text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data') {
    my ($st, $p) = api(POST => '/api/me/tokens', token => $tok,
                       raw => '{"name":"a","scope":"read"}', headers => { 'Content-Type' => $ct });
    is($st, 415, "Content-Type $ct: 415");
    is($p->{code}, 'unsupported_media_type', "Content-Type $ct: unsupported_media_type");
    is(count_tokens(), $before, "Content-Type $ct: nothing created");
    ok(1, "Content-Type $ct: checked");
}
{
    my ($st) = api(POST => '/api/me/tokens', token => $tok,
                   raw => '{"name":"charset","scope":"read"}',
                   headers => { 'Content-Type' => 'application/json; charset=utf-8' });
    is($st, 201, 'application/json with a charset is JSON');
    $before = count_tokens();
}

# --- body limits: Content-Length and chunked ------------------------------------------------
# A raw socket, so the test controls the framing exactly (and sends a 10 MB
# string without building a 10 MB request object).
sub raw_request {
    my ($head, $body_writer) = @_;
    my $hostport = Apache::TestRequest::hostport();
    my $sock = IO::Socket::INET->new(PeerAddr => $hostport, Timeout => 30) or die "connect: $!";
    $sock->autoflush(1);
    print $sock $head;
    local $SIG{PIPE} = 'IGNORE';
    $body_writer->($sock) if $body_writer;
    my $resp = '';
    while (sysread($sock, my $buf, 65536)) { $resp .= $buf }
    close $sock;
    SvcContract::contract_raw($head, $resp);
    my ($status) = $resp =~ m{\AHTTP/1\.\d (\d{3})};
    my ($body) = $resp =~ /\r\n\r\n(.*)\z/s;
    return ($status // 0, $body // '', $resp);
}

my $ten_mb = '{"name":"' . ('a' x (10 * 1024 * 1024)) . '","scope":"read"}';
{
    my ($st, $body) = raw_request(
        "POST /api/me/tokens HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer $tok\r\n"
        . "Content-Type: application/json\r\nContent-Length: " . length($ten_mb)
        . "\r\nConnection: close\r\n\r\n",
        sub { my $s = shift; print $s $ten_mb });
    is($st, 413, 'a 10 MB string with Content-Length: 413');
    like($body, qr/"code":"payload_too_large"/, '... payload_too_large');
    like($body, qr/"request_id":"req_/, '... a problem document');
    is(count_tokens(), $before, '... nothing created');
}
{
    my ($st, $body) = raw_request(
        "POST /api/me/tokens HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer $tok\r\n"
        . "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
        . "Connection: close\r\n\r\n",
        sub {
            my $s = shift;
            for (my $i = 0; $i < length $ten_mb; $i += 65536) {
                my $chunk = substr($ten_mb, $i, 65536);
                printf $s "%x\r\n%s\r\n", length $chunk, $chunk or last;
            }
            print $s "0\r\n\r\n";
        });
    is($st, 413, 'a 10 MB string, chunked: 413');
    like($body, qr/"code":"payload_too_large"/, '... payload_too_large');
    like($body, qr/"request_id":"req_/, '... a problem document');
    is(count_tokens(), $before, '... nothing created');
}
{
    # Just over the route's 16 KiB cap, chunked in small pieces.
    my $over = '{"name":"' . ('b' x 16400) . '","scope":"read"}';
    my ($st, $body) = raw_request(
        "POST /api/me/tokens HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer $tok\r\n"
        . "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
        . "Connection: close\r\n\r\n",
        sub {
            my $s = shift;
            for (my $i = 0; $i < length $over; $i += 1000) {
                my $chunk = substr($over, $i, 1000);
                printf $s "%x\r\n%s\r\n", length $chunk, $chunk;
            }
            print $s "0\r\n\r\n";
        });
    is($st, 413, 'just over the cap, chunked: 413');
    is(count_tokens(), $before, '... nothing created');
    my ($st2) = raw_request(
        "POST /api/me/tokens HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer $tok\r\n"
        . "Content-Type: application/json\r\nContent-Length: " . length($over)
        . "\r\nConnection: close\r\n\r\n", sub { my $s = shift; print $s $over });
    is($st2, 413, 'just over the cap, Content-Length: 413');
    # A name of 100 characters inside a body under the cap is accepted.
    my ($st3) = api(POST => '/api/me/tokens', token => $tok,
                    json => { name => 'n' x 100, scope => 'read' });
    is($st3, 201, 'a body under the cap is accepted');
    $before = count_tokens();
}

# --- limits on text count characters, whatever the encoding (issue 14, item 11) ------------
# A project description may be 2,000 characters. 2,000 emoji written as \u
# escapes (a surrogate pair each, what most JSON encoders emit) are 24 KB,
# which the 16 KiB cap of the route refused with 413, while the same text
# as raw UTF-8 (8 KB) passed. Caps now fit the largest valid body in its
# escaped form; past the limit in characters it is a 400, in either form.
{
    my $org = new_org($user, prefix => 'emoji');
    my $escaped = sub { '\\uD83D\\uDE00' x shift };
    my $raw = sub { "\xF0\x9F\x98\x80" x shift };
    my $body = sub {
        my ($desc) = @_;
        return '{"slug":"' . uniq('e') . '","name":"Emoji","description":"' . $desc . '"}';
    };
    for my $c ([ 'as \\u escapes', $escaped ], [ 'as raw UTF-8', $raw ]) {
        my ($how, $make) = @$c;
        my ($st, $p) = api(POST => "/api/orgs/$org/projects", token => $tok,
                           raw => $body->($make->(2000)),
                           headers => { 'Content-Type' => 'application/json' });
        is($st, 201, "2,000 emoji $how: 201") or diag(explain($p));
        is(length($p->{description} // ''), 2000, '... 2,000 characters stored')
            if $st == 201;
        ($st, $p) = api(POST => "/api/orgs/$org/projects", token => $tok,
                        raw => $body->($make->(2001)),
                        headers => { 'Content-Type' => 'application/json' });
        is($st, 400, "2,001 emoji $how: 400, not 413") or diag(explain($p));
        is($p && $p->{code}, 'validation_failed', '... validation_failed');
        is($p && $p->{errors}[0]{field}, 'description', '... naming description');
        is($p && $p->{errors}[0]{code}, 'invalid_length', '... invalid_length');
    }
    # The cap still holds for what no valid body could be.
    my ($st, $p) = api(POST => "/api/orgs/$org/projects", token => $tok,
                       raw => $body->($escaped->(20000)),
                       headers => { 'Content-Type' => 'application/json' });
    is($st, 413, 'ten times the largest valid description: 413');
    is($p && $p->{code}, 'payload_too_large', '... payload_too_large');
}

# --- bodies where none is taken, absurd query parameters ------------------------------------
{
    my ($st, $p) = api(GET => '/api/me/tokens', token => $tok, raw => '{"a":1}',
                       headers => { 'Content-Type' => 'application/json' });
    is($st, 400, 'a body on GET: 400');
    is($p->{code}, 'body_not_allowed', '... body_not_allowed');
    for my $q ('limit=0', 'limit=201', 'limit=-1', 'limit=1e3', 'limit=abc',
               'limit=99999999999999999999', 'cursor=garbage', 'cursor=' . ('A' x 500)) {
        my ($s, $pp) = api(GET => "/api/me/tokens?$q", token => $tok);
        is($s, 400, "?$q: 400");
        is($pp->{code}, 'validation_failed', "?$q: validation_failed");
        ok($pp->{errors}[0]{field} =~ /^(limit|cursor)$/, "?$q: names the parameter");
    }
    my ($s) = api(GET => '/api/me/tokens?limit=200', token => $tok);
    is($s, 200, '?limit=200 is fine');
}
done_testing();
