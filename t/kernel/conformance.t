# Conformance, generated from the route table (`svcctl routes --json`):
# nothing below names a route, so a row added to svc_routes.c is covered the
# moment it exists.
#
#   - every row not flagged hidden is in GET /api/openapi.json, with its
#     scope, org role and project role;
#   - every user route without credentials: 401;
#   - every user route with a PAT whose scope is below the route's: 403
#     insufficient_scope, and the database unchanged (in particular every
#     mutating route with a read-scope PAT);
#   - every tenant route, called by someone of another org (session, PAT) and
#     by a member of the org holding a PAT bound to another org: 404, and the
#     database unchanged.  Path parameters name real objects of the victim
#     org where they exist, and bodies are valid, so a missing check would
#     show as a change, not as a 400;
#   - every share-portal route (auth "share"): 404 for a revoked, an expired
#     and an unknown token, and for a document of another product, and the
#     database unchanged; the same call with the live token answers.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

my @routes = route_table();
my @user   = grep { $_->{auth} eq 'user' } @routes;
my @tenant = grep { $_->{tenant} } @user;
my %scope_rank = (none => 0, read => 1, write => 2, admin => 3);

# --- the victim org, with one of everything its routes can address ----------
my $owner  = new_user('victim-owner');
my $member = new_user('victim-member');
my $org    = new_org($owner, prefix => 'victim');
svcctl('org', 'add-member', $org, $member, '--role', 'member');
my $owner_tok = new_token($owner, scope => 'admin');
my $member_id = user_id_of($member);

my $proj = uniq('proj');
my ($st) = api(POST => "/api/orgs/$org/projects", token => $owner_tok,
               json => { slug => $proj, name => 'Victim project' });
is($st, 201, 'victim project created');
($st) = api(POST => "/api/orgs/$org/projects/$proj/team", token => $owner_tok,
            json => { user_id => $member_id, role => 'developer' });
is($st, 201, 'victim member on the team');
my ($s1, $org_inv) = api(POST => "/api/orgs/$org/members", token => $owner_tok,
                         json => { email => uniq('invitee') . '@example.test', role => 'admin' });
is($s1, 201, 'pending org invite');
my ($s2, $prj_inv) = api(POST => "/api/orgs/$org/projects/$proj/team", token => $owner_tok,
                         json => { email => uniq('invitee') . '@example.test',
                                   role => 'maintainer' });
is($s2, 201, 'pending project invite');

# A provider (on a fake model), a product with a document, a patch and a
# share link: one of everything the documents, providers and share routes
# address.
my $llm = new_llm(flavor => 'openai');
$llm->control(reply => json()->encode({ summary => 'A change.', body => "# Doc\n\nChanged.\n" }));
my $provider = new_provider($org, $owner_tok, $llm);
my $product = new_product($org, $proj, $owner_tok);
my $doc = new_document($org, $product->{id}, $owner_tok, body => "# Doc\n\nFirst.\n");
my ($s3, $patch) = api(POST => "/api/orgs/$org/documents/$doc->{id}/patches", token => $owner_tok,
                       json => { instructions => 'Change it.' });
is($s3, 201, 'victim patch');
my ($s4, $share) = api(POST => "/api/orgs/$org/products/$product->{id}/shares",
                       token => $owner_tok, json => {});
is($s4, 201, 'victim share link');
# A request, an improvement and an attachment of the victim org.
my $request = new_request($org, $owner_tok, project => $proj);
my ($s5, $improvement) = api(POST => "/api/orgs/$org/projects/$proj/improvements",
                             token => $owner_tok,
                             json => { kind => 'bug', title => 'Victim bug', body => 'It breaks.' });
is($s5, 201, 'victim improvement');
my ($s6, $attachment) = api(POST => "/api/orgs/$org/attachments?request_id=$request->{id}"
                                    . '&filename=victim.txt', token => $owner_tok,
                            raw => 'victim', headers => { 'Content-Type' => 'text/plain' });
is($s6, 201, 'victim attachment');
my %id_of = (productId => $product->{id}, docId => $doc->{id}, requestId => $request->{id},
             versionId => $doc->{current_version}{id}, patchId => $patch->{id},
             shareId => $share->{id});

