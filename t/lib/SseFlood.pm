package SseFlood;
# Many event streams at once from one process, as a careless or hostile
# client would hold them: opened together, read (or never read), closed all
# at once. Plain Perl (IO::Poll), no modules to install. Used by
# t/events/flood.t and t/events/stall.t; tools/sse-bench.pl does its own
# timing.
#
#   my $f = SseFlood->new(port => $port, path => $path, tokens => [@pats]);
#   $f->open(1500, wait => 60);         # connects; each its head (or not)
#   $f->wait_for_id($id, wait => 30);   # streams that saw event $id
#   $f->close_all;                      # every socket closed at once
use strict;
use warnings;

use IO::Poll qw(POLLIN POLLOUT POLLERR POLLHUP);
use IO::Socket::INET;
use Socket qw(SOL_SOCKET SO_RCVBUF SO_ERROR);
use Errno qw(EINPROGRESS EAGAIN EWOULDBLOCK);
use Time::HiRes qw(time);

sub new {
    my ($class, %o) = @_;
    my $self = bless { host => '127.0.0.1', streams => [], %o }, $class;
    die "SseFlood: port, path and tokens are required\n"
        unless $self->{port} && $self->{path} && $self->{tokens} && @{ $self->{tokens} };
    return $self;
}

# open(N, wait => SECONDS, rcvbuf => BYTES, read => 0|1): N more streams,
# their tokens taken round-robin. Returns how many answered 200 (their head
# read) within the wait; the others stay as they are (unanswered, refused).
# With rcvbuf the receive buffer is made that small before connecting; with
# read => 0 nothing after the head is ever read.
sub open {
    my ($self, $n, %o) = @_;
    my $wait = $o{wait} // 30;
    my @new;
    for my $i (1 .. $n) {
        my $sock = IO::Socket::INET->new(Proto => 'tcp', Blocking => 0) or last;
        setsockopt($sock, SOL_SOCKET, SO_RCVBUF, pack('i', $o{rcvbuf})) if $o{rcvbuf};
        my $addr = Socket::pack_sockaddr_in($self->{port}, Socket::inet_aton($self->{host}));
        if (!connect($sock, $addr) && $! != EINPROGRESS) {
            close $sock;
            last;
        }
        my $tokens = $self->{tokens};
        my $token = $tokens->[ scalar(@{ $self->{streams} }) % @$tokens ];
        my $req = "GET $self->{path} HTTP/1.1\r\nHost: $self->{host}:$self->{port}\r\n"
            . "Accept: text/event-stream\r\nAuthorization: Bearer $token\r\n\r\n";
        my $s = { sock => $sock, out => $req, buf => '', status => 0, read => $o{read} // 1 };
        push @{ $self->{streams} }, $s;
        push @new, $s;
    }
    my $deadline = time + $wait;
    while (time < $deadline) {
        my @pending = grep { !$_->{status} && !$_->{dead} } @new;
        last unless @pending;
        $self->_pump(\@pending, 0.5);
    }
    return scalar grep { $_->{status} == 200 } @new;
}

# One round of poll over the given streams: writes what is unsent, reads
# what arrived (for streams that read). Marks closed ones dead.
sub _pump {
    my ($self, $list, $wait) = @_;
    my $poll = IO::Poll->new;
    for my $s (@$list) {
        next if $s->{dead};
        my $mask = 0;
        $mask |= POLLOUT if length $s->{out};
        $mask |= POLLIN if $s->{read} || !$s->{status};
        $poll->mask($s->{sock} => $mask) if $mask;
    }
    return unless $poll->handles;
    $poll->poll($wait);
    for my $s (@$list) {
        next if $s->{dead};
        my $ev = $poll->events($s->{sock}) or next;
        if (($ev & POLLOUT) && length $s->{out}) {
            my $n = syswrite($s->{sock}, $s->{out});
            if (defined $n) {
                substr($s->{out}, 0, $n) = '';
            }
            elsif ($! != EAGAIN && $! != EWOULDBLOCK) {
                $s->{dead} = 1;
                next;
            }
        }
        if ($ev & (POLLIN | POLLHUP | POLLERR)) {
            my $n = sysread($s->{sock}, my $chunk, 65536);
            if (!defined $n) {
                next if $! == EAGAIN || $! == EWOULDBLOCK;
                # Reset by the server (a closed socket whose unsent data the
                # kernel gave up on) is closed by the server too.
                $s->{reset} = 1 if $!{ECONNRESET};
                $s->{dead} = 1;
                next;
            }
            if ($n == 0) {
                $s->{dead} = 1;
                $s->{eof} = 1;
                next;
            }
            $s->{buf} .= $chunk;
            if (!$s->{status} && $s->{buf} =~ /\r\n\r\n/) {
                my ($status) = $s->{buf} =~ m{\AHTTP/1\.\d (\d{3})};
                $s->{status} = $status // 999;
                $s->{dead} = 1 if $s->{status} != 200;  # a problem document, then close
            }
            # Keep only what is needed to find ids (a stream may read MBs).
            if (length($s->{buf}) > 65536) {
                $s->{seen_ids}{$_} = 1 for $s->{buf} =~ /^id: (\d+)$/mg;
                $s->{buf} = substr($s->{buf}, -4096);
            }
        }
    }
}

# How many open (200) streams have seen the event with this id, waiting up
# to `wait` seconds for all of them.
sub wait_for_id {
    my ($self, $id, %o) = @_;
    my $deadline = time + ($o{wait} // 30);
    my @live = grep { $_->{status} == 200 && $_->{read} } @{ $self->{streams} };
    my $seen = sub { my $s = shift; $s->{seen_ids}{$id} || $s->{buf} =~ /^id: \Q$id\E$/m };
    while (time < $deadline) {
        my @waiting = grep { !$seen->($_) && !$_->{dead} } @live;
        last unless @waiting;
        $self->_pump(\@waiting, 0.5);
    }
    return scalar grep { $seen->($_) } @live;
}

# Streams the server has closed (EOF or a reset seen), after reading what
# is there for up to `wait` seconds.
sub count_closed_by_server {
    my ($self, %o) = @_;
    my $deadline = time + ($o{wait} // 10);
    my @live = grep { $_->{status} == 200 } @{ $self->{streams} };
    $_->{read} = 1 for @live;
    while (time < $deadline) {
        my @open = grep { !$_->{dead} } @live;
        last unless @open;
        $self->_pump(\@open, 0.5);
    }
    return scalar grep { $_->{eof} || $_->{reset} } @live;
}

sub count { my ($self, $status) = @_; scalar grep { $_->{status} == $status } @{ $self->{streams} } }

sub close_all {
    my $self = shift;
    close $_->{sock} for @{ $self->{streams} };
    $self->{streams} = [];
}

1;
