# Path parameters are checked against their format before anything else
# sees them (issue 14, item 4): a slug for :orgSlug and :projectSlug, an id
# (ASCII letters, digits, '_' and '-') for every other parameter. A value
# that is not even UTF-8 (%FF, %C3%28) used to reach PostgreSQL, which
# refused the statement (SQLSTATE 22021): a 500 and an error line in the log
# for what is only a wrong URL. Generated from the route table, so a new
# route with a parameter is covered the moment it exists.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $owner = new_user('pathid');
my $org = new_org($owner, prefix => 'pathid');
my $tok = new_token($owner, scope => 'admin');
my $proj = uniq('p');
my ($st) = api(POST => "/api/orgs/$org/projects", token => $tok,
               json => { slug => $proj, name => 'Path ids' });
is($st, 201, 'a project to address');

my %good = (orgSlug => $org, projectSlug => $proj);

sub fill {
    my ($tmpl, $bad_name, $bad) = @_;
    (my $path = $tmpl) =~ s{:(\w+)}{
        $1 eq $bad_name ? $bad : ($good{$1} // 'id_0123456789abcdefghijkl')
    }ge;
    return $path;
}

sub error_log_size { return -s error_log_path() // 0 }

sub error_lines_since {
    my $from = shift;
    open my $fh, '<', error_log_path() or return ();
    seek $fh, $from, 0;
    local $/;
    my $text = <$fh> // '';
    return grep { /^\[[^\]]*\]\s+\[[^\]:]+:(?:error|crit|alert|emerg)\]/ } split /\n/, $text;
}

my $checked = 0;
for my $r (grep { $_->{path} =~ /:/ } route_table()) {
    my @names = $r->{path} =~ /:(\w+)/g;
    for my $name (@names) {
        for my $bad ('%FF', '%C3%28', 'a%20b', 'x' x 65) {
            my $from = error_log_size();
            my ($status, $p) = api($r->{method} => fill($r->{path}, $name, $bad), token => $tok,
                                   $r->{body} ? (json => {}) : ());
            is($status, 404, "$r->{method} $r->{path} with :$name = $bad: 404")
                or diag(explain($p));
            is($p && $p->{code}, 'not_found', '... not_found');
            my @errors = error_lines_since($from);
            is(scalar @errors, 0, '... and no error line in the log') or diag(join "\n", @errors);
            $checked++;
        }
    }
}
ok($checked >= 40, "$checked bad path parameters checked");

# The good shapes still get through: an id of another shape than ours is
# simply not found by the handler.
($st) = api(DELETE => '/api/me/tokens/tok_nonexistent-but_well-formed', token => $tok);
is($st, 404, 'a well-formed unknown id: 404 from the handler');
($st) = api(GET => "/api/orgs/$org/projects/$proj", token => $tok);
is($st, 200, 'real slugs: 200');

done_testing();
