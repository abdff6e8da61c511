#!/usr/bin/perl
# tools/telemetry-bench.pl: the deployment-telemetry part of `make bench`
# (issue 22): --agents simulated deploy agents, each with a target of its
# own (its key made through the API) and a running deployment of two
# replicas, each sending a metrics batch every 15 s (a sample of both
# replicas, with the probes taken since) and a probe every 10 s, as
# POST /api/agent/telemetry, the route the real agent uses. Measured: the
# CPU time httpd (parent and children) and PostgreSQL (every process of
# the cluster) spend, per second of wall time, while the agents report,
# less what they spend idle over as long: the share of one CPU the service
# spends on them.
#
#   perl tools/telemetry-bench.pl --url http://127.0.0.1:8080 --org demo \
#       --token ADMIN_PAT --httpd-pid PID --pg-pid PID \
#       --psql 'psql -X -q -tA -h SOCK -d svc' [--agents 100] [--seconds 60]
#
# The agents are spread over --procs processes (default 10), each keeping
# one connection; every request must answer 200, or the run fails.
use strict;
use warnings;

use File::Temp qw(tempfile);
use Getopt::Long;
use HTTP::Tiny;
use JSON::PP;
use POSIX qw(:sys_wait_h);
use Time::HiRes qw(time sleep);

my %o = (agents => 100, seconds => 60, procs => 10, idle => 20);
GetOptions(\%o, 'url=s', 'org=s', 'token=s', 'httpd-pid=i', 'pg-pid=i', 'psql=s', 'agents=i',
           'seconds=i', 'procs=i', 'idle=i') or die "telemetry-bench: bad arguments\n";
for (qw(url org token httpd-pid pg-pid psql)) {
    die "telemetry-bench: --$_ is required\n" unless defined $o{$_};
}
my $json = JSON::PP->new->canonical;
my $tck = `getconf CLK_TCK` + 0 || 100;

# SQL through a file the cluster's user can read (psql may run as another).
sub psql {
    my $sql = shift;
    my ($fh, $file) = tempfile('telemetry-bench-XXXXXX', TMPDIR => 1, UNLINK => 1);
    print $fh $sql, ";\n";
    close $fh;
    chmod 0644, $file;
    my $out = `$o{psql} -v ON_ERROR_STOP=1 -f $file 2>&1`;
    unlink $file;
    die "telemetry-bench: psql: $out" if $?;
    chomp $out;
    return $out;
}

# CPU seconds of a process tree: root and everything under it (from /proc).
sub tree_cpu {
    my @roots = @_;
    my (%ppid, %cpu);
    for my $st (glob '/proc/[0-9]*/stat') {
        open my $fh, '<', $st or next;
        my $line = <$fh> // next;
        my ($pid) = $st =~ m{/proc/(\d+)/};
        $line =~ s/^.*\)\s+//;
        my @f = split ' ', $line;
        $ppid{$pid} = $f[1];
        # Its own time, and its reaped children's: a process that ends
        # (an httpd child recycled, a backend closed) leaves its time in its
        # parent's, so none is lost or counted twice.
        $cpu{$pid} = ($f[11] + $f[12] + $f[13] + $f[14]) / $tck;
    }
    my %mine = map { $_ => 1 } @roots;
    my $grew = 1;
    while ($grew) {
        $grew = 0;
        for my $pid (keys %ppid) {
            next if $mine{$pid} || !$mine{ $ppid{$pid} };
            $mine{$pid} = 1;
            $grew = 1;
        }
    }
    my $t = 0;
    $t += $cpu{$_} // 0 for keys %mine;
    return $t;
}

sub service_cpu { tree_cpu($o{'httpd-pid'}, $o{'pg-pid'}) }

my $http = HTTP::Tiny->new(keep_alive => 1, timeout => 30);
sub api {
    my ($method, $path, $token, $body) = @_;
    my $res = $http->request($method, "$o{url}$path", {
        headers => { Authorization => "Bearer $token",
                     ($body ? ('Content-Type' => 'application/json') : ()) },
        ($body ? (content => $json->encode($body)) : ()) });
    my $data = eval { $json->decode($res->{content}) };
    return ($res->{status}, $data);
}

# --- the fixture: a run, targets, running deployments ---------------------------------
my $org_id = psql("SELECT id FROM orgs WHERE slug = '$o{org}'");
my $proj = psql("SELECT id FROM projects WHERE org_id = '$org_id' AND NOT archived "
                . "ORDER BY created_at LIMIT 1");
die "telemetry-bench: the org $o{org} has no project\n" unless $proj;
my $stamp = time =~ s/\D//gr;
my $rid = sub { $_[0] . join '', map { ('a'..'z', 'A'..'Z')[rand 52] } 1 .. 22 };
my $run = $rid->('run_');
psql("BEGIN; INSERT INTO runs (id, org_id, project_id, status, instructions, timeout_seconds, "
     . "started_at, finished_at, result, artifact_bytes) VALUES ('$run', '$org_id', '$proj', "
     . "'succeeded', 'telemetry bench', 60, now(), now(), '{\"summary\": \"bench\", \"commit\": "
     . "\"" . ('a' x 40) . "\", \"files\": []}', 6); INSERT INTO run_artifacts (run_id, part, "
     . "data) VALUES ('$run', 0, 'bundle'); COMMIT");
