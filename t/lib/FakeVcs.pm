package FakeVcs;
# A fake code-hosting provider for the sign-in tests: the parts of GitHub's
# public OAuth web flow and REST API that mod_svc's sign-in uses, on
# 127.0.0.1, with switches to misbehave.
#
#   perl -It/lib -MFakeVcs -e FakeVcs::main -- --port-file FILE \
#       [--tls-cert CERT --tls-key KEY]
#
# tools/test.sh starts one before Apache::Test (so httpd's configuration can
# name it), with VCS_OAUTH_CLIENT_ID and VCS_OAUTH_CLIENT_SECRET in its
# environment; it listens on an ephemeral port and writes the port to FILE.
# The API is served under /api/v3, as GitHub Enterprise Server does, so the
# path prefix of SvcVcsApiURL is exercised too.
#
#   GET  /login/oauth/authorize     302 back to redirect_uri with code and
#                                   state (or error=access_denied)
#   POST /login/oauth/access_token  {"access_token",...} or, with 200 as
#                                   GitHub does, {"error",...}
#   GET  /api/v3/user               {"id","login","name","email"}
#   GET  /api/v3/user/emails        [{"email","primary","verified","visibility"}]
#
# Control (tests only; SvcTest.pm wraps it):
#   POST /_control {"mode":..., "user":{...}}  set what the next flows see
#   POST /_control/reset                       mode "ok", the default user
#   GET  /_control                             state: mode, what was issued
#                                              (codes and tokens, which tests
#                                              record as secrets), and what
#                                              the last requests carried
# Modes: ok; deny (the user declines at the provider); token_error
# (incorrect_client_credentials); token_500; token_garbage (not JSON);
# token_timeout, emails_timeout (never answer); user_500.
#
# One request per connection (Connection: close), handled in this process,
# so a test's keep-alive client can never block httpd's calls; a "never
# answer" holds its connection in a forked child instead.
use strict;
use warnings;

use Digest::SHA qw(sha256);
use HTTP::Daemon ();
use HTTP::Response ();
use JSON::PP ();
use MIME::Base64 qw(encode_base64);
use POSIX ();
use URI ();

my $JSON = JSON::PP->new->utf8->canonical;

sub default_user {
    return {
        id     => 4242,
        login  => 'octo',
        name   => 'Octo Cat',
        emails => [ { email => 'octo@example.test', primary => JSON::PP::true,
                      verified => JSON::PP::true, visibility => 'public' } ],
    };
}

my %state;
sub reset_state {
    %state = (mode => 'ok', user => default_user(), issued => [], codes => {},
              tokens => {}, last => {}, hang_seconds => 30);
}

