#!/usr/bin/env bash
# tools/run.sh: `make run`, a working mod_svc on this machine in one command.
#
#   make run                 (PORT=8081 make run for another port)
#   make run NODES=2         two httpd nodes, on PORT and PORT+1, one PostgreSQL
#
# Installs what is missing, builds, creates (once) a PostgreSQL cluster in
# var/pg with its socket in var/, migrates it, bootstraps the founder
# admin@localhost owning org "demo", writes a fresh admin PAT to
# var/admin.token (0600) and the connection settings to var/svc.env, and runs
# httpd (event MPM) with the module in the foreground on 127.0.0.1:$PORT.
# Ctrl-C stops httpd and PostgreSQL.  var/ is kept for the next run.
#
# NODES=N (1 to 9) starts N httpd instances on PORT .. PORT+N-1, as N machines
# behind a load balancer would run: the same module, configuration, secret
# and database, each with its own run supervisor, pid and log files and run
# workspaces (node 1 in var/, node n in var/node<n>/). docs/operations.md
# ("Several nodes") says what must be the same on real machines.
#
# As root: initdb refuses root, so PostgreSQL runs as an unprivileged user
# ($SVC_RUN_USER, default svcdev, created if needed) and httpd's children
# switch to it (User/Group).  If that user cannot enter the checkout (e.g. it
# is under /root), var/ becomes a symlink to /var/lib/mod_svc-dev/<hash>.
#
# tools/bench.sh sources this file with SVC_RUN_LIB=1 to reuse the functions.
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PORT=${PORT:-8080}
NODES=${NODES:-1}
RUN_USER=${SVC_RUN_USER:-svcdev}
ADMIN_EMAIL=admin@localhost
DEMO_ORG=demo

say() { printf 'run.sh: %s\n' "$*"; }
die() { printf 'run.sh: %s\n' "$*" >&2; exit 1; }

IS_ROOT=0
[ "$(id -u)" = 0 ] && IS_ROOT=1

# as_pg CMD...: run as the user that owns the PostgreSQL cluster.
as_pg() {
    if [ "$IS_ROOT" = 1 ]; then
        # cd /: the user may not be able to enter the current directory.
        (cd / && runuser -u "$PG_OS_USER" -- "$@")
    else
        "$@"
    fi
}

pg_bindir() {
    local d
    d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    if [ -n "$d" ] && [ -x "$d/initdb" ]; then echo "$d"; return; fi
    d=$(pg_config --bindir 2>/dev/null || true)
    if [ -n "$d" ] && [ -x "$d/initdb" ]; then echo "$d"; return; fi
    d=$(command -v initdb || true)
    [ -n "$d" ] && dirname "$d"
}

# --- var/ and who owns it --------------------------------------------------

