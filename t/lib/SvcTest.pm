package SvcTest;
# Helpers for mod_svc's Apache::Test files (t/*.t).
#
#   use FindBin; use lib "$FindBin::Bin/lib";     # (t/ or t/<dir>/ → adjust)
#   use Apache::Test qw(-withtestmore);
#   (Test::More's is, like, ok, ... come with -withtestmore)
#   use SvcTest;
#
#   my $email = new_user('alice');                 # unique per call
#   my $slug  = new_org($email);                   # unique org owned by alice
#   my $pat   = new_token($email, scope => 'write', org => $slug);
#   my ($status, $json, $res) = api(GET => '/api/me', token => $pat);
#
# Everything a test needs from the environment comes from tools/test.sh:
#   SVC_DB (libpq conninfo), SVC_SECRET (file:...), SVC_TEST_PGDATA,
#   SVC_TEST_PGBIN (directory of pg_ctl/psql), SVC_TEST_PGLOG, SVCCTL, SVC_TOP.
#
# Two files in t/logs are read by tools/check-logs.pl after the run:
#   secrets.txt      every secret a test saw (record_secret); none may appear
#                    in any log.  svcctl token/session output, `svc_*_...`
#                    strings in JSON responses and service_session cookies
#                    are recorded automatically.
#   expected-errors  "START END" byte ranges of error_log inside which error
#                    lines are expected (expect_errors_begin/end), e.g. while a
#                    test restarts PostgreSQL.  Crashes and sanitizer reports
#                    fail the run even inside a range.
use strict;
use warnings;

use Exporter qw(import);
use Fcntl qw(:flock SEEK_END);
use File::Spec::Functions qw(catfile);
use IPC::Open3 qw(open3);
use Symbol qw(gensym);
use Time::HiRes qw(sleep time);
use JSON::PP ();
use HTTP::Request ();
use LWP::UserAgent ();
use Apache::Test ();
# Every answer of mod_svc a test receives is checked against the OpenAPI
# document (t/lib/SvcContract.pm).
use SvcContract ();

our @EXPORT = qw(
    svcctl api new_user new_org new_token new_session
    record_secret expect_errors_begin expect_errors_end
    psql psql_value pg_ctl pg_restart pg_dump_text
    uniq base_url vhost_url t_logs error_log_path wait_for json
    reset_rate_limits
);

my $JSON = JSON::PP->new->utf8->canonical->allow_nonref;

sub json { $JSON }

# --- paths and names -------------------------------------------------------

sub t_logs {
    my $dir = Apache::Test::vars('t_logs');
    return $dir if defined $dir;
    die "SvcTest: Apache::Test has no t_logs; run through t/TEST\n";
}

sub error_log_path { catfile(t_logs(), 'error_log') }

# vhost_url('name') → the URL of <VirtualHost name> in t/conf/extra.conf.in.
sub vhost_url {
    my $name = shift;
    my $port = Apache::Test::vars("${name}_port") // die "SvcTest: no vhost $name\n";
    return "http://127.0.0.1:$port";
}

sub base_url {
    # 127.0.0.1, not "localhost": the test server listens on IPv4 only, and
    # /internal/ is allowed from loopback addresses.
    my $port = Apache::Test::vars('port');
    return "http://127.0.0.1:$port";
}

my $uniq_n = 0;

