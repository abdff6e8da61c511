# Share links (issue 9): made, listed and revoked by members of the org.
# The token is shown once, stored as a keyed hash, and never listed again.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $owner  = new_user('shr-owner');
my $member = new_user('shr-member');
my $viewer = new_user('shr-viewer');
my $org    = new_org($owner, prefix => 'shr');
svcctl('org', 'add-member', $org, $member, '--role', 'member');
svcctl('org', 'add-member', $org, $viewer, '--role', 'viewer');
my $tok  = new_token($owner, scope => 'admin');
my $madm = new_token($member, scope => 'admin');
my $mw   = new_token($member, scope => 'write');
my $vadm = new_token($viewer, scope => 'admin');
my $org_id = org_id_of($org);
my $proj = uniq('proj');
api(POST => "/api/orgs/$org/projects", token => $tok, json => { slug => $proj, name => 'P' });
my $prd = new_product($org, $proj, $tok);

my ($st, $p, $res) = api(POST => "/api/orgs/$org/products/$prd->{id}/shares", token => $madm,
                         json => {});
is($st, 201, 'a member makes a share link') or diag(explain($p));
my $share = $p;
my $token = $share->{token};
record_secret($token);
like($share->{id}, qr/^shr_[A-Za-z0-9]{22}$/, '... a shr_ id');
like($token, qr/^svc_shr_[A-Za-z0-9]{49}$/, '... a token svc_shr_ + 43 + a checksum');
is($share->{url}, base_url() . "/share/$token", '... and its URL at the public origin');
is($share->{token_hint}, substr($token, 0, 12), '... the hint is its first twelve characters');
is($share->{status}, 'active', '... active');
is($share->{product_id}, $prd->{id}, '... for the product');
is($share->{created_by}, user_id_of($member), '... by the member');
is(psql_value("SELECT round(extract(epoch FROM expires_at - created_at) / 86400) FROM shares "
              . "WHERE id = '$share->{id}'"), 30, '... expiring in 30 days by default');
is($res->header('Cache-Control'), 'no-store', '... in an answer no cache keeps');

($st, $p) = api(POST => "/api/orgs/$org/products/$prd->{id}/shares", token => $tok,
                json => { expires_in_days => 7 });
is($st, 201, 'a link for seven days');
record_secret($p->{token});
my $second = $p;
is(psql_value("SELECT round(extract(epoch FROM expires_at - created_at) / 86400) FROM shares "
              . "WHERE id = '$p->{id}'"), 7, '... seven');
for my $days (0, 366, 'x') {
    ($st, $p) = api(POST => "/api/orgs/$org/products/$prd->{id}/shares", token => $tok,
                    json => { expires_in_days => $days });
    is($st, 400, "expires_in_days $days: 400");
}
($st) = api(POST => "/api/orgs/$org/products/$prd->{id}/shares", token => $mw, json => {});
is($st, 403, 'a write-scope token may not make a link (it decides who may read)');
($st) = api(POST => "/api/orgs/$org/products/$prd->{id}/shares", token => $vadm, json => {});
is($st, 403, 'nor a viewer');
($st) = api(POST => "/api/orgs/$org/products/prd_0000000000000000000000/shares", token => $tok,
            json => {});
is($st, 404, 'an unknown product: 404');

# --- stored as a hash, listed without the token ---------------------------------------
is(psql_value("SELECT count(*) FROM shares WHERE position(convert_to(" . sql_quote($token)
              . ", 'UTF8') IN token_hash) > 0 OR token_hint = " . sql_quote($token)), 0,
   'the token is not in the database');
is(psql_value("SELECT octet_length(token_hash) FROM shares WHERE id = '$share->{id}'"), 32,
   '... only its 32-byte keyed hash');
($st, $p, $res) = api(GET => "/api/orgs/$org/products/$prd->{id}/shares", token => $mw);
is($st, 200, 'a member lists the links');
is_deeply([ map { $_->{id} } @{ $p->{data} } ], [ $second->{id}, $share->{id} ], '... newest first');
ok(!exists $p->{data}[0]{token} && !exists $p->{data}[0]{url}, '... without token or URL');
unlike($res->content, qr/\Q$token\E/, '... anywhere in the answer');
($st) = api(GET => "/api/orgs/$org/products/$prd->{id}/shares", token => $vadm);
is($st, 403, 'a viewer may not list them');

# --- revoke ------------------------------------------------------------------------------
($st, $p) = api(POST => "/api/orgs/$org/shares/$share->{id}/revoke", token => $madm);
is($st, 200, 'revoke');
is($p->{status}, 'revoked', '... revoked');
ok($p->{revoked_at}, '... when');
($st, $p) = api(POST => "/api/orgs/$org/shares/$share->{id}/revoke", token => $madm);
is($st, 200, 'again: 200');
is(psql_value("SELECT count(*) FROM audit_log WHERE org_id = '$org_id' "
              . "AND action = 'share.revoked'"), 1, '... audited once');
($st) = api(POST => "/api/orgs/$org/shares/$second->{id}/revoke", token => $mw);
is($st, 403, 'a write-scope token may not revoke');
($st) = api(POST => "/api/orgs/$org/shares/shr_0000000000000000000000/revoke", token => $tok);
is($st, 404, 'an unknown link: 404');

# --- audit without the token -----------------------------------------------------------------
is(psql_value("SELECT count(*) FROM audit_log WHERE org_id = '$org_id' "
              . "AND action = 'share.created'"), 2, 'audit: share.created');
is(psql_value("SELECT count(*) FROM audit_log WHERE org_id = '$org_id' AND data::text LIKE "
              . sql_quote('%' . substr($token, 12) . '%')), 0, '... never with the token');

done_testing();
