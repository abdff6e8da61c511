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
# The code-hosting App (GitHub App) side, for t/vcs/: tools/test.sh exports
# VCS_APP_ID and VCS_APP_KEY_FILE (the App's private key, whose public half
# checks the App JWTs) before starting the fake.
#
#   POST /settings/apps/new?state=S                  the manifest flow: the
#   POST /organizations/{org}/settings/apps/new?state=S   form's manifest is
#                                   kept and the browser sent on to its
#                                   redirect_url with a code and the state
#   POST /api/v3/app-manifests/{code}/conversions   the new App's keys (a
#                                   fresh RSA key), once per code
#   GET  /api/v3/app                                (App JWT) the App itself
#   GET  /api/v3/app/installations/{id}             (App JWT)
#   POST /api/v3/app/installations/{id}/access_tokens   (App JWT) checks the
#                                   repositories and permissions asked for
#   GET  /api/v3/installation/repositories          (installation token)
#                                   paged with Link headers, per_page <= 100
#   GET  /api/v3/repos/{owner}/{name}               (installation token)
#   POST /api/v3/orgs/{org}/repos, /api/v3/user/repos   (installation token
#                                   with administration: write, else 403)
#   POST /login/oauth/access_token  with the App's client id
#                                   (VCS_APP_CLIENT_ID/SECRET): an install
#                                   code for a user-to-server token (ghu_),
#                                   refusals as 200 {"error",...}
#   GET  /api/v3/user/installations  (user token) the installations whose
#                                   `users` include the token's user, paged
#                                   with Link headers ({total_count,
#                                   installations})
# An App JWT is checked as GitHub does: RS256 over header.claims verified
# with the App's public key (openssl), iss the app id, iat not in the
# future, exp in the future and at most 10 minutes ahead; 401 with
# GitHub's message otherwise.
#
#   POST /_control/installation {id, account:{login,type},
#        repository_selection, repos:[{name, private, default_branch}],
#        permissions:{...}, suspended}     creates or replaces one
#        users:[logins who reach it, default ["octo"]]
#   POST /_control/app_code {user}      the code the provider would put on
#                                   the install callback for that user
#   POST /_control {"page_max": N}      pages of /user/installations hold
#                                   at most N (null: 100)
#   POST /_control/git_repo {full_name, path}   serve that bare repository
#                                   over smart HTTP (path null: deleted);
#                                   see "git over smart HTTP" below
#   POST /_control {"git_delay": S}     git requests hang S seconds (0: off)
#   POST /_control {"mode": "app_500" | "app_timeout"}   the App's API
#                                   answers 500, or never
#   GET  /_control  also has "app": {last: what the App calls carried,
#                   mints: tokens minted per installation}
#
# One request per connection (Connection: close), handled in this process,
# so a test's keep-alive client can never block httpd's calls; a "never
# answer" holds its connection in a forked child instead.
use strict;
use warnings;

use Digest::SHA qw(sha256);
use File::Temp ();
use HTTP::Daemon ();
use HTTP::Response ();
use JSON::PP ();
use MIME::Base64 qw(encode_base64 decode_base64url);
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

