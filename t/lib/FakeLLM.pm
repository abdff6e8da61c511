package FakeLLM;
# Fake LLM providers for the tests: small local HTTP servers that speak the
# public APIs mod_svc calls, on 127.0.0.1, and fail the way the real ones do.
# Tests never reach the network.
#
#   flavor "openai"     the OpenAI-compatible API: Authorization: Bearer KEY
#     GET  /v1/models                {"object":"list","data":[{id,object,created,owned_by}]}
#     GET  /v1/models/{id}           one model, or 404 model_not_found
#     POST /v1/chat/completions      {"id":"chatcmpl-…","object":"chat.completion",...}
#   flavor "anthropic"  the Messages API: x-api-key: KEY, anthropic-version: 2023-06-01
#     GET  /v1/models                {"data":[{type,id,display_name,created_at}],
#                                     "has_more","first_id","last_id"} (limit,
#                                     after_id, before_id as the real one)
#     GET  /v1/models/{id}           one model, or 404 not_found_error
#     POST /v1/messages              {"id":"msg_…","type":"message",...}
#
# Errors have the providers' shapes, statuses and headers:
#   openai     {"error":{"message","type","param","code"}}; x-request-id,
#              openai-processing-ms, openai-version, x-ratelimit-* on every answer
#   anthropic  {"type":"error","error":{"type","message"},"request_id"};
#              request-id, anthropic-ratelimit-*, x-should-retry on every answer
# Like the real services, the request body is checked field by field (unknown
# top-level fields are refused: OpenAI "Unrecognized request argument",
# Anthropic "Extra inputs are not permitted"), a missing key and a wrong key
# are told apart (OpenAI: "You didn't provide an API key", code null, versus
# "Incorrect API key provided: sk-…abcd", code invalid_api_key), OpenAI's
# JSON mode demands the word "json" in the messages, and Anthropic refuses a
# "system" role inside messages. Streaming is not implemented (400, saying so).
#
# Tool calling, as both APIs have it. OpenAI: `tools` [{type: "function",
# function: {name, description, parameters}}], `tool_choice`; the answer's
# message carries `tool_calls` [{id: "call_…", type: "function", function:
# {name, arguments: a JSON *string*}}] with content null and finish_reason
# "tool_calls"; results come back as {role: "tool", tool_call_id, content}
# messages. Anthropic: `tools` [{name, description, input_schema}],
# `tool_choice`; the answer's content blocks hold {type: "tool_use", id:
# "toolu_…", name, input: an object} and stop_reason is "tool_use"; results
# come back as {type: "tool_result", tool_use_id, content, is_error} blocks
# in the next user message. Both check the conversation as the real ones do:
# every tool call must be answered in the messages right after it, and a
# result must answer a call ("tool_use ids were found without tool_result
# blocks immediately after", "messages with role 'tool' must be a response
# to a preceeding message with 'tool_calls'"). The model's side is scripted:
# a queued reply may be a tool reply, {content => 'optional text',
# tool_calls => [{name, arguments => {...} or 'raw text'}]}, answered in the
# flavor's form with fresh ids. A tool_choice that names a tool gets a call
# of it whatever is queued (from the queue when the next reply calls it,
# else with its required arguments filled in: strings "ok"), as the real
# APIs guarantee.
#
# Tokens are counted deterministically so tests can check recorded usage:
# tokens(text) = ceil(bytes of its UTF-8 / 4). Prompt tokens count the
# concatenated text of the system prompt, every message (tool calls' JSON
# and tool results included) and the tool definitions' JSON; completion
# tokens the reply (text and tool calls' JSON). A reply longer than max_tokens (max_completion_tokens)
# is cut to max_tokens * 4 bytes, with finish_reason "length" / stop_reason
# "max_tokens".
#
# In a test:
#   use FakeLLM;
#   my $llm = FakeLLM->start(flavor => 'anthropic');   # key => '...', models => [...]
#   $llm->url;        # http://127.0.0.1:PORT (no /v1: the caller appends it)
#   $llm->key;        # the one key it accepts (random unless given)
#   $llm->control(mode => 'overloaded', times => 1, replies => ['{"a":1}']);
#   $llm->state;      # {mode, replies, requests => [...], children => [...], ...}
#   $llm->requests;   # what was received: [{method, path, query, headers, body, ...}]
#   $llm->reset;      # mode ok, no replies, empty request log (key and models stay)
#   $llm->stop;       # also on DESTROY and at END; no process is left behind
#
# By hand (e.g. beside `make run`):
#   perl -It/lib -MFakeLLM -e FakeLLM::main -- --flavor openai --port-file F [--key K]
# writes the port to F and the accepted key to F.key (0600); it stops on
# SIGTERM, and by itself when the process that started it ends.
#
# Control, per server:
#   POST /_control {...}    set any of the fields below; unknown fields are a 400
#   POST /_control/reset    mode, times, replies, reply, delay_ms, hang_seconds,
#                           retry_after, usage back to defaults, request log emptied
#   GET  /_control          the state, with `requests` (the last 100) and
#                           `children` (pids of connections held open)
#   key           the one API key accepted
#   mode          ok | unauthorized | server_error | overloaded | rate_limited |
#                 timeout | slow | garbage | empty | truncated
#   times         the mode holds for this many API requests, then back to ok
#                 (absent: until changed)
#   replies       FIFO of reply texts (or tool replies, above), one per
#                 successful completion; then
#   reply         the default text; then an echo of the last user message
#                 (markdown, or a JSON object when OpenAI's JSON mode is on)
#   models        the model list: ids, or objects with the flavor's fields
#   delay_ms      how long `slow` waits before answering (default 1500)
#   hang_seconds  how long `timeout` holds a connection silently (default 30)
#   retry_after   seconds in the Retry-After of `rate_limited` (default 2)
#   tools         native (default) | ignored: tools and tool_choice are taken
#                 and ignored, the answer is text (as some local servers do) |
#                 refused: a request with tools is a 400, as from a server
#                 that does not know the parameter
#   pad_bytes     a successful answer's body is padded with white space (still
#                 valid JSON) to at least this many bytes: an answer too large
#                 for a caller's cap (default 0)
#   usage         {"input": N, "output": N}: the token counts completions
#                 report instead of the counted ones, whatever they are (a
#                 broken or lying server); null: counted again
#
# Modes: unauthorized answers 401 as if the key were wrong; server_error 500;
# overloaded 529 (anthropic) / 503 (openai); rate_limited 429 with
# Retry-After; timeout accepts the request and never answers (a forked child
# holds the connection for hang_seconds, then closes it without a byte);
# slow answers correctly after delay_ms (in a forked child); garbage answers
# 200 with Content-Type application/json and a body that is not JSON; empty
# answers 200 with a valid envelope whose text is ""; truncated sends the
# headers of a correct answer (its full Content-Length) and half its body,
# then closes. The authentication check comes first (as the providers do),
# so with a wrong key every mode but timeout answers 401. Only complete
# successful answers (modes ok and slow) consume a queued reply.
#
# One request per connection (Connection: close). Requests are read and
# answered by the server process, which alone holds the state; anything
# that waits (slow, timeout) is handed to a forked child, so it never blocks
# the next request.
use strict;
use warnings;

use B ();
use HTTP::Daemon ();
use HTTP::Request ();
use HTTP::Response ();
use HTTP::Status ();
use IO::Socket::INET ();
use JSON::PP ();
use LWP::UserAgent ();
use POSIX ();
use Time::HiRes ();
use URI ();
use URI::Escape ();

my $JSON = JSON::PP->new->utf8->canonical;

my @MODES = qw(ok unauthorized server_error overloaded rate_limited timeout slow
               garbage empty truncated);
my %MODE = map { $_ => 1 } @MODES;

my %DEFAULT_MODELS = (
    openai => [
        { id => 'gpt-4o-mini', created => 1721172741, owned_by => 'system' },
        { id => 'gpt-4o', created => 1715367049, owned_by => 'system' },
        { id => 'gpt-4.1', created => 1744316542, owned_by => 'system' },
    ],
    anthropic => [
        { id => 'claude-sonnet-4-20250514', display_name => 'Claude Sonnet 4',
          created_at => '2025-05-22T00:00:00Z' },
        { id => 'claude-3-5-haiku-20241022', display_name => 'Claude Haiku 3.5',
          created_at => '2024-10-22T00:00:00Z' },
    ],
);

# ===========================================================================
# The test's side
# ===========================================================================

my %LIVE;    # server pid => pid of the process that started it

sub rand_str {
    my ($n, @alphabet) = @_;
    @alphabet = ('a' .. 'z', 'A' .. 'Z', 0 .. 9) unless @alphabet;
    open my $fh, '<', '/dev/urandom' or die "FakeLLM: urandom: $!";
    read($fh, my $raw, $n) == $n or die "FakeLLM: urandom: short read";
    close $fh;
    return join '', map { $alphabet[ord($_) % @alphabet] } split //, $raw;
}

