# The OpenAPI document is one a client generator can trust (issue 20):
#
#   - every operation that answers JSON names a component schema for its
#     success (a route without one does not even start: svc_openapi_check),
#     declares 500 and 503 with the problem schema and X-Request-Id on
#     every answer, and has a description and an example;
#   - @redocly/cli lints it with 0 errors and no warning but the ones
#     docs/decisions.md explains (an operation whose only success is a
#     redirect has no 2XX);
#   - openapi-typescript generates types from it, and a small client
#     (t/contract/client.ts) compiles with `tsc --strict`, reading a token's
#     id and a run's status as strings; the same compilation fails when an
#     operation's JSON success is untyped, and when the client misreads a
#     field, so it proves something.
#
# The tools are pinned in t/contract/package-lock.json and installed by
# tools/deps.sh (npm ci); the test fails, not skips, without them.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Apache::Test qw(-withtestmore);
use SvcTest;

use File::Temp qw(tempdir);
use File::Copy qw(copy);
use File::Spec::Functions qw(catfile);

my $top  = $ENV{SVC_TOP} // "$FindBin::Bin/../..";
my $npm  = catfile($top, 't', 'contract');
my $bin  = catfile($npm, 'node_modules', '.bin');
my $work = tempdir(CLEANUP => 1);

my ($st, $doc, $res) = api(GET => '/api/openapi.json');
is($st, 200, 'GET /api/openapi.json');
my $file = catfile($work, 'openapi.json');
{
    open my $fh, '>', $file or die "$file: $!";
    print $fh $res->content;
    close $fh or die "$file: $!";
}