my $plan = '{"command": "true", "port_env": "PORT", "health_path": "/", "replicas": 2, '
         . '"memory_mb": 512, "notes": "", "source": "procfile", "version": 1}';
my @agents;
for my $i (1 .. $o{agents}) {
    my ($st, $t) = api(POST => "/api/orgs/$o{org}/deploy-targets", $o{token},
                       { name => "tbench-$stamp-$i" });
    die "telemetry-bench: a target: $st\n" unless $st == 201;
    my $dep = $rid->('dep_');
    psql("INSERT INTO deployments (id, org_id, project_id, target_id, run_id, status, plan, "
         . "plan_version, applied_plan, replicas) VALUES ('$dep', '$org_id', '$proj', "
         . "'$t->{id}', '$run', 'running', '$plan'::jsonb, 1, '$plan'::jsonb, 2)");
    push @agents, { key => $t->{key}, dep => $dep, target => $t->{id} };
}

# --- idle, then the agents ----------------------------------------------------------------
my $c0 = service_cpu();
my $t0 = time;
sleep $o{idle};
my $idle = (service_cpu() - $c0) / (time - $t0);

# One process per group of agents: each agent's reports on its own
# schedule (starts spread over the first 15 s), one connection a process.
my @kids;
my $per = int(($o{agents} + $o{procs} - 1) / $o{procs});
my $stop_at = time + 15 + $o{seconds} + 5;
for (my $g = 0; $g * $per < @agents; $g++) {
    my $last = ($g + 1) * $per - 1;
    $last = $#agents if $last > $#agents;
    my @mine = @agents[$g * $per .. $last];
    my $pid = fork // die "fork: $!";
    if (!$pid) {
        my $h = HTTP::Tiny->new(keep_alive => 1, timeout => 30);
        my $now = time;
        for my $a (@mine) {
            $a->{next_metrics} = $now + rand 15;
            $a->{next_probe} = $now + rand 10;
            $a->{cpu} = 0;
            $a->{restarts} = 0;
        }
        my ($sent, $bad) = (0, 0);
        while (time < $stop_at) {
            my $soonest = $stop_at;
            for my $a (@mine) {
                my @what;
                if (time >= $a->{next_probe}) {
                    push @what, probes => [ map { { replica => $_, ago_ms => 5, ok => \1,
                                                    latency_ms => 2 } } 0, 1 ];
                    $a->{next_probe} += 10;
                }
                if (time >= $a->{next_metrics}) {
                    $a->{cpu} += 0.1;
                    push @what, metrics => [ map { { replica => $_, ago_ms => 5,
                                                     cpu_seconds => $a->{cpu},
                                                     rss_bytes => 31457280, fds => 12,
                                                     restarts => 0 } } 0, 1 ];
                    $a->{next_metrics} += 15;
                }
                if (@what) {
                    my $res = $h->request(POST => "$o{url}/api/agent/telemetry", {
                        headers => { Authorization => "Bearer $a->{key}",
                                     'Content-Type' => 'application/json' },
                        content => $json->encode({ deployments => { $a->{dep} => { @what } } })
                    });
                    $sent++;
                    $bad++ unless $res->{status} == 200;
                }
                for (qw(next_probe next_metrics)) {
                    $soonest = $a->{$_} if $a->{$_} < $soonest;
                }
            }
            my $wait = $soonest - time;
            sleep($wait > 0 ? $wait : 0);
        }
        print STDOUT "SENT $sent BAD $bad\n";
        POSIX::_exit($bad ? 1 : 0);
    }
    push @kids, $pid;
}
# The first 15 s start every agent's schedule; then the window measured.
sleep 15;
my $c1 = service_cpu();
my $t1 = time;
sleep $o{seconds};
my $load = (service_cpu() - $c1) / (time - $t1);
my $failed = 0;
for (@kids) {
    waitpid($_, 0);
    $failed++ if $?;
}
my $n = $o{agents};
printf "  %d agents (a metrics batch every 15 s, a probe every 10 s: %.1f requests/s):\n",
       $n, $n / 15 + $n / 10;
printf "  service CPU (httpd + PostgreSQL): %.1f %% of one CPU while they report, "
       . "%.1f %% idle: %.1f %% of one CPU for the agents\n",
       100 * $load, 100 * $idle, 100 * ($load - $idle);
printf "  samples stored: %s, probes stored: %s\n",
       psql("SELECT count(*) FROM deploy_metrics m JOIN deployments d ON d.id = m.deployment_id "
            . "WHERE d.run_id = '$run'"),
       psql("SELECT count(*) FROM deploy_probes p JOIN deployments d ON d.id = p.deployment_id "
            . "WHERE d.run_id = '$run'");
die "telemetry-bench: $failed process(es) saw a report refused\n" if $failed;
# Leave the demo org as it was: the deployments and targets go.
psql("BEGIN; DELETE FROM deployments WHERE run_id = '$run'; UPDATE deploy_targets SET "
     . "removed_at = now(), key_hash = NULL WHERE name LIKE 'tbench-$stamp-%'; COMMIT");
