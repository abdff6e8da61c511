package SvcContract;
# The API contract, checked on every answer the suites receive.
#
# Loaded by SvcTest.pm, so every test file that uses SvcTest checks every
# answer of mod_svc it receives against GET /api/openapi.json, with
# JSON::Validator (Debian's libjson-validator-perl), not with code of ours:
#
#   - every LWP::UserAgent the test process makes (SvcTest's api(),
#     browser(), Apache::TestRequest, any a test makes itself) gets a
#     response_done handler: each answer from one of the test servers'
#     ports is matched to the operation of its method and path, and its
#     status must be declared there; its content type, body (JSON Schema),
#     and declared headers (required ones present, every one of the right
#     shape) are validated with JSON::Validator's validate_response;
#   - the event streams SvcTest reads on raw sockets (sse_open) are checked
#     the same way for their head, and each event's data against the
#     schema the operation names for its kind (x-svc-events);
#   - answers a test reads on a raw socket, to control the framing, are
#     checked when it hands them over (contract_raw);
#   - an answer to a path no operation has (an unknown path, another
#     method) must still be a problem document with X-Request-Id.
#
# For the checks, every object schema of the document is made strict
# (additionalProperties: false, unless it says otherwise): an answer with a
# key the document does not name fails, so a field cannot be added without
# its schema. The published document stays open, as clients should
# tolerate new fields.
#
# A violation fails the test that received the answer (one failing
# assertion, with the validator's errors as diagnostics) and is written to
# t/logs/contract.log, with one line per answer checked; t/zz_final/
# contract.t reads that log at the end of a run.
use strict;
use warnings;

use Exporter qw(import);
use Fcntl qw(:flock SEEK_END);
use File::Spec::Functions qw(catfile);
use JSON::PP ();
use LWP::UserAgent ();
use HTTP::Request ();
use Storable qw(dclone);
use URI ();
use Apache::Test ();

our @EXPORT_OK = qw(contract_doc contract_check contract_event contract_problems contract_raw);

my $JSON = JSON::PP->new->utf8->canonical->allow_nonref;
my ($doc, $schema, $strict_doc, @ops, %ports);
our $checking;

sub _vars { my $v = eval { Apache::Test::vars(@_) }; return $v }

