# The share portal (issue 9): no login and no organization, only the
# token. Reviewers see each document's approved version (or the current
# one where none is approved), read bodies as markdown, leave comments that
# members then read. Revoked, expired, unknown and malformed tokens are one
# and the same 404, and so are other products' documents; the token never
# reaches the access log; the portal is rate-limited per client address.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use File::Spec::Functions qw(catfile);
use SvcTest;
use LWP::UserAgent;

my $owner = new_user('portal-owner');
my $org   = new_org($owner, prefix => 'portal');
my $tok   = new_token($owner, scope => 'admin');
my $proj  = uniq('proj');
api(POST => "/api/orgs/$org/projects", token => $tok, json => { slug => $proj, name => 'P' });
my $prd   = new_product($org, $proj, $tok, name => 'Reviewed product');
my $other = new_product($org, $proj, $tok, name => 'Other product');

my $toc = new_document($org, $prd->{id}, $tok, kind => 'toc', title => 'Contents',
                       body => "# Contents\n\nApproved text.\n");
my $v1 = $toc->{current_version}{id};
my ($st, $p) = api(POST => "/api/orgs/$org/doc-versions/$v1/approve", token => $tok);
is($st, 200, 'the table of contents is approved');
($st, $p) = api(POST => "/api/orgs/$org/documents/$toc->{id}/edit", token => $tok,
                json => { body => "# Contents\n\nA newer draft.\n", base_version_id => $v1 });
my $sec = new_document($org, $prd->{id}, $tok, title => 'Section',
                       body => "# Section\n\nOnly a draft.\n");
my $elsewhere = new_document($org, $other->{id}, $tok, title => 'Elsewhere', body => 'hidden');
my $outsider = new_user('portal-outsider');
my $o_org = new_org($outsider, prefix => 'portal-out');
my $o_tok = new_token($outsider, scope => 'admin');
api(POST => "/api/orgs/$o_org/projects", token => $o_tok, json => { slug => $proj, name => 'P' });
my $o_prd = new_product($o_org, $proj, $o_tok);
my $o_doc = new_document($o_org, $o_prd->{id}, $o_tok, title => 'Theirs', body => 'theirs');

sub new_share {
    my ($product, %opt) = @_;
    my ($s, $sh) = api(POST => "/api/orgs/$org/products/$product/shares", token => $tok,
                       json => { %opt });
    die "share: $s\n" unless $s == 201;
    record_secret($sh->{token});
    return $sh;
}
my $share = new_share($prd->{id});
my $t = $share->{token};

# --- reading --------------------------------------------------------------------------
my $res;
($st, $p, $res) = api(GET => "/api/share/$t");
is($st, 200, 'the portal needs no login');
is($p->{product}{name}, 'Reviewed product', '... the product');
is_deeply([ map { $_->{id} } @{ $p->{documents} } ], [ $toc->{id}, $sec->{id} ],
          '... its documents, the table of contents first');
is($p->{documents}[0]{version_id}, $v1, '... the approved version where there is one');
ok($p->{documents}[0]{approved}, '... marked approved');
is($p->{documents}[1]{version_id}, $sec->{current_version}{id}, '... else the current one');
ok(!$p->{documents}[1]{approved}, '... marked not approved');
is($p->{documents}[0]{title}, 'Contents', '... with titles');
is($p->{documents}[0]{kind}, 'toc', '... and kinds');
ok($p->{expires_at}, '... and when the link expires');
is($res->header('Referrer-Policy'), 'no-referrer', '... with Referrer-Policy: no-referrer');

my (undef, undef, $r) = api(GET => "/api/share/$t/documents/$toc->{id}");
is($r->code, 200, 'a document\'s body');
is($r->header('Content-Type'), 'text/markdown; charset=utf-8', '... as markdown');
is($r->content, "# Contents\n\nApproved text.\n", '... the approved text, not the newer draft');
(undef, undef, $r) = api(GET => "/api/share/$t/documents/$sec->{id}");
is($r->content, "# Section\n\nOnly a draft.\n", '... the current text where none is approved');

for my $c ([ 'another product of the same org' => $elsewhere->{id} ],
           [ 'another org\'s document' => $o_doc->{id} ],
           [ 'an unknown document' => 'doc_0000000000000000000000' ],
           [ 'not an id' => 'nothing' ]) {
    my ($name, $id) = @$c;
    ($st, $p) = api(GET => "/api/share/$t/documents/$id");
    is($st, 404, "$name: 404");
    ($st, $p) = api(POST => "/api/share/$t/comments",
                    json => { document_id => $id, author_name => 'R', body => 'x' });
    is($st, $id =~ /^doc_/ ? 404 : 400, "... and no comment on it");
}

# --- comments ---------------------------------------------------------------------------
($st, $p) = api(POST => "/api/share/$t/comments",
                json => { document_id => $toc->{id}, author_name => 'Rita Reviewer',
                          body => 'Section 2 is unclear.' });
