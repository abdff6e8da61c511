package AgentProxy;
# A small HTTP proxy between a real svc-agent and the test httpd
# (t/deploy/telemetry_dedup.t, t/deploy/telemetry_compat.t): it relays every
# request, one a connection (the agent opens one a call), and hands each
# telemetry batch (POST /api/agent/telemetry) to the test's own function,
# which answers it as a service would, or relays it and then decides what
# the agent gets.
#
#   my $p = AgentProxy::start(sub {
#       my ($batch, $relay) = @_;       # the batch's JSON text; a relay:
#       my ($status, $answer, $json) = $relay->();  # httpd's answer, raw and decoded
#       return $answer;                 # what the agent gets (undef: nothing)
#   });
#   my $a = AgentProxy::agent($p, $target, 'web-1');  # a real agent behind it,
#                                       # sending figures every second
#   AgentProxy::stop($p);               # else at the test's end
#   AgentProxy::append($file, $line);   # one line, whole, from any connection
#
# Each connection is a process of its own, so what the function learns
# goes to the test through files (append).
use strict;
use warnings;

use Fcntl qw(O_CREAT O_WRONLY O_APPEND);
use IO::Select;
use IO::Socket::INET;
use POSIX ();
use SvcDeploy ();
use SvcTest ();

my %started;    # pid => the test's pid

sub append {
    my ($file, $line) = @_;
    sysopen my $fh, $file, O_WRONLY | O_CREAT | O_APPEND or die "$file: $!";
    syswrite $fh, "$line\n";
    close $fh;
}

sub _dechunk {
    my ($head, $body) = @_;
    return $body unless $head =~ /^Transfer-Encoding:\s*chunked/mi;
    my $plain = '';
    while ($body =~ s/^([0-9a-fA-F]+)[^\r\n]*\r\n//) {
        my $n = hex $1;
        last unless $n;
        $plain .= substr($body, 0, $n, '');
        $body =~ s/^\r\n//;
    }
    return $plain;
}

sub _relay_one {
    my ($c, $on_batch) = @_;
    my ($up_host, $up_port) = SvcTest::base_url() =~ m{^http://([^:/]+):(\d+)};
    my $in = '';
    while ($in !~ /\r\n\r\n/) {
        sysread($c, $in, 65536, length $in) or return;
    }
    my ($head, $rest) = split /\r\n\r\n/, $in, 2;
    my ($method, $path) = $head =~ m{^(\S+) (\S+)};
    # Upstream closes after its answer, so the end of the answer is EOF.
    my @h = grep { !/^(Connection|Expect):/i } split /\r\n/, $head;
    my $connect = sub {
        my $up = IO::Socket::INET->new(PeerAddr => $up_host, PeerPort => $up_port,
                                       Proto => 'tcp') or return;
        syswrite $up, join("\r\n", @h, 'Connection: close', '', '') . $rest;
        return $up;
    };
    if ($method eq 'POST' && $path eq '/api/agent/telemetry') {
        my ($len) = $head =~ /^Content-Length:\s*(\d+)/mi;
        syswrite $c, "HTTP/1.1 100 Continue\r\n\r\n" if $head =~ /^Expect:\s*100-continue/mi;
        while (length($rest) < ($len // 0)) {
            sysread($c, $rest, 65536, length $rest) or return;
        }
        my $relay = sub {
            my $up = $connect->() or return (0, '', {});
            my $ans = '';
            1 while sysread($up, $ans, 65536, length $ans);
            close $up;
            my ($status) = $ans =~ m{^HTTP/1\.\d (\d+)};
            my ($ahead, $abody) = split /\r\n\r\n/, $ans, 2;
            my $json = eval { SvcTest::json()->decode(_dechunk($ahead, $abody // '')) } // {};
            return ($status // 0, $ans, $json);
        };
        my $answer = $on_batch->($rest, $relay);
        syswrite $c, $answer if defined $answer;
        return;     # the client's connection closes with this process
    }
    my $up = $connect->() or return;
    # Anything else (the work stream included): both ways until either ends.
    my $sel = IO::Select->new($c, $up);
    while (my @ready = $sel->can_read) {
        for my $fh (@ready) {
            my $buf;
            return unless sysread($fh, $buf, 65536);
            syswrite($fh == $c ? $up : $c, $buf);
        }
    }
}

sub start {
    my ($on_batch) = @_;
    my $srv = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0, Listen => 32,
                                    ReuseAddr => 1, Proto => 'tcp') or die "proxy: $!";
    my $pid = fork // die "fork: $!";
    if (!$pid) {
        setpgrp(0, 0);
        $SIG{CHLD} = 'IGNORE';
        $SIG{TERM} = sub { POSIX::_exit(0) };
        while (1) {
            my $c = $srv->accept or next;
            my $kid = fork;
            if (defined $kid && !$kid) {
                close $srv;
                _relay_one($c, $on_batch);
                POSIX::_exit(0);    # never the test's END blocks
            }
            close $c;
        }
    }
    $started{$pid} = $$;
    my $port = $srv->sockport;
    close $srv;
    return { pid => $pid, port => $port };
}

# A real svc-agent of $target (SvcDeploy::start_agent) that reaches the
# service through the proxy, sampling and probing every second.
sub agent {
    my ($p, $target, $name) = @_;
    return SvcDeploy::start_agent(key => $target->{key}, name => $name,
                                  env => { SVC_AGENT_URL => "http://127.0.0.1:$p->{port}",
                                           SVC_AGENT_METRICS_INTERVAL => 1,
                                           SVC_AGENT_PROBE_INTERVAL => 1 });
}

# Ends the proxy and every connection it still relays.
sub stop {
    my ($p) = @_;
    return unless delete $started{ $p->{pid} };
    kill 'TERM', -$p->{pid};
    waitpid($p->{pid}, 0);
}

# A test that dies halfway leaves no proxy behind (nor its connections).
END {
    local $?;       # the test's exit status is not the proxy's
    for my $pid (grep { $started{$_} == $$ } keys %started) {
        stop({ pid => $pid });
    }
}

1;
