#!/usr/bin/env bash
# tools/fuzz.sh: runs the libFuzzer targets that `make fuzz-build` made
# (docs/fuzzing.md). Called by `make fuzz` and `make fuzz-replay`.
#
#   tools/fuzz.sh run    build-fuzz SECONDS TARGET...   fuzz each target that long
#   tools/fuzz.sh replay build-fuzz 0 TARGET...         every corpus input once
#
# run: each target starts from its seed corpus (t/fuzz/corpus/NAME) and
# what earlier runs here found (build-fuzz/corpus/NAME, where new inputs
# go; the repository's corpus is never written), with its dictionary
# (t/fuzz/NAME.dict) when there is one. A crash, a sanitizer report, a
# leak, a broken property or an input slower than FUZZ_UNIT_TIMEOUT
# seconds (default 25) stops that target; the input is kept in
# build-fuzz/crashes/NAME/ and the run fails at the end, after the other
# targets had their turn.
#
# replay: every input of t/fuzz/corpus/NAME once (the seeds and the
# regression inputs of crashes fixed), failing on the first target that
# crashes.
#
# The last line of each target is a summary: executions, executions per
# second, corpus size; the figures docs/fuzzing.md quotes come from it.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

die() { echo "fuzz.sh: $*" >&2; exit 2; }
[ $# -ge 3 ] || die "usage: fuzz.sh run|replay BUILD_DIR SECONDS TARGET..."
mode=$1 dir=$2 secs=$3
shift 3
[ $# -gt 0 ] || die "no target named"
case $mode in run|replay) ;; *) die "unknown mode '$mode' (run|replay)" ;; esac
[[ $secs =~ ^[0-9]+$ ]] || die "FUZZ_TIME must be a number of seconds, not '$secs'"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
unit_timeout=${FUZZ_UNIT_TIMEOUT:-25}

failed=()
printf '%-16s %12s %10s %8s  %s\n' target executions exec/s corpus result
for t in "$@"; do
    bin=$dir/fuzz_$t
    seeds=t/fuzz/corpus/$t
    [ -x "$bin" ] || die "no target $t ($bin; known: $(cd t/fuzz && ls fuzz_*.c | sed 's/^fuzz_//; s/\.c$//' | tr '\n' ' '))"
    [ -d "$seeds" ] || die "target $t has no seed corpus ($seeds)"
    mkdir -p "$dir/logs" "$dir/corpus/$t" "$dir/crashes/$t"
    log=$dir/logs/$t.$mode.log
    args=(-timeout="$unit_timeout" -rss_limit_mb=2560 -print_final_stats=1
          -artifact_prefix="$dir/crashes/$t/")
    [ -f "t/fuzz/$t.dict" ] && args+=(-dict="t/fuzz/$t.dict")
    if [ "$mode" = run ]; then
        "$bin" "${args[@]}" -max_total_time="$secs" "$dir/corpus/$t" "$seeds" >"$log" 2>&1
    else
        "$bin" "${args[@]}" -runs=0 "$seeds" >"$log" 2>&1
    fi
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    units=$(grep -Eo 'corp: [0-9]+' "$log" | tail -1 | grep -Eo '[0-9]+')
    if [ $rc -eq 0 ]; then
        result=ok
    else
        result="FAILED (exit $rc; $log)"
        failed+=("$t")
    fi
    printf '%-16s %12s %10s %8s  %s\n' "$t" "${execs:-?}" "${rate:-?}" "${units:-?}" "$result"
    if [ $rc -ne 0 ]; then
        # The report itself: what crashed and where, and the input kept.
        grep -E -A40 '^==[0-9]+==ERROR|runtime error|property broken|^SUMMARY|Test unit written' \
            "$log" | head -80 >&2
        [ "$mode" = replay ] && break
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz.sh: failed: ${failed[*]}" >&2
    exit 1
fi
