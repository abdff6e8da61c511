# The audit log of an org: every tenancy mutation writes an entry in the
# same transaction (actor, action, target, before/after, ip, user agent and
# the response's X-Request-Id); GET .../audit filters and pages through them,
# newest first; GET .../audit/verify checks the hash chain and names the
# first entry a superuser tampered with.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my $owner  = new_user('aud-owner');
my $admin  = new_user('aud-admin');
my $member = new_user('aud-member');
my $org    = new_org($owner, prefix => 'aud');
svcctl('org', 'add-member', $org, $admin, '--role', 'admin');
svcctl('org', 'add-member', $org, $member, '--role', 'member');
my %tok = (owner => new_token($owner, scope => 'admin'), admin => new_token($admin, scope => 'admin'),
           member => new_token($member, scope => 'admin'));
my %id = (owner => user_id_of($owner), admin => user_id_of($admin),
          member => user_id_of($member));
my $oid = org_id_of($org);
my $base = "/api/orgs/$org";

# Each mutation: [who, method, path, body, expected actions (in order),
# target type, target id (or a sub computing it from the response)].
my @done;
sub mutate {
    my ($who, $method, $path, $body, $actions, $ttype, $tid) = @_;
    my ($st, $p, $res) = api($method => $path, token => $tok{$who},
                             defined $body ? (json => $body) : ());
    ok($st >= 200 && $st < 300, "$method $path: $st") or diag(explain($p));
    push @done, { who => $who, rid => $res->header('X-Request-Id'), actions => $actions,
                  ttype => $ttype, tid => ref $tid ? $tid->($p) : $tid, what => "$method $path" };
    return $p;
}

my $proj = uniq('ap');
my $third = new_user('aud-third');
svcctl('org', 'add-member', $org, $third, '--role', 'member');
my $third_id = user_id_of($third);
my $invitee = new_user('aud-invitee');
my $decliner = new_user('aud-decliner');

mutate(owner => PATCH => $base, { name => 'Audited' }, ['org.updated'], 'org', $oid);
my $inv = mutate(admin => POST => "$base/members", { email => $invitee, role => 'member' },
                 ['invite.created'], 'invite', sub { $_[0]{id} });
my $inv2 = mutate(admin => POST => "$base/members", { email => $decliner, role => 'viewer' },
                  ['invite.created'], 'invite', sub { $_[0]{id} });
my $inv3 = mutate(admin => POST => "$base/members",
                  { email => uniq('gone') . '@example.test', role => 'viewer' },
                  ['invite.created'], 'invite', sub { $_[0]{id} });
mutate(admin => DELETE => "$base/invites/$inv3->{id}", undef, ['invite.revoked'], 'invite',
       $inv3->{id});
{
    # The invitee answers: their entries are in the org's chain, with them as actor.
    $tok{invitee} = new_token($invitee, scope => 'write');
    $tok{decliner} = new_token($decliner, scope => 'write');
    $id{invitee} = user_id_of($invitee);
    $id{decliner} = user_id_of($decliner);
    mutate(invitee => POST => "/api/me/invites/$inv->{id}/accept", undef,
           [ 'member.added', 'invite.accepted' ], 'invite', $inv->{id});
    mutate(decliner => POST => "/api/me/invites/$inv2->{id}/decline", undef,
           ['invite.declined'], 'invite', $inv2->{id});
}
mutate(admin => PATCH => "$base/members/$third_id", { role => 'viewer' },
       ['member.role_changed'], 'user', $third_id);
mutate(member => POST => "$base/projects", { slug => $proj, name => 'Audited project' },
       [ 'project.created', 'team.member_added' ], 'project', sub { $_[0]{id} });
my $pid = psql_value("SELECT id FROM projects WHERE org_id = '$oid' AND slug = '$proj'");
mutate(member => PATCH => "$base/projects/$proj", { name => 'Renamed project' },
       ['project.updated'], 'project', $pid);
