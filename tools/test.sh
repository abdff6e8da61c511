#!/usr/bin/env bash
# tools/test.sh: what `make test` runs; every test level on a fresh machine.
#
#   tools/test.sh [t/TEST arguments, e.g. t/kernel/smoke.t]
#   SANITIZE=1 tools/test.sh       build with ASan+UBSan, run httpd under them
#
# 1. installs what is missing (tools/deps.sh);
# 2. as root: re-runs itself as an unprivileged user on a copy of the tree
#    (Apache::Test will not run httpd as root, initdb refuses root, and CI's
#    clone may sit under /root, which that user cannot enter);
# 3. builds (make, make unit), starts a throwaway PostgreSQL cluster, migrates
#    the databases `svc` (integration) and `svc_unit` (unit tests);
# 4. runs the C unit tests (valgrind, or plainly when SANITIZE=1);
# 5. runs the Apache::Test suite (t/*.t) against Debian's httpd, event MPM;
# 6. checks the logs (tools/check-logs.pl): crashes, sanitizer reports,
#    unexpected error lines, leaked secrets.
# Servers are stopped and the cluster removed whatever happens.
#
# `make test` runs several of these at once, each on its own share of the
# files (tools/test-shards.sh); each run has its own tree copy, cluster,
# httpd and ports, so concurrent runs never meet.
#
# Knobs: SVC_TEST_USER (default svctest), SVC_TEST_KEEP=1 (keep the cluster
# and, as root, the copied tree, for a post-mortem), SVC_TEST_LOGS_TO (as
# root: where the logs are copied, default t/logs), SVC_TEST_PREPARE_ONLY=1
# (as root: install what is missing, create the user, stop), SVC_TEST_SHARD
# (k/N: this run is shard k of N of a whole run; t/zz_final/contract.t then
# leaves the whole-run verdict to tools/test-shards.sh), SVC_TEST_BUILD_ONLY
# (as root: build, put build/ in the directory it names, stop) and
# SVC_TEST_BUILD_FROM (as root: start from that build/; `make` then finds
# it up to date): the shards of `make test` share one build.
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SANITIZE=${SANITIZE:-0}
# httpd reads it too (t/conf/extra.conf.in: the runs' sandbox under sanitizers).
export SANITIZE
TEST_USER=${SVC_TEST_USER:-svctest}

