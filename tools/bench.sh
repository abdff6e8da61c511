#!/usr/bin/env bash
# tools/bench.sh: `make bench`, wrk against the stack `make run` starts.
#
# In one httpd, one run: GET /api/me/tokens with an admin PAT (auth, a
# database round trip, JSON out), GET /noop (the module's no-op handler) and,
# for scale, GET /internal/health (one trivial statement, no auth), each for
# BENCH_REQUESTS requests over 32 connections after a warm-up. The PAT
# belongs to a user made for the run with BENCH_TOKENS tokens, so the page
# listed is the same on every run. Prints the throughputs, the ratios,
# p50/p99 latencies, and httpd's total RSS (parent + children, from /proc)
# before and after the PAT run.
# The numbers are ratios to /noop on the same machine, never absolutes to
# assert on.
#
# Then planning documents: a product of the demo org with one 100 KB
# document and a share link, the body read through the org API (GET
# .../doc-versions/:id/content with the PAT) and through the share portal
# (GET /api/share/{token}/documents/{docId}), each for BENCH_DOC_REQUESTS
# requests. The portal is measured as deployed (every request counted by
# its per-address rate limit: one row all the connections update) and,
# on a second port, with that limit lifted, to show what the counting
# costs. Paths and tokens reach wrk through its environment, not its
# command line.
#
# Then (BENCH_METRICS, default 1; 0: skip) /noop and the token route again
# in an httpd restarted with SvcMetrics Off, then in one restarted with
# them On (the default): what the metrics cost.
#
# Then the token route at 64 connections for BENCH_SOAK seconds (0: skip):
# the reliability budget (a minute at 64 connections, not one non-2xx answer
# on a valid request), where any non-2xx answer or socket error is a failure
# to look into.
#
# Then (BENCH_STREAMS, default 2000; 0: skip) that many event streams on the
# demo org (tools/sse-bench.pl): memory per stream, GET /api/me's rate with
# them open against without, and delivery times of BENCH_STREAM_EVENTS
# events from commit to every stream.
#
# Then (BENCH_AGENTS, default 100; 0: skip) that many simulated deploy
# agents (tools/telemetry-bench.pl), each with a running deployment, sending
# a metrics batch every 15 s and a probe every 10 s for BENCH_AGENT_SECONDS
# (60): the share of one CPU httpd and PostgreSQL spend on them.
#
# Then (BENCH_RUNS, default 100; 0: skip) the cost of a run beyond its
# model (tools/run-bench.pl): an org of its own whose provider is the fake
# model of the tests (t/lib/FakeLLM.pm, answering at once), httpd restarted
# with SvcRunConcurrency 2 and LogLevel svc:debug (each run's parts, SVC0790);
# BENCH_RUNS runs one at a time (p50/p99 of every part), then BENCH_RUNS at
# once with SvcRunConcurrency 2 and again with 4 (runs a minute). The load
# average is printed with it: the figures mean little without it.
#
#   BENCH_REQUESTS=200000 BENCH_CONNECTIONS=32 BENCH_WARMUP=5 BENCH_TOKENS=1
#   BENCH_DOC_REQUESTS=50000 BENCH_SOAK=60 BENCH_STREAMS=2000 BENCH_STREAM_EVENTS=20
#   BENCH_AGENTS=100 BENCH_AGENT_SECONDS=60 BENCH_RUNS=100 BENCH_METRICS=1 BENCH_ROUTES=1
#   PORT=8080
#
# BENCH_ROUTES=0 skips the routes, the documents, the metrics and the soak:
# with BENCH_AGENTS=0 BENCH_RUNS=0, only the event streams are measured, e.g.
#   BENCH_ROUTES=0 BENCH_AGENTS=0 BENCH_RUNS=0 BENCH_STREAMS=10000 make bench
set -euo pipefail

SVC_RUN_LIB=1
SVC_RUN_BENCH=1
# shellcheck source=tools/run.sh
. "$(dirname "${BASH_SOURCE[0]}")/run.sh"