# A run of the victim project that succeeded (so its artifact exists and
# its event stream ends).
my $run_id = run_fixture($org, $proj, status => 'succeeded');

# A deploy target of the victim org and a deployment on it (docs/api/deployments.md).
my ($s7, $target) = api(POST => "/api/orgs/$org/deploy-targets", token => $owner_tok,
                        json => { name => 'victim-box' });
is($s7, 201, 'victim deploy target');
my ($s8, $deployment) = api(POST => "/api/orgs/$org/deployments", token => $owner_tok,
                            json => { project => $proj, target_id => $target->{id},
                                      run_id => $run_id });
is($s8, 201, 'victim deployment');
# Its planner ends (the fixture's artifact is no bundle) before digests are taken.
ok(wait_for(sub {
    my (undef, $d) = api(GET => "/api/orgs/$org/deployments/$deployment->{id}",
                         token => $owner_tok);
    $d->{status} eq 'plan_failed'
}, timeout => 60, interval => 0.2), 'victim deployment planned (and failed: no bundle)');
# A piece of work for its target, as an approval would have made.
my $work_id = 'wrk_' . join '', map { ('a'..'z')[rand 26] } 1 .. 22;
psql("INSERT INTO deploy_work (id, org_id, target_id, deployment_id, action, spec) VALUES "
     . "('$work_id', '" . org_id_of($org) . "', '$target->{id}', '$deployment->{id}', "
     . "'deploy', '{}')");
# Logs of it, as its agent would have uploaded them (GET .../logs answers them).
my $log_id = 'lgr_' . join '', map { ('a'..'z')[rand 26] } 1 .. 22;
psql("INSERT INTO deploy_log_requests (id, org_id, deployment_id, target_id, lines, uploaded_at, "
     . "body) VALUES ('$log_id', '" . org_id_of($org) . "', '$deployment->{id}', "
     . "'$target->{id}', 10, now(), E'replica 0 | victim\\n')");

# Real ids of the victim org for each path parameter; unknown ones get a
# random id of the right shape.
sub path_for {
    my $path = shift;
    $path =~ s{:orgSlug}{$org}g;
    $path =~ s{:projectSlug}{$proj}g;
    $path =~ s{:userId}{$member_id}g;
    $path =~ s{:runId}{$run_id}g;
    $path =~ s{:(productId|docId|versionId|patchId|shareId|requestId)\b}{$id_of{$1}}g;
    if ($path =~ m{/team/invites/:id\b}) { $path =~ s{:id}{$prj_inv->{id}} }
    elsif ($path =~ m{/invites/:id\b})    { $path =~ s{:id}{$org_inv->{id}} }
    elsif ($path =~ m{/providers/:id\b})  { $path =~ s{:id}{$provider->{id}} }
    elsif ($path =~ m{/attachments/:id\b}) { $path =~ s{:id}{$attachment->{id}} }
    elsif ($path =~ m{/improvements/:id\b}) { $path =~ s{:id}{$improvement->{id}} }
    elsif ($path =~ m{/deploy-targets/:id\b}) { $path =~ s{:id}{$target->{id}} }
    elsif ($path =~ m{/deployments/:id\b}) { $path =~ s{:id}{$deployment->{id}} }
    $path =~ s{:[A-Za-z]+}{'id_' . join '', map { ('a'..'z')[rand 26] } 1 .. 22}ge;
    return $path;
}

# A body that passes the route's schema: required fields, plus optional ones
# (but not an email beside an id, where a route takes one or the other).
# Ids of users are the victim member's; enums take their first value
# (for roles, the highest).
sub valid_body {
    my $r = shift;
    return () unless $r->{body};
    my @fields = @{ $r->{body} };
    my $has_id = grep { $_->{type} eq 'id' } @fields;
    my %b;
    for my $f (@fields) {
        next if !$f->{required} && $f->{type} eq 'email' && $has_id;
        my $t = $f->{type};
        $b{ $f->{name} } =
              $t eq 'string' || $t eq 'text' ? 'conformance'
            : $t eq 'int'    ? $f->{min}
            : $t eq 'bool'   ? JSON::PP::true()
            : $t eq 'enum'   ? $f->{values}[0]
            : $t eq 'slug'   ? uniq('c')
            : $t eq 'email'  ? uniq('c') . '@example.test'
            : $t eq 'id'     ? ($f->{values}[0] eq 'usr_' ? $member_id
                                : $f->{values}[0] . ('x' x 22))
            : $t eq 'object' ? {}
            : $t eq 'ints'   ? [ $f->{min} ]
            :                  'x';
    }
    return (json => \%b);
}

