# `svcctl vcs-app check` (issue 12, the private key rotation of SPEC.md:
# "verify that signing an App JWT works"): it signs an App JWT with the key
# configured, and the fake provider checks it with the App's public key.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

plan skip_all => 'the fake code-hosting provider is not running (use tools/test.sh)'
    unless $ENV{VCS_WEB_URL} && $ENV{VCS_APP_KEY_FILE} && $ENV{SVCCTL};

sub slurp { open my $fh, '<', shift or die $!; local $/; return <$fh> }

# svcctl with the environment the module has, and the App's key as a
# variable (its PEM with \n escapes, as the wizard's file keeps it).
sub check {
    my ($env, @args) = @_;
    my %set = (VCS_APP_PRIVATE_KEY_PEM => slurp($ENV{VCS_APP_KEY_FILE}) =~ s/\n/\\n/gr,
               %{ $env // {} });
    local %ENV = %ENV;
    for my $k (keys %set) {
        if (defined $set{$k}) { $ENV{$k} = $set{$k} } else { delete $ENV{$k} }
    }
    my ($rc, $out, $err) = SvcTest::run([ $ENV{SVCCTL}, 'vcs-app', 'check', @args ]);
    return ($rc >> 8, $out . $err);
}

my ($rc, $out) = check();
is($rc, 0, 'vcs-app check with the App\'s key: exit 0');
like($out, qr/accepts App JWTs signed with this key: App $ENV{VCS_APP_ID} \(\Q$ENV{VCS_APP_SLUG}\E\)/,
     '... the provider knows the App');
is(vcs_app_state()->{last}{jwt}{ok}, 1, '... and verified the JWT with the App\'s public key');

my ($r2, $other) = SvcTest::run([ 'openssl', 'genrsa', '2048' ]);
($rc, $out) = check({ VCS_APP_PRIVATE_KEY_PEM => $other });
is($rc, 1, 'with another key: it fails');
like($out, qr/did not accept the App JWT: GET \/app answered HTTP 401/, '... the provider refused it');
unlike($out, qr/BEGIN|PRIVATE/, '... and no key is printed');

($rc, $out) = check({ VCS_APP_PRIVATE_KEY_PEM => undef });
is($rc, 1, 'without a key: it fails');
like($out, qr/not configured: missing VCS_APP_PRIVATE_KEY_PEM/, '... naming the missing key');

# The key in a credentials file, as the setup wizard writes it.
{
    my $dir = "$ENV{SVC_TEST_VAR}/svcctl-check";
    mkdir $dir;
    my $file = "$dir/vcs-app.env";
    open my $fh, '>', $file or die "$file: $!";
    print $fh 'VCS_APP_PRIVATE_KEY_PEM="' . (slurp($ENV{VCS_APP_KEY_FILE}) =~ s/\n/\\n/gr) . "\"\n";
    close $fh;
    chmod 0600, $file;
    ($rc, $out) = check({ VCS_APP_PRIVATE_KEY_PEM => undef }, '--credentials', $file);
    is($rc, 0, 'the key from --credentials FILE: exit 0');
    chmod 0644, $file;
    ($rc, $out) = check({ VCS_APP_PRIVATE_KEY_PEM => undef }, '--credentials', $file);
    is($rc, 1, 'a credentials file others may read: refused');
    like($out, qr/readable or writable by group or others/, '... saying why');
    unlink $file;
}

done_testing();
