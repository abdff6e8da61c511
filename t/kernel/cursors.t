# Pagination cursors are tamper-evident and bound to their list (issue 14,
# item 8). A cursor was base64url of "v1:<key>", so ?cursor=djE6OTk5OTk5
# ("v1:999999") was accepted though the conventions say a cursor not issued
# by the list is 400. Now it carries a MAC under a key derived from the
# server secret, over the position and the list: the route, its path, the
# caller, and the list's filters.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use MIME::Base64 qw(encode_base64url decode_base64url);
use SvcTest;

my $owner = new_user('cursor');
my $tok = new_token($owner, scope => 'admin');
my $org = new_org($owner, prefix => 'cursor');
my $other_org = new_org($owner, prefix => 'cursor-other');
for my $i (1 .. 7) {
    my ($st) = api(POST => "/api/orgs/$org/projects", token => $tok,
                   json => { slug => "p$i", name => "Project $i" });
    die "project $i: $st\n" unless $st == 201;
    if ($i % 2) {
        ($st) = api(PATCH => "/api/orgs/$org/projects/p$i", token => $tok,
                    json => { archived => JSON::PP::true() });
    }
}
api(POST => "/api/orgs/$other_org/projects", token => $tok, json => { slug => "q$_", name => 'Q' })
    for 1 .. 3;

# Walks a list two items a page: (slugs in order, pages, first next_cursor).
sub walk {
    my ($path) = @_;
    my ($cursor, $first, @seen, $pages);
    my $sep = $path =~ /\?/ ? '&' : '?';
    do {
        my ($st, $p) = api(GET => "$path${sep}limit=2" . ($cursor ? "&cursor=$cursor" : ''),
                           token => $tok);
        die "walk $path: $st\n" unless $st == 200;
        push @seen, map { $_->{slug} // $_->{user_id} // $_->{id} } @{ $p->{data} };
        $cursor = $p->{next_cursor};
        $first //= $cursor;
        $pages++;
    } while ($cursor && $pages < 50);
    return (\@seen, $pages, $first);
}

sub refused {
    my ($path, $name) = @_;
    my ($st, $p) = api(GET => $path, token => $tok);
    is($st, 400, "$name: 400") or diag(explain($p));
    is($p && $p->{errors} && $p->{errors}[0]{code}, 'invalid_cursor', '... invalid_cursor');
}

# --- paging still walks every item exactly once ------------------------------------
my ($all, $pages, $cur_all) = walk("/api/orgs/$org/projects");
is_deeply($all, [ map { "p$_" } reverse 1 .. 7 ], 'every project once, newest first');
is($pages, 4, '... over four pages of two');
my ($arch, undef, $cur_arch) = walk("/api/orgs/$org/projects?archived=true");
is_deeply($arch, [qw(p7 p5 p3 p1)], 'with a filter: the archived ones, each once');
my ($members) = walk("/api/orgs/$org/members");
is(scalar @$members, 1, 'another list pages too');

# --- forged and foreign cursors are refused -------------------------------------
refused("/api/orgs/$org/projects?cursor=djE6OTk5OTk5", 'the forged cursor of the report');
refused("/api/orgs/$org/projects?cursor=" . encode_base64url("v1:5"), 'a version 1 cursor');
refused("/api/orgs/$org/members?cursor=$cur_all", "a projects cursor on the org's members");
refused("/api/orgs/$other_org/projects?cursor=$cur_all", 'a cursor of another org\'s projects');
refused("/api/orgs/$org/projects?archived=false&cursor=$cur_arch", 'another filter value');
refused("/api/orgs/$org/projects?cursor=$cur_arch", 'the filter left out');
refused("/api/me/tokens?cursor=$cur_all", 'a projects cursor on the token list');
{
    my $raw = decode_base64url($cur_all);
    my $seq = substr($raw, 1, 8);
    # The position moved, the MAC kept: refused.
    my $later = pack('C', ord($raw)) . pack('Q>', unpack('Q>', $seq) + 1) . substr($raw, 9);
    refused("/api/orgs/$org/projects?cursor=" . encode_base64url($later), 'a moved position');
    my $flipped = $raw;
    substr($flipped, -1, 1) = chr(ord(substr($flipped, -1, 1)) ^ 1);
    refused("/api/orgs/$org/projects?cursor=" . encode_base64url($flipped), 'a flipped MAC bit');
}
{
    # Someone else in the same org cannot continue the owner's list.
    my $member = new_user('cursor-member');
    svcctl('org', 'add-member', $org, $member, '--role', 'member');
    my ($st, $p) = api(GET => "/api/orgs/$org/projects?cursor=$cur_all",
                       token => new_token($member, scope => 'read'));
    is($st, 400, "another member with the owner's cursor: 400");
}
{
    # The same list, the same caller, the limit changed: fine.
    my ($st, $p) = api(GET => "/api/orgs/$org/projects?limit=5&cursor=$cur_all", token => $tok);
    is($st, 200, 'the limit may change between pages');
    is_deeply([ map { $_->{slug} } @{ $p->{data} } ], [qw(p5 p4 p3 p2 p1)], '... from the same place');
}

done_testing();