mutate(member => POST => "$base/projects/$proj/team", { user_id => $id{admin}, role => 'developer' },
       ['team.member_added'], 'project', $pid);
mutate(member => PATCH => "$base/projects/$proj/team/$id{admin}", { role => 'maintainer' },
       ['team.role_changed'], 'project', $pid);
mutate(admin => DELETE => "$base/projects/$proj/team/$id{member}", undef,
       ['team.member_removed'], 'project', $pid);
mutate(admin => DELETE => "$base/projects/$proj/team/$id{admin}", undef,
       ['team.member_left'], 'project', $pid);
my $tinv = mutate(admin => POST => "$base/projects/$proj/team",
                  { email => uniq('t') . '@example.test', role => 'viewer' },
                  ['invite.created'], 'invite', sub { $_[0]{id} });
mutate(admin => DELETE => "$base/projects/$proj/team/invites/$tinv->{id}", undef,
       ['invite.revoked'], 'invite', $tinv->{id});
mutate(admin => DELETE => "$base/members/$third_id", undef, ['member.removed'], 'user', $third_id);
mutate(member => DELETE => "$base/members/$id{member}", undef, ['member.left'], 'user',
       $id{member});
mutate(owner => POST => "$base/transfer-ownership", { user_id => $id{admin} },
       ['ownership.transferred'], 'user', $id{admin});
# From here on the admin owns the org and the former owner is an admin.

