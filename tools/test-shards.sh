#!/usr/bin/env bash
# tools/test-shards.sh: what `make test` runs: the whole suite as TEST_JOBS
# (default 2) independent tools/test.sh runs at once ("shards").
#
#   tools/test-shards.sh                 every test file, TEST_JOBS shards
#   TEST_JOBS=3 tools/test-shards.sh
#   tools/test-shards.sh t/a.t t/b/      only these files (or directories)
#   tools/test-shards.sh --plan          print the shards and stop
#
# Most integration files spend their time waiting (leases, polling, runs in
# the sandbox), not computing, so two of them at once on two cores take
# little more than one. Each shard is a tools/test.sh run of its own: its
# own copy of the tree, PostgreSQL cluster, httpd, fakes and ports, its logs
# in t/logs/shard-N/ and their check (tools/check-logs.pl) there, its
# output in t/logs/shard-N.out, printed whole when the shard ends.
#
# The files are split by their measured wall times (tools/test-durations.txt,
# written from a whole run's t/logs/shard-*/durations.txt; see
# docs/testing.md): the longest first, each to the shard with the least
# work so far. A file not in the table counts as the table's average, so
# new files spread by count. Shard 1 also runs the C unit tests (their time
# is the table's `units` line). The files of t/zz_final/ look back over a
# whole run's database and answers: every shard runs them, last; the
# contract check's whole-run verdict (every documented operation answered
# in some shard) is made here from each shard's t/logs/shard-N/contract-shard.txt.
#
# Fails if any shard fails. SANITIZE and CI pass through to every shard.
set -uo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$TOP"
JOBS=${TEST_JOBS:-2}
TABLE=${SVC_TEST_DURATIONS:-$TOP/tools/test-durations.txt}
LOGS=$TOP/t/logs

die() { printf 'test-shards.sh: %s\n' "$*" >&2; exit 1; }
[[ "$JOBS" =~ ^[1-9][0-9]*$ ]] || die "TEST_JOBS must be a positive number (got '$JOBS')"

plan_only=
if [ "${1:-}" = --plan ]; then
    plan_only=1
    shift
fi

