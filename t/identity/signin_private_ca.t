# SvcVcsCAFile: a code-hosting provider behind a private certificate
# authority (GitHub Enterprise Server, often) is reachable by naming the CA
# bundle; without it the provider's certificate is refused. tools/test.sh
# makes the CA and starts a second fake provider over HTTPS with a
# certificate it signed; two virtual hosts of t/conf/extra.conf.in point at
# it, one with SvcVcsCAFile and one without.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use LWP::UserAgent ();
use HTTP::Request ();
use SvcTest;

plan skip_all => 'the HTTPS fake provider is not running (use tools/test.sh)'
    unless $ENV{VCS_TLS_WEB_URL} && $ENV{SVC_TEST_CA_FILE};

my $TLS = $ENV{VCS_TLS_WEB_URL};
my $CA = $ENV{SVC_TEST_CA_FILE};
record_secret($ENV{VCS_OAUTH_CLIENT_SECRET});

# A browser that trusts the test CA, as a user's browser would trust the
# enterprise's.
sub tls_browser {
    my $ua = browser();
    $ua->ssl_opts(SSL_ca_file => $CA, verify_hostname => 1);
    return $ua;
}

# The HTTPS fake's control endpoint (its state is its own).
sub tls_control {
    my ($method, $data) = @_;
    my $req = HTTP::Request->new($method => "$TLS/_control");
    if ($data) {
        $req->header('Content-Type' => 'application/json');
        $req->content(json()->encode($data));
    }
    my $res = tls_browser()->request($req);
    die "HTTPS fake: " . $res->status_line . "\n" unless $res->is_success;
    my $state = json()->decode($res->content);
    record_secret(@{ $state->{issued} // [] });
    return $state;
}

my $login = SvcTest::uniq('ghes');
tls_control(POST => { mode => 'ok', user => {
    id => 2_000_000 + int(rand(1e9)), login => $login, name => 'GHES User',
    emails => [ { email => "$login\@example.test", primary => JSON::PP::true(),
                  verified => JSON::PP::true(), visibility => 'private' } ] } });

# --- with SvcVcsCAFile --------------------------------------------------------------
{
    my $base = 'http://127.0.0.1:' . Apache::Test::vars('vcs_private_ca_port');
    my $ua = tls_browser();
    my $si = sign_in($ua, base => $base);
    is($si->{login}->code, 302, 'private CA: /auth/login redirects');
    like($si->{login}->header('Location') // '', qr{^\Q$TLS\E/login/oauth/authorize\?},
         '... to the provider behind the private CA');
    is($si->{authorize} && $si->{authorize}->code, 302, '... which sends the browser back');
    is($si->{callback} && $si->{callback}->code, 302,
       '... and the callback, which calls the provider over HTTPS, signs in')
        or diag($si->{callback} ? $si->{callback}->content : 'no callback');
    ok($si->{session}, '... with a session cookie');
    my $me = LWP::UserAgent->new->get("$base/api/me",
                                      Cookie => "service_session=" . ($si->{session} // ''));
    is($me->code, 200, '... that works');
    like($me->content, qr/\Q$login\E\@example\.test/, '... for the provider\'s user');
    my $state = tls_control('GET');
    ok($state->{last}{token} && $state->{last}{emails},
       '... and the token exchange and email lookup went to the HTTPS provider');
}

# --- without it ---------------------------------------------------------------------
{
    my $base = 'http://127.0.0.1:' . Apache::Test::vars('vcs_untrusted_ca_port');
    my $ua = tls_browser();
    my $si = sign_in($ua, base => $base);
    is($si->{authorize} && $si->{authorize}->code, 302,
       'untrusted CA: the browser (which trusts it) gets a code');
    my $cb = $si->{callback};
    is($cb && $cb->code, 502, '... but the service refuses the provider\'s certificate: 502');
    like($cb ? $cb->content : '', qr/"code":"provider_unreachable"/, '... provider_unreachable');
    ok(!grep({ /^service_session=[^;]/ } $cb ? $cb->header('Set-Cookie') : ()),
       '... and no session');
    open my $fh, '<', error_log_path() or die "error_log: $!";
    my $why = grep { /SVC0022: signInCallback answered 502/ && /certif|SSL|TLS/i } <$fh>;
    ok($why, '... the error log says the certificate was not trusted');
}

done_testing();
