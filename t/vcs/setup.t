# The code-hosting App's setup wizard, /admin/vcs-app/setup (issue 12), end
# to end against the fake provider, on the server where the App is off: who
# may use it, the page and its manifest, the provider's return with a code
# and the state (bound to the founder's session, once, ten minutes), the
# credentials file it writes (0600, six keys, a key that loads), and how it
# gates itself once there is an App.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use HTTP::Request::Common qw(POST);
use URI ();
use SvcTest;

plan skip_all => 'the fake code-hosting provider is not running (use tools/test.sh)'
    unless $ENV{VCS_WEB_URL} && $ENV{SVC_TEST_VAR};

my $WEB = $ENV{VCS_WEB_URL};
my $off = vcs_base('vcs_app_off');
my $file = "$ENV{SVC_TEST_VAR}/vcs-app.env";
my $ua = LWP::UserAgent->new(max_redirect => 0, timeout => 30);

sub page {
    my ($url, %auth) = @_;
    my @h;
    push @h, Cookie => "service_session=$auth{cookie}" if $auth{cookie};
    push @h, Authorization => "Bearer $auth{token}" if $auth{token};
    return $ua->get($url, @h);
}

sub code_of { my $res = shift; my $p = eval { json()->decode($res->content) }; return $res->code . ' ' . ($p->{code} // '') }

sub unhtml {
    my $s = shift;
    $s =~ s/&quot;/"/g; $s =~ s/&lt;/</g; $s =~ s/&gt;/>/g; $s =~ s/&#39;/'/g; $s =~ s/&amp;/&/g;
    return $s;
}

# The form on a wizard page: (action, manifest).
sub form_of {
    my $html = shift;
    my ($action) = $html =~ /<form method="post" action="([^"]+)">/;
    my ($manifest) = $html =~ /<input type="hidden" name="manifest" value="([^"]*)">/;
    return (defined $action ? unhtml($action) : undef, defined $manifest ? unhtml($manifest) : undef);
}

# Submits the form at the provider (which confirms at once): the return URL.
sub create_at_provider {
    my ($action, $manifest) = @_;
    my $res = $ua->request(POST $action, [ manifest => $manifest ]);
    return $res->code == 302 ? $res->header('Location') : undef;
}

my $founder = new_user('su-founder', founder => 1);
my $session = new_session($founder);
ok(!-e $file, 'no credentials file yet');

# --- who may use it -------------------------------------------------------------
{
    is(page("$off/admin/vcs-app/setup")->code, 401, 'no credentials: 401');
    my $other = new_user('su-plain');
    is(code_of(page("$off/admin/vcs-app/setup", cookie => new_session($other))), '403 forbidden',
       'a signed-in user who is no founder: 403');
    is(code_of(page("$off/admin/vcs-app/setup", token => new_token($founder, scope => 'admin'))),
       '403 session_required', 'the founder with a token: 403 session_required');
}

