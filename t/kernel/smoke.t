# The test server is up, runs the event MPM, and mod_svc answers the routes
# that need no credentials.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

plan tests => 15;

# --- the MPM ---------------------------------------------------------------
# Apache::Test's own idea (from `apache2 -V` over the inherited modules) ...
is(Apache::Test::config()->{server}{mpm}, 'event', 'Apache::Test sees the event MPM');

# ... and what the running server said when it started: the last AH00489
# ("configured -- resuming normal operations") line names the MPM module.
{
    open my $fh, '<', error_log_path() or die "error_log: $!";
    my $last;
    while (<$fh>) { $last = $_ if /AH00489:/ }
    like($last // '', qr/\[mpm_event:notice\]/, 'the running server uses mpm_event');
}

# --- OpenAPI document --------------------------------------------------------
{
    my ($status, $doc, $res) = api(GET => '/api/openapi.json');
    is($status, 200, 'GET /api/openapi.json is 200');
    like($res->header('Content-Type') // '', qr{^application/json}, '... as JSON');
    ok(ref $doc eq 'HASH', '... that decodes to an object');
    like($doc->{openapi} // '', qr/^3\.1\.\d+$/, '... with "openapi": "3.1.x"');
    ok($res->header('X-Request-Id'), '... and an X-Request-Id');
}

# --- an unknown route is a problem document ------------------------------
{
    my ($status, $p, $res) = api(GET => '/api/nope');
    is($status, 404, 'GET /api/nope is 404');
    like($res->header('Content-Type') // '', qr{^application/problem\+json},
         '... as application/problem+json');
    my $rid = $res->header('X-Request-Id');
    ok($rid, '... with an X-Request-Id');
    is(ref $p eq 'HASH' && $p->{status}, 404, '... status 404 in the body');
    my @missing = ref $p eq 'HASH'
        ? grep { !exists $p->{$_} } qw(type title status detail code request_id)
        : ('everything');
    is("@missing", '', '... with type, title, status, detail, code, request_id');
    is(ref $p eq 'HASH' && $p->{request_id}, $rid, '... the request id in the body');
}

# --- health (loopback only) ----------------------------------------------
{
    my ($status, $h) = api(GET => '/internal/health');
    is($status, 200, 'GET /internal/health is 200 from loopback');
    is(ref $h eq 'HASH' && $h->{status}, 'ok', '... with "status": "ok"');
}