# The App's side outlives /_control/reset (sign-in tests reset the fake; the
# App's tests make installations of their own, with ids of their own).
my %app = (installations => {}, tokens => {}, manifests => {}, last => {}, mints => {},
           codes => {}, user_tokens => {},
           next_repo_id => 5_000_000, next_app_id => 900_000);

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
    my ($c, $seconds) = @_;
    my $pid = fork();
    if (defined $pid && $pid == 0) {
        # The child holds the connection and says nothing.
        $SIG{TERM} = 'DEFAULT';
        sleep($seconds // $state{hang_seconds});
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
    return app_access_token($req, \%f)
        if defined $ENV{VCS_APP_CLIENT_ID} && ($f{client_id} // '') eq $ENV{VCS_APP_CLIENT_ID};
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

# --- the App -----------------------------------------------------------------

sub iso_time {
    my @t = gmtime(shift);
    return sprintf('%04d-%02d-%02dT%02d:%02d:%02dZ', $t[5] + 1900, $t[4] + 1, @t[3, 2, 1, 0]);
}

sub gh_error {
    my ($code, $message) = @_;
    return json_res($code, { message => $message,
                             documentation_url => 'https://docs.github.com/rest' });
}

my $tmpdir;
sub app_pubkey {
    $tmpdir //= File::Temp::tempdir(CLEANUP => 1);
    my $pub = "$tmpdir/app-pub.pem";
    return $pub if -s $pub;
    my $key = $ENV{VCS_APP_KEY_FILE} or return;
    # (main ignores SIGCHLD, which would make system() fail to reap.)
    local $SIG{CHLD} = 'DEFAULT';
    system('openssl', 'pkey', '-in', $key, '-pubout', '-out', $pub) == 0 or return;
    return $pub;
}

# (1, claims) when the request carries a valid App JWT; (0, message) if not.
sub app_jwt {
    my ($req) = @_;
    my ($jwt) = ($req->header('Authorization') // '') =~ /^Bearer (\S+)$/;
    my $bad = 'A JSON web token could not be decoded';
    return (0, $bad) unless $jwt && $jwt =~ /^([\w-]+)\.([\w-]+)\.([\w-]+)$/;
    my ($h64, $c64, $s64) = ($1, $2, $3);
    my $header = eval { $JSON->decode(decode_base64url($h64)) };
    my $claims = eval { $JSON->decode(decode_base64url($c64)) };
    return (0, $bad) unless ref $header eq 'HASH' && ref $claims eq 'HASH';
    return (0, $bad) unless ($header->{alg} // '') eq 'RS256';
    my $now = time;
    for my $c (qw(iat exp)) {
        return (0, "'$c' claim must be an Integer")
            unless defined $claims->{$c} && $claims->{$c} =~ /^\d+$/;
    }
    return (0, "'Issued at' claim ('iat') must be an Integer representing a time in the past")
        if $claims->{iat} > $now + 1;
    return (0, "'Expiration time' claim ('exp') must be a numeric value representing the "
               . "future time at which the assertion expires") if $claims->{exp} <= $now;
    return (0, "'Expiration time' claim ('exp') is too far in the future")
        if $claims->{exp} > $now + 600;
    return (0, "'Issuer' claim ('iss') must be an Integer or String")
        unless defined $claims->{iss} && "$claims->{iss}" eq ($ENV{VCS_APP_ID} // '');
    my $pub = app_pubkey() or return (0, 'no public key to check with');
    $tmpdir //= File::Temp::tempdir(CLEANUP => 1);
    my ($data, $sig) = ("$tmpdir/jwt.data", "$tmpdir/jwt.sig");
    open my $d, '>', $data or die "$data: $!";
    print $d "$h64.$c64";
    close $d;
    open my $s, '>:raw', $sig or die "$sig: $!";
    print $s decode_base64url($s64);
    close $s;
    local $SIG{CHLD} = 'DEFAULT';
    my $out = `openssl dgst -sha256 -verify '$pub' -signature '$sig' '$data' 2>&1`;
    return (0, $bad) unless $out =~ /Verified OK/;
    return (1, $claims);
}

sub gh_repo {
    my ($inst, $r) = @_;
    my $login = $inst->{account}{login};
    return { id => $r->{id} + 0, name => $r->{name}, full_name => "$login/$r->{name}",
             private => $r->{private} ? JSON::PP::true : JSON::PP::false,
             default_branch => $r->{default_branch} // 'main',
             owner => { login => $login, type => $inst->{account}{type} } };
}

sub set_installation {
    my ($d) = @_;
    my $id = $d->{id} + 0;
    my @repos = map { ref $_ ? { %$_ } : { name => $_ } } @{ $d->{repos} // [] };
    $_->{id} //= $app{next_repo_id}++ for @repos;
    $app{installations}{$id} = {
        id => $id, account => $d->{account} // { login => 'octo-org', type => 'Organization' },
        repository_selection => $d->{repository_selection} // 'selected',
        repos => \@repos,
        permissions => $d->{permissions} // { contents => 'read', metadata => 'read' },
        suspended => $d->{suspended} ? 1 : 0,
        # The provider's users who can reach it (GET /user/installations).
        users => $d->{users} // [ 'octo' ],
    };
    return json_res(200, $app{installations}{$id});
}

# The installation behind an installation token, and what the token reaches.
sub token_of {
    my ($req) = @_;
    my ($tok) = ($req->header('Authorization') // '') =~ /^(?:Bearer|token) (\S+)$/;
    my $t = $tok ? $app{tokens}{$tok} : undef;
    return unless $t && $t->{expires} > time;
    my $inst = $app{installations}{ $t->{installation} } or return;
    my @repos = grep { !$t->{repos} || $t->{repos}{ $_->{name} } } @{ $inst->{repos} };
    return ($t, $inst, \@repos);
}

# The App's OAuth on install (request_oauth_on_install): the provider sends
# the user who installed back to the setup URL with a code, which the App's
# client id and secret exchange for a user-to-server token (ghu_), which
# GET /user/installations takes. Refusals as GitHub answers them: 200 with
# {"error",...}.
sub app_access_token {
    my ($req, $f) = @_;
    my $err = sub {
        my ($e, $d) = @_;
        $app{last}{user_token} = { error => $e };
        return json_res(200, { error => $e, error_description => $d,
                               error_uri => 'https://docs.github.com/apps' });
    };
    return $err->('incorrect_client_credentials', 'The client_id and/or client_secret passed are incorrect.')
        if ($f->{client_secret} // '') ne ($ENV{VCS_APP_CLIENT_SECRET} // '');
    my $grant = delete $app{codes}{ $f->{code} // '' };
    return $err->('bad_verification_code', 'The code passed is incorrect or expired.')
        unless $grant && $grant->{expires} > time;
    my $token = 'ghu_' . rand_str(36);
    push @{ $state{issued} }, $token;
    $app{user_tokens}{$token} = { user => $grant->{user}, expires => time + 8 * 3600 };
    $app{last}{user_token} = { user => $grant->{user},
                               accept => $req->header('Accept'),
                               content_type => $req->header('Content-Type') };
    my $res = json_res(200, { access_token => $token, token_type => 'bearer', scope => '',
                              expires_in => 28800 });
    return $res if ($req->header('Accept') // '') =~ m{application/json};
    return HTTP::Response->new(200, 'OK', ['Content-Type' => 'application/x-www-form-urlencoded'],
        "access_token=$token&expires_in=28800&scope=&token_type=bearer");
}

# GET /user/installations: the App's installations the token's user can
# reach, paged like GitHub (per_page at most 100, Link rel="next").
sub user_installations {
    my ($req) = @_;
    my ($tok) = ($req->header('Authorization') // '') =~ /^(?:Bearer|token) (\S+)$/;
    my $t = $tok ? $app{user_tokens}{$tok} : undef;
    my %q = URI->new($req->uri)->query_form;
    my $page = $q{page} // 1;
    my $pages = $page == 1 ? 1 : ($app{last}{user_installations}{pages} // 0) + 1;
    $app{last}{user_installations} = { authorized => $t ? 1 : 0, pages => $pages,
                                       user => $t ? $t->{user} : undef };
    return gh_error(401, 'Bad credentials') unless $t && $t->{expires} > time;
    my $per = $q{per_page} // 30;
    $per = 100 if $per > 100;
    # Tests make paging visible with a few installations.
    $per = $app{page_max} if $app{page_max} && $per > $app{page_max};
    my @all = sort { $a->{id} <=> $b->{id} }
              grep { grep { $_ eq $t->{user} } @{ $_->{users} } } values %{ $app{installations} };
    return paged($req, \%q, $per, \@all, sub {
        return {
            total_count => scalar @all,
            installations => [ map { { id => $_->{id} + 0, app_id => $ENV{VCS_APP_ID} + 0,
                                       app_slug => $ENV{VCS_APP_SLUG}, account => $_->{account},
                                       repository_selection => $_->{repository_selection},
                                       permissions => $_->{permissions},
                                       suspended_at => $_->{suspended} ? iso_time(time) : undef,
                                       target_type => $_->{account}{type} } } @_ ] };
    });
}

# One page of @$all as GitHub pages lists: ?page=, $per to a page, the
# document $doc->(items of the page) makes, and Link rel="next"/"last"
# under the request's own path.
sub paged {
    my ($req, $q, $per, $all, $doc) = @_;
    my $page = $q->{page} // 1;
    my $last = @$all ? int((@$all + $per - 1) / $per) : 1;
    my @slice = grep { defined } @$all[ ($page - 1) * $per .. $page * $per - 1 ];
    my $res = json_res(200, $doc->(@slice));
    my $base = 'http://' . ($req->header('Host') // '') . $req->uri->path;
    my @link;
    push @link, "<$base?per_page=$per&page=" . ($page + 1) . '>; rel="next"' if $page < $last;
    push @link, "<$base?per_page=$per&page=$last>; rel=\"last\"" if $page < $last;
    $res->header(Link => join(', ', @link)) if @link;
    return $res;
}

# A code as the provider would put on the setup URL after `user` installed
# (or configured) the App: ten minutes, one use.
sub app_code {
    my ($d) = @_;
    my $code = join '', map { sprintf '%02x', ord } split //, pack('N5', map { int rand 2**32 } 1 .. 5);
    push @{ $state{issued} }, $code;
    $app{codes}{$code} = { user => $d->{user} // 'octo', expires => time + 600 };
    return json_res(200, { code => $code });
}

sub app_api {
    my ($req, $c, $path) = @_;
    my $m = $req->method;
    return hang($c) if $state{mode} eq 'app_timeout';
    return gh_error(500, 'Server Error') if $state{mode} eq 'app_500';

    if ($m eq 'POST' && $path =~ m{^/app-manifests/([\w-]+)/conversions\z}) {
        my $made = delete $app{manifests}{$1} or return gh_error(404, 'Not Found');
        $tmpdir //= File::Temp::tempdir(CLEANUP => 1);
        local $SIG{CHLD} = 'DEFAULT';
        my $pem = `openssl genrsa 2048 2>/dev/null`;
        my $id = $app{next_app_id}++;
        (my $slug = lc($made->{manifest}{name} // 'app')) =~ s/[^a-z0-9]+/-/g;
        my %keys = (client_secret => rand_str(40), webhook_secret => rand_str(32));
        push @{ $state{issued} }, values %keys, grep { !/-----/ } split /\n/, $pem;
        $app{last}{conversion} = { id => $id };
        return json_res(201, { id => $id, slug => "$slug-$id", node_id => "A_$id",
                               name => $made->{manifest}{name}, client_id => "Iv23li$id",
                               owner => { login => $made->{owner}, type => $made->{owner_type} },
                               %keys, pem => $pem,
                               permissions => $made->{manifest}{default_permissions},
                               events => $made->{manifest}{default_events} });
    }
    if ($m eq 'GET' && $path eq '/app') {
        my ($ok, $claims) = app_jwt($req);
        $app{last}{jwt} = { ok => $ok, error => $ok ? undef : $claims, path => $path };
        return gh_error(401, $claims) unless $ok;
        return json_res(200, { id => $ENV{VCS_APP_ID} + 0, slug => $ENV{VCS_APP_SLUG},
                               name => 'mod_svc test App',
                               owner => { login => 'octo-org', type => 'Organization' } });
    }
    if ($path =~ m{^/app/installations/(\d+)(/access_tokens)?\z}) {
        my ($id, $tokens) = ($1, $2);
        my ($ok, $claims) = app_jwt($req);
        $app{last}{jwt} = { ok => $ok, error => $ok ? undef : $claims, path => $path };
        return gh_error(401, $claims) unless $ok;
        my $inst = $app{installations}{$id} or return gh_error(404, 'Not Found');
        if (!$tokens && $m eq 'GET') {
            return json_res(200, {
                id => $id + 0, app_id => $ENV{VCS_APP_ID} + 0, account => $inst->{account},
                repository_selection => $inst->{repository_selection},
                permissions => $inst->{permissions},
                events => [ 'installation', 'installation_repositories' ],
                suspended_at => $inst->{suspended} ? iso_time(time) : undef,
                target_type => $inst->{account}{type},
                created_at => iso_time(time - 60), updated_at => iso_time(time - 60) });
        }
        return gh_error(404, 'Not Found') unless $tokens && $m eq 'POST';
        return gh_error(403, 'This installation has been suspended') if $inst->{suspended};
        my $body = eval { $JSON->decode($req->content || '{}') } // {};
        $app{last}{token_request} = $body;
        my %rank = (read => 1, write => 2);
        for my $p (sort keys %{ $body->{permissions} // {} }) {
            my $want = $rank{ $body->{permissions}{$p} } // 9;
            my $have = $rank{ $inst->{permissions}{$p} // '' } // 0;
            return gh_error(422, 'The permissions requested are not granted to this installation.')
                if $want > $have;
        }
        my $repos;
        if ($body->{repositories}) {
            # Names are matched as GitHub does, whatever their case.
            my %have = map { lc $_->{name} => $_->{name} } @{ $inst->{repos} };
            for my $r (@{ $body->{repositories} }) {
                return gh_error(422, 'There is at least one repository that does not exist or '
                                     . 'is not accessible to the parent installation.')
                    unless $have{ lc $r };
            }
            $repos = { map { $have{ lc $_ } => 1 } @{ $body->{repositories} } };
        }
        my $token = 'ghs_' . rand_str(36);
        push @{ $state{issued} }, $token;
        my $exp = time + 3600;
        $app{tokens}{$token} = { installation => $id, repos => $repos,
                                 permissions => $body->{permissions} // $inst->{permissions},
                                 expires => $exp };
        my $key = $id . ':' . join(',', sort keys %{ $repos // {} });
        $app{mints}{$key}++;
        return json_res(201, { token => $token, expires_at => iso_time($exp),
                               permissions => $body->{permissions} // $inst->{permissions},
                               repository_selection => $repos ? 'selected'
                                                               : $inst->{repository_selection} });
    }
    if ($m eq 'GET' && $path eq '/installation/repositories') {
        my ($t, $inst, $repos) = token_of($req);
        $app{last}{list} = { authorized => $t ? 1 : 0 };
        return gh_error(401, 'Bad credentials') unless $t;
        my %q = URI->new($req->uri)->query_form;
        my $per = $q{per_page} // 30;
        $per = 100 if $per > 100;
        return paged($req, \%q, $per, $repos, sub {
            my @slice = @_;
            return { total_count => scalar @$repos,
                     repository_selection => $inst->{repository_selection},
                     repositories => [ map { gh_repo($inst, $_) } @slice ] };
        });
    }
    if ($m eq 'GET' && $path =~ m{^/repos/([^/]+)/([^/]+)\z}) {
        my ($owner, $name) = ($1, $2);
        my ($t, $inst, $repos) = token_of($req);
        return gh_error(401, 'Bad credentials') unless $t;
        my ($r) = grep { lc $_->{name} eq lc $name } @$repos;
        return gh_error(404, 'Not Found') unless $r && lc $owner eq lc $inst->{account}{login};
        return json_res(200, gh_repo($inst, $r));
    }
    if ($m eq 'POST' && $path =~ m{^/(?:orgs/([^/]+)|user)/repos\z}) {
        my $org = $1;
        my ($t, $inst) = token_of($req);
        return gh_error(401, 'Bad credentials') unless $t;
        return gh_error(403, 'Resource not accessible by integration')
            unless ($t->{permissions}{administration} // '') eq 'write'
                && (!defined $org || lc $org eq lc $inst->{account}{login});
        my $body = eval { $JSON->decode($req->content) } // {};
        $app{last}{create_repo} = $body;
        return json_res(422, { message => 'Repository creation failed.',
                               errors => [ { resource => 'Repository', code => 'custom',
                                             field => 'name',
                                             message => 'name already exists on this account' } ] })
            if grep { lc $_->{name} eq lc($body->{name} // '') } @{ $inst->{repos} };
        my $r = { id => $app{next_repo_id}++, name => $body->{name},
                  private => $body->{private} ? 1 : 0, default_branch => 'main' };
        push @{ $inst->{repos} }, $r;
        return json_res(201, gh_repo($inst, $r));
    }
    return gh_error(404, 'Not Found');
}

# --- git over smart HTTP ---------------------------------------------------------
# GET  /{owner}/{name}.git/info/refs?service=git-upload-pack
# POST /{owner}/{name}.git/git-upload-pack
# served by `git http-backend` (as CGI) from the bare repository the test
# registered (POST /_control/git_repo), as GitHub serves an App's clone:
# Basic auth, user x-access-token, password an installation token the fake
# minted that is still valid and names this repository (or all of the
# installation's); 401 with a Basic challenge without credentials or with a
# bad or expired token, 403 for a suspended installation, 404 "Repository
# not found." for a repository outside the token's or the installation's
# selection, deleted, or unknown. Pushing is refused (403). Every request
# is counted per repository (GET /_control: app.git_requests).

sub git_reply {
    my ($code, $text, @h) = @_;
    return HTTP::Response->new($code, undef, [ 'Content-Type' => 'text/plain', @h ], "$text\n");
}

sub git_http {
    my ($req, $c, $owner, $name, $rest) = @_;
    my $full = lc "$owner/$name";
    $app{git_requests}{$full}++;
    # A slow provider: the clone hangs (tests cancel a run meanwhile).
    return hang($c, $app{git_delay}) if $app{git_delay};
    my @challenge = ('WWW-Authenticate' => 'Basic realm="GitHub"');
    my ($b64) = ($req->header('Authorization') // '') =~ /^Basic\s+(\S+)$/i;
    return git_reply(401, 'Authentication required', @challenge) unless $b64;
    my ($user, $tok) = split /:/, MIME::Base64::decode_base64($b64), 2;
    my $t = defined $tok ? $app{tokens}{$tok} : undef;
    $app{git_last} = { user => $user, authorized => $t ? 1 : 0, path => $req->uri->path };
    return git_reply(401, 'Invalid username or token. Password authentication is not supported'
                          . ' for Git operations.', @challenge)
        unless ($user // '') eq 'x-access-token' && $t && $t->{expires} > time;
    my $inst = $app{installations}{ $t->{installation} };
    return git_reply(403, 'This installation has been suspended') if $inst && $inst->{suspended};
    my ($repo) = $inst ? grep { lc $_->{name} eq lc $name } @{ $inst->{repos} } : ();
    my $path = $app{git_repos}{$full};
    return git_reply(404, 'Repository not found.')
        unless $inst && $repo && lc $owner eq lc $inst->{account}{login}
            && (!$t->{repos} || $t->{repos}{ $repo->{name} }) && $path && -d $path;
    return git_reply(403, 'Write access to repository not granted.')
        if $rest =~ /receive-pack/;
    $app{git_served}{$full}++;
    # The CGI: the request body on stdin, the environment it documents.
    $tmpdir //= File::Temp::tempdir(CLEANUP => 1);
    my $in = "$tmpdir/git-body";
    open my $fh, '>:raw', $in or die "$in: $!";
    print $fh $req->content // '';
    close $fh;
    my %env = (
        GIT_PROJECT_ROOT => $path =~ s{/[^/]+/?\z}{}r, GIT_HTTP_EXPORT_ALL => 1,
        PATH_INFO => '/' . ($path =~ m{([^/]+)/?\z})[0] . $rest,
        REQUEST_METHOD => $req->method, QUERY_STRING => $req->uri->query // '',
        CONTENT_TYPE => $req->header('Content-Type') // '',
        CONTENT_LENGTH => length($req->content // ''), REMOTE_USER => $user,
        REMOTE_ADDR => '127.0.0.1', PATH => '/usr/local/bin:/usr/bin:/bin',
        HOME => $tmpdir, GIT_CONFIG_NOSYSTEM => 1,
    );
    $env{HTTP_CONTENT_ENCODING} = $req->header('Content-Encoding') if $req->header('Content-Encoding');
    $env{HTTP_GIT_PROTOCOL} = $req->header('Git-Protocol') if $req->header('Git-Protocol');
    local $SIG{CHLD} = 'DEFAULT';
    my $pid = open(my $out, '-|');
    die "fork: $!" unless defined $pid;
    if (!$pid) {
        %ENV = %env;
        open STDIN, '<', $in or POSIX::_exit(127);
        exec 'git', 'http-backend' or POSIX::_exit(127);
    }
    binmode $out;
    my $cgi = do { local $/; <$out> } // '';
    close $out;
    my ($head, $body) = split /\r?\n\r?\n/, $cgi, 2;
    my $res = HTTP::Response->new(200);
    for my $line (split /\r?\n/, $head // '') {
        my ($k, $v) = $line =~ /^([^:]+):\s*(.*)$/ or next;
        if (lc $k eq 'status') { $res->code(($v =~ /^(\d+)/)[0]) }
        else { $res->header($k => $v) }
    }
    $res->content($body // '');
    return $res;
}

# The provider's page that creates an App from a manifest: the user would
# confirm there; the fake confirms at once.
sub new_app {
    my ($req, $org) = @_;
    my %q = URI->new($req->uri)->query_form;
    my %f = form_params($req);
    my $manifest = eval { $JSON->decode($f{manifest} // '') };
    $app{last}{manifest} = { manifest => $manifest, org => $org, state => $q{state},
                             content_type => $req->header('Content-Type') };
    return HTTP::Response->new(400, 'Bad Request', undef, 'no manifest')
        unless ref $manifest eq 'HASH' && $manifest->{redirect_url};
    my $code = rand_str(20);
    push @{ $state{issued} }, $code;
    $app{manifests}{$code} = { manifest => $manifest, owner => $org // 'octo',
                               owner_type => $org ? 'Organization' : 'User' };
    my $to = URI->new($manifest->{redirect_url});
    $to->query_form(code => $code, state => $q{state});
    my $res = HTTP::Response->new(302);
    $res->header(Location => $to->as_string);
    return $res;
}

sub control {
    my ($req) = @_;
    my $path = $req->uri->path;
    if ($path eq '/_control/git_repo') {
        # {full_name, path}: serve the bare repository at path; path null:
        # the repository is gone (deleted at the provider).
        my $d = eval { $JSON->decode($req->content) };
        return json_res(400, { error => "bad JSON: $@" })
            unless ref $d eq 'HASH' && $d->{full_name};
        if (defined $d->{path}) { $app{git_repos}{ lc $d->{full_name} } = $d->{path} }
        else { delete $app{git_repos}{ lc $d->{full_name} } }
        return json_res(200, { git_repos => $app{git_repos} });
    }
    if ($path eq '/_control/app_code') {
        my $d = eval { $JSON->decode($req->content || '{}') };
        return json_res(400, { error => "bad JSON: $@" }) unless ref $d eq 'HASH';
        return app_code($d);
    }
    if ($path eq '/_control/installation') {
        my $d = eval { $JSON->decode($req->content) };
        return json_res(400, { error => "bad JSON: $@" }) unless ref $d eq 'HASH' && $d->{id};
        return set_installation($d);
    }
    if ($path eq '/_control/reset') {
        reset_state();
    }
    elsif ($req->method eq 'POST') {
        my $d = eval { $JSON->decode($req->content) };
        return json_res(400, { error => "bad JSON: $@" }) unless ref $d eq 'HASH';
        $state{mode} = $d->{mode} if defined $d->{mode};
        $state{user} = $d->{user} if defined $d->{user};
        $state{hang_seconds} = $d->{hang_seconds} if defined $d->{hang_seconds};
        $app{page_max} = $d->{page_max} if exists $d->{page_max};
        $app{git_delay} = $d->{git_delay} if exists $d->{git_delay};
    }
    return json_res(200, { mode => $state{mode}, user => $state{user},
                           issued => $state{issued}, last => $state{last},
                           app => { last => $app{last}, mints => $app{mints},
                                    installations => $app{installations},
                                    git_requests => $app{git_requests} // {},
                                    git_served => $app{git_served} // {},
                                    git_last => $app{git_last} } });
}

sub handle {
    my ($c, $req) = @_;
    my $path = $req->uri->path;
    my $m = $req->method;
    return control($req) if $path =~ m{^/_control(?:/reset|/installation|/app_code|/git_repo)?\z};
    return git_http($req, $c, $1, $2, $3)
        if $path =~ m{^/([A-Za-z0-9-]+)/([A-Za-z0-9._-]+?)(?:\.git)?(/info/refs|/git-upload-pack|/git-receive-pack)\z};
    return user_installations($req) if $m eq 'GET' && $path eq '/api/v3/user/installations';
    return new_app($req, undef) if $m eq 'POST' && $path eq '/settings/apps/new';
    return new_app($req, $1)
        if $m eq 'POST' && $path =~ m{^/organizations/([^/]+)/settings/apps/new\z};
    return app_api($req, $c, $1) if $path =~ m{^/api/v3(/(?:app|app-manifests|installation|repos|orgs|user/repos)\b.*)\z}
                                    && $path ne '/api/v3/user' && $path ne '/api/v3/user/emails';
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