# uniq('acme') → "acme-<pid>-<n>-<random>": lowercase [a-z0-9-], usable as a
# slug and as an e-mail local part, unique across tests and across runs.
sub uniq {
    my $prefix = lc(shift // 't');
    $prefix =~ s/[^a-z0-9-]+/-/g;
    $uniq_n++;
    my $rand = join '', map { ('a'..'z', 0..9)[rand 36] } 1..6;
    my $s = "$prefix-$$-$uniq_n-$rand";
    return substr($s, 0, 63);
}

# --- running programs -----------------------------------------------------

# run(\@cmd, $stdin) → ($exit_status, $stdout, $stderr)
sub run {
    my ($cmd, $stdin) = @_;
    my $err = gensym;
    my $pid = open3(my $in, my $out, $err, @$cmd);
    print $in $stdin if defined $stdin;
    close $in;
    # Read both pipes without deadlocking on a full stderr pipe.
    my ($o, $e) = ('', '');
    my %fh = (out => $out, err => $err);
    my %buf = (out => \$o, err => \$e);
    while (%fh) {
        my $rin = '';
        vec($rin, fileno($_), 1) = 1 for values %fh;
        select(my $rout = $rin, undef, undef, undef);
        for my $k (keys %fh) {
            next unless vec($rout, fileno($fh{$k}), 1);
            my $n = sysread($fh{$k}, my $chunk, 65536);
            if ($n) { ${ $buf{$k} } .= $chunk } else { delete $fh{$k} }
        }
    }
    waitpid($pid, 0);
    return ($?, $o, $e);
}

# svcctl(@args) → stdout without its final newline; dies with stderr.
# The secrets that `token create` and `session create` print are recorded.
sub svcctl {
    my @args = @_;
    my $bin = $ENV{SVCCTL} or die "SvcTest: SVCCTL is not set\n";
    my ($rc, $out, $err) = run([$bin, @args]);
    if ($rc != 0) {
        my $code = $rc & 127 ? 'signal ' . ($rc & 127) : 'exit ' . ($rc >> 8);
        die "svcctl @args: $code\n$err";
    }
    chomp $out;
    if (@args >= 2 && $args[1] eq 'create'
        && ($args[0] eq 'token' || $args[0] eq 'session')) {
        record_secret($out);
    }
    return $out;
}

sub _pgbin {
    my $prog = shift;
    my $dir = $ENV{SVC_TEST_PGBIN};
    return $dir && -x "$dir/$prog" ? "$dir/$prog" : $prog;
}

# psql($sql) → list of rows, each an array ref of column strings (NULL is
# undef).  Runs against $ENV{SVC_DB}; dies on any SQL error.
sub psql {
    my $sql = shift;
    my $db = $ENV{SVC_DB} or die "SvcTest: SVC_DB is not set\n";
    # Unit separator / record separator: data never contains them, tabs and
    # newlines in data survive.  NULL becomes a marker we map to undef.
    my ($rc, $out, $err) = run([_pgbin('psql'), '-X', '-q', '-A', '-t',
        '-v', 'ON_ERROR_STOP=1', '-P', 'null=\\N', '-F', "\x1f", '-R', "\x1e",
        '-d', $db, '-c', $sql]);
    die "psql: $err" if $rc != 0;
    $out =~ s/\n\z//;
    return () if $out eq '';
    return map { [ map { $_ eq '\\N' ? undef : $_ } split /\x1f/, $_, -1 ] }
           split /\x1e/, $out;
}

# pg_dump_text() → the whole test database as pg_dump writes it (schema and
# data, plain SQL; bytea as hex), for tests that search it for a secret.
sub pg_dump_text {
    my $db = $ENV{SVC_DB} or die "SvcTest: SVC_DB is not set\n";
    my ($rc, $out, $err) = run([_pgbin('pg_dump'), '--no-owner', '-d', $db]);
    die "pg_dump: $err" if $rc != 0;
    return $out;
}

# psql_value($sql) → the first column of the first row (or undef).
sub psql_value {
    my @rows = psql(shift);
    return @rows ? $rows[0][0] : undef;
}

# pg_ctl(@args): pg_ctl on the test cluster, waiting, logging to the same file.
sub pg_ctl {
    my @args = @_;
    my $data = $ENV{SVC_TEST_PGDATA} or die "SvcTest: SVC_TEST_PGDATA is not set\n";
    my @log = $ENV{SVC_TEST_PGLOG} ? ('-l', $ENV{SVC_TEST_PGLOG}) : ();
    my ($rc, $out, $err) = run([_pgbin('pg_ctl'), '-D', $data, @log, '-w', @args]);
    die "pg_ctl @args: $out$err" if $rc != 0;
    return $out;
}

# pg_restart('fast' | 'immediate' | 'smart')
sub pg_restart {
    my $mode = shift // 'fast';
    return pg_ctl('restart', '-m', $mode);
}

# --- users, orgs, tokens -------------------------------------------------

# new_user('alice', founder => 1, name => 'Alice', allow_email_link => 1)
#   → unique e-mail address
sub new_user {
    my ($prefix, %opt) = @_;
    my $email = uniq($prefix // 'user') . '@example.test';
    my @args = ('user', 'add', $email, '--name', $opt{name} // ($prefix // 'user'));
    push @args, '--founder' if $opt{founder};
    push @args, '--allow-email-link' if $opt{allow_email_link};
    svcctl(@args);
    return $email;
}

# new_org($owner_email, prefix => 'acme', name => 'Acme') → unique slug
sub new_org {
    my ($owner, %opt) = @_;
    my $slug = uniq($opt{prefix} // 'org');
    svcctl('org', 'create', $slug, '--owner', $owner,
           '--name', $opt{name} // $slug);
    return $slug;
}

# new_token($email, scope => 'read'|'write'|'admin', org => $slug,
#           days => N, name => '...') → the PAT secret (recorded)
sub new_token {
    my ($email, %opt) = @_;
    my @args = ('token', 'create', $email, '--scope', $opt{scope} // 'admin');
    push @args, '--org', $opt{org} if defined $opt{org};
    push @args, '--days', $opt{days} if defined $opt{days};
    push @args, '--name', $opt{name} if defined $opt{name};
    return svcctl(@args);
}

# new_session($email) → a service_session cookie value (recorded)
sub new_session {
    my $email = shift;
    return svcctl('session', 'create', $email);
}

# --- HTTP ----------------------------------------------------------------

my $ua;

sub _ua {
    $ua //= LWP::UserAgent->new(
        agent        => 'mod_svc-tests/1',
        keep_alive   => 4,
        max_redirect => 0,       # the tests look at redirects themselves
        timeout      => 60,
    );
    return $ua;
}

# api($method, $path, token => $pat, cookie => $session, json => $data,
#     raw => $bytes, headers => { Name => value, ... }, base => $url)
#   → ($status, $decoded_json_or_undef, $http_response)
# $path may carry a query string; `json` sets Content-Type application/json
# unless headers say otherwise; `raw` is sent as is; `base` is another
# server's URL (a virtual host of the test configuration: vhost_url).
sub api {
    my ($method, $path, %opt) = @_;
    my $req = HTTP::Request->new($method => ($opt{base} // base_url()) . $path);
    $req->header(Authorization => "Bearer $opt{token}") if defined $opt{token};
    $req->header(Cookie => "service_session=$opt{cookie}") if defined $opt{cookie};
    if (exists $opt{json}) {
        $req->header('Content-Type' => 'application/json');
        $req->content($JSON->encode($opt{json}));
    }
    elsif (defined $opt{raw}) {
        $req->content($opt{raw});
    }
    if (my $h = $opt{headers}) {
        $req->header($_ => $h->{$_}) for sort keys %$h;
    }
    my $res = _ua()->request($req);

    my $data;
    my $ct = $res->header('Content-Type') // '';
    my $body = $res->content;
    if ($ct =~ m{^application/(?:problem\+)?json\b}i && length $body) {
        $data = eval { $JSON->decode($body) };
    }
    _record_response_secrets($res, $data);
    return ($res->code, $data, $res);
}

# Anything that looks like one of our secrets in a response is recorded, so
# the log check covers tokens minted through the API too.
sub _record_response_secrets {
    my ($res, $data) = @_;
    for my $sc ($res->header('Set-Cookie')) {
        next unless defined $sc;
        record_secret($1) if $sc =~ /^\s*service_session=([^;\s]+)/ && $1 ne '';
    }
    my @stack = ($data);
    while (@stack) {
        my $v = pop @stack;
        next unless defined $v;
        if (ref $v eq 'HASH')     { push @stack, values %$v }
        elsif (ref $v eq 'ARRAY') { push @stack, @$v }
        elsif (!ref $v && $v =~ /\A(svc_[a-z]+_[A-Za-z0-9_]{20,})\z/) {
            record_secret($1);
        }
    }
}

# --- log bookkeeping -----------------------------------------------------

sub _append {
    my ($file, $line) = @_;
    open my $fh, '>>', $file or die "SvcTest: $file: $!\n";
    flock $fh, LOCK_EX;
    seek $fh, 0, SEEK_END;
    print $fh $line;
    close $fh or die "SvcTest: $file: $!\n";
}

# record_secret($s): tools/check-logs.pl fails the run if $s is in any log.
my %recorded;
sub record_secret {
    for my $s (@_) {
        next unless defined $s && length $s >= 8;
        next if $recorded{$s}++;
        _append(catfile(t_logs(), 'secrets.txt'), "$s\n");
    }
}

sub _error_log_size {
    my $size = -s error_log_path();
    return $size // 0;
}

# Waits until error_log stops growing (lines for the last requests may be
# written just after their responses were sent).  Not a timing assertion.
sub _error_log_settle {
    my $deadline = time + 3;
    my $size = _error_log_size();
    while (time < $deadline) {
        sleep 0.3;
        my $now = _error_log_size();
        last if $now == $size;
        $size = $now;
    }
    return $size;
}

# my $mark = expect_errors_begin(); ...; expect_errors_end($mark);
# Error lines written to error_log in between are expected, not failures.
sub expect_errors_begin {
    return _error_log_settle();
}

sub expect_errors_end {
    my $start = shift;
    die "expect_errors_end: no mark\n" unless defined $start;
    my $end = _error_log_settle();
    _append(catfile(t_logs(), 'expected-errors'), "$start $end\n");
    return $end;
}

# wait_for(sub { ... true when done ... }, timeout => 10, interval => 0.1)
# → the callback's last value.  For waiting on recovery, never to assert time.
sub wait_for {
    my ($cb, %opt) = @_;
    my $deadline = time + ($opt{timeout} // 10);
    my $v;
    while (1) {
        $v = $cb->();
        return $v if $v || time >= $deadline;
        sleep($opt{interval} // 0.1);
    }
}

# --- rate limits ---------------------------------------------------------

# reset_rate_limits($email): forget the user's rate-limit windows, for tests
# that create many tokens without being about rate limiting.
sub reset_rate_limits {
    my $email = shift;
    my $id = psql_value("SELECT id FROM users WHERE lower(email) = lower('$email')")
        // die "reset_rate_limits: no user $email\n";
    psql("DELETE FROM rate_limits WHERE key LIKE '%:$id'");
}

# ===========================================================================
# Sign-in (issue 4): the fake code-hosting provider and a browser.
#
#   my $u  = new_vcs_user('alice');          # who the provider signs in next
#   my $b  = browser();                      # cookie jar, follows nothing itself
#   my $si = sign_in($b, return_to => '/x'); # /auth/login -> provider -> callback
#   $si->{callback}->code;  $si->{session}   # the service_session value
#   vcs_control(mode => 'token_timeout');    # the next flows misbehave
#
# The fake (t/lib/FakeVcs.pm) is started by tools/test.sh, which exports
# VCS_WEB_URL, VCS_API_URL, VCS_OAUTH_CLIENT_ID and VCS_OAUTH_CLIENT_SECRET.
# Every code and access token it hands out, every state, nonce and session
# cookie seen here, is recorded as a secret for the log check.
# ===========================================================================
require HTTP::Cookies;
require MIME::Base64;
require URI::Escape;

push @EXPORT, qw(vcs_url vcs_control vcs_state vcs_reset new_vcs_user browser sign_in
                 jwt_forge b64url);

sub vcs_url {
    return $ENV{VCS_WEB_URL}
        // die "SvcTest: VCS_WEB_URL is not set (the fake provider runs under tools/test.sh)\n";
}

my $vcs_ua;

sub _vcs_call {
    my ($method, $path, $data) = @_;
    $vcs_ua //= LWP::UserAgent->new(timeout => 10, keep_alive => 0);
    my $req = HTTP::Request->new($method => vcs_url() . $path);
    if ($data) {
        $req->header('Content-Type' => 'application/json');
        $req->content($JSON->encode($data));
    }
    my $res = $vcs_ua->request($req);
    die "SvcTest: fake provider $method $path: " . $res->status_line . "\n"
        unless $res->is_success;
    my $state = $JSON->decode($res->content);
    record_secret(@{ $state->{issued} // [] });
    return $state;
}

# vcs_control(mode => 'ok'|'deny'|'token_error'|'token_500'|'token_garbage'|
#             'token_timeout'|'emails_timeout'|'user_500', user => {...},
#             hang_seconds => N) → the fake's state
sub vcs_control { my %set = @_; return _vcs_call(POST => '/_control', \%set) }

# vcs_state() → {mode, user, issued => [...], last => {authorize, token, user, emails}}
sub vcs_state { return _vcs_call(GET => '/_control') }

sub vcs_reset { return _vcs_call(POST => '/_control/reset') }

# new_vcs_user('alice', email => ..., name => ..., verified => 0, primary => 0)
#   → {id, login, name, email, emails}: the user the fake signs in from now
#   on, with one address (primary and verified unless told otherwise).
sub new_vcs_user {
    my ($prefix, %opt) = @_;
    my $login = uniq($prefix // 'octo');
    my $email = $opt{email} // "$login\@example.test";
    my $bool = sub { $_[0] ? JSON::PP::true() : JSON::PP::false() };
    my $u = {
        id     => $opt{id} // (1_000_000 + int(rand(1e12))),
        login  => $login,
        name   => exists $opt{name} ? $opt{name} : "User $login",
        emails => $opt{emails} // [ { email => $email,
                                       primary => $bool->($opt{primary} // 1),
                                       verified => $bool->($opt{verified} // 1),
                                       visibility => 'private' } ],
    };
    vcs_control(user => $u);
    return { %$u, email => $email };
}

# browser() → an LWP::UserAgent with a cookie jar that follows no redirect
# by itself (sign_in walks them, so each step can be looked at).
sub browser {
    return LWP::UserAgent->new(
        agent        => 'Mozilla/5.0 (mod_svc tests)',
        cookie_jar   => HTTP::Cookies->new,
        max_redirect => 0,
        keep_alive   => 0,
        timeout      => 60,
    );
}

sub _record_cookies {
    my $res = shift;
    for my $sc ($res->header('Set-Cookie')) {
        record_secret($1) if defined $sc && $sc =~ /^\s*[\w-]+=([^;\s]+)/;
    }
}

# sign_in($browser, return_to => '/path', base => $url, stop_before_callback => 1)
#   → {login, authorize, callback: HTTP::Response; state, code, callback_url,
#      session: the service_session value set by the callback}
# Stops at the first step that does not answer 302.
sub sign_in {
    my ($ua, %opt) = @_;
    my $base = $opt{base} // base_url();
    my %r;
    my $q = defined $opt{return_to}
        ? '?return_to=' . URI::Escape::uri_escape($opt{return_to}) : '';

    $r{login} = $ua->get("$base/auth/login$q");
    _record_cookies($r{login});
    return \%r unless $r{login}->code == 302;
    my $to = $r{login}->header('Location');
    ($r{state}) = $to =~ /[?&]state=([^&]+)/;
    record_secret($r{state});
    $r{authorize} = $ua->get($to);
    return \%r unless $r{authorize}->code == 302;
    $r{callback_url} = $r{authorize}->header('Location');
    ($r{code}) = $r{callback_url} =~ /[?&]code=([^&]+)/;
    record_secret($r{code});
    return \%r if $opt{stop_before_callback};
    $r{callback} = $ua->get($r{callback_url});
    _record_cookies($r{callback});
    ($r{session}) = map { /^service_session=([^;]+)/ ? $1 : () }
                    $r{callback}->header('Set-Cookie');
    vcs_state();    # records the access token the fake issued
    return \%r;
}

sub b64url { return MIME::Base64::encode_base64url(shift) }

# jwt_forge($header_json, $claims_json) → a token of exactly these bytes,
# signed with the server's real session key (build/unit/test_base_jwt --sign,
# which derives it from $SVC_SECRET as the module does).
sub jwt_forge {
    my ($header, $claims) = @_;
    my $top = $ENV{SVC_TOP} // die "SvcTest: SVC_TOP is not set\n";
    my ($rc, $out, $err) = run([catfile($top, 'build', 'unit', 'test_base_jwt'), '--sign',
                                $header, $claims]);
    die "test_base_jwt --sign: $err" if $rc != 0;
    chomp $out;
    record_secret($out);
    return $out;
}

# ===========================================================================
# Tenancy helpers (issue 3): ids, the route table, database digests, races,
# deliberate audit tampering.  Everything above this line is the harness's.
# ===========================================================================

push @EXPORT, qw(
    sql_quote user_id_of org_id_of route_table db_digest race
    audit_tamper tampered_orgs csrf_ok lock_hold lock_release
    stream_viewers stream_places_held
);

# Apache::Test reads its configuration on first use, and doing so assigns to
# the global $_: a first record_secret() inside `map { new_token(...) }`
# replaced map's element.  Read it now, with $_ protected.
{
    local $_;
    eval { Apache::Test::config() };
}

# sql_quote($s) → a single-quoted SQL literal (for psql() in tests only).
sub sql_quote {
    my $s = shift;
    return 'NULL' unless defined $s;
    $s =~ s/'/''/g;
    return "'$s'";
}

sub user_id_of {
    my $email = shift;
    return psql_value('SELECT id FROM users WHERE lower(email) = lower('
                      . sql_quote($email) . ')');
}

# stream_viewers($org, $n, $prefix): $n new viewers of $org with a read
# token each, to hold many event streams (a user holds at most
# SvcStreamLimit, 100 here). Returns the tokens and the principals their
# stream places are held under (for stream_places_held).
sub stream_viewers {
    my ($org, $n, $prefix) = @_;
    my (@tokens, @principals);
    for my $i (1 .. $n) {
        my $u = new_user("$prefix$i");
        svcctl('org', 'add-member', $org, $u, '--role', 'viewer');
        push @tokens, new_token($u, scope => 'read');
        push @principals, 'user:' . user_id_of($u);
    }
    return (\@tokens, \@principals);
}

# The stream places these principals hold (other tests' places are not a
# test's to count: a deploy agent's, say, given back on its own schedule).
sub stream_places_held {
    my ($principals) = @_;
    return psql_value('SELECT count(*) FROM event_streams WHERE principal IN ('
                      . join(', ', map { sql_quote($_) } @$principals) . ')');
}

sub org_id_of {
    my $slug = shift;
    return psql_value('SELECT id FROM orgs WHERE slug = ' . sql_quote($slug));
}

# route_table() → the rows of `svcctl routes --json` (method, path, auth,
# scope, role, tenant, project, prole, body [{name, required, type, values,
# min, max}], hidden, founder, paged, success, op_id, ...).
my $routes;
sub route_table {
    $routes //= $JSON->decode(svcctl('routes', '--json'));
    return @$routes;
}

# The headers a cookie-authenticated state change needs to pass the CSRF
# check (a non-browser client's X-Requested-With).
sub csrf_ok { return (headers => { 'X-Requested-With' => 'mod_svc-tests' }) }

# db_digest() → { table => md5 of its rows } for every table of the schema
# but audit_log (which every refused request may not touch anyway, and which
# grows with every allowed one), rate_limits (counters, not data) and
# event_streams (the count of open streams, which a stream's watcher moves
# on its own schedule: a stream of an earlier request may end meanwhile).  The
# columns that authentication itself moves forward (a token's or session's
# last use, and where from) are left out, so a digest changes only when data
# does; so are those a deploy agent's reports move on its own schedule (what
# its workload is doing, when its target was last heard from), and what the
# planners' hourly sweep of running deployments' replica-hours writes at
# each full hour (a deployment's usage_from, usage records of kind
# deployment: a run crossing the hour saw them change under a refusal).
# An incident's row is made by the first of the agent's reports that looks
# at it (svc_telemetry.c), filed or not: until it is filed (an improvement
# named) it is that bookkeeping only, and is left out too (under load,
# t/deploy/lifecycle.t saw the row appear during a refused scale).
my %touched = (api_tokens     => [qw(last_used_at last_used_ip)],
               sessions       => [qw(last_seen_at ip)],
               deployments    => [qw(workload workload_at usage_from)],
               deploy_targets => [qw(last_seen_at agent_version agent_hostname)],
               # An agent's reports move its deployment's incident along.
               deploy_incidents => [qw(failures last_failure_at recovered_at)],
               # The budget sweep marks an account checked on its own
               # schedule; the invoice preview is a cache a read refreshes.
               billing_accounts => [qw(budget_checked_at next_invoice next_invoice_at)]);
my %skip = (usage_records    => "t.kind = 'deployment'",
            deploy_incidents => 't.improvement_id IS NULL AND t.filed_at IS NULL');
sub db_digest {
    # What works in the background settles first: the run supervisor (as
    # runs_settle) and the deployment planner (issue 21), in one query.
    wait_for(sub {
        !psql_value("SELECT (SELECT count(*) FROM runs WHERE status = 'queued' OR "
                    . "(status = 'running' AND lease_owner NOT LIKE 'fixture/%')) + "
                    . "(SELECT count(*) FROM deployments WHERE status = 'planning')")
    }, timeout => 60, interval => 0.05);
    my @tables = map { $_->[0] } psql(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public' "
        . "AND tablename NOT IN ('audit_log', 'rate_limits', 'event_streams', "
        # A running agent's samples and probes arrive all the time, and with
        # them its boot's number (sql/027), touched by every batch.
        . "'deploy_metrics', 'deploy_probes', 'deploy_telemetry_boots') "
        . 'ORDER BY tablename');
    # Each table's digest is its row count and the sum of a 64-bit hash of
    # each row: any row added, removed or changed moves it (but for a
    # 2^-64 chance), in one pass without sorting or joining the rows into
    # one string. (The sorted md5 of the rows it replaced made the files
    # that take a digest around every refused request, conformance.t and
    # matrix.t, slow on a database the earlier files had filled.)
    my $sql = join ' UNION ALL ', map {
        my $drop = join ', ', map { "'$_'" } @{ $touched{$_} // [] };
        my $row = $drop ? "(to_jsonb(t) - ARRAY[$drop])::text" : 't::text';
        "SELECT '$_', count(*) || ':' || coalesce(sum(hashtextextended($row, 0)::numeric), 0)"
        . " FROM \"$_\" t" . ($skip{$_} ? " WHERE NOT ($skip{$_})" : '')
    } @tables;
    return { map { $_->[0] => $_->[1] } psql($sql) };
}

# race(sub { ... }, sub { ... }, ...) → the return values of the subs, each
# run in its own child process, all released at the same moment: every
# child blocks reading a pipe the parent closes only when all are forked.
# Each sub returns a list of plain scalars (or hash/array refs), which come
# back JSON-encoded.  Children use a fresh HTTP client (connections must not
# be shared across fork) and leave with _exit, so Test::More's end-of-test
# bookkeeping only runs in the parent.
sub race {
    my @subs = @_;
    require POSIX;
    pipe(my $go_r, my $go_w) or die "race: pipe: $!";
    my @kids;
    for my $sub (@subs) {
        pipe(my $res_r, my $res_w) or die "race: pipe: $!";
        my $pid = fork // die "race: fork: $!";
        if ($pid == 0) {
            close $go_w;
            close $res_r;
            undef $ua;
            my $ready = <$go_r>;            # EOF once the parent closes its end
            my $out = eval { $JSON->encode([ $sub->() ]) }
                // $JSON->encode([ 'died', "$@" ]);
            print $res_w $out;
            close $res_w;
            POSIX::_exit(0);
        }
        close $res_w;
        push @kids, [ $pid, $res_r ];
    }
    close $go_r;
    close $go_w;                            # go
    my @results;
    for my $k (@kids) {
        my ($pid, $fh) = @$k;
        local $/;
        my $out = <$fh>;
        close $fh;
        waitpid($pid, 0);
        push @results, defined $out && length $out ? $JSON->decode($out) : [ 'no result' ];
    }
    return @results;
}

# my $h = lock_hold($lock_sql, $waiters); ...requests...; lock_release($h);
# A psql in the background runs $lock_sql (e.g. "SELECT 1 FROM orgs WHERE id =
# '...' FOR UPDATE") in a transaction and keeps it open until $waiters other
# backends of the database wait for a lock (at most 60 s), then commits.
# lock_hold returns once the lock is held.  This makes "simultaneous" exact:
# requests that must meet at a lock are all there before any goes on, so a
# race test does not depend on how fast the machine happens to be.
sub lock_hold {
    my ($lock_sql, $waiters) = @_;
    require POSIX;
    my $app = 'svc_test_lock_' . join '', map { ('a'..'z')[rand 26] } 1 .. 12;
    # (pg_stat_activity is a snapshot per transaction unless cleared.)
    my $wait = "DO \$\$ BEGIN FOR i IN 1 .. 600 LOOP PERFORM pg_stat_clear_snapshot(); "
             . "EXIT WHEN (SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = "
             . "'Lock' AND datname = current_database()) >= $waiters; "
             . "PERFORM pg_sleep(0.1); END LOOP; END \$\$";
    my $pid = fork // die "lock_hold: fork: $!";
    if ($pid == 0) {
        open STDOUT, '>', '/dev/null';
        # (A block, so that perl does not warn about the statement after exec.)
        { exec(_pgbin('psql'), '-X', '-q', '-v', 'ON_ERROR_STOP=1',
               '-d', "$ENV{SVC_DB} application_name=$app",
               '-c', "BEGIN; $lock_sql; $wait; COMMIT;") };
        POSIX::_exit(127);
    }
    my $held = wait_for(sub {
        psql_value("SELECT count(*) FROM pg_stat_activity WHERE application_name = '$app' "
                   . "AND wait_event = 'PgSleep'") > 0
            || waitpid($pid, POSIX::WNOHANG()) == $pid
    }, timeout => 30, interval => 0.05);
    die "lock_hold: the lock was not taken\n" unless $held && kill(0, $pid);
    return $pid;
}

# lock_release($h): waits for the holder to commit (it does once enough
# backends wait) and dies if it failed.
sub lock_release {
    my $pid = shift;
    waitpid($pid, 0);
    die "lock_hold: psql failed ($?)\n" if $?;
}

# audit_tamper($entry_id): what a superuser with direct database access can
# do, bypassing the append-only triggers.  The org is recorded in
# t/logs/audit-tampered, so the end-of-run chain check (t/zz_final/audit_chain.t)
# expects exactly those chains to be broken.
sub audit_tamper {
    my $id = shift;
    die "audit_tamper: bad id\n" unless defined $id && $id =~ /^\d+$/;
    my $org = psql_value("SELECT coalesce(org_id, '') FROM audit_log WHERE id = $id");
    _append(catfile(t_logs(), 'audit-tampered'), "$org\n");
    psql('ALTER TABLE audit_log DISABLE TRIGGER USER; '
         . "UPDATE audit_log SET data = data || '{\"tampered\": true}' WHERE id = $id; "
         . 'ALTER TABLE audit_log ENABLE TRIGGER USER');
    return $org;
}

# tampered_orgs() → the org ids (or '' for the user-level chain) that tests
# tampered with on purpose.
sub tampered_orgs {
    my $file = catfile(t_logs(), 'audit-tampered');
    open my $fh, '<', $file or return ();
    my %seen;
    return grep { !$seen{$_}++ } map { chomp; $_ } <$fh>;
}

# ===========================================================================
# Event streams (SSE)
#
#   my $s = sse_open('/api/orgs/acme/events', token => $pat, last_event_id => 12);
#   $s->{status}, $s->{headers}{'content-type'}     # the response head
#   my $e = sse_next($s, 5);     # {id, event, data (decoded JSON)} or undef on
#                                 # timeout; $s->{closed} once the server ended it
#   my @c = @{ $s->{comments} }; # ": ..." lines seen (heartbeats)
#   $s->{comment_times}[0]        # when sse_next parsed the first of them
#   $s->{raw}                     # the body's bytes as they came, framing and all
#   sse_close($s);
#
# Options: http10 => 1 asks over HTTP/1.0; headers => {name => value} adds
# request headers.
#
# A raw socket and a small parser, so the tests see exactly what goes over
# the wire: chunked framing is undone, frames are split on blank lines.
# ===========================================================================
require IO::Socket::INET;
require IO::Select;

push @EXPORT, qw(sse_open sse_next sse_close sse_drain);

sub sse_open {
    my ($path, %opt) = @_;
    my $port = $opt{port} // Apache::Test::vars('port');
    my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
                                     Proto => 'tcp', Timeout => 10)
        or die "sse_open: connect: $!\n";
    my $proto = $opt{http10} ? 'HTTP/1.0' : 'HTTP/1.1';
    my $req = "GET $path $proto\r\nHost: 127.0.0.1:$port\r\nAccept: text/event-stream\r\n";
    $req .= "$_: $opt{headers}{$_}\r\n" for sort keys %{ $opt{headers} // {} };
    $req .= "Authorization: Bearer $opt{token}\r\n" if defined $opt{token};
    $req .= "Cookie: service_session=$opt{cookie}\r\n" if defined $opt{cookie};
    $req .= "Last-Event-ID: $opt{last_event_id}\r\n" if defined $opt{last_event_id};
    $req .= "\r\n";
    print $sock $req;
    my $s = { sock => $sock, buf => '', body => '', chunked => 0, closed => 0,
              comments => [], events => [] };
    # The response head.
    my $deadline = time + ($opt{timeout} // 10);
    while ($s->{buf} !~ /\r\n\r\n/) {
        last unless _sse_read($s, $deadline - time);
    }
    my ($head, $rest) = split /\r\n\r\n/, $s->{buf}, 2;
    $s->{buf} = $rest // '';
    $s->{raw} = $s->{buf};
    my ($status_line, @lines) = split /\r\n/, $head // '';
    ($s->{status}) = ($status_line // '') =~ m{^HTTP/1\.\d (\d{3})};
    for (@lines) {
        my ($k, $v) = /^([^:]+):\s*(.*)$/ or next;
        $s->{headers}{lc $k} = $v;
    }
    $s->{chunked} = ($s->{headers}{'transfer-encoding'} // '') =~ /chunked/i;
    $s->{status} //= 0;
    if ($s->{status} != 200) {
        # A problem document: read what there is (Content-Length framed).
        my $len = $s->{headers}{'content-length'} // 0;
        while (length($s->{buf}) < $len) {
            last unless _sse_read($s, $deadline - time);
        }
        $s->{problem} = eval { $JSON->decode(substr($s->{buf}, 0, $len)) };
        close $sock;
        $s->{closed} = 1;
    }
    # The head (and a refusal's problem document) keep to the contract; the
    # events are checked as they are read (sse_next).
    (my $bare = $path) =~ s/\?.*//s;
    $s->{path} = $bare;
    if ($s->{status}) {
        my %h = %{ $s->{headers} // {} };
        SvcContract::contract_check(
            method => 'GET', path => $bare, status => $s->{status},
            header => sub { $h{ lc $_[0] } }, content_type => $h{'content-type'},
            body => $s->{status} == 200 ? undef
                    : substr($s->{buf}, 0, $h{'content-length'} // 0),
            head_only => $s->{status} == 200);
    }
    return $s;
}

# Reads what the socket has within $wait seconds into buf; 0 at EOF or timeout.
sub _sse_read {
    my ($s, $wait) = @_;
    return 0 if $s->{closed};
    $wait = 0 if $wait < 0;
    my $sel = IO::Select->new($s->{sock});
    return 0 unless $sel->can_read($wait);
    my $n = sysread($s->{sock}, my $chunk, 65536);
    if (!$n) {
        $s->{eof} = 1;
        return 0;
    }
    $s->{buf} .= $chunk;
    # The body's bytes as they came (after the head), framing and all.
    $s->{raw} .= $chunk;
    return 1;
}

# Moves complete chunks (or raw bytes) from buf to body.
sub _sse_unchunk {
    my $s = shift;
    if (!$s->{chunked}) {
        $s->{body} .= $s->{buf};
        $s->{buf} = '';
        return;
    }
    while ($s->{buf} =~ /^([0-9a-fA-F]+)[^\r\n]*\r\n/) {
        my ($hex, $hl) = ($1, length($&));
        my $n = hex $hex;
        if ($n == 0) {
            $s->{closed} = 1;          # the last chunk: the server ended it
            $s->{buf} = '';
            return;
        }
        last if length($s->{buf}) < $hl + $n + 2;
        $s->{body} .= substr($s->{buf}, $hl, $n);
        substr($s->{buf}, 0, $hl + $n + 2) = '';
    }
}

# The next event within $timeout seconds, or undef.
sub sse_next {
    my ($s, $timeout) = @_;
    my $deadline = time + ($timeout // 5);
    while (1) {
        _sse_unchunk($s);
        while ($s->{body} =~ /\A(.*?)\n\n/s) {
            my $frame = $1;
            substr($s->{body}, 0, length($frame) + 2) = '';
            my %e;
            for my $line (split /\n/, $frame) {
                if ($line =~ /^:\s?(.*)$/) {
                    push @{ $s->{comments} }, $1;
                    push @{ $s->{comment_times} }, time;
                    next;
                }
                my ($k, $v) = $line =~ /^([a-z]+): ?(.*)$/ or next;
                $e{$k} = exists $e{$k} && $k eq 'data' ? "$e{$k}\n$v" : $v;
            }
            $s->{retry} = $e{retry} if defined $e{retry};
            next unless defined $e{id} || defined $e{data};
            $e{data} = eval { $JSON->decode($e{data}) } // $e{data} if defined $e{data};
            SvcContract::contract_event($s->{path}, $e{event}, $e{data})
                if defined $e{event} && defined $s->{path};
            push @{ $s->{events} }, \%e;
            return \%e;
        }
        if ($s->{eof} && !$s->{chunked}) {
            $s->{closed} = 1;
        }
        return undef if $s->{closed} || $s->{eof};
        my $left = $deadline - time;
        return undef if $left <= 0;
        _sse_read($s, $left);
    }
}

# Every event that arrives within $wait seconds of the previous one.
sub sse_drain {
    my ($s, $wait) = @_;
    my @got;
    while (my $e = sse_next($s, $wait // 1)) {
        push @got, $e;
    }
    return @got;
}

sub sse_close {
    my $s = shift;
    close $s->{sock} if $s->{sock};
    $s->{closed} = 1;
}

# ===========================================================================
# Providers, documents and shares (issue 9): fake model providers
# (t/lib/FakeLLM.pm) and the objects the tests build on.
# ===========================================================================

push @EXPORT, qw(new_llm new_provider new_product new_document share_url_token
                 secret_token_like);

# secret_token_like('svc_shr_') → a well-formed token (prefix, 43 base62,
# its CRC-32 checksum in six base62 digits) that nobody issued.
sub secret_token_like {
    my $prefix = shift;
    require Compress::Zlib;
    my @b62 = (0 .. 9, 'A' .. 'Z', 'a' .. 'z');
    my $body = $prefix . join '', map { $b62[rand 62] } 1 .. 43;
    my $v = Compress::Zlib::crc32($body);
    my $sum = '';
    for (1 .. 6) { $sum = $b62[$v % 62] . $sum; $v = int($v / 62) }
    return $body . $sum;
}

# new_llm(flavor => 'openai'|'anthropic', ...) → a started FakeLLM whose key
# is recorded as a secret (no log may ever show it).
sub new_llm {
    my %opt = @_;
    require FakeLLM;
    my $llm = FakeLLM->start(%opt);
    record_secret($llm->key);
    return $llm;
}

# new_provider($org, $token, $llm, name => ..., model => ..., base => $url,
#              tools => 'auto'|'on'|'off')
#   → the provider document (201 or die). Runs of a provider with tools
#   'off' ask the model once for every file (single-answer mode: the replies
#   a test queues are that one JSON answer); otherwise they run the agent
#   loop (the replies are tool calls, FakeLLM.pm).
sub new_provider {
    my ($org, $token, $llm, %opt) = @_;
    my ($st, $p) = api(POST => "/api/orgs/$org/providers", token => $token,
                       $opt{base} ? (base => $opt{base}) : (),
                       json => { name => $opt{name} // uniq('llm'), kind => $llm->flavor,
                                 base_url => $llm->url,
                                 model => $opt{model} // ($llm->flavor eq 'anthropic'
                                     ? 'claude-sonnet-4-20250514' : 'gpt-4o-mini'),
                                 api_key => $llm->key,
                                 $opt{tools} ? (tools => $opt{tools}) : () });
    die "new_provider: $st " . $JSON->encode($p // {}) . "\n" unless $st == 201;
    return $p;
}

# new_product($org, $project, $token, name => ...) → the product document
sub new_product {
    my ($org, $project, $token, %opt) = @_;
    my ($st, $p) = api(POST => "/api/orgs/$org/projects/$project/products", token => $token,
                       json => { name => $opt{name} // 'Product ' . uniq('p') });
    die "new_product: $st " . $JSON->encode($p // {}) . "\n" unless $st == 201;
    return $p;
}

# new_document($org, $product_id, $token, kind => 'toc'|'section', title => ...,
#              body => ...) → the document (with current_version)
sub new_document {
    my ($org, $product, $token, %opt) = @_;
    my ($st, $d) = api(POST => "/api/orgs/$org/products/$product/documents", token => $token,
                       json => { kind => $opt{kind} // 'section',
                                 title => $opt{title} // 'Section ' . uniq('s'),
                                 body => $opt{body} // "# Section\n\nSome text.\n" });
    die "new_document: $st " . $JSON->encode($d // {}) . "\n" unless $st == 201;
    return $d;
}

# share_url_token($share) → the token of a share's url (recorded)
sub share_url_token {
    my $share = shift;
    my ($t) = ($share->{url} // '') =~ m{/share/([^/?#]+)$};
    record_secret($t);
    return $t;
}

# ===========================================================================
# Runs (issue 10): runs in a given state without the supervisor, and a
# database the supervisor has stopped changing.
# ===========================================================================

push @EXPORT, qw(run_fixture runs_settle);

# run_fixture($org_slug, $project_slug, status => 'succeeded' | 'running',
#             bundle => $bytes, commit => $sha)
#   → the id of a run inserted as the supervisor would have left it:
#   succeeded, with a result, an artifact (a few bytes, or the git bundle
#   given, whose HEAD is `commit`: see SvcDeploy::git_bundle) and its run.status
#   events; or running under a lease no supervisor holds, which lasts a day
#   (nobody reaps it, nobody works on it: a cancellation is only asked for).
sub run_fixture {
    my ($org, $project, %opt) = @_;
    my $status = $opt{status} // 'succeeded';
    my $id = 'run_' . join '', map { ('a'..'z', 'A'..'Z', 0..9)[rand 62] } 1 .. 22;
    my $org_id = org_id_of($org);
    my $q = sub { sql_quote($_[0]) };
    my $prj = "(SELECT id FROM projects WHERE org_id = @{[ $q->($org_id) ]} AND slug = "
            . $q->($project) . ')';
    # A real bundle (bundle => bytes, commit => its HEAD), or six bytes.
    my $bundle = $opt{bundle} // 'bundle';
    my $commit = $opt{commit} // ('a' x 40);
    my @sql = ("INSERT INTO runs (id, org_id, project_id, status, instructions, timeout_seconds, "
               . 'started_at, finished_at, result, artifact_bytes, lease_owner, lease_expires_at) '
               . "VALUES (@{[ $q->($id) ]}, @{[ $q->($org_id) ]}, $prj, @{[ $q->($status) ]}, "
               . "'A fixture', 60, now(), "
               . ($status eq 'succeeded'
                  ? "now(), '{\"summary\": \"fixture\", \"commit\": \"$commit"
                    . "\", \"files\": []}', " . length($bundle) . ", NULL, NULL)"
                  : "NULL, NULL, NULL, 'fixture/0/none', now() + interval '1 day')"));
    push @sql, "INSERT INTO run_artifacts (run_id, part, data) VALUES (@{[ $q->($id) ]}, 0, "
               . "decode('" . unpack('H*', $bundle) . "', 'hex'))" if $status eq 'succeeded';
    for my $st ('queued', 'running', $status eq 'succeeded' ? ('succeeded') : ()) {
        push @sql, "INSERT INTO events (org_id, project_id, run_id, kind, data) VALUES "
                 . "(@{[ $q->($org_id) ]}, $prj, @{[ $q->($id) ]}, 'run.status', "
                 . $q->($JSON->encode({ run_id => $id, status => $st, error => undef }))
                 . '::jsonb)';
    }
    psql('BEGIN; ' . join('; ', @sql) . '; COMMIT');
    return $id;
}

# runs_settle(): waits until the supervisor has nothing queued or running
# (but fixtures), so a database digest taken next does not change under the
# test's feet.
sub runs_settle {
    wait_for(sub {
        !psql_value("SELECT count(*) FROM runs WHERE status = 'queued' OR "
                    . "(status = 'running' AND lease_owner NOT LIKE 'fixture/%')")
    }, timeout => 60, interval => 0.05);
}

# ===========================================================================
# The code-hosting App (issue 12): the fake's App side, signed webhooks,
# installations.
#
#   my $i = vcs_installation(repos => ['api', 'web'], type => 'Organization',
#                            permissions => {...}, selection => 'selected',
#                            users => ['octo']);   # who at the provider reaches it
#   my $code = vcs_install_code('octo');      # the callback's OAuth code
#       # {id, login, type, repos}: an installation the fake knows
#   vcs_record_installation($org_slug, $i);   # the org's record, as if linked
#   my ($st, $json, $res) = vcs_webhook('installation', {action => 'deleted',
#       installation => {id => 1}}, delivery => $uuid, secret => ..., headers => {...});
#   vcs_app_state()   # the fake's App side: {last, mints, installations}
# ===========================================================================
require Digest::SHA;

push @EXPORT, qw(vcs_installation vcs_record_installation vcs_webhook vcs_sign
                 vcs_app_state vcs_uuid vcs_base vcs_install_code vcs_git_repo);

sub vcs_app_state { return vcs_state()->{app} }

# vcs_installation(...) → {id, login, type, repos => [names]}
sub vcs_installation {
    my (%opt) = @_;
    my $id = $opt{id} // (10_000_000 + int(rand(1e9)));
    my $login = $opt{login} // uniq('acct');
    my $data = {
        id => $id, account => { login => $login, type => $opt{type} // 'Organization' },
        repository_selection => $opt{selection} // 'selected',
        repos => $opt{repos} // [ 'api', 'web' ],
        permissions => $opt{permissions} // { contents => 'read', metadata => 'read' },
        suspended => $opt{suspended} ? JSON::PP::true() : JSON::PP::false(),
    };
    $data->{users} = $opt{users} if $opt{users};
    _vcs_call(POST => '/_control/installation', $data);
    return { id => $id, login => $login, type => $data->{account}{type},
             repos => [ map { ref $_ ? $_->{name} : $_ } @{ $data->{repos} } ] };
}

# vcs_install_code($user) → the code the provider puts on the install
# callback after its user $user (a login; the fake's installations list who
# reaches them, 'octo' unless vcs_installation(users => [...]) said) installed
# the App. Recorded as a secret.
sub vcs_install_code {
    my ($user) = @_;
    my $code = _vcs_call(POST => '/_control/app_code', { user => $user // 'octo' })->{code};
    record_secret($code);
    return $code;
}

# vcs_git_repo($full_name, $bare_path): the fake serves that bare repository
# over smart HTTP at {VCS_WEB_URL}/$full_name.git to installation tokens
# that reach it; vcs_git_repo($full_name, undef): it is gone (deleted).
sub vcs_git_repo {
    my ($full_name, $path) = @_;
    return _vcs_call(POST => '/_control/git_repo', { full_name => $full_name, path => $path });
}

# vcs_record_installation($org, $inst, status => 'active'): the org's record,
# written straight to the database (for tests about what comes after linking).
sub vcs_record_installation {
    my ($org, $i, %opt) = @_;
    my $oid = org_id_of($org) // die "vcs_record_installation: no org $org\n";
    psql('INSERT INTO vcs_installations (installation_id, org_id, account_login, account_type,'
         . ' repository_selection, status) VALUES (' . ($i->{id} + 0) . ', ' . sql_quote($oid)
         . ', ' . sql_quote($i->{login}) . ', ' . sql_quote($i->{type}) . ", 'selected', "
         . sql_quote($opt{status} // 'active') . ')');
    return $i;
}

sub vcs_uuid {
    return join '-', map { join '', map { sprintf '%x', int rand 16 } 1 .. $_ } 8, 4, 4, 4, 12;
}

# "sha256=" + hex HMAC-SHA256 of the body, as GitHub signs.
sub vcs_sign {
    my ($secret, $body) = @_;
    return 'sha256=' . Digest::SHA::hmac_sha256_hex($body, $secret);
}

# vcs_webhook($event, $payload, delivery => id, secret => s, signature => sig,
#             raw => bytes, base => url, headers => {...})
#   → ($status, $json, $res, $delivery_id)
sub vcs_webhook {
    my ($event, $payload, %opt) = @_;
    my $body = defined $opt{raw} ? $opt{raw} : $JSON->encode($payload);
    my $delivery = exists $opt{delivery} ? $opt{delivery} : vcs_uuid();
    my $secret = $opt{secret} // $ENV{VCS_APP_WEBHOOK_SECRET};
    my %h = ('Content-Type' => 'application/json', 'User-Agent' => 'GitHub-Hookshot/test');
    $h{'X-GitHub-Event'} = $event if defined $event;
    $h{'X-GitHub-Delivery'} = $delivery if defined $delivery;
    $h{'X-GitHub-Hook-ID'} = '1';
    my $sig = exists $opt{signature} ? $opt{signature} : vcs_sign($secret, $body);
    $h{'X-Hub-Signature-256'} = $sig if defined $sig;
    %h = (%h, %{ $opt{headers} // {} });
    my $req = HTTP::Request->new(POST => ($opt{base} // base_url()) . '/webhooks/vcs');
    $req->header($_ => $h{$_}) for sort keys %h;
    $req->content($body);
    my $res = LWP::UserAgent->new(timeout => 60, keep_alive => 0)->request($req);
    my $data = eval { $JSON->decode($res->content) };
    return ($res->code, $data, $res, $delivery);
}

# The base URL of a virtual host of the test server (t/conf/extra.conf.in).
sub vcs_base {
    my $vhost = shift;
    return 'http://127.0.0.1:' . Apache::Test::vars("${vhost}_port");
}

# ===========================================================================
# Attachments and the pipeline (issue 11): uploads over a raw socket (so a
# refusal in the middle of a body is seen as the server sent it), httpd's
# memory, requests walked through their stages.
# ===========================================================================

# ===========================================================================
# An httpd of one's own, for configuration checks: a throwaway ServerRoot
# with the test server's modules, the built module, its database and secret.
# ===========================================================================

push @EXPORT, qw(scratch_httpd_conf httpd_config_test scratch_httpd_start scratch_httpd_stop
                 scratch_httpd_log);

sub _free_port {
    require IO::Socket::INET;
    my $s = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0, Listen => 1)
        or die "free_port: $!";
    my $port = $s->sockport;
    close $s;
    return $port;
}

# scratch_httpd_conf($directives, mpm => 'worker') -> ($dir, $config_file,
# $port): the directives after a minimal server's (one child, five threads,
# a free port), with the test server's modules (its MPM, event, unless
# `mpm` names another).
# What Apache::Test gives the test server by itself besides modules.conf
# (mod_alias and mod_mime, and its table of types), for another httpd made
# from the same modules.conf: the web UI's configuration (its Alias, its
# types) needs them. Lines of configuration.
sub apache_test_own_modules {
    my $modules = shift // catfile(t_logs(), '..', 'conf', 'modules.conf');
    open my $in, '<', $modules or die "$modules: $!";
    my ($libexec) = do { local $/; <$in> } =~ m{^LoadModule\s+\S+\s+"?(\S+?)/[^/\s"]+\.so"?\s*$}m
        or die "no module directory in $modules\n";
    my $types = catfile(t_logs(), '..', 'conf', 'mime.types');
    $types = '/etc/mime.types' unless -e $types;
    return join('', map { "<IfModule !$_->[0]>\n    LoadModule $_->[0] $libexec/$_->[1]\n"
                          . "</IfModule>\n" }
                    [ alias_module => 'mod_alias.so' ], [ mime_module => 'mod_mime.so' ])
        . "TypesConfig \"$types\"\n";
}

sub scratch_httpd_conf {
    my ($directives, %opt) = @_;
    require File::Temp;
    my $dir = File::Temp::tempdir(CLEANUP => 1);
    mkdir catfile($dir, 'logs');    # as a ServerRoot has (the RPM's svc.conf logs there)
    my $port = _free_port();
    my $conf = catfile($dir, 'httpd.conf');
    my $modules = catfile(t_logs(), '..', 'conf', 'modules.conf');
    if ($opt{mpm}) {
        open my $in, '<', $modules or die "$modules: $!";
        my $text = do { local $/; <$in> };
        $text =~ s/mpm_event_module(\s+\S*)mod_mpm_event\.so/mpm_$opt{mpm}_module$1mod_mpm_$opt{mpm}.so/
            or die "no mpm_event_module line in $modules";
        $modules = catfile($dir, 'modules.conf');
        open my $out, '>', $modules or die "$modules: $!";
        print $out $text;
        close $out;
    }
    my $top = $ENV{SVC_TOP} // catfile(t_logs(), '..', '..');
    open my $fh, '>', $conf or die "$conf: $!";
    print $fh <<"EOF";
ServerRoot "$dir"
ServerName 127.0.0.1
DefaultRuntimeDir "$dir"
PidFile "$dir/httpd.pid"
ErrorLog "$dir/error_log"
LogLevel info
Listen 127.0.0.1:$port
Include "$modules"
${\ apache_test_own_modules($modules)}LoadModule svc_module "$top/build/mod_svc.so"
DBDriver pgsql
DBDParams "$ENV{SVC_DB}"
DBDMin 0
DBDKeep 1
DBDMax 2
SvcSecret $ENV{SVC_SECRET}
StartServers 1
ServerLimit 1
ThreadsPerChild 5
MaxRequestWorkers 5
$directives
EOF
    close $fh;
    return ($dir, $conf, $port);
}

# scratch_httpd_start($directives, env => { NAME => value or undef to unset })
#   -> { dir, conf, port, pid, url, log } of a running scratch httpd (its
#   start line logged, its pid file written), or dies with its error log.
#   scratch_httpd_stop($h) stops it; scratch_httpd_log($h) is its error log.
sub scratch_httpd_start {
    my ($directives, %opt) = @_;
    require POSIX;
    my ($dir, $conf, $port) = scratch_httpd_conf($directives);
    my $httpd = $ENV{SVC_TEST_HTTPD} // Apache::Test::config()->{vars}{httpd};
    my $pid = fork() // die "fork: $!";
    if (!$pid) {
        my $env = $opt{env} // {};
        for my $k (keys %$env) {
            if (defined $env->{$k}) { $ENV{$k} = $env->{$k} } else { delete $ENV{$k} }
        }
        open STDOUT, '>', "$dir/stdout";
        open STDERR, '>', "$dir/stderr";
        exec $httpd, '-f', $conf, '-DFOREGROUND' or POSIX::_exit(127);
    }
    my $h = { dir => $dir, conf => $conf, port => $port, pid => $pid,
              url => "http://127.0.0.1:$port", log => "$dir/error_log" };
    my $up = wait_for(sub {
        return -1 if waitpid($pid, POSIX::WNOHANG()) == $pid;
        return -s "$dir/httpd.pid" && scratch_httpd_log($h) =~ /AH00489:/;
    }, timeout => 20);
    if (!$up || $up eq '-1') {
        if (!$up) {
            kill 'KILL', $pid;
            waitpid($pid, 0);
        }
        die "scratch httpd did not start:\n" . scratch_httpd_log($h);
    }
    return $h;
}

sub scratch_httpd_log {
    my $h = shift;
    open my $fh, '<', $h->{log} or return '';
    local $/;
    return <$fh> // '';
}

sub scratch_httpd_stop {
    my $h = shift;
    return unless $h->{pid};
    kill 'TERM', $h->{pid};
    my $gone = wait_for(sub { waitpid($h->{pid}, POSIX::WNOHANG()) == $h->{pid} }, timeout => 20);
    if (!$gone) {
        kill 'KILL', $h->{pid};
        waitpid($h->{pid}, 0);
    }
    delete $h->{pid};
}

# httpd_config_test($directives) -> ($exit_status, $output) of `httpd -t`:
# directive handlers run, start-up hooks do not.
sub httpd_config_test {
    my ($directives) = @_;
    my (undef, $conf) = scratch_httpd_conf($directives);
    my $httpd = $ENV{SVC_TEST_HTTPD} // Apache::Test::config()->{vars}{httpd};
    my $out = `"$httpd" -t -f "$conf" 2>&1`;
    return ($? >> 8, $out);
}

push @EXPORT, qw(send_body httpd_rss_sampler);

# send_body($method, $path, token => $pat, type => $content_type,
#           length => $n, chunked => 1, fill => sub { ($offset, $n) → bytes },
#           stop_after => $bytes, headers => {...})
#   → ($status, $decoded_json_or_undef, $raw_head, $bytes_sent)
# Sends $length bytes (from `fill`, default 'x's) as Content-Length or
# chunked; stops sending as soon as the server answers (as a browser
# would), or after `stop_after` bytes (then closes: a client that gives
# up). The answer is read to its end (Content-Length framed).
sub send_body {
    my ($method, $path, %opt) = @_;
    require IO::Socket::INET;
    require IO::Select;
    local $SIG{PIPE} = 'IGNORE';
    my $port = $opt{port} // Apache::Test::vars('port');
    my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
                                     Proto => 'tcp', Timeout => 30)
        or die "send_body: connect: $!\n";
    binmode $sock;
    my $len = $opt{length} // 0;
    my $head = "$method $path HTTP/1.1\r\nHost: 127.0.0.1:$port\r\n";
    $head .= "Authorization: Bearer $opt{token}\r\n" if defined $opt{token};
    $head .= "Content-Type: $opt{type}\r\n" if defined $opt{type};
    $head .= $opt{chunked} ? "Transfer-Encoding: chunked\r\n" : "Content-Length: $len\r\n";
    $head .= "$_: $opt{headers}{$_}\r\n" for sort keys %{ $opt{headers} // {} };
    $head .= "Connection: close\r\n\r\n";
    syswrite($sock, $head) or die "send_body: $!\n";
    my $sel = IO::Select->new($sock);
    my $fill = $opt{fill} // sub { 'x' x $_[1] };
    my ($sent, $answered) = (0, 0);
    my $limit = $opt{stop_after} // $len;
    while ($sent < $limit) {
        if ($sel->can_read(0)) { $answered = 1; last }
        my $n = $limit - $sent < 65536 ? $limit - $sent : 65536;
        my $piece = $fill->($sent, $n);
        $piece = sprintf("%x\r\n", length $piece) . $piece . "\r\n" if $opt{chunked};
        my $w = 0;
        while ($w < length $piece) {
            my $k = syswrite($sock, $piece, length($piece) - $w, $w);
            if (!defined $k) { $answered = 1; last }
            $w += $k;
        }
        last if $answered;
        $sent += $n;
    }
    if (defined $opt{stop_after}) {
        close $sock;
        return (0, undef, '', $sent);
    }
    syswrite($sock, "0\r\n\r\n") if $opt{chunked} && !$answered;
    my $buf = '';
    my $deadline = time + 60;
    while ($buf !~ /\r\n\r\n/ && time < $deadline) {
        last unless $sel->can_read($deadline - time);
        my $n = sysread($sock, my $chunk, 65536);
        last unless $n;
        $buf .= $chunk;
    }
    my ($rhead, $body) = split /\r\n\r\n/, $buf, 2;
    $body //= '';
    my ($status) = ($rhead // '') =~ m{^HTTP/1\.\d (\d{3})};
    my ($clen) = ($rhead // '') =~ /^Content-Length:\s*(\d+)/mi;
    while (defined $clen && length($body) < $clen && time < $deadline) {
        last unless $sel->can_read($deadline - time);
        my $n = sysread($sock, my $chunk, 65536);
        last unless $n;
        $body .= $chunk;
    }
    close $sock;
    my $data = eval { $JSON->decode($body) };
    return ($status // 0, $data, $rhead // '', $sent);
}

# my $s = httpd_rss_sampler(); ...; my ($base_kb, $peak_kb, $grow_kb) = $s->();
# Samples the resident memory of every process of the test httpd (the
# parent and its children) every 50 ms in a child process, from the call
# until the returned sub is called; returns the sum at the start, the
# highest sum seen, and the most any one process that was there at the
# start grew (what a request can have cost the process serving it; the
# sum also jumps when the MPM starts a child), in KiB.
sub httpd_rss_sampler {
    my $pidfile = catfile(t_logs(), 'httpd.pid');
    open my $pf, '<', $pidfile or die "httpd_rss_sampler: $pidfile: $!\n";
    chomp(my $parent = <$pf>);
    close $pf;
    # pid => VmRSS in KiB, for httpd and its children.
    my $each = sub {
        my %rss;
        opendir my $d, '/proc' or return {};
        for my $pid (grep { /^\d+$/ } readdir $d) {
            open my $st, '<', "/proc/$pid/stat" or next;
            my $line = <$st>;
            close $st;
            my ($ppid) = $line =~ /\)\s+\S+\s+(\d+)/ or next;
            next unless $pid == $parent || $ppid == $parent;
            open my $s, '<', "/proc/$pid/status" or next;
            while (<$s>) { $rss{$pid} = $1 if /^VmRSS:\s+(\d+)/ }
            close $s;
        }
        closedir $d;
        return \%rss;
    };
    my $sum = sub { my $t = 0; $t += $_ for values %{ $_[0] }; $t };
    my $start = $each->();
    my $base = $sum->($start);
    pipe(my $r, my $w) or die "httpd_rss_sampler: pipe: $!\n";
    pipe(my $stop_r, my $stop_w) or die "httpd_rss_sampler: pipe: $!\n";
    my $pid = fork // die "httpd_rss_sampler: fork: $!\n";
    if ($pid == 0) {
        close $r;
        close $stop_w;
        require IO::Select;
        my $sel = IO::Select->new($stop_r);
        my ($peak, $grow) = ($base, 0);
        while (!$sel->can_read(0.05)) {
            my $now = $each->();
            my $total = $sum->($now);
            $peak = $total if $total > $peak;
            # A process that was there at the start: how much it grew. A
            # child the MPM starts meanwhile is not growth of the one
            # serving the request.
            for (grep { exists $start->{$_} } keys %$now) {
                $grow = $now->{$_} - $start->{$_} if $now->{$_} - $start->{$_} > $grow;
            }
        }
        print $w "$peak $grow\n";
        close $w;
        require POSIX;
        POSIX::_exit(0);
    }
    close $w;
    close $stop_r;
    return sub {
        close $stop_w;
        my $line = <$r> // '0 0';
        close $r;
        waitpid($pid, 0);
        my ($peak, $grow) = split ' ', $line;
        return ($base, $peak, $grow);
    };
}

push @EXPORT, qw(new_project new_request advance lifecycle approve_documents wait_request);

# new_project($org_slug, $token, $name) → the slug of a new project of the
# org (made by the token's user, its maintainer); dies unless it is made.
sub new_project {
    my ($org, $token, $name) = @_;
    my $slug = uniq('app');
    my ($st, $p) = api(POST => "/api/orgs/$org/projects", token => $token,
                       json => { slug => $slug, name => $name // 'A project' });
    die "new_project: $st " . $JSON->encode($p // {}) . "\n" unless $st == 201;
    return $slug;
}

# new_request($org, $token, project => $slug, kind => 'build', title => ..., body => ...)
#   → the request (201 or die)
sub new_request {
    my ($org, $token, %opt) = @_;
    my ($st, $r) = api(POST => "/api/orgs/$org/requests", token => $token,
                       json => { project => $opt{project}, kind => $opt{kind} // 'build',
                                 title => $opt{title} // 'Request ' . uniq('r'),
                                 body => $opt{body} // "Build something small.\n" });
    die "new_request: $st " . $JSON->encode($r // {}) . "\n" unless $st == 201;
    return $r;
}

# advance($org, $token, $request_id, $action) → ($status, $json): POST
# .../requests/:id/$action ('advance' unless given).
sub advance {
    my ($org, $token, $id, $action) = @_;
    return api(POST => "/api/orgs/$org/requests/$id/" . ($action // 'advance'), token => $token);
}

# lifecycle($org, $token, $request_id) → the lifecycle document
sub lifecycle {
    my ($org, $token, $id) = @_;
    my ($st, $l) = api(GET => "/api/orgs/$org/requests/$id/lifecycle", token => $token);
    die "lifecycle: $st\n" unless $st == 200;
    return $l;
}

# approve_documents($org, $token, $product_id): approves every document's
# current version that is a draft; returns how many it approved.
sub approve_documents {
    my ($org, $token, $product) = @_;
    my (undef, $list) = api(GET => "/api/orgs/$org/products/$product/documents?limit=200",
                            token => $token);
    my $n = 0;
    for my $d (@{ $list->{data} }) {
        next unless $d->{current_version}{status} eq 'draft';
        my ($st) = api(POST => "/api/orgs/$org/doc-versions/$d->{current_version}{id}/approve",
                       token => $token);
        die "approve_documents: $st\n" unless $st == 200;
        $n++;
    }
    return $n;
}

# wait_request($org, $token, $id, sub { $lifecycle → true when done }, timeout => 90)
#   → the lifecycle that satisfied it, or undef
sub wait_request {
    my ($org, $token, $id, $cond, %opt) = @_;
    return wait_for(sub {
        my $l = lifecycle($org, $token, $id);
        return $cond->($l) ? $l : undef;
    }, timeout => $opt{timeout} // 90, interval => 0.25);
}

# ===========================================================================
# Requests as bytes (issue 17): URLs no client library would send as given.
# ===========================================================================

push @EXPORT, qw(raw_http);

# raw_http($request_line, headers => { Name => value }, port => $port)
#   → ($status, $content_type, $body, $head): the request line written as
#   given, with Host and Connection: close, the answer read to its end.
sub raw_http {
    my ($line, %opt) = @_;
    require IO::Socket::INET;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                  PeerPort => $opt{port} // Apache::Test::vars('port'),
                                  Proto => 'tcp', Timeout => 30)
        or die "raw_http: connect: $!\n";
    my $req = "$line\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
    my $h = $opt{headers} // {};
    $req .= "$_: $h->{$_}\r\n" for sort keys %$h;
    print $s "$req\r\n";
    local $/;
    my $res = <$s> // '';
    close $s;
    my ($head, $body) = split /\r\n\r\n/, $res, 2;
    $head //= '';
    my ($status) = $head =~ m{^HTTP/1\.\d (\d{3})};
    my ($ct) = $head =~ m{^Content-Type:\s*([^\r\n;]+)}mi;
    return ($status // 0, $ct // '', $body // '', $head);
}

# ===========================================================================
# Billing (issue 23): the fake payment provider (t/lib/FakeStripe.pm, started
# by tools/test.sh, which exports BILLING_API_URL, BILLING_SECRET_KEY and
# BILLING_WEBHOOK_SECRET) and the provider's signed webhook deliveries.
# ===========================================================================

push @EXPORT, qw(stripe_control stripe_state stripe_reset stripe_do stripe_deliver billing_sign
                 billing_deliver);

my $stripe_ua;

sub _stripe_call {
    my ($method, $path, $data) = @_;
    my $base = $ENV{BILLING_API_URL}
        // die "SvcTest: BILLING_API_URL is not set (the fake runs under tools/test.sh)\n";
    $stripe_ua //= LWP::UserAgent->new(timeout => 10, keep_alive => 0);
    my $req = HTTP::Request->new($method => $base . $path);
    if ($data) {
        $req->header('Content-Type' => 'application/json');
        $req->content($JSON->encode($data));
    }
    my $res = $stripe_ua->request($req);
    die "SvcTest: fake payment provider $method $path: " . $res->status_line . ' '
        . $res->content . "\n" unless $res->is_success;
    return $JSON->decode($res->content);
}

# stripe_control(mode => 'ok'|'server_error'|'unavailable'|'rate_limited'|'slow'|
#                'timeout'|'garbage', times => N, path => 'regex', delay_ms => N)
#   → the fake's state
sub stripe_control { my %set = @_; return _stripe_call(POST => '/_control', \%set) }

# stripe_state() → {mode, requests => [{method, path, params, idempotency_key,
#   version, auth, replayed, status}], customers, subscriptions, sessions}
sub stripe_state { return _stripe_call(GET => '/_control') }

sub stripe_reset { return _stripe_call(POST => '/_control/reset') }

# stripe_do('complete_checkout', {session => $id}) → {events => [...], ...}:
# what happens at the provider (a customer pays, a subscription changes, an
# invoice fails), and the events it would send.
sub stripe_do { my ($what, $data) = @_; return _stripe_call(POST => "/_control/$what", $data) }

# stripe_deliver(events => [...] | ids => [...], secrets => [...], t => TIME,
#                base => URL) → [{id, type, status, body}]: the fake delivers
# the events to /webhooks/billing itself, signed as Stripe signs them
# (t=, one v1 per secret, a v0), one POST each.
sub stripe_deliver {
    my (%opt) = @_;
    my $base = delete($opt{base}) // base_url();
    return _stripe_call(POST => '/_control/deliver',
                        { %opt, url => "$base/webhooks/billing" })->{deliveries};
}

# billing_sign($body, t => $time, secret => $s, secrets => [...]) → the
# Stripe-Signature header value: t=TIME,v1=HEX for each secret (the
# configured webhook secret unless told).
sub billing_sign {
    my ($body, %opt) = @_;
    require Digest::SHA;
    my $t = $opt{t} // int(time);
    my @secrets = $opt{secrets} ? @{ $opt{secrets} }
                : ($opt{secret} // $ENV{BILLING_WEBHOOK_SECRET});
    return join ',', "t=$t", map { 'v1=' . Digest::SHA::hmac_sha256_hex("$t.$body", $_) }
                                 @secrets;
}

# billing_deliver($event, %sign_opts, signature => $header, base => $url)
#   → ($status, $json, $res): the event POSTed to /webhooks/billing as the
#   provider sends it, signed unless a signature is given.
sub billing_deliver {
    my ($event, %opt) = @_;
    my $body = ref $event ? $JSON->encode($event) : $event;
    my $sig = exists $opt{signature} ? $opt{signature} : billing_sign($body, %opt);
    return api(POST => '/webhooks/billing', raw => $body,
               $opt{base} ? (base => $opt{base}) : (),
               headers => { 'Content-Type' => 'application/json; charset=utf-8',
                            'User-Agent' => 'Stripe/1.0 (+https://stripe.com/docs/webhooks)',
                            defined $sig ? ('Stripe-Signature' => $sig) : () });
}

1;