sub default_key {
    my $flavor = shift;
    return $flavor eq 'anthropic' ? 'sk-ant-api03-' . rand_str(40) . '-fakeAA'
                                  : 'sk-proj-' . rand_str(48);
}

sub start {
    my ($class, %opt) = @_;
    my $flavor = delete $opt{flavor} // 'openai';
    die "FakeLLM: unknown flavor '$flavor' (openai, anthropic)\n"
        unless $DEFAULT_MODELS{$flavor};
    my $key = delete $opt{key} // default_key($flavor);
    my $d = HTTP::Daemon->new(LocalAddr => '127.0.0.1', LocalPort => 0, Listen => 64,
                              ReuseAddr => 1)
        or die "FakeLLM: cannot listen: $!\n";
    my $port = $d->sockport;
    my $owner = $$;
    my $pid = fork // die "FakeLLM: fork: $!\n";
    if ($pid == 0) {
        # The server must never return into the test's code (nor run its END
        # blocks): it leaves with _exit only.
        my $ok = eval { serve($d, flavor => $flavor, key => $key, watch => $owner,
                              initial => \%opt); 1 };
        print STDERR "FakeLLM: $@" unless $ok;
        POSIX::_exit($ok ? 0 : 1);
    }
    close $d;
    $LIVE{$pid} = $owner;
    my $self = bless { pid => $pid, owner => $owner, flavor => $flavor, key => $key,
                       port => $port, url => "http://127.0.0.1:$port" }, $class;
    # The options were applied by the server itself; a bad one shows here.
    my $state = eval { $self->state };
    unless ($state) {
        my $err = $@;
        $self->stop;
        die $err;
    }
    return $self;
}

sub url    { $_[0]{url} }
sub port   { $_[0]{port} }
sub flavor { $_[0]{flavor} }
sub key    { $_[0]{key} }
sub pid    { $_[0]{pid} }

sub _call {
    my ($self, $method, $path, $data) = @_;
    $self->{ua} //= LWP::UserAgent->new(timeout => 10, keep_alive => 0, env_proxy => 0);
    my $req = HTTP::Request->new($method => $self->{url} . $path);
    if ($data) {
        $req->header('Content-Type' => 'application/json');
        $req->content($JSON->encode($data));
    }
    my $res = $self->{ua}->request($req);
    die "FakeLLM: $method $path: " . $res->status_line . "\n" . $res->decoded_content
        unless $res->is_success;
    my $state = $JSON->decode($res->content);
    $self->{key} = $state->{key};
    return $state;
}

sub control  { my ($self, %set) = @_; return $self->_call(POST => '/_control', \%set) }
sub state    { return $_[0]->_call(GET => '/_control') }
sub reset    { return $_[0]->_call(POST => '/_control/reset') }
sub requests { return $_[0]->state->{requests} }

sub _reap {
    my $pid = shift;
    kill 'TERM', $pid;
    for (1 .. 100) {
        return if waitpid($pid, POSIX::WNOHANG()) != 0;
        Time::HiRes::sleep(0.05);
    }
    kill 'KILL', $pid;
    waitpid($pid, 0);
}

# Only the process that started the server stops it: a test's forked child
# that exits must not take the server along.
sub stop {
    my $self = shift;
    my $pid = $self->{pid};
    return unless $pid && $$ == $self->{owner} && exists $LIVE{$pid};
    local ($?, $!, $@);
    _reap($pid);
    delete $LIVE{$pid};
    return;
}

sub DESTROY { $_[0]->stop }

END {
    local ($?, $!, $@);
    for my $pid (keys %LIVE) {
        next unless $LIVE{$pid} == $$;
        _reap($pid);
        delete $LIVE{$pid};
    }
}

# ===========================================================================
# The server's side (its own process; the state below lives only there)
# ===========================================================================

my %st;          # the behaviour and the request log
my %kids;        # pid => 1: children holding a connection (slow, timeout)
my $FLAVOR;
my $LISTEN;
my $SERVER_PID;

