# An event stream lets its request go a second after it starts (issue 25:
# half of what an idle stream costs) and goes on on its connection alone:
# httpd logs the request then, and the stream writes its own framing from
# there on. What must not change on the wire, and when it must not happen:
#  - over HTTP/1.1 the body stays one valid chunked body, the last chunk at
#    the end (t/events/stream.t reads chunks strictly everywhere);
#  - over HTTP/1.0 (nginx's default to its upstreams, curl -0) httpd does
#    not chunk, and neither may the stream once the request is gone;
#  - with an operator's compression on the stream's URL (mod_deflate), the
#    stream turns it off (no-gzip): events are never held in its buffer,
#    and the stream lets its request go as any;
#  - with an operator's transformation (mod_substitute), the stream keeps
#    its request for as long as it lives, so that every event goes through
#    that filter, as before (t/conf/extra.conf.in has both locations).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use File::Spec::Functions qw(catfile);
use Time::HiRes qw(sleep time);
use SvcTest;

my $owner = new_user('rel');
my $pat = new_token($owner, scope => 'read');

sub emit {
    my ($org_id, $kind) = @_;
    return psql_value(sprintf(
        "INSERT INTO events (org_id, kind, data) VALUES (%s, %s, '{\"n\": 1}') RETURNING id",
        sql_quote($org_id), sql_quote($kind)));
}

# The access log's lines of a path's streams (written when a stream lets
# its request go, or when it ends if it never does).
sub logged {
    my $path = shift;
    open my $fh, '<', catfile(t_logs(), 'access_log') or return 0;
    my $n = 0;
    while (<$fh>) {
        $n++ if index($_, "\"GET $path HTTP/1.") >= 0;
    }
    return $n;
}

# The open org streams' gauge (/internal/metrics, from loopback).
sub open_streams {
    my ($st, undef, $res) = api(GET => '/internal/metrics');
    return undef unless $st == 200;
    return $res->content =~ /^svc_event_streams_open\{kind="org"\} (\d+)$/m ? $1 : undef;
}

# The next event of id $id on $s, skipping older ones.
sub event_id {
    my ($s, $id, $wait) = @_;
    my $e;
    do { $e = sse_next($s, $wait // 10) } while $e && $e->{id} < $id;
    return $e;
}

# --- HTTP/1.1 and HTTP/1.0 ---------------------------------------------------------
# Streams of earlier files end by their next heartbeat at the latest.
ok(wait_for(sub { (open_streams() // -1) == 0 }, timeout => 20),
   'no org stream is open before this file\'s')
    or diag('open: ' . (open_streams() // 'unknown'));
{
    my $org = new_org($owner, prefix => 'rel');
    my $org_id = org_id_of($org);
    my $path = "/api/orgs/$org/events";
    my $s11 = sse_open($path, token => $pat);
    my $s10 = sse_open($path, token => $pat, http10 => 1);
    is($s11->{status}, 200, 'a stream over HTTP/1.1');
    is($s10->{status}, 200, 'a stream over HTTP/1.0');
    is(lc($s11->{headers}{'transfer-encoding'} // ''), 'chunked', '... the first chunked');
    ok(!defined $s10->{headers}{'transfer-encoding'}, '... the second not');
    ok(wait_for(sub { logged($path) >= 2 }, timeout => 15),
       'both let their requests go: httpd logged them while they are open');
    is(open_streams(), 2, '... and the gauge still counts them');
    my $id = emit($org_id, 'test.released');
    my $e11 = event_id($s11, $id);
    my $e10 = event_id($s10, $id);
    is($e11 && $e11->{id}, $id, 'HTTP/1.1: an event after the release arrives');
    is($e10 && $e10->{id}, $id, 'HTTP/1.0: an event after the release arrives');
    # The HTTP/1.1 body is parsed chunk by chunk (sse_next); an event is
    # only found whole. The HTTP/1.0 body is the events themselves.
    unlike($s10->{raw}, qr/(?:\A|\n)[0-9a-fA-F]+\r\n/,
           'HTTP/1.0: no chunk framing in the body, before or after the release');
    like($s10->{raw}, qr/\Aretry: \d+\n\n/, '... which starts with the retry line');
    like($s10->{raw}, qr/id: $id\nevent: test\.released\ndata: \{"n": ?1\}\n\n/,
         '... and carries the event as it is');
    like($s11->{raw}, qr/\A[0-9a-f]+\r\nretry: \d+\n\n\r\n/,
         'HTTP/1.1: the retry line is a chunk of its own');
    like($s11->{raw}, qr/\r\n[0-9a-f]+\r\nid: $id\nevent: test\.released\n/,
         '... and so is the event after the release');
    sse_close($_) for $s11, $s10;
    ok(wait_for(sub { (open_streams() // -1) == 0 }, timeout => 20),
       '... and counts them no more once they ended');
}

# --- compression on the stream's URL --------------------------------------------------
{
    my $org = new_org($owner, prefix => 'gzip');
    my $org_id = org_id_of($org);
    my $path = "/api/orgs/$org/events";
    my $s = sse_open($path, token => $pat, headers => { 'Accept-Encoding' => 'gzip' });
    is($s->{status}, 200, 'a stream under SetOutputFilter DEFLATE, asked with gzip');
    ok(!defined $s->{headers}{'content-encoding'}, '... is not compressed (no-gzip)');
    ok(wait_for(sub { logged($path) >= 1 }, timeout => 15),
       '... and lets its request go');
    my $id = emit($org_id, 'test.gzip');
    my $e = event_id($s, $id);
    is($e && $e->{id}, $id, '... and its events arrive');
    sse_close($s);
}

# --- a transformation on the stream's URL ---------------------------------------------
{
    my $org = new_org($owner, prefix => 'subst');
    my $org_id = org_id_of($org);
    my $path = "/api/orgs/$org/events";
    my $s = sse_open($path, token => $pat);
    is($s->{status}, 200, 'a stream under SetOutputFilter SUBSTITUTE');
    my $first = emit($org_id, 'test.subst');
    my $e = event_id($s, $first);
    is($e && $e->{id}, $first, '... delivers');
    # Past its first second, and a callback: it would have let go by now.
    sleep 2.5;
    my $id = emit($org_id, 'test.subst');
    $e = event_id($s, $id);
    is($e && $e->{id}, $id, '... and later');
    is(logged($path), 0, '... and keeps its request: nothing logged while it is open');
    ok(wait_for(sub { error_log_text() =~ /SVC0930: event stream \S+ keeps its request: output filter substitute/i },
                timeout => 5), '... as the error log says (debug)');
    sse_close($s);
    ok(wait_for(sub { logged($path) == 1 }, timeout => 20),
       '... and is logged once it ends');
}

sub error_log_text {
    open my $fh, '<', error_log_path() or return '';
    local $/;
    return <$fh>;
}

done_testing();
