# Products and documents (issue 9): products under projects, documents
# with versions, the body as markdown, deciding the current version,
# direct edits with optimistic concurrency, the size cap, and the races
# (two edits on one base, two approvals).
use strict;
use warnings;
use utf8;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $owner  = new_user('docs-owner');
my $member = new_user('docs-member');
my $viewer = new_user('docs-viewer');
my $org    = new_org($owner, prefix => 'docs');
svcctl('org', 'add-member', $org, $member, '--role', 'member');
svcctl('org', 'add-member', $org, $viewer, '--role', 'viewer');
my $tok  = new_token($owner, scope => 'admin');
my $mtok = new_token($member, scope => 'write');
my $vtok = new_token($viewer, scope => 'write');
my $rtok = new_token($owner, scope => 'read');
my $org_id = org_id_of($org);

my $proj = uniq('proj');
my ($st, $p) = api(POST => "/api/orgs/$org/projects", token => $tok,
                   json => { slug => $proj, name => 'Docs project' });
is($st, 201, 'project');

# --- products --------------------------------------------------------------------
($st, $p) = api(POST => "/api/orgs/$org/projects/$proj/products", token => $tok,
                json => { name => 'Checkout' });
is($st, 201, 'create a product');
my $prd = $p;
like($prd->{id}, qr/^prd_[A-Za-z0-9]{22}$/, '... a prd_ id');
is($prd->{name}, 'Checkout', '... its name');
is($prd->{project}{slug}, $proj, '... its project');
is($prd->{documents}, 0, '... no documents yet');
($st, $p) = api(GET => "/api/orgs/$org/products/$prd->{id}", token => $vtok);
is($st, 200, 'a viewer reads it');
is_deeply($p, $prd, '... as created');
($st, $p) = api(GET => "/api/orgs/$org/projects/$proj/products", token => $vtok);
is($st, 200, 'a viewer lists the project\'s products');
is($p->{data}[0]{id}, $prd->{id}, '... it is there');
($st) = api(POST => "/api/orgs/$org/projects/$proj/products", token => $mtok,
            json => { name => 'Not mine' });
is($st, 403, 'a member who is not on the team may not create one (project developer)');
($st) = api(POST => "/api/orgs/$org/projects/$proj/team", token => $tok,
            json => { user_id => user_id_of($member), role => 'developer' });
($st) = api(POST => "/api/orgs/$org/projects/$proj/products", token => $mtok,
            json => { name => 'Mine' });
is($st, 201, '... as a developer on the team, they may');
($st) = api(GET => "/api/orgs/$org/products/prd_0000000000000000000000", token => $tok);
is($st, 404, 'an unknown product: 404');

# --- documents ----------------------------------------------------------------------
my $toc_body = "# Checkout\n\n1. Payments\n2. Receipts — “quoted”\n";
($st, $p) = api(POST => "/api/orgs/$org/products/$prd->{id}/documents", token => $mtok,
                json => { kind => 'toc', title => 'Contents', body => $toc_body });
is($st, 201, 'a member creates the table of contents') or diag(explain($p));
my $toc = $p;
like($toc->{id}, qr/^doc_/, '... a doc_ id');
is($toc->{kind}, 'toc', '... kind toc');
is($toc->{current_version}{number}, 1, '... version 1');
is($toc->{current_version}{status}, 'draft', '... a draft');
is($toc->{current_version}{author}{kind}, 'user', '... written by a person');
is($toc->{current_version}{author}{user_id}, user_id_of($member), '... the member');
is($toc->{current_version}{source}, 'create', '... at creation');
is($toc->{approved_version_id}, undef, '... nothing approved');
is(scalar @{ $toc->{versions} }, 1, '... one version listed');
is($toc->{versions_total}, 1, '... of one');
my $v1 = $toc->{current_version}{id};

($st, $p) = api(POST => "/api/orgs/$org/products/$prd->{id}/documents", token => $mtok,
                json => { kind => 'toc', title => 'Another', body => 'x' });
is($st, 409, 'a second table of contents: 409');
is($p->{code}, 'conflict', '... conflict');
($st, $p) = api(POST => "/api/orgs/$org/products/$prd->{id}/documents", token => $mtok,
                json => { kind => 'section', title => 'Payments', body => "# Payments\n" });
is($st, 201, 'a section');
my $sec = $p;
($st) = api(POST => "/api/orgs/$org/products/$prd->{id}/documents", token => $vtok,
            json => { kind => 'section', title => 'x', body => 'x' });
is($st, 403, 'a viewer may not create documents');
($st) = api(POST => "/api/orgs/$org/products/$prd->{id}/documents", token => $rtok,
            json => { kind => 'section', title => 'x', body => 'x' });
is($st, 403, 'nor a read token');
($st) = api(POST => "/api/orgs/$org/products/prd_0000000000000000000000/documents",
            token => $mtok, json => { kind => 'section', title => 'x', body => 'x' });
is($st, 404, 'a document of an unknown product: 404');