setup_var() {
    cd "$TOP"
    PG_OS_USER=$(id -un)
    if [ "$IS_ROOT" = 1 ]; then
        PG_OS_USER=$RUN_USER
        # A cluster made by someone else (an earlier non-root run) keeps its owner.
        if [ -d var/pg ]; then
            PG_OS_USER=$(stat -L -c %U var/pg)
            [ "$PG_OS_USER" != root ] || die "var/pg is owned by root; remove it"
        elif ! id -u "$RUN_USER" >/dev/null 2>&1; then
            say "creating user $RUN_USER (PostgreSQL and httpd's children run as it)"
            useradd --system --user-group --home-dir "/var/lib/$RUN_USER" \
                --no-create-home --shell /usr/sbin/nologin "$RUN_USER"
        fi
        if [ ! -L var ] && ! runuser -u "$PG_OS_USER" -- test -x "$TOP"; then
            # The user cannot even enter the checkout: keep var/ elsewhere.
            [ ! -e var ] || die "$PG_OS_USER cannot reach $TOP/var; remove var/ \
(rm -rf var) so that make run can re-create it as a symlink"
            local hash target
            hash=$(printf '%s' "$TOP" | sha256sum | cut -c1-12)
            target=/var/lib/mod_svc-dev/$hash
            mkdir -p "$target"
            ln -s "$target" var
        fi
        if [ -L var ]; then
            say "note: $PG_OS_USER cannot enter $TOP, so var -> $(readlink var)"
        fi
        mkdir -p var
        chown "$PG_OS_USER:" "$(readlink -f var)"
    else
        mkdir -p var
        if [ -d var/pg ] && [ ! -O var/pg ]; then
            die "var/pg belongs to $(stat -L -c %U var/pg); run as that user or as root, or remove var/"
        fi
    fi
    VAR=$(readlink -f var)
    chmod 700 "$VAR"
    mkdir -p "$VAR/log" "$VAR/run" "$VAR/htdocs"
    if [ "$IS_ROOT" = 1 ]; then
        chown "$PG_OS_USER:" "$VAR" "$VAR/log" "$VAR/run" "$VAR/htdocs"
    fi
    PGDATA=$VAR/pg
    PGLOG=$VAR/log/postgresql.log
    # Unix socket paths are limited to 107 bytes.
    PGSOCK=$VAR
    if [ ${#PGSOCK} -gt 90 ]; then
        PGSOCK=/tmp/mod_svc-$(printf '%s' "$VAR" | sha256sum | cut -c1-12)
        mkdir -p "$PGSOCK"
        [ "$IS_ROOT" = 0 ] || chown "$PG_OS_USER:" "$PGSOCK"
        chmod 700 "$PGSOCK"
    fi
    SVC_DB="host=$PGSOCK port=5432 dbname=svc user=$PG_OS_USER connect_timeout=3"
    SECRET_FILE=$VAR/secret.key
    SVC_SECRET=file:$SECRET_FILE
    SVCCTL=$TOP/build/svcctl
    export SVC_DB SVC_SECRET
}

# --- PostgreSQL ----------------------------------------------------------

PG_STARTED=0

pg_start() {
    PGBIN=$(pg_bindir) || true
    [ -n "$PGBIN" ] || die "PostgreSQL server binaries (initdb, pg_ctl) not found"
    if [ ! -f "$PGDATA/PG_VERSION" ]; then
        say "creating the PostgreSQL cluster in $PGDATA"
        as_pg "$PGBIN/initdb" -D "$PGDATA" -A trust -U "$PG_OS_USER" -E UTF8 \
            --locale=C >"$VAR/log/initdb.log" 2>&1 \
            || { cat "$VAR/log/initdb.log"; die "initdb failed"; }
        # Unix socket only, next to the data: no port to collide on.
        as_pg tee -a "$PGDATA/postgresql.conf" >/dev/null <<EOF

# --- tools/run.sh ---
listen_addresses = ''
unix_socket_directories = '$PGSOCK'
port = 5432
max_connections = 200
logging_collector = off
log_line_prefix = '%m [%p] %q%u@%d '
EOF
    fi
    if as_pg "$PGBIN/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1; then
        say "PostgreSQL is already running (left over from an earlier run); using it"
    else
        as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -l "$PGLOG" -w -t 60 start >/dev/null \
            || { tail -n 20 "$PGLOG"; die "PostgreSQL did not start (log: $PGLOG)"; }
    fi
    PG_STARTED=1
    if ! as_pg "$PGBIN/psql" -X -q -h "$PGSOCK" -d postgres -tAc \
            "SELECT 1 FROM pg_database WHERE datname = 'svc'" | grep -q 1; then
        as_pg "$PGBIN/createdb" -h "$PGSOCK" svc
    fi
}

pg_stop() {
    if [ "$PG_STARTED" = 1 ]; then
        as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -m fast -w -t 60 stop >/dev/null 2>&1 ||
            as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -m immediate -w stop >/dev/null 2>&1 || true
        PG_STARTED=0
        say "PostgreSQL stopped"
    fi
}

# --- secret, schema, bootstrap ---------------------------------------------

make_secret() {
    if [ ! -s "$SECRET_FILE" ]; then
        (umask 077; od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$SECRET_FILE")
        say "generated $SECRET_FILE"
    fi
    # httpd's children (the cluster's user, when root) may read it too.
    [ "$IS_ROOT" = 0 ] || chown "$PG_OS_USER:" "$SECRET_FILE"
    chmod 600 "$SECRET_FILE"
}

# svcctl_idem ARGS...: svcctl that accepts "already exists" as success.
svcctl_idem() {
    local err rc=0
    err=$("$SVCCTL" "$@" 2>&1 >/dev/null) || rc=$?
    if [ $rc != 0 ] && ! grep -qi 'already exists' <<<"$err"; then
        printf '%s\n' "$err" >&2
        die "svcctl $* failed"
    fi
}

bootstrap() {
    "$SVCCTL" migrate
    # The marker lives in the cluster's directory: a new cluster bootstraps anew.
    local marker=$PGDATA/svc-bootstrap.done
    if [ ! -f "$marker" ]; then
        svcctl_idem user add "$ADMIN_EMAIL" --name Admin --founder
        svcctl_idem org create "$DEMO_ORG" --owner "$ADMIN_EMAIL" --name Demo
        as_pg touch "$marker"
        say "bootstrapped founder $ADMIN_EMAIL, owner of org $DEMO_ORG"
    fi
    local tmp
    tmp=$(umask 077; mktemp "$VAR/admin.token.XXXXXX")
    "$SVCCTL" token create "$ADMIN_EMAIL" --scope admin --name "make run $(date -u +%FT%TZ)" >"$tmp"
    mv "$tmp" "$VAR/admin.token"
    chmod 600 "$VAR/admin.token"
    {
        echo "# Written by tools/run.sh: source it to use build/svcctl on this instance."
        echo "SVC_DB='$SVC_DB'"
        echo "SVC_SECRET='$SVC_SECRET'"
    } >"$VAR/svc.env"
}

# --- httpd -----------------------------------------------------------------

HTTPD_PID=

# node_dir N, node_port N: where node N of `make run NODES=...` keeps its
# own files (pid, logs, run workspaces, configuration) and where it listens.
# Node 1 is the one of a plain `make run`, in var/ itself.
node_dir() {
    if [ "$1" = 1 ]; then echo "$VAR"; else echo "$VAR/node$1"; fi
}
node_port() { echo $((PORT + $1 - 1)); }

# write_httpd_conf ERRORLOG [NODE]: the whole httpd configuration of node NODE
# (default 1), regenerated each start; the mod_svc part has the same
# directives as conf/svc.conf, and every node's is the same but for its port,
# its public URL and its own files. For make bench (SVC_RUN_BENCH=1) the
# share portal's rate limit is raised above what the bench sends, and a
# second port, PORT+1, serves the same site without it.
write_httpd_conf() {
    local errorlog=$1 node=${2:-1} libexec dir port
    dir=$(node_dir "$node")
    port=$(node_port "$node")
    libexec=$(apxs -q LIBEXECDIR)
    # SVC_HTTPD may name another binary or a wrapper (the tests' sanitizer one).
    HTTPD_BIN=${SVC_HTTPD:-$(apxs -q SBINDIR)/$(apxs -q TARGET)}
    HTTPD_CONF=$dir/httpd.conf
    {
        cat <<EOF
# Generated by tools/run.sh at every start; edit tools/run.sh, not this file.
# Node $node of $NODES.
ServerRoot        "$VAR"
DefaultRuntimeDir "$dir/run"
PidFile           "$dir/run/httpd.pid"
DocumentRoot      "$VAR/htdocs"
ServerName        127.0.0.1
Listen            127.0.0.1:$port

LoadModule mpm_event_module  $libexec/mod_mpm_event.so
LoadModule authz_core_module $libexec/mod_authz_core.so
LoadModule reqtimeout_module $libexec/mod_reqtimeout.so
LoadModule dbd_module        $libexec/mod_dbd.so
LoadModule alias_module      $libexec/mod_alias.so
LoadModule mime_module       $libexec/mod_mime.so
LoadModule headers_module    $libexec/mod_headers.so
LoadModule svc_module        $TOP/build/mod_svc.so
EOF
        if [ "$IS_ROOT" = 1 ]; then
            printf 'User  %s\nGroup %s\n' "$PG_OS_USER" "$(id -gn "$PG_OS_USER")"
        fi
        cat <<EOF

ErrorLog  $errorlog
LogLevel  info
LogFormat "%h %l %u %t \"%r\" %>s %b %D %{svc-route}n %{svc-user}n %{svc-org}n %{X-Request-Id}o" svc
CustomLog "$dir/log/access_log" svc

# Workers wait on PostgreSQL, so they stay busy longer than for files; when
# every worker of a child is busy, the event MPM closes that child's idle
# keep-alive connections, and a client that was about to reuse one sees a
# reset (wrk: hundreds of read errors a minute at 64 connections with 25
# threads a child, none with 64). DBDMax 32 x ServerLimit 4 stays below the
# cluster's max_connections; a thread without a free connection waits for
# one only while another runs its statements.
StartServers        2
ServerLimit         4
ThreadsPerChild     64
MinSpareThreads     64
MaxSpareThreads     256
MaxRequestWorkers   256
MaxConnectionsPerChild 0
KeepAlive On
# Event streams are suspended connections: they hold no thread, but the
# event MPM stops a child accepting once its connections pass
# ThreadsPerChild + AsyncRequestWorkerFactor x idle threads: 64 + 64 x 64 =
# 4,160 here, 16,640 over the 4 children (a child that stops accepting does
# not count as spare, so the MPM starts the next). make bench's 10,000
# streams need 2,500 a child, and as many file descriptors in each (the
# ulimit below; docs/operations.md has the formula).
AsyncRequestWorkerFactor 64
# A client that trickles its headers or body in holds a worker until it is
# done; 300 such clients left no worker for anyone else. mod_reqtimeout cuts
# them off (408): headers within 20 s, extended by 1 s per 500 bytes to at
# most 40 s; a body started within 20 s and then at 500 bytes a second. These
# are Debian's defaults (its reqtimeout.conf, enabled by default); no TLS
# handshake limit, as nothing here speaks TLS.
RequestReadTimeout handshake=0 header=20-40,MinRate=500 body=20,MinRate=500
# TRACE echoes a request, Authorization and cookies included. The service
# refuses it on its own paths anyway; this refuses it everywhere else.
TraceEnable Off

<Directory />
    # No .htaccess lookups on every request; the API is not files.
    AllowOverride None
    Require all denied
</Directory>

# --- mod_svc (as in conf/svc.conf) ---
DBDriver   pgsql
DBDParams  "$SVC_DB"
DBDPersist On
DBDMin     0
DBDKeep    8
DBDMax     32
DBDExptime 60

SvcSecret        $SVC_SECRET
SvcInternalAllow 127.0.0.1 ::1
# Where browsers reach us: the sign-in callback and our own origin for the
# CSRF check come from here, never from a request's Host header. (Behind a
# load balancer every node names the balancer's URL; here each node is
# reached on its own port.)
SvcPublicURL     http://127.0.0.1:$port

# Sign-in: on when VCS_OAUTH_CLIENT_ID and VCS_OAUTH_CLIENT_SECRET are set in
# the environment of \`make run\`; VCS_WEB_URL and VCS_API_URL default to GitHub.
SvcOAuthClientId     env:VCS_OAUTH_CLIENT_ID
SvcOAuthClientSecret env:VCS_OAUTH_CLIENT_SECRET
SvcVcsWebURL         env:VCS_WEB_URL
SvcVcsApiURL         env:VCS_API_URL

# Model providers on this machine (a local Ollama on 127.0.0.1:11434, say):
# a development instance may call private addresses; conf/svc.conf's
# default (Off) is what a shared server wants.
SvcProviderAllowPrivate On

# Runs: the factory this tree builds, workspaces under var/ (each node its own).
SvcRunFactory $TOP/build/svc-factory
SvcRunWorkDir $dir/runs
# The code-hosting App: on when the six VCS_APP_* variables are set in the
# environment of \`make run\`, or once the setup wizard wrote them to
# var/vcs-app.env (then restart).
SvcVcsAppCredentials $VAR/vcs-app.env
SvcVcsAppId            env:VCS_APP_ID
SvcVcsAppSlug          env:VCS_APP_SLUG
SvcVcsAppClientId      env:VCS_APP_CLIENT_ID
SvcVcsAppClientSecret  env:VCS_APP_CLIENT_SECRET
SvcVcsAppWebhookSecret env:VCS_APP_WEBHOOK_SECRET
SvcVcsAppPrivateKey    env:VCS_APP_PRIVATE_KEY_PEM

# Billing: payments are on when BILLING_SECRET_KEY (a Stripe test key,
# sk_test_...) is set in the environment of \`make run\`; the webhook when
# BILLING_WEBHOOK_SECRET is (\`stripe listen --forward-to
# 127.0.0.1:$PORT/webhooks/billing\` prints one); BILLING_API_URL points
# elsewhere than Stripe. Two example plans, whose prices are made in the
# provider's test mode and named here by BILLING_PRICE_TEAM and
# BILLING_PRICE_BUSINESS (placeholders otherwise: checkout then answers 502
# with the provider's "No such price").
SvcBillingSecretKey     env:BILLING_SECRET_KEY
SvcBillingWebhookSecret env:BILLING_WEBHOOK_SECRET
SvcBillingApiURL        env:BILLING_API_URL
SvcBillingPlan team     "Team"     ${BILLING_PRICE_TEAM:-price_team}         2900 usd run_minutes=1000  model_tokens=5000000  deployment_hours=720
SvcBillingPlan business "Business" ${BILLING_PRICE_BUSINESS:-price_business} 9900 usd run_minutes=10000 model_tokens=50000000 deployment_hours=7200

<Location /api/>
    Require all granted
    SetHandler svc
</Location>
<Location /internal/>
    Require all granted
    SetHandler svc
</Location>
<Location /auth/>
    Require all granted
    SetHandler svc
</Location>
<Location /webhooks/vcs>
    Require all granted
    SetHandler svc
</Location>
<Location /webhooks/billing>
    Require all granted
    SetHandler svc
</Location>
<Location /admin/vcs-app/>
    Require all granted
    SetHandler svc
</Location>
<LocationMatch "^/orgs/[^/]+/vcs/install\$">
    Require all granted
    SetHandler svc
</LocationMatch>
# httpd refuses some requests before the module sees them: a malformed
# percent-escape in the path (400), an encoded '/' or NUL (404), a URL or a
# body over its limits. These send every such refusal on the service's URLs
# to the module, which answers it as the problem document of the same status
# (application/problem+json with a code, docs/api/conventions.md). Requests
# refused before httpd has read a URL at all (a request line over
# LimitRequestLine, a malformed header) keep httpd's own page.
<LocationMatch "^/(api|internal|auth)/|^/webhooks/(vcs|billing)|^/admin/vcs-app/|^/orgs/[^/]+/vcs/install\$">
    ErrorDocument 400 /api/_error
    ErrorDocument 401 /api/_error
    ErrorDocument 403 /api/_error
    ErrorDocument 404 /api/_error
    ErrorDocument 405 /api/_error
    ErrorDocument 408 /api/_error
    ErrorDocument 411 /api/_error
    ErrorDocument 413 /api/_error
    ErrorDocument 414 /api/_error
    ErrorDocument 415 /api/_error
    ErrorDocument 500 /api/_error
    ErrorDocument 501 /api/_error
    ErrorDocument 502 /api/_error
    ErrorDocument 503 /api/_error
    ErrorDocument 504 /api/_error
</LocationMatch>
# The UI's types are set below (AddType); no system-wide table needed.
TypesConfig /dev/null
# --- The web UI (docs/ui.md) ---------------------------------------------------
# Static files (HTML, CSS, JavaScript modules) served by httpd itself: the
# assets under /ui/, and the one page, index.html, for the UI's own paths
# (/, /tokens, /orgs/...), whose routes the page's script reads from the
# URL. The service's paths are never shadowed: /orgs/:slug/vcs/install
# stays the module's, and /api/, /auth/, /internal/, /webhooks/ and /admin/
# match no UI path. mod_alias, mod_headers and mod_mime do the work (Debian:
# svc.load's "# Depends" enables them with a2enmod svc). To serve the UI
# from another origin, leave these out here and see docs/ui.md.
# No fingerprinted file names (there is no build step), so every file is
# revalidated with its ETag on each use (a 304 costs no body): a new
# version is seen at once, never mixed with cached modules of the old one.
# Markdown (marked) and its sanitizer (DOMPurify): the distribution's
# copies (Debian: libjs-marked, node-dompurify), plain scripts.
Alias /ui/vendor/marked.js "/usr/share/javascript/marked/marked.min.js"
Alias /ui/vendor/purify.js "/usr/share/nodejs/dompurify/dist/purify.min.js"
Alias /ui/ "$TOP/ui/"
AliasMatch "^/(?:tokens|orgs/(?![^/]+/vcs/install\$)[^/].*)?\$" "$TOP/ui/index.html"
# The share portal's page: its path carries the link's token (the module
# masks it in the logs), which no other origin may learn from a Referer.
AliasMatch "^/share/[^/]+\$" "$TOP/ui/index.html"
<LocationMatch "^/share/">
    Header always set Referrer-Policy "no-referrer"
</LocationMatch>
<Location "/ui/vendor/">
    Require all granted
    AddType text/javascript .js
    AddCharset utf-8 .js
    FileETag MTime Size
    Header always set Cache-Control "no-cache"
    Header always set X-Content-Type-Options "nosniff"
</Location>
# An installed UI's assets sit in a directory named by their content's
# hash (make install-ui; index.html names it), so one URL never holds two
# versions: cached for a year, never asked again. index.html and the
# vendored libraries stay no-cache.
<DirectoryMatch "^$TOP/ui/[0-9a-f]{16}/">
    Header always set Cache-Control "public, max-age=31536000, immutable"
</DirectoryMatch>
<Directory "$TOP/ui">
    Require all granted
    Options None
    AllowOverride None
    AddType text/javascript .js
    AddType text/css .css
    AddCharset utf-8 .html .js .css
    FileETag MTime Size
    Header always set Cache-Control "no-cache"
    # No inline script or style, nothing from another origin, never framed.
    Header always set Content-Security-Policy "default-src 'self'; base-uri 'none'; object-src 'none'; form-action 'self'; frame-ancestors 'none'"
    Header always set X-Content-Type-Options "nosniff"
    Header always set Referrer-Policy "same-origin"
    Header always set Cross-Origin-Opener-Policy "same-origin"
</Directory>
<Location /noop>
    Require all granted
    SetHandler svc-noop
</Location>
EOF
        if [ -n "${SVC_RUN_BENCH:-}" ]; then
            cat <<EOF

# --- make bench ---
SvcRateLimit share 1000000 60
Listen 127.0.0.1:$((PORT + 1))
<VirtualHost 127.0.0.1:$((PORT + 1))>
    SvcRateLimit share 0 60
</VirtualHost>
EOF
        fi
        # make bench's metrics phase: the same routes with nothing counted.
        if [ -n "${BENCH_METRICS_OFF:-}" ]; then
            printf '%s\n' "SvcMetrics Off"
        fi
        # make bench's run phase: the concurrency measured, each run's parts
        # in the log (SVC0790 at debug), and no per-user limit on starting
        # runs (a hundred at once).
        if [ -n "${BENCH_RUN_CONCURRENCY:-}" ]; then
            cat <<EOF
SvcRunConcurrency $BENCH_RUN_CONCURRENCY
LogLevel info svc:debug
SvcRateLimit runs 1000000 60
EOF
        fi
    } >"$HTTPD_CONF"
    "$HTTPD_BIN" -t -f "$HTTPD_CONF" >/dev/null 2>"$dir/log/configtest.log" \
        || { cat "$dir/log/configtest.log"; die "httpd configuration test failed"; }
}

# httpd_start ERRORLOG [NODE]: start node NODE's httpd (default 1) in the
# background (foreground mode, so it stays our child) and wait until its
# /internal/health answers 200. HTTPD_PID is node 1's, NODE_PIDS[n] node n's.
declare -a NODE_PIDS=()
httpd_start() {
    local node=${2:-1} dir port pidfile pid
    dir=$(node_dir "$node")
    port=$(node_port "$node")
    pidfile=$dir/run/httpd.pid
    mkdir -p "$dir/log" "$dir/run"
    [ "$IS_ROOT" = 0 ] || chown "$PG_OS_USER:" "$dir" "$dir/log" "$dir/run"
    if [ -s "$pidfile" ] && pid=$(cat "$pidfile") && kill -0 "$pid" 2>/dev/null; then
        die "httpd from an earlier run is still running (pid $pid); stop it first"
    fi
    # Someone else on the port would answer our health probe: refuse early.
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        die "127.0.0.1:$port is already in use; try PORT=<another port> make run"
    fi
    write_httpd_conf "$1" "$node"
    # One run's logs at a time, and the previous run's: a bench writes about
    # a million access-log lines, and nothing else would ever trim them.
    local log
    for log in access_log error_log; do
        [ ! -e "$dir/log/$log" ] || mv -f "$dir/log/$log" "$dir/log/$log.1"
    done
    rm -f "$pidfile"
    # Each open event stream is a socket: allow thousands, as Debian's
    # apache2ctl does (APACHE_ULIMIT_MAX_FILES).
    ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
    "$HTTPD_BIN" -f "$HTTPD_CONF" -DFOREGROUND &
    pid=$!
    NODE_PIDS[$node]=$pid
    [ "$node" != 1 ] || HTTPD_PID=$pid
    local code=
    for _ in $(seq 150); do
        kill -0 "$pid" 2>/dev/null || { NODE_PIDS[$node]=; die "httpd exited at start"; }
        # Ours is up once it wrote its pid file (then it listens).
        if [ "$(cat "$pidfile" 2>/dev/null)" = "$pid" ]; then
            code=$(curl -s -o /dev/null -w '%{http_code}' \
                   "http://127.0.0.1:$port/internal/health" || true)
            [ "$code" = 200 ] && return 0
        fi
        sleep 0.2
    done
    die "httpd did not become healthy on port $port (last status: ${code:-none})"
}

httpd_stop() {
    local pid stopped=0
    for pid in "$HTTPD_PID" "${NODE_PIDS[@]+"${NODE_PIDS[@]}"}"; do
        if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
            kill -TERM "$pid" 2>/dev/null || true
            stopped=1
        fi
    done
    for pid in "$HTTPD_PID" "${NODE_PIDS[@]+"${NODE_PIDS[@]}"}"; do
        [ -z "$pid" ] || wait "$pid" 2>/dev/null || true
    done
    [ "$stopped" = 0 ] || say "httpd stopped"
    HTTPD_PID=
    NODE_PIDS=()
}

# Commands to run before the stack stops, while the database is still up
# (make bench forgets the user it made there).
declare -a ON_STOP=()

stop_all() {
    trap - INT TERM EXIT
    set +e
    local hook
    for hook in "${ON_STOP[@]+"${ON_STOP[@]}"}"; do
        $hook
    done
    httpd_stop
    pg_stop
}

# setup_stack: everything up to (not including) httpd.
setup_stack() {
    if [ -z "${SVC_SKIP_DEPS:-}" ]; then
        "$TOP/tools/deps.sh"
    fi
    (cd "$TOP" && make -j"$(nproc 2>/dev/null || echo 2)")
    setup_var
    # One stack per checkout: a second `make run` (or bench) would adopt the
    # first one's PostgreSQL and stop it on exit.
    local pid
    if [ -s "$VAR/run/httpd.pid" ] && pid=$(cat "$VAR/run/httpd.pid") &&
       kill -0 "$pid" 2>/dev/null; then
        die "make run (or make bench) is already running in $TOP (httpd pid $pid)"
    fi
    trap 'stop_all; exit 130' INT
    trap 'stop_all; exit 143' TERM
    trap 'stop_all' EXIT
    pg_start
    make_secret
    bootstrap
}

main() {
    case $NODES in
        [1-9]) ;;
        *) die "NODES must be a number from 1 to 9 (got '$NODES')" ;;
    esac
    setup_stack
    # Foreground: the error log goes to the terminal as well as to a file.
    # (Not `ErrorLog /dev/stderr`: httpd re-opens that path, which fails when
    # stderr belongs to another user, e.g. after su.)
    local n
    for n in $(seq "$NODES"); do
        httpd_start "\"|/usr/bin/tee -a $(node_dir "$n")/log/error_log\"" "$n"
    done
    if [ "$NODES" -gt 1 ]; then
        echo
        for n in $(seq "$NODES"); do
            echo "node $n: http://127.0.0.1:$(node_port "$n")/  (logs: $(node_dir "$n")/log/," \
                 "runs: $(node_dir "$n")/runs/)"
        done
        echo "One PostgreSQL, one secret (var/secret.key), one queue of runs: any node"
        echo "answers any request, and each node's run supervisor takes runs from the queue."
    fi
    cat <<EOF

mod_svc is running on http://127.0.0.1:$PORT/  (Ctrl-C stops httpd and PostgreSQL)

  curl -H "Authorization: Bearer \$(cat var/admin.token)" http://127.0.0.1:$PORT/api/me
  curl http://127.0.0.1:$PORT/api/openapi.json
  set -a; . var/svc.env; set +a; build/svcctl routes    # svcctl on this instance

  founder: $ADMIN_EMAIL (org "$DEMO_ORG"); admin token in var/admin.token (0600)
  sign-in: http://127.0.0.1:$PORT/auth/login when VCS_OAUTH_CLIENT_ID and
           VCS_OAUTH_CLIENT_SECRET are set (OAuth app callback URL:
           http://127.0.0.1:$PORT/auth/callback; see docs/api/signin.md)
  code-hosting App: on when the six VCS_APP_* variables are set, or after the
           setup wizard http://127.0.0.1:$PORT/admin/vcs-app/setup (founder,
           signed in) wrote var/vcs-app.env and httpd restarted. At the
           provider: webhook URL http://127.0.0.1:$PORT/webhooks/vcs,
           callback and setup URL http://127.0.0.1:$PORT/auth/vcs-app/callback
           (a provider must reach them: use SvcPublicURL behind a tunnel;
           see docs/api/vcs.md)
  billing: plans team and business; payments on when BILLING_SECRET_KEY is
           set, the webhook (http://127.0.0.1:$PORT/webhooks/billing) when
           BILLING_WEBHOOK_SECRET is (docs/operations.md, Billing)
  logs: var/log/error_log (also shown below), var/log/access_log (the previous
        run's: *.1), var/log/postgresql.log

EOF
    # `wait` returns as soon as a trapped signal arrives, so Ctrl-C (or kill)
    # stops everything at once rather than after httpd exits on its own.
    # With several nodes, the first to exit ends the run (the EXIT trap stops
    # the others).
    local rc=0
    wait -n "${NODE_PIDS[@]}" || rc=$?
    say "httpd exited ($rc)"
    exit "$rc"
}

if [ -z "${SVC_RUN_LIB:-}" ]; then
    main "$@"
fi
