# Every Svc* directive, checked while httpd reads its configuration
# (httpd -t, so only the directive handlers run): each bad value stops
# httpd with the directive's name and words that say what kind of value it
# takes (a whole number, seconds, milliseconds, bytes, a size, a rate
# class, a reference, a path...), and a configuration with every directive
# at a good value passes. Issue 17: an unknown rate class
# (SvcRateLimit tokenz 5 60) used to pass and be ignored, and
# SvcRunConcurrency 0 was refused as "a size ... bytes"; issue 18: counts
# and seconds took K/M/G suffixes, and SvcStatementTimeout (milliseconds)
# was checked as seconds.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

plan skip_all => 'needs SVC_DB and SVC_SECRET (use tools/test.sh)'
    unless $ENV{SVC_DB} && $ENV{SVC_SECRET};

# [ directives, what is wrong, the words the refusal must carry ]
my @bad = (
    # Names httpd does not know at all.
    [ 'SvcRunConcurency 2', 'a misspelt directive', qr/Invalid command 'SvcRunConcurency'/ ],

    [ 'SvcSecret 0123456789abcdef0123456789abcdef', 'an inline secret',
      qr/SvcSecret takes a reference/ ],
    [ 'SvcSecret envNAME', 'not a reference', qr/SvcSecret takes a reference/ ],

    [ 'SvcBodyLimit 0', 'zero', qr/SvcBodyLimit must be a number of bytes from 1 to 67108864/ ],
    [ 'SvcBodyLimit 64M', 'a suffix', qr/SvcBodyLimit must be a number of bytes/ ],
    [ 'SvcBodyLimit 67108865', 'over 64 MiB', qr/SvcBodyLimit must be a number of bytes/ ],
    [ 'SvcDocumentLimit 0', 'zero', qr/SvcDocumentLimit must be a number of bytes from 1 to 8388608/ ],
    [ 'SvcDocumentLimit 8388609', 'over 8 MiB', qr/SvcDocumentLimit must be a number of bytes/ ],

    [ 'SvcRateLimit tokenz 5 60', 'an unknown class',
      qr/SvcRateLimit: there is no rate class tokenz \(the classes are [a-z_, ]*tokens/ ],
    [ 'SvcRateLimit Tokens 5 60', 'a class in the wrong case', qr/no rate class Tokens/ ],
    [ 'SvcRateLimit tokens -1 60', 'a negative count',
      qr/SvcRateLimit COUNT must be a whole number from 0 \(unlimited\) to 1000000/ ],
    [ 'SvcRateLimit tokens 5k 60', 'a suffix on the count', qr/SvcRateLimit COUNT must be a whole number/ ],
    [ 'SvcRateLimit tokens 5 0', 'a period of zero',
      qr/SvcRateLimit SECONDS must be a number of seconds from 1 to 86400/ ],
    [ 'SvcRateLimit tokens 5 1m', 'a suffix on the period', qr/SvcRateLimit SECONDS must be a number of seconds/ ],

    [ 'SvcInternalAllow 10.0.0.300', 'not an address', qr/SvcInternalAllow: 10\.0\.0\.300 is not an address/ ],
    [ 'SvcInternalAllow 10.0.0.0/33', 'a mask too wide', qr/SvcInternalAllow: 10\.0\.0\.0\/33 is not/ ],

    (map { ([ "$_ 0", 'zero', qr/$_ must be a number of seconds from 1 to 31536000/ ],
            [ "$_ 1d", 'a suffix', qr/$_ must be a number of seconds/ ],
            [ "$_ 31536001", 'over a year', qr/$_ must be a number of seconds/ ]) }
     qw(SvcTokenTouchInterval SvcSessionLifetime SvcInviteLifetime)),

    [ 'SvcModelTimeout 0', 'zero', qr/SvcModelTimeout must be a number of seconds from 1 to 3600/ ],
    [ 'SvcModelTimeout 3601', 'over an hour', qr/SvcModelTimeout must be a number of seconds/ ],
    [ 'SvcVcsTimeout 301', 'over five minutes', qr/SvcVcsTimeout must be a number of seconds from 1 to 300/ ],

    [ 'SvcStatementTimeout 0', 'zero',
      qr/SvcStatementTimeout must be a number of milliseconds from 1 to 3600000/ ],
    [ 'SvcStatementTimeout 3600001', 'over an hour of milliseconds',
      qr/SvcStatementTimeout must be a number of milliseconds/ ],
    [ 'SvcStatementTimeout 10s', 'a unit', qr/SvcStatementTimeout must be a number of milliseconds/ ],

    [ 'SvcStreamLimit -1', 'negative', qr/SvcStreamLimit must be a whole number from 0 to 1000000/ ],
    [ 'SvcStreamLimit 1K', 'a suffix', qr/SvcStreamLimit must be a whole number/ ],
    [ "<VirtualHost 127.0.0.1:8>\nSvcStreamLimit 3\n</VirtualHost>", 'in a virtual host',
      qr/SvcStreamLimit cannot occur within <VirtualHost> section/ ],

    [ 'SvcProviderAllowPrivate maybe', 'not On or Off', qr/SvcProviderAllowPrivate must be On or Off/ ],

    [ 'SvcTrustedOrigin app.example.com', 'no scheme', qr/SvcTrustedOrigin must be an origin/ ],
    [ 'SvcTrustedOrigin https://app.example.com/x', 'a path',
      qr/SvcTrustedOrigin must be scheme:\/\/host\[:port\] with no path/ ],

    [ 'SvcPublicURL svc.example.com', 'no scheme', qr/SvcPublicURL must be an http/ ],
    [ 'SvcVcsApiURL ftp://api.example.com', 'not http(s)', qr/SvcVcsApiURL must be an http/ ],
    [ 'SvcUIURL javascript:alert(1)', 'a script URL', qr/SvcUIURL/ ],
    [ 'SvcVcsCAFile /nonexistent/ca.pem', 'a missing file',
      qr/SvcVcsCAFile: \/nonexistent\/ca\.pem is not a readable file/ ],

    [ 'SvcOAuthClientSecret hunter2hunter2', 'an inline secret', qr/SvcOAuthClientSecret takes a reference/ ],
    (map { ([ "$_ hunter2hunter2", 'an inline secret', qr/$_ takes a reference/ ]) }
     qw(SvcVcsAppClientSecret SvcVcsAppWebhookSecret SvcVcsAppPrivateKey)),

    (map { ([ "$_ sk_test_hunter2hunter2", 'an inline secret', qr/$_ takes a reference/ ]) }
     qw(SvcBillingSecretKey SvcBillingWebhookSecret)),
    [ 'SvcBillingApiURL ftp://api.stripe.com', 'not http(s)', qr/SvcBillingApiURL must be an http/ ],
    [ 'SvcBillingTimeout 0', 'zero', qr/SvcBillingTimeout must be a number of seconds from 1 to 300/ ],
    [ 'SvcBillingTimeout 301', 'over five minutes', qr/SvcBillingTimeout must be a number of seconds/ ],
    [ 'SvcBillingPlan team Team price_a', 'too few arguments',
      qr/SvcBillingPlan takes ID NAME PRICE_ID AMOUNT CURRENCY/ ],
    [ 'SvcBillingPlan team Team price_a 19.99 usd', 'a decimal amount',
      qr/SvcBillingPlan: the AMOUNT is the price in the currency's smallest unit/ ],
    [ 'SvcBillingPlan team Team price_a 1999 usd hard=maybe', 'hard neither on nor off',
      qr/SvcBillingPlan: hard must be hard=on or hard=off/ ],
    [ 'SvcBillingPlan team Team price_a 1999 usd seats=5', 'an unknown setting',
      qr/SvcBillingPlan: unknown setting seats/ ],
    [ "SvcBillingPlan team Team price_a 1999 usd\nSvcBillingPlan team Again price_b 1 usd",
      'an id twice', qr/SvcBillingPlan: plan team or price price_b is named twice/ ],

    [ 'SvcRunSupervisor maybe', 'not On or Off', qr/SvcRunSupervisor must be On or Off/ ],
    [ 'SvcRunner bwrap {command} {workspace}', 'a relative program',
      qr/SvcRunner: the program must be an absolute path/ ],
    [ 'SvcRunner /usr/bin/env {workspace}', 'no {command}', qr/SvcRunner must have \{command\}/ ],

    [ 'SvcRunConcurrency 0', 'zero', qr/SvcRunConcurrency must be a whole number from 1 to 256/ ],
    [ 'SvcRunConcurrency 2K', 'a suffix', qr/SvcRunConcurrency must be a whole number/ ],
    [ 'SvcRunConcurrency 257', 'too many', qr/SvcRunConcurrency must be a whole number/ ],
    [ 'SvcRunProcesses 7', 'too few', qr/SvcRunProcesses must be a whole number from 8 to 65536/ ],
    [ 'SvcRunProcesses 1K', 'a suffix', qr/SvcRunProcesses must be a whole number/ ],
    [ 'SvcRunTimeout 0', 'zero', qr/SvcRunTimeout must be a number of seconds from 1 to 604800/ ],
    [ 'SvcRunTimeout 1K', 'a suffix', qr/SvcRunTimeout must be a number of seconds/ ],
    [ 'SvcRunMaxSteps 0', 'zero', qr/SvcRunMaxSteps must be a whole number from 1 to 10000/ ],
    [ 'SvcRunMaxSteps 1K', 'a suffix', qr/SvcRunMaxSteps must be a whole number/ ],
    [ 'SvcRunMaxTokens 999', 'too few',
      qr/SvcRunMaxTokens must be a number from 1000 to 1000000000 \(suffixes K, M and G allowed\)/ ],
    [ 'SvcRunMaxTokens 2T', 'an unknown suffix', qr/SvcRunMaxTokens must be a number from/ ],
    [ 'SvcRunCommandTimeout 0', 'zero',
      qr/SvcRunCommandTimeout must be a number of seconds from 1 to 86400/ ],
    [ 'SvcRunCommandTimeout 2M', 'a suffix', qr/SvcRunCommandTimeout must be a number of seconds/ ],
    [ 'SvcRunLease 4', 'too short', qr/SvcRunLease must be a number of seconds from 5 to 3600/ ],
    [ 'SvcRunLease 1K', 'a suffix', qr/SvcRunLease must be a number of seconds/ ],
    [ 'SvcRunMemory 1M', 'under 64 MiB', qr/SvcRunMemory must be a size from 67108864 to \d+ bytes/ ],
    [ 'SvcRunMemory 2X', 'an unknown suffix', qr/SvcRunMemory must be a size/ ],
    [ 'SvcRunFileSize 1K', 'under 1 MiB', qr/SvcRunFileSize must be a size from 1048576/ ],
    [ 'SvcRunLogLimit 2T', 'terabytes', qr/SvcRunLogLimit must be a size from 4096 to 1073741824/ ],
    [ 'SvcRunWorkDir var/runs', 'a relative path', qr/SvcRunWorkDir must be an absolute path/ ],
    [ 'SvcRunFactory svc-factory', 'a relative path', qr/SvcRunFactory must be an absolute path/ ],

    # The supervisor is one per httpd: its settings are the main server's.
    [ "<VirtualHost 127.0.0.1:8>\nSvcRunConcurrency 3\n</VirtualHost>", 'in a virtual host',
      qr/SvcRunConcurrency cannot occur within <VirtualHost> section/ ],
);

for my $b (@bad) {
    my ($directives, $what, $words) = @$b;
    my ($rc, $out) = httpd_config_test($directives);
    my $name = (split /\n/, $directives)[-1] =~ /^</ ? (split /\n/, $directives)[1] : $directives;
    isnt($rc, 0, "$name ($what): refused");
    like($out, $words, '... saying why') or diag($out);
}

# Every directive at a good value (and the run's limits per virtual host).
my $good = <<'EOF';
SvcBodyLimit 2097152
SvcDocumentLimit 8388608
SvcAttachmentLimit 4G
SvcStreamLimit 0
SvcRateLimit tokens 0 60
SvcRateLimit token_revoke 5 1
SvcRateLimit signin 100 86400
SvcRateLimit share 1000000 60
SvcRateLimit models 10 60
SvcRateLimit runs 10 60
SvcInternalAllow 10.0.0.0/8 ::1 192.0.2.7
SvcTokenTouchInterval 1
SvcSessionLifetime 31536000
SvcInviteLifetime 86400
SvcModelTimeout 3600
SvcModelPrice house-1 0 0
SvcProviderAllowPrivate Off
SvcStatementTimeout 3600000
SvcTrustedOrigin https://app.example.com http://localhost:3000
SvcPublicURL https://svc.example.com/
SvcOAuthClientId env:SVC_T_ID
SvcOAuthClientSecret env:SVC_T_SECRET
SvcVcsWebURL https://ghe.example.com
SvcVcsApiURL https://ghe.example.com/api/v3
SvcUIURL /
SvcVcsTimeout 300
SvcVcsAppId 12345
SvcVcsAppSlug an-app
SvcVcsAppClientId Iv1.abc
SvcVcsAppClientSecret env:SVC_T_APP_SECRET
SvcVcsAppWebhookSecret file:/nonexistent/webhook
SvcVcsAppPrivateKey exec:/bin/true
SvcVcsAppCredentials vcs-app.env
SvcBillingSecretKey env:SVC_T_BILLING_KEY
SvcBillingWebhookSecret file:/nonexistent/whsec
SvcBillingApiURL https://api.stripe.com
SvcBillingTimeout 300
SvcBillingPlan team "Team plan" price_1Team 2900 usd run_minutes=1000 model_tokens=5000000 deployment_hours=720
SvcBillingPlan biz Business price_1Biz 9900 EUR hard=on interval=year
SvcRunSupervisor Off
SvcRunner /usr/bin/env {workspace} {command}
SvcRunConcurrency 256
SvcRunTimeout 604800
SvcRunMaxSteps 10000
SvcRunMaxTokens 2M
SvcRunCommandTimeout 86400
SvcRunMemory 0
SvcRunProcesses 8
SvcRunFileSize 1M
SvcRunLogLimit 1G
SvcRunLease 3600
SvcRunWorkDir /tmp/svc-config-t/runs
SvcRunFactory /usr/libexec/mod_svc/svc-factory
<VirtualHost 127.0.0.1:8>
    SvcRunTimeout 60
    SvcRunMaxSteps 5
    SvcRunMaxTokens 1000
    SvcRunCommandTimeout 1
    SvcStatementTimeout 1
    SvcRateLimit runs 1 1
</VirtualHost>
EOF
my ($rc, $out) = httpd_config_test($good);
is($rc, 0, 'every directive at a good value passes') or diag($out);

done_testing();
