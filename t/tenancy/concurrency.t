# Simultaneous requests that only one may win: ownership transfers, invites
# of one address, creations of one org slug and one project slug.  Each race
# forks its requests and releases them together (SvcTest::race), and is run
# several times; exactly one wins every time, the others get 409, and the
# database is consistent afterwards.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $ROUNDS = 5;

sub tally {
    my @res = @_;
    my %n;
    $n{ $_->[0] }++ for @res;
    return \%n;
}

sub one_winner {
    my ($what, $win, @res) = @_;
    my $n = tally(@res);
    is($n->{$win} // 0, 1, "$what: exactly one $win")
        or diag(explain(\@res));
    is($n->{409} // 0, @res - 1, "$what: the others 409");
    my @codes = map { $_->[1] } grep { $_->[0] == 409 } @res;
    ok(!(grep { !defined || $_ !~ /^(?:conflict|invite_pending)$/ } @codes),
       "$what: ... as conflicts (@codes)");
}

# --- two simultaneous ownership transfers ----------------------------------------
# Both requests pass authorization as the owner and meet at the org lock
# (held by the test until both wait there); the first transfers, and the
# second, let through after it, finds its caller an admin: 409.
sub transfer_race {
    my ($round, $held) = @_;
    my $owner = new_user('race-owner');
    my $org   = new_org($owner, prefix => 'race-xfer');
    my @heirs;
    push @heirs, new_user("race-heir$_") for 1 .. 2;
    svcctl('org', 'add-member', $org, $_, '--role', 'member') for @heirs;
    my @ids = map { user_id_of($_) } @heirs;
    my $tok = new_token($owner, scope => 'admin');
    my $oid = org_id_of($org);
    my $h = $held ? lock_hold("SELECT 1 FROM orgs WHERE id = '$oid' FOR UPDATE", 2) : undef;
    my @res = race(map {
        my $to = $_;
        sub {
            my ($st, $p) = api(POST => "/api/orgs/$org/transfer-ownership", token => $tok,
                               json => { user_id => $to });
            return ($st, $p->{code}, $to);
        }
    } @ids);
    lock_release($h) if $h;
    my $what = ($held ? 'transfers meeting at the lock' : 'transfers') . ", round $round";
    if ($held) {
        one_winner($what, 200, @res);
    }
    else {
        # Unforced, the second may also arrive after the first committed and
        # be refused at authorization (403: it is an admin's request by then).
        my $n = tally(@res);
        is($n->{200} // 0, 1, "$what: exactly one 200") or diag(explain(\@res));
        is(($n->{409} // 0) + ($n->{403} // 0), 1, "$what: the other 409 or 403");
    }
    my ($winner) = map { $_->[2] } grep { $_->[0] == 200 } @res;
    is(psql_value("SELECT count(*) FROM org_members WHERE org_id = '$oid' AND role = 'owner'"),
       1, "$what: one owner");
    is(psql_value("SELECT user_id FROM org_members WHERE org_id = '$oid' AND role = 'owner'"),
       $winner // '', "... the winner's heir");
    is(psql_value("SELECT role FROM org_members WHERE org_id = '$oid' AND user_id = '"
                  . user_id_of($owner) . "'"), 'admin', '... the old owner is an admin');
    is(psql_value("SELECT count(*) FROM audit_log WHERE org_id = '$oid' "
                  . "AND action = 'ownership.transferred'"), 1, '... one transfer logged');
}
transfer_race($_, 1) for 1 .. $ROUNDS;
transfer_race($_, 0) for 1 .. $ROUNDS;

# --- two simultaneous invites of one address ------------------------------------
for my $round (1 .. $ROUNDS) {
    my $owner = new_user('race-inv');
    my $org   = new_org($owner, prefix => 'race-inv');
    my $tok   = new_token($owner, scope => 'admin');
    my $email = uniq('racer') . '@example.test';
    my @res = race(map {
        my $e = $_;
        sub {
            my ($st, $p) = api(POST => "/api/orgs/$org/members", token => $tok,
                               json => { email => $e, role => 'member' });
            return ($st, $p->{code});
        }
    } ($email, uc $email));
    one_winner("org invite round $round", 201, @res);
    is(psql_value("SELECT count(*) FROM invites WHERE org_id = '" . org_id_of($org)
                  . "' AND lower(email) = lower('$email')"), 1, "... one invite row");

    # And the same for a project's team.
    my $proj = uniq('rp');
    my ($st) = api(POST => "/api/orgs/$org/projects", token => $tok,
                   json => { slug => $proj, name => 'Race' });
    @res = race(map {
        sub {
            my ($s, $p) = api(POST => "/api/orgs/$org/projects/$proj/team", token => $tok,
                              json => { email => $email, role => 'developer' });
            return ($s, $p->{code});
        }
    } 1 .. 2);
    one_winner("team invite round $round", 201, @res);
    is(psql_value("SELECT count(*) FROM invites WHERE project_id IS NOT NULL AND "
                  . "lower(email) = lower('$email')"), 1, '... one invite row');
}

# --- simultaneous creations of one org slug --------------------------------------
for my $round (1 .. $ROUNDS) {
    my @users = map { new_user("race-founder$_") } 1 .. 4;
    my @toks  = map { new_token($_, scope => 'write') } @users;
    my $slug  = uniq('race-slug');
    my @res = race(map {
        my $t = $_;
        sub {
            my ($st, $p) = api(POST => '/api/orgs', token => $t,
                               json => { slug => $slug, name => 'Race' });
            return ($st, $p->{code});
        }
    } @toks);
    one_winner("org slug round $round", 201, @res);
    my $oid = org_id_of($slug);
    is(psql_value("SELECT count(*) FROM orgs WHERE slug = '$slug'"), 1, '... one org');
    is(psql_value("SELECT count(*) FROM org_members WHERE org_id = '$oid'"), 1,
       '... with one member');
    is(psql_value("SELECT count(*) FROM org_members WHERE org_id = '$oid' AND role = 'owner'"),
       1, '... its owner');
    is(psql_value("SELECT count(*) FROM audit_log WHERE org_id = '$oid' "
                  . "AND action = 'org.created'"), 1, '... created once in the log');
}

# --- simultaneous creations of one project slug in one org -------------------
for my $round (1 .. $ROUNDS) {
    my $owner = new_user('race-proj');
    my $org   = new_org($owner, prefix => 'race-proj');
    my @members = map { new_user("race-dev$_") } 1 .. 4;
    svcctl('org', 'add-member', $org, $_, '--role', 'member') for @members;
    my @toks = map { new_token($_, scope => 'write') } @members;
    my $slug = uniq('same');
    my @res = race(map {
        my $t = $_;
        sub {
            my ($st, $p) = api(POST => "/api/orgs/$org/projects", token => $t,
                               json => { slug => $slug, name => 'Race' });
            return ($st, $p->{code});
        }
    } @toks);
    one_winner("project slug round $round", 201, @res);
    my $oid = org_id_of($org);
    is(psql_value("SELECT count(*) FROM projects WHERE org_id = '$oid' AND slug = '$slug'"), 1,
       '... one project');
    is(psql_value("SELECT count(*) FROM project_members pm JOIN projects p ON p.id = pm.project_id "
                  . "WHERE p.org_id = '$oid' AND p.slug = '$slug'"), 1, '... one maintainer');
    is(psql_value("SELECT count(*) FROM audit_log WHERE org_id = '$oid' "
                  . "AND action = 'project.created'"), 1, '... created once in the log');
}

# --- everything is still consistent ------------------------------------------------
is(psql_value("SELECT count(*) FROM orgs o WHERE (SELECT count(*) FROM org_members m "
              . "WHERE m.org_id = o.id AND m.role = 'owner') <> 1"), 0,
   'every org has exactly one owner');

done_testing();
