# A new svc-agent against a service that predates telemetry numbering
# (t/deploy/telemetry_compat.t; docs/api/deployments.md, "Telemetry";
# docs/operations.md, "Upgrading"): agents are upgraded on their own
# schedule, often before the service.
#
# The service of before is reproduced by a small proxy (t/lib/AgentProxy.pm)
# in front of httpd: a telemetry batch carrying `boot` gets exactly the 400
# that service answered (the kernel's own problem document for an unknown
# member, taken from httpd's answer to one and renamed to `boot`);
# everything else is relayed. The agent must then resend the same batch at
# once without boot and seq, go on unnumbered, warn once, and lose nothing:
# the database holds every figure it sent, and no boot for its target.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use AgentProxy;
use File::Path qw(remove_tree);
use File::Spec::Functions qw(catfile);
use File::Temp qw(tempdir);
use SvcTest;
use SvcDeploy;

skip_without_sandbox();

my $owner = new_user('telc-owner');
my $org = new_org($owner, prefix => 'telc');
my $tok = new_token($owner, scope => 'admin');
my $proj = new_project($org, $tok, 'Unnumbered');

my ($bundle, $commit) = ok_app_bundle();

my $target = new_target($org, $tok, 'telc-1');
my $dep = planned_deployment($org, $tok, $proj, $target, $bundle, $commit);
ok($dep, 'a deployment on the target, planned');

# The old service's answer: the kernel's real one to an unknown member.
my ($ost, $oproblem, $ores) = api(POST => '/api/agent/telemetry', token => $target->{key},
                                  json => { zzz => 1, deployments => {} });
is($ost, 400, 'an unknown member in a batch: 400');
is_deeply([ map { [ $_->{field}, $_->{code} ] } @{ $oproblem->{errors} // [] } ],
          [ [ 'zzz', 'unknown_field' ] ], '... naming it, unknown_field')
    or diag(explain($oproblem));
my $old_ct = $ores->header('Content-Type');
(my $old_body = $ores->content) =~ s/\bzzz\b/boot/g;
like($old_body, qr/"field":\s*"boot"/, 'the old service\'s 400 names boot');

# The proxy (t/lib/AgentProxy.pm): each telemetry batch is written to $plog
# as "<answer> <boot|-> <figures of the deployment> <seqs|-> <metrics taken>
# <probes taken>", the answer "old" for one refused as the old service would.
my $pdir = tempdir('telcompat-proxy-XXXX', DIR => SvcTest::t_logs(), CLEANUP => 1);
my $plog = catfile($pdir, 'batches');

sub old_service {
    my ($batch, $relay) = @_;
    my $sent = eval { SvcTest::json()->decode($batch) } // {};
    my $mine = $sent->{deployments}{ $dep->{id} } // {};
    my @figs = (@{ $mine->{metrics} // [] }, @{ $mine->{probes} // [] });
    my $line = join ' ', $sent->{boot} // '-', scalar(@figs),
               join(',', map { $_->{seq} // '-' } @figs) || '-';
    if (exists $sent->{boot}) {
        AgentProxy::append($plog, "old $line 0 0");
        return join "\r\n", 'HTTP/1.1 400 Bad Request', "Content-Type: $old_ct",
                    'Content-Length: ' . length($old_body), 'Connection: close', '', $old_body;
    }
    my ($status, $answer, $taken) = $relay->();
    AgentProxy::append($plog, join ' ', $status, $line, $taken->{metrics} // 0,
                       $taken->{probes} // 0);
    return $answer;
}

sub batches {
    open my $fh, '<', $plog or return ();
    return map { chomp; [ split / / ] } <$fh>;
}

sub rows {
    my $id = shift;
    return [ map { psql_value("SELECT count(*) FROM $_ WHERE deployment_id = '$id'") + 0 }
             qw(deploy_metrics deploy_probes) ];
}

my $proxy = AgentProxy::start(\&old_service);
my $agent = AgentProxy::agent($proxy, $target, 'telc-1');
my ($st) = api(POST => "/api/orgs/$org/deployments/$dep->{id}/approve", token => $tok,
               json => { plan_version => $dep->{plan}{version} });
is($st, 200, 'the deployment on the agent behind the old service: approved');
ok(wait_deployment($org, $tok, $dep->{id}, 'running', timeout => 90), '... running')
    or diag(agent_log($agent));
# The refused batch, its resend and two more, all taken.
ok(wait_for(sub {
    my @b = batches();
    (grep { $_->[0] eq '200' && $_->[2] > 0 } @b) >= 3
}, timeout => 30, interval => 0.3), 'three batches of figures taken through the old service')
    or diag(explain([ batches() ]), agent_log($agent));
is(stop_agent($agent), 0, 'the agent stops');
AgentProxy::stop($proxy);

my @b = batches();
my @old = grep { $_->[0] eq 'old' } @b;
is(scalar(@old), 1, 'one batch refused for its boot') or diag(explain(\@b));
is($b[0][0], 'old', '... the first');
like($old[0][1] // '', qr/^[0-9a-f]{32}$/, '... which it carried');
ok(($old[0][2] // 0) > 0 && !grep({ !/^\d+$/ } split /,/, $old[0][3] // '-'),
   '... with a seq on each of its figures');
is_deeply([ @{ $b[1] // [] }[0 .. 2] ], [ 200, '-', $old[0][2] ],
          'the next batch: its figures again at once, without boot, taken')
    or diag(explain(\@b));
is($b[1][4] + $b[1][5], $old[0][2], '... every one of them');
is_deeply([ grep { $_->[0] ne 'old' && ($_->[1] ne '-' || $_->[3] =~ /\d/) } @b ], [],
          'no boot nor seq in any batch after it');
is_deeply([ grep { $_->[0] !~ /^(old|200)$/ } @b ], [], '... and no other answer');
my $sent = 0;
$sent += $_->[2] for grep { $_->[0] eq '200' } @b;
my $stored = rows($dep->{id});
is($stored->[0] + $stored->[1], $sent, "the database holds every figure sent ($sent)");
ok($stored->[0] > 0 && $stored->[1] > 0, '... samples and probes');
is(psql_value("SELECT count(*) FROM deploy_telemetry_boots WHERE target_id = "
              . "'$target->{id}'"), 0, '... unnumbered: no boot recorded for the target');
my $log = agent_log($agent);
is(scalar(() = $log =~ /does not know boot and seq/g), 1, 'the agent warned once')
    or diag($log);
like($log, qr/warning: telemetry: the service does not know boot and seq[^\n]*upgrade the service/,
     '... at warning, saying to upgrade the service');
unlike($log, qr/the batch is dropped/, '... and dropped no batch');

remove_tree($agent->{dir});
done_testing();
