# The web UI's model providers, planning documents and share portal (issue
# 26), in a real headless Chromium against this server, its PostgreSQL and
# the fake model (t/lib/FakeLLM.pm): t/ui/docs.mjs adds and tests a
# provider, creates a document whose title and text carry markup (nothing
# runs), edits it from two pages at once (the second gets the conflict and
# keeps its text), approves it, regenerates it and accepts a patch, compares
# two versions, makes a share link and opens it in a fresh browser context
# without cookies (Referrer-Policy: no-referrer), comments there and sees
# the comment back in the signed-in page; axe-core on every page, 375 px on
# the main ones. Then this checks from outside what the browser did: the
# comment row, the approved version, and an access log without the token.
# Before the walk: what a walk prints (its checks, their diagnostics, node's
# own errors) masks every share token.
#
# Without chromium this skips, saying so, unless it runs in CI (CI set).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use File::Spec::Functions qw(catfile);
use SvcTest;
use SvcUI;

SvcUI::chromium_or_skip();

# --- what a walk prints never holds a share token ----------------------------------------
# A share token is a live credential, and a failing walk prints its checks'
# descriptions and diagnostics (a portal URL, what a page showed): t/ui/lib.mjs
# masks every svc_shr_... in them, and SvcUI masks whatever node prints.
{
    my $shr = secret_token_like('svc_shr_');
    my $lib = catfile($FindBin::Bin, 'lib.mjs');
    my ($rc, $out, $err) = SvcTest::run([
        SvcUI::which('node'), '--input-type=module', '-e',
        "import { check } from 'file://$lib';\n"
        . "check(false, 'the portal at /share/$shr loads', "
        . "{ url: 'http://ui.test/share/$shr?x=1', shown: 'token $shr.' });\n"
        . "check(true, 'read $shr');\n" ]);
    is($rc, 0, 'lib.mjs\'s check, failing on purpose outside a walk') or diag($err);
    is(index($out . $err, substr($shr, 8)), -1, '... prints no share token')
        or diag(length($out) . ' bytes printed');
    is(scalar(() = $out =~ /svc_shr_\[REDACTED\]/g), 4, '... each one masked')
        or diag($out =~ s/svc_shr_\w+/svc_shr_(unmasked)/gr);
    is(SvcUI::redact("Error: page.goto: net::ERR at http://h/share/$shr\n  at $shr x"),
       "Error: page.goto: net::ERR at http://h/share/svc_shr_[REDACTED]\n  at "
       . "svc_shr_[REDACTED] x", 'what node prints itself: masked by SvcUI');
}

# --- the data: a user the fake provider signs in, their org and project ------------------
my $email = new_user('uidocs', name => 'Dora Documents', allow_email_link => 1);
my $org   = new_org($email, prefix => 'uidocs', name => 'Docs Works');
my $tok   = new_token($email, scope => 'admin');
my $proj  = 'plan';
my ($st) = api(POST => "/api/orgs/$org/projects", token => $tok,
               json => { slug => $proj, name => 'Planned' });
is($st, 201, 'a project to plan');
my $llm = new_llm(flavor => 'openai');
SvcTest::vcs_reset();
SvcTest::new_vcs_user('dora', email => $email, name => 'Dora Documents');

# --- the browser ---------------------------------------------------------------------------
my $r = SvcUI::run_walk('docs.mjs', min_checks => 60,
                        env => { SVC_UI_ORG => $org, SVC_UI_PROJECT => $proj,
                                 SVC_UI_LLM_URL => $llm->url, SVC_UI_LLM_KEY => $llm->key });
record_secret($r->{share_token}) if $r->{share_token};
SvcTest::vcs_state();       # records what the fake provider issued: never in a log

# --- what the browser did, checked from outside -----------------------------------------------
my $doc = ($r->{document_id} // '') =~ s/'//gr;
ok($doc, 'the browser made a document');
is(psql_value("SELECT count(*) FROM llm_providers p JOIN orgs o ON o.id = p.org_id "
              . "WHERE o.slug = '$org' AND p.is_default"),
   1, 'the provider added in the browser is the org\'s default');
is(psql_value("SELECT title FROM documents WHERE id = '$doc'"), '<img src=x onerror=alert(1)>',
   'the document is stored with its title as typed');
is(psql_value("SELECT v.number FROM documents d JOIN doc_versions v ON v.id = d.approved_version_id "
              . "WHERE d.id = '$doc'"),
   3, 'its approved version is v3, the second editor\'s, approved in the browser');
is(psql_value("SELECT count(*) FROM doc_versions WHERE document_id = '$doc'"), 5,
   'five versions: created, two edits, regenerated, the accepted patch');
is(psql_value("SELECT string_agg(source, ',' ORDER BY number) FROM doc_versions "
              . "WHERE document_id = '$doc'"),
   'create,edit,edit,regenerate,patch', '... made as the walk made them');
is(psql_value("SELECT count(*) FROM doc_patches WHERE document_id = '$doc' AND status = 'accepted'"),
   1, 'the patch was accepted');
is(psql_value("SELECT author_name || ': ' || body FROM doc_comments WHERE document_id = '$doc'"),
   'Rita Reviewer: Bank transfers? <img src=x onerror=alert(1)>',
   'the comment made in the portal is stored, on the document');
ok(length($r->{share_token} // '') > 20, 'the browser read a share token');

# The access log: the portal's page and its API calls, never the token.
my $log = catfile(t_logs(), 'access_log');
my $access = '';
wait_for(sub {
    $access = do { local (@ARGV, $/) = ($log); <> } // '';
    return $access =~ m{"GET /share/\[REDACTED\] HTTP/1\.1" 200 };
}, timeout => 10);
like($access, qr{"GET /share/\[REDACTED\] HTTP/1\.1" 200 }, 'access_log: the portal\'s page, masked');
like($access, qr{"POST /api/share/\[REDACTED\]/comments HTTP/1\.1" 201 },
     '... and its comment, masked');
is(index($access, $r->{share_token} // 'svc_shr_none'), -1, '... the share token nowhere in it');

done_testing();
