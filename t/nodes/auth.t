# Two nodes, one database of credentials and rate limits (issue 25): the
# token-creation limit (20 a minute per user, svc_config.c) is one budget
# across both nodes, not 20 on each; a token revoked through node A is
# refused by node B on its very next request, though B's child had it
# cached a moment before.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use HTTP::Request ();
use LWP::UserAgent ();
use SvcTest;
use SvcNode;

my $b = SvcNode->start(name => 'b');

# --- token creation: one budget for both nodes ------------------------------------------
{
    my $carol = new_user('nodes-rate');
    my $ctok = new_token($carol, scope => 'admin');
    my $cid = user_id_of($carol);
    my @codes;
    # A fixed window may roll over in the middle; then try once more.
    for my $attempt (1 .. 2) {
        psql("DELETE FROM rate_limits WHERE key LIKE 'tokens:%$cid'");
        my $w0 = psql_value("SELECT floor(extract(epoch FROM now()) / 60)");
        @codes = ();
        for my $i (1 .. 24) {
            # Alternately through node A and node B.
            my ($s, $p) = api(POST => '/api/me/tokens', token => $ctok,
                              json => { name => "burst$i", scope => 'read' },
                              $i % 2 ? () : (base => $b->url));
            push @codes, $s;
        }
        my $w1 = psql_value("SELECT floor(extract(epoch FROM now()) / 60)");
        last if $w0 eq $w1;
    }
    is(scalar(grep { $_ == 201 } @codes), 20,
       '20 creations in a minute succeed across both nodes, not 20 on each');
    is(scalar(grep { $_ == 429 } @codes), 4, '... the other 4 are rate limited');
    my @on_b = @codes[ grep { $_ % 2 } 0 .. $#codes ];
    my @on_a = @codes[ grep { !($_ % 2) } 0 .. $#codes ];
    ok((grep { $_ == 429 } @on_a) && (grep { $_ == 429 } @on_b),
       '... on either node once the shared budget is spent');
    my ($s, $p) = api(POST => '/api/me/tokens', token => $ctok, base => $b->url,
                      json => { name => 'late', scope => 'read' });
    is($s, 429, 'node B refuses the next one too');
    is($p && $p->{code}, 'rate_limited', '... rate_limited');
}

# --- a token revoked on A is refused on B at once ----------------------------------------
{
    my $dave = new_user('nodes-revoke');
    my $admin = new_token($dave, scope => 'admin');
    my $victim = new_token($dave, scope => 'write');
    # One persistent connection to node B: the same child, whose
    # authentication cache holds the token after a few requests.
    my $ua = LWP::UserAgent->new(keep_alive => 1, timeout => 30);
    my $me = sub {
        my $req = HTTP::Request->new(GET => $b->url . '/api/me');
        $req->header(Authorization => "Bearer $victim");
        my $res = $ua->request($req);
        return ($res->code, eval { json()->decode($res->content) });
    };
    my ($code, $who) = $me->();
    is($code, 200, 'node B accepts the token');
    $me->() for 1 .. 3;
    my $id = $who->{auth}{token}{id};
    ok($id, "... its id ($id)");
    my ($rs) = api(DELETE => "/api/me/tokens/$id", token => $admin);
    is($rs, 204, 'revoked through node A');
    my ($after, $p) = $me->();
    is($after, 401, 'node B refuses it on the very next request');
    is($p && $p->{code}, 'unauthenticated', '... unauthenticated')
        or diag(explain($p));
    my ($sa) = api(GET => '/api/me', token => $victim);
    is($sa, 401, '... as node A does');
    my ($ok) = api(GET => '/api/me', token => $admin, base => $b->url);
    is($ok, 200, "the owner's other token still works on node B");
}

$b->stop;

done_testing();