($st, $p) = api(GET => "/api/orgs/$org/products/$prd->{id}/documents", token => $vtok);
is($st, 200, 'list the documents');
is_deeply([ map { $_->{id} } @{ $p->{data} } ], [ $sec->{id}, $toc->{id} ], '... newest first');
ok(!exists $p->{data}[0]{versions}, '... without their version lists');
($st, $p) = api(GET => "/api/orgs/$org/products/$prd->{id}", token => $vtok);
is($p->{documents}, 2, 'the product counts two documents');

# --- the body ---------------------------------------------------------------------------
my ($cst, undef, $res) = api(GET => "/api/orgs/$org/doc-versions/$v1/content", token => $vtok);
is($cst, 200, 'the body of a version');
is($res->header('Content-Type'), 'text/markdown; charset=utf-8', '... as markdown');
is($res->content, do { my $b = $toc_body; utf8::encode($b); $b }, '... byte for byte');
($cst) = api(GET => "/api/orgs/$org/doc-versions/ver_0000000000000000000000/content",
             token => $tok);
is($cst, 404, 'an unknown version: 404');

# --- edit ---------------------------------------------------------------------------------
($st, $p) = api(POST => "/api/orgs/$org/documents/$toc->{id}/edit", token => $mtok,
                json => { body => "# Checkout\n\n1. Payments\n2. Receipts\n3. Refunds\n",
                          base_version_id => $v1 });
is($st, 201, 'an edit based on the current version');
my $v2 = $p->{id};
is($p->{number}, 2, '... version 2');
is($p->{status}, 'draft', '... a draft');
is($p->{source}, 'edit', '... an edit');
is($p->{base_version_id}, $v1, '... of version 1');
is($p->{author}{user_id}, user_id_of($member), '... by the editor');
($st, $p) = api(POST => "/api/orgs/$org/documents/$toc->{id}/edit", token => $tok,
                json => { body => 'overwrite', base_version_id => $v1 });
is($st, 409, 'an edit based on an older version: 409');
is($p->{code}, 'conflict', '... conflict');
($st, $p) = api(GET => "/api/orgs/$org/documents/$toc->{id}", token => $vtok);
is($p->{current_version}{id}, $v2, 'the document\'s current version is the edit');
is_deeply([ map { $_->{number} } @{ $p->{versions} } ], [ 2, 1 ], '... versions newest first');
($st) = api(POST => "/api/orgs/$org/documents/$toc->{id}/edit", token => $vtok,
            json => { body => 'x', base_version_id => $v2 });
is($st, 403, 'a viewer may not edit');

# --- decisions ----------------------------------------------------------------------------
($st, $p) = api(POST => "/api/orgs/$org/doc-versions/$v1/approve", token => $mtok);
is($st, 409, 'approving a version that is not current: 409');
is($p->{code}, 'invalid_status', '... invalid_status');
($st) = api(POST => "/api/orgs/$org/doc-versions/$v2/approve", token => $vtok);
is($st, 403, 'a viewer may not approve');
($st, $p) = api(POST => "/api/orgs/$org/doc-versions/$v2/approve", token => $mtok);
is($st, 200, 'approve the current version');
is($p->{status}, 'approved', '... approved');
is($p->{decided_by}, user_id_of($member), '... by the member');
ok($p->{decided_at}, '... when');
($st, $p) = api(GET => "/api/orgs/$org/documents/$toc->{id}", token => $vtok);
is($p->{approved_version_id}, $v2, 'the document\'s approved version');
($st, $p) = api(POST => "/api/orgs/$org/doc-versions/$v2/approve", token => $mtok);
is($st, 409, 'approving it again: 409');
is($p->{code}, 'invalid_status', '... invalid_status');
($st, $p) = api(POST => "/api/orgs/$org/doc-versions/$v2/request-changes", token => $mtok,
                json => { comment => 'too late' });
is($p->{code}, 'invalid_status', 'requesting changes to a decided version: invalid_status');

($st, $p) = api(POST => "/api/orgs/$org/documents/$toc->{id}/edit", token => $mtok,
                json => { body => "# Checkout\n\nDraft three\n", base_version_id => $v2 });
my $v3 = $p->{id};
($st, $p) = api(POST => "/api/orgs/$org/doc-versions/$v3/request-changes", token => $mtok,
                json => {});
is($st, 400, 'request-changes without a comment: 400');
is($p->{errors}[0]{field}, 'comment', '... naming comment');
($st, $p) = api(POST => "/api/orgs/$org/doc-versions/$v3/request-changes", token => $mtok,
                json => { comment => 'Say what refunds are.' });
is($st, 200, 'request changes to the current draft');
is($p->{status}, 'changes_requested', '... changes_requested');
is($p->{comment}, 'Say what refunds are.', '... with the comment');
($st, $p) = api(GET => "/api/orgs/$org/documents/$toc->{id}", token => $vtok);
is($p->{approved_version_id}, $v2, 'the approved version stays');
is($p->{current_version}{id}, $v3, '... the current one is the new draft');