sub _model_obj {
    my ($m) = @_;
    $m = { id => $m } unless ref $m;
    die "a model needs an id\n" unless defined $m->{id} && !ref $m->{id} && length $m->{id};
    if ($FLAVOR eq 'openai') {
        return { id => "$m->{id}", object => 'model',
                 created => 0 + ($m->{created} // 1700000000),
                 owned_by => $m->{owned_by} // 'system' };
    }
    (my $name = $m->{id}) =~ s/-/ /g;
    return { type => 'model', id => "$m->{id}",
             display_name => $m->{display_name} // ucfirst $name,
             created_at => $m->{created_at} // '2025-01-01T00:00:00Z' };
}

sub reset_behaviour {
    $st{mode} = 'ok';
    $st{times} = undef;
    $st{replies} = [];
    $st{reply} = undef;
    $st{delay_ms} = 1500;
    $st{hang_seconds} = 30;
    $st{retry_after} = 2;
    $st{tools} = 'native';
    $st{pad_bytes} = 0;
    $st{usage} = undef;
    $st{requests} = [];
    $st{served} = 0;
}

sub jtype {
    my $v = shift;
    return 'null' unless defined $v;
    if (ref $v) {
        return 'boolean' if JSON::PP::is_bool($v);
        return ref $v eq 'HASH' ? 'object' : ref $v eq 'ARRAY' ? 'array' : 'other';
    }
    my $f = B::svref_2object(\$v)->FLAGS;
    return 'string' if $f & B::SVp_POK;
    return 'integer' if $f & B::SVp_IOK;
    return 'number' if $f & B::SVp_NOK;
    return 'string';
}

# Applies a control document; dies with a message for the test's author.
sub apply_control {
    my $d = shift;
    my %known = map { $_ => 1 } qw(key mode times replies reply models delay_ms
                                   hang_seconds retry_after tools pad_bytes usage);
    for my $k (sort keys %$d) {
        die "unknown control field '$k'\n" unless $known{$k};
    }
    if (exists $d->{key}) {
        die "key must be a non-empty string\n" unless jtype($d->{key}) eq 'string'
            && length $d->{key};
        $st{key} = $d->{key};
    }
    if (exists $d->{mode}) {
        die "unknown mode '" . ($d->{mode} // 'null') . "' (" . join(', ', @MODES) . ")\n"
            unless defined $d->{mode} && !ref $d->{mode} && $MODE{ $d->{mode} };
        $st{mode} = $d->{mode};
        $st{times} = undef unless exists $d->{times};
    }
    if (exists $d->{times}) {
        die "times must be a positive integer or null\n"
            if defined $d->{times} && !(jtype($d->{times}) eq 'integer' && $d->{times} > 0);
        $st{times} = $d->{times};
    }
    if (exists $d->{replies}) {
        die "replies must be an array of strings and tool replies\n"
            unless ref $d->{replies} eq 'ARRAY';
        for my $r (@{ $d->{replies} }) {
            next if jtype($r) eq 'string';
            die "a tool reply is {content?, tool_calls: [{name, arguments}]}\n"
                unless ref $r eq 'HASH' && ref $r->{tool_calls} eq 'ARRAY'
                    && !grep { $_ ne 'content' && $_ ne 'tool_calls' } keys %$r;
            die "a tool reply's content must be a string\n"
                if exists $r->{content} && jtype($r->{content}) ne 'string';
            for my $c (@{ $r->{tool_calls} }) {
                die "a scripted tool call is {name, arguments: object or string}\n"
                    unless ref $c eq 'HASH' && jtype($c->{name}) eq 'string'
                        && (ref $c->{arguments} eq 'HASH' || jtype($c->{arguments}) eq 'string')
                        && !grep { $_ ne 'name' && $_ ne 'arguments' } keys %$c;
            }
        }
        $st{replies} = [ @{ $d->{replies} } ];
    }
    if (exists $d->{tools}) {
        die "tools must be native, ignored or refused\n"
            unless defined $d->{tools} && !ref $d->{tools}
                && $d->{tools} =~ /\A(?:native|ignored|refused)\z/;
        $st{tools} = $d->{tools};
    }
    if (exists $d->{reply}) {
        die "reply must be a string or null\n"
            if defined $d->{reply} && jtype($d->{reply}) ne 'string';
        $st{reply} = $d->{reply};
    }
    if (exists $d->{models}) {
        die "models must be an array\n" unless ref $d->{models} eq 'ARRAY';
        $st{models} = [ map { _model_obj($_) } @{ $d->{models} } ];
    }
    if (exists $d->{usage}) {
        my $u = $d->{usage};
        die "usage must be null or {\"input\": integer, \"output\": integer}\n"
            if defined $u && !(ref $u eq 'HASH' && jtype($u->{input}) eq 'integer'
                               && jtype($u->{output}) eq 'integer' && keys %$u == 2);
        $st{usage} = $u;
    }
    for my $k (qw(delay_ms hang_seconds retry_after pad_bytes)) {
        next unless exists $d->{$k};
        die "$k must be a non-negative integer\n"
            unless jtype($d->{$k}) eq 'integer' && $d->{$k} >= 0;
        $st{$k} = $d->{$k};
    }
}

sub public_state {
    return {
        flavor => $FLAVOR, key => $st{key}, mode => $st{mode}, times => $st{times},
        replies => $st{replies}, reply => $st{reply},
        models => [ map { $_->{id} } @{ $st{models} } ],
        delay_ms => $st{delay_ms}, hang_seconds => $st{hang_seconds},
        retry_after => $st{retry_after}, usage => $st{usage}, served => $st{served},
        tools => $st{tools}, pad_bytes => $st{pad_bytes},
        requests => $st{requests}, children => [ sort { $a <=> $b } keys %kids ],
    };
}

sub plain_json_res {
    my ($code, $data) = @_;
    my $res = HTTP::Response->new($code, HTTP::Status::status_message($code));
    $res->header('Content-Type' => 'application/json');
    $res->content($JSON->encode($data));
    return $res;
}

sub control_endpoint {
    my ($req) = @_;
    my $path = $req->uri->path;
    if ($path eq '/_control/reset' && $req->method eq 'POST') {
        reset_behaviour();
    }
    elsif ($path eq '/_control' && $req->method eq 'POST') {
        my $d = eval { $JSON->decode($req->content) };
        return plain_json_res(400, { error => 'control: the body must be a JSON object' })
            unless ref $d eq 'HASH';
        my $ok = eval { apply_control($d); 1 };
        return plain_json_res(400, { error => "control: $@" }) unless $ok;
    }
    elsif (!($path eq '/_control' && $req->method eq 'GET')) {
        return plain_json_res(404, { error => 'control: no such endpoint' });
    }
    return plain_json_res(200, public_state());
}

# --- recording -------------------------------------------------------------

sub record {
    my ($req) = @_;
    my %h;
    for my $name ($req->headers->header_field_names) {
        $h{ lc $name } = join ', ', $req->headers->header($name);
    }
    my $raw = $req->content // '';
    my $body = length $raw ? eval { $JSON->decode($raw) } : undef;
    my $rec = {
        method => $req->method, path => $req->uri->path, query => $req->uri->query,
        headers => \%h, body => $body, time => Time::HiRes::time(),
        body_bytes => length $raw,
    };
    $rec->{body_raw} = $raw if length $raw && !defined $body;
    push @{ $st{requests} }, $rec;
    shift @{ $st{requests} } while @{ $st{requests} } > 100;
    return $rec;
}

# --- text and tokens ---------------------------------------------------------

sub utf8_bytes {
    my $s = shift;
    utf8::encode(my $b = $s);
    return length $b;
}

sub tokens {
    my $s = shift // '';
    return int((utf8_bytes($s) + 3) / 4);
}

# The first $max_tokens * 4 bytes of $text, cut at a character boundary.
sub cut_to_tokens {
    my ($text, $max) = @_;
    my $limit = $max * 4;
    my $out = '';
    my $n = 0;
    for my $ch (split //, $text) {
        my $b = utf8_bytes($ch);
        last if $n + $b > $limit;
        $out .= $ch;
        $n += $b;
    }
    return $out;
}

# Text of an OpenAI or Anthropic content value (string or array of parts):
# text parts, tool_result contents, tool_use inputs as JSON.
sub content_text {
    my $c = shift;
    return $c if defined $c && !ref $c;
    return join '', map {
        !(ref $_ eq 'HASH') ? ''
        : ($_->{type} // '') eq 'tool_result' ? content_text($_->{content})
        : ($_->{type} // '') eq 'tool_use' ? $JSON->encode($_->{input} // {})
        : defined $_->{text} && !ref $_->{text} ? $_->{text} : '' } @$c
        if ref $c eq 'ARRAY';
    return '';
}

# Everything a request's prompt holds, for counting its tokens: the system
# prompt, every message (OpenAI's tool_calls' arguments too), the tools.
sub prompt_text {
    my ($b) = @_;
    my $text = content_text($b->{system});
    for my $m (@{ $b->{messages} }) {
        $text .= content_text($m->{content});
        $text .= join '', map { ref $_ eq 'HASH' && ref $_->{function} eq 'HASH'
                                    ? ($_->{function}{name} // '') . ($_->{function}{arguments} // '')
                                    : '' } @{ $m->{tool_calls} }
            if ref $m->{tool_calls} eq 'ARRAY';
    }
    $text .= $JSON->encode($b->{tools}) if ref $b->{tools} eq 'ARRAY';
    return $text;
}

sub is_tool_reply { return ref $_[0] eq 'HASH' }

# The tool a request's tool_choice forces, or undef.
sub forced_tool {
    my ($b) = @_;
    my $tc = $b->{tool_choice};
    return undef unless ref $tc eq 'HASH';
    return $tc->{function}{name} if $FLAVOR eq 'openai' && ref $tc->{function} eq 'HASH';
    return $tc->{name} if $FLAVOR eq 'anthropic' && ($tc->{type} // '') eq 'tool';
    return undef;
}

# The schema of a tool of the request.
sub tool_schema {
    my ($b, $name) = @_;
    for my $t (@{ $b->{tools} // [] }) {
        return $t->{function}{parameters} // {}
            if $FLAVOR eq 'openai' && ref $t->{function} eq 'HASH'
               && ($t->{function}{name} // '') eq $name;
        return $t->{input_schema} // {} if $FLAVOR eq 'anthropic' && ($t->{name} // '') eq $name;
    }
    return {};
}

# The model's answer when tool_choice forces a tool: the queued reply when
# it calls that tool, else a call with the schema's required members.
sub forced_reply {
    my ($b, $name, $consume) = @_;
    my $next = $st{replies}[0];
    if (is_tool_reply($next) && @{ $next->{tool_calls} }
        && $next->{tool_calls}[0]{name} eq $name) {
        shift @{ $st{replies} } if $consume;
        return $next;
    }
    my $schema = tool_schema($b, $name);
    my %args;
    for my $k (@{ ref $schema->{required} eq 'ARRAY' ? $schema->{required} : [] }) {
        my $type = ref $schema->{properties} eq 'HASH' && ref $schema->{properties}{$k} eq 'HASH'
                 ? $schema->{properties}{$k}{type} // 'string' : 'string';
        $args{$k} = $type eq 'integer' || $type eq 'number' ? 1
                  : $type eq 'boolean' ? JSON::PP::true
                  : $type eq 'object' ? {} : $type eq 'array' ? [] : 'ok';
    }
    return { tool_calls => [ { name => $name, arguments => \%args } ] };
}

# Whether this request takes tools (the `tools` control decides what a
# request with tools meets).
sub uses_tools {
    my ($b) = @_;
    return ref $b->{tools} eq 'ARRAY' && @{ $b->{tools} } && $st{tools} eq 'native';
}

# The answer's text for a tool reply's calls (for counting its tokens).
sub calls_text {
    my ($calls) = @_;
    return join '', map { $_->{name} . (ref $_->{arguments} ? $JSON->encode($_->{arguments})
                                                            : $_->{arguments}) } @$calls;
}

sub echo_reply {
    my ($last_user, $json_mode) = @_;
    my $said = $last_user // '';
    $said =~ s/\s+/ /g;
    $said =~ s/^ | $//g;
    $said = substr($said, 0, 200) . '…' if length $said > 200;
    return $JSON->encode({ reply => "You said: $said" }) if $json_mode;
    return "# Reply\n\nYou said: $said\n";
}

# The next reply text; consumed from the queue only when $consume.
sub next_reply {
    my ($last_user, $json_mode, $consume) = @_;
    if (@{ $st{replies} }) {
        return $consume ? shift @{ $st{replies} } : $st{replies}[0];
    }
    return $st{reply} if defined $st{reply};
    return echo_reply($last_user, $json_mode);
}

# --- common answers ------------------------------------------------------------

sub rfc3339 {
    my $t = shift;
    return POSIX::strftime('%Y-%m-%dT%H:%M:%SZ', gmtime($t));
}

sub common_headers {
    my ($res, $started) = @_;
    my $ms = int((Time::HiRes::time() - $started) * 1000);
    if ($FLAVOR eq 'openai') {
        $res->header('x-request-id' => 'req_' . rand_str(32, 0 .. 9, 'a' .. 'f'));
        $res->header('openai-processing-ms' => $ms);
        $res->header('openai-version' => '2020-10-01');
        $res->header('openai-organization' => 'user-fakellm');
        $res->header('x-ratelimit-limit-requests' => 10000);
        $res->header('x-ratelimit-limit-tokens' => 2000000);
        if ($res->code == 429) {
            $res->header('x-ratelimit-remaining-requests' => 0);
            $res->header('x-ratelimit-reset-requests' => "$st{retry_after}s");
        }
        else {
            $res->header('x-ratelimit-remaining-requests' => 9999);
            $res->header('x-ratelimit-reset-requests' => '6ms');
        }
        $res->header('x-ratelimit-remaining-tokens' => 1999000);
        $res->header('x-ratelimit-reset-tokens' => '30ms');
    }
    else {
        $res->header('request-id' => 'req_' . rand_str(24));
        $res->header('anthropic-organization-id' => '5b3c2a1e-0f4d-4e8a-9b7c-fa11e0000001');
        my $now = time;
        my $remaining = $res->code == 429 ? 0 : 49;
        my $reset = rfc3339($res->code == 429 ? $now + $st{retry_after} : $now + 1);
        $res->header('anthropic-ratelimit-requests-limit' => 50);
        $res->header('anthropic-ratelimit-requests-remaining' => $remaining);
        $res->header('anthropic-ratelimit-requests-reset' => $reset);
        for my $kind (qw(input-tokens output-tokens tokens)) {
            $res->header("anthropic-ratelimit-$kind-limit" => 40000);
            $res->header("anthropic-ratelimit-$kind-remaining" => $remaining ? 39000 : 0);
            $res->header("anthropic-ratelimit-$kind-reset" => $reset);
        }
        my $c = $res->code;
        $res->header('x-should-retry' => ($c == 408 || $c == 409 || $c == 429 || $c >= 500)
                                         ? 'true' : 'false')
            if $c >= 400;
    }
    $res->header('Retry-After' => $st{retry_after}) if $res->code == 429;
    return $res;
}

# An error in the flavor's shape. $code (OpenAI's error.code) and $param
# apply to OpenAI only; Anthropic has its error.type in $type.
sub api_error {
    my ($status, $type, $message, %o) = @_;
    my $res = HTTP::Response->new($status, $status == 529 ? 'Overloaded'
                                           : HTTP::Status::status_message($status));
    $res->header('Content-Type' => 'application/json');
    if ($FLAVOR eq 'openai') {
        $res->content($JSON->encode({ error => {
            message => $message, type => $type, param => $o{param}, code => $o{code} } }));
    }
    else {
        $res->content($JSON->encode({ type => 'error',
            error => { type => $type, message => $message },
            request_id => 'req_' . rand_str(24) }));
    }
    return $res;
}

# As OpenAI quotes a refused key: the middle hidden, but a short one whole
# ("Incorrect API key provided: undefined").
sub mask_key {
    my $k = shift;
    return $k if length $k <= 9;
    return substr($k, 0, 3) . ('*' x (length($k) - 7)) . substr($k, -4);
}

sub unauthorized {
    my ($presented) = @_;
    if ($FLAVOR eq 'openai') {
        return api_error(401, 'invalid_request_error',
            "You didn't provide an API key. You need to provide your API key in an "
            . 'Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), '
            . 'or as the password field (with blank username) if you\'re accessing the API '
            . 'from your browser and are prompted for a username and password. You can '
            . 'obtain an API key from https://platform.openai.com/account/api-keys.')
            unless defined $presented && length $presented;
        return api_error(401, 'invalid_request_error',
            'Incorrect API key provided: ' . mask_key($presented) . '. You can find your API '
            . 'key at https://platform.openai.com/account/api-keys.',
            code => 'invalid_api_key');
    }
    return api_error(401, 'authentication_error', 'x-api-key header is required')
        unless defined $presented && length $presented;
    return api_error(401, 'authentication_error', 'invalid x-api-key');
}

# The error answers of the failure modes, or undef.
sub mode_error {
    my ($mode, $model) = @_;
    my $m = $model // 'gpt-4o-mini';
    if ($mode eq 'server_error') {
        return $FLAVOR eq 'openai'
            ? api_error(500, 'server_error', 'The server had an error while processing your '
                . 'request. Sorry about that!')
            : api_error(500, 'api_error', 'Internal server error');
    }
    if ($mode eq 'overloaded') {
        return $FLAVOR eq 'openai'
            ? api_error(503, 'server_error', 'The server is overloaded or not ready yet.')
            : api_error(529, 'overloaded_error', 'Overloaded');
    }
    if ($mode eq 'rate_limited') {
        return $FLAVOR eq 'openai'
            ? api_error(429, 'requests', "Rate limit reached for $m in organization "
                . 'org-fakellm on requests per min (RPM): Limit 3, Used 3, Requested 1. '
                . "Please try again in $st{retry_after}s. Visit "
                . 'https://platform.openai.com/account/rate-limits to learn more.',
                code => 'rate_limit_exceeded')
            : api_error(429, 'rate_limit_error', 'This request would exceed the rate limit '
                . 'for your organization of 50 requests per minute. For details, refer to: '
                . 'https://docs.claude.com/en/api/rate-limits. You can see the response '
                . 'headers for current usage. Please reduce the prompt length or the maximum '
                . 'tokens requested, or try again later.');
    }
    return undef;
}

# (route, model id) of an API request, or () when no route matches.
sub route {
    my ($m, $path, $create) = @_;
    return ('models') if $m eq 'GET' && $path eq '/v1/models';
    return ('model', URI::Escape::uri_unescape($1))
        if $m eq 'GET' && $path =~ m{^/v1/models/([^/]+)\z};
    return ('create') if $m eq 'POST' && $path eq $create;
    return ();
}

sub find_model {
    my $id = shift;
    return (grep { $_->{id} eq $id } @{ $st{models} })[0];
}

# --- OpenAI ----------------------------------------------------------------------

my %OA_PARAMS = map { $_ => 1 } qw(model messages max_tokens max_completion_tokens
    temperature top_p n stream stream_options stop presence_penalty frequency_penalty
    logit_bias logprobs top_logprobs user response_format seed tools tool_choice
    parallel_tool_calls service_tier store metadata reasoning_effort modalities audio
    prediction web_search_options functions function_call);
my @OA_ROLES = qw(system assistant user function tool developer);

sub oa_bad {
    my ($message, %o) = @_;
    return api_error(400, 'invalid_request_error', $message, %o);
}

sub oa_type_name {
    my $t = jtype(shift);
    return { object => 'an object', array => 'an array', string => 'a string',
             integer => 'an integer', number => 'a decimal', boolean => 'a boolean',
             null => 'null' }->{$t} // $t;
}

# Checks a chat completion body; returns an error answer or undef.
sub oa_validate {
    my ($b) = @_;
    for my $k (sort keys %$b) {
        return oa_bad("Unrecognized request argument supplied: $k") unless $OA_PARAMS{$k};
    }
    return oa_bad('you must provide a model parameter') unless defined $b->{model};
    return oa_bad("Invalid type for 'model': expected a string, but got "
                  . oa_type_name($b->{model}) . ' instead.', param => 'model',
                  code => 'invalid_type')
        unless jtype($b->{model}) eq 'string';
    return oa_bad("Missing required parameter: 'messages'.", param => 'messages',
                  code => 'missing_required_parameter')
        unless exists $b->{messages};
    return oa_bad("Invalid type for 'messages': expected an array of objects, but got "
                  . oa_type_name($b->{messages}) . ' instead.', param => 'messages',
                  code => 'invalid_type')
        unless ref $b->{messages} eq 'ARRAY';
    return oa_bad("Invalid 'messages': empty array. Expected an array with minimum length 1, "
                  . 'but got an empty array instead.', param => 'messages',
                  code => 'empty_array')
        unless @{ $b->{messages} };
    my $i = 0;
    for my $m (@{ $b->{messages} }) {
        my $p = "messages[$i]";
        return oa_bad("Invalid type for '$p': expected an object, but got "
                      . oa_type_name($m) . ' instead.', param => $p, code => 'invalid_type')
            unless ref $m eq 'HASH';
        return oa_bad("Missing required parameter: '$p.role'.", param => "$p.role",
                      code => 'missing_required_parameter')
            unless defined $m->{role};
        return oa_bad("Invalid value: '$m->{role}'. Supported values are: "
                      . "'system', 'assistant', 'user', 'function', 'tool', and 'developer'.",
                      param => "$p.role", code => 'invalid_value')
            unless jtype($m->{role}) eq 'string' && grep { $_ eq $m->{role} } @OA_ROLES;
        if ($m->{role} eq 'tool') {
            return oa_bad("Missing required parameter: '$p.tool_call_id'.",
                          param => "$p.tool_call_id", code => 'missing_required_parameter')
                unless defined $m->{tool_call_id};
            return oa_bad("Invalid type for '$p.tool_call_id': expected a string, but got "
                          . oa_type_name($m->{tool_call_id}) . ' instead.',
                          param => "$p.tool_call_id", code => 'invalid_type')
                unless jtype($m->{tool_call_id}) eq 'string';
        }
        if (exists $m->{tool_calls}) {
            return oa_bad("Invalid parameter: only messages with role 'assistant' can have "
                          . "tool_calls.", param => "$p.tool_calls")
                unless $m->{role} eq 'assistant';
            return oa_bad("Invalid type for '$p.tool_calls': expected an array of objects, "
                          . 'but got ' . oa_type_name($m->{tool_calls}) . ' instead.',
                          param => "$p.tool_calls", code => 'invalid_type')
                unless ref $m->{tool_calls} eq 'ARRAY';
            my $k = 0;
            for my $tc (@{ $m->{tool_calls} }) {
                my $q = "$p.tool_calls[$k]";
                return oa_bad("Missing required parameter: '$q.id'.", param => "$q.id",
                              code => 'missing_required_parameter')
                    unless ref $tc eq 'HASH' && jtype($tc->{id}) eq 'string';
                return oa_bad("Missing required parameter: '$q.type'.", param => "$q.type",
                              code => 'missing_required_parameter')
                    unless ($tc->{type} // '') eq 'function';
                return oa_bad("Missing required parameter: '$q.function'.",
                              param => "$q.function", code => 'missing_required_parameter')
                    unless ref $tc->{function} eq 'HASH'
                        && jtype($tc->{function}{name}) eq 'string';
                return oa_bad("Invalid type for '$q.function.arguments': expected a string, but "
                              . 'got ' . oa_type_name($tc->{function}{arguments}) . ' instead.',
                              param => "$q.function.arguments", code => 'invalid_type')
                    unless jtype($tc->{function}{arguments}) eq 'string';
                $k++;
            }
        }
        if ($m->{role} ne 'assistant' || exists $m->{content}) {
            return oa_bad("Missing required parameter: '$p.content'.", param => "$p.content",
                          code => 'missing_required_parameter')
                unless exists $m->{content};
            my $t = jtype($m->{content});
            return oa_bad("Invalid type for '$p.content': expected one of a string or array "
                          . 'of objects, but got ' . oa_type_name($m->{content}) . ' instead.',
                          param => "$p.content", code => 'invalid_type')
                unless $t eq 'string' || $t eq 'array'
                    || ($t eq 'null' && $m->{role} eq 'assistant');
        }
        $i++;
    }
    my $err = oa_validate_tools($b);
    return $err if $err;
    for my $k (qw(max_tokens max_completion_tokens n)) {
        next unless defined $b->{$k};
        return oa_bad("Invalid type for '$k': expected an integer, but got "
                      . oa_type_name($b->{$k}) . ' instead.', param => $k,
                      code => 'invalid_type')
            unless jtype($b->{$k}) eq 'integer';
        return oa_bad("Invalid '$k': integer below minimum value. Expected a value >= 1, "
                      . "but got $b->{$k} instead.", param => $k,
                      code => 'integer_below_min_value')
            if $b->{$k} < 1;
    }
    return oa_bad('FakeLLM: n other than 1 is not implemented', param => 'n')
        if defined $b->{n} && $b->{n} != 1;
    if (defined $b->{temperature}) {
        my $t = jtype($b->{temperature});
        return oa_bad("Invalid type for 'temperature': expected a decimal, but got "
                      . oa_type_name($b->{temperature}) . ' instead.', param => 'temperature',
                      code => 'invalid_type')
            unless $t eq 'integer' || $t eq 'number';
        return oa_bad("Invalid 'temperature': decimal above maximum value. Expected a value "
                      . "<= 2, but got $b->{temperature} instead.", param => 'temperature',
                      code => 'decimal_above_max_value')
            if $b->{temperature} > 2;
        return oa_bad("Invalid 'temperature': decimal below minimum value. Expected a value "
                      . ">= 0, but got $b->{temperature} instead.", param => 'temperature',
                      code => 'decimal_below_min_value')
            if $b->{temperature} < 0;
    }
    if (defined $b->{response_format}) {
        my $rf = $b->{response_format};
        return oa_bad("Invalid type for 'response_format': expected an object, but got "
                      . oa_type_name($rf) . ' instead.', param => 'response_format',
                      code => 'invalid_type')
            unless ref $rf eq 'HASH';
        my $type = $rf->{type} // '';
        return oa_bad("Invalid value: '$type'. Supported values are: 'text', 'json_object', "
                      . "and 'json_schema'.", param => 'response_format.type',
                      code => 'invalid_value')
            unless !ref $type && grep { $_ eq $type } qw(text json_object json_schema);
        if ($type eq 'json_object') {
            my $all = join "\n", map { content_text($_->{content}) } @{ $b->{messages} };
            return oa_bad("'messages' must contain the word 'json' in some form, to use "
                          . "'response_format' of type 'json_object'.", param => 'messages')
                unless $all =~ /json/i;
        }
    }
    return oa_bad('FakeLLM: stream is not implemented', param => 'stream')
        if $b->{stream};
    return undef;
}

# tools, tool_choice, and every tool call answered right after it.
sub oa_validate_tools {
    my ($b) = @_;
    if (exists $b->{tools}) {
        return oa_bad("Invalid type for 'tools': expected an array of objects, but got "
                      . oa_type_name($b->{tools}) . ' instead.', param => 'tools',
                      code => 'invalid_type')
            unless ref $b->{tools} eq 'ARRAY';
        my $i = 0;
        for my $t (@{ $b->{tools} }) {
            return oa_bad("Missing required parameter: 'tools[$i].function'.",
                          param => "tools[$i].function", code => 'missing_required_parameter')
                unless ref $t eq 'HASH' && ($t->{type} // '') eq 'function'
                    && ref $t->{function} eq 'HASH';
            my $name = $t->{function}{name};
            return oa_bad("Invalid 'tools[$i].function.name': string does not match pattern. "
                          . "Expected a string that matches the pattern '^[a-zA-Z0-9_-]+\$'.",
                          param => "tools[$i].function.name", code => 'invalid_value')
                unless jtype($name) eq 'string' && $name =~ /\A[a-zA-Z0-9_-]{1,64}\z/;
            return oa_bad("Invalid type for 'tools[$i].function.parameters': expected an "
                          . 'object.', param => "tools[$i].function.parameters",
                          code => 'invalid_type')
                if exists $t->{function}{parameters} && ref $t->{function}{parameters} ne 'HASH';
            $i++;
        }
    }
    if (exists $b->{tool_choice}) {
        my $tc = $b->{tool_choice};
        return oa_bad("Invalid value for 'tool_choice': 'tool_choice' is only allowed when "
                      . "'tools' are specified.", param => 'tool_choice')
            unless ref $b->{tools} eq 'ARRAY';
        return oa_bad("Invalid value: '" . ($tc // 'null') . "'. Supported values are: 'none', "
                      . "'auto', and 'required'.", param => 'tool_choice',
                      code => 'invalid_value')
            unless (!ref $tc && defined $tc && $tc =~ /\A(?:none|auto|required)\z/)
                || (ref $tc eq 'HASH' && ($tc->{type} // '') eq 'function'
                    && ref $tc->{function} eq 'HASH'
                    && jtype($tc->{function}{name}) eq 'string');
    }
    my @open;      # ids of the last assistant turn still to be answered
    my $i = 0;
    for my $m (@{ $b->{messages} }) {
        my $role = $m->{role};
        if ($role eq 'tool') {
            my ($at) = grep { $open[$_] eq $m->{tool_call_id} } 0 .. $#open;
            return oa_bad("Invalid parameter: messages with role 'tool' must be a response "
                          . "to a preceeding message with 'tool_calls'.",
                          param => "messages.[$i].role")
                unless defined $at;
            splice @open, $at, 1;
        }
        else {
            return oa_bad("An assistant message with 'tool_calls' must be followed by tool "
                          . "messages responding to each 'tool_call_id'. The following "
                          . 'tool_call_ids did not have response messages: '
                          . join(', ', @open), param => "messages.[$i].role")
                if @open;
            @open = map { $_->{id} } @{ $m->{tool_calls} }
                if $role eq 'assistant' && ref $m->{tool_calls} eq 'ARRAY';
        }
        $i++;
    }
    return oa_bad("An assistant message with 'tool_calls' must be followed by tool messages "
                  . "responding to each 'tool_call_id'. The following tool_call_ids did not "
                  . 'have response messages: ' . join(', ', @open),
                  param => "messages.[$i].role")
        if @open;
    return undef;
}

sub oa_completion {
    my ($b, $mode) = @_;
    my $json_mode = ref $b->{response_format} eq 'HASH'
        && ($b->{response_format}{type} // '') eq 'json_object';
    my ($last_user) = map { content_text($_->{content}) }
                      grep { $_->{role} eq 'user' } reverse @{ $b->{messages} };
    my $consume = $mode eq 'ok' || $mode eq 'slow';
    my $forced = uses_tools($b) ? forced_tool($b) : undef;
    my $text = $mode eq 'empty' ? '' : $forced ? forced_reply($b, $forced, $consume)
             : next_reply($last_user, $json_mode, $consume);
    if (is_tool_reply($text)) {
        return script_error('a scripted tool call, but the request offers no tools')
            unless uses_tools($b);
        return oa_tool_completion($b, $text);
    }
    my $finish = 'stop';
    my $max = $b->{max_completion_tokens} // $b->{max_tokens};
    if (defined $max && tokens($text) > $max) {
        $text = cut_to_tokens($text, $max);
        $finish = 'length';
    }
    my ($pt, $ct) = $st{usage} ? ($st{usage}{input}, $st{usage}{output})
                               : (tokens(prompt_text($b)), tokens($text));
    return plain_json_res(200, {
        id => 'chatcmpl-' . rand_str(29),
        object => 'chat.completion',
        created => time,
        model => $b->{model},
        choices => [ {
            index => 0,
            message => { role => 'assistant', content => $text, refusal => undef,
                         annotations => [] },
            logprobs => undef,
            finish_reason => $finish,
        } ],
        usage => {
            prompt_tokens => $pt, completion_tokens => $ct, total_tokens => $pt + $ct,
            prompt_tokens_details => { cached_tokens => 0, audio_tokens => 0 },
            completion_tokens_details => { reasoning_tokens => 0, audio_tokens => 0,
                                           accepted_prediction_tokens => 0,
                                           rejected_prediction_tokens => 0 },
        },
        service_tier => 'default',
        system_fingerprint => 'fp_' . rand_str(10, 0 .. 9, 'a' .. 'f'),
    });
}

# A script that cannot be played: the test is wrong, and says so loudly.
sub script_error {
    my ($why) = @_;
    my $res = HTTP::Response->new(500, 'FakeLLM script error');
    $res->header('Content-Type' => 'application/json');
    $res->content($JSON->encode({ error => { message => "FakeLLM script error: $why",
                                             type => 'fakellm_script' } }));
    return $res;
}

sub oa_tool_completion {
    my ($b, $r) = @_;
    my @calls = map {
        { id => 'call_' . rand_str(24), type => 'function',
          function => { name => $_->{name},
                        arguments => ref $_->{arguments} ? $JSON->encode($_->{arguments})
                                                         : $_->{arguments} } }
    } @{ $r->{tool_calls} };
    my $content = $r->{content};
    $content = undef if defined $content && !length $content;
    my ($pt, $ct) = $st{usage} ? ($st{usage}{input}, $st{usage}{output})
                  : (tokens(prompt_text($b)),
                     tokens(($content // '') . calls_text($r->{tool_calls})));
    return plain_json_res(200, {
        id => 'chatcmpl-' . rand_str(29),
        object => 'chat.completion',
        created => time,
        model => $b->{model},
        choices => [ {
            index => 0,
            message => { role => 'assistant', content => $content, refusal => undef,
                         annotations => [], tool_calls => \@calls },
            logprobs => undef,
            finish_reason => 'tool_calls',
        } ],
        usage => { prompt_tokens => $pt, completion_tokens => $ct, total_tokens => $pt + $ct },
        service_tier => 'default',
        system_fingerprint => 'fp_' . rand_str(10, 0 .. 9, 'a' .. 'f'),
    });
}

sub openai_api {
    my ($req, $mode) = @_;
    my ($m, $path) = ($req->method, $req->uri->path);
    my ($presented) = ($req->header('Authorization') // '') =~ /^Bearer\s+(\S+)\s*\z/;
    return unauthorized($presented)
        if $mode eq 'unauthorized' || !defined $presented || $presented ne $st{key};

    my ($route, $id) = route($m, $path, '/v1/chat/completions');
    return api_error(404, 'invalid_request_error', "Invalid URL ($m $path)")
        unless $route;
    my $b;
    if ($route eq 'create') {
        $b = eval { $JSON->decode($req->content) };
        $b = undef unless ref $b eq 'HASH';
    }
    my $err = mode_error($mode, $b && jtype($b->{model}) eq 'string' ? $b->{model} : undef);
    return $err if $err;

    if ($route eq 'models') {
        return plain_json_res(200, { object => 'list', data => [] }) if $mode eq 'empty';
        return plain_json_res(200, { object => 'list', data => $st{models} });
    }
    if ($route eq 'model') {
        my $model = find_model($id);
        return api_error(404, 'invalid_request_error', "The model '$id' does not exist",
                         param => 'model', code => 'model_not_found')
            unless $model;
        return plain_json_res(200, $model);
    }
    return oa_bad('We could not parse the JSON body of your request. (HINT: This likely means '
                  . "you aren't using your HTTP library correctly. The OpenAI API expects a "
                  . 'JSON payload, but what was sent was not valid JSON. If you have trouble '
                  . 'figuring out how to fix this, please contact us through our help center '
                  . 'at help.openai.com.)')
        unless $b;
    return oa_bad('Unrecognized request argument supplied: tools')
        if $st{tools} eq 'refused' && exists $b->{tools};
    $err = oa_validate($b);
    return $err if $err;
    return api_error(404, 'invalid_request_error', "The model `$b->{model}` does not exist or "
                     . 'you do not have access to it.', code => 'model_not_found')
        unless find_model($b->{model});
    return oa_completion($b, $mode);
}

# --- Anthropic -------------------------------------------------------------------

my %AN_PARAMS = map { $_ => 1 } qw(model messages max_tokens system metadata stop_sequences
    stream temperature top_k top_p tools tool_choice thinking service_tier container
    mcp_servers);
my %AN_VERSIONS = map { $_ => 1 } qw(2023-06-01 2023-01-01);

sub an_bad { return api_error(400, 'invalid_request_error', shift) }

sub an_validate_blocks {
    my ($where, $c, $role) = @_;
    $role //= '';
    if (jtype($c) eq 'string') {
        return undef if length $c || $where eq 'system';
        return an_bad("$where: text content blocks must be non-empty");
    }
    return an_bad("$where: Input should be a valid list") unless ref $c eq 'ARRAY';
    my $i = 0;
    for my $blk (@$c) {
        return an_bad("$where.$i: Input should be a valid dictionary")
            unless ref $blk eq 'HASH';
        return an_bad("$where.$i.type: Field required") unless defined $blk->{type};
        if ($blk->{type} eq 'tool_use') {
            return an_bad("$where.$i: tool_use blocks are only allowed in assistant messages")
                unless $role eq 'assistant';
            for my $k (qw(id name)) {
                return an_bad("$where.$i.$k: Field required") unless defined $blk->{$k};
                return an_bad("$where.$i.$k: Input should be a valid string")
                    unless jtype($blk->{$k}) eq 'string';
            }
            return an_bad("$where.$i.input: Input should be a valid dictionary")
                unless ref $blk->{input} eq 'HASH';
            $i++;
            next;
        }
        if ($blk->{type} eq 'tool_result') {
            return an_bad("$where.$i: tool_result blocks are only allowed in user messages")
                unless $role eq 'user';
            return an_bad("$where.$i.tool_use_id: Field required")
                unless jtype($blk->{tool_use_id}) eq 'string';
            if (exists $blk->{content}) {
                my $err = an_validate_blocks("$where.$i.content", $blk->{content}, 'result');
                return $err if $err;
            }
            return an_bad("$where.$i.is_error: Input should be a valid boolean")
                if exists $blk->{is_error} && jtype($blk->{is_error}) ne 'boolean';
            $i++;
            next;
        }
        return an_bad("$where.$i.type: FakeLLM implements text, tool_use and tool_result "
                      . 'blocks only')
            unless $blk->{type} eq 'text';
        return an_bad("$where.$i.text: Field required") unless exists $blk->{text};
        return an_bad("$where.$i.text: Input should be a valid string")
            unless jtype($blk->{text}) eq 'string';
        return an_bad("$where: text content blocks must be non-empty")
            unless length $blk->{text};
        $i++;
    }
    return undef;
}

sub an_validate {
    my ($b) = @_;
    for my $k (sort keys %$b) {
        return an_bad("$k: Extra inputs are not permitted") unless $AN_PARAMS{$k};
    }
    for my $k (qw(model max_tokens messages)) {
        return an_bad("$k: Field required") unless exists $b->{$k};
    }
    return an_bad('model: Input should be a valid string') unless jtype($b->{model}) eq 'string';
    return an_bad('max_tokens: Input should be a valid integer')
        unless jtype($b->{max_tokens}) eq 'integer';
    return an_bad('max_tokens: Input should be greater than or equal to 1')
        if $b->{max_tokens} < 1;
    return an_bad('messages: Input should be a valid list') unless ref $b->{messages} eq 'ARRAY';
    return an_bad('messages: at least one message is required') unless @{ $b->{messages} };
    my $i = 0;
    for my $m (@{ $b->{messages} }) {
        return an_bad("messages.$i: Input should be a valid dictionary") unless ref $m eq 'HASH';
        for my $k (sort keys %$m) {
            return an_bad("messages.$i.$k: Extra inputs are not permitted")
                unless $k eq 'role' || $k eq 'content';
        }
        return an_bad("messages.$i.role: Field required") unless defined $m->{role};
        return an_bad('messages: Unexpected role "system". The Messages API accepts a top-level '
                      . '`system` parameter, not "system" as an input message role.')
            if $m->{role} eq 'system';
        return an_bad("messages.$i.role: Input should be 'user' or 'assistant'")
            unless $m->{role} eq 'user' || $m->{role} eq 'assistant';
        return an_bad("messages.$i.content: Field required") unless exists $m->{content};
        my $err = an_validate_blocks("messages.$i.content", $m->{content}, $m->{role});
        return $err if $err;
        $i++;
    }
    # Every tool_use answered by a tool_result in the very next message,
    # and every tool_result answering one in the message before.
    for my $i (0 .. $#{ $b->{messages} }) {
        my $m = $b->{messages}[$i];
        my $prev = $i > 0 ? $b->{messages}[$i - 1] : undef;
        my @uses = $prev && ref $prev->{content} eq 'ARRAY'
                 ? map { $_->{id} } grep { $_->{type} eq 'tool_use' } @{ $prev->{content} } : ();
        my @results = ref $m->{content} eq 'ARRAY'
                    ? map { $_->{tool_use_id} } grep { $_->{type} eq 'tool_result' }
                      @{ $m->{content} } : ();
        my %used = map { $_ => 1 } @uses;
        my %answered = map { $_ => 1 } @results;
        my @unknown = grep { !$used{$_} } @results;
        return an_bad("messages.$i.content.0: unexpected `tool_use_id` found in `tool_result` "
                      . "blocks: $unknown[0]. Each `tool_result` block must have a "
                      . 'corresponding `tool_use` block in the previous message.')
            if @unknown;
        my @missing = grep { !$answered{$_} } @uses;
        return an_bad('messages.' . ($i - 1) . ': `tool_use` ids were found without '
                      . '`tool_result` blocks immediately after: ' . join(', ', @missing)
                      . '. Each `tool_use` block must have a corresponding `tool_result` '
                      . 'block in the next message.')
            if @missing;
    }
    my $last = $b->{messages}[-1];
    if ($last && $last->{role} eq 'assistant' && ref $last->{content} eq 'ARRAY'
        && grep { $_->{type} eq 'tool_use' } @{ $last->{content} }) {
        return an_bad('messages: the last message calls tools, but no `tool_result` follows');
    }
    if (exists $b->{tools}) {
        return an_bad('tools: Input should be a valid list') unless ref $b->{tools} eq 'ARRAY';
        my $k = 0;
        for my $t (@{ $b->{tools} }) {
            return an_bad("tools.$k: Input should be a valid dictionary") unless ref $t eq 'HASH';
            return an_bad("tools.$k.name: Field required") unless jtype($t->{name}) eq 'string';
            return an_bad("tools.$k.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}\$'")
                unless $t->{name} =~ /\A[a-zA-Z0-9_-]{1,64}\z/;
            return an_bad("tools.$k.input_schema: Field required")
                unless ref $t->{input_schema} eq 'HASH';
            return an_bad("tools.$k.input_schema.type: Input should be 'object'")
                unless ($t->{input_schema}{type} // '') eq 'object';
            for my $key (sort keys %$t) {
                return an_bad("tools.$k.$key: Extra inputs are not permitted")
                    unless $key =~ /\A(?:name|description|input_schema|cache_control|type)\z/;
            }
            $k++;
        }
    }
    if (exists $b->{tool_choice}) {
        my $tc = $b->{tool_choice};
        return an_bad('tool_choice: Input should be a valid dictionary') unless ref $tc eq 'HASH';
        return an_bad("tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'")
            unless ($tc->{type} // '') =~ /\A(?:auto|any|tool|none)\z/;
        return an_bad('tool_choice.name: Field required')
            if $tc->{type} eq 'tool' && jtype($tc->{name}) ne 'string';
    }
    if (exists $b->{system}) {
        my $err = an_validate_blocks('system', $b->{system});
        return $err if $err;
    }
    if (defined $b->{temperature}) {
        my $t = jtype($b->{temperature});
        return an_bad('temperature: Input should be a valid number')
            unless $t eq 'integer' || $t eq 'number';
        return an_bad('temperature: Input should be less than or equal to 1')
            if $b->{temperature} > 1;
        return an_bad('temperature: Input should be greater than or equal to 0')
            if $b->{temperature} < 0;
    }
    return an_bad('stream: FakeLLM does not implement streaming') if $b->{stream};
    return undef;
}

sub an_message {
    my ($b, $mode) = @_;
    my ($last_user) = map { content_text($_->{content}) }
                      grep { $_->{role} eq 'user' } reverse @{ $b->{messages} };
    my $consume = $mode eq 'ok' || $mode eq 'slow';
    my $forced = uses_tools($b) ? forced_tool($b) : undef;
    my $text = $mode eq 'empty' ? '' : $forced ? forced_reply($b, $forced, $consume)
             : next_reply($last_user, 0, $consume);
    if (is_tool_reply($text)) {
        return script_error('a scripted tool call, but the request offers no tools')
            unless uses_tools($b);
        my @blocks;
        push @blocks, { type => 'text', text => $text->{content} }
            if defined $text->{content} && length $text->{content};
        for my $c (@{ $text->{tool_calls} }) {
            my $input = ref $c->{arguments} ? $c->{arguments}
                      : eval { $JSON->decode($c->{arguments}) } // {};
            push @blocks, { type => 'tool_use', id => 'toolu_01' . rand_str(22),
                            name => $c->{name}, input => $input };
        }
        my $ct = tokens(($text->{content} // '') . calls_text($text->{tool_calls}));
        return plain_json_res(200, {
            id => 'msg_' . rand_str(24), type => 'message', role => 'assistant',
            model => $b->{model}, content => \@blocks, stop_reason => 'tool_use',
            stop_sequence => undef,
            usage => { input_tokens => $st{usage} ? $st{usage}{input} : tokens(prompt_text($b)),
                       output_tokens => $st{usage} ? $st{usage}{output} : $ct,
                       cache_creation_input_tokens => 0, cache_read_input_tokens => 0,
                       service_tier => 'standard' },
        });
    }
    my $stop = 'end_turn';
    if (tokens($text) > $b->{max_tokens}) {
        $text = cut_to_tokens($text, $b->{max_tokens});
        $stop = 'max_tokens';
    }
    my $prompt = prompt_text($b);
    return plain_json_res(200, {
        id => 'msg_' . rand_str(24),
        type => 'message',
        role => 'assistant',
        model => $b->{model},
        content => [ { type => 'text', text => $text } ],
        stop_reason => $stop,
        stop_sequence => undef,
        usage => { input_tokens => $st{usage} ? $st{usage}{input} : tokens($prompt),
                   output_tokens => $st{usage} ? $st{usage}{output} : tokens($text),
                   cache_creation_input_tokens => 0, cache_read_input_tokens => 0,
                   service_tier => 'standard' },
    });
}

sub an_models {
    my ($req, $mode) = @_;
    my %q = $req->uri->query_form;
    my $limit = $q{limit} // 20;
    return an_bad('limit: Input should be greater than or equal to 1')
        unless $limit =~ /^\d+\z/ && $limit >= 1;
    return an_bad('limit: Input should be less than or equal to 1000') if $limit > 1000;
    my @all = $mode eq 'empty' ? () : @{ $st{models} };
    my @ids = map { $_->{id} } @all;
    my ($from, $to) = (0, $#all);
    if (defined $q{after_id}) {
        my ($at) = grep { $ids[$_] eq $q{after_id} } 0 .. $#ids;
        return api_error(404, 'not_found_error', "after_id: $q{after_id}") unless defined $at;
        $from = $at + 1;
    }
    my @page;
    my $has_more;
    if (defined $q{before_id}) {
        my ($at) = grep { $ids[$_] eq $q{before_id} } 0 .. $#ids;
        return api_error(404, 'not_found_error', "before_id: $q{before_id}") unless defined $at;
        $to = $at - 1;
        $from = $to - $limit + 1 if $to - $from + 1 > $limit;
        @page = $to >= $from ? @all[$from .. $to] : ();
        $has_more = $from > 0 ? 1 : 0;
    }
    else {
        @page = $from <= $to ? @all[$from .. $to] : ();
        $has_more = @page > $limit ? 1 : 0;
        splice @page, $limit if @page > $limit;
    }
    return plain_json_res(200, {
        data => \@page,
        has_more => $has_more ? JSON::PP::true : JSON::PP::false,
        first_id => @page ? $page[0]{id} : undef,
        last_id => @page ? $page[-1]{id} : undef,
    });
}

sub anthropic_api {
    my ($req, $mode) = @_;
    my ($m, $path) = ($req->method, $req->uri->path);
    my $presented = $req->header('x-api-key');
    return unauthorized($presented)
        if $mode eq 'unauthorized' || !defined $presented || $presented ne $st{key};
    my $version = $req->header('anthropic-version');
    return an_bad('anthropic-version: header is required') unless defined $version;
    return an_bad("anthropic-version: invalid version '$version'")
        unless $AN_VERSIONS{$version};

    my ($route, $id) = route($m, $path, '/v1/messages');
    return api_error(404, 'not_found_error', 'Not Found') unless $route;
    my $b;
    if ($route eq 'create') {
        $b = eval { $JSON->decode($req->content) };
        return an_bad('There was an error parsing the body of your request: the body is not '
                      . 'valid JSON') unless defined $b || !length($req->content // '');
        return an_bad('Input should be a valid dictionary') unless ref $b eq 'HASH';
    }
    my $err = mode_error($mode, $b ? $b->{model} : undef);
    return $err if $err;
    return an_models($req, $mode) if $route eq 'models';
    if ($route eq 'model') {
        my $model = find_model($id);
        return api_error(404, 'not_found_error', "model: $id") unless $model;
        return plain_json_res(200, $model);
    }
    return an_bad('tools: Extra inputs are not permitted')
        if $st{tools} eq 'refused' && exists $b->{tools};
    $err = an_validate($b);
    return $err if $err;
    return api_error(404, 'not_found_error', "model: $b->{model}") unless find_model($b->{model});
    return an_message($b, $mode);
}

# --- delivery ------------------------------------------------------------------

sub wire {
    my ($res, $body) = @_;
    my $head = sprintf "HTTP/1.1 %d %s\r\n", $res->code, $res->message // '';
    $head .= $res->headers->as_string("\r\n");
    return $head . "\r\n" . ($body // $res->content);
}

# A forked child that holds $c: it waits $seconds (or until the server is
# gone), then sends $bytes (when defined) and closes.
sub hold {
    my ($c, $seconds, $bytes) = @_;
    my $pid = fork;
    if (!defined $pid) {
        print STDERR "FakeLLM: fork: $!\n";
        return;
    }
    if ($pid == 0) {
        $SIG{TERM} = 'DEFAULT';
        close $LISTEN;
        my $until = Time::HiRes::time() + $seconds;
        while (Time::HiRes::time() < $until) {
            POSIX::_exit(0) if getppid() != $SERVER_PID;
            my $left = $until - Time::HiRes::time();
            Time::HiRes::sleep($left < 0.1 ? ($left > 0 ? $left : 0) : 0.1);
        }
        if (defined $bytes) {
            print $c $bytes;
        }
        close $c;
        POSIX::_exit(0);
    }
    $kids{$pid} = 1;
    return;
}

sub handle_api {
    my ($c, $req) = @_;
    my $started = Time::HiRes::time();
    my $rec = record($req);
    my $mode = $st{mode};
    if (defined $st{times}) {
        if (--$st{times} <= 0) {
            $st{mode} = 'ok';
            $st{times} = undef;
        }
    }
    $st{served}++;
    $rec->{mode} = $mode;
    if ($mode eq 'timeout') {
        $rec->{status} = undef;
        hold($c, $st{hang_seconds}, undef);
        return;
    }
    my $res = $FLAVOR eq 'openai' ? openai_api($req, $mode) : anthropic_api($req, $mode);
    my $success = $res->code == 200;
    if ($success && $mode eq 'garbage') {
        $res->content("upstream connect error or disconnect/reset before headers. "
                      . "reset reason: connection termination\n<html><body>502</body></html>");
    }
    if ($success && $st{pad_bytes} && length($res->content) < $st{pad_bytes}) {
        # White space after the JSON value: the same answer, only larger.
        $res->content($res->content . (' ' x ($st{pad_bytes} - length $res->content)));
    }
    $res->header(Connection => 'close');
    common_headers($res, $started);
    $res->header('openai-processing-ms' => $st{delay_ms} + 1)
        if $mode eq 'slow' && $FLAVOR eq 'openai';
    $res->header('Content-Length' => length $res->content);
    $rec->{status} = $res->code;
    capture($mode, $res) if $ENV{SVC_FUZZ_CAPTURE};
    if ($mode eq 'slow') {
        hold($c, $st{delay_ms} / 1000, wire($res));
        return;
    }
    if ($success && $mode eq 'truncated') {
        my $body = $res->content;
        print $c wire($res, substr($body, 0, int(length($body) / 2)));
        return;
    }
    print $c wire($res);
    return;
}

# SVC_FUZZ_CAPTURE=DIR: every answer is appended to DIR/llm.jsonl (as
# SvcTest::fuzz_capture writes), for t/fuzz/seeds.pl: the seeds of the fuzz
# target of provider answers are what this fake answered in the tests.
sub capture {
    my ($mode, $res) = @_;
    require MIME::Base64;
    open my $fh, '>>', "$ENV{SVC_FUZZ_CAPTURE}/llm.jsonl" or return;
    flock $fh, 2;
    print $fh JSON::PP->new->canonical->encode({
        flavor => $FLAVOR, mode => $mode, status => $res->code,
        body => MIME::Base64::encode_base64($res->content, '') }), "\n";
    close $fh;
}

sub reap_kids {
    while ((my $pid = waitpid(-1, POSIX::WNOHANG())) > 0) {
        delete $kids{$pid};
    }
}

sub leave {
    kill 'TERM', keys %kids if %kids;
    POSIX::_exit(0);
}

sub serve {
    my ($d, %cfg) = @_;
    $LISTEN = $d;
    $SERVER_PID = $$;
    $FLAVOR = $cfg{flavor};
    %st = (key => $cfg{key});
    %kids = ();
    $st{models} = [ map { _model_obj($_) } @{ $DEFAULT_MODELS{$FLAVOR} } ];
    reset_behaviour();
    apply_control($cfg{initial}) if $cfg{initial} && %{ $cfg{initial} };
    $SIG{PIPE} = 'IGNORE';
    $SIG{CHLD} = 'DEFAULT';
    $SIG{TERM} = $SIG{INT} = $SIG{HUP} = \&leave;
    # accept() wakes up twice a second so the server notices when the test
    # that started it is gone, and reaps its children.
    $d->timeout(0.5);
    while (1) {
        reap_kids();
        leave() if $cfg{watch} && getppid() != $cfg{watch};
        my $c = $d->accept or next;
        $c->timeout(10);
        my $req = $c->get_request;
        if ($req) {
            if ($req->uri->path =~ m{^/_control(?:/|\z)}) {
                my $res = control_endpoint($req);
                $res->header(Connection => 'close');
                $c->force_last_request;
                $c->send_response($res);
            }
            else {
                my $ok = eval { handle_api($c, $req); 1 };
                unless ($ok) {
                    my $res = HTTP::Response->new(500, 'Internal Server Error', undef,
                                                  "FakeLLM bug: $@");
                    $c->send_response($res);
                }
            }
        }
        close $c;
    }
}

# perl -It/lib -MFakeLLM -e FakeLLM::main -- --flavor openai|anthropic
#      --port-file FILE [--key KEY] [--port N]
sub main {
    my @args = @_ ? @_ : @ARGV;
    my ($flavor, $port_file, $key, $port) = ('openai', undef, undef, 0);
    while (@args) {
        my $a = shift @args;
        if    ($a eq '--flavor')    { $flavor = shift @args }
        elsif ($a eq '--port-file') { $port_file = shift @args }
        elsif ($a eq '--key')       { $key = shift @args }
        elsif ($a eq '--port')      { $port = shift @args }
        else { die "FakeLLM: unknown argument '$a'\n" }
    }
    die "usage: FakeLLM::main --flavor openai|anthropic --port-file FILE [--key KEY] "
        . "[--port N]\n" unless $port_file && $DEFAULT_MODELS{$flavor // ''};
    $key //= default_key($flavor);
    my $d = HTTP::Daemon->new(LocalAddr => '127.0.0.1', LocalPort => $port, Listen => 64,
                              ReuseAddr => 1)
        or die "FakeLLM: cannot listen: $!\n";
    open my $fh, '>', "$port_file.tmp" or die "FakeLLM: $port_file: $!\n";
    print $fh $d->sockport, "\n";
    close $fh or die "FakeLLM: $port_file: $!\n";
    rename "$port_file.tmp", $port_file or die "FakeLLM: $port_file: $!\n";
    print STDERR "FakeLLM ($flavor) on http://127.0.0.1:" . $d->sockport
        . " accepts the key in $port_file.key\n";
    open my $kf, '>', "$port_file.key" or die "FakeLLM: $port_file.key: $!\n";
    chmod 0600, "$port_file.key";
    print $kf "$key\n";
    close $kf or die "FakeLLM: $port_file.key: $!\n";
    # Like a server of start(), it ends with the process that started it
    # (a test that died, a shell that was closed): nothing is left behind.
    serve($d, flavor => $flavor, key => $key, watch => getppid());
}

1;