sub b64url { my $s = encode_base64(shift, ''); $s =~ tr{+/}{-_}; $s =~ s/=+\z//; $s }

sub rand_str {
    my $n = shift;
    open my $fh, '<', '/dev/urandom' or die "urandom: $!";
    read($fh, my $raw, $n) == $n or die "urandom: short read";
    close $fh;
    return join '', map { ('a'..'z', 'A'..'Z', 0..9)[ord($_) % 62] } split //, $raw;
}

sub json_res {
    my ($code, $data) = @_;
    my $res = HTTP::Response->new($code);
    $res->header('Content-Type' => 'application/json; charset=utf-8');
    $res->content($JSON->encode($data));
    return $res;
}

sub form_params {
    my $req = shift;
    my $u = URI->new('http://x/');
    my $ct = $req->header('Content-Type') // '';
    if ($ct =~ m{^application/json}i) {
        my $d = eval { $JSON->decode($req->content) } // {};
        return %$d;
    }
    $u->query($req->content);
    return $u->query_form;
}

my %hanging;    # pids of children holding silent connections

sub hang {
    my ($c) = @_;
    my $pid = fork();
    if (defined $pid && $pid == 0) {
        # The child holds the connection and says nothing.
        $SIG{TERM} = 'DEFAULT';
        sleep $state{hang_seconds};
        POSIX::_exit(0);
    }
    $hanging{$pid} = 1 if $pid;
    return;
}

sub authorize {
    my ($req) = @_;
    my %q = URI->new($req->uri)->query_form;
    $state{last}{authorize} = { %q };
    if (($q{client_id} // '') ne ($ENV{VCS_OAUTH_CLIENT_ID} // '')) {
        return HTTP::Response->new(404, 'Not Found', undef, 'unknown client');
    }
    my $to = URI->new($q{redirect_uri} // '');
    return HTTP::Response->new(400, 'Bad Request', undef, 'no redirect_uri')
        unless $to->scheme && $to->scheme =~ /^https?$/;
    if ($state{mode} eq 'deny') {
        $to->query_form(error => 'access_denied',
                        error_description => 'The user has denied your application access.',
                        state => $q{state});
    }
    else {
        my $code = rand_str(20);
        push @{ $state{issued} }, $code;
        $state{codes}{$code} = {
            user => $JSON->decode($JSON->encode($state{user})),
            challenge => $q{code_challenge}, method => $q{code_challenge_method},
            redirect_uri => $q{redirect_uri},
        };
        $to->query_form(code => $code, state => $q{state});
    }
    my $res = HTTP::Response->new(302);
    $res->header(Location => $to->as_string);
    return $res;
}

sub access_token {
    my ($req, $c) = @_;
    my %f = form_params($req);
    my $mode = $state{mode};
    $state{last}{token} = {
        accept => $req->header('Accept'), content_type => $req->header('Content-Type'),
        fields => [ sort keys %f ],
    };
    return hang($c) if $mode eq 'token_timeout';
    return HTTP::Response->new(500, 'Internal Server Error', undef, 'oops') if $mode eq 'token_500';
    if ($mode eq 'token_garbage') {
        return HTTP::Response->new(200, 'OK', ['Content-Type' => 'text/html'], '<html>hi</html>');
    }
    my $err = sub {
        my ($e, $d) = @_;
        $state{last}{token}{error} = $e;
        return json_res(200, { error => $e, error_description => $d,
                               error_uri => 'https://docs.github.com/' });
    };
    return $err->('incorrect_client_credentials', 'The client_id and/or client_secret passed are incorrect.')
        if $mode eq 'token_error'
        || ($f{client_id} // '') ne ($ENV{VCS_OAUTH_CLIENT_ID} // '')
        || ($f{client_secret} // '') ne ($ENV{VCS_OAUTH_CLIENT_SECRET} // '');
    my $grant = delete $state{codes}{ $f{code} // '' };
    return $err->('bad_verification_code', 'The code passed is incorrect or expired.')
        unless $grant;
    return $err->('redirect_uri_mismatch', 'The redirect_uri MUST match the registered callback URL for this application.')
        if ($f{redirect_uri} // '') ne ($grant->{redirect_uri} // '');
    # PKCE: the verifier must hash to the challenge the authorize step saw.
    my $pkce_ok = ($grant->{method} // '') eq 'S256' && defined $f{code_verifier}
        && b64url(sha256($f{code_verifier})) eq ($grant->{challenge} // '');
    $state{last}{token}{pkce_ok} = $pkce_ok ? 1 : 0;
    return $err->('bad_verification_code', 'The code_verifier does not match the challenge.')
        unless $pkce_ok;
    my $token = 'gho_' . rand_str(36);
    push @{ $state{issued} }, $token;
    $state{tokens}{$token} = $grant->{user};
    $state{last}{token}{issued} = 1;
    # Not JSON unless asked, like GitHub.
    unless (($req->header('Accept') // '') =~ m{application/json}) {
        return HTTP::Response->new(200, 'OK', ['Content-Type' => 'application/x-www-form-urlencoded'],
            "access_token=$token&scope=read%3Auser%2Cuser%3Aemail&token_type=bearer");
    }
    return json_res(200, { access_token => $token, token_type => 'bearer',
                           scope => 'read:user,user:email' });
}

sub api {
    my ($req, $c, $what) = @_;
    my ($tok) = ($req->header('Authorization') // '') =~ /^Bearer (\S+)$/;
    $state{last}{$what} = {
        accept => $req->header('Accept'),
        api_version => $req->header('X-GitHub-Api-Version'),
        user_agent => $req->header('User-Agent'),
        authorized => ($tok && $state{tokens}{$tok}) ? 1 : 0,
    };
    return hang($c) if $what eq 'emails' && $state{mode} eq 'emails_timeout';
    return HTTP::Response->new(500, 'Internal Server Error', undef, 'oops')
        if $what eq 'user' && $state{mode} eq 'user_500';
    my $user = $tok ? $state{tokens}{$tok} : undef;
    return json_res(401, { message => 'Bad credentials' }) unless $user;
    if ($what eq 'user') {
        my ($public) = grep { $_->{visibility} && $_->{visibility} eq 'public' }
                       @{ $user->{emails} };
        return json_res(200, { id => $user->{id} + 0, login => $user->{login},
                               name => $user->{name}, type => 'User',
                               email => $public ? $public->{email} : undef });
    }
    return json_res(200, $user->{emails});
}

sub control {
    my ($req) = @_;
    my $path = $req->uri->path;
    if ($path eq '/_control/reset') {
        reset_state();
    }
    elsif ($req->method eq 'POST') {
        my $d = eval { $JSON->decode($req->content) };
        return json_res(400, { error => "bad JSON: $@" }) unless ref $d eq 'HASH';
        $state{mode} = $d->{mode} if defined $d->{mode};
        $state{user} = $d->{user} if defined $d->{user};
        $state{hang_seconds} = $d->{hang_seconds} if defined $d->{hang_seconds};
    }
    return json_res(200, { mode => $state{mode}, user => $state{user},
                           issued => $state{issued}, last => $state{last} });
}

sub handle {
    my ($c, $req) = @_;
    my $path = $req->uri->path;
    my $m = $req->method;
    return control($req) if $path =~ m{^/_control(?:/reset)?\z};
    return authorize($req) if $m eq 'GET' && $path eq '/login/oauth/authorize';
    return access_token($req, $c) if $m eq 'POST' && $path eq '/login/oauth/access_token';
    return api($req, $c, 'user') if $m eq 'GET' && $path eq '/api/v3/user';
    return api($req, $c, 'emails') if $m eq 'GET' && $path eq '/api/v3/user/emails';
    return json_res(404, { message => 'Not Found' });
}

# With --tls-cert and --tls-key the fake speaks HTTPS (a provider behind a
# private certificate authority, as GitHub Enterprise Server often is): each
# accepted connection is upgraded to TLS and keeps HTTP::Daemon's methods.
{
    package FakeVcs::TLSConn;
    our @ISA = ('IO::Socket::SSL', 'HTTP::Daemon::ClientConn');
}

sub main {
    my @args = @_ ? @_ : @ARGV;
    my ($port_file, $cert, $key);
    while (@args) {
        my $a = shift @args;
        if ($a eq '--port-file') { $port_file = shift @args }
        elsif ($a eq '--tls-cert') { $cert = shift @args }
        elsif ($a eq '--tls-key') { $key = shift @args }
    }
    die "usage: FakeVcs::main --port-file FILE [--tls-cert F --tls-key F]\n"
        unless $port_file && !$cert == !$key;
    require IO::Socket::SSL if $cert;
    reset_state();
    $SIG{CHLD} = 'IGNORE';
    $SIG{PIPE} = 'IGNORE';
    # Stopped by tools/test.sh: take the silent children along.
    $SIG{TERM} = sub { kill 'TERM', keys %hanging; POSIX::_exit(0) };
    my $d = HTTP::Daemon->new(LocalAddr => '127.0.0.1', LocalPort => 0, Listen => 64,
                              ReuseAddr => 1)
        or die "FakeVcs: cannot listen: $!\n";
    open my $fh, '>', "$port_file.tmp" or die "FakeVcs: $port_file: $!\n";
    print $fh $d->sockport, "\n";
    close $fh;
    rename "$port_file.tmp", $port_file or die "FakeVcs: $port_file: $!\n";
    while (1) {
        my $c = $d->accept or next;
        $c->timeout(10);
        if ($cert) {
            IO::Socket::SSL->start_SSL($c, SSL_server => 1, SSL_cert_file => $cert,
                                       SSL_key_file => $key, Timeout => 10)
                or do { close $c; next };
            bless $c, 'FakeVcs::TLSConn';
        }
        my $req = $c->get_request;
        if ($req) {
            my $res = eval { handle($c, $req) };
            if ($@) {
                $res = HTTP::Response->new(500, 'Internal Server Error', undef, "fake: $@");
            }
            if ($res) {
                $res->header(Connection => 'close');
                $c->force_last_request;
                $c->send_response($res);
            }
        }
        $c->close;
    }
}

1;