REQUESTS=${BENCH_REQUESTS:-200000}
DOC_REQUESTS=${BENCH_DOC_REQUESTS:-50000}
CONNS=${BENCH_CONNECTIONS:-32}
TOKENS=${BENCH_TOKENS:-1}
SOAK=${BENCH_SOAK:-60}
ROUTES=${BENCH_ROUTES:-1}
STREAMS=${BENCH_STREAMS:-2000}
STREAM_EVENTS=${BENCH_STREAM_EVENTS:-20}
AGENTS=${BENCH_AGENTS:-100}
AGENT_SECONDS=${BENCH_AGENT_SECONDS:-60}
RUNS=${BENCH_RUNS:-100}
[[ $RUNS =~ ^[0-9]+$ ]] || { echo "bench: BENCH_RUNS must be a number" >&2; exit 2; }
[[ $TOKENS =~ ^[1-9][0-9]*$ ]] || { echo "bench: BENCH_TOKENS must be 1 or more" >&2; exit 2; }
WARMUP=${BENCH_WARMUP:-5}
THREADS=${BENCH_THREADS:-$(nproc 2>/dev/null || echo 2)}
[ "$THREADS" -le "$CONNS" ] || THREADS=$CONNS

# total_rss_kib PID: VmRSS of PID and its direct children (httpd's workers).
total_rss_kib() {
    local parent=$1 total=0 n=0 st pid ppid rss
    for st in /proc/[0-9]*/status; do
        pid=${st#/proc/}; pid=${pid%/status}
        ppid=$(awk '/^PPid:/ {print $2}' "$st" 2>/dev/null) || continue
        [ "$pid" = "$parent" ] || [ "$ppid" = "$parent" ] || continue
        rss=$(awk '/^VmRSS:/ {print $2}' "$st" 2>/dev/null) || continue
        total=$((total + ${rss:-0}))
        n=$((n + 1))
    done
    echo "$total $n"
}

# The wrk script: sets the PAT header, stops each thread after its share of
# requests (wrk itself only knows durations; the last thread to finish leaves
# a mark the shell turns into SIGINT, which ends wrk early with correct
# statistics), and prints one parsable line.
write_lua() {
    cat >"$1" <<'EOF'
local token = os.getenv("SVC_BENCH_TOKEN")
if token and token ~= "" then
    wrk.headers["Authorization"] = "Bearer " .. token
end
-- A path that holds a secret (a share token) comes from the environment.
local path = os.getenv("SVC_BENCH_PATH")
if path and path ~= "" then
    wrk.path = path
end
local limit = tonumber(os.getenv("SVC_BENCH_PER_THREAD") or "0")
local mark = os.getenv("SVC_BENCH_MARK")
local count = 0

function response(status, headers, body)
    count = count + 1
    if limit > 0 and count == limit then
        local f = io.open(mark, "a")
        f:write("done\n")
        f:close()
        wrk.thread:stop()
    end
end

function done(summary, latency, requests)
    local e = summary.errors
    io.write(string.format(
        "SVCBENCH requests=%d duration_us=%d p50_us=%d p99_us=%d non2xx=%d sockerr=%d\n",
        summary.requests, summary.duration,
        latency:percentile(50), latency:percentile(99),
        e.status, e.connect + e.read + e.write + e.timeout))
end
EOF
}

# run_wrk NAME PATH TOKEN REQUESTS|0 SECONDS → prints the SVCBENCH line
# (SVC_BENCH_PATH, when set, replaces PATH without showing it in argv;
# BENCH_PORT is another port.)
run_wrk() {
    local name=$1 path=$2 token=$3 n=$4 secs=$5 mark out pid
    mark=$(mktemp "$BENCH_DIR/mark.XXXXXX")
    out=$BENCH_DIR/wrk-$name.out
    : >"$mark"
    SVC_BENCH_TOKEN=$token SVC_BENCH_MARK=$mark \
    SVC_BENCH_PER_THREAD=$(( n > 0 ? (n + THREADS - 1) / THREADS : 0 )) \
        wrk -t"$THREADS" -c"$CONNS" -d"${secs}s" --timeout 10s -s "$LUA" \
            "http://127.0.0.1:${BENCH_PORT:-$PORT}$path" >"$out" 2>&1 &
    pid=$!
    if [ "$n" -gt 0 ]; then
        while kill -0 "$pid" 2>/dev/null; do
            if [ "$(wc -l <"$mark")" -ge "$THREADS" ]; then
                kill -INT "$pid" 2>/dev/null || true
                break
            fi
            sleep 0.05
        done
    fi
    wait "$pid" || true
    rm -f "$mark"
    grep '^SVCBENCH ' "$out" || { cat "$out" >&2; die "wrk failed on $path"; }
}

field() { sed -n "s/.* $2=\([0-9]*\).*/\1/p" <<<"$1"; }

report() {
    local name=$1 line=$2 req dur p50 p99 non2xx sockerr
    req=$(field "$line" requests); dur=$(field "$line" duration_us)
    p50=$(field "$line" p50_us); p99=$(field "$line" p99_us)
    non2xx=$(field "$line" non2xx); sockerr=$(field "$line" sockerr)
    awk -v n="$name" -v r="$req" -v d="$dur" -v a="$p50" -v b="$p99" \
        -v x="$non2xx" -v s="$sockerr" 'BEGIN {
        printf "  %-20s %9d req %10.0f req/s   p50 %7.2f ms   p99 %7.2f ms   non-2xx %d, socket errors %d\n",
               n, r, r / (d / 1e6), a / 1000, b / 1000, x, s }'
}