# Each heading carries the time of day: the phases' durations can be read
# off any run's output (docs/testing.md).
say() { printf '\n=== [%s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
die() { printf 'test.sh: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------------------
# As root: prepare an unprivileged user and a copy of the tree, then re-run.
# ---------------------------------------------------------------------------
# sweep_leftovers OWNER: what runs killed before their cleanup left behind
# (a SIGKILL, a machine stopped mid-run): PostgreSQL clusters in
# ${TMPDIR:-/tmp}/svc-pg.* whose postmaster is gone, and (as root) copied
# trees $home/mod_svc.* older than a day. Only OWNER's, and only what no
# process uses: other runs may be live on this machine right now, and a
# run's directory is in use while any process has its cwd, an open file or
# a mapped library in it (tee holds harness.out, the fakes their logs,
# httpd build/mod_svc.so). Young clusters are left alone: one being
# created has no process in it for a moment yet.
in_use() {
    local dir=$1
    find /proc/[0-9]*/cwd /proc/[0-9]*/root /proc/[0-9]*/exe /proc/[0-9]*/fd/ -maxdepth 1 \
        \( -lname "$dir" -o -lname "$dir/*" \) -print -quit 2>/dev/null | grep -q . && return 0
    grep -qsF "$dir/" /proc/[0-9]*/maps 2>/dev/null
}
postmaster_alive() {
    local pidfile=$1/data/postmaster.pid pid
    [ -s "$pidfile" ] || return 1
    pid=$(head -n 1 "$pidfile")
    [ -n "$pid" ] && tr '\0' '\n' 2>/dev/null <"/proc/$pid/cmdline" | grep -qxF "$1/data"
}
sweep_leftovers() {
    local owner=$1 home=${2:-} d
    for d in $(find "${TMPDIR:-/tmp}" -maxdepth 1 -name 'svc-pg.*' -type d -user "$owner" \
                   -mmin +10 2>/dev/null); do
        postmaster_alive "$d" && continue
        in_use "$d" && continue
        echo "test.sh: removing $d (a killed run's cluster; its postmaster is gone)"
        rm -rf "$d"
    done
    [ -n "$home" ] || return 0
    for d in $(find "$home" -maxdepth 1 -name 'mod_svc.*' -type d -user "$owner" \
                   -mtime +0 2>/dev/null); do
        in_use "$d" && continue
        echo "test.sh: removing $d (a killed run's tree, over a day old, unused)"
        rm -rf "$d"
    done
}

if [ "$(id -u)" = 0 ]; then
    if [ -z "${SVC_TEST_SKIP_DEPS:-}" ]; then
        "$TOP/tools/deps.sh"
    fi

    if ! id -u "$TEST_USER" >/dev/null 2>&1; then
        say "creating user $TEST_USER"
        useradd --system --user-group --create-home \
            --home-dir "/var/lib/$TEST_USER" --shell /bin/bash "$TEST_USER"
    fi
    home=$(getent passwd "$TEST_USER" | cut -d: -f6)
    [ -n "$home" ] || die "no home directory for $TEST_USER"
    mkdir -p "$home"
    chown "$TEST_USER:" "$home"
    sweep_leftovers "$TEST_USER" "$home"
    if [ -n "${SVC_TEST_PREPARE_ONLY:-}" ]; then
        exit 0
    fi

    # A fresh copy the user owns.  build/ is rebuilt (it may hold other flags),
    # var/ is `make run`'s state, t/logs belongs to an earlier run.
    WORK=$(mktemp -d "$home/mod_svc.XXXXXX")
    cleanup_root() {
        if [ -n "${SVC_TEST_KEEP:-}" ]; then
            echo "test.sh: kept $WORK"
        else
            rm -rf "$WORK"
        fi
    }
    trap cleanup_root EXIT
    tar -C "$TOP" --exclude=./build --exclude=./build-fuzz --exclude=./var --exclude=./t/logs -cf - . \
        | tar -C "$WORK" -xf -
    if [ -n "${SVC_TEST_BUILD_FROM:-}" ]; then
        cp -a "$SVC_TEST_BUILD_FROM" "$WORK/build"
    fi
    chown -R "$TEST_USER:" "$WORK"

    say "running the tests as $TEST_USER in $WORK"
    # A clean environment: root's HOME (unreadable to the user) would make
    # Perl and Apache::Test look for preferences there.
    env_pass=(HOME="$home" USER="$TEST_USER" LOGNAME="$TEST_USER"
              PATH="$PATH" LANG=C.UTF-8 SANITIZE="$SANITIZE"
              SVC_TEST_SKIP_DEPS=1)
    for v in CC CI TERM TMPDIR SVC_TEST_KEEP SVC_TEST_UNITS SVC_TEST_SHARD SVC_TEST_BUILD_ONLY \
             SVC_FUZZ_CAPTURE; do
        if [ -n "${!v:-}" ]; then env_pass+=("$v=${!v}"); fi
    done
    rc=0
    if command -v runuser >/dev/null 2>&1; then
        runuser -u "$TEST_USER" -- env -i "${env_pass[@]}" \
            bash "$WORK/tools/test.sh" "$@" || rc=$?
    else
        setpriv --reuid="$TEST_USER" --regid="$TEST_USER" --init-groups \
            env -i "${env_pass[@]}" bash "$WORK/tools/test.sh" "$@" || rc=$?
    fi

    # Leave the logs where a developer (or CI) looks for them (the summary
    # printed by the run above already points there).
    if [ -n "${SVC_TEST_BUILD_ONLY:-}" ]; then
        if [ "$rc" = 0 ]; then
            rm -rf "$SVC_TEST_BUILD_ONLY"
            cp -a "$WORK/build" "$SVC_TEST_BUILD_ONLY"
        fi
        exit $rc
    fi

    logs_to=${SVC_TEST_LOGS_TO:-$TOP/t/logs}
    if [ -d "$WORK/t/logs" ]; then
        rm -rf "$logs_to"
        mkdir -p "$(dirname "$logs_to")"
        cp -R "$WORK/t/logs" "$logs_to"
        chown -R --reference="$TOP" "$logs_to"
    fi
    exit $rc
fi

# ---------------------------------------------------------------------------
# As an ordinary user, in $TOP.
# ---------------------------------------------------------------------------
cd "$TOP"
ME=$(id -un)
LOGS=$TOP/t/logs

declare -a PASSED=() FAILED=()
pass() { PASSED+=("$1"); echo "test.sh: PASS $1"; }
fail() { FAILED+=("$1"); echo "test.sh: FAIL $1"; }

summary() {
    say "summary"
    local t
    for t in "${PASSED[@]+"${PASSED[@]}"}"; do echo "  ok      $t"; done
    for t in "${FAILED[@]+"${FAILED[@]}"}"; do echo "  FAILED  $t"; done
    echo "  (logs: t/logs/: error_log, access_log, postgresql.log)"
    echo
    echo "tests: ${#PASSED[@]} passed, ${#FAILED[@]} failed"
}

if [ -z "${SVC_TEST_SKIP_DEPS:-}" ]; then
    tools/deps.sh
    # Started directly (not from root's copy): sweep this user's leftovers.
    sweep_leftovers "$ME"
fi

# --- build -------------------------------------------------------------------
say "build (SANITIZE=$SANITIZE)"
jobs=$(nproc 2>/dev/null || echo 2)
if ! make -j"$jobs" SANITIZE="$SANITIZE" all unit; then
    fail build
    summary
    exit 1
fi
pass build
if [ -n "${SVC_TEST_BUILD_ONLY:-}" ]; then
    exit 0
fi
SVCCTL=$TOP/build/svcctl

# --- sanitizer runtime for the processes we did not build -------------------
if [ "$SANITIZE" = 1 ]; then
    cc_bin=${CC:-cc}
    if "$cc_bin" --version 2>/dev/null | grep -q clang; then
        asan_rt=$("$cc_bin" -print-file-name=libclang_rt.asan-x86_64.so)
        ubsan_rt=
    else
        asan_rt=$("$cc_bin" -print-file-name=libasan.so)
        ubsan_rt=$("$cc_bin" -print-file-name=libubsan.so)
    fi
    [ -f "$asan_rt" ] || die "ASan runtime not found ($asan_rt)"
    # Our own programs (svcctl, unit tests) are instrumented and check leaks.
    export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=0
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fi

# --- PostgreSQL ----------------------------------------------------------------
pg_bindir() {
    local d
    d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    if [ -n "$d" ] && [ -x "$d/initdb" ]; then echo "$d"; return; fi
    d=$(pg_config --bindir 2>/dev/null || true)
    if [ -n "$d" ] && [ -x "$d/initdb" ]; then echo "$d"; return; fi
    d=$(command -v initdb || true)
    [ -n "$d" ] && dirname "$d"
}
PGBIN=$(pg_bindir) || true
[ -n "$PGBIN" ] || die "PostgreSQL server binaries (initdb, pg_ctl) not found"

PGTMP=$(mktemp -d "${TMPDIR:-/tmp}/svc-pg.XXXXXX")
PGDATA=$PGTMP/data
PGLOG=$PGTMP/postgresql.log
HTTPD_PIDFILE=$LOGS/httpd.pid

cleanup() {
    local rc=$?
    set +e
    # An interrupted t/TEST can leave httpd behind.
    if [ -s "$HTTPD_PIDFILE" ]; then
        local pid
        pid=$(cat "$HTTPD_PIDFILE")
        if kill -0 "$pid" 2>/dev/null; then
            echo "test.sh: stopping httpd ($pid)"
            kill -TERM "$pid"
            for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
            kill -KILL "$pid" 2>/dev/null
        fi
    fi
    # The second nodes of the two-node tests (t/lib/SvcNode.pm) stop when
    # their test ends, however it ends, unless the test itself was killed:
    # then their process groups go here (each node's parent leads its own).
    # A pid file left by a node killed on purpose (t/nodes/lost.t) may name
    # a pid reused since: only a process started with that node's
    # configuration is stopped. The same for t/nodes/pgbouncer.t's pgbouncer.
    local nodepid nodeconf pid
    for nodepid in "$LOGS"/nodes/*/httpd.pid "$LOGS"/pgbouncer/pgbouncer.pid; do
        [ -s "$nodepid" ] || continue
        nodeconf=$(dirname "$nodepid")/httpd.conf
        [ "${nodepid##*/}" = httpd.pid ] || nodeconf=$(dirname "$nodepid")/pgbouncer.ini
        pid=$(cat "$nodepid")
        if [ -n "$pid" ] && tr '\0' '\n' 2>/dev/null <"/proc/$pid/cmdline" | grep -qxF "$nodeconf"; then
            echo "test.sh: stopping $(dirname "$nodepid") ($pid)"
            kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid"
        fi
    done
    local fake
    for fake in ${FAKEVCS_PID:-} ${FAKEVCS_TLS_PID:-} ${FAKESTRIPE_PID:-}; do
        if kill -0 "$fake" 2>/dev/null; then
            kill -TERM "$fake"
        fi
    done
    if [ -f "$PGDATA/postmaster.pid" ]; then
        "$PGBIN/pg_ctl" -D "$PGDATA" -m fast -w -t 30 stop >/dev/null 2>&1 ||
            "$PGBIN/pg_ctl" -D "$PGDATA" -m immediate -w stop >/dev/null 2>&1
    fi
    if [ -n "${SVC_TEST_KEEP:-}" ]; then
        echo "test.sh: kept the cluster in $PGTMP"
    else
        rm -rf "$PGTMP"
    fi
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

say "PostgreSQL cluster in $PGTMP"
"$PGBIN/initdb" -D "$PGDATA" -A trust -U "$ME" -E UTF8 --locale=C --no-sync \
    >"$PGTMP/initdb.log" 2>&1 || { cat "$PGTMP/initdb.log"; die "initdb failed"; }
# Settings live in postgresql.conf (not pg_ctl -o) so a test's
# `pg_ctl restart` keeps them.  Unix socket only: no port to collide on.
# fsync=off only saves time; restarts (even -m immediate) lose nothing
# without an OS crash.
cat >>"$PGDATA/postgresql.conf" <<EOF

# --- tools/test.sh ---
listen_addresses = ''
unix_socket_directories = '$PGTMP'
port = 5432
max_connections = 200
fsync = off
logging_collector = off
log_line_prefix = '%m [%p] %q%u@%d '
EOF
"$PGBIN/pg_ctl" -D "$PGDATA" -l "$PGLOG" -w -t 60 start >/dev/null \
    || { cat "$PGLOG"; die "PostgreSQL did not start"; }

conninfo() { echo "host=$PGTMP port=5432 dbname=$1 user=$ME connect_timeout=3"; }
SVC_DB=$(conninfo svc)
SVC_UNIT_DB=$(conninfo svc_unit)

# The server secret: 32 random bytes as 64 hex characters, mode 0600.
SECRET_FILE=$PGTMP/secret.key
(umask 077; od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$SECRET_FILE")
SVC_SECRET=file:$SECRET_FILE

setup_db() {
    "$PGBIN/createdb" -h "$PGTMP" -p 5432 "$1" &&
    SVC_DB=$(conninfo "$1") SVC_SECRET=$SVC_SECRET "$SVCCTL" migrate
}
# svc_behind stays empty: a virtual host of the test server points at it to
# prove the module answers 503 while the schema is behind (t/kernel/schema.t).
if setup_db svc && setup_db svc_unit \
        && "$PGBIN/createdb" -h "$PGTMP" -p 5432 svc_behind; then
    pass "migrate"
else
    fail "migrate"
    summary
    exit 1
fi

# --- unit tests -----------------------------------------------------------------
# Given test files to run (a subset), the C unit tests are skipped unless
# SVC_TEST_UNITS=1: iterating on one integration test should not wait for
# valgrind. `make test` passes no arguments and runs them all.
say "unit tests"
shopt -s nullglob
units=(build/unit/test_*)
shopt -u nullglob
if [ $# -gt 0 ] && [ -z "${SVC_TEST_UNITS:-}" ]; then
    echo "(skipped: test files were named; SVC_TEST_UNITS=1 runs them too)"
    units=()
fi
for t in "${units[@]}"; do
    [ -f "$t" ] && [ -x "$t" ] || continue
    name=unit/$(basename "$t")
    echo "--- $name"
    started=$SECONDS
    if [ "$SANITIZE" = 1 ]; then
        cmd=("$t")
    else
        cmd=(valgrind -q --error-exitcode=1 --leak-check=full --num-callers=30 "$t")
    fi
    if SVC_TEST_DB=$SVC_UNIT_DB SVC_SECRET=$SVC_SECRET "${cmd[@]}"; then
        pass "$name"
    else
        fail "$name"
    fi
    echo "test.sh: $name took $((SECONDS - started)) s"
done
[ ${#units[@]} -gt 0 ] || echo "(no unit tests built)"

# --- integration tests (Apache::Test) ------------------------------------------
say "integration tests (Apache::Test, event MPM)"
export SVC_DB SVC_SECRET SVCCTL
export SVC_TEST_PGDATA=$PGDATA SVC_TEST_PGBIN=$PGBIN SVC_TEST_PGLOG=$PGLOG
export SVC_TOP=$TOP
export APACHE_TEST_NO_STICKY_PREFERENCES=1

# The fake code-hosting provider (t/lib/FakeVcs.pm) for sign-in, started
# before httpd so its configuration can name it: SvcOAuthClientId and friends
# in t/conf/extra.conf.in are env: references to these variables. The tests
# switch its behaviour through its /_control endpoint.
VCS_SECRET_FILE=$PGTMP/vcs-client-secret
VCS_OAUTH_CLIENT_ID=Iv1.test$(od -An -tx1 -N6 /dev/urandom | tr -d ' \n')
VCS_OAUTH_CLIENT_SECRET=$(od -An -tx1 -N20 /dev/urandom | tr -d ' \n')
(umask 077; echo "$VCS_OAUTH_CLIENT_SECRET" >"$VCS_SECRET_FILE")
export VCS_OAUTH_CLIENT_ID VCS_OAUTH_CLIENT_SECRET

# The code-hosting App: its private key (a real RSA key; the fake checks the
# App JWTs' signatures with its public half), webhook secret and client
# secret, and a key file that does not parse (t/vcs/config.t). Never printed;
# every secret line is in a file the log check hunts for.
SVC_TEST_VAR=$PGTMP/var
mkdir -p "$SVC_TEST_VAR"
VCS_APP_KEY_FILE=$PGTMP/vcs-app.pem
VCS_APP_BADKEY_FILE=$PGTMP/vcs-app-bad.pem
VCS_APP_SECRETS=$PGTMP/vcs-app-secrets
(umask 077
 openssl genrsa -out "$VCS_APP_KEY_FILE" 2048 2>/dev/null ||
     die "cannot make the App's key"
 echo "-----BEGIN PRIVATE KEY-----" >"$VCS_APP_BADKEY_FILE"
 echo "this is not a key" >>"$VCS_APP_BADKEY_FILE"
 echo "-----END PRIVATE KEY-----" >>"$VCS_APP_BADKEY_FILE")
VCS_APP_ID=$((100000 + RANDOM))
VCS_APP_SLUG=mod-svc-test-$VCS_APP_ID
VCS_APP_CLIENT_ID=Iv23li$(od -An -tx1 -N7 /dev/urandom | tr -d ' \n')
VCS_APP_CLIENT_SECRET=$(od -An -tx1 -N20 /dev/urandom | tr -d ' \n')
VCS_APP_WEBHOOK_SECRET=$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')
(umask 077
 { echo "$VCS_APP_CLIENT_SECRET"; echo "$VCS_APP_WEBHOOK_SECRET";
   grep -v -- '-----' "$VCS_APP_KEY_FILE"; } >"$VCS_APP_SECRETS")
# GitHub's published webhook test vector (docs.github.com, "Validating webhook
# deliveries"): a public value, not a secret.
VCS_TEST_VECTOR_SECRET="It's a Secret to Everybody"
export VCS_TEST_VECTOR_SECRET SVC_TEST_VAR VCS_APP_KEY_FILE VCS_APP_BADKEY_FILE VCS_APP_ID VCS_APP_SLUG \
    VCS_APP_CLIENT_ID VCS_APP_CLIENT_SECRET VCS_APP_WEBHOOK_SECRET

# start_fake NAME [ARGS...]: starts t/lib/FakeVcs.pm, waits for its port.
start_fake() {
    local name=$1
    shift
    perl -It/lib -MFakeVcs -e FakeVcs::main -- --port-file "$PGTMP/$name.port" "$@" \
        >"$PGTMP/$name.log" 2>&1 &
    for _ in $(seq 100); do [ -s "$PGTMP/$name.port" ] && break; sleep 0.1; done
    [ -s "$PGTMP/$name.port" ] || { cat "$PGTMP/$name.log"; die "the fake provider $name did not start"; }
}
start_fake fakevcs
FAKEVCS_PID=$!
VCS_WEB_URL=http://127.0.0.1:$(cat "$PGTMP/fakevcs.port")
VCS_API_URL=$VCS_WEB_URL/api/v3

# A second fake over HTTPS, with a certificate from a private authority made
# here: the provider behind a private CA that SvcVcsCAFile is for
# (t/identity/signin_private_ca.t).
CA_DIR=$PGTMP/ca
mkdir -p "$CA_DIR"
{
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj '/CN=mod_svc test CA' \
        -keyout "$CA_DIR/ca.key" -out "$CA_DIR/ca.pem" &&
    openssl req -newkey rsa:2048 -nodes -subj '/CN=127.0.0.1' \
        -keyout "$CA_DIR/server.key" -out "$CA_DIR/server.csr" &&
    printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n' >"$CA_DIR/ext.cnf" &&
    openssl x509 -req -in "$CA_DIR/server.csr" -CA "$CA_DIR/ca.pem" -CAkey "$CA_DIR/ca.key" \
        -CAcreateserial -days 2 -extfile "$CA_DIR/ext.cnf" -out "$CA_DIR/server.pem"
} >"$CA_DIR/openssl.log" 2>&1 || { cat "$CA_DIR/openssl.log"; die "cannot make the test CA"; }
start_fake fakevcs-tls --tls-cert "$CA_DIR/server.pem" --tls-key "$CA_DIR/server.key"
FAKEVCS_TLS_PID=$!
VCS_TLS_WEB_URL=https://127.0.0.1:$(cat "$PGTMP/fakevcs-tls.port")
VCS_TLS_API_URL=$VCS_TLS_WEB_URL/api/v3
SVC_TEST_CA_FILE=$CA_DIR/ca.pem
export VCS_TLS_WEB_URL VCS_TLS_API_URL SVC_TEST_CA_FILE
export VCS_WEB_URL VCS_API_URL

# The fake payment provider (t/lib/FakeStripe.pm): Stripe's API with the
# prices of the plans t/conf/extra.conf.in defines. The secret key is the one
# it accepts; the webhook secret signs the events the tests deliver. Both
# are secrets the log check hunts for.
BILLING_SECRETS=$PGTMP/billing-secrets
BILLING_SECRET_KEY=sk_test_$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')
BILLING_WEBHOOK_SECRET=whsec_$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')
# A key the fake refuses (t/billing/provider_down.t): its refusal must never
# show the key.
BILLING_BAD_KEY=sk_test_$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')
(umask 077; { echo "$BILLING_SECRET_KEY"; echo "$BILLING_WEBHOOK_SECRET"; echo "$BILLING_BAD_KEY"; } \
     >"$BILLING_SECRETS")
export BILLING_SECRET_KEY BILLING_WEBHOOK_SECRET BILLING_BAD_KEY
perl -It/lib -MFakeStripe -e FakeStripe::main -- --port-file "$PGTMP/fakestripe.port" \
    --prices price_team:2900,price_business:9900,price_capped:500 \
    >"$PGTMP/fakestripe.log" 2>&1 &
FAKESTRIPE_PID=$!
for _ in $(seq 100); do [ -s "$PGTMP/fakestripe.port" ] && break; sleep 0.1; done
[ -s "$PGTMP/fakestripe.port" ] || { cat "$PGTMP/fakestripe.log"; die "the fake payment provider did not start"; }
BILLING_API_URL=http://127.0.0.1:$(cat "$PGTMP/fakestripe.port")
export BILLING_API_URL

# Start from scratch: no configuration or logs of an earlier run.
rm -rf "$LOGS" t/TEST t/SMOKE t/conf/httpd.conf t/conf/extra.conf \
    t/conf/apache_test_config.pm t/conf/modules.conf t/conf/mime.types t/htdocs
perl -MApache::TestMM -e 'Apache::TestMM::generate_script("t/TEST")' >/dev/null

if [ "$SANITIZE" = 1 ]; then
    # httpd is not instrumented, but mod_svc.so is: the ASan runtime must be
    # the first library of the process, so preload it into httpd (only).
    # Leaks are not checked in httpd (its pools are freed by exit), crashes
    # and errors are, through the report files in t/logs.
    wrapper=$PGTMP/bin/apache2
    mkdir -p "$PGTMP/bin"
    httpd_bin=$(apxs -q SBINDIR)/$(apxs -q TARGET)
    cat >"$wrapper" <<EOF
#!/bin/sh
export LD_PRELOAD="$asan_rt${ubsan_rt:+:$ubsan_rt}\${LD_PRELOAD:+:\$LD_PRELOAD}"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:log_path=$LOGS/asan"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$LOGS/ubsan"
exec "$httpd_bin" "\$@"
EOF
    chmod 755 "$wrapper"
    export SVC_TEST_HTTPD=$wrapper
fi

# A whole run (no file named): t/zz_final/contract.t then requires every
# documented operation to have answered. A shard of a whole run names its
# files; contract.t leaves that verdict to tools/test-shards.sh, which sees
# every shard.
if [ $# -eq 0 ]; then
    export SVC_TEST_ALL=1
fi
if [ -n "${SVC_TEST_SHARD:-}" ]; then
    export SVC_TEST_SHARD
fi
# The harness stamps each file with its start time and, when it passes, its
# wall time: t/logs/durations.txt below, and tools/test-durations.txt that
# `make test` balances its shards with.
export HARNESS_TIMER=1
harness_out=$PGTMP/harness.out
set +e
# The event-stream tests hold a couple of thousand sockets at once (client
# and server): the soft limit of open files goes up to the hard one.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
perl t/TEST "$@" 2>&1 | tee "$harness_out"
rc=${PIPESTATUS[0]}
set -e
# One summary entry per test file: every file the harness announced
# ("[hh:mm:ss] t/x.t .. "), failed if its "Test Summary Report" names it.
mapfile -t tfiles < <(grep -oE '^(\[[0-9:]+\] )?t/[^ ]+\.t \.+' "$harness_out" \
                      | sed -E 's/^\[[0-9:]+\] //; s/ \.*$//' | sort -u)
mapfile -t tbad < <(sed -n '/^Test Summary Report/,$p' "$harness_out" \
                    | grep -oE '^t/[^ ]+\.t' | sort -u)
for f in "${tfiles[@]+"${tfiles[@]}"}"; do
    if printf '%s\n' "${tbad[@]+"${tbad[@]}"}" | grep -qxF "$f"; then
        fail "$f"
    else
        pass "$f"
    fi
done
if [ "$rc" != 0 ]; then
    fail "t/TEST (exit $rc)"
elif [ ${#tfiles[@]} = 0 ]; then
    fail "t/TEST (no test ran)"
fi

# --- logs -------------------------------------------------------------------------
say "log check"
mkdir -p "$LOGS"
# Each file's wall time in seconds, slowest first: the harness's own figure
# for a file that passed, else the time until the next file started.
perl -ne '
    BEGIN { $prev = undef }
    if (/^\[(\d\d):(\d\d):(\d\d)\](?: (t\/\S+\.t) \.+(?:.*?\b(\d+) ms)?)?/) {
        my $t = $1 * 3600 + $2 * 60 + $3;
        if ($prev && !defined $prev->[2]) {
            my $d = $t - $prev->[1];
            $d += 86400 if $d < 0;
            $prev->[2] = $d;
        }
        if (defined $4) {
            $prev = [$4, $t, defined $5 ? int($5 / 1000 + 0.5) : undef];
            push @f, $prev;
        }
    }
    END { printf "%d %s\n", $_->[2] // 0, $_->[0] for sort { ($b->[2] // 0) <=> ($a->[2] // 0) } @f }
' "$harness_out" >"$LOGS/durations.txt" || true
cp "$PGLOG" "$LOGS/postgresql.log" 2>/dev/null || true
cores=$(find t -maxdepth 2 -name 'core*' -type f -newer "$PGDATA/PG_VERSION" 2>/dev/null || true)
if [ -n "$cores" ]; then
    echo "core dumps: $cores"
    fail "core dumps"
fi
if tools/check-logs.pl --logs "$LOGS" --pg-log "$LOGS/postgresql.log" \
        --secrets "$SECRET_FILE" --secrets "$VCS_SECRET_FILE" --secrets "$VCS_APP_SECRETS" \
        --secrets "$BILLING_SECRETS"; then
    pass "logs"
else
    fail "logs"
fi

summary
[ ${#FAILED[@]} = 0 ]
