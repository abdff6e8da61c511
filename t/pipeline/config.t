# The pipeline's and the attachments' directives, checked while httpd reads
# its configuration (httpd -t): SvcModelPrice MODEL INPUT OUTPUT (US dollars
# per million tokens, 0 to 10000) and SvcAttachmentLimit (a size, 1 byte to
# 4 GiB); a bad value stops httpd with the directive's name and the rule.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

plan skip_all => 'needs SVC_DB and SVC_SECRET (use tools/test.sh)'
    unless $ENV{SVC_DB} && $ENV{SVC_SECRET};

for my $bad ([ 'SvcModelPrice gpt-4o 2.50', 'a price missing' ],
             [ 'SvcModelPrice gpt-4o -1 2', 'a negative price' ],
             [ 'SvcModelPrice gpt-4o 1e3 2', 'an exponent' ],
             [ 'SvcModelPrice gpt-4o 2,50 10', 'a decimal comma' ],
             [ 'SvcModelPrice gpt-4o 10001 1', 'over 10000' ],
             [ 'SvcModelPrice gpt-4o 1..2 1', 'two points' ],
             [ 'SvcModelPrice ' . ('m' x 201) . ' 1 1', 'a model name of 201 characters' ]) {
    my ($rc, $out) = httpd_config_test($bad->[0]);
    isnt($rc, 0, "SvcModelPrice with $bad->[1]: refused");
    like($out, qr/SvcModelPrice/, '... naming the directive') or diag($out);
}
my ($rc, $out) = httpd_config_test("SvcModelPrice house-1 0 0\nSvcModelPrice gpt-4o 2.5 10.00\n"
                                   . "SvcModelPrice gpt-4o 1.25 5\nSvcModelPrice x 10000 0.001");
is($rc, 0, 'SvcModelPrice: free, repeated and extreme prices pass') or diag($out);

for my $bad ([ '0', 'zero' ], [ '-1', 'a negative size' ], [ '5T', 'terabytes' ],
             [ '5G', 'more than 4 GiB' ], [ '25 MiB', 'two words' ], [ '25MB', 'MB' ],
             [ 'lots', 'a word' ]) {
    my ($rc2, $out2) = httpd_config_test("SvcAttachmentLimit $bad->[0]");
    isnt($rc2, 0, "SvcAttachmentLimit $bad->[0] ($bad->[1]): refused");
    like($out2, qr/SvcAttachmentLimit/, '... naming the directive') or diag($out2);
}
for my $good ('1', '64K', '25M', '4G', '1048576') {
    my ($rc2, $out2) = httpd_config_test("SvcAttachmentLimit $good");
    is($rc2, 0, "SvcAttachmentLimit $good passes") or diag($out2);
}

done_testing();
