# The database's own reason (issue 17). With a wrong dbname httpd started
# "ready", /internal/health said only "not reachable", and libpq's message
# appeared only with LogLevel dbd:error. Now each child logs libpq's reason
# when it starts (SVC0090) and the first time the database goes away after
# it was reached (SVC0091), /internal/health names it to its callers, and
# no password of the conninfo is in any of it. Each case runs an httpd of
# its own (SvcTest's scratch server) against the test cluster.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

plan skip_all => 'needs SVC_DB and SVC_SECRET (use tools/test.sh)'
    unless $ENV{SVC_DB} && $ENV{SVC_SECRET};

my $user = new_user('db-reason');
my $tok  = new_token($user, scope => 'read');

sub secret_word { my $p = shift; return $p . join '', map { ('a'..'z', 0..9)[rand 36] } 1 .. 24 }

# The scratch server serves the service at /api/ and /internal/.
my $LOCATIONS = "SvcRunSupervisor Off\n<Location /api/>\n    SetHandler svc\n</Location>\n"
              . "<Location /internal/>\n    SetHandler svc\n</Location>\n";

sub health {
    my ($h) = @_;
    return api(GET => '/internal/health', base => $h->{url});
}

# --- a database that does not exist, with a password in the conninfo ---------------------
{
    my $db = 'nosuchdb_' . $$;
    my $pw = secret_word('pw');
    record_secret($pw);
    my $h = scratch_httpd_start($LOCATIONS
                                . "DBDParams \"$ENV{SVC_DB} dbname=$db password=$pw\"");
    my $log = '';
    wait_for(sub { ($log = scratch_httpd_log($h)) =~ /SVC0090/ }, timeout => 15);
    like($log, qr/\[svc:error\].*SVC0090: the database cannot be reached .*database "\Q$db\E" does not exist/,
         'at start: SVC0090 with libpq\'s reason') or diag($log);
    my ($st, $p) = health($h);
    is($st, 503, '/internal/health: 503');
    is($p->{code}, 'database_unavailable', '... database_unavailable');
    like($p->{detail} // '', qr/database "\Q$db\E" does not exist/, '... naming libpq\'s reason');
    ($st, $p) = api(GET => '/api/me', token => $tok, base => $h->{url});
    is($st, 503, 'the API answers 503');
    unlike($p->{detail} // '', qr/\Q$db\E/, '... without the reason (it is for operators)');
    scratch_httpd_stop($h);
    $log = scratch_httpd_log($h);
    unlike($log, qr/\Q$pw\E/, 'no password in the error log');
    unlike(json()->encode($p // {}), qr/\Q$pw\E/, '... nor in an answer');
}

# --- a conninfo that does not parse: the piece libpq quotes may be a secret ------------------
{
    my $pw = secret_word('loose');
    record_secret($pw);
    my $h = scratch_httpd_start($LOCATIONS . "DBDParams \"$ENV{SVC_DB} $pw\"");
    my $log = '';
    wait_for(sub { ($log = scratch_httpd_log($h)) =~ /SVC0090/ }, timeout => 15);
    like($log, qr/SVC0090: .*missing "=" after "\[REDACTED\]" in connection info string/,
         'a conninfo that does not parse: the reason, with the unknown word masked')
        or diag($log);
    my ($st, $p) = health($h);
    is($st, 503, '/internal/health: 503');
    like($p->{detail} // '', qr/missing "=" after "\[REDACTED\]"/, '... the same reason');
    scratch_httpd_stop($h);
    unlike(scratch_httpd_log($h) . json()->encode($p // {}), qr/\Q$pw\E/,
           '... and the word nowhere');
}

# --- a database that goes away after it was reached ------------------------------------------
{
    my $db = 'svc_reason_' . $$;
    psql("CREATE DATABASE $db");
    my $h = scratch_httpd_start($LOCATIONS . "DBDParams \"$ENV{SVC_DB} dbname=$db\"");
    my ($st, $p) = health($h);
    is($st, 503, 'an empty database: /internal/health 503');
    is($p->{code}, 'schema_behind', '... schema_behind: reached');
    unlike(scratch_httpd_log($h), qr/SVC009[01]/, 'nothing to report at start');

    psql("DROP DATABASE $db WITH (FORCE)");
    ($st, $p) = health($h);
    is($st, 503, 'dropped: /internal/health 503');
    is($p->{code}, 'database_unavailable', '... database_unavailable');
    like($p->{detail} // '', qr/database "\Q$db\E" does not exist/, '... with libpq\'s reason');
    is((api(GET => '/api/me', token => $tok, base => $h->{url}))[0], 503, 'the API: 503');
    health($h) for 1 .. 3;
    my $log = '';
    wait_for(sub { ($log = scratch_httpd_log($h)) =~ /SVC0091/ }, timeout => 10);
    my @lost = $log =~ /(SVC0091: [^\n]*)/g;
    is(scalar @lost, 1, 'SVC0091 once, at the first failure after a success') or diag($log);
    like($lost[0] // '', qr/the database went away: .*database "\Q$db\E" does not exist/,
         '... with libpq\'s reason');

    psql("CREATE DATABASE $db");
    ($st, $p) = health($h);
    is($p->{code}, 'schema_behind', 'back: reached again');
    psql("DROP DATABASE $db WITH (FORCE)");
    ($st, $p) = health($h);
    is($p->{code}, 'database_unavailable', 'gone again');
    wait_for(sub { (() = scratch_httpd_log($h) =~ /SVC0091/g) >= 2 }, timeout => 10);
    @lost = scratch_httpd_log($h) =~ /(SVC0091: [^\n]*)/g;
    is(scalar @lost, 2, '... SVC0091 again: a new outage after a success');
    scratch_httpd_stop($h);
}

done_testing();
