# A query string is taken whole or refused (issue 14, item 7): a parameter
# that cannot be decoded (a bad escape, an encoded NUL), more than 64
# parameters, or a name given twice is 400 invalid_query. Before, such
# parameters were dropped silently, and a filter that vanished answered a
# wider question than the one asked: ?archived=true%00 listed active
# projects, and 64 dummy parameters before action=... emptied the audit
# filter.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $owner = new_user('query');
my $org = new_org($owner, prefix => 'query');
my $tok = new_token($owner, scope => 'admin');
my ($st) = api(POST => "/api/orgs/$org/projects", token => $tok,
               json => { slug => 'active-one', name => 'Active' });
is($st, 201, 'an active project');
($st) = api(POST => "/api/orgs/$org/projects", token => $tok,
            json => { slug => 'archived-one', name => 'Archived' });
($st) = api(PATCH => "/api/orgs/$org/projects/archived-one", token => $tok,
            json => { archived => JSON::PP::true() });
is($st, 200, 'an archived project');

sub refused {
    my ($query, $name, $like) = @_;
    my ($status, $p) = api(GET => "/api/orgs/$org$query", token => $tok);
    is($status, 400, "$name: 400") or diag(explain($p));
    is($p && $p->{code}, 'invalid_query', '... invalid_query');
    like($p && $p->{detail}, $like, '... saying what is wrong') if $like;
}

refused('/projects?archived=true%00', 'an encoded NUL in a value', qr/NUL/);
refused('/projects?archived%00=true', 'an encoded NUL in a name', qr/NUL/);
refused('/projects?archived=%ZZ', 'a bad escape', qr/percent-encoding/);
refused('/projects?archived=tru%e', 'a truncated escape', qr/percent-encoding/);
refused('/projects?archived=true&archived=false', 'a repeated filter', qr/archived more than once/);
refused('/projects?limit=1&limit=2', 'a repeated limit', qr/limit more than once/);
refused('/projects?x=1&x=1', 'a repeated unknown parameter', qr/x more than once/);

my $dummies = join '&', map { "d$_=1" } 1 .. 64;
refused("/audit?$dummies&action=project.created", '65 parameters, the filter last',
        qr/more than 64 parameters/);

# What is well-formed still works, and filters what it says.
{
    my ($status, $page) = api(GET => "/api/orgs/$org/projects?archived=true", token => $tok);
    is($status, 200, '?archived=true: 200');
    is_deeply([ map { $_->{slug} } @{ $page->{data} } ], ['archived-one'], '... archived only');

    my $just = join '&', map { "d$_=1" } 1 .. 63;
    ($status, $page) = api(GET => "/api/orgs/$org/audit?$just&action=project.updated",
                           token => $tok);
    is($status, 200, '64 parameters: 200');
    ok(@{ $page->{data} } >= 1 && !grep({ $_->{action} ne 'project.updated' } @{ $page->{data} }),
       '... and the filter holds');

    ($status) = api(GET => "/api/orgs/$org/projects?archived=true&&limit=5&", token => $tok);
    is($status, 200, 'empty pairs are not parameters');
    ($status, $page) = api(GET => "/api/orgs/$org/projects?archived=tr%75e", token => $tok);
    is($status, 200, 'an escaped letter decodes');
    is(scalar @{ $page->{data} }, 1, '... to the same filter');
}

done_testing();
