# t/lib/FakeLLM.pm: the fake LLM providers speak the public APIs (shapes,
# statuses, headers), fail the way the real ones do in every mode, record
# what they were sent, and never leave a process behind. Needs no httpd.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use File::Temp qw(tempdir);
use HTTP::Request ();
use IO::Select ();
use IO::Socket::INET ();
use JSON::PP ();
use LWP::UserAgent ();
use POSIX ();
use Time::HiRes qw(time sleep);

use FakeLLM;

my $J = JSON::PP->new->utf8->canonical;
my $ua = LWP::UserAgent->new(timeout => 30, keep_alive => 0, env_proxy => 0);

my %MODEL = (openai => 'gpt-4o-mini', anthropic => 'claude-sonnet-4-20250514');
my %CREATE = (openai => '/v1/chat/completions', anthropic => '/v1/messages');

# call($llm, METHOD, PATH, body => $data | raw => $bytes, key => $key (undef:
# none), version => $anthropic_version (undef: none), headers => {...})
#   → ($res, $json_or_undef)
sub call {
    my ($llm, $method, $path, %o) = @_;
    my $req = HTTP::Request->new($method => $llm->url . $path);
    my $key = exists $o{key} ? $o{key} : $llm->key;
    if ($llm->flavor eq 'openai') {
        $req->header(Authorization => "Bearer $key") if defined $key;
    }
    else {
        $req->header('x-api-key' => $key) if defined $key;
        my $v = exists $o{version} ? $o{version} : '2023-06-01';
        $req->header('anthropic-version' => $v) if defined $v;
    }
    if (exists $o{body}) {
        $req->header('Content-Type' => 'application/json');
        $req->content($J->encode($o{body}));
    }
    elsif (defined $o{raw}) {
        $req->header('Content-Type' => 'application/json');
        $req->content($o{raw});
    }
    $req->header($_ => $o{headers}{$_}) for sort keys %{ $o{headers} // {} };
    my $res = $ua->request($req);
    my $data = eval { $J->decode($res->content) };
    return ($res, $data);
}

# A minimal valid body for the flavor's create call.
sub body {
    my ($flavor, %o) = @_;
    my $user = $o{user} // 'Say hello.';
    if ($flavor eq 'openai') {
        my @m = ((defined $o{system} ? ({ role => 'system', content => $o{system} }) : ()),
                 { role => 'user', content => $user });
        return { model => $MODEL{openai}, messages => \@m,
                 (defined $o{max} ? (max_tokens => $o{max}) : ()), %{ $o{extra} // {} } };
    }
    return { model => $MODEL{anthropic}, max_tokens => $o{max} // 1024,
             (defined $o{system} ? (system => $o{system}) : ()),
             messages => [ { role => 'user', content => $user } ], %{ $o{extra} // {} } };
}

sub create {
    my ($llm, %o) = @_;
    my %c = map { $_ => delete $o{$_} } grep { exists $o{$_} } qw(key version);
    return call($llm, POST => $CREATE{ $llm->flavor }, body => body($llm->flavor, %o), %c);
}

# The reply text and usage of a successful create answer.
sub text_of {
    my ($flavor, $d) = @_;
    return $flavor eq 'openai' ? $d->{choices}[0]{message}{content} : $d->{content}[0]{text};
}

sub usage_of {
    my ($flavor, $d) = @_;
    return $flavor eq 'openai'
        ? ($d->{usage}{prompt_tokens}, $d->{usage}{completion_tokens})
        : ($d->{usage}{input_tokens}, $d->{usage}{output_tokens});
}

# The error document's type (OpenAI: error.type; Anthropic: error.type under
# {"type":"error"}) and code (OpenAI only).
sub err_of {
    my ($flavor, $d) = @_;
    return (undef, undef) unless ref $d eq 'HASH' && ref $d->{error} eq 'HASH';
    if ($flavor eq 'anthropic') {
        return (undef, undef) unless ($d->{type} // '') eq 'error';
        return ($d->{error}{type}, undef);
    }
    return ($d->{error}{type}, $d->{error}{code});
}

# Checks the headers every answer of the flavor carries.
sub provider_headers_ok {
    my ($flavor, $res, $what) = @_;
    like($res->header('Content-Type') // '', qr{^application/json}, "$what: JSON content type");
    if ($flavor eq 'openai') {
        like($res->header('x-request-id') // '', qr/^req_[0-9a-f]{32}\z/, "$what: x-request-id");
        like($res->header('openai-processing-ms') // '', qr/^\d+\z/,
             "$what: openai-processing-ms");
        ok(defined $res->header('x-ratelimit-remaining-requests'),
           "$what: x-ratelimit-remaining-requests");
    }
    else {
        like($res->header('request-id') // '', qr/^req_[A-Za-z0-9]{24}\z/, "$what: request-id");
        ok(defined $res->header('anthropic-ratelimit-requests-remaining'),
           "$what: anthropic-ratelimit-requests-remaining");
    }
}

# raw($llm, $method, $path, $body, %headers) → a connected socket that has
# sent the request (the API key header of the flavor included).
sub raw {
    my ($llm, $method, $path, $body) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $llm->port,
                                  Proto => 'tcp') or die "connect: $!";
    my $auth = $llm->flavor eq 'openai'
        ? "Authorization: Bearer " . $llm->key . "\r\n"
        : "x-api-key: " . $llm->key . "\r\nanthropic-version: 2023-06-01\r\n";
    $body //= '';
    print $s "$method $path HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n$auth"
        . "Content-Type: application/json\r\nContent-Length: " . length($body) . "\r\n\r\n$body";
    return $s;
}

# Reads what arrives on $s within $seconds: (bytes, closed?).
sub drain {
    my ($s, $seconds) = @_;
    my $sel = IO::Select->new($s);
    my $buf = '';
    my $until = time + $seconds;
    while ((my $left = $until - time) > 0) {
        last unless $sel->can_read($left);
        my $n = sysread($s, $buf, 65536, length $buf);
        return ($buf, 1) unless $n;
    }
    return ($buf, 0);
}

# wait_until(sub { ... }, $seconds) → the last value of the callback (waiting
# on a condition, never asserting on time).
sub wait_until {
    my ($cb, $seconds) = @_;
    my $until = time + $seconds;
    my $v;
    while (1) {
        $v = $cb->();
        return $v if $v || time >= $until;
        sleep 0.05;
    }
}

sub alive { my $pid = shift; return kill(0, $pid) ? 1 : 0 }

sub gone_within {
    my ($pid, $seconds) = @_;
    my $until = time + $seconds;
    while (time < $until) {
        return 1 unless alive($pid);
        sleep 0.05;
    }
    return 0;
}

for my $flavor (qw(openai anthropic)) {
    my $llm = FakeLLM->start(flavor => $flavor);
    my $key = $llm->key;

    subtest "$flavor: start" => sub {
        like($llm->url, qr{^http://127\.0\.0\.1:\d+\z}, 'url is the base, without /v1');
        like($key, $flavor eq 'openai' ? qr/^sk-proj-\w{20,}\z/ : qr/^sk-ant-api03-[\w-]{20,}\z/,
             'a random key of the provider\'s form');
        my $other = FakeLLM->start(flavor => $flavor, key => 'sk-given-key-1234567');
        is($other->key, 'sk-given-key-1234567', 'a given key is the key');
        my ($res) = call($other, GET => '/v1/models');
        is($res->code, 200, 'and it is accepted');
        $other->stop;
        ok(!alive($other->pid), 'stop ends the server');
        is($llm->state->{mode}, 'ok', 'the default mode is ok');
    };

    subtest "$flavor: models" => sub {
        my ($res, $d) = call($llm, GET => '/v1/models');
        is($res->code, 200, 'GET /v1/models 200');
        provider_headers_ok($flavor, $res, 'models');
        ok(ref $d->{data} eq 'ARRAY' && @{ $d->{data} } >= 2, 'a list of models');
        my $m = $d->{data}[0];
        if ($flavor eq 'openai') {
            is($d->{object}, 'list', 'object list');
            is_deeply([ sort keys %$m ], [qw(created id object owned_by)], 'model fields');
            is($m->{object}, 'model', 'object model');
        }
        else {
            is_deeply([ sort keys %$d ], [qw(data first_id has_more last_id)], 'page fields');
            is_deeply([ sort keys %$m ], [qw(created_at display_name id type)], 'model fields');
            is($m->{type}, 'model', 'type model');
            ok(!$d->{has_more}, 'has_more false');
            is($d->{first_id}, $m->{id}, 'first_id');
            is($d->{last_id}, $d->{data}[-1]{id}, 'last_id');
            my ($r1, $p1) = call($llm, GET => '/v1/models?limit=1');
            is(scalar @{ $p1->{data} }, 1, 'limit=1: one model');
            ok($p1->{has_more}, 'limit=1: has_more');
            my ($r2, $p2) = call($llm, GET => "/v1/models?limit=1&after_id=$p1->{last_id}");
            is($p2->{data}[0]{id}, $d->{data}[1]{id}, 'after_id pages on');
        }
        my ($r1, $one) = call($llm, GET => "/v1/models/$m->{id}");
        is($r1->code, 200, 'GET /v1/models/{id} 200');
        is($one->{id}, $m->{id}, 'the model');
        my ($r2, $e) = call($llm, GET => '/v1/models/no-such-model');
        is($r2->code, 404, 'unknown model id 404');
        my ($type, $code) = err_of($flavor, $e);
        is($type, $flavor eq 'openai' ? 'invalid_request_error' : 'not_found_error', 'error type');
        is($code, 'model_not_found', 'code model_not_found') if $flavor eq 'openai';

        $llm->control(models => [ 'm-one', { id => 'm-two' } ]);
        (undef, $d) = call($llm, GET => '/v1/models');
        is_deeply([ map { $_->{id} } @{ $d->{data} } ], [qw(m-one m-two)], 'models are set');
        my ($r3) = call($llm, POST => $CREATE{$flavor},
                        body => { %{ body($flavor) }, model => 'm-two' });
        is($r3->code, 200, 'a listed model is usable');
        my ($r4, $e4) = create($llm);
        is($r4->code, 404, 'a model no longer listed: 404');
        ($type, $code) = err_of($flavor, $e4);
        if ($flavor eq 'openai') {
            is($code, 'model_not_found', 'model_not_found');
            like($e4->{error}{message}, qr/The model `gpt-4o-mini` does not exist/, 'message');
        }
        else {
            is($type, 'not_found_error', 'not_found_error');
            is($e4->{error}{message}, "model: $MODEL{anthropic}", 'message names the model');
        }
        $llm->control(models => [ $MODEL{$flavor}, 'm-two' ]);
        my ($r5, $d5) = call($llm, GET => '/v1/models', key => 'sk-wrong-0000000000');
        is($r5->code, 401, 'models need the key too');
    };

    subtest "$flavor: authentication" => sub {
        my ($res, $d) = create($llm, key => undef);
        is($res->code, 401, 'no key: 401');
        provider_headers_ok($flavor, $res, 'no key');
        my ($type, $code) = err_of($flavor, $d);
        if ($flavor eq 'openai') {
            is($type, 'invalid_request_error', 'no key: invalid_request_error');
            is($code, undef, 'no key: code null, as the real one');
            like($d->{error}{message}, qr/^You didn't provide an API key/, 'no key: message');
            ok(exists $d->{error}{param} && !defined $d->{error}{param}, 'param null');
        }
        else {
            is($type, 'authentication_error', 'no key: authentication_error');
            is($d->{error}{message}, 'x-api-key header is required', 'no key: message');
            like($d->{request_id} // '', qr/^req_/, 'request_id in the body');
        }

        my $wrong = 'sk-wrongwrongwrongwrongABCD';
        ($res, $d) = create($llm, key => $wrong);
        is($res->code, 401, 'wrong key: 401');
        ($type, $code) = err_of($flavor, $d);
        if ($flavor eq 'openai') {
            is($code, 'invalid_api_key', 'wrong key: invalid_api_key');
            is($type, 'invalid_request_error', 'wrong key: invalid_request_error');
            like($d->{error}{message}, qr/^Incorrect API key provided: sk-\*+ABCD\. /,
                 'wrong key: masked in the message');
            unlike($d->{error}{message}, qr/wrongwrong/, 'the key itself is not echoed');
        }
        else {
            is($type, 'authentication_error', 'wrong key: authentication_error');
            is($d->{error}{message}, 'invalid x-api-key', 'wrong key: message');
        }

        # The key in the other provider's header is no key at all.
        my $req = HTTP::Request->new(POST => $llm->url . $CREATE{$flavor});
        $req->header('Content-Type' => 'application/json');
        $req->header('anthropic-version' => '2023-06-01');
        $req->content($J->encode(body($flavor)));
        if ($flavor eq 'openai') { $req->header('x-api-key' => $key) }
        else                     { $req->header(Authorization => "Bearer $key") }
        is($ua->request($req)->code, 401, 'the key in the wrong header: 401');

        if ($flavor eq 'anthropic') {
            ($res, $d) = create($llm, version => undef);
            is($res->code, 400, 'no anthropic-version: 400');
            is_deeply([ err_of($flavor, $d) ], [ 'invalid_request_error', undef ],
                      'no anthropic-version: invalid_request_error');
            is($d->{error}{message}, 'anthropic-version: header is required', 'message');
            ($res, $d) = create($llm, version => '1999-01-01');
            is($res->code, 400, 'an unknown anthropic-version: 400');
        }

        $llm->control(key => 'sk-rotated-key-99999999');
        is($llm->key, 'sk-rotated-key-99999999', 'the key can be changed');
        ($res) = create($llm, key => $key);
        is($res->code, 401, 'the old key no longer works');
        ($res) = create($llm);
        is($res->code, 200, 'the new one does');
        $llm->control(key => $key);
    };

    subtest "$flavor: completions, replies, usage, request log" => sub {
        $llm->reset;
        $llm->control(replies => [ 'first reply', "second \x{e9}\x{e9}\x{e9}" ],
                      reply => 'the default');
        # prompt: "abcd" + "efghi" = 9 bytes → 3 tokens.
        my ($res, $d) = create($llm, system => 'abcd', user => 'efghi');
        is($res->code, 200, 'create 200');
        provider_headers_ok($flavor, $res, 'create');
        if ($flavor eq 'openai') {
            is_deeply([ sort keys %$d ],
                      [qw(choices created id model object service_tier system_fingerprint usage)],
                      'completion fields');
            like($d->{id}, qr/^chatcmpl-\w+\z/, 'id chatcmpl-…');
            is($d->{object}, 'chat.completion', 'object chat.completion');
            like($d->{created}, qr/^\d+\z/, 'created');
            is($d->{model}, $MODEL{openai}, 'model echoed');
            is($d->{choices}[0]{index}, 0, 'choice index 0');
            is($d->{choices}[0]{message}{role}, 'assistant', 'role assistant');
            is($d->{choices}[0]{finish_reason}, 'stop', 'finish_reason stop');
            is($d->{usage}{total_tokens}, 3 + 3, 'total_tokens = prompt + completion');
        }
        else {
            is_deeply([ sort keys %$d ],
                      [qw(content id model role stop_reason stop_sequence type usage)],
                      'message fields');
            like($d->{id}, qr/^msg_\w+\z/, 'id msg_…');
            is($d->{type}, 'message', 'type message');
            is($d->{role}, 'assistant', 'role assistant');
            is($d->{model}, $MODEL{anthropic}, 'model echoed');
            is($d->{content}[0]{type}, 'text', 'a text block');
            is($d->{stop_reason}, 'end_turn', 'stop_reason end_turn');
            ok(exists $d->{stop_sequence} && !defined $d->{stop_sequence}, 'stop_sequence null');
        }
        is(text_of($flavor, $d), 'first reply', 'the first queued reply');
        is_deeply([ usage_of($flavor, $d) ], [ 3, 3 ], 'usage = ceil(bytes/4) of prompt and reply');

        (undef, $d) = create($llm, user => 'x');
        is(text_of($flavor, $d), "second \x{e9}\x{e9}\x{e9}", 'then the second');
        is((usage_of($flavor, $d))[1], 4, 'tokens count bytes, not characters (13 bytes → 4)');
        (undef, $d) = create($llm, user => 'x');
        is(text_of($flavor, $d), 'the default', 'then the default reply');
        $llm->control(reply => undef);
        (undef, $d) = create($llm, user => "Build me\na *todo* app");
        like(text_of($flavor, $d), qr/^# Reply\n\nYou said: Build me a \*todo\* app\n\z/,
             'then an echo of the last user message, in markdown');

        # max_tokens cuts the reply as the providers do.
        $llm->control(replies => ['0123456789abcdef']);
        (undef, $d) = create($llm, max => 1);
        is(text_of($flavor, $d), '0123', 'max_tokens 1: four bytes');
        is($flavor eq 'openai' ? $d->{choices}[0]{finish_reason} : $d->{stop_reason},
           $flavor eq 'openai' ? 'length' : 'max_tokens', 'and the stop reason says so');
        is((usage_of($flavor, $d))[1], 1, 'one completion token');

        my $reqs = $llm->requests;
        my $last = $reqs->[-1];
        is($last->{method}, 'POST', 'log: method');
        is($last->{path}, $CREATE{$flavor}, 'log: path');
        is($last->{body}{max_tokens}, 1, 'log: the parsed body');
        is($last->{status}, 200, 'log: the status answered');
        if ($flavor eq 'openai') {
            is($last->{headers}{authorization}, "Bearer $key", 'log: the key, in its header');
        }
        else {
            is($last->{headers}{'x-api-key'}, $key, 'log: the key, in its header');
            is($last->{headers}{'anthropic-version'}, '2023-06-01', 'log: anthropic-version');
        }
        like($last->{headers}{'content-type'}, qr{^application/json}, 'log: every header');
        is(scalar(grep { $_->{path} eq $CREATE{$flavor} } @$reqs), 5, 'log: every request');

        call($llm, POST => $CREATE{$flavor}, raw => '{"model": nope');
        is($llm->requests->[-1]{body_raw}, '{"model": nope', 'log: a body that is not JSON, raw');

        $llm->control(replies => ['a']);
        call($llm, GET => '/v1/models') for 1 .. 104;
        $reqs = $llm->requests;
        is(scalar @$reqs, 100, 'the log keeps the last 100 requests');
        is($reqs->[-1]{path}, '/v1/models', 'the newest last');
        is($llm->state->{replies}[0], 'a', 'listing models consumes no reply');

        $llm->reset;
        my $s = $llm->state;
        is_deeply([ $s->{mode}, $s->{replies}, $s->{requests}, $s->{reply} ],
                  [ 'ok', [], [], undef ], 'reset: mode, replies, log');
        is($s->{key}, $key, 'reset keeps the key');
    };

    subtest "$flavor: request validation" => sub {
        $llm->reset;
        my $bad = sub {
            my ($what, $body, $status, $re, $code) = @_;
            my ($res, $d) = ref $body
                ? call($llm, POST => $CREATE{$flavor}, body => $body)
                : call($llm, POST => $CREATE{$flavor}, raw => $body);
            is($res->code, $status, "$what: $status");
            my ($type, $c) = err_of($flavor, $d);
            is($type, $status == 404 ? ($flavor eq 'openai' ? 'invalid_request_error'
                                                            : 'not_found_error')
                                     : 'invalid_request_error', "$what: error type");
            like($d->{error}{message} // '', $re, "$what: message");
            is($c, $code, "$what: code") if $flavor eq 'openai' && @_ > 4;
        };
        my %ok = %{ body($flavor) };
        $bad->('not JSON', '{"model":', 400,
               $flavor eq 'openai' ? qr/could not parse the JSON body/ : qr/error parsing the body/);
        $bad->('a JSON array', '[]', 400,
               $flavor eq 'openai' ? qr/could not parse the JSON body/ : qr/valid dictionary/);
        $bad->('unknown model', { %ok, model => 'no-such-model' }, 404,
               qr/no-such-model/, 'model_not_found');
        $bad->('no messages', { map { $_ => $ok{$_} } grep { $_ ne 'messages' } keys %ok }, 400,
               qr/messages/, 'missing_required_parameter');
        $bad->('empty messages', { %ok, messages => [] }, 400, qr/messages/);
        $bad->('unknown field', { %ok, bogus_field => 1 }, 400,
               $flavor eq 'openai' ? qr/^Unrecognized request argument supplied: bogus_field\z/
                                   : qr/^bogus_field: Extra inputs are not permitted\z/);
        $bad->('max_tokens 0', { %ok, max_tokens => 0 }, 400, qr/max_tokens/,
               'integer_below_min_value');
        $bad->('max_tokens a string', { %ok, max_tokens => '5' }, 400, qr/max_tokens/,
               'invalid_type');
        $bad->('temperature out of range', { %ok, temperature => 7 }, 400, qr/temperature/);
        $bad->('a bad role', { %ok, messages => [ { role => 'wizard', content => 'x' } ] }, 400,
               qr/wizard|role/);
        if ($flavor eq 'openai') {
            $bad->('no model', { messages => $ok{messages} }, 400,
                   qr/^you must provide a model parameter\z/);
            $bad->('JSON mode without the word', { %ok,
                   messages => [ { role => 'user', content => 'Give me an object.' } ],
                   response_format => { type => 'json_object' } }, 400,
                   qr/must contain the word 'json'/);
            $bad->('an unknown response_format', { %ok, response_format => { type => 'xml' } },
                   400, qr/Supported values are/, 'invalid_value');
            my ($res, $d) = call($llm, POST => $CREATE{$flavor}, body => { %ok,
                max_completion_tokens => 50, temperature => 0.2,
                messages => [ { role => 'system', content => 'Answer in JSON.' },
                              { role => 'user', content => 'An object, please.' } ],
                response_format => { type => 'json_object' } });
            is($res->code, 200, 'JSON mode with the word: 200');
            ok(ref $J->decode(text_of($flavor, $d)) eq 'HASH',
               'the default reply in JSON mode is a JSON object');
            is($llm->requests->[-1]{body}{response_format}{type}, 'json_object',
               'log: JSON mode was asked for');
        }
        else {
            $bad->('no max_tokens', { map { $_ => $ok{$_} } grep { $_ ne 'max_tokens' } keys %ok },
                   400, qr/^max_tokens: Field required\z/);
            $bad->('no model', { map { $_ => $ok{$_} } grep { $_ ne 'model' } keys %ok },
                   400, qr/^model: Field required\z/);
            $bad->('a system role in messages', { %ok, messages => [
                   { role => 'system', content => 'x' }, { role => 'user', content => 'y' } ] },
                   400, qr/top-level `system` parameter/);
            $bad->('empty content', { %ok, messages => [ { role => 'user', content => '' } ] },
                   400, qr/must be non-empty/);
            $bad->('an OpenAI parameter', { %ok, response_format => { type => 'json_object' } },
                   400, qr/^response_format: Extra inputs are not permitted\z/);
            my ($res) = call($llm, POST => $CREATE{$flavor}, body => { %ok,
                system => [ { type => 'text', text => 'Be brief.' } ],
                messages => [ { role => 'user', content => [ { type => 'text', text => 'Hi' } ] },
                              { role => 'assistant', content => 'Hello' },
                              { role => 'user', content => 'Again' } ] });
            is($res->code, 200, 'blocks and a conversation: 200');
        }
        my ($res, $d) = call($llm, GET => $CREATE{$flavor});
        is($res->code, $flavor eq 'openai' ? 404 : 404, 'GET on the create path: 404');
        ($res, $d) = call($llm, POST => '/v1/nothing-here', body => {});
        is($res->code, 404, 'an unknown path: 404');
        like($d->{error}{message}, $flavor eq 'openai'
             ? qr{^Invalid URL \(POST /v1/nothing-here\)\z} : qr/^Not Found\z/, 'its message');
    };

    subtest "$flavor: mode unauthorized" => sub {
        $llm->reset;
        $llm->control(mode => 'unauthorized');
        my ($res, $d) = create($llm);
        is($res->code, 401, 'the right key: 401 all the same');
        my ($type, $code) = err_of($flavor, $d);
        if ($flavor eq 'openai') {
            is($code, 'invalid_api_key', 'as if the key were wrong');
            my $tail = substr($key, -4);
            like($d->{error}{message}, qr/^Incorrect API key provided: sk-\*+\Q$tail\E\. /,
                 'the masked key');
        }
        else {
            is($type, 'authentication_error', 'as if the key were wrong');
            is($d->{error}{message}, 'invalid x-api-key', 'message');
        }
        ($res) = call($llm, GET => '/v1/models');
        is($res->code, 401, 'every endpoint');
    };

    subtest "$flavor: modes server_error, overloaded, rate_limited" => sub {
        $llm->reset;
        my %want = $flavor eq 'openai'
            ? (server_error => [ 500, 'server_error', undef ],
               overloaded   => [ 503, 'server_error', undef ],
               rate_limited => [ 429, 'requests', 'rate_limit_exceeded' ])
            : (server_error => [ 500, 'api_error' ],
               overloaded   => [ 529, 'overloaded_error' ],
               rate_limited => [ 429, 'rate_limit_error' ]);
        for my $mode (qw(server_error overloaded rate_limited)) {
            $llm->control(mode => $mode, retry_after => 7, replies => ['kept']);
            my ($res, $d) = create($llm);
            is($res->code, $want{$mode}[0], "$mode: $want{$mode}[0]");
            provider_headers_ok($flavor, $res, $mode);
            my ($type, $code) = err_of($flavor, $d);
            is($type, $want{$mode}[1], "$mode: type $want{$mode}[1]");
            is($code, $want{$mode}[2], "$mode: code") if $flavor eq 'openai';
            if ($mode eq 'rate_limited') {
                is($res->header('Retry-After'), 7, 'rate_limited: Retry-After');
            }
            else {
                ok(!defined $res->header('Retry-After'), "$mode: no Retry-After");
            }
            is($res->header('x-should-retry'), 'true', "$mode: x-should-retry true")
                if $flavor eq 'anthropic';
            ($res) = call($llm, GET => '/v1/models');
            is($res->code, $want{$mode}[0], "$mode: on every endpoint");
            ($res) = create($llm, key => 'sk-wrong-key-0000000');
            is($res->code, 401, "$mode: a wrong key is still told first");
            is($llm->state->{replies}[0], 'kept', "$mode: no reply consumed");
        }
        $llm->control(mode => 'overloaded', times => 2);
        my @codes = map { (create($llm))[0]->code } 1 .. 3;
        is_deeply(\@codes, [ $want{overloaded}[0], $want{overloaded}[0], 200 ],
                  'times 2: the mode holds for two requests, then ok');
        is($llm->state->{mode}, 'ok', 'and the mode is back to ok');
    };

    subtest "$flavor: mode garbage, empty" => sub {
        $llm->reset;
        $llm->control(mode => 'garbage', replies => ['queued']);
        my ($res, $d) = create($llm);
        is($res->code, 200, 'garbage: 200');
        like($res->header('Content-Type'), qr{^application/json}, 'garbage: claims JSON');
        ok(length $res->content, 'garbage: a body');
        ok(!defined $d, 'garbage: that is not JSON');
        ($res, $d) = call($llm, GET => '/v1/models');
        ok($res->code == 200 && !defined $d, 'garbage: on every endpoint');
        ($res) = create($llm, key => 'sk-wrong-key-0000000');
        is($res->code, 401, 'garbage: errors stay errors');

        $llm->control(mode => 'empty');
        ($res, $d) = create($llm, user => 'abcdefgh');
        is($res->code, 200, 'empty: 200');
        is(text_of($flavor, $d), '', 'empty: the text is ""');
        is_deeply([ usage_of($flavor, $d) ], [ 2, 0 ], 'empty: no completion tokens');
        is($flavor eq 'openai' ? $d->{choices}[0]{finish_reason} : $d->{stop_reason},
           $flavor eq 'openai' ? 'stop' : 'end_turn', 'empty: a normal stop');
        is($llm->state->{replies}[0], 'queued', 'neither consumed the queued reply');
        $llm->control(mode => 'ok');
        (undef, $d) = create($llm);
        is(text_of($flavor, $d), 'queued', 'which the next good answer returns');
    };

    subtest "$flavor: mode truncated" => sub {
        $llm->reset;
        $llm->control(mode => 'truncated', reply => 'x' x 400);
        my $s = raw($llm, POST => $CREATE{$flavor}, $J->encode(body($flavor)));
        my ($bytes, $closed) = drain($s, 20);
        ok($closed, 'the connection is closed');
        my ($head, $body) = split /\r\n\r\n/, $bytes, 2;
        like($head, qr{^HTTP/1\.1 200 }, 'a 200 status line');
        my ($len) = $head =~ /^Content-Length:\s*(\d+)/mi;
        ok($len && length($body) < $len, 'fewer body bytes than Content-Length announced');
        ok(length $body > 0, 'but some');
        ok(!eval { $J->decode($body); 1 }, 'the body is not complete JSON');
        my ($res) = create($llm);
        is($res->code, 200, 'LWP gets a 200 too');
        ok($res->header('Client-Aborted') || $res->header('X-Died')
           || length($res->content) < ($res->header('Content-Length') // 0),
           'and notices the body is short');
    };

    subtest "$flavor: mode slow" => sub {
        $llm->reset;
        $llm->control(mode => 'slow', delay_ms => 1500, replies => ['slowly']);
        my $t0 = time;
        my ($res, $d) = create($llm);
        my $took = time - $t0;
        is($res->code, 200, 'slow: 200');
        is(text_of($flavor, $d), 'slowly', 'slow: the right answer');
        cmp_ok($took, '>=', 1.5, 'slow: not before delay_ms');
        provider_headers_ok($flavor, $res, 'slow');

        # While a slow answer is pending the server answers others: the
        # pending one is still unanswered when another has been answered.
        $llm->control(mode => 'slow', times => 1, delay_ms => 4000);
        my $pending = raw($llm, POST => $CREATE{$flavor}, $J->encode(body($flavor)));
        ok((wait_until(sub { @{ $llm->state->{children} } }, 10)),
           'a child holds the slow answer');
        my ($res2) = create($llm);
        is($res2->code, 200, 'another request is answered meanwhile');
        my ($early) = drain($pending, 0);
        is($early, '', 'before the slow one');
        my ($late, $closed) = drain($pending, 20);
        like($late, qr{^HTTP/1\.1 200 }, 'which comes later');
        ok($closed, 'and closes');
    };

    subtest "$flavor: mode timeout" => sub {
        $llm->reset;
        $llm->control(mode => 'timeout', hang_seconds => 60);
        my $hung = raw($llm, POST => $CREATE{$flavor}, $J->encode(body($flavor)));
        ok((wait_until(sub { @{ $llm->state->{children} } }, 10)),
           'a child holds the connection');
        my @kids = @{ $llm->state->{children} };
        is(scalar @kids, 1, 'one child');
        $llm->control(mode => 'ok');
        my ($res) = create($llm);
        is($res->code, 200, 'the server answers others meanwhile');
        my ($bytes, $closed) = drain($hung, 2);
        is($bytes, '', 'not a byte on the hung connection');
        ok(!$closed, 'which stays open');
        is($llm->requests->[0]{mode}, 'timeout', 'the request was recorded');
        ok(!defined $llm->requests->[0]{status}, 'without a status');

        $llm->control(mode => 'timeout', hang_seconds => 1);
        my $short = raw($llm, GET => '/v1/models');
        ($bytes, $closed) = drain($short, 20);
        ok($closed && $bytes eq '', 'after hang_seconds: closed without a byte');

        $llm->control(mode => 'timeout', hang_seconds => 60);
        my $h2 = raw($llm, GET => '/v1/models');
        ok((wait_until(sub { @{ $llm->state->{children} } >= 2 }, 10)),
           'a second hung connection');
        push @kids, grep { my $k = $_; !grep { $_ == $k } @kids } @{ $llm->state->{children} };
        my $server = $llm->pid;
        $llm->stop;
        ok(!alive($server), 'stop ends the server');
        ok(gone_within($_, 5), "and its child $_") for @kids;
        ($bytes, $closed) = drain($hung, 5);
        ok($closed, 'the hung connections are closed');
    };
}

# --- tool calling, in each API's own form ---------------------------------------------
my %TOOLS = (
    openai => [ { type => 'function', function => { name => 'run', description => 'Run it.',
                  parameters => { type => 'object', properties => { command => { type => 'string' } },
                                  required => [ 'command' ] } } } ],
    anthropic => [ { name => 'run', description => 'Run it.',
                     input_schema => { type => 'object',
                                       properties => { command => { type => 'string' } },
                                       required => [ 'command' ] } } ],
);

subtest 'openai: tool calls' => sub {
    my $llm = FakeLLM->start(flavor => 'openai');
    $llm->control(replies => [ { tool_calls => [ { name => 'run', arguments => { command => 'ls' } },
                                                 { name => 'run', arguments => '{"command":' } ] },
                               'done' ]);
    my $b = body('openai', user => 'List the files.', extra => { tools => $TOOLS{openai} });
    my ($res, $d) = call($llm, POST => '/v1/chat/completions', body => $b);
    is($res->code, 200, 'a scripted tool reply');
    my $c = $d->{choices}[0];
    is($c->{finish_reason}, 'tool_calls', 'finish_reason tool_calls');
    ok(!defined $c->{message}{content}, 'content null');
    my @calls = @{ $c->{message}{tool_calls} };
    like($calls[0]{id}, qr/^call_[A-Za-z0-9]{24}$/, 'a call_ id');
    is($calls[0]{type}, 'function', 'type function');
    is($calls[0]{function}{name}, 'run', 'the name');
    is($calls[0]{function}{arguments}, '{"command":"ls"}', 'arguments as a JSON string');
    is($calls[1]{function}{arguments}, '{"command":', 'a scripted raw string stays as it is');
    ok($d->{usage}{completion_tokens} > 0, 'usage counts the calls');

    # The conversation goes on only with every call answered.
    my @msgs = (@{ $b->{messages} }, $c->{message});
    my ($r2, $e) = call($llm, POST => '/v1/chat/completions',
                        body => { %$b, messages => [ @msgs, { role => 'user', content => 'and?' } ] });
    is($r2->code, 400, 'a turn with a call unanswered: 400');
    like($e->{error}{message}, qr/must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: \Q$calls[0]{id}\E, \Q$calls[1]{id}\E/,
         '... naming the ids');
    ($r2, $e) = call($llm, POST => '/v1/chat/completions',
                     body => { %$b, messages => [ @{ $b->{messages} },
                         { role => 'tool', tool_call_id => 'call_x', content => 'x' } ] });
    like($e->{error}{message}, qr/messages with role 'tool' must be a response to a preceeding message with 'tool_calls'/,
         'a tool message answering nothing: 400');
    my @answered = (@msgs, map { { role => 'tool', tool_call_id => $_->{id}, content => 'ok' } } @calls);
    my $bad = $J->decode($J->encode(\@answered));
    $bad->[-3]{tool_calls}[0]{function}{arguments} = { command => 'ls' };
    ($r2, $e) = call($llm, POST => '/v1/chat/completions', body => { %$b, messages => $bad });
    like($e->{error}{message}, qr/function\.arguments': expected a string, but got an object/,
         'arguments as an object: 400, as OpenAI');
    ($r2, $d) = call($llm, POST => '/v1/chat/completions', body => { %$b, messages => \@answered });
    is($r2->code, 200, 'every call answered: the next turn');
    is($d->{choices}[0]{message}{content}, 'done', '... the next reply');
    ($r2, $e) = call($llm, POST => '/v1/chat/completions',
                     body => { %$b, tools => [ { type => 'function', function => { name => 'a b' } } ] });
    like($e->{error}{message}, qr/tools\[0\]\.function\.name': string does not match pattern/,
         'a bad tool name: 400');

    # A forced tool is called whatever is queued; a scripted call with no
    # tools offered is the test's mistake.
    $llm->control(replies => [ 'text' ]);
    ($r2, $d) = call($llm, POST => '/v1/chat/completions', body => { %$b,
        tool_choice => { type => 'function', function => { name => 'run' } } });
    is($d->{choices}[0]{message}{tool_calls}[0]{function}{arguments}, '{"command":"ok"}',
       'tool_choice names a tool: it is called, its required arguments filled');
    is($llm->state->{replies}[0], 'text', '... the queued reply kept');
    $llm->control(replies => [ { tool_calls => [ { name => 'run', arguments => {} } ] } ]);
    ($r2) = create($llm);
    is($r2->code, 500, 'a scripted tool call without tools offered: a loud 500');
    $llm->control(tools => 'refused');
    ($r2, $e) = call($llm, POST => '/v1/chat/completions', body => $b);
    is($e->{error}{message}, 'Unrecognized request argument supplied: tools',
       'tools refused: as a server that does not know them');
    $llm->control(tools => 'ignored', replies => [ 'plain' ]);
    ($r2, $d) = call($llm, POST => '/v1/chat/completions', body => { %$b,
        tool_choice => { type => 'function', function => { name => 'run' } } });
    is($d->{choices}[0]{message}{content}, 'plain', 'tools ignored: a text answer');
    $llm->control(tools => 'native', pad_bytes => 100000);
    ($r2, $d) = create($llm);
    ok(length($r2->content) >= 100000 && $d, 'pad_bytes: a large answer that is still JSON');
    $llm->stop;
};

subtest 'anthropic: tool calls' => sub {
    my $llm = FakeLLM->start(flavor => 'anthropic');
    $llm->control(replies => [ { content => 'Listing.',
                                 tool_calls => [ { name => 'run', arguments => { command => 'ls' } } ] },
                               'done' ]);
    my $b = body('anthropic', user => 'List the files.', extra => { tools => $TOOLS{anthropic} });
    my ($res, $d) = call($llm, POST => '/v1/messages', body => $b);
    is($res->code, 200, 'a scripted tool reply');
    is($d->{stop_reason}, 'tool_use', 'stop_reason tool_use');
    is($d->{content}[0]{type}, 'text', 'a text block first');
    my $use = $d->{content}[1];
    is($use->{type}, 'tool_use', 'then a tool_use block');
    like($use->{id}, qr/^toolu_01[A-Za-z0-9]{22}$/, 'a toolu_ id');
    is_deeply($use->{input}, { command => 'ls' }, 'its input an object');
    my @msgs = (@{ $b->{messages} }, { role => 'assistant', content => $d->{content} });
    my ($r2, $e) = call($llm, POST => '/v1/messages', body => { %$b, messages => [ @msgs,
        { role => 'user', content => 'and?' } ] });
    is($r2->code, 400, 'a tool_use without its tool_result: 400');
    like($e->{error}{message}, qr/`tool_use` ids were found without `tool_result` blocks immediately after: \Q$use->{id}\E/,
         '... as Anthropic says it');
    ($r2, $e) = call($llm, POST => '/v1/messages', body => { %$b, messages => [ @msgs,
        { role => 'user', content => [ { type => 'tool_result', tool_use_id => 'toolu_other',
                                         content => 'x' } ] } ] });
    like($e->{error}{message}, qr/unexpected `tool_use_id` found in `tool_result` blocks: toolu_other/,
         'a tool_result answering nothing: 400');
    ($r2, $e) = call($llm, POST => '/v1/messages', body => { %$b, messages => [
        { role => 'user', content => [ { type => 'tool_use', id => 'x', name => 'run', input => {} } ] } ] });
    like($e->{error}{message}, qr/tool_use blocks are only allowed in assistant messages/,
         'tool_use in the user\'s turn: 400');
    ($r2, $d) = call($llm, POST => '/v1/messages', body => { %$b, messages => [ @msgs,
        { role => 'user', content => [ { type => 'tool_result', tool_use_id => $use->{id},
                                         content => 'a.txt', is_error => JSON::PP::false } ] } ] });
    is($r2->code, 200, 'answered: the next turn');
    is($d->{content}[0]{text}, 'done', '... the next reply');
    ($r2, $e) = call($llm, POST => '/v1/messages', body => { %$b, tools => [ { name => 'run' } ] });
    like($e->{error}{message}, qr/tools\.0\.input_schema: Field required/, 'a tool without its schema: 400');
    ($r2, $d) = call($llm, POST => '/v1/messages', body => { %$b,
        tool_choice => { type => 'tool', name => 'run' } });
    is($d->{content}[0]{type}, 'tool_use', 'tool_choice names a tool: it is called');
    is_deeply($d->{content}[0]{input}, { command => 'ok' }, '... with its required input');
    $llm->control(tools => 'refused');
    ($r2, $e) = call($llm, POST => '/v1/messages', body => $b);
    is($e->{error}{message}, 'tools: Extra inputs are not permitted', 'tools refused');
    $llm->stop;
};

subtest 'no process is left behind' => sub {
    my $pid;
    {
        my $tmp = FakeLLM->start(flavor => 'openai');
        $pid = $tmp->pid;
        ok(alive($pid), 'running');
    }
    ok(!alive($pid), 'the server ends when its object goes away');

    # A forked child of the test that exits does not stop the test's server.
    my $llm = FakeLLM->start(flavor => 'anthropic');
    my $kid = fork // die "fork: $!";
    if ($kid == 0) {
        undef $llm;
        exit 0;
    }
    waitpid($kid, 0);
    my ($res) = call($llm, GET => '/v1/models');
    is($res->code, 200, 'a child process exiting leaves the server alone');

    # The server watches the process that started it: killed without any
    # chance to clean up, it does not leave its server running.
    pipe(my $r, my $w) or die "pipe: $!";
    $kid = fork // die "fork: $!";
    if ($kid == 0) {
        close $r;
        my $orphan = FakeLLM->start(flavor => 'openai', mode => 'timeout');
        my $s = raw($orphan, GET => '/v1/models');
        wait_until(sub { @{ $orphan->state->{children} } }, 10);
        print $w join(' ', $orphan->pid, @{ $orphan->state->{children} }), "\n";
        close $w;
        sleep 300;
        POSIX::_exit(0);
    }
    close $w;
    my @pids = split ' ', scalar <$r>;
    close $r;
    is(scalar @pids, 2, 'a server with a hung connection, in a child');
    kill 'KILL', $kid;
    waitpid($kid, 0);
    ok(gone_within($pids[0], 10), 'the child killed: its server ends');
    ok(gone_within($pids[1], 10), 'and the server\'s child too');

    # A server killed outright: its connection children notice and end.
    my $victim = FakeLLM->start(flavor => 'openai', mode => 'timeout', hang_seconds => 120);
    my $s = raw($victim, GET => '/v1/models');
    wait_until(sub { @{ $victim->state->{children} } }, 10);
    my ($holder) = @{ $victim->state->{children} };
    kill 'KILL', $victim->pid;
    waitpid($victim->pid, 0);
    ok(gone_within($holder, 10), 'a server killed by SIGKILL: its children end');
};

subtest 'control' => sub {
    my $llm = FakeLLM->start(flavor => 'openai', replies => ['from start'], mode => 'empty');
    my $s = $llm->state;
    is_deeply([ $s->{mode}, $s->{replies} ], [ 'empty', ['from start'] ],
              'start takes control fields');
    ok(!eval { $llm->control(mood => 'ok'); 1 }, 'an unknown field is refused');
    like($@, qr/400.*unknown control field 'mood'/s, 'saying which');
    ok(!eval { $llm->control(mode => 'sleepy'); 1 }, 'an unknown mode is refused');
    like($@, qr/unknown mode 'sleepy'/, 'saying which');
    ok(!eval { $llm->control(replies => [ {} ]); 1 }, 'replies must be strings');
    ok(!eval { $llm->control(delay_ms => -1); 1 }, 'delay_ms must not be negative');
    is($llm->state->{mode}, 'empty', 'a refused control changes nothing');
    ok(!eval { FakeLLM->start(flavor => 'gemini'); 1 }, 'an unknown flavor is refused');
};

subtest 'command line' => sub {
    my $dir = tempdir(CLEANUP => 1);
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open STDERR, '>', "$dir/err" or POSIX::_exit(127);
        { exec $^X, "-I$FindBin::Bin/../lib", '-MFakeLLM', '-e', 'FakeLLM::main', '--',
             '--flavor', 'anthropic', '--port-file', "$dir/port" };
        POSIX::_exit(127);
    }
    ok(wait_until(sub { -s "$dir/port" && -s "$dir/port.key" }, 20),
       'the port file and the key file are written');
    chomp(my $port = do { local (@ARGV, $/) = "$dir/port"; <> });
    chomp(my $key = do { local (@ARGV, $/) = "$dir/port.key"; <> });
    is((stat "$dir/port.key")[2] & 0777, 0600, 'the key file is private');
    my $res = $ua->get("http://127.0.0.1:$port/v1/models", 'x-api-key' => $key,
                       'anthropic-version' => '2023-06-01');
    is($res->code, 200, 'it serves the Anthropic API with that key');
    kill 'TERM', $pid;
    waitpid($pid, 0);
    is($?, 0, 'TERM ends it cleanly');

    # Started by a process that dies without stopping it, it ends too.
    pipe(my $r, my $w) or die "pipe: $!";
    my $starter = fork // die "fork: $!";
    if ($starter == 0) {
        close $r;
        my $server = fork // POSIX::_exit(1);
        if ($server == 0) {
            open STDERR, '>', '/dev/null';
            { exec $^X, "-I$FindBin::Bin/../lib", '-MFakeLLM', '-e', 'FakeLLM::main', '--',
                   '--flavor', 'openai', '--port-file', "$dir/port2" };
            POSIX::_exit(127);
        }
        print $w "$server\n";
        close $w;
        sleep 300;
        POSIX::_exit(0);
    }
    close $w;
    chomp(my $server = <$r>);
    close $r;
    ok(wait_until(sub { -s "$dir/port2" }, 20), 'a server started by another process');
    kill 'KILL', $starter;
    waitpid($starter, 0);
    ok(gone_within($server, 10), 'that process killed: the server ends');
};

done_testing();
