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

our @EXPORT = qw(
    svcctl api new_user new_org new_token new_session
    record_secret expect_errors_begin expect_errors_end
    psql psql_value pg_ctl pg_restart
    uniq base_url t_logs error_log_path wait_for json
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

# new_user('alice', founder => 1, name => 'Alice') → unique e-mail address
sub new_user {
    my ($prefix, %opt) = @_;
    my $email = uniq($prefix // 'user') . '@example.test';
    my @args = ('user', 'add', $email, '--name', $opt{name} // ($prefix // 'user'));
    push @args, '--founder' if $opt{founder};
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
#     raw => $bytes, headers => { Name => value, ... })
#   → ($status, $decoded_json_or_undef, $http_response)
# $path may carry a query string; `json` sets Content-Type application/json
# unless headers say otherwise; `raw` is sent as is.
sub api {
    my ($method, $path, %opt) = @_;
    my $req = HTTP::Request->new($method => base_url() . $path);
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

1;