# --- the page -----------------------------------------------------------------------
my ($action, $manifest);
{
    my $res = page("$off/admin/vcs-app/setup", cookie => $session);
    is($res->code, 200, 'the founder\'s session: 200');
    like($res->header('Content-Type') // '', qr{^text/html; charset=utf-8}, '... a page');
    is($res->header('Content-Security-Policy'),
       "default-src 'none'; form-action 'self' $WEB; base-uri 'none'; frame-ancestors 'none'",
       '... no script, style or frame; forms only here and to the provider');
    unlike($res->content, qr/<script|<style|\son\w+=/i, '... and none in it');
    ($action, $manifest) = form_of($res->content);
    like($action // '', qr{^\Q$WEB\E/settings/apps/new\?state=[A-Za-z0-9]{43}\z},
         '... a form that posts to the provider\'s new-App page with a state');
    my $m = eval { json()->decode($manifest // '') } // {};
    is_deeply($m, {
        name => 'mod_svc', url => $off,
        hook_attributes => { url => "$off/webhooks/vcs", active => JSON::PP::true() },
        redirect_url => "$off/admin/vcs-app/setup",
        callback_urls => [ "$off/auth/vcs-app/callback" ],
        setup_url => "$off/auth/vcs-app/callback", setup_on_update => JSON::PP::true(),
        request_oauth_on_install => JSON::PP::true(),
        public => JSON::PP::false(),
        default_permissions => { contents => 'read', metadata => 'read' },
        default_events => [ 'installation', 'installation_repositories' ],
    }, '... the manifest: webhook, callback, redirect back here, OAuth on install (the '
       . 'callback\'s proof of who installed), private, the permissions and events');
    my ($state) = ($action // '') =~ /state=(\w+)/;
    record_secret($state);

    $res = page("$off/admin/vcs-app/setup?org=acme-corp&name=" . URI::Escape::uri_escape("Tom's App"),
                cookie => $session);
    my ($org_action, $org_manifest) = form_of($res->content);
    like($org_action // '', qr{^\Q$WEB\E/organizations/acme-corp/settings/apps/new\?state=\w{43}\z},
         'with ?org=: the organization\'s new-App page');
    is(eval { json()->decode($org_manifest)->{name} }, "Tom's App", '... the name as given');
    like($res->content, qr/value="Tom&#39;s App"/, '... escaped in the page');
    is(code_of(page("$off/admin/vcs-app/setup?org=no/such", cookie => $session)),
       '400 validation_failed', 'an org that is no login: 400');
    is(code_of(page("$off/admin/vcs-app/setup?name=%3Cb%3E", cookie => $session)),
       '400 validation_failed', 'a name with markup: 400');
}

# --- the provider's return: the state ---------------------------------------------------
{
    my $back = create_at_provider($action, $manifest);
    like($back // '', qr{^\Q$off\E/admin/vcs-app/setup\?code=\w+&state=\w+\z},
         'the provider sends the founder back with a code and the state');
    my $fake = vcs_app_state()->{last}{manifest};
    is($fake->{content_type}, 'application/x-www-form-urlencoded', '... it got the form');
    is_deeply($fake->{manifest}, json()->decode($manifest), '... with the manifest');

    # The same founder in another session: the state is bound to the session.
    is(code_of(page($back, cookie => new_session($founder))), '400 invalid_state',
       'the return in another session: 400 invalid_state');
    is(code_of(page($back, cookie => $session)), '400 invalid_state',
       '... and the state is used up');
    (my $forged = $back) =~ s/state=\w+/state=Forged0Forged0Forged0Forged0Forged0Forged0F/;
    is(code_of(page($forged, cookie => $session)), '400 invalid_state', 'a forged state: 400');
    ok(!-e $file, 'nothing written');

    # A code the provider refuses, then a state whose ten minutes are over.
    my $res = page("$off/admin/vcs-app/setup", cookie => $session);
    my ($a2) = form_of($res->content);
    my ($s2) = $a2 =~ /state=(\w+)/;
    record_secret($s2);
    is(code_of(page("$off/admin/vcs-app/setup?code=unknowncode&state=$s2", cookie => $session)),
       '400 code_rejected', 'a code the provider does not know: 400 code_rejected');
    is(code_of(page("$off/admin/vcs-app/setup?code=unknowncode&state=$s2", cookie => $session)),
       '400 invalid_state', '... its state is used up');
    $res = page("$off/admin/vcs-app/setup", cookie => $session);
    my ($a3, $m3) = form_of($res->content);
    my $back3 = create_at_provider($a3, $m3);
    psql("UPDATE vcs_states SET created_at = now() - interval '11 minutes',"
         . " expires_at = now() - interval '1 minute' WHERE purpose = 'manifest'");
    is(code_of(page($back3, cookie => $session)), '400 invalid_state', 'an expired state: 400');
    ok(!-e $file, 'nothing written');
}

# --- the whole way ------------------------------------------------------------------
{
    my $res = page("$off/admin/vcs-app/setup", cookie => $session);
    my $back = create_at_provider(form_of($res->content));
    $res = page($back, cookie => $session);
    is($res->code, 200, 'the return with the state of this session: 200');
    my $id = vcs_app_state()->{last}{conversion}{id};
    like($res->content, qr/\(id $id\) was created/, '... the App was created');
    like($res->content, qr/Restart httpd/, '... restart httpd, it says');
    vcs_state();        # records the App's keys the fake issued
    ok(-f $file, 'the credentials file is written');
    is((stat $file)[2] & 07777, 0600, '... mode 0600');
    open my $fh, '<', $file or die "$file: $!";
    my %kv;
    while (<$fh>) {
        next if /^#/;
        my ($k, $v) = /^(\w+)="(.*)"$/ or next;
        $kv{$k} = $v;
    }
    close $fh;
    is_deeply([ sort keys %kv ], [ sort qw(VCS_APP_ID VCS_APP_SLUG VCS_APP_CLIENT_ID
              VCS_APP_CLIENT_SECRET VCS_APP_WEBHOOK_SECRET VCS_APP_PRIVATE_KEY_PEM) ],
              '... the six keys');
    is($kv{VCS_APP_ID}, $id, '... the App\'s id');
    (my $pem = $kv{VCS_APP_PRIVATE_KEY_PEM} // '') =~ s/\\n/\n/g;
    like($pem, qr/\A-----BEGIN (RSA )?PRIVATE KEY-----\n/, '... the key, one line, newlines escaped');
    my ($rc, $out) = SvcTest::run([ 'openssl', 'rsa', '-check', '-noout' ], $pem);
    is($rc, 0, '... which is a good RSA key');
    ($rc, $out) = SvcTest::run([ 'sh', '-c', '. "$1"; printf %s "$VCS_APP_SLUG"', 'sh', $file ]);
    is($out, $kv{VCS_APP_SLUG}, '... and a file sh can read');
    my $audit = psql_value("SELECT data::text FROM audit_log WHERE action = "
                           . "'vcs.app.credentials_written' AND target_id = '$id'");
    ok($audit, 'audit: vcs.app.credentials_written');
    ok(!grep({ index($audit // '', $kv{$_} // 'none') >= 0 }
             qw(VCS_APP_CLIENT_SECRET VCS_APP_WEBHOOK_SECRET)), '... without a secret');

    # The wizard is done: it says so and offers nothing else.
    $res = page("$off/admin/vcs-app/setup", cookie => $session);
    like($res->content, qr/The keys of the App with id $id are in/, 'afterwards: the keys are written');
    unlike($res->content, qr/<form/, '... and no form');
    is(code_of(page($back, cookie => $session)), '200 ', '... whatever the query');
    my $before = -M $file;
    is(-M $file, $before, '... and the file is not written again');
}

# --- where the App is configured ---------------------------------------------------
{
    my $res = page(base_url() . '/admin/vcs-app/setup', cookie => $session);
    is($res->code, 200, 'the server with an App: 200');
    like($res->content, qr/uses the App with id $ENV{VCS_APP_ID}\. Nothing is left to set up/,
         '... which says so');
    unlike($res->content, qr/<form/, '... and offers nothing else');
}

done_testing();
