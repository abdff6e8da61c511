# The code-hosting App's configuration (issue 12): the service starts
# without its six keys, logs vcs_app_not_configured once at start naming the
# missing keys (never a value), and answers 503 vcs_app_not_configured on
# every App route; a private key that does not parse is the same condition,
# logged as such. Sign-in and personal access tokens work meanwhile.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

plan skip_all => 'the fake code-hosting provider is not running (use tools/test.sh)'
    unless $ENV{VCS_WEB_URL} && $ENV{VCS_APP_ID};

my %base = (off => vcs_base('vcs_app_off'), badkey => vcs_base('vcs_app_badkey'),
            on => base_url());

my $owner = new_user('cfg-owner');
my $org = new_org($owner);
my $tok = new_token($owner, scope => 'admin');
my $proj = uniq('p');
my ($st) = api(POST => "/api/orgs/$org/projects", token => $tok,
               json => { slug => $proj, name => 'Config project' });
is($st, 201, 'a project');
my $founder = new_user('cfg-founder', founder => 1);
my $ftok = new_token($founder, scope => 'admin');
my $fsession = new_session($founder);

# Every App route of the route table, called as someone it lets in.
my @app_routes = grep { $_->{path} =~ m{/vcs\b|/vcs-app/|/repository\z} } route_table();
ok(@app_routes >= 14, scalar(@app_routes) . ' App routes in the route table');

sub request_for {
    my ($r) = @_;
    (my $path = $r->{path}) =~ s{:orgSlug}{$org};
    $path =~ s{:projectSlug}{$proj};
    $path =~ s{:id}{4242};
    $path =~ s{:deliveryId}{d-1};
    my @auth = $r->{founder} ? (token => $ftok) : (token => $tok);
    my %body = (
        linkProjectRepository => { installation_id => 4242, full_name => 'octo/api' },
        createVcsRepository   => { name => 'new-repo', installation_id => 4242 },
    );
    $path .= '?state=x&installation_id=4242&setup_action=install'
        if $r->{op_id} eq 'vcsInstallCallback';
    return ($path, @auth, $body{ $r->{op_id} } ? (json => $body{ $r->{op_id} }) : ());
}

for my $which (qw(off badkey)) {
    for my $r (@app_routes) {
        next if $r->{op_id} eq 'vcsAppSetup';
        my ($status, $p);
        if ($r->{auth} eq 'webhook') {
            ($status, $p) = vcs_webhook('ping', { zen => 'Keep it logically awesome.' },
                                        base => $base{$which});
        }
        else {
            my ($path, @rest) = request_for($r);
            my $res = do {
                my $req = HTTP::Request->new($r->{method} => $base{$which} . $path);
                my %o = @rest;
                $req->header(Authorization => "Bearer $o{token}");
                if ($o{json}) {
                    $req->header('Content-Type' => 'application/json');
                    $req->content(json()->encode($o{json}));
                }
                LWP::UserAgent->new(max_redirect => 0)->request($req);
            };
            $status = $res->code;
            $p = eval { json()->decode($res->content) };
        }
        is($status, 503, "$which: $r->{method} $r->{path} is 503");
        is($p && $p->{code}, 'vcs_app_not_configured', '... vcs_app_not_configured');
    }
}

# The wizard is how the App gets configured: it works while the App is off,
# and says the App exists where the id is known (the bad key's server).
{
    my $ua = LWP::UserAgent->new(max_redirect => 0);
    my $res = $ua->get("$base{off}/admin/vcs-app/setup", Cookie => "service_session=$fsession");
    is($res->code, 200, 'off: the setup wizard answers');
    like($res->content, qr{<form method="post" action="\Q$ENV{VCS_WEB_URL}\E/settings/apps/new\?state=},
         '... with the manifest form');
    $res = $ua->get("$base{badkey}/admin/vcs-app/setup", Cookie => "service_session=$fsession");
    is($res->code, 200, 'bad key: the setup wizard answers');
    like($res->content, qr/App with id $ENV{VCS_APP_ID}, but it is off: .*usable private key/,
         '... that the App exists, and why it is off');
    unlike($res->content, qr/<form/, '... and offers nothing else');
}

# Where the keys are all there, the routes answer.
($st) = api(GET => "/api/orgs/$org/vcs/installations", token => $tok);
is($st, 200, 'on: the App routes answer');

# --- the start-up log ------------------------------------------------------
{
    open my $fh, '<', error_log_path() or die "error_log: $!";
    my ($starts, $off, $bad, $other) = (0, 0, 0, 0);
    my @values = map { $ENV{$_} } qw(VCS_APP_ID VCS_APP_SLUG VCS_APP_CLIENT_ID
                                      VCS_APP_CLIENT_SECRET VCS_APP_WEBHOOK_SECRET);
    my $leak = 0;
    while (my $line = <$fh>) {
        $starts++ if $line =~ /AH00489:/;
        next unless $line =~ /SVC0040: vcs_app_not_configured/;
        $leak++ if grep { index($line, $_) >= 0 } @values;
        if ($line =~ /\[svc:warn\]/
            && $line =~ /missing SVC_TEST_UNSET_APP_ID, SVC_TEST_UNSET_APP_SLUG, SVC_TEST_UNSET_APP_CLIENT_ID, SVC_TEST_UNSET_APP_CLIENT_SECRET, SVC_TEST_UNSET_APP_WEBHOOK_SECRET, SVC_TEST_UNSET_APP_PRIVATE_KEY_PEM\b/) {
            $off++;
        }
        elsif ($line =~ /VCS_APP_PRIVATE_KEY_PEM \(SvcVcsAppPrivateKey\) does not hold a usable private key/) {
            $bad++;
        }
        else {
            $other++;
        }
    }
    ok($starts >= 1, 'the server started');
    is($off, $starts, 'off: vcs_app_not_configured once per start, naming the six missing keys');
    is($bad, $starts, 'bad key: vcs_app_not_configured once per start, saying the key is unusable');
    is($other, 0, '... and nothing for the server where the App is on');
    is($leak, 0, 'no value of a key is in those lines');
}

# --- sign-in and tokens work where the App is off --------------------------
{
    my ($status, $me) = (0);
    my $res = LWP::UserAgent->new->get("$base{off}/api/me", Authorization => "Bearer $tok");
    is($res->code, 200, 'off: personal access tokens work');
    new_vcs_user('cfg-signin');
    my $si = sign_in(browser(), base => $base{off});
    is($si->{callback} && $si->{callback}->code, 302, 'off: sign-in works');
    ok($si->{session}, '... and opens a session');
}

done_testing();
