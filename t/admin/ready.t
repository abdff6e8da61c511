# /internal/ready (issue 24): whether this node can serve, for a load
# balancer: the database answers, at the schema this build needs, and the
# node's run supervisor goes round its loop. A 503 names everything wrong
# at once. Like /internal/health, other addresses get 404.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use SvcTest;

plan skip_all => 'needs SVC_DB and SVC_SECRET (use tools/test.sh)'
    unless $ENV{SVC_DB} && $ENV{SVC_SECRET};

sub ready { return api(GET => '/internal/ready', @_) }

# --- a node that can serve ---------------------------------------------------------------
my ($st, $r);
wait_for(sub { ($st, $r) = ready(); $st == 200 }, timeout => 30);
is($st, 200, 'ready: 200');
is($r->{status}, 'ready', '... status ready');
is($r->{database}, 'ok', '... the database answers');
cmp_ok($r->{schema_version}, '>=', $r->{schema_required}, '... at the schema needed');
is($r->{supervisor}, 'ok', '... and the run supervisor is alive');

# --- outside SvcInternalAllow: not even confirmed to exist --------------------------------
Apache::TestRequest::module('svc_restricted');
my $restricted = 'http://' . Apache::TestRequest::hostport();
Apache::TestRequest::module('default');
($st, $r) = ready(base => $restricted);
is($st, 404, 'from an address SvcInternalAllow does not list: 404');
is($r->{code}, 'not_found', '... not_found');

# --- the supervisor stops going round its loop ---------------------------------------------
# SIGSTOP: the process is there, but does nothing: what a hung supervisor
# looks like. After its lease (SvcRunLease 10 in the test server) the node
# is not ready, and is again once it goes on.
my $pidfile = Apache::Test::vars('t_logs') . '/svc-supervisor.pid';
my $sup = do { open my $fh, '<', $pidfile or die "$pidfile: $!"; local $/; <$fh> };
chomp $sup;
ok($sup =~ /^\d+$/ && kill(0, $sup), "the supervisor runs (pid $sup)");
kill 'STOP', $sup;
my $down = wait_for(sub { ($st, $r) = ready(); $st == 503 }, timeout => 30);
kill 'CONT', $sup;
ok($down, 'a supervisor stopped for longer than its lease: 503');
is($r->{code}, 'not_ready', '... not_ready');
is_deeply([ map { "$_->{field} $_->{code}" } @{ $r->{errors} // [] } ],
          [ 'supervisor supervisor_down' ], '... naming the supervisor, and only it');
like($r->{errors}[0]{message} // '', qr/longer than its lease \(10 s\)/, '... and why');
ok(wait_for(sub { (ready())[0] == 200 }, timeout => 30), 'it goes on: ready again');

# --- a node whose database is behind, without a supervisor --------------------------------
{
    my $h = scratch_httpd_start("SvcRunSupervisor Off\n<Location /internal/>\n"
                                . "    SetHandler svc\n</Location>\n"
                                . "DBDParams \"$ENV{SVC_DB} dbname=svc_behind\"");
    ($st, $r) = ready(base => $h->{url});
    is($st, 503, 'the schema behind: 503');
    is_deeply([ map { "$_->{field} $_->{code}" } @{ $r->{errors} // [] } ],
              [ 'schema schema_behind' ], '... naming the schema; no supervisor is expected');
    scratch_httpd_stop($h);
}

# --- a node whose database is not there ----------------------------------------------------
{
    my $h = scratch_httpd_start("SvcRunSupervisor Off\n<Location /internal/>\n"
                                . "    SetHandler svc\n</Location>\n"
                                . "DBDParams \"$ENV{SVC_DB} dbname=nosuchdb_$$\"");
    my $res;
    ($st, $r, $res) = ready(base => $h->{url});
    is($st, 503, 'no database: 503');
    is_deeply([ map { "$_->{field} $_->{code}" } @{ $r->{errors} // [] } ],
              [ 'database database_unavailable' ], '... naming the database');
    like($r->{errors}[0]{message} // '', qr/does not exist/, '... in libpq\'s words');
    is($res->header('Retry-After'), '1', '... with Retry-After');
    scratch_httpd_stop($h);
}

done_testing();