sub unsafe { $_[0]{method} !~ /^(?:GET|HEAD)$/ }

# --- the OpenAPI document has every row -------------------------------------
{
    my ($status, $doc) = api(GET => '/api/openapi.json');
    is($status, 200, 'openapi.json');
    for my $r (grep { !$_->{hidden} } @routes) {
        (my $p = $r->{path}) =~ s{:([A-Za-z]+)}{{$1}}g;
        my $op = $doc->{paths}{$p}{ lc $r->{method} };
        ok($op, "openapi has $r->{method} $r->{path}") or next;
        is($op->{operationId}, $r->{op_id}, "... operationId $r->{op_id}");
        is($op->{'x-svc-scope'}, $r->{scope}, "... scope $r->{scope}");
        is($op->{'x-svc-role'}, $r->{role}, "... org role $r->{role}") if $r->{tenant};
        is($op->{'x-svc-project-role'}, $r->{prole}, "... project role $r->{prole}")
            if $r->{project};
    }
    for my $r (grep { $_->{hidden} } @routes) {
        (my $p = $r->{path}) =~ s{:([A-Za-z]+)}{{$1}}g;
        ok(!$doc->{paths}{$p}{ lc $r->{method} }, "hidden: $r->{method} $r->{path}");
    }
}

# --- no credentials: 401 ------------------------------------------------------
for my $r (@user) {
    my ($status, $p, $res) = api($r->{method} => path_for($r->{path}), valid_body($r));
    is($status, 401, "no credentials: $r->{method} $r->{path} is 401");
    is($p && $p->{code}, 'unauthenticated', '... unauthenticated');
    like($res->header('WWW-Authenticate') // '', qr/^Bearer/, '... with a Bearer challenge');
}

# --- a scope below the route's: 403 insufficient_scope, nothing changes ------
# The caller owns the victim org, so only the scope can stop them.
# (Loops, not map: svcctl's helpers may clobber $_, which map aliases.)
my %owner_pat;
for my $scope (qw(read write)) {
    $owner_pat{$scope} = new_token($owner, scope => $scope);
}
# The operator's routes are the founders' only: a founder's lower tokens
# meet their scope (to anyone else they do not exist: below).
my $founder = new_user('conformance-founder', founder => 1);
my %founder_pat;
for my $scope (qw(read write)) {
    $founder_pat{$scope} = new_token($founder, scope => $scope);
}
sub operator_route { $_[0]{founder} && $_[0]{path} =~ m{^/api/admin/} }
my $scope_checks = 0;
for my $r (@user) {
    for my $have (qw(read write)) {
        next unless $scope_rank{$have} < $scope_rank{ $r->{scope} };
        my $before = db_digest();
        my ($status, $p, $res) = api($r->{method} => path_for($r->{path}),
                                     token => operator_route($r) ? $founder_pat{$have}
                                                                 : $owner_pat{$have},
                                     valid_body($r));
        is($status, 403, "$have PAT: $r->{method} $r->{path} is 403");
        is($p && $p->{code}, 'insufficient_scope', '... insufficient_scope');
        like($res->header('WWW-Authenticate') // '', qr/insufficient_scope/,
             '... and says so in WWW-Authenticate');
        is_deeply(db_digest(), $before, '... and nothing changed');
        $scope_checks++;
    }
}
my @mutating = grep { unsafe($_) } @user;
ok($scope_checks >= @mutating, "every mutating user route was called with a read PAT "
   . "(@{[ scalar @mutating ]} routes, $scope_checks scope checks)");

# --- another org's callers: 404, nothing changes -----------------------------
my $outsider = new_user('outsider');
my $their    = new_org($outsider, prefix => 'outsider');
my $out_tok  = new_token($outsider, scope => 'admin');
# The outsider maintains a project with the same slug in their own org, so a
# lookup by slug alone would find it.
($st) = api(POST => "/api/orgs/$their/projects", token => $out_tok,
            json => { slug => $proj, name => 'Same slug elsewhere' });
is($st, 201, 'outsider has a project with the same slug');
my $other_of_owner = new_org($owner, prefix => 'bound');
my @callers = (
    [ 'outsider session'   => cookie => new_session($outsider), csrf_ok() ],
    [ 'outsider admin PAT' => token  => $out_tok ],
    [ 'owner PAT bound to another org' =>
        token => new_token($owner, scope => 'admin', org => $other_of_owner) ],
);
for my $r (@tenant) {
    for my $c (@callers) {
        my ($name, @auth) = @$c;
        my $before = db_digest();
        my ($status, $p) = api($r->{method} => path_for($r->{path}), @auth, valid_body($r));
        is($status, 404, "$name: $r->{method} $r->{path} is 404");
        is($p && $p->{code}, 'not_found', '... not_found');
        is_deeply(db_digest(), $before, '... and nothing changed');
    }
}

# The same calls by the owner with the right credentials do reach the
# handlers, so the 404s above were about the caller, not the paths. (An
# event stream never ends by itself: only its head is read.)
for my $r (grep { !unsafe($_) } @tenant) {
    if ($r->{stream}) {
        # An event stream never ends by itself: its head is the answer.
        my $s = sse_open(path_for($r->{path}), token => $owner_tok);
        is($s->{status}, $r->{success}, "owner: $r->{method} $r->{path} is $r->{success}");
        like($s->{headers}{'content-type'} // '', qr{^text/event-stream},
             '... an event stream');
        sse_close($s);
        next;
    }
    my ($status) = api($r->{method} => path_for($r->{path}), token => $owner_tok);
    is($status, $r->{success}, "owner: $r->{method} $r->{path} is $r->{success}");
}

ok(scalar @tenant >= 20, scalar(@tenant) . ' tenant routes covered');

# --- the operator's routes: 404 to everyone but a founder ---------------------------------
# Issue 24: /api/admin/ is not part of the user-facing surface. Whoever is
# not a founder, by session or by a token bound to no org, is told nothing,
# and nothing changes.
{
    my @operator = grep { operator_route($_) } @user;
    my $bound_founder = new_user('conformance-bound', founder => 1);
    my @not = (
        [ 'the owner\'s session' => cookie => new_session($owner), csrf_ok() ],
        [ 'the owner\'s admin PAT' => token => $owner_tok ],
        [ 'a founder\'s admin PAT bound to an org' => token => new_token(
              $bound_founder, scope => 'admin',
              org => new_org($bound_founder, prefix => 'bound-founder')) ],
    );
    for my $r (@operator) {
        for my $c (@not) {
            my ($name, @auth) = @$c;
            my $before = db_digest();
            my ($status, $p) = api($r->{method} => path_for($r->{path}), @auth, valid_body($r));
            is($status, 404, "$name: $r->{method} $r->{path} is 404");
            is($p && $p->{code}, 'not_found', '... not_found');
            is_deeply(db_digest(), $before, '... and nothing changed');
        }
    }
    ok(scalar @operator >= 10, scalar(@operator) . ' operator routes covered');
    # A founder's unbound admin token reaches the lists, so the 404s were
    # about the callers.
    my $ftok = new_token($founder, scope => 'admin');
    for my $r (grep { !unsafe($_) && $_->{path} !~ /:/ && $_->{op_id} =~ /^admin/ } @operator) {
        my ($status) = api(GET => $r->{path}, token => $ftok);
        is($status, 200, "the founder: GET $r->{path} is 200");
    }
}

# --- the agents' routes: a deploy target's key and nothing else -------------------------
{
    my @agent = grep { $_->{auth} eq 'agent' } @routes;
    my ($st, $their_target) = api(POST => "/api/orgs/$their/deploy-targets", token => $out_tok,
                                  json => { name => 'their-box' });
    is($st, 201, "another org's deploy target");
    my $agent_path = sub {
        (my $p = $_[0]) =~ s{:workId}{$work_id};
        $p =~ s{:requestId}{$log_id};
        $p =~ s{:id}{$deployment->{id}};
        return $p;
    };
    for my $r (@agent) {
        my $path = $agent_path->($r->{path});
        for my $c ([ 'no credentials' ], [ 'the owner\'s admin PAT', token => $owner_tok ],
                   [ 'the owner\'s session', cookie => new_session($owner), csrf_ok() ]) {
            my ($name, @auth) = @$c;
            my $before = db_digest();
            my ($status, $p, $res) = api($r->{method} => $path, @auth, valid_body($r));
            is($status, 401, "$name: $r->{method} $r->{path} is 401");
            like($res->header('WWW-Authenticate') // '', qr/^Bearer/, '... with a challenge');
            is_deeply(db_digest(), $before, '... and nothing changed');
        }
        next unless $r->{path} =~ /:(?:id|workId)\b/;
        my $before = db_digest();
        my ($status, $p) = api($r->{method} => $path, token => $their_target->{key},
                               valid_body($r));
        is($status, 404, "another target's key: $r->{method} $r->{path} is 404");
        is_deeply(db_digest(), $before, '... and nothing changed');
    }
    ok(scalar @agent >= 5, scalar(@agent) . ' agent routes covered');
    # The victim's own key reaches them (the stream is opened by t/deploy/agent.t).
    my ($vs) = api(GET => '/api/agent/deployments', token => $target->{key});
    is($vs, 200, "the target's own key: GET /api/agent/deployments is 200");
}

# --- the share portal: one 404 for every dead token and every other product --
{
    my @portal = grep { $_->{auth} eq 'share' } @routes;
    my $other = new_product($org, $proj, $owner_tok);
    my $other_doc = new_document($org, $other->{id}, $owner_tok);
    my %token;
    for my $kind (qw(live revoked expired)) {
        my ($st, $sh) = api(POST => "/api/orgs/$org/products/$product->{id}/shares",
                            token => $owner_tok, json => {});
        $token{$kind} = $sh->{token};
        api(POST => "/api/orgs/$org/shares/$sh->{id}/revoke", token => $owner_tok)
            if $kind eq 'revoked';
        psql("UPDATE shares SET created_at = now() - interval '2 days', expires_at = now() - "
             . "interval '1 second' WHERE id = '$sh->{id}'") if $kind eq 'expired';
    }
    $token{unknown} = secret_token_like('svc_shr_');
    my $portal_call = sub {
        my ($r, $token, $docid) = @_;
        (my $path = $r->{path}) =~ s{:token}{$token};
        $path =~ s{:docId}{$docid};
        my @body = $r->{body} ? (json => { document_id => $docid, author_name => 'Conformance',
                                           body => 'A comment.' }) : ();
        return api($r->{method} => $path, @body);
    };
    for my $r (@portal) {
        for my $kind (qw(revoked expired unknown)) {
            my $before = db_digest();
            my ($st, $p) = $portal_call->($r, $token{$kind}, $doc->{id});
            is($st, 404, "portal, $kind token: $r->{method} $r->{path} is 404");
            is($p && $p->{code}, 'not_found', '... not_found');
            is_deeply(db_digest(), $before, '... and nothing changed');
        }
        if ($r->{path} =~ /:docId/ || $r->{body}) {
            my $before = db_digest();
            my ($st) = $portal_call->($r, $token{live}, $other_doc->{id});
            is($st, 404, "portal, another product's document: $r->{method} $r->{path} is 404");
            is_deeply(db_digest(), $before, '... and nothing changed');
        }
        my ($st) = $portal_call->($r, $token{live}, $doc->{id});
        is($st, $r->{success}, "portal, the live token: $r->{method} $r->{path} is $r->{success}");
    }
    ok(scalar @portal >= 3, scalar(@portal) . ' portal routes covered');
}
done_testing();
