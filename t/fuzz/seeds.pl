#!/usr/bin/env perl
# t/fuzz/seeds.pl: the seed corpora of the fuzz targets, from what the tests
# themselves send and receive (docs/fuzzing.md).
#
#   mkdir -m 1777 /tmp/cap
#   SVC_FUZZ_CAPTURE=/tmp/cap tools/test.sh [t/...]     # or make test
#   perl t/fuzz/seeds.pl /tmp/cap [t/fuzz/corpus]
#
# With SVC_FUZZ_CAPTURE set, t/lib/SvcTest.pm appends every request the
# tests make (method, path and query, credentials, body, the next_cursor it
# got back) to requests.jsonl and every webhook delivery to webhooks.jsonl,
# and t/lib/FakeLLM.pm every answer it gives to llm.jsonl. This script turns
# them into inputs in each target's format, named t-<digest> (seeds made
# from the tests) next to the hand-written seed-* and the regress-* inputs
# of fixed crashes, which it leaves alone. It replaces the t-* files of a
# target only when it found inputs for it, and keeps at most a few inputs of
# each kind (route, operation, mode), so the corpora stay small.
#
# Inputs for the diff target are pairs of documents' texts the tests wrote,
# and GNU diff's unified diffs of them (`diff -u`, the format svc_diff
# writes and applies); the factory's task lines cannot be captured (the
# supervisor writes them to the factory's stdin), so they are written here
# after docs/api/factory-protocol.md.
use strict;
use warnings;

use Digest::SHA qw(sha1_hex);
use File::Path qw(make_path);
use File::Temp qw(tempdir);
use FindBin;
use JSON::PP ();
use MIME::Base64 qw(decode_base64 decode_base64url);

my ($cap, $out) = @ARGV;
die "usage: seeds.pl CAPTURE_DIR [CORPUS_DIR]\n" unless $cap && -d $cap;
$out //= "$FindBin::Bin/corpus";
my $top = "$FindBin::Bin/../..";
my $J = JSON::PP->new->canonical;

sub records {
    my $file = "$cap/$_[0].jsonl";
    return () unless -f $file;
    open my $fh, '<', $file or die "$file: $!";
    my @r;
    while (my $line = <$fh>) {
        my $r = eval { $J->decode($line) } or next;
        $r->{body} = decode_base64($r->{body}) if defined $r->{body};
        push @r, $r;
    }
    return @r;
}

# The routes, to name a request's operation from its method and path.
my @routes = @{ JSON::PP->new->decode(scalar `"$top/build/svcctl" routes --json`) };
for my $r (@routes) {
    my @parts = map { /^:/ ? '[^/]+' : quotemeta } split m{/}, $r->{path}, -1;
    my $re = join '/', @parts;
    $r->{re} = qr{\A$re\z};
}
sub route_of {
    my ($method, $path) = @_;
    $method = 'GET' if $method eq 'HEAD';
    for my $r (@routes) {
        return $r if $r->{method} eq $method && $path =~ $r->{re};
    }
    return undef;
}

