# The stack through PgBouncer in session mode (issue 25), as shops run it in
# front of PostgreSQL: Debian's pgbouncer between a second httpd node and the
# test cluster, and that node's every connection through it (its request
# pools, each child's LISTEN connection, its run supervisor). Representative
# requests answer; an org's event stream on that node gets the events
# committed through node A (LISTEN/NOTIFY across the pooler); runs started
# through it are carried out; a token revoked through it is refused at once.
# Transaction mode cannot carry this (docs/operations.md, "PgBouncer").
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use File::Path qw(make_path);
use File::Spec::Functions qw(catfile);
use IO::Socket::INET ();
use POSIX ();
use SvcTest;
use SvcNode;

my $PGBOUNCER = '/usr/sbin/pgbouncer';
plan skip_all => "pgbouncer is not installed (tools/deps.sh installs it)" unless -x $PGBOUNCER;

my %conn = map { /^([a-z_]+)=(.*)$/ ? ($1 => $2) : () } split ' ', $ENV{SVC_DB};
my $user = $conn{user} // getpwuid($<);
my $dir = catfile(t_logs(), 'pgbouncer');
make_path($dir);
my $port = do {
    my $s = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0, Listen => 1) or die $!;
    my $n = $s->sockport;
    close $s;
    $n;
};
open my $uf, '>', "$dir/users.txt" or die $!;
print $uf qq{"$user" ""\n};
close $uf;
open my $cf, '>', "$dir/pgbouncer.ini" or die $!;
print $cf <<"EOF";
[databases]
svc = host=$conn{host} port=$conn{port} dbname=$conn{dbname}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $dir/users.txt
admin_users = $user
pool_mode = session
max_client_conn = 200
default_pool_size = 80
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
EOF
close $cf;

my $me = $$;
my $bouncer = fork() // die "fork: $!";
if (!$bouncer) {
    open STDOUT, '>>', "$dir/stdout";
    open STDERR, '>>', "$dir/stdout";
    exec $PGBOUNCER, "$dir/pgbouncer.ini" or POSIX::_exit(127);
}
END {
    # waitpid sets $?, which is the test's exit status by now.
    local $?;
    if ($bouncer && $$ == $me) {
        kill 'TERM', $bouncer;
        waitpid($bouncer, 0);
    }
}
ok(wait_for(sub { IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port) },
            timeout => 20), "pgbouncer listens on $port");

# pgbouncer's admin console: SHOW CLIENTS, SHOW POOLS, ...
sub console {
    my $what = shift;
    my $psql = $ENV{SVC_TEST_PGBIN} ? "$ENV{SVC_TEST_PGBIN}/psql" : 'psql';
    my ($rc, $out, $err) = SvcTest::run([$psql, '-X', '-A', '-F', "\t", '-h', '127.0.0.1',
                                         '-p', $port, '-U', $user, '-d', 'pgbouncer',
                                         '-c', $what]);
    die "console $what: $err" if $rc;
    my ($head, @rows) = grep { /\t/ } split /\n/, $out;
    my @cols = split /\t/, $head // '';
    return map { my @v = split /\t/, $_, -1; my %r; @r{@cols} = @v; \%r } @rows;
}

my $p = SvcNode->start(name => 'pgb', directives => <<"EOF");
# Every connection of this node goes through pgbouncer.
DBDParams "host=127.0.0.1 port=$port dbname=svc user=$user connect_timeout=3"
EOF
ok($p->supervisor_pid, 'a node whose database is pgbouncer starts, with its run supervisor');
my @clients = grep { $_->{database} eq 'svc' } console('SHOW CLIENTS');
ok(scalar(@clients), "its connections are pgbouncer's clients (" . scalar(@clients) . ')');
my ($pool) = grep { $_->{database} eq 'svc' } console('SHOW POOLS');
is($pool && $pool->{pool_mode}, 'session', '... in session mode');

my $owner = new_user('pgb');
my $org = new_org($owner, prefix => 'pgb');
my $tok = new_token($owner, scope => 'admin');
my ($st, $whoami) = api(GET => '/api/me', token => $tok, base => $p->url);
is($st, 200, 'GET /api/me through pgbouncer');
is($whoami && $whoami->{email}, $owner, '... the right user');
($st) = api(POST => "/api/orgs/$org/projects", token => $tok, base => $p->url,
            json => { slug => 'app', name => 'App' });
is($st, 201, 'a project created through pgbouncer');
my ($ls, $list) = api(GET => "/api/orgs/$org/projects", token => $tok, base => $p->url);
is($ls, 200, '... listed');
is(scalar(grep { $_->{slug} eq 'app' } @{ $list->{data} // [] }), 1, '... with it');
my $runs = "/api/orgs/$org/projects/app/runs";

# The org's event stream on the pgbouncer node; a run through node A (no
# provider yet: a supervisor fails it at once).
my $s = sse_open("/api/orgs/$org/events", token => $tok, port => $p->port);
is($s->{status}, 200, 'an event stream through pgbouncer');
my ($rs, $run) = api(POST => $runs, token => $tok, json => { instructions => 'Through A' });
is($rs, 201, 'a run started through node A');
my @got;
while (my $e = sse_next($s, 30)) {
    push @got, $e;
    last if $e->{event} eq 'run.status' && $e->{data}{status} eq 'failed';
}
is_deeply([ map { $_->{data}{status} } grep { $_->{event} eq 'run.status' } @got ],
          [qw(queued running failed)],
          'its events reach the stream on the pgbouncer node (LISTEN in session mode)');
sse_close($s);

# Runs started through pgbouncer, carried out by either supervisor (this
# node's takes its share of the queue through pgbouncer too).
my $llm = new_llm(flavor => 'openai');
new_provider($org, $tok, $llm, tools => 'off', base => $p->url);
$llm->control(reply => json()->encode({ summary => 'A file',
                                        files => [ { path => 'a.txt', content => "a\n" } ] }));
my @ids;
for my $i (1 .. 4) {
    my ($s2, $r) = api(POST => $runs, token => $tok, base => $p->url,
                       json => { instructions => "Through pgbouncer $i" });
    is($s2, 201, "run $i started through pgbouncer");
    push @ids, $r->{id};
}
my $in = join ',', map { "'$_'" } @ids;
ok(wait_for(sub {
    psql_value("SELECT count(*) FROM runs WHERE id IN ($in) AND status = 'succeeded'") == 4
}, timeout => 180), '... all four succeed');
my (undef, $one) = api(GET => "$runs/$ids[0]", token => $tok, base => $p->url);
is($one->{status}, 'succeeded', '... as the pgbouncer node reports');

# A token revoked through pgbouncer is refused at once.
my $victim = new_token($owner, scope => 'read');
my (undef, $vme) = api(GET => '/api/me', token => $victim, base => $p->url);
my ($ds) = api(DELETE => "/api/me/tokens/$vme->{auth}{token}{id}", token => $tok, base => $p->url);
is($ds, 204, 'a token revoked through pgbouncer');
my ($vs) = api(GET => '/api/me', token => $victim, base => $p->url);
is($vs, 401, '... is refused at once');

$p->stop;
runs_settle();

done_testing();