rps() { awk -v r="$(field "$1" requests)" -v d="$(field "$1" duration_us)" 'BEGIN { print r / (d / 1e6) }'; }

# The user made for the run, with its tokens (and sessions), goes when the
# run ends, however it ends, so runs leave nothing behind in var/'s
# database. Its audit entries stay: the log is append-only by design.
BENCH_USER=
bench_forget_user() {
    [ -n "$BENCH_USER" ] || return 0
    local n
    # The stream phase's users are named after the bench user.
    n=$(printf '%s\n' "DELETE FROM users WHERE email = :'email' OR email LIKE :'streams';" |
        as_pg "$PGBIN/psql" -X -q -tA -h "$PGSOCK" -d svc -v ON_ERROR_STOP=1 \
            -v email="$BENCH_USER" -v streams="stream%-$BENCH_USER" 2>&1) \
        || { echo "bench: could not remove $BENCH_USER: $n" >&2; return 0; }
    say "removed the bench user $BENCH_USER and its tokens"
    BENCH_USER=
}

# The bench's planning documents, made through the API as the bench user
# (a member of the demo org for the run): a project, a product, one
# document of 100 KB and a share link. Sets DOC_VERSION, DOC_ID and
# SHARE_PATH; the project (and so all of it) goes when the run ends.
BENCH_PROJECT=
bench_forget_docs() {
    [ -n "$BENCH_PROJECT" ] || return 0
    printf '%s\n' "DELETE FROM projects WHERE slug = :'slug' AND org_id = (SELECT id FROM orgs WHERE slug = '$DEMO_ORG');" |
        as_pg "$PGBIN/psql" -X -q -tA -h "$PGSOCK" -d svc -v ON_ERROR_STOP=1 \
            -v slug="$BENCH_PROJECT" >/dev/null 2>&1 || true
    BENCH_PROJECT=
}

# The bench user joins the demo org once, for whichever part needs it first
# (the documents and the event streams both do).
BENCH_MEMBER=
bench_join_demo() {
    [ -z "$BENCH_MEMBER" ] || return 0
    "$SVCCTL" org add-member "$DEMO_ORG" "$BENCH_USER" --role member >/dev/null
    BENCH_MEMBER=1
}

