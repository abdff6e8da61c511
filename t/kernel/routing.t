# Routing, driven by the route table itself (svcctl routes --json): every
# path answers 405 with the right Allow for a method it does not take,
# OPTIONS lists the methods, HEAD is GET without a body, every response
# carries X-Request-Id, and paths that are not in the table are 404.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $routes = json()->decode(svcctl('routes', '--json'));
ok(@$routes > 0, 'the route table is not empty');

# Methods per path template, and a concrete path for each template.
my (%methods, %concrete);
for my $r (@$routes) {
    push @{ $methods{ $r->{path} } }, $r->{method};
    (my $p = $r->{path}) =~ s{:(\w+)}{x$1}g;
    $concrete{ $r->{path} } = $p;
}

my %ids;
for my $tmpl (sort keys %methods) {
    my @m = @{ $methods{$tmpl} };
    my %have = map { $_ => 1 } @m;
    my $path = $concrete{$tmpl};
    my ($wrong) = grep { !$have{$_} } qw(PUT PATCH DELETE POST GET);
    my ($st, $p, $res) = api($wrong => $path);
    is($st, 405, "$wrong $tmpl: 405");
    is($p->{code}, 'method_not_allowed', "$wrong $tmpl: method_not_allowed");
    my %allow = map { $_ => 1 } split /\s*,\s*/, ($res->header('Allow') // '');
    ok(!grep({ !$allow{$_} } @m, 'OPTIONS'), "$wrong $tmpl: Allow lists @m and OPTIONS")
        or diag('Allow: ' . ($res->header('Allow') // ''));
    ok(!$allow{$wrong}, "$wrong $tmpl: Allow does not list $wrong");
    my $rid = $res->header('X-Request-Id') // '';
    like($rid, qr/\Areq_[0-9A-Za-z]{22}\z/, "$wrong $tmpl: X-Request-Id");
    ok(!$ids{$rid}++, "$wrong $tmpl: a fresh request id");
    ($st, undef, $res) = api(OPTIONS => $path);
    is($st, 204, "OPTIONS $tmpl: 204");
    is($res->header('Allow'), join(', ', map { $_ eq 'GET' ? ('GET', 'HEAD') : $_ } @m)
                              . ', OPTIONS', "OPTIONS $tmpl: Allow");
}

# HEAD is GET without a body.
{
    my ($st, undef, $get) = api(GET => '/api/openapi.json');
    my ($hst, undef, $head) = api(HEAD => '/api/openapi.json');
    is($hst, 200, 'HEAD /api/openapi.json: 200');
    is($head->content, '', 'HEAD: no body');
    is($head->header('Content-Length'), $get->header('Content-Length'), 'HEAD: the same length');
}

# Paths that are not in the table.
for my $path ('/api/', '/api/me/', '/api/me/tokens/', '/api/me/tokens/a/b',
              '/api/nope', '/api/orgs/x/nope', '/internal/nope', '/auth/nope',
              '/api/' . ('a/' x 20) . 'b', '/api/me/tokens/' . ('x' x 300)) {
    my ($st, $p, $res) = api(GET => $path);
    is($st, 404, "GET $path: 404");
    is(ref $p eq 'HASH' && $p->{code}, 'not_found', "GET $path: not_found problem");
    ok($res->header('X-Request-Id'), "GET $path: X-Request-Id");
}

# API responses are never cached and not sniffed.
{
    my ($st, undef, $res) = api(GET => '/api/openapi.json');
    is($res->header('Cache-Control'), 'no-store', 'Cache-Control: no-store');
    is($res->header('X-Content-Type-Options'), 'nosniff', 'X-Content-Type-Options: nosniff');
}

done_testing();