is($st, 201, 'a reviewer comments');
like($p->{id}, qr/^cmt_/, '... a cmt_ id');
is($p->{version_id}, $v1, '... on the version they read');
($st, $p) = api(POST => "/api/share/$t/comments", json => { document_id => $toc->{id}, body => 'x' });
is($st, 400, 'without author_name: 400');
($st, $p) = api(GET => "/api/orgs/$org/documents/$toc->{id}/comments", token => $tok);
is($st, 200, 'members read the comments');
is($p->{data}[0]{author_name}, 'Rita Reviewer', '... who');
is($p->{data}[0]{body}, 'Section 2 is unclear.', '... what');
is($p->{data}[0]{share_id}, $share->{id}, '... through which link');

# --- one 404 for revoked, expired, unknown and malformed tokens ---------------------------
my $revoked = new_share($prd->{id});
api(POST => "/api/orgs/$org/shares/$revoked->{id}/revoke", token => $tok);
my $expired = new_share($prd->{id});
psql("UPDATE shares SET created_at = now() - interval '3 days', "
     . "expires_at = now() - interval '1 second' WHERE id = '$expired->{id}'");
(my $unknown = $t) =~ s/^(svc_shr_)(.{43})/$1 . ('A' x 43)/e;
my @dead = ([ revoked => $revoked->{token} ], [ expired => $expired->{token} ],
            [ 'unknown (well-formed)' => secret_token_like('svc_shr_') ],
            [ 'a bad checksum' => $unknown ], [ malformed => 'not-a-token' ]);
my %detail;
for my $d (@dead) {
    my ($name, $tk) = @$d;
    for my $call ([ GET => "/api/share/$tk" ], [ GET => "/api/share/$tk/documents/$toc->{id}" ],
                  [ POST => "/api/share/$tk/comments",
                    json => { document_id => $toc->{id}, author_name => 'x', body => 'x' } ]) {
        my ($m, $path, @rest) = @$call;
        ($st, $p) = api($m => $path, @rest);
        is($st, 404, "$name token: $m " . ($path =~ s/\Q$tk\E/TOKEN/r) . ' is 404');
        $detail{ ($p->{code} // '') . ' ' . ($p->{detail} // '') }++ if $path !~ /documents/;
    }
}
is(scalar keys %detail, 1, 'the same answer whatever the reason') or diag(explain(\%detail));
is(psql_value("SELECT count(*) FROM doc_comments c JOIN shares s ON s.id = c.share_id "
              . "WHERE s.id IN ('$revoked->{id}', '$expired->{id}')"), 0,
   'no comment through a dead link');

# --- the access log never shows a token ------------------------------------------------------
api(GET => "/api/share/$t/not/a/route");
my $log = catfile(t_logs(), 'access_log');
my @lines;
wait_for(sub {
    open my $fh, '<', $log or return 0;
    @lines = grep { m{/api/share/} } <$fh>;
    return scalar grep { m{"GET /api/share/\S+ HTTP/1.1" 404} } @lines;
}, timeout => 10);
ok(scalar @lines >= 10, 'the portal\'s requests are in the access log (' . scalar(@lines) . ')');
my @shown = grep { /svc_shr_/ } @lines;
is(scalar @shown, 0, '... none with a token');
ok((grep { m{"GET /api/share/\[REDACTED\] HTTP} } @lines), '... the token is [REDACTED]');
ok((grep { m{"GET /api/share/\[REDACTED\]/documents/doc_\w+ HTTP} } @lines),
   '... the rest of the path kept');
ok((grep { m{"GET /api/share/\[REDACTED\] HTTP.* 404 } } @lines),
   '... also where no route matched');

# --- the web UI's page of the portal: the token neither in the log nor in a Referer ----------
{
    my $ua = LWP::UserAgent->new(max_redirect => 0, timeout => 30);
    my $page = $ua->get(base_url() . "/share/$t?from=portal-t");
    is($page->code, 200, 'GET /share/:token: the web UI\'s page of the portal');
    is($page->header('Referrer-Policy'), 'no-referrer', '... with Referrer-Policy: no-referrer');
    my @ui;
    wait_for(sub {
        open my $fh, '<', $log or return 0;
        @ui = grep { m{ /share/} } <$fh>;
        return scalar grep { /from=portal-t/ } @ui;
    }, timeout => 10);
    ok((grep { m{"GET /share/\[REDACTED\]\?from=portal-t HTTP/1\.1" 200 } } @ui),
       'access_log: the page\'s request line with [REDACTED] for the token')
        or diag(join '', @ui);
    is(scalar(grep { /svc_shr_/ } @ui), 0, '... and no token');
}

# --- rate limit per client address -------------------------------------------------------------
{
    my $small = vhost_url('docs_small');     # SvcRateLimit share 5 60
    psql("DELETE FROM rate_limits WHERE key LIKE 'share:%'");
    my @codes = map { (api(GET => "/api/share/$t", base => $small))[0] } 1 .. 5;
    is_deeply(\@codes, [ (200) x 5 ], 'five portal requests a minute from one address');
    my ($s6, $p6, $r6) = api(GET => "/api/share/not-a-token", base => $small);
    is($s6, 429, '... the sixth (even with a bad token): 429');
    is($p6->{code}, 'rate_limited', '... rate_limited');
    ok($r6->header('Retry-After'), '... with Retry-After');
    psql("DELETE FROM rate_limits WHERE key LIKE 'share:%'");
}

done_testing();