my %seeds;      # target -> { digest -> bytes }
my %kinds;      # target -> kind -> count
# Inputs longer than this are left out: libFuzzer sizes its mutations by
# the largest input of the corpus, and big ones only slow every run down.
my $MAX_INPUT = 16384;
sub add {
    my ($target, $kind, $max, $bytes) = @_;
    return if ($kinds{$target}{$kind} // 0) >= $max || length $bytes > $MAX_INPUT;
    my $d = sha1_hex($bytes);
    return if $seeds{$target}{$d};
    $seeds{$target}{$d} = $bytes;
    $kinds{$target}{$kind}++;
    return 1;
}

my @requests = records('requests');
my (%doc_texts, @cursors);
for my $q (@requests) {
    my ($path, $args) = split /\?/, $q->{path}, 2;
    my $r = route_of($q->{method}, $path);
    my $op = $r ? $r->{op_id} : 'none';
    add('route', "$q->{method} " . ($r ? $r->{path} : $path), 1, "$q->{method} $path");
    if ($r && $r->{body} && @{ $r->{body} } && length $q->{body}) {
        add('json_body', $op, 4, "$op\n$q->{body}");
        my $doc = eval { JSON::PP->new->utf8->decode($q->{body}) };
        if (ref $doc eq 'HASH' && defined $doc->{body} && !ref $doc->{body}) {
            my $key = ($path =~ m{/documents/([^/]+)}) ? $1 : $path;
            push @{ $doc_texts{$key} }, $doc->{body};
        }
    }
    if (defined $args && length $args) {
        my $lei = $q->{'last-event-id'};
        add('query', "$op " . join(',', sort map { (split /=/)[0] } split /&/, $args), 2,
            defined $lei ? "$args\n$lei" : $args);
    }
    elsif (defined $q->{'last-event-id'}) {
        add('query', "lei", 10, "\n$q->{'last-event-id'}");
    }
    push @cursors, $q->{next_cursor} if defined $q->{next_cursor};
    if ($op eq 'uploadAttachment' && defined $args) {
        my ($name) = $args =~ /(?:^|&)filename=([^&]*)/;
        if (defined $name) {
            $name =~ tr/+/ /;
            $name =~ s/%([0-9A-Fa-f]{2})/chr hex $1/ge;
            add('attach', 'upload', 40, "$name\n" . ($q->{'content-type'} // ''));
        }
    }
    my ($authz, $cookie) = ($q->{authorization}, $q->{cookie});
    if (defined $authz || defined $cookie) {
        my $flags = (defined $authz ? 1 : 0) | (defined $cookie ? 2 : 0);
        my $shape = (defined $authz ? (split / /, $authz)[0] : '-') . '/'
                    . (defined $cookie ? 'cookie' : '-') . '/' . ($q->{status} // 0);
        add('auth', $shape, 3, chr($flags) . ($authz // '') . "\n" . ($cookie // ''));
        if (defined $cookie && $cookie =~ /service_session=([^;\s]+)/) {
            my $jwt = $1;
            add('jwt', 'raw', 10, "\0$jwt");
            my @seg = split /\./, $jwt;
            if (@seg == 3) {
                my $claims = eval { decode_base64url($seg[1]) };
                add('jwt', 'claims', 10, "\1$claims") if defined $claims;
                my $hdr = eval { decode_base64url($seg[0]) };
                add('jwt', 'header', 5, "\2$hdr\n$claims") if defined $hdr && defined $claims;
            }
        }
    }
}
# Cursors as the tests got them (another server's key: refused here, after
# the decoding), and the same positions as this list issues them ("@n").
for my $c (@cursors) {
    add('query', 'cursor', 15, "cursor=$c");
    add('query', 'cursor-limit', 5, "limit=2&cursor=$c&action=member.role_changed");
}
add('query', 'minted', 10, $_) for ('cursor=@1', 'cursor=@9223372036854775807',
    'limit=200&cursor=@12345', 'cursor=@42&since=2026-01-31T12:00:00Z&until=2026-02-01T00:00:00%2B01:00',
    "cursor=\@7&actor=usr_0123456789abcdefghijkl\n41");

for my $w (records('webhooks')) {
    my $event = $w->{event} // '';
    my $doc = eval { JSON::PP->new->utf8->decode($w->{body}) };
    my $action = ref $doc eq 'HASH' ? $doc->{action} // '-' : '-';
    my $head = join "\n", $w->{signature} // '', $event, $w->{delivery} // '';
    add('webhook', "$event/$action/signed", 3, "\1$head\n$w->{body}");
    add('webhook', "$event/$action/as-sent", 1, "\0$head\n$w->{body}");
}

# Provider answers: the bodies as sent, OpenAI's (flags 0) and Anthropic's
# (1), in JSON mode too (2); error answers as errors (4, status by 8s).
my %status_bits = (401 => 0, 429 => 1, 500 => 2, 503 => 3);
for my $a (records('llm')) {
    my $flavor = $a->{flavor} eq 'anthropic' ? 1 : 0;
    my $kind = "$a->{flavor}/$a->{mode}/$a->{status}";
    if ($a->{status} == 200) {
        add('llm', $kind, 8, chr($flavor) . $a->{body});
        add('llm', "$kind/json", 8, chr($flavor | 2) . $a->{body});
        # The model's text: what the factory parses, when it is a reply to it.
        my $doc = eval { JSON::PP->new->utf8->decode($a->{body}) };
        $doc = {} unless ref $doc eq 'HASH';
        my $text = $flavor ? join('', map { ref $_ eq 'HASH' ? $_->{text} // '' : '' }
                                      @{ ref $doc->{content} eq 'ARRAY' ? $doc->{content} : [] })
                           : eval { $doc->{choices}[0]{message}{content} };
        if (defined $text && !ref $text && $text =~ /"files"/) {
            utf8::encode($text);
            add('factory_reply', 'model', 40, "\x08\x40\x40$text");
        }
    }
    else {
        my $bits = $status_bits{$a->{status}} // 2;
        add('llm', $kind, 4, chr($flavor | 4 | ($bits << 3)) . $a->{body});
    }
}

# Documents' texts, each with the next one the tests wrote for it: as pairs
# (old, new), and as GNU diff's patch of old to new.
my $tmp = tempdir(CLEANUP => 1);
my $pairs = 0;
for my $key (sort keys %doc_texts) {
    my @t = @{ $doc_texts{$key} };
    for my $i (0 .. $#t - 1) {
        last if $pairs >= 40;
        my ($a, $b) = ($t[$i], $t[$i + 1]);
        utf8::encode($a) if utf8::is_utf8($a);
        utf8::encode($b) if utf8::is_utf8($b);
        next if index($a, "\0") >= 0 || index($b, "\0") >= 0 || length($a) + length($b) > 8000;
        add('diff', "pair", 40, "\1$a\0$b") && $pairs++;
        open my $fa, '>:raw', "$tmp/a" or die; print $fa $a; close $fa;
        open my $fb, '>:raw', "$tmp/b" or die; print $fb $b; close $fb;
        my $d = `diff -u --label a/doc.md --label b/doc.md "$tmp/a" "$tmp/b"`;
        add('diff', "gnu", 40, "\0$a\0$d") if length $d;
    }
}

# Task lines after docs/api/factory-protocol.md and the tests' tasks.
my %task = (type => 'task', run_id => 'run_8fK2aQ', instructions => 'Write a greeting program.',
            repo => '/workspace/repo', branch => 'svc/run-8fK2aQ',
            author => { name => 'Ada Lovelace', email => 'ada@example.com' },
            limits => { max_files => 200, max_file_bytes => 1048576,
                        max_total_bytes => 8388608 });
add('factory_task', 'task', 10, $J->encode(\%task));
add('factory_task', 'task', 10, $J->encode({ %task, context => "Use C11.\n" }));
add('factory_task', 'task', 10, $J->encode({ %task, run_id => 'run_t2', branch => 'svc/run-t2',
    limits => { max_files => 1, max_file_bytes => 10, max_total_bytes => 10 } }));
add('factory_task', 'task', 10, JSON::PP->new->utf8->canonical->encode({ %task,
    instructions => "# Build\n\nA \x{e9}t\x{e9} program \x{1f600}\n",
    author => { name => "Ren\x{e9}e O'Brien", email => 'renee@example.org' } }));

my $written = 0;
for my $target (sort keys %seeds) {
    my $dir = "$out/$target";
    make_path($dir);
    unlink glob("$dir/t-*");
    for my $d (sort keys %{ $seeds{$target} }) {
        open my $fh, '>:raw', "$dir/t-" . substr($d, 0, 16) or die "$dir: $!";
        print $fh $seeds{$target}{$d};
        close $fh or die "$dir: $!";
        $written++;
    }
    printf "%-14s %4d seeds\n", $target, scalar keys %{ $seeds{$target} };
}
print "$written seeds written under $out\n";
