# The share portal lists the comments left through its link (issue 26):
# GET /api/share/:token/comments. A link's reviewers read what anyone
# holding that link wrote, newest first, paged; never the comments of the
# product's other links (other people) nor anything members wrote inside
# the org; a revoked or expired link is the portal's one 404.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $owner = new_user('pcmt-owner');
my $org   = new_org($owner, prefix => 'pcmt');
my $tok   = new_token($owner, scope => 'admin');
my $proj  = uniq('proj');
api(POST => "/api/orgs/$org/projects", token => $tok, json => { slug => $proj, name => 'P' });
my $prd   = new_product($org, $proj, $tok, name => 'Commented product');
my $other = new_product($org, $proj, $tok, name => 'Other product');
my $toc = new_document($org, $prd->{id}, $tok, kind => 'toc', title => 'Contents',
                       body => "# Contents\n");
my $sec = new_document($org, $prd->{id}, $tok, title => 'Section', body => "# Section\n");
my $elsewhere = new_document($org, $other->{id}, $tok, title => 'Elsewhere', body => 'x');

sub new_share {
    my ($product) = @_;
    my ($s, $sh) = api(POST => "/api/orgs/$org/products/$product/shares", token => $tok,
                       json => {});
    die "share: $s\n" unless $s == 201;
    record_secret($sh->{token});
    return $sh;
}
sub comment {
    my ($share, $doc, $name, $body) = @_;
    my ($s, $c) = api(POST => "/api/share/$share->{token}/comments",
                      json => { document_id => $doc->{id}, author_name => $name, body => $body });
    die "comment: $s\n" unless $s == 201;
    return $c;
}
my $a = new_share($prd->{id});
my $b = new_share($prd->{id});
my $c = new_share($other->{id});
my $A = $a->{token};

my @mine = (comment($a, $toc, 'Ada', 'First on the contents.'),
            comment($a, $sec, 'Grace', 'The section needs a diagram.'));
comment($b, $toc, 'Bob', 'Through the other link.');
comment($c, $elsewhere, 'Carl', 'On the other product.');
push @mine, comment($a, $toc, '<b>Ada</b>', 'Second on the contents.');

# What members write inside the org: a decision's comment, and a comment
# that came through no link (what a link's comments would become without it).
my ($st, $p) = api(POST => "/api/orgs/$org/doc-versions/$sec->{current_version}{id}"
                           . '/request-changes', token => $tok,
                   json => { comment => 'Internal: rework this.' });
is($st, 200, 'a member requests changes with a comment');
psql("INSERT INTO doc_comments (id, org_id, document_id, version_id, share_id, author_name, body)"
     . " SELECT 'cmt_internal0000000000', org_id, id, current_version_id, NULL, 'Member',"
     . " 'Internal: no link.' FROM documents WHERE id = '$toc->{id}'");

# --- the link's comments -------------------------------------------------------------------
my $res;
($st, $p, $res) = api(GET => "/api/share/$A/comments");
is($st, 200, 'GET /api/share/:token/comments needs no login');
is_deeply([ map { $_->{id} } @{ $p->{data} } ], [ map { $_->{id} } reverse @mine ],
          '... the comments left through this link, newest first, and only those')
    or diag(explain($p));
is($p->{next_cursor}, undef, '... on one page');
is($p->{data}[0]{author_name}, '<b>Ada</b>', '... each with its author as given');
is($p->{data}[0]{body}, 'Second on the contents.', '... its text');
is($p->{data}[0]{document_id}, $toc->{id}, '... its document');
is($p->{data}[0]{version_id}, $toc->{current_version}{id}, '... the version read');
ok($p->{data}[0]{created_at}, '... and when');
ok(!exists $p->{data}[0]{share_id}, '... and no link id');
is($res->header('Referrer-Policy'), 'no-referrer', '... with Referrer-Policy: no-referrer');
ok(!(grep { $_->{body} =~ /Internal|other link|other product/ } @{ $p->{data} }),
   'no internal comment, none of another link or product');

($st, $p) = api(GET => "/api/share/$b->{token}/comments");
is_deeply([ map { $_->{author_name} } @{ $p->{data} } ], ['Bob'],
          'the other link of the same product lists its own comment only');

($st, $p) = api(GET => "/api/share/$A/comments?document_id=$toc->{id}");
is_deeply([ map { $_->{body} } @{ $p->{data} } ],
          ['Second on the contents.', 'First on the contents.'],
          '?document_id= narrows to one document');
($st, $p) = api(GET => "/api/share/$A/comments?document_id=$elsewhere->{id}");
is($st, 200, 'another product\'s document: 200');
is_deeply($p->{data}, [], '... and nothing');
($st, $p) = api(GET => "/api/share/$A/comments?document_id=nothing");
is($st, 400, 'a document_id that is no id: 400');
is($p->{errors}[0]{field}, 'document_id', '... naming document_id');

# --- paging --------------------------------------------------------------------------------
($st, $p) = api(GET => "/api/share/$A/comments?limit=2");
is(scalar @{ $p->{data} }, 2, 'limit=2: two');
ok($p->{next_cursor}, '... and a cursor');
my $cursor = $p->{next_cursor};
($st, $p) = api(GET => "/api/share/$A/comments?limit=2&cursor=$cursor");
is($st, 200, 'the next page');
is_deeply([ map { $_->{id} } @{ $p->{data} } ], [ $mine[0]{id} ], '... the oldest');
is($p->{next_cursor}, undef, '... the last');
($st, $p) = api(GET => "/api/share/$b->{token}/comments?limit=2&cursor=$cursor");
is($st, 400, 'the cursor of one link on another: 400');
is($p->{errors}[0]{code}, 'invalid_cursor', '... invalid_cursor');

# --- dead links ----------------------------------------------------------------------------
my ($s404, $dead) = api(GET => '/api/share/not-a-token/comments');
is($s404, 404, 'a malformed token: 404');
api(POST => "/api/orgs/$org/shares/$a->{id}/revoke", token => $tok);
($st, $p) = api(GET => "/api/share/$A/comments");
is($st, 404, 'a revoked link: 404');
is($p->{detail}, $dead->{detail}, '... the portal\'s one answer');
psql("UPDATE shares SET created_at = now() - interval '3 days', "
     . "expires_at = now() - interval '1 second' WHERE id = '$b->{id}'");
($st, $p) = api(GET => "/api/share/$b->{token}/comments");
is($st, 404, 'an expired link: 404');
is($p->{detail}, $dead->{detail}, '... the same');

done_testing();