# The ports of the test servers (the main one and every virtual host).
sub _our_ports {
    return \%ports if %ports;
    my $cfg = eval { Apache::Test::config() };
    my $vars = $cfg ? $cfg->{vars} : {};
    for my $k (keys %$vars) {
        $ports{ $vars->{$k} } = 1 if $k =~ /(?:^|_)port$/ && ($vars->{$k} // '') =~ /^\d+$/;
    }
    return \%ports;
}

sub _log_line {
    my $line = shift;
    my $dir = _vars('t_logs') // return;
    open my $fh, '>>', catfile($dir, 'contract.log') or return;
    flock $fh, LOCK_EX;
    seek $fh, 0, SEEK_END;
    print $fh "$line\n";
    close $fh;
}

# ---------------------------------------------------------------------------
# The document, made strict for the checks
# ---------------------------------------------------------------------------

sub contract_doc {
    return $doc if $doc;
    my $port = _vars('port') // die "SvcContract: no test server\n";
    local $checking = 1;
    my $ua = LWP::UserAgent->new(timeout => 60);
    my $res = $ua->get("http://127.0.0.1:$port/api/openapi.json");
    die 'SvcContract: GET /api/openapi.json: ' . $res->status_line . "\n" unless $res->is_success;
    $doc = $JSON->decode($res->content);
    return $doc;
}

sub _deref {
    my ($root, $node) = @_;
    while (ref $node eq 'HASH' && $node->{'$ref'}) {
        my @path = split m{/}, ($node->{'$ref'} =~ s{^#/}{}r);
        $node = $root;
        $node = $node->{$_} for @path;
    }
    return $node;
}

# Every object schema strict; an allOf names its members' keys so the whole
# is strict while its members are not.
sub _strict {
    my ($root, $node, $in_allof) = @_;
    if (ref $node eq 'ARRAY') {
        _strict($root, $_, 0) for @$node;
        return;
    }
    return unless ref $node eq 'HASH';
    if ($node->{allOf}) {
        my %names;
        for my $m (@{ $node->{allOf} }) {
            my $d = _deref($root, $m);
            $names{$_} = 1 for keys %{ $d->{properties} // {} };
            _strict($root, $m, 1) unless $m->{'$ref'};
        }
        $node->{properties}{$_} //= JSON::PP::true() for keys %names;
        $node->{additionalProperties} //= JSON::PP::false();
    }
    elsif (!$in_allof && ($node->{type} // '') eq 'object' && $node->{properties}) {
        $node->{additionalProperties} //= JSON::PP::false();
    }
    for my $k (keys %$node) {
        next if $k eq 'allOf' || $k eq 'example' || $k eq 'examples';
        _strict($root, $node->{$k}, 0) if ref $node->{$k};
    }
}

sub _schema {
    return $schema if $schema;
    require JSON::Validator;
    my $d = dclone(contract_doc());
    # Schemas that are only ever members of an allOf (the list envelope)
    # stay open; every other component is made strict where it is.
    my %member;
    for my $p (values %{ $d->{paths} }) {
        for my $op (values %$p) {
            for my $r (values %{ $op->{responses} // {} }) {
                for my $c (values %{ $r->{content} // {} }) {
                    for my $m (@{ ($c->{schema} // {})->{allOf} // [] }) {
                        $member{$1} = 1 if ($m->{'$ref'} // '') =~ m{^#/components/schemas/(.+)$};
                    }
                }
            }
        }
    }
    for my $name (keys %{ $d->{components}{schemas} }) {
        _strict($d, $d->{components}{schemas}{$name}, $member{$name} ? 1 : 0);
    }
    for my $p (values %{ $d->{paths} }) {
        for my $op (values %$p) {
            for my $r (values %{ $op->{responses} // {} }) {
                for my $c (values %{ $r->{content} // {} }) {
                    _strict($d, $c->{schema}, 0) if $c->{schema} && !$c->{schema}{'$ref'};
                }
            }
        }
    }
    # JSON::Validator reads a response's headers as they are written; the
    # document refers to components (headers and responses): put them in
    # place.
    for my $p (values %{ $d->{paths} }) {
        for my $op (values %$p) {
            my $rs = $op->{responses} or next;
            for my $st (keys %$rs) {
                $rs->{$st} = dclone(_deref($d, $rs->{$st})) if $rs->{$st}{'$ref'};
                my $h = $rs->{$st}{headers} or next;
                $h->{$_} = dclone(_deref($d, $h->{$_})) for keys %$h;
            }
        }
    }
    $schema = JSON::Validator->new->schema($d)->schema->resolve;
    $strict_doc = $d;
    my $strict = $d;
    for my $path (keys %{ $strict->{paths} }) {
        my @segs = split m{/}, $path, -1;
        my $literal = grep { !/^\{/ } @segs;
        my $re = join '/', map { /^\{.*\}$/ ? '[^/]+' : quotemeta } @segs;
        for my $m (keys %{ $strict->{paths}{$path} }) {
            push @ops, { path => $path, method => $m, re => qr/^$re$/, literal => $literal,
                         op => $strict->{paths}{$path}{$m} };
        }
    }
    # Literal segments first: /team/invites before /team/{userId}.
    @ops = sort { $b->{literal} <=> $a->{literal} || $a->{path} cmp $b->{path} } @ops;
    return $schema;
}

# A component schema of the strict document, as the validator holds it.
sub _component {
    _schema();
    return $strict_doc->{components}{schemas}{ $_[0] };
}

# What is wrong with an example of the document (as strict as answers are).
sub example_errors {
    my ($m, $path, $code, $example) = @_;
    _schema();
    my $c = $strict_doc->{paths}{$path}{$m}{responses}{$code}{content}{'application/json'};
    return ('no such answer') unless $c;
    return map { "$_" } $schema->validate($example, $c->{schema});
}

# What is wrong with a value against a schema of the document (its
# components resolved).
sub value_errors {
    my ($value, $s) = @_;
    return map { "$_" } _schema()->validate($value, _deref($strict_doc, $s));
}

# The operation of a method and a path: (its entry, whether the path exists
# under another method).
sub _operation {
    my ($method, $path) = @_;
    _schema();
    my $m = lc $method;
    $m = 'get' if $m eq 'head';
    my $other;
    for my $o (@ops) {
        next unless $path =~ $o->{re};
        return ($o, 0) if $o->{method} eq $m;
        $other = 1;
    }
    return (undef, $other);
}

# ---------------------------------------------------------------------------
# Checking one answer
# ---------------------------------------------------------------------------

my @problems;

# The codes of httpd's refusals as the service words them
# (svc_dispatch_refusal): not an operation's answers.
my %REFUSAL = map { $_ => 1 } qw(bad_request request_timeout uri_too_long request_refused
                                 server_error);

sub contract_problems { return @problems }

sub _report {
    my ($what, @errors) = @_;
    push @problems, $what;
    _log_line("VIOLATION $what: " . join('; ', @errors));
    my $ok = eval {
        require Test::Builder;
        my $tb = Test::Builder->new;
        local $Test::Builder::Level = $Test::Builder::Level + 3;
        $tb->ok(0, "the answer keeps to the API contract: $what");
        $tb->diag("  $_") for @errors;
        1;
    };
    warn "SvcContract: $what: @errors\n" unless $ok;
}

sub _bare_type {
    my $ct = shift // '';
    $ct =~ s/;.*//;
    $ct =~ s/\s+//g;
    return lc $ct;
}

# contract_check(method => 'GET', path => '/api/me', status => 200,
#                header => sub { lc name -> value or undef },
#                content_type => ..., body => bytes or undef,
#                head_only => 1 when only the head was read)
# Reports a violation as a failing assertion of the running test.
sub contract_check {
    return if $checking;
    local $checking = 1;
    my ($what, $tag, @errors) = contract_errors(@_);
    _log_line(($tag =~ /^FAIL|^OK/ ? '' : (@errors ? 'FAIL ' : 'OK ')) . $tag);
    _report($what, @errors) if @errors;
}

# The same, reporting nothing: (what, log tag, errors...).
sub contract_errors {
    my %a = @_;
    my $what = "$a{method} $a{path} -> $a{status}";
    my $ct = _bare_type($a{content_type});
    my $header = $a{header};
    my ($o) = eval { _operation($a{method}, $a{path}) };
    return ($what, 'FAIL document', "the document could not be read: $@") if $@;
    my $has_body = defined $a{body} && length $a{body} && $a{method} ne 'HEAD';
    my ($data, $decoded);
    if ($has_body && $ct =~ m{^application/(?:problem\+)?json$}) {
        $data = eval { $JSON->decode($a{body}) };
        return ($what, 'FAIL json', "the body is not JSON: $@") if $@;
        $decoded = 1;    # (null decodes to undef)
    }
    if (!$o) {
        # No operation: an unknown path, or another method (405), or
        # OPTIONS (204 with Allow). mod_svc's answers are problem documents
        # all the same; what has neither its request id nor a problem's
        # type is httpd's own (a location of the test configuration's).
        return ($what, "- OPTIONS $a{status}",
                ($header->('allow') ? () : 'OPTIONS without Allow'),
                ($has_body ? 'OPTIONS with a body' : ()))
            if uc $a{method} eq 'OPTIONS' && $a{status} == 204;
        return ($what, '- httpd')
            if !defined $header->('x-request-id') && $ct ne 'application/problem+json';
        my @e;
        push @e, "no X-Request-Id" unless ($header->('x-request-id') // '') =~ /^req_/;
        if ($ct ne 'application/problem+json') {
            push @e, "content type $ct, not application/problem+json";
        }
        elsif ($has_body) {
            push @e, map { "$_" } _schema()->validate($data, _component('Problem'));
        }
        push @e, 'a 405 without Allow' if $a{status} == 405 && !$header->('allow');
        return ($what, "- \U$a{method}\E $a{status}", @e);
    }
    my $op = $o->{op};
    my $id = $op->{operationId} // "$o->{method} $o->{path}";
    my $st = $a{status};
    $what .= " ($id)";
    unless ($op->{responses}{$st}) {
        # httpd's own refusals (a URL too long, a request too slow, ...),
        # brought to the service by ErrorDocument (svc_dispatch_refusal),
        # come before any operation: problem documents, with their codes.
        if ($data && ref $data eq 'HASH' && $REFUSAL{ $data->{code} // '' }
            && !$op->{responses}{$st}) {
            my @e;
            push @e, "no X-Request-Id" unless ($header->('x-request-id') // '') =~ /^req_/;
            push @e, map { "$_" } _schema()->validate($data, _component('Problem'));
            return ($what, "- \U$a{method}\E $st", @e);
        }
        return ($what, "FAIL $id $st", "status $st is not declared for $id (declared: "
                . join(', ', sort keys %{ $op->{responses} }) . ')');
    }
    my @errors;
    my $decl = $op->{responses}{$st};
    my @types = sort keys %{ $decl->{content} // {} };
    if ($a{method} ne 'HEAD') {
        push @errors, "a body, where $st declares none" if !@types && $has_body;
        # (An empty text, a log with nothing in it yet, is a body.)
        push @errors, "no body, where $st declares " . join(', ', @types)
            if @types && !$has_body && $st != 204 && !$a{head_only}
               && !grep { !m{json$} } @types;
    }
    my %get = (
        header => sub {
            my ($name, $param) = @_;
            my $v = $header->(lc $name);
            my $t = ($param->{schema} // {})->{type} // '';
            $v += 0 if defined $v && $t eq 'integer' && $v =~ /^-?\d+$/;
            return { exists => defined $v, value => $v };
        },
        body => sub {
            return { exists => 0 } unless $has_body;
            return { exists => 1, value => ($decoded ? $data : $a{body}),
                     content_type => ($ct eq '' ? undef : $ct) };
        },
    );
    if ($a{method} eq 'HEAD' || $a{head_only}) {
        # The head only: the body is not there to see; its type is.
        $get{body} = sub { { exists => 0 } };
        push @errors, "content type $ct, declared: @types"
            if @types && $ct && !grep { _type_fits($_, $ct) } @types;
    }
    push @errors, map { "$_" } _schema()->validate_response([$o->{method}, $o->{path}, $st],
                                                             \%get);
    return ($what, "$id $st", @errors);
}

sub _type_fits {
    my ($declared, $ct) = @_;
    return 1 if $declared eq $ct;
    return 1 if $declared eq '*/*';
    my ($dt) = $declared =~ m{^([^/]+)/\*$};
    return $dt && $ct =~ m{^\Q$dt\E/};
}

# An event of a stream the operation at `path` answered: its data must fit
# the schema its kind has there.
sub contract_event {
    my ($path, $kind, $data) = @_;
    return if $checking;
    # Events a test wrote into the log itself (t/events/stream.t) are no
    # kind of the service's: their names start with test.
    return if $kind =~ /^test\./;
    local $checking = 1;
    my @e = event_errors($path, $kind, $data);
    _log_line(sprintf "%s event %s", @e ? 'FAIL' : 'OK', $kind);
    _report("event $kind of GET $path", @e) if @e;
}

# The same, reporting nothing: the errors (none when it fits; the stream's
# operation unknown counts as an error too).
sub event_errors {
    my ($path, $kind, $data) = @_;
    my ($o) = eval { _operation('GET', $path) };
    return ("GET $path is no operation") unless $o;
    my $s = ($o->{op}{'x-svc-events'} // {})->{$kind};
    return ("the kind $kind is not declared (x-svc-events)") unless $s;
    return map { "$_" } _schema()->validate($data, _deref($strict_doc, $s));
}

# ---------------------------------------------------------------------------
# Every LWP::UserAgent of the test process
# ---------------------------------------------------------------------------

sub _seen {
    my ($res, $ua, $h) = @_;
    return if $checking;
    my $req = $res->request or return;
    my $uri = URI->new($req->uri);
    return unless ($uri->scheme // '') =~ /^https?$/;
    return unless $uri->host eq '127.0.0.1' || $uri->host eq 'localhost';
    return unless _our_ports()->{ $uri->port };
    # httpd's own answers (a malformed request line, a path outside the
    # service's locations) are not the service's.
    return if !defined $res->header('X-Request-Id')
              && ($res->header('Content-Type') // '') =~ m{^text/html}
              && !$res->header('Set-Cookie');
    return if ($res->header('Client-Warning') // '') eq 'Internal response';
    contract_check(method => $req->method, path => $uri->path, status => $res->code,
                   header => sub { scalar $res->header($_[0]) },
                   content_type => scalar $res->header('Content-Type'),
                   body => $res->content);
    return;
}

# contract_raw($request, $response): an answer a test read on a raw socket
# (to control the framing: a body over a limit, chunked), checked as any
# other. $request is at least its request line; $response the bytes read,
# whole (a chunked body is put together first).
sub contract_raw {
    return if $checking;
    my @args = raw_args(@_) or return;
    contract_check(@args);
    return;
}

# The same answer as contract_check's arguments; () for none of the
# service's (httpd's own page, or nothing readable).
sub raw_args {
    my ($request, $response) = @_;
    my ($method, $target) = $request =~ m{\A(\S+) (\S+) HTTP/} or return;
    require HTTP::Response;
    my $res = HTTP::Response->parse($response);
    return unless $res && $res->code;
    if (lc($res->header('Transfer-Encoding') // '') eq 'chunked') {
        my ($raw, $body) = ($res->content, '');
        while ($raw =~ s/\A([0-9A-Fa-f]+)[^\r\n]*\r\n//) {
            my $n = hex $1;
            last if $n == 0;
            $body .= substr($raw, 0, $n, '');
            $raw =~ s/\A\r\n//;
        }
        $res->content($body);
    }
    # httpd's own answers (a request it refused before the service saw it)
    # are not the service's.
    return if !defined $res->header('X-Request-Id')
              && ($res->header('Content-Type') // '') =~ m{^text/html};
    (my $path = $target) =~ s/\?.*//s;
    return (method => $method, path => $path, status => $res->code,
            header => sub { scalar $res->header($_[0]) },
            content_type => scalar $res->header('Content-Type'), body => $res->content);
}

# A test that forks workers (t/kernel/pg_restart.t, races) would have each
# of them read and prepare the document (seconds) before its first check:
# the parent prepares it once, before it forks, and they share it.
BEGIN {
    *CORE::GLOBAL::fork = sub () {
        eval { _schema() } if !$schema && !$checking && _vars('port');
        return CORE::fork();
    };
}

{
    no warnings 'redefine';
    my $new = \&LWP::UserAgent::new;
    *LWP::UserAgent::new = sub {
        my $ua = $new->(@_);
        $ua->add_handler(response_done => \&_seen);
        return $ua;
    };
}

1;