# --- versions, paged ------------------------------------------------------------------------
($st, $p) = api(GET => "/api/orgs/$org/documents/$toc->{id}/versions?limit=2", token => $vtok);
is($st, 200, 'list the versions');
is_deeply([ map { $_->{number} } @{ $p->{data} } ], [ 3, 2 ], '... a page of two');
ok(!exists $p->{data}[0]{body}, '... without bodies');
my $cur = $p->{next_cursor};
($st, $p) = api(GET => "/api/orgs/$org/documents/$toc->{id}/versions?limit=2&cursor=$cur",
                token => $vtok);
is_deeply([ map { $_->{number} } @{ $p->{data} } ], [ 1 ], '... then the last');
is($p->{next_cursor}, undef, '... and no more');

# --- the database keeps versions as they were -------------------------------------------------
ok(!eval { psql("UPDATE doc_versions SET body = 'changed' WHERE id = '$v1'"); 1 },
   'a version\'s body cannot be changed, even in SQL');
ok(!eval { psql("UPDATE doc_versions SET status = 'draft', decided_at = NULL "
                . "WHERE id = '$v2'"); 1 }, '... nor a decision undone');

# --- races ------------------------------------------------------------------------------------
{
    my ($s, $d) = api(GET => "/api/orgs/$org/documents/$sec->{id}", token => $tok);
    my $base = $d->{current_version}{id};
    my @r = race(map { my $n = $_; sub {
        my ($x, $y) = api(POST => "/api/orgs/$org/documents/$sec->{id}/edit", token => $tok,
                          json => { body => "# Payments\n\nEditor $n\n", base_version_id => $base });
        ($x, $y->{code} // '') } } 1 .. 2);
    is_deeply([ sort map { $_->[0] } @r ], [ 201, 409 ], 'two edits on one base: one 201, one 409');
    is((grep { $_->[1] eq 'conflict' } @r), 1, '... the loser told conflict');
    is(psql_value("SELECT count(*) FROM doc_versions WHERE document_id = '$sec->{id}'"), 2,
       '... and one new version');

    ($s, $d) = api(GET => "/api/orgs/$org/documents/$sec->{id}", token => $tok);
    my $vid = $d->{current_version}{id};
    @r = race(map { sub { my ($x, $y) = api(POST => "/api/orgs/$org/doc-versions/$vid/approve",
                                            token => $tok);
                          ($x, $y->{code} // '') } } 1 .. 2);
    is_deeply([ sort map { $_->[0] } @r ], [ 200, 409 ], 'two approvals: one 200, one 409');
    is((grep { $_->[1] eq 'invalid_status' } @r), 1, '... the loser told invalid_status');
}

# --- the size cap -------------------------------------------------------------------------------
{
    my $small = vhost_url('docs_small');      # SvcDocumentLimit 4096
    ($st, $p) = api(POST => "/api/orgs/$org/products/$prd->{id}/documents", token => $tok,
                    base => $small, json => { kind => 'section', title => 'Full',
                                              body => 'é' x 2048 });
    is($st, 201, 'a body of exactly SvcDocumentLimit bytes (4096, in two-byte characters)');
    my $full = $p;
    ($st, $p) = api(POST => "/api/orgs/$org/products/$prd->{id}/documents", token => $tok,
                    base => $small, json => { kind => 'section', title => 'Over',
                                              body => ('é' x 2048) . 'x' });
    is($st, 413, 'one byte more: 413');
    is($p->{code}, 'payload_too_large', '... payload_too_large');
    ($st, $p) = api(POST => "/api/orgs/$org/documents/$full->{id}/edit", token => $tok,
                    base => $small, json => { body => 'y' x 4097,
                                              base_version_id => $full->{current_version}{id} });
    is($st, 413, 'an edit over the cap: 413');

    # The default cap, 1 MiB, with a body that JSON escapes six times over:
    # the route still accepts the request that carries it.
    my $worst = "\x01" x (1024 * 1024);
    ($st, $p) = api(POST => "/api/orgs/$org/products/$prd->{id}/documents", token => $tok,
                    json => { kind => 'section', title => 'Worst case', body => $worst });
    is($st, 201, 'a 1 MiB body escaped to 6 MiB of JSON is accepted');
    my (undef, undef, $r) = api(GET => "/api/orgs/$org/doc-versions/"
                                     . "$p->{current_version}{id}/content", token => $tok);
    ok($r->content eq $worst, '... and comes back byte for byte');
    is($p->{current_version}{bytes}, 1024 * 1024, '... 1048576 bytes');
    ($st, $p) = api(POST => "/api/orgs/$org/products/$prd->{id}/documents", token => $tok,
                    json => { kind => 'section', title => 'Too big', body => $worst . 'x' });
    is($st, 413, 'one byte more than 1 MiB: 413');
}

# --- comments (none yet: reviewers leave them through share links) -----------------------------
($st, $p) = api(GET => "/api/orgs/$org/documents/$toc->{id}/comments", token => $vtok);
is($st, 200, 'a document\'s comments');
is_deeply($p->{data}, [], '... none yet');

# --- audit ---------------------------------------------------------------------------------------
my %act = map { $_->[0] => 1 } psql("SELECT action FROM audit_log WHERE org_id = '$org_id'");
for my $a (qw(product.created document.created document.edited version.approved
              version.changes_requested)) {
    ok($act{$a}, "audit: $a");
}

done_testing();