# --- the files ------------------------------------------------------------------
# What the whole run (t/TEST with no argument) would run: every t/**/*.t
# outside t/SKIP's paths.
whole=1
if [ $# -gt 0 ]; then
    whole=
    mapfile -t files < <(for a in "$@"; do
                             if [ -d "$a" ]; then find "${a%/}" -name '*.t'; else echo "$a"; fi
                         done | sort -u)
else
    skip=$(grep -v '^#' t/SKIP 2>/dev/null | grep . | paste -sd'|')
    mapfile -t files < <(find t -name '*.t' -not -path 't/logs/*' | sort \
                         | { if [ -n "$skip" ]; then grep -vE "$skip"; else cat; fi; })
fi
[ ${#files[@]} -gt 0 ] || die "no test files"

final=()
balanced=()
for f in "${files[@]}"; do
    if [[ "$f" == t/zz_final/* ]]; then final+=("$f"); else balanced+=("$f"); fi
done

# --- the plan: greedy, longest first ------------------------------------------
# Prints one line per shard: "k seconds file file ...".
plan=$(perl -e '
    my ($jobs, $table, $units, @files) = @ARGV;
    my (%secs, $unit_secs);
    if (open my $fh, "<", $table) {
        while (<$fh>) {
            next if /^\s*(#|$)/;
            my ($s, $name) = split;
            if ($name eq "units") { $unit_secs = $s } else { $secs{$name} = $s }
        }
    }
    my @known = grep { exists $secs{$_} } @files;
    my $sum = 0;
    $sum += $secs{$_} for @known;
    my $avg = @known ? int($sum / @known + 0.5) : 60;
    my @load = (0) x $jobs;
    my @shard = map { [] } 1 .. $jobs;
    $load[0] += $unit_secs // 0 if $units;
    for my $f (sort { ($secs{$b} // $avg) <=> ($secs{$a} // $avg) || $a cmp $b } @files) {
        my ($k) = sort { $load[$a] <=> $load[$b] || $a <=> $b } 0 .. $jobs - 1;
        $load[$k] += $secs{$f} // $avg;
        push @{ $shard[$k] }, $f;
    }
    for my $k (0 .. $jobs - 1) {
        print join(" ", $k + 1, $load[$k], sort @{ $shard[$k] }), "\n";
    }
' "$JOBS" "$TABLE" "$whole" "${balanced[@]+"${balanced[@]}"}") || die "cannot plan the shards"

echo "test-shards.sh: ${#files[@]} test files in $JOBS shards (by $(basename "$TABLE")):"
while read -r k secs rest; do
    set -- $rest
    echo "  shard $k: $# files + ${#final[@]} final, about ${secs} s of tests$([ "$k" = 1 ] && [ -n "$whole" ] && echo ', with the C unit tests')"
done <<<"$plan"
[ -z "$plan_only" ] || { echo "$plan"; exit 0; }

# --- run them ---------------------------------------------------------------------
# Once, before the shards: what is missing gets installed and the test user
# created (the shards would race for apt's lock and useradd).
if [ "$(id -u)" = 0 ]; then
    SVC_TEST_PREPARE_ONLY=1 tools/test.sh || die "preparing the machine failed"
    export SVC_TEST_SKIP_DEPS=1
else
    tools/deps.sh || die "tools/deps.sh failed"
fi

rm -rf "$LOGS"
mkdir -p "$LOGS"
OUT=$(mktemp -d "${TMPDIR:-/tmp}/svc-shards.XXXXXX")
declare -A pid_of=() started=() copies=()
cleanup() {
    local k
    for k in "${!pid_of[@]}"; do
        kill -TERM -- "-${pid_of[$k]}" 2>/dev/null
    done
    wait 2>/dev/null
    for k in "${!copies[@]}"; do rm -rf "${copies[$k]}"; done
    rm -rf "$OUT"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

t0=$SECONDS
# One build for every shard: each starts from a copy of it, and its own
# `make` (tools/test.sh) finds it up to date.
echo "test-shards.sh: building once for every shard"
if [ "$(id -u)" = 0 ]; then
    SVC_TEST_BUILD_ONLY=$OUT/build tools/test.sh >"$OUT/build.out" 2>&1
else
    make -j"$(nproc 2>/dev/null || echo 2)" SANITIZE="${SANITIZE:-0}" all unit >"$OUT/build.out" 2>&1
fi
build_rc=$?
cp "$OUT/build.out" "$LOGS/build.out"
if [ "$build_rc" != 0 ]; then
    cat "$OUT/build.out"
    die "the build failed (exit $build_rc)"
fi
build_secs=$((SECONDS - t0))
echo "test-shards.sh: built in $build_secs s"

# Each shard leads a process group of its own, so an interrupt stops it whole
# (and its tools/test.sh cleans up after itself).
set -m
while read -r k secs rest; do
    # shellcheck disable=SC2086
    set -- $rest "${final[@]+"${final[@]}"}"
    units=
    [ "$k" = 1 ] && [ -n "$whole" ] && units=1
    env_shard=(SVC_TEST_SHARD="$k/$JOBS" SVC_TEST_UNITS="$units")
    if [ "$(id -u)" = 0 ]; then
        # tools/test.sh copies the tree for the test user by itself.
        env "${env_shard[@]}" SVC_TEST_LOGS_TO="$LOGS/shard-$k" SVC_TEST_BUILD_FROM="$OUT/build" \
            tools/test.sh "$@" >"$OUT/shard-$k.out" 2>&1 &
    else
        # As an ordinary user tools/test.sh works in the tree it is in: each
        # shard gets a copy (build/ and t/conf are written by the run).
        copy=$(mktemp -d "${TMPDIR:-/tmp}/svc-shard.XXXXXX")
        copies[$k]=$copy
        tar -C "$TOP" --exclude=./build-fuzz --exclude=./var --exclude=./t/logs \
            -cf - . | tar -C "$copy" -xf -
        ( cd "$copy" && env "${env_shard[@]}" SVC_TEST_SKIP_DEPS=1 tools/test.sh "$@"
          rc=$?
          [ -d t/logs ] && cp -R t/logs "$LOGS/shard-$k"
          exit $rc ) >"$OUT/shard-$k.out" 2>&1 &
    fi
    pid_of[$k]=$!
    started[$k]=$SECONDS
    echo "test-shards.sh: shard $k started ($# files, output in t/logs/shard-$k.out when it ends)"
done <<<"$plan"
set +m

declare -A rc_of=() took=()
while [ ${#pid_of[@]} -gt 0 ]; do
    wait -n -p done_pid "${pid_of[@]}"
    rc=$?
    for k in "${!pid_of[@]}"; do
        [ "${pid_of[$k]}" = "${done_pid:-}" ] || continue
        unset "pid_of[$k]"
        rc_of[$k]=$rc
        took[$k]=$((SECONDS - started[$k]))
        cp "$OUT/shard-$k.out" "$LOGS/shard-$k.out"
        printf '\n######## shard %s (exit %s, %s s) ########\n' "$k" "$rc" "${took[$k]}"
        cat "$OUT/shard-$k.out"
        printf '######## end of shard %s ########\n' "$k"
        if [ -n "${copies[$k]:-}" ]; then rm -rf "${copies[$k]}"; unset "copies[$k]"; fi
    done
done
wall=$((SECONDS - t0))

# --- the whole run's contract verdict ------------------------------------------
# An operation counts as exercised when some shard saw it answer.
contract_rc=0
contract_msg=
if [ -n "$whole" ]; then
    contract_msg=$(perl -e '
        my (%never, $events, $shards);
        for my $f (@ARGV) {
            open my $fh, "<", $f or do { print "missing $f (its shard did not get to contract.t)\n"; exit 1 };
            $shards++;
            while (<$fh>) {
                $events += $1 if /^events (\d+)/;
                $never{$1}++ if /^never (\S+)/;
            }
        }
        my @never = sort grep { $never{$_} == $shards } keys %never;
        print "no shard read an event\n" unless $events;
        print "operations no shard exercised: @never\n" if @never;
        exit(($events && !@never) ? 0 : 1);
    ' $(for k in $(seq "$JOBS"); do echo "$LOGS/shard-$k/contract-shard.txt"; done)) || contract_rc=1
fi

# --- summary -------------------------------------------------------------------------
# The measured times of this run, slowest first, for tools/test-durations.txt.
cat "$LOGS"/shard-*/durations.txt 2>/dev/null | sort -rn >"$LOGS/durations.txt"

printf '\n=== summary of %s shards (%s s wall, of which the build %s s)\n' "$JOBS" "$wall" "$build_secs"
failed=0
for k in $(seq "$JOBS"); do
    [ -n "${rc_of[$k]:-}" ] || continue
    counts=$(grep -E '^tests: [0-9]+ passed, [0-9]+ failed' "$LOGS/shard-$k.out" | tail -n 1)
    if [ "${rc_of[$k]}" = 0 ]; then
        echo "  ok      shard $k: ${counts:-?} (${took[$k]} s)"
    else
        failed=1
        echo "  FAILED  shard $k: ${counts:-no summary} (exit ${rc_of[$k]}, ${took[$k]} s)"
        grep -E '^  FAILED  ' "$LOGS/shard-$k.out" | sed 's/^/      /'
    fi
done
if [ -n "$whole" ]; then
    if [ "$contract_rc" = 0 ]; then
        echo "  ok      contract: every documented operation answered in some shard"
    else
        failed=1
        echo "  FAILED  contract: $contract_msg"
    fi
fi
echo "  (logs: t/logs/shard-N/, outputs: t/logs/shard-N.out, times: t/logs/durations.txt)"
[ "$failed" = 0 ]
