# Sign-in configuration at start-up (issue 4), each case in an httpd of its
# own (a throwaway ServerRoot, the same modules as the test server): an
# env: reference to an unset variable turns sign-in off and httpd starts;
# an inline secret, a malformed URL, or a reference that is set but unusable
# stops httpd with a clear message.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use File::Spec::Functions qw(catfile);
use POSIX ();
use Time::HiRes qw(time sleep);
use SvcTest;

my $cfg = Apache::Test::config();
my $httpd = $ENV{SVC_TEST_HTTPD} // $cfg->{vars}{httpd};
my $modules = catfile($FindBin::Bin, "..", "conf", "modules.conf");
plan skip_all => 'needs the generated t/conf/modules.conf and SVC_DB'
    unless $httpd && -f $modules && $ENV{SVC_DB} && $ENV{SVC_SECRET};

sub slurp { my $f = shift; open my $fh, '<', $f or return ''; local $/; return <$fh> // '' }

# Starts httpd in the foreground with extra environment; returns (exit
# status or 'running', error_log text). A server that runs is stopped.
sub start {
    my ($directives, %env) = @_;
    my ($dir, $conf) = scratch_httpd_conf($directives);
    my $pid = fork() // die "fork: $!";
    if (!$pid) {
        $ENV{$_} = $env{$_} for keys %env;
        open STDOUT, '>', "$dir/stdout";
        open STDERR, '>', "$dir/stderr";
        exec $httpd, '-f', $conf, '-DFOREGROUND' or POSIX::_exit(127);
    }
    my $deadline = time + 20;
    my $status;
    while (time < $deadline) {
        if (waitpid($pid, POSIX::WNOHANG()) == $pid) {
            $status = $? >> 8;
            last;
        }
        if (-s "$dir/httpd.pid" && slurp("$dir/error_log") =~ /AH00489:/) {
            $status = 'running';
            kill 'TERM', $pid;
            waitpid($pid, 0);
            last;
        }
        sleep 0.1;
    }
    if (!defined $status) {
        kill 'KILL', $pid;
        waitpid($pid, 0);
        $status = 'hung';
    }
    return ($status, slurp("$dir/error_log") . slurp("$dir/stderr"));
}

# --- refused while reading the configuration -----------------------------------
{
    my ($rc, $out) = httpd_config_test("SvcOAuthClientSecret the-secret-itself");
    isnt($rc, 0, 'an inline client secret: the configuration is refused');
    like($out, qr/SvcOAuthClientSecret takes a reference/, '... saying it must be a reference');
    unlike($out, qr/the-secret-itself/, '... without echoing it');

    ($rc, $out) = httpd_config_test("SvcVcsWebURL ftp://github.example.com");
    isnt($rc, 0, 'a provider URL that is not http(s): refused');
    like($out, qr/SvcVcsWebURL must be an http/, '... with the reason');

    ($rc, $out) = httpd_config_test("SvcUIURL //evil.example/");
    isnt($rc, 0, 'a protocol-relative SvcUIURL: refused');

    ($rc, $out) = httpd_config_test("SvcVcsTimeout 0");
    isnt($rc, 0, 'SvcVcsTimeout 0: refused');

    ($rc, $out) = httpd_config_test("SvcPublicURL ftp://svc.example.test");
    isnt($rc, 0, 'an SvcPublicURL that is not http(s): refused');
    ($rc, $out) = httpd_config_test("SvcPublicURL https://svc.example.test/?x=1");
    isnt($rc, 0, 'an SvcPublicURL with a query: refused');
    like($out, qr/SvcPublicURL must not have a query/, '... with the reason');

    ($rc, $out) = httpd_config_test("SvcOAuthClientId env:X\nSvcOAuthClientSecret env:Y\n"
                              . "SvcVcsWebURL https://ghe.example.com\nSvcUIURL https://ui.example.com/#/\n"
                              . "SvcVcsTimeout 5");
    is($rc, 0, 'a complete sign-in configuration passes the syntax check') or diag($out);
}

# --- at start: unset means off, set but unusable stops httpd ------------------------
{
    my $refs = "SvcOAuthClientId env:SVC_T_CLIENT_ID\nSvcOAuthClientSecret env:SVC_T_CLIENT_SECRET\n"
             . "SvcVcsWebURL env:SVC_T_WEB_URL\nSvcVcsApiURL env:SVC_T_API_URL";
    my ($status, $log) = start($refs);
    is($status, 'running', 'variables unset: httpd starts');
    my @warn = $log =~ /(SVC0020: sign-in is off[^\n]*)/g;
    is(scalar @warn, 1, '... and says once that sign-in is off');
    like($warn[0] // '', qr/SVC_T_CLIENT_ID.*SVC_T_CLIENT_SECRET/, '... naming both variables');
    like($log, qr/\[svc:warn\][^\n]*SVC0020/, '... at warning level');

    # Sign-in on needs the public URL (issue 14, a decision): otherwise the
    # callback URL and the origin trusted for cookie-authenticated changes
    # would come from each request's Host header.
    ($status, $log) = start($refs, SVC_T_CLIENT_ID => 'Iv1.x', SVC_T_CLIENT_SECRET => 's3cret');
    isnt($status, 'running', 'variables set, no public URL: httpd does not start');
    like($log, qr/\[svc:crit\][^\n]*SVC0023: sign-in is configured/, '... and says so (crit)');
    like($log, qr/SVC0023:[^\n]*Set SvcPublicURL[^\n]*UseCanonicalName On/,
         '... naming what to set');

    ($status, $log) = start("$refs\nSvcPublicURL https://svc.example.test/",
                            SVC_T_CLIENT_ID => 'Iv1.x', SVC_T_CLIENT_SECRET => 's3cret');
    is($status, 'running', 'variables set, SvcPublicURL: httpd starts');
    unlike($log, qr/SVC0020|SVC0023/, '... with sign-in on');

    ($status, $log) = start("$refs\nServerName https://svc.example.test\nUseCanonicalName On",
                            SVC_T_CLIENT_ID => 'Iv1.x', SVC_T_CLIENT_SECRET => 's3cret');
    is($status, 'running', 'variables set, ServerName with UseCanonicalName On: httpd starts');
    unlike($log, qr/SVC0023/, '... with sign-in on');

    ($status, $log) = start("$refs\nUseCanonicalName On\n<VirtualHost 127.0.0.2:80>\n"
                            . "UseCanonicalName Off\n</VirtualHost>",
                            SVC_T_CLIENT_ID => 'Iv1.x', SVC_T_CLIENT_SECRET => 's3cret');
    isnt($status, 'running', 'a virtual host with sign-in but no public URL: httpd does not start');
    like($log, qr/SVC0023/, '... and says so');

    ($status, $log) = start($refs, SVC_T_CLIENT_ID => 'Iv1.x', SVC_T_CLIENT_SECRET => 's3cret',
                            SVC_T_WEB_URL => 'not a url');
    isnt($status, 'running', 'a set but malformed VCS web URL: httpd does not start');
    like($log, qr/SVC0021: sign-in: SvcVcsWebURL must be an http/, '... and says why');

    ($status, $log) = start("SvcOAuthClientId Iv1.x\nSvcOAuthClientSecret file:/nonexistent/svc-oauth-secret");
    isnt($status, 'running', 'a secret file that cannot be read: httpd does not start');
    like($log, qr{SVC0021: sign-in: SvcOAuthClientSecret: cannot read secret file /nonexistent/svc-oauth-secret},
         '... and says which');
    unlike($log, qr/s3cret/, 'no secret in any of these logs');
}

done_testing();
