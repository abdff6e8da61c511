# The web UI end to end (issue 26), in a real headless Chromium (Debian's
# chromium, driven by playwright-core from t/ui/package-lock.json; nothing
# is downloaded) against this server and its PostgreSQL, with the fake
# code-hosting provider for sign-in and the fake model provider for a run:
# t/ui/e2e.mjs signs in, switches orgs, creates a project, starts a run and
# sees its log live, downloads its artifact, creates a token (shown once,
# copied) and revokes it, checks that names and log lines holding markup
# run nothing, runs axe-core on every page, at 1280 and 375 px, and signs
# out. Each of its checks is one assertion here.
#
# Without chromium this skips, saying so, unless it runs in CI (CI set):
# there tools/deps.sh installs it, and its absence is a failure.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;
use SvcUI;

SvcUI::chromium_or_skip();

# --- the data: a user the fake provider signs in, their orgs, a provider -----------
my $email = new_user('ui', name => 'Uma Interface', allow_email_link => 1);
my $org   = new_org($email, prefix => 'ui', name => 'UI Works');
my $xss   = new_org($email, prefix => 'ui-xss', name => '<img src=x onerror=alert(1)>');
my $tok   = new_token($email, scope => 'admin');
my $llm   = new_llm(flavor => 'openai');
new_provider($org, $tok, $llm);
# The agent prints a script tag (written so that its command line is not
# the same text), then sleeps: the page shows the line while the run runs.
$llm->control(replies => [
    { tool_calls => [ { name => 'run', arguments => {
        command => q{echo "<scr""ipt>window.__svcPwned=1</script>"; sleep 12} } } ] },
    { tool_calls => [ { name => 'finish', arguments => { summary => 'Print the line' } } ] },
]);
SvcTest::vcs_reset();
SvcTest::new_vcs_user('uma', email => $email, name => 'Uma Interface');

# --- the browser -------------------------------------------------------------------------
my $r = SvcUI::run_walk('e2e.mjs', min_checks => 60,
                        env => { SVC_UI_ORG => $org, SVC_UI_XSS_ORG => $xss });

# What the browser saw, checked from outside.
record_secret($r->{token}) if $r->{token};
SvcTest::vcs_state();       # records what the fake provider issued: never in a log
ok($r->{token}, 'the browser read a token secret');
my ($st) = api(GET => '/api/me', token => $r->{token} // 'svc_pat_none');
is($st, 401, 'the token revoked in the browser is refused');
is(psql_value("SELECT count(*) FROM projects p JOIN orgs o ON o.id = p.org_id "
              . "WHERE o.slug = '$org' AND p.slug = 'web' AND p.name = '<img src=x onerror=alert(1)>'"),
   1, 'the project made in the browser is stored with its name as typed');
is(psql_value("SELECT status FROM runs WHERE id = '" . ($r->{run_id} // '') =~ s/'//gr . "'"),
   'succeeded', 'the run started in the browser succeeded');

done_testing();