# jfield NAME < JSON: a top-level member (the bench's own answers only).
jfield() { perl -MJSON::PP -e 'my $d = decode_json(join "", <STDIN>); print $d->{$ARGV[0]} // ""' "$1"; }

bench_docs() {
    local token=$1 api="http://127.0.0.1:$PORT/api/orgs/$DEMO_ORG" out product
    bench_join_demo
    BENCH_PROJECT="bench-$(date -u +%Y%m%d%H%M%S)-$$"
    ON_STOP=(bench_forget_docs "${ON_STOP[@]}")
    curl -s -o /dev/null -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
         -d "{\"slug\":\"$BENCH_PROJECT\",\"name\":\"Bench\"}" "$api/projects"
    out=$(curl -s -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
          -d '{"name":"Bench product"}' "$api/projects/$BENCH_PROJECT/products")
    product=$(jfield id <<<"$out")
    [ -n "$product" ] || die "creating the bench product failed: $out"
    # 100 KB of markdown: headings and paragraphs, in UTF-8.
    out=$(perl -MJSON::PP -e '
        my $b = ""; my $i = 0;
        while (length($b) < 102400) {
            $i++;
            $b .= "## Section $i\n\nThe checkout keeps the cart\x{2019}s total in step with "
                . "every change; refunds go back to the card they came from.\n\n";
        }
        print JSON::PP->new->utf8->encode({ kind => "section", title => "Bench",
                                            body => substr($b, 0, 102400) });' |
        curl -s -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
             --data-binary @- "$api/products/$product/documents")
    DOC_ID=$(jfield id <<<"$out")
    DOC_VERSION=$(perl -MJSON::PP -e 'my $d = decode_json(join "", <STDIN>);
                                      print $d->{current_version}{id} // ""' <<<"$out")
    [ -n "$DOC_VERSION" ] || die "creating the bench document failed: $out"
    out=$(curl -s -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
          -d '{"expires_in_days":1}' "$api/products/$product/shares")
    SHARE_PATH="/api/share/$(jfield token <<<"$out")/documents/$DOC_ID"
    [ "${#SHARE_PATH}" -gt 80 ] || die "creating the bench share link failed"
}

# The run phase's org (and with it its project, provider and runs) goes
# when the bench ends, and the fake model with it.
BENCH_RUN_ORG=
BENCH_LLM_PID=
bench_forget_runs() {
    if [ -n "$BENCH_LLM_PID" ]; then
        kill "$BENCH_LLM_PID" 2>/dev/null || true
        wait "$BENCH_LLM_PID" 2>/dev/null || true
        BENCH_LLM_PID=
    fi
    [ -n "$BENCH_RUN_ORG" ] || return 0
    printf '%s\n' "DELETE FROM orgs WHERE slug = :'slug';" |
        as_pg "$PGBIN/psql" -X -q -tA -h "$PGSOCK" -d svc -v ON_ERROR_STOP=1 \
            -v slug="$BENCH_RUN_ORG" >/dev/null 2>&1 \
        || echo "bench: the run phase's org $BENCH_RUN_ORG could not be removed" >&2
    BENCH_RUN_ORG=
}

# bench_runs TOKEN PSQL: the cost of a run beyond its model (above).
bench_runs() {
    local token=$1 psql_cmd=$2 api out llm_port llm_key conc body
    echo
    echo "bench: the cost of a run, $RUNS runs, fake model; load average" \
         "$(cut -d' ' -f1-3 /proc/loadavg) before"
    mkdir -p "$BENCH_DIR/llm"
    rm -f "$BENCH_DIR/llm/port" "$BENCH_DIR/llm/port.key"
    ON_STOP=(bench_forget_runs "${ON_STOP[@]}")
    perl -I"$TOP/t/lib" -MFakeLLM -e FakeLLM::main -- --flavor openai \
        --port-file "$BENCH_DIR/llm/port" 2>"$BENCH_DIR/llm/stderr" &
    BENCH_LLM_PID=$!
    for _ in $(seq 100); do
        [ -s "$BENCH_DIR/llm/port.key" ] && break
        sleep 0.1
    done
    llm_port=$(cat "$BENCH_DIR/llm/port" 2>/dev/null) || die "the fake model did not start"
    llm_key=$(cat "$BENCH_DIR/llm/port.key")
    # Every completion answers with one small file: single-answer mode.
    curl -s -o /dev/null -H 'Content-Type: application/json' \
         -d '{"reply":"{\"summary\":\"A file\",\"files\":[{\"path\":\"a.txt\",\"content\":\"a\\n\"}]}"}' \
         "http://127.0.0.1:$llm_port/_control"
    BENCH_RUN_ORG="bench-runs-$(date -u +%Y%m%d%H%M%S)-$$"
    "$SVCCTL" org create "$BENCH_RUN_ORG" --owner "$BENCH_USER" --name "Bench runs" >/dev/null
    api="http://127.0.0.1:$PORT/api/orgs/$BENCH_RUN_ORG"
    curl -s -o /dev/null -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
         -d '{"slug":"app","name":"App"}' "$api/projects"
    # The key goes through curl's standard input, not its command line.
    body=$(LLM_KEY=$llm_key LLM_URL="http://127.0.0.1:$llm_port" perl -MJSON::PP -e '
        print JSON::PP->new->encode({ name => "fake", kind => "openai", base_url => $ENV{LLM_URL},
                                      model => "gpt-4o-mini", api_key => $ENV{LLM_KEY},
                                      tools => "off" })')
    out=$(curl -s -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
          --data-binary @- "$api/providers" <<<"$body")
    [ "$(jfield is_default <<<"$out")" = 1 ] || die "the run phase's provider was not made: $out"
    local args
    for conc in 2 4; do
        httpd_stop
        BENCH_RUN_CONCURRENCY=$conc httpd_start "$VAR/log/error_log"
        args=(--url "http://127.0.0.1:$PORT" --token "$token" --org "$BENCH_RUN_ORG"
              --project app --runs "$RUNS" --log "$VAR/log/error_log" --psql "$psql_cmd")
        if [ "$conc" = 2 ]; then
            perl "$TOP/tools/run-bench.pl" "${args[@]}" --serial \
                --label "one at a time (SvcRunConcurrency 2)" \
                || { echo "bench: the run phase failed" >&2; return 0; }
        fi
        perl "$TOP/tools/run-bench.pl" "${args[@]}" --label "all at once, SvcRunConcurrency $conc" \
            || { echo "bench: the run phase failed" >&2; return 0; }
    done
    echo "  load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
}

# bench_metrics_pass NAME TOKEN: httpd restarted (BENCH_METRICS_OFF as the
# caller sets it), warmed up, then the token route and /noop; their SVCBENCH
# lines in BENCH_PASS as "TOKEN-ROUTE|NOOP" (not printed: httpd_start must
# run in this shell, which keeps its pid). httpd stays up, with that
# setting, until the next restart (NAME: the wrk files' suffix).
bench_metrics_pass() {
    local name=$1 token=$2 pat noop
    httpd_stop
    httpd_start "$VAR/log/error_log"
    run_wrk "warmup-pat-$name" /api/me/tokens "$token" 0 "$WARMUP" >/dev/null
    run_wrk "warmup-noop-$name" /noop "" 0 "$WARMUP" >/dev/null
    pat=$(run_wrk "pat-$name" /api/me/tokens "$token" "$REQUESTS" 600)
    noop=$(run_wrk "noop-$name" /noop "" "$REQUESTS" 600)
    BENCH_PASS="$pat|$noop"
}

main_bench() {
    command -v wrk >/dev/null || die "wrk is not installed (tools/deps.sh)"
    setup_stack
    BENCH_DIR=$VAR/bench
    mkdir -p "$BENCH_DIR"
    LUA=$BENCH_DIR/svc.lua
    write_lua "$LUA"
    # Files, not the terminal: a benchmark should not pay for a tty.
    httpd_start "$VAR/log/error_log"

    # The caller is a user of its own, made for this run, holding exactly
    # BENCH_TOKENS tokens: the page the PAT route lists is the same on every
    # run and machine, not one that grows with each `make run`.
    local token code i path
    BENCH_USER="bench-$(date -u +%Y%m%d%H%M%S)-$$@localhost"
    ON_STOP+=(bench_forget_user)
    "$SVCCTL" user add "$BENCH_USER" --name Bench >/dev/null
    for ((i = 0; i < TOKENS; i++)); do
        token=$("$SVCCTL" token create "$BENCH_USER" --scope admin --name "bench $((i + 1)) of $TOKENS")
    done
    code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" \
           "http://127.0.0.1:$PORT/api/me/tokens")
    [ "$code" = 200 ] || die "GET /api/me/tokens answered $code, not 200"
    for path in /noop /internal/health; do
        code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT$path")
        [ "$code" = 200 ] || die "GET $path answered $code, not 200"
    done

    # BENCH_ROUTES=0: only the phases after the routes (e.g. the streams).
    local before= after= pat noop health
    if [ "$ROUTES" != 0 ]; then
        echo
        echo "bench: $CONNS connections, $THREADS wrk threads, $(nproc) CPUs;" \
             "warm-up ${WARMUP}s per route, then $REQUESTS requests per route;" \
             "the PAT's user has $TOKENS token(s), $(curl -s -H "Authorization: Bearer $token" \
             "http://127.0.0.1:$PORT/api/me/tokens" | wc -c) bytes listed"
        bench_docs "$token"
        local size
        size=$(curl -s -H "Authorization: Bearer $token" \
               "http://127.0.0.1:$PORT/api/orgs/$DEMO_ORG/doc-versions/$DOC_VERSION/content" | wc -c)
        [ "$size" -ge 100000 ] || die "the bench document reads back as $size bytes"
        for port in "$PORT" "$((PORT + 1))"; do
            code=$(curl -s -o /dev/null -w '%{http_code}' -K - <<<"url = \"http://127.0.0.1:$port$SHARE_PATH\"")
            [ "$code" = 200 ] || die "the share portal on port $port answered $code, not 200"
        done
        run_wrk warmup-pat /api/me/tokens "$token" 0 "$WARMUP" >/dev/null
        run_wrk warmup-noop /noop "" 0 "$WARMUP" >/dev/null
        run_wrk warmup-health /internal/health "" 0 "$WARMUP" >/dev/null

        before=$(total_rss_kib "$HTTPD_PID")
        pat=$(run_wrk pat /api/me/tokens "$token" "$REQUESTS" 600)
        after=$(total_rss_kib "$HTTPD_PID")
        noop=$(run_wrk noop /noop "" "$REQUESTS" 600)
        # For scale: one trivial statement, no authentication. What a round trip
        # to PostgreSQL costs on this machine, before any work of ours.
        health=$(run_wrk health /internal/health "" "$REQUESTS" 600)
        # A 100 KB document body: through the org API, and through the portal
        # (counted by its rate limit, and on the second port without it).
        local content portal portal_free
        run_wrk warmup-content "/api/orgs/$DEMO_ORG/doc-versions/$DOC_VERSION/content" "$token" 0 \
            "$WARMUP" >/dev/null
        content=$(run_wrk content "/api/orgs/$DEMO_ORG/doc-versions/$DOC_VERSION/content" "$token" \
                  "$DOC_REQUESTS" 600)
        SVC_BENCH_PATH=$SHARE_PATH run_wrk warmup-portal /portal "" 0 "$WARMUP" >/dev/null
        portal=$(SVC_BENCH_PATH=$SHARE_PATH run_wrk portal /portal "" "$DOC_REQUESTS" 600)
        portal_free=$(SVC_BENCH_PATH=$SHARE_PATH BENCH_PORT=$((PORT + 1)) \
                      run_wrk portal-free /portal "" "$DOC_REQUESTS" 600)

        echo
        report "GET /noop" "$noop"
        report "GET /internal/health" "$health"
        report "GET /api/me/tokens" "$pat"
        awk -v p="$(rps "$pat")" -v n="$(rps "$noop")" -v h="$(rps "$health")" 'BEGIN {
            printf "  PAT route / no-op: %.1f %% of the no-op throughput\n", 100 * p / n
            printf "  (health / no-op: %.1f %%; PAT route / health: %.1f %%)\n", 100 * h / n, 100 * p / h }'
        echo
        echo "  a $size-byte document body, $DOC_REQUESTS requests each:"
        report "org API (PAT)" "$content"
        report "share portal" "$portal"
        report "portal, no rate limit" "$portal_free"
        awk -v c="$(rps "$content")" -v s="$(rps "$portal")" -v f="$(rps "$portal_free")" \
            -v n="$(rps "$noop")" 'BEGIN {
            printf "  org API / no-op: %.1f %%; portal / no-op: %.1f %%; portal without its rate limit / no-op: %.1f %%\n",
                   100 * c / n, 100 * s / n, 100 * f / n }'
        # What the metrics cost (issue 24): /noop and the token route in an
        # httpd restarted with SvcMetrics Off, then in one restarted with them
        # On (the default), each warmed up alike, so that both start from the
        # same state (a fresh restart's caches and pool). BENCH_METRICS=0 skips it.
        if [ "${BENCH_METRICS:-1}" != 0 ]; then
            # Off, On, Off again: a pass measured later is not the same as
            # one measured first (the database's state moves on), so the On
            # pass sits between two Off passes and is compared with both.
            local off on off2
            BENCH_METRICS_OFF=1 bench_metrics_pass off "$token"
            off=$BENCH_PASS
            bench_metrics_pass on "$token"
            on=$BENCH_PASS
            BENCH_METRICS_OFF=1 bench_metrics_pass off2 "$token"
            off2=$BENCH_PASS
            echo
            echo "  metrics: httpd restarted with SvcMetrics Off, then On, then Off again (/noop"
            echo "  counts nothing either way: it shows the noise of the machine):"
            report "GET /noop, metrics off" "${off#*|}"
            report "GET /noop, metrics on" "${on#*|}"
            report "GET /noop, metrics off again" "${off2#*|}"
            report "GET /api/me/tokens, metrics off" "${off%%|*}"
            report "GET /api/me/tokens, metrics on" "${on%%|*}"
            report "GET /api/me/tokens, metrics off again" "${off2%%|*}"
            awk -v p="$(rps "${on%%|*}")" -v po="$(rps "${off%%|*}")" -v po2="$(rps "${off2%%|*}")" \
                -v n="$(rps "${on#*|}")" -v no="$(rps "${off#*|}")" -v no2="$(rps "${off2#*|}")" 'BEGIN {
                f = "  with metrics / the mean of the two passes without: token route %.1f %%, "
                f = f "no-op %.1f %%; the two passes without differ by %.1f %% (token route)\n"
                printf f, 200 * p / (po + po2), 200 * n / (no + no2), 100 * (po2 - po) / po }'
        fi
        # The reliability budget: 64 connections for a while, and not one
        # failed answer or reset connection on valid requests.
        if [ "$SOAK" -gt 0 ]; then
            local soak
            soak=$(CONNS=64 run_wrk soak /api/me/tokens "$token" 0 "$SOAK")
            report "64 conns, ${SOAK}s" "$soak"
        fi
    fi
    # Event streams (issue 10): open STREAMS of them on the demo org's stream,
    # measure memory, the API's rate with them idle, and how fast commits
    # reach them all.
    if [ "$STREAMS" -gt 0 ]; then
        echo
        echo "bench: $STREAMS event streams on /api/orgs/$DEMO_ORG/events"
        bench_join_demo
        local org_id psql_cmd
        org_id=$(as_pg "$PGBIN/psql" -X -q -tA -h "$PGSOCK" -d svc \
                 -c "SELECT id FROM orgs WHERE slug = '$DEMO_ORG'")
        if [ "$IS_ROOT" = 1 ]; then
            psql_cmd="runuser -u $PG_OS_USER -- $PGBIN/psql -X -q -tA -h $PGSOCK -d svc"
        else
            psql_cmd="$PGBIN/psql -X -q -tA -h $PGSOCK -d svc"
        fi
        # One user holds at most SvcStreamLimit (100) streams: viewers of
        # the demo org, 100 streams each, as that many people would.
        local i stream_args=()
        for i in $(seq 1 $(( (STREAMS + 99) / 100 ))); do
            "$SVCCTL" user add "stream$i-$BENCH_USER" >/dev/null
            "$SVCCTL" org add-member "$DEMO_ORG" "stream$i-$BENCH_USER" --role viewer >/dev/null
            stream_args+=(--stream-token "$("$SVCCTL" token create "stream$i-$BENCH_USER" --scope read)")
        done
        ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
        (cd / && perl "$TOP/tools/sse-bench.pl" --url "http://127.0.0.1:$PORT" \
            --org "$DEMO_ORG" --org-id "$org_id" --token "$token" --httpd-pid "$HTTPD_PID" \
            --psql "$psql_cmd" --streams "$STREAMS" --events "$STREAM_EVENTS" \
            "${stream_args[@]}") \
            || echo "bench: the stream phase failed" >&2
    fi
    # Deploy agents' telemetry (issue 22): an admin of the demo org makes
    # their targets; their deployments are rows, as the planner and an
    # agent would have left them running.
    if [ "$AGENTS" -gt 0 ]; then
        echo
        echo "bench: $AGENTS simulated deploy agents reporting telemetry for ${AGENT_SECONDS}s"
        local admin_user="agents-$BENCH_USER" admin_token pg_pid tpsql
        "$SVCCTL" user add "$admin_user" >/dev/null
        "$SVCCTL" org add-member "$DEMO_ORG" "$admin_user" --role admin >/dev/null
        admin_token=$("$SVCCTL" token create "$admin_user" --scope admin --name "telemetry bench")
        pg_pid=$(head -n 1 "$PGDATA/postmaster.pid")
        if [ "$IS_ROOT" = 1 ]; then
            tpsql="runuser -u $PG_OS_USER -- $PGBIN/psql -X -q -tA -h $PGSOCK -d svc"
        else
            tpsql="$PGBIN/psql -X -q -tA -h $PGSOCK -d svc"
        fi
        (cd / && perl "$TOP/tools/telemetry-bench.pl" --url "http://127.0.0.1:$PORT" \
            --org "$DEMO_ORG" --token "$admin_token" --httpd-pid "$HTTPD_PID" \
            --pg-pid "$pg_pid" --psql "$tpsql" --agents "$AGENTS" --seconds "$AGENT_SECONDS") \
            || echo "bench: the telemetry phase failed" >&2
    fi
    if [ "$RUNS" -gt 0 ]; then
        local runs_psql
        if [ "$IS_ROOT" = 1 ]; then
            runs_psql="runuser -u $PG_OS_USER -- $PGBIN/psql -X -q -tA -h $PGSOCK -d svc"
        else
            runs_psql="$PGBIN/psql -X -q -tA -h $PGSOCK -d svc"
        fi
        bench_runs "$token" "$runs_psql"
    fi
    if [ -n "$before" ]; then
        set -- $before; local b_kib=$1 b_n=$2
        set -- $after;  local a_kib=$1 a_n=$2
        awk -v b="$b_kib" -v bn="$b_n" -v a="$a_kib" -v an="$a_n" -v r="$REQUESTS" 'BEGIN {
            printf "  httpd RSS: %.1f MiB (%d processes) before, %.1f MiB (%d processes) after %d PAT requests: %+.1f %%\n",
                   b / 1024, bn, a / 1024, an, r, 100 * (a - b) / b }'
    fi
    echo
    stop_all
}

main_bench "$@"
