# The configuration the packages ship (issue 17): conf/svc.conf, as Debian
# installs it (mods-available/svc.conf) and as the RPM's spec rewrites it
# (conf.d/svc.conf, the log under httpd's logs/). Each runs in an httpd of
# its own with the test cluster's database and secret: the access log it
# ships has one line per answer of the module, with the X-Request-Id the
# client saw (it was shipped commented out), and the requests httpd refuses
# on the service's URLs come back as problem documents.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use File::Spec::Functions qw(catfile);
use File::Temp ();
use SvcTest;

plan skip_all => 'needs SVC_DB and SVC_SECRET (use tools/test.sh)'
    unless $ENV{SVC_DB} && $ENV{SVC_SECRET};

my $top = $ENV{SVC_TOP} // "$FindBin::Bin/../..";
sub slurp { my $f = shift; open my $fh, '<', $f or return ''; local $/; return <$fh> // '' }

my $shipped = slurp("$top/conf/svc.conf");
like($shipped, qr{^LogFormat "%h %l %u %t \\"%r\\" %>s %b \\"%\{User-agent\}i\\" %\{svc-route\}n %\{svc-user\}n %\{svc-org\}n %\{X-Request-Id\}o" svc$}m,
     'conf/svc.conf: the LogFormat with %{X-Request-Id}o, not commented out');
like($shipped, qr{^GlobalLog \$\{APACHE_LOG_DIR\}/svc_access\.log svc env=SVC_REQUEST_ID$}m,
     '... logged for every virtual host, one line per answer of the module');
like(slurp("$top/packaging/deb/libapache2-mod-svc.apache2"), qr{^mod conf/svc\.conf$}m,
     'the Debian package installs it as it is');

# The RPM's spec rewrites the log's path (APACHE_LOG_DIR is Debian's) and
# the vendored libraries' (its %install): the same sed, its -e expressions
# taken from the spec (one command, continued over lines).
my ($sedcmd) = slurp("$top/packaging/rpm/mod_svc.spec")
    =~ /^(sed (?:[^\n]*\\\n)*[^\n]*conf\/svc\.conf)/m;
my @sed = map { ('-e', $_) } ($sedcmd // '') =~ /-e '([^']+)'/g;
ok(@sed && grep({ /APACHE_LOG_DIR/ } @sed), 'the spec rewrites conf/svc.conf with sed')
    or diag($sedcmd // 'no sed ... conf/svc.conf in the spec');
my (undef, $rpm_conf) = SvcTest::run([ 'sed', @sed ? @sed : ('s/^//'), "$top/conf/svc.conf" ]);
like($rpm_conf, qr{^GlobalLog logs/svc_access_log svc env=SVC_REQUEST_ID$}m,
     '... into logs/svc_access_log under the RPM');
unlike($rpm_conf, qr/APACHE_LOG_DIR\}/, '... naming no Debian variable');

my $user = new_user('shipped');
my $tok  = new_token($user, scope => 'read');

# What the shipped file sets that this test server cannot use (the database
# and secret of a package's install, the run supervisor, sign-in without a
# public URL) is set again after it.
sub server_with {
    my ($conf_text, $logdir) = @_;
    my $f = catfile($logdir, 'svc.conf');
    open my $fh, '>', $f or die "$f: $!";
    print $fh $conf_text;
    close $fh;
    return scratch_httpd_start(
        "Include \"$f\"\nDBDParams \"$ENV{SVC_DB}\"\nSvcSecret $ENV{SVC_SECRET}\n"
        . "SvcRunSupervisor Off\nSvcVcsAppCredentials \"$logdir/vcs-app.env\"\n",
        env => { APACHE_LOG_DIR => $logdir, VCS_OAUTH_CLIENT_ID => undef,
                 VCS_OAUTH_CLIENT_SECRET => undef });
}

sub check_log {
    my ($h, $log, $name) = @_;
    my ($st, undef, $res) = api(GET => '/api/me', token => $tok, base => $h->{url});
    is($st, 200, "$name: GET /api/me");
    my $rid = $res->header('X-Request-Id') // '';
    like($rid, qr/^req_/, '... with its X-Request-Id');
    my ($s2, $ct, $body, $head) = raw_http('GET /api/orgs/a%2Fb HTTP/1.1', port => $h->{port});
    is($s2, 404, '... an encoded slash: 404');
    is($ct, 'application/problem+json', '... a problem document');
    my ($rid2) = $head =~ /^X-Request-Id:\s*(\S+)/mi;
    my ($s3) = raw_http('GET / HTTP/1.1', port => $h->{port});
    ok($s3, '... and a request that is not the module\'s');
    my $text = '';
    wait_for(sub { ($text = slurp($log)) =~ /\Q$rid\E/ && $text =~ /\Q$rid2\E/ }, timeout => 10);
    like($text, qr{"GET /api/me HTTP/1\.1" 200 \d+ "mod_svc-tests/1" /api/me usr_\w+ - \Q$rid\E$}m,
         "$log: the request line, status, route template, user, org and request id");
    like($text, qr{"GET /api/orgs/a%2Fb HTTP/1\.1" 404 \d+ "-" - - - \Q$rid2\E$}m,
         '... a refused request with its id too');
    unlike($text, qr{"GET / HTTP}, '... and nothing that is not the module\'s');
}

{
    my $dir = File::Temp::tempdir(CLEANUP => 1);
    my $h = server_with($shipped, $dir);
    check_log($h, "$dir/svc_access.log", 'Debian\'s svc.conf');
    scratch_httpd_stop($h);
}
{
    my $dir = File::Temp::tempdir(CLEANUP => 1);
    my $h = server_with($rpm_conf, $dir);
    check_log($h, "$h->{dir}/logs/svc_access_log", 'the RPM\'s svc.conf');
    scratch_httpd_stop($h);
}

done_testing();
