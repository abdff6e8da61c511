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

# run: FUZZ_JOBS targets at once (default: the number of cores); each
# libFuzzer process is single-threaded, so on two cores two targets get
# their whole FUZZ_TIME each in half the wall time. Results are printed in
# the order the targets were named. replay stays one at a time: it is
# seconds, and stops at the first target that crashes.
jobs=1
if [ "$mode" = run ]; then
    jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
    [[ $jobs =~ ^[1-9][0-9]*$ ]] || die "FUZZ_JOBS must be a positive number, not '$jobs'"
fi
for t in "$@"; do
    [ -x "$dir/fuzz_$t" ] || die "no target $t ($dir/fuzz_$t; known: $(cd t/fuzz && ls fuzz_*.c | sed 's/^fuzz_//; s/\.c$//' | tr '\n' ' '))"
    [ -d "t/fuzz/corpus/$t" ] || die "target $t has no seed corpus (t/fuzz/corpus/$t)"
done

# fuzz_one TARGET: runs it, leaves its exit status in $dir/logs/TARGET.$mode.rc.
fuzz_one() {
    local t=$1 bin=$dir/fuzz_$1 seeds=t/fuzz/corpus/$1 log rc
    mkdir -p "$dir/logs" "$dir/corpus/$t" "$dir/crashes/$t"
    log=$dir/logs/$t.$mode.log
    local args=(-timeout="$unit_timeout" -rss_limit_mb=2560 -print_final_stats=1
                -artifact_prefix="$dir/crashes/$t/")
    [ -f "t/fuzz/$t.dict" ] && args+=(-dict="t/fuzz/$t.dict")
    if [ "$mode" = run ]; then
        "$bin" "${args[@]}" -max_total_time="$secs" "$dir/corpus/$t" "$seeds" >"$log" 2>&1
    else
        "$bin" "${args[@]}" -runs=0 "$seeds" >"$log" 2>&1
    fi
    rc=$?
    echo "$rc" >"$dir/logs/$t.$mode.rc"
    return $rc
}

# report TARGET: its summary line, and the report itself when it failed.
report() {
    local t=$1 log=$dir/logs/$1.$mode.log rc execs rate units result
    rc=$(cat "$dir/logs/$t.$mode.rc" 2>/dev/null || echo '?')
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    units=$(grep -Eo 'corp: [0-9]+' "$log" | tail -1 | grep -Eo '[0-9]+')
    if [ "$rc" = 0 ]; then
        result=ok
    else
        result="FAILED (exit $rc; $log)"
        failed+=("$t")
    fi
    printf '%-16s %12s %10s %8s  %s\n' "$t" "${execs:-?}" "${rate:-?}" "${units:-?}" "$result"
    if [ "$rc" != 0 ]; then
        # What crashed and where, and the input kept.
        grep -E -A40 '^==[0-9]+==ERROR|runtime error|property broken|^SUMMARY|Test unit written' \
            "$log" | head -80 >&2
        return 1
    fi
}

failed=()
printf '%-16s %12s %10s %8s  %s\n' target executions exec/s corpus result
if [ "$jobs" = 1 ]; then
    for t in "$@"; do
        fuzz_one "$t"
        report "$t" || { [ "$mode" = replay ] && break; }
    done
else
    running=0
    for t in "$@"; do
        rm -f "$dir/logs/$t.$mode.rc"
        if [ "$running" -ge "$jobs" ]; then
            wait -n
            running=$((running - 1))
        fi
        fuzz_one "$t" &
        running=$((running + 1))
    done
    wait
    for t in "$@"; do report "$t"; done
fi
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz.sh: failed: ${failed[*]}" >&2
    exit 1
fi