# --- what the document says of every operation -------------------------------
my (%redirect_only, $ops, $json_ops);
for my $path (sort keys %{ $doc->{paths} }) {
    for my $m (sort keys %{ $doc->{paths}{$path} }) {
        my $op = $doc->{paths}{$path}{$m};
        my $name = "$m $path";
        my $r = $op->{responses};
        $ops++;
        ok(length($op->{description} // '') > length($op->{summary} // ''),
           "$name: a description beyond its summary") or next;
        ok($r->{500} && $r->{503}, "$name: declares 500 and 503");
        my @ok = grep { /^2/ } keys %$r;
        $redirect_only{"#/paths/" . ($path =~ s{~}{~0}gr =~ s{/}{~1}gr) . "/$m/responses"} = 1
            if !@ok && $r->{302};
        my $has_example;
        for my $code (sort keys %$r) {
            my $resp = $r->{$code}{'$ref'}
                ? $doc->{components}{responses}{ $r->{$code}{'$ref'} =~ s{.*/}{}r }
                : $r->{$code};
            ok($resp->{headers}{'X-Request-Id'}, "$name: $code declares X-Request-Id")
                or next;
            my $json = ($resp->{content} // {})->{'application/json'} or next;
            next unless $code =~ /^2/;
            $json_ops++;
            my $s = $json->{schema} // {};
            # (A route whose answer may be null: oneOf its schema and null.)
            $s = $s->{oneOf}[0] if $s->{oneOf} && @{ $s->{oneOf} } == 2
                                   && ($s->{oneOf}[1]{type} // '') eq 'null';
            ok($s->{'$ref'} || ($s->{allOf} && $s->{allOf}[0]{'$ref'} =~ m{/Page$}),
               "$name: $code refers to a named schema (or the list envelope)");
            $has_example ||= exists $json->{example};
        }
        ok($has_example || !grep({ ($r->{$_}{content} // {})->{'application/json'} } @ok),
           "$name: an example of its answer");
        if (my $rb = $op->{requestBody}) {
            ok($rb->{required}, "$name: its body is required");
            # A JSON body is shown by an example its schema takes (the
            # server checked it with the route's own body check at start).
            if (my $json = $rb->{content}{'application/json'}) {
                ok(exists $json->{example}, "$name: an example of its body") or next;
                my @e = SvcContract::value_errors($json->{example}, $json->{schema});
                is(scalar @e, 0, "$name: the example fits the body's schema") or diag("@e");
            }
        }
    }
}
ok($ops >= 100, "$ops operations");
ok($json_ops >= 80, "$json_ops JSON success answers, each with its schema");
for my $h (qw(RequestId RetryAfter IdempotentReplayed RateLimitLimitOptional
              RateLimitRemainingOptional RateLimitResetOptional)) {
    ok($doc->{components}{headers}{$h}, "header component $h");
}
ok($doc->{components}{parameters}{IdempotencyKey}, 'the Idempotency-Key parameter');
# Every header says what it looks like, with an example of its own schema.
for my $name (sort keys %{ $doc->{components}{headers} }) {
    my $h = $doc->{components}{headers}{$name};
    ok(exists $h->{example}, "header $name: an example") or next;
    my @e = SvcContract::value_errors($h->{example}, $h->{schema});
    is(scalar @e, 0, "header $name: its example fits its schema") or diag("@e");
}
is(scalar(grep { !length($_->{description} // '') } @{ $doc->{tags} }), 0,
   'every tag is described');
ok(scalar(keys %{ $doc->{components}{schemas} }) >= 50,
   scalar(keys %{ $doc->{components}{schemas} }) . ' component schemas');

# The examples keep to their schemas too (the contract's own validator).
{
    my @bad;
    for my $path (sort keys %{ $doc->{paths} }) {
        for my $m (sort keys %{ $doc->{paths}{$path} }) {
            my $r = $doc->{paths}{$path}{$m}{responses};
            for my $code (grep { /^2/ } keys %$r) {
                my $json = ($r->{$code}{content} // {})->{'application/json'} or next;
                my @e = SvcContract::example_errors($m, $path, $code, $json->{example});
                push @bad, "$m $path $code: @e" if @e;
            }
        }
    }
    is(scalar @bad, 0, 'every example fits its schema') or diag(join "\n", @bad);
}

# --- the tools -----------------------------------------------------------------
sub tool {
    my ($name, @args) = @_;
    my ($rc, $out, $err) = SvcTest::run([catfile($bin, $name), @args]);
    return ($rc >> 8, $out, $err);
}

ok(-x catfile($bin, 'redocly') && -x catfile($bin, 'openapi-typescript')
   && -x catfile($bin, 'tsc'),
   'the pinned tools are installed (t/contract/package-lock.json; tools/deps.sh runs npm ci)')
    or BAIL_OUT('t/contract/node_modules is missing: run tools/deps.sh');

# --- Redocly: 0 errors, and only the explained warnings ----------------------
{
    my ($rc, $out, $err) = tool('redocly', 'lint', $file, '--format=json');
    my $lint = eval { json()->decode($out) };
    ok($lint, 'redocly lint answered') or diag($err);
    $lint //= { totals => {}, problems => [] };
    is($lint->{totals}{errors}, 0, 'redocly lint: 0 errors');
    my @unexplained;
    for my $p (@{ $lint->{problems} }) {
        my $ptr = $p->{location}[0]{pointer} // '';
        next if $p->{ruleId} eq 'operation-2xx-response' && $redirect_only{$ptr};
        push @unexplained, "$p->{severity} $p->{ruleId} at $ptr: $p->{message}";
    }
    is(scalar @unexplained, 0, 'redocly lint: no warning but a redirect-only operation\'s '
       . '(docs/decisions.md)') or diag(join "\n", @unexplained);
    is($lint->{totals}{warnings}, scalar(keys %redirect_only),
       'one warning for each redirect-only operation, no other');
}

# --- openapi-typescript, and a client that compiles with tsc --strict ---------
my $types = catfile($work, 'api.d.ts');
{
    my ($rc, $out, $err) = tool('openapi-typescript', $file, '-o', $types);
    is($rc, 0, 'openapi-typescript generated the types') or diag("$out$err");
}
my $ts = do { local (@ARGV, $/) = ($types); <> } // '';
my @empty = grep { /Record<string, never>/ && !/^export type (?:webhooks|\$defs)\b/ }
            split /\n/, $ts;
is(scalar @empty, 0, 'no Record<string, never> in the generated types')
    or diag(join "\n", @empty);

my @tsc = ('--strict', '--noEmit', '--target', 'es2022', '--module', 'es2022',
           '--moduleResolution', 'bundler', '--lib', 'es2022,dom');
copy(catfile($npm, 'client.ts'), catfile($work, 'client.ts')) or die "copy: $!";
{
    my ($rc, $out, $err) = tool('tsc', @tsc, catfile($work, 'client.ts'));
    is($rc, 0, 'tsc --strict compiles the client: a token\'s id and a run\'s status are '
       . 'strings, and every JSON success is typed') or diag("$out$err");
}

# The same compiler refuses a client that misreads a field ...
{
    my $bad = catfile($work, 'misread.ts');
    open my $fh, '>', $bad or die "$bad: $!";
    print $fh <<'TS';
import type { components } from "./api";
export function f(run: components["schemas"]["Run"]): number {
    const status: number = run.status;
    return status;
}
TS
    close $fh;
    my ($rc, $out) = tool('tsc', @tsc, $bad);
    isnt($rc, 0, 'tsc refuses a client that reads a run\'s status as a number');
    like($out, qr/TS2322/, '... with a type error');
}

# ... and the client, when an operation's answer is untyped.
{
    (my $untyped = $ts) =~ s{"application/json": components\["schemas"\]\["Me"\];}
                            {"application/json": Record<string, never>;};
    isnt($untyped, $ts, 'an operation made untyped (getMe)');
    my $dir = tempdir(CLEANUP => 1);
    open my $fh, '>', catfile($dir, 'api.d.ts') or die $!;
    print $fh $untyped;
    close $fh;
    copy(catfile($npm, 'client.ts'), catfile($dir, 'client.ts')) or die "copy: $!";
    my ($rc, $out) = tool('tsc', @tsc, catfile($dir, 'client.ts'));
    isnt($rc, 0, 'then the client does not compile');
    like($out, qr/getMe/, '... and the error names the operation');
}

done_testing();
