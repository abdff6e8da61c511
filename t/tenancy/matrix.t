# The role matrix of docs/authorization.md, cell by cell.
#
# The matrix is read from the document itself, so the page and the code
# cannot drift: every row is called by every caller column (allowed cells
# must succeed; refused ones must answer the documented status and change
# nothing), and then with each PAT scope, a bound PAT and a session (below the
# row's scope: 403 insufficient_scope).  Every tenant route of the route table
# must have a row, and every row's scope must be the table's.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use File::Spec::Functions qw(catfile);
use SvcTest;

my @COLS = ('owner', 'admin', 'maintainer', 'developer', 'team viewer', 'member', 'viewer',
            'non-member');
my %rank = (read => 1, write => 2, admin => 3);

# --- the matrix, from the document -------------------------------------------
my $doc = catfile($ENV{SVC_TOP} // "$FindBin::Bin/../..", 'docs', 'authorization.md');
open my $fh, '<', $doc or die "$doc: $!";
my (@rows, $in);
while (<$fh>) {
    $in = 1 if /<!-- matrix/;
    next unless $in;
    last if $in && /^\s*$/ && @rows;
    next unless /^\|\s*(GET|POST|PUT|PATCH|DELETE)\s*\|/;
    (my $line = $_) =~ s/^\s*\|//;
    $line =~ s/\|\s*$//;
    my @c = map { s/^\s+|\s+$//gr } split /\|/, $line;
    my ($method, $path, $scope, @cells) = @c;
    my ($tmpl, $variant) = $path =~ /^(\S+)(?:\s+\((.+)\))?$/;
    die "matrix row with " . scalar(@cells) . " cells: $_" unless @cells == @COLS;
    push @rows, {
        method => $method, path => $tmpl, variant => $variant // '', scope => $scope,
        key => "$method $tmpl" . ($variant ? " ($variant)" : ''),
        cells => { map { $COLS[$_] => ($cells[$_] eq "\x{2713}" || $cells[$_] eq '✓'
                                        ? 'ok' : $cells[$_]) } 0 .. $#COLS },
    };
}
close $fh;
ok(@rows >= 20, scalar(@rows) . ' matrix rows in docs/authorization.md');

my %route = map { ("$_->{method} $_->{path}" => $_) } route_table();
for my $r (grep { $_->{tenant} && $_->{auth} eq 'user' } route_table()) {
    ok((grep { "$_->{method} $_->{path}" eq "$r->{method} $r->{path}" } @rows),
       "matrix has a row for $r->{method} $r->{path}");
}
for my $row (@rows) {
    my $r = $route{"$row->{method} $row->{path}"};
    ok($r, "$row->{key} is a route") or next;
    is($row->{scope}, $r->{scope}, "$row->{key}: the document's scope is the table's");
}

# --- the callers: one user per column, shared by every fixture ----------------
my (%U, %ID, %PAT);
for my $col (@COLS) {
    (my $p = $col) =~ s/ /-/g;
    $U{$col} = new_user("mx-$p");
    $ID{$col} = user_id_of($U{$col});
    $PAT{$col} = new_token($U{$col}, scope => 'admin');
}
new_org($U{'non-member'}, prefix => 'mx-elsewhere');

my %org_role = (admin => 'admin', maintainer => 'member', developer => 'member',
                'team viewer' => 'member', member => 'member', viewer => 'viewer');
my %team_role = (maintainer => 'maintainer', developer => 'developer',
                 'team viewer' => 'viewer');

# A fresh org with one user per column; the owner creates the project (and
# so is on its team as maintainer).
sub fixture {
    my $org = new_org($U{owner}, prefix => 'mx');
    svcctl('org', 'add-member', $org, $U{$_}, '--role', $org_role{$_}) for sort keys %org_role;
    my $proj = uniq('p');
    my ($st) = api(POST => "/api/orgs/$org/projects", token => $PAT{owner},
                   json => { slug => $proj, name => 'Matrix project' });
    die "fixture: project $st\n" unless $st == 201;
    for my $col (sort keys %team_role) {
        ($st) = api(POST => "/api/orgs/$org/projects/$proj/team", token => $PAT{owner},
                    json => { user_id => $ID{$col}, role => $team_role{$col} });
        die "fixture: team $st\n" unless $st == 201;
    }
    return { org => $org, proj => $proj };
}

sub fresh_member {
    my $fx = shift;
    my $e = new_user('mx-target');
    svcctl('org', 'add-member', $fx->{org}, $e, '--role', 'member');
    return user_id_of($e);
}

sub fresh_member_email {
    my $fx = shift;
    my $e = new_user('mx-target');
    svcctl('org', 'add-member', $fx->{org}, $e, '--role', 'member');
    return $e;
}

sub fresh_team_member {
    my $fx = shift;
    my $id = fresh_member($fx);
    my ($st) = api(POST => "/api/orgs/$fx->{org}/projects/$fx->{proj}/team",
                   token => $PAT{owner}, json => { user_id => $id, role => 'developer' });
    die "fresh_team_member: $st\n" unless $st == 201;
    return $id;
}

sub invite {
    my ($fx, $project) = @_;
    my $path = $project ? "/api/orgs/$fx->{org}/projects/$fx->{proj}/team"
                        : "/api/orgs/$fx->{org}/members";
    my ($st, $inv) = api(POST => $path, token => $PAT{owner},
                         json => { email => uniq('mx-inv') . '@example.test',
                                   role => $project ? 'developer' : 'member' });
    die "invite: $st\n" unless $st == 201;
    return $inv->{id};
}

# Providers, products, documents, patches and shares of a fixture, made by
# the owner. The model is a fake (t/lib/FakeLLM.pm) whose every answer is a
# usable regeneration and patch.
my $LLM = new_llm(flavor => 'openai');
$LLM->control(reply => json()->encode({ summary => 'A matrix change.',
                                        body => "# Matrix\n\nRewritten by the model.\n" }));

sub provider {
    my $fx = shift;
    $fx->{provider} //= new_provider($fx->{org}, $PAT{owner}, $LLM, name => uniq('mx-llm'))->{id};
    return $fx->{provider};
}

sub fresh_provider {
    my $fx = shift;
    provider($fx);                      # the fixture's default stays the first one
    return new_provider($fx->{org}, $PAT{owner}, $LLM, name => uniq('mx-llm'))->{id};
}

sub product {
    my $fx = shift;
    $fx->{product} //= new_product($fx->{org}, $fx->{proj}, $PAT{owner})->{id};
    return $fx->{product};
}

sub fresh_doc {
    my $fx = shift;
    return new_document($fx->{org}, product($fx), $PAT{owner}, body => "# Matrix\n\nFirst.\n");
}

sub fresh_patch {
    my $fx = shift;
    provider($fx);
    my $d = fresh_doc($fx);
    my ($st, $p) = api(POST => "/api/orgs/$fx->{org}/documents/$d->{id}/patches",
                       token => $PAT{owner}, json => { instructions => 'Change it.' });
    die "fresh_patch: $st\n" unless $st == 201;
    return $p->{id};
}

sub fresh_share {
    my $fx = shift;
    my ($st, $p) = api(POST => "/api/orgs/$fx->{org}/products/" . product($fx) . '/shares',
                       token => $PAT{owner}, json => {});
    die "fresh_share: $st\n" unless $st == 201;
    return $p->{id};
}

# How to call each row: ($fixture, $column) → (path parameters, body).  The
# targets are made fresh for every call, so an allowed call never spoils the
# next one and a refused call is refused for the caller's role alone.
my %call = (
    'GET /api/orgs/:orgSlug'                     => sub { ({}) },
    'PATCH /api/orgs/:orgSlug'                   => sub { ({}, { name => uniq('renamed') }) },
    'POST /api/orgs/:orgSlug/transfer-ownership' => sub { ({}, { user_id => $ID{admin} }) },
    'GET /api/orgs/:orgSlug/members'             => sub { ({}) },
    'POST /api/orgs/:orgSlug/members'            => sub {
        ({}, { email => uniq('mx-new') . '@example.test', role => 'member' }) },
    'PATCH /api/orgs/:orgSlug/members/:userId'   => sub {
        ({ userId => fresh_member($_[0]) }, { role => 'viewer' }) },
    'DELETE /api/orgs/:orgSlug/members/:userId (another member)' => sub {
        ({ userId => fresh_member($_[0]) }) },
    'DELETE /api/orgs/:orgSlug/members/:userId (yourself)' => sub { ({ userId => $ID{ $_[1] } }) },
    'GET /api/orgs/:orgSlug/invites'             => sub { ({}) },
    'DELETE /api/orgs/:orgSlug/invites/:id'      => sub { ({ id => invite($_[0], 0) }) },
    'GET /api/orgs/:orgSlug/projects'            => sub { ({}) },
    'POST /api/orgs/:orgSlug/projects'           => sub {
        ({}, { slug => uniq('np'), name => 'New project' }) },
    'GET /api/orgs/:orgSlug/projects/:projectSlug'   => sub { ({}) },
    'PATCH /api/orgs/:orgSlug/projects/:projectSlug' => sub {
        ({}, { description => uniq('described') }) },
    'GET /api/orgs/:orgSlug/projects/:projectSlug/team' => sub { ({}) },
    'POST /api/orgs/:orgSlug/projects/:projectSlug/team (an org member)' => sub {
        ({}, { user_id => fresh_member($_[0]), role => 'developer' }) },
    'POST /api/orgs/:orgSlug/projects/:projectSlug/team (invite an org member by email)' => sub {
        ({}, { email => fresh_member_email($_[0]), role => 'developer' }) },
    'POST /api/orgs/:orgSlug/projects/:projectSlug/team (invite an outsider by email)' => sub {
        ({}, { email => uniq('mx-outsider') . '@example.test', role => 'developer' }) },
    'PATCH /api/orgs/:orgSlug/projects/:projectSlug/team/:userId' => sub {
        ({ userId => fresh_team_member($_[0]) }, { role => 'maintainer' }) },
    'DELETE /api/orgs/:orgSlug/projects/:projectSlug/team/:userId (another member)' => sub {
        ({ userId => fresh_team_member($_[0]) }) },
    'DELETE /api/orgs/:orgSlug/projects/:projectSlug/team/:userId (yourself)' => sub {
        ({ userId => $ID{ $_[1] } }) },
    'GET /api/orgs/:orgSlug/projects/:projectSlug/team/invites' => sub { ({}) },
    'DELETE /api/orgs/:orgSlug/projects/:projectSlug/team/invites/:id' => sub {
        ({ id => invite($_[0], 1) }) },
    'GET /api/orgs/:orgSlug/audit'               => sub { ({}) },
    'GET /api/orgs/:orgSlug/audit/verify'        => sub { ({}) },
    'GET /api/orgs/:orgSlug/events'              => sub { ({}) },
    'GET /api/orgs/:orgSlug/projects/:projectSlug/runs' => sub { ({}) },
    'POST /api/orgs/:orgSlug/projects/:projectSlug/runs' => sub {
        ({}, { instructions => 'A matrix run' }) },
    'GET /api/orgs/:orgSlug/projects/:projectSlug/runs/:runId' => sub { run_of($_[0]) },
    'POST /api/orgs/:orgSlug/projects/:projectSlug/runs/:runId/cancel' => sub {
        ({ runId => run_fixture($_[0]{org}, $_[0]{proj}, status => 'running') }) },
    'GET /api/orgs/:orgSlug/projects/:projectSlug/runs/:runId/events' => sub { run_of($_[0]) },
    'GET /api/orgs/:orgSlug/runs/:runId/logs'    => sub { run_of($_[0]) },
    'GET /api/orgs/:orgSlug/runs/:runId/artifact' => sub { run_of($_[0]) },

    'GET /api/orgs/:orgSlug/providers'           => sub { provider($_[0]); ({}) },
    'POST /api/orgs/:orgSlug/providers'          => sub {
        ({}, { name => uniq('mx-p'), kind => 'openai', base_url => $LLM->url,
               model => 'gpt-4o-mini', api_key => $LLM->key }) },
    'GET /api/orgs/:orgSlug/providers/:id'       => sub { ({ id => provider($_[0]) }) },
    'PATCH /api/orgs/:orgSlug/providers/:id'     => sub {
        ({ id => fresh_provider($_[0]) }, { model => 'gpt-4o' }) },
    'DELETE /api/orgs/:orgSlug/providers/:id'    => sub { ({ id => fresh_provider($_[0]) }) },
    'POST /api/orgs/:orgSlug/providers/:id/test' => sub { ({ id => provider($_[0]) }) },
    'POST /api/orgs/:orgSlug/providers/:id/default' => sub { ({ id => fresh_provider($_[0]) }) },
    'GET /api/orgs/:orgSlug/projects/:projectSlug/products' => sub { ({}) },
    'POST /api/orgs/:orgSlug/projects/:projectSlug/products' => sub {
        ({}, { name => uniq('mx-product') }) },
    'GET /api/orgs/:orgSlug/products/:productId' => sub { ({ productId => product($_[0]) }) },
    'GET /api/orgs/:orgSlug/products/:productId/documents' => sub {
        ({ productId => product($_[0]) }) },
    'POST /api/orgs/:orgSlug/products/:productId/documents' => sub {
        ({ productId => product($_[0]) }, { kind => 'section', title => 'New', body => '# New' }) },
    'GET /api/orgs/:orgSlug/documents/:docId'    => sub { ({ docId => fresh_doc($_[0])->{id} }) },
    'GET /api/orgs/:orgSlug/documents/:docId/versions' => sub {
        ({ docId => fresh_doc($_[0])->{id} }) },
    'POST /api/orgs/:orgSlug/documents/:docId/edit' => sub {
        my $d = fresh_doc($_[0]);
        ({ docId => $d->{id} }, { body => '# Edited', base_version_id => $d->{current_version}{id} }) },
    'POST /api/orgs/:orgSlug/documents/:docId/regenerate' => sub {
        provider($_[0]);
        ({ docId => fresh_doc($_[0])->{id} }, {}) },
    'GET /api/orgs/:orgSlug/documents/:docId/patches' => sub {
        ({ docId => fresh_doc($_[0])->{id} }) },
    'POST /api/orgs/:orgSlug/documents/:docId/patches' => sub {
        provider($_[0]);
        ({ docId => fresh_doc($_[0])->{id} }, { instructions => 'Change it.' }) },
    'GET /api/orgs/:orgSlug/documents/:docId/comments' => sub {
        ({ docId => fresh_doc($_[0])->{id} }) },
    'GET /api/orgs/:orgSlug/doc-versions/:versionId/content' => sub {
        ({ versionId => fresh_doc($_[0])->{current_version}{id} }) },
    'POST /api/orgs/:orgSlug/doc-versions/:versionId/approve' => sub {
        ({ versionId => fresh_doc($_[0])->{current_version}{id} }) },
    'POST /api/orgs/:orgSlug/doc-versions/:versionId/request-changes' => sub {
        ({ versionId => fresh_doc($_[0])->{current_version}{id} }, { comment => 'More.' }) },
    'POST /api/orgs/:orgSlug/patches/:patchId/accept' => sub { ({ patchId => fresh_patch($_[0]) }) },
    'POST /api/orgs/:orgSlug/patches/:patchId/reject' => sub { ({ patchId => fresh_patch($_[0]) }) },
    'GET /api/orgs/:orgSlug/products/:productId/shares' => sub {
        ({ productId => product($_[0]) }) },
    'POST /api/orgs/:orgSlug/products/:productId/shares' => sub {
        ({ productId => product($_[0]) }, {}) },
    'POST /api/orgs/:orgSlug/shares/:shareId/revoke' => sub { ({ shareId => fresh_share($_[0]) }) },

    'GET /api/orgs/:orgSlug/requests'            => sub { fresh_request($_[0]); ({}) },
    'POST /api/orgs/:orgSlug/requests'           => sub {
        ({}, { project => $_[0]{proj}, kind => 'build', title => 'A matrix request',
               body => 'Build it.' }) },
    'GET /api/orgs/:orgSlug/requests/:requestId' => sub { ({ requestId => fresh_request($_[0]) }) },
    'PATCH /api/orgs/:orgSlug/requests/:requestId' => sub {
        ({ requestId => fresh_request($_[0]) }, { title => uniq('retitled') }) },
    'GET /api/orgs/:orgSlug/requests/:requestId/lifecycle' => sub {
        ({ requestId => fresh_request($_[0], 'build') }) },
    'POST /api/orgs/:orgSlug/requests/:requestId/advance' => sub {
        ({ requestId => fresh_request($_[0]) }) },
    'POST /api/orgs/:orgSlug/requests/:requestId/advance-to-build' => sub {
        ({ requestId => fresh_request($_[0], 'review') }) },
    'POST /api/orgs/:orgSlug/requests/:requestId/build-tasks/run-all' => sub {
        ({ requestId => fresh_request($_[0], 'build') }) },
    'POST /api/orgs/:orgSlug/requests/:requestId/build/pause' => sub {
        ({ requestId => fresh_request($_[0], 'build') }) },
    'POST /api/orgs/:orgSlug/requests/:requestId/build/resume' => sub {
        my $id = fresh_request($_[0], 'build');
        psql("UPDATE requests SET status = 'paused' WHERE id = '$id'");
        ({ requestId => $id }) },
    'POST /api/orgs/:orgSlug/requests/:requestId/cancel' => sub {
        ({ requestId => fresh_request($_[0]) }) },
    'POST /api/orgs/:orgSlug/requests/:requestId/integration/approve' => sub {
        ({ requestId => fresh_request($_[0], 'integration') }) },
    'GET /api/orgs/:orgSlug/requests/:requestId/build-cost-estimate' => sub {
        ({ requestId => fresh_request($_[0], 'build') }) },
    'GET /api/orgs/:orgSlug/projects/:projectSlug/improvements' => sub { ({}) },
    'POST /api/orgs/:orgSlug/projects/:projectSlug/improvements' => sub {
        ({}, { kind => 'bug', title => 'It breaks', body => 'When I click.' }) },
    'POST /api/orgs/:orgSlug/improvements/:id/approve' => sub { ({ id => fresh_improvement($_[0]) }) },
    'POST /api/orgs/:orgSlug/improvements/:id/reject' => sub {
        ({ id => fresh_improvement($_[0]) }, { reason => 'Not now.' }) },
    'POST /api/orgs/:orgSlug/attachments' => sub {
        ({ -query => 'document_id=' . fresh_doc($_[0])->{id} . '&filename=m.txt' },
         { -raw => 'matrix', -type => 'text/plain' }) },
    'GET /api/orgs/:orgSlug/attachments' => sub { ({}) },
    'GET /api/orgs/:orgSlug/attachments/:id' => sub { ({ id => fresh_attachment($_[0], 'owner') }) },
    'GET /api/orgs/:orgSlug/attachments/:id/content' => sub {
        ({ id => fresh_attachment($_[0], 'owner') }) },
    "DELETE /api/orgs/:orgSlug/attachments/:id (the owner's)" => sub {
        ({ id => fresh_attachment($_[0], 'owner') }) },
    'DELETE /api/orgs/:orgSlug/attachments/:id (yours)' => sub {
        ({ id => fresh_attachment($_[0], $_[1]) }) },

    # The code-hosting App, against the fake provider (t/lib/FakeVcs.pm).
    'POST /api/orgs/:orgSlug/vcs/install'        => sub { ({}) },
    'GET /orgs/:orgSlug/vcs/install'             => sub { ({}) },
    'GET /api/orgs/:orgSlug/vcs/installations'   => sub { ({}) },
    'DELETE /api/orgs/:orgSlug/vcs/installations/:id' => sub {
        ({ id => vcs_record_installation($_[0]{org}, vcs_installation())->{id} }) },
    'GET /api/orgs/:orgSlug/vcs/repositories'    => sub { ({}) },
    'POST /api/orgs/:orgSlug/vcs/repositories'   => sub {
        ({}, { name => uniq('mx'), installation_id => vcs_fixture($_[0])->{id} + 0 }) },
    'GET /api/orgs/:orgSlug/projects/:projectSlug/repository' => sub { ({}) },
    'PUT /api/orgs/:orgSlug/projects/:projectSlug/repository' => sub {
        my $i = vcs_fixture($_[0]);
        ({}, { installation_id => $i->{id} + 0, full_name => "$i->{login}/api" }) },
    'DELETE /api/orgs/:orgSlug/projects/:projectSlug/repository' => sub { ({}) },

    # Deploy targets and deployments (docs/api/deployments.md).
    'GET /api/orgs/:orgSlug/deploy-targets'      => sub { target($_[0]); ({}) },
    'POST /api/orgs/:orgSlug/deploy-targets'     => sub { ({}, { name => uniq('box') }) },
    'DELETE /api/orgs/:orgSlug/deploy-targets/:id' => sub { ({ id => fresh_target($_[0]) }) },
    'POST /api/orgs/:orgSlug/deploy-targets/:id/rotate-key' => sub {
        ({ id => fresh_target($_[0]) }) },
    'GET /api/orgs/:orgSlug/deployments'         => sub { ({}) },
    'POST /api/orgs/:orgSlug/deployments'        => sub {
        ({}, { project => $_[0]{proj}, target_id => target($_[0]),
               run_id => run_of($_[0])->{runId} }) },
    'GET /api/orgs/:orgSlug/deployments/:id'     => sub {
        ({ id => fresh_deployment($_[0], 'planned') }) },
    'POST /api/orgs/:orgSlug/deployments/:id/approve' => sub {
        ({ id => fresh_deployment($_[0], 'planned') }, { plan_version => 1 }) },
    'POST /api/orgs/:orgSlug/deployments/:id/replan' => sub {
        ({ id => fresh_deployment($_[0], 'planned') }) },
    'POST /api/orgs/:orgSlug/deployments/:id/stop' => sub {
        ({ id => fresh_deployment($_[0], 'running') }) },
    'POST /api/orgs/:orgSlug/deployments/:id/start' => sub {
        ({ id => fresh_deployment($_[0], 'stopped') }) },
    'POST /api/orgs/:orgSlug/deployments/:id/scale' => sub {
        ({ id => fresh_deployment($_[0], 'running') }, { replicas => 2 }) },
    'POST /api/orgs/:orgSlug/deployments/:id/teardown' => sub {
        ({ id => fresh_deployment($_[0], 'planned') }) },
    'POST /api/orgs/:orgSlug/deployments/:id/separate' => sub {
        ({ id => fresh_deployment($_[0], 'running') }) },
    'POST /api/orgs/:orgSlug/deployments/:id/request-logs' => sub {
        ({ id => fresh_deployment($_[0], 'running') }, { lines => 20 }) },
    'GET /api/orgs/:orgSlug/deployments/:id/logs' => sub {
        ({ id => fresh_deployment($_[0], 'running', logs => 1) }) },
    'GET /api/orgs/:orgSlug/deployments/:id/metrics' => sub {
        ({ id => fresh_deployment($_[0], 'running') }) },
    'GET /api/orgs/:orgSlug/deployments/:id/uptime' => sub {
        ({ id => fresh_deployment($_[0], 'running') }) },
    # Billing, against the fake payment provider (t/lib/FakeStripe.pm).
    'GET /api/orgs/:orgSlug/billing/plans'       => sub { ({}) },
    'GET /api/orgs/:orgSlug/billing'             => sub { ({}) },
    'GET /api/orgs/:orgSlug/usage'               => sub { ({}) },
    'POST /api/orgs/:orgSlug/billing/checkout'   => sub {
        ({}, { plan => 'team', success_url => base_url() . '/billing/ok',
               cancel_url => base_url() . '/billing' }) },
    'POST /api/orgs/:orgSlug/billing/portal'     => sub {
        ({}, { return_url => base_url() . '/billing' }) },
    'GET /api/orgs/:orgSlug/billing/payment-method' => sub { ({}) },
    'PUT /api/orgs/:orgSlug/billing/payment-method' => sub {
        ({}, { payment_method => 'pm_card_visa' }) },
    'GET /api/orgs/:orgSlug/billing/budget'      => sub { ({}) },
    'PUT /api/orgs/:orgSlug/billing/budget'      => sub { ({}, { monthly_usd => 100 }) },
);

# The fixture's deploy target, and fresh ones (made by the owner).
sub target {
    my $fx = shift;
    $fx->{target} //= fresh_target($fx);
    return $fx->{target};
}

sub fresh_target {
    my $fx = shift;
    my ($st, $t) = api(POST => "/api/orgs/$fx->{org}/deploy-targets", token => $PAT{owner},
                       json => { name => uniq('box') });
    die "fresh_target: $st\n" unless $st == 201;
    return $t->{id};
}

# A deployment of the fixture's run on its target, as the planner and an
# agent would have left it in `status`: planned (plan version 1), or
# running or stopped on that plan.
sub fresh_deployment {
    my ($fx, $status, %opt) = @_;
    my $id = 'dep_' . join '', map { ('a'..'z', 'A'..'Z')[rand 52] } 1 .. 22;
    my $plan = '{"command": "python3 -m http.server $PORT", "port_env": "PORT", '
             . '"health_path": "/", "replicas": 1, "memory_mb": 512, "notes": "", '
             . '"source": "procfile"}';
    my $applied = $status eq 'planned' ? 'NULL' : "'" . substr($plan, 0, -1)
                                                  . ', "version": 1}\'::jsonb';
    psql("INSERT INTO deployments (id, org_id, project_id, target_id, run_id, status, plan, "
         . "plan_version, applied_plan, replicas, created_by) SELECT '$id', p.org_id, p.id, "
         . "'" . target($fx) . "', '" . run_of($fx)->{runId} . "', '$status', '$plan'::jsonb, "
         . "1, $applied, " . ($status eq 'running' ? 1 : 0) . ", '$ID{owner}' FROM projects p "
         . "WHERE p.slug = '$fx->{proj}' AND p.org_id = '" . org_id_of($fx->{org}) . "'");
    # With logs as an agent uploads them (logs => 1).
    psql("INSERT INTO deploy_log_requests (id, org_id, deployment_id, target_id, lines, "
         . "uploaded_at, body) SELECT 'lgr_' || substr(md5(random()::text), 1, 22), org_id, "
         . "id, target_id, 10, now(), E'replica 0 | started\\n' FROM deployments "
         . "WHERE id = '$id'") if $opt{logs};
    return $id;
}

# A request of the fixture's project, made by the owner and brought to
# `stage` (intake unless said): its documents written and approved on the
# way; integration is reached by a change of the row, as no run is needed
# to decide who may approve it.
sub fresh_request {
    my ($fx, $stage) = @_;
    $stage //= 'intake';
    my $id = new_request($fx->{org}, $PAT{owner}, project => $fx->{proj})->{id};
    for my $next (qw(planning review build integration)) {
        last if $stage eq 'intake';
        if ($next eq 'review') {
            # A section, and every document approved (what build needs).
            my (undef, $r) = api(GET => "/api/orgs/$fx->{org}/requests/$id", token => $PAT{owner});
            new_document($fx->{org}, $r->{product_id}, $PAT{owner}, body => "# Part\n\nDo it.\n");
            approve_documents($fx->{org}, $PAT{owner}, $r->{product_id});
        }
        if ($next eq 'integration') {
            psql("UPDATE requests SET stage = 'integration' WHERE id = '$id'");
        }
        else {
            my ($st) = advance($fx->{org}, $PAT{owner}, $id);
            die "fresh_request: advance to $next: $st\n" unless $st == 200;
        }
        last if $next eq $stage;
    }
    return $id;
}

sub fresh_improvement {
    my $fx = shift;
    my ($st, $i) = api(POST => "/api/orgs/$fx->{org}/projects/$fx->{proj}/improvements",
                       token => $PAT{owner}, json => { kind => 'feature', title => 'Ask',
                                                       body => 'More.' });
    die "fresh_improvement: $st\n" unless $st == 201;
    return $i->{id};
}

# An attachment uploaded by the column's user (a viewer cannot upload: its
# row is written as if they had).
sub fresh_attachment {
    my ($fx, $col) = @_;
    my $doc = fresh_doc($fx)->{id};
    if ($col eq 'viewer' || $col eq 'non-member') {
        my $id = 'att_' . join '', map { ('a'..'z')[rand 26] } 1 .. 22;
        psql("INSERT INTO attachments (id, org_id, document_id, filename, content_type, size, "
             . "sha256, chunks, created_by) VALUES ('$id', '" . org_id_of($fx->{org})
             . "', '$doc', 'v.txt', 'text/plain', 0, sha256(''::bytea), 0, '$ID{$col}')");
        return $id;
    }
    my ($st, $a) = api(POST => "/api/orgs/$fx->{org}/attachments?document_id=$doc&filename=a.txt",
                       token => $PAT{$col}, raw => 'attached',
                       headers => { 'Content-Type' => 'text/plain' });
    die "fresh_attachment: $st\n" unless $st == 201;
    return $a->{id};
}

# A finished run of the fixture's project (its artifact exists, its event
# stream ends), made once per fixture.
sub run_of {
    my $fx = shift;
    $fx->{run} //= run_fixture($fx->{org}, $fx->{proj}, status => 'succeeded');
    return ({ runId => $fx->{run} });
}

# The fixture's installation of the App: one repository, and the permission
# to create more.
sub vcs_fixture {
    my $fx = shift;
    $fx->{vcs} //= vcs_record_installation($fx->{org}, vcs_installation(
        repos => ['api'],
        permissions => { contents => 'read', metadata => 'read', administration => 'write' }));
    return $fx->{vcs};
}

# Rows whose allowed call changes who may call it next (the owner is an
# admin after a transfer; whoever left is gone): one fixture per call.
my %once = map { $_ => 1 } ('POST /api/orgs/:orgSlug/transfer-ownership',
                            grep { /\(yourself\)$/ } keys %call);

sub fill {
    my ($tmpl, $fx, $params) = @_;
    (my $path = $tmpl) =~ s{:orgSlug}{$fx->{org}}g;
    $path =~ s{:projectSlug}{$fx->{proj}}g;
    $path =~ s{:(\w+)}{$params->{$1} // die "no value for :$1 in $tmpl\n"}ge;
    return $params->{-query} ? "$path?$params->{-query}" : $path;
}

my %code_of = (403 => 'forbidden', 404 => 'not_found', 409 => 'owner_protected');

# prepare() makes the call's targets (before any digest is taken);
# send() makes the call.
sub prepare {
    my ($row, $fx, $col) = @_;
    my ($params, $body) = $call{ $row->{key} }->($fx, $col);
    return [ fill($row->{path}, $fx, $params), $body ];
}

sub send_call {
    my ($row, $req, @auth) = @_;
    my ($path, $body) = @$req;
    if ($route{"$row->{method} $row->{path}"}{stream}) {
        # An event stream never ends by itself: its head is the answer.
        my $s = sse_open($path, @auth);
        sse_close($s);
        return ($s->{status}, $s->{problem});
    }
    my %opt = @auth;
    my %headers;
    # A raw body ({-raw, -type}) goes as it is, with its own type.
    if (defined $body && exists $body->{-raw}) {
        $opt{raw} = $body->{-raw};
        $headers{'Content-Type'} = $body->{-type};
    }
    elsif (defined $body) {
        $opt{json} = $body;
    }
    %headers = (%headers, %{ { csrf_ok() }->{headers} }) if exists $opt{cookie};
    $opt{headers} = \%headers if %headers;
    return api($row->{method} => $path, %opt);
}

# --- every cell --------------------------------------------------------------
for my $row (@rows) {
    ok($call{ $row->{key} }, "$row->{key}: the test knows how to call it") or next;
    my $success = $route{"$row->{method} $row->{path}"}{success};
    my $fx = fixture();
    # Refused callers first: they must change nothing, and an allowed call
    # may change the fixture (a transfer makes the owner an admin).
    for my $col (sort { ($row->{cells}{$a} eq 'ok') <=> ($row->{cells}{$b} eq 'ok') } @COLS) {
        my $want = $row->{cells}{$col};
        if ($want eq 'ok' && $once{ $row->{key} } && $fx->{used}++) {
            $fx = fixture();
            $fx->{used} = 1;
        }
        my $req = prepare($row, $fx, $col);
        if ($want eq 'ok') {
            my ($st, $p) = send_call($row, $req, token => $PAT{$col});
            is($st, $success, "$row->{key} as $col: $success")
                or diag(explain($p));
            next;
        }
        my $before = db_digest();
        my ($st, $p) = send_call($row, $req, token => $PAT{$col});
        is($st, $want, "$row->{key} as $col: $want") or diag(explain($p));
        is($p && $p->{code}, $code_of{$want}, "... $code_of{$want}");
        # The fresh targets the call itself needed were made before $before.
        is_deeply(db_digest(), $before, '... and nothing changed');
    }
}

# --- every scope, a bound PAT and a session, by an allowed caller -------------
my %scoped;
for my $row (@rows) {
    next unless $call{ $row->{key} };
    my ($col) = grep { $row->{cells}{$_} eq 'ok' } @COLS;
    my $success = $route{"$row->{method} $row->{path}"}{success};
    my $fx = fixture();
    my @creds;
    for my $scope (qw(read write admin)) {
        $scoped{$col}{$scope} //= new_token($U{$col}, scope => $scope);
        push @creds, [ "$scope PAT" => $scope, token => $scoped{$col}{$scope} ];
    }
    push @creds, [ 'PAT bound to the org' => 'admin',
                   token => new_token($U{$col}, scope => 'admin', org => $fx->{org}) ];
    push @creds, [ 'session' => 'admin', cookie => new_session($U{$col}) ];
    for my $c (@creds) {
        my ($name, $scope, @auth) = @$c;
        if ($rank{$scope} < $rank{ $row->{scope} }) {
            my $req = prepare($row, $fx, $col);
            my $before = db_digest();
            my ($st, $p) = send_call($row, $req, @auth);
            is($st, 403, "$row->{key} as $col with a $name: 403");
            is($p && $p->{code}, 'insufficient_scope', '... insufficient_scope');
            is_deeply(db_digest(), $before, '... and nothing changed');
            next;
        }
        if ($once{ $row->{key} } && $fx->{used}++) {
            $fx = fixture();
            $fx->{used} = 1;
            # A bound PAT is bound to the org it was made for.
            $auth[1] = new_token($U{$col}, scope => 'admin', org => $fx->{org})
                if $name =~ /bound/;
        }
        my ($st, $p) = send_call($row, prepare($row, $fx, $col), @auth);
        is($st, $success, "$row->{key} as $col with a $name: $success") or diag(explain($p));
    }
}

# --- the operator's routes (issue 24): every column, every credential, 404 ---------------------
# /api/admin/ is the founders'; to any member of any org, by any
# credential (an org-bound admin token included), it does not exist.
{
    my $fx = fixture();
    my @operator = grep { $_->{founder} && $_->{path} =~ m{^/api/admin/} } route_table();
    ok(scalar @operator >= 10, scalar(@operator) . ' operator routes');
    my %creds;
    for my $col (@COLS) {
        $creds{$col} = [ [ 'admin PAT' => token => $PAT{$col} ],
                         [ 'session' => cookie => new_session($U{$col}), csrf_ok() ] ];
        push @{ $creds{$col} }, [ 'PAT bound to the org' => token =>
                                  new_token($U{$col}, scope => 'admin', org => $fx->{org}) ]
            unless $col eq 'non-member';
    }
    for my $r (@operator) {
        (my $path = $r->{path}) =~ s{:orgSlug}{$fx->{org}};
        $path =~ s{:userId}{$ID{owner}};
        $path =~ s{:[A-Za-z]+}{id_missing}g;
        for my $col (@COLS) {
            for my $c (@{ $creds{$col} }) {
                my ($name, @auth) = @$c;
                my $before = db_digest();
                my ($st, $p) = api($r->{method} => $path, @auth,
                                   $r->{method} eq 'POST' ? (json => { reason => 'matrix' }) : ());
                is($st, 404, "$r->{method} $r->{path} as $col with a $name: 404");
                is_deeply(db_digest(), $before, '... and nothing changed');
            }
        }
    }
}

done_testing();