# --- every mutation is in the log, as it happened --------------------------------
my ($st, $all) = api(GET => "$base/audit?limit=200", token => $tok{owner});
is($st, 200, 'the former owner (now admin) reads the log');
my %by_rid;
push @{ $by_rid{ $_->{request_id} // '' } }, $_ for @{ $all->{data} };
for my $d (@done) {
    my @e = reverse @{ $by_rid{ $d->{rid} } // [] };     # oldest first
    is_deeply([ map { $_->{action} } @e ], $d->{actions},
              "$d->{what}: logged as @{ $d->{actions} } under its request id");
    my $e = $e[-1] or next;
    is($e->{actor}{user_id}, $id{ $d->{who} }, '... actor');
    is($e->{actor}{kind}, 'user', '... a user');
    is($e->{actor}{name}, "aud-$d->{who}", '... named');
    like($e->{actor}{token_id} // '', qr/^tok_/, '... through a token');
    is($e->{target}{type}, $d->{ttype}, "... target type $d->{ttype}");
    is($e->{target}{id}, $d->{tid}, '... target id');
    is($e->{ip}, '127.0.0.1', '... ip');
    is($e->{user_agent}, 'mod_svc-tests/1', '... user agent');
    like($e->{created_at}, qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/, '... time');
    like($e->{hash}, qr/^[0-9a-f]{64}$/, '... hash');
}
# Names come from the users table: someone who left is named all the same
# (the UI shows them, and the org's member list no longer has them).
my ($left) = grep { $_->{action} eq 'member.left' } @{ $all->{data} };
is($left->{actor}{name}, 'aud-member', 'the member who left is still named');
my @op = grep { $_->{actor}{kind} eq 'operator' } @{ $all->{data} };
ok(@op && !(grep { defined $_->{actor}{name} } @op), 'operator entries name nobody');
my ($role_changed) = grep { $_->{action} eq 'member.role_changed' } @{ $all->{data} };
is_deeply([ @{ $role_changed->{data} }{qw(before after)} ], [qw(member viewer)],
          'member.role_changed has before and after');
my ($renamed) = grep { $_->{action} eq 'project.updated' } @{ $all->{data} };
is_deeply([ $renamed->{data}{before}{name}, $renamed->{data}{after}{name} ],
          [ 'Audited project', 'Renamed project' ], 'project.updated has before and after');
my ($xfer) = grep { $_->{action} eq 'ownership.transferred' } @{ $all->{data} };
is_deeply($xfer->{data}, { from => $id{owner}, to => $id{admin},
                           before => { from_role => 'owner', to_role => 'admin' },
                           after  => { from_role => 'admin', to_role => 'owner' } },
          'ownership.transferred has from, to, before and after');
my @ids = map { $_->{id} } @{ $all->{data} };
is_deeply(\@ids, [ sort { $b <=> $a } @ids ], 'newest first');
ok(!(grep { $_->{data}{token} || $_->{data}{secret} } @{ $all->{data} }), 'no secret in data');

# Another org's entries are not in this log.
{
    my $o = new_user('aud-other');
    my $other = new_org($o, prefix => 'aud-other');
    my ($s, $p, $res) = api(PATCH => "/api/orgs/$other", token => new_token($o, scope => 'admin'),
                            json => { name => 'Other' });
    my ($s2, $mine) = api(GET => "$base/audit?limit=200", token => $tok{owner});
    ok(!(grep { ($_->{request_id} // '') eq $res->header('X-Request-Id') } @{ $mine->{data} }),
       "another org's entries are not listed");
}

# --- filters -----------------------------------------------------------------------
sub audit {
    my $q = shift;
    my ($s, $p) = api(GET => "$base/audit?$q", token => $tok{owner});
    return ($s, $p);
}
my ($s, $p) = audit('action=invite.created&limit=200');
is($s, 200, '?action=');
is(scalar @{ $p->{data} }, 4, '... the four invites');
ok(!(grep { $_->{action} ne 'invite.created' } @{ $p->{data} }), '... and nothing else');
($s, $p) = audit("actor=$id{member}&limit=200");
is(scalar @{ $p->{data} }, 6, '?actor= finds the member\'s six entries');
ok(!(grep { ($_->{actor}{user_id} // '') ne $id{member} } @{ $p->{data} }), '... only theirs');
($s, $p) = audit("actor=$id{member}&action=project.created");
is(scalar @{ $p->{data} }, 1, '?actor= and ?action= together');
my $now = psql_value(q{SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')});
my $first = $all->{data}[-1]{created_at};
($s, $p) = audit('since=2999-01-01T00:00:00Z');
is_deeply($p->{data}, [], '?since= in the future: nothing');
($s, $p) = audit('until=1971-01-01T00:00:00Z');
is_deeply($p->{data}, [], '?until= in the past: nothing');
($s, $p) = audit("since=$first&until=2999-12-31T23:59:59%2B01:00&limit=200");
is(scalar @{ $p->{data} }, scalar @{ $all->{data} }, '?since= and ?until= around everything');
($s, $p) = audit('since=1970-01-01t00:00:00.5z&limit=200');
is($s, 200, 'lowercase t and z and a fraction are RFC 3339 too');

# Offsets are applied before PostgreSQL sees the time (issue 14, item 5):
# it refuses those beyond 15:59 (SQLSTATE 22009, a 500), RFC 3339 allows up
# to 23:59. The newest entry's second, written with a +16:30 offset, is the
# same instant: since= finds it, until= does not.
{
    my $newest = $all->{data}[0]{created_at};
    my ($y, $mo, $d, $h, $mi, $sec) = $newest =~ /^(\d+)-(\d+)-(\d+)T(\d+):(\d+):(\d+)Z$/;
    require Time::Local;
    my $t = Time::Local::timegm($sec, $mi, $h, $d, $mo - 1, $y) + 16 * 3600 + 30 * 60;
    my @g = gmtime $t;
    my $shifted = sprintf '%04d-%02d-%02dT%02d:%02d:%02d%%2B16:30', $g[5] + 1900, $g[4] + 1,
                          @g[3, 2, 1, 0];
    my ($s1, $p1) = audit("since=$shifted&limit=200");
    is($s1, 200, "?since= with a +16:30 offset: 200") or diag(explain($p1));
    ok((grep { $_->{id} eq $all->{data}[0]{id} } @{ $p1->{data} // [] }),
       '... and it names the same instant (the newest entry is in)');
    ok(!(grep { $_->{created_at} lt $newest } @{ $p1->{data} // [] }), '... nothing older');
    my ($s2, $p2) = audit("until=$shifted&limit=200");
    is($s2, 200, '?until= with a +16:30 offset: 200');
    ok(!(grep { $_->{created_at} ge $newest } @{ $p2->{data} // [] }),
       '... and the newest second is out');
    ($s1, $p1) = audit('since=2026-01-01T00:00:00-23:59&until=2026-01-01T00:00:00%2B23:59');
    is($s1, 200, 'the largest offsets RFC 3339 allows: 200');
    ($s1, $p1) = audit('since=2026-01-01T00:00:00%2B24:00');
    is($s1, 400, 'an offset of 24 hours: 400');
    is($p1->{code}, 'validation_failed', '... validation_failed');
    is($p1->{errors}[0]{field}, 'since', '... naming since');
    ($s1, $p1) = audit('until=0001-01-01T00:00:00%2B01:00');
    is($s1, 400, 'an offset that moves the time before year 1: 400');
    is($p1->{errors}[0]{code}, 'out_of_range', '... out_of_range');
    is($p1->{errors}[0]{field}, 'until', '... naming until');
    ($s1) = audit('since=9999-12-31T23:59:59-01:00');
    is($s1, 400, 'an offset that moves the time past year 9999: 400');
}
for my $bad ([ since => '2026-02-30T00:00:00Z' ], [ since => 'yesterday' ],
             [ until => '2026-01-01' ], [ until => '2026-01-01T25:00:00Z' ],
             [ actor => 'bob' ], [ actor => 'usr_' ], [ action => 'DROP TABLE' ],
             [ action => 'nodot' ], [ cursor => 'bogus' ], [ limit => 0 ], [ limit => 201 ]) {
    my ($k, $v) = @$bad;
    ($s, $p) = audit("$k=$v");
    is($s, 400, "?$k=$v: 400");
    is($p->{errors}[0]{field}, $k, "... naming $k");
}

# --- pagination -------------------------------------------------------------------
{
    my (@seen, $cursor, $pages);
    do {
        ($s, $p) = audit('limit=3' . ($cursor ? "&cursor=$cursor" : ''));
        is($s, 200, 'page ' . ++$pages);
        ok(@{ $p->{data} } <= 3, '... at most 3 entries');
        push @seen, map { $_->{id} } @{ $p->{data} };
        $cursor = $p->{next_cursor};
    } while ($cursor && $pages < 100);
    is_deeply(\@seen, \@ids, 'the pages, in order, are the whole log, each entry once');
    ok($pages > 3, "... over $pages pages");
}

# --- the chain ----------------------------------------------------------------------
my $count = psql_value("SELECT count(*) FROM audit_log WHERE org_id = '$oid'");
($s, $p) = api(GET => "$base/audit/verify", token => $tok{owner});
is($s, 200, 'verify');
is_deeply($p, { ok => JSON::PP::true(), entries => $count }, '... the chain holds');
($s, $p) = api(GET => "$base/audit/verify", token => new_token($admin, scope => 'write'));
is($s, 403, 'verify needs admin scope');

my $victim = psql_value("SELECT id FROM audit_log WHERE org_id = '$oid' "
                        . "AND action = 'member.role_changed'");
audit_tamper($victim);
($s, $p) = api(GET => "$base/audit/verify", token => $tok{owner});
is_deeply($p, { ok => JSON::PP::false(), first_broken_id => $victim, entries => $count },
          'after a superuser changed an entry, verify names it');
my ($rc, $out, $err) = SvcTest::run([ $ENV{SVCCTL}, 'audit', 'verify' ]);
is($rc >> 8, 1, 'svcctl audit verify fails');
like($err, qr/\Q$oid\E is broken at entry $victim\b/, '... naming the org and the entry');

done_testing();
