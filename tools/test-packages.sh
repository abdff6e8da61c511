#!/usr/bin/env bash
# tools/test-packages.sh: `make test-packages`, the proof that the packages
# install, work, upgrade and go away cleanly (issue 13). As root.
#
# 1. builds the Debian packages twice, at the Makefile's VERSION and at a
#    higher one (VERSION+pkgtest1), and the RPM (make deb, make rpm);
# 2. checks them statically: contents, conffiles, dependencies, lintian
#    errors; the RPM's file list, requires and rpmlint errors; the packaging's
#    build dependencies against tools/deps.sh;
# 3. in a fresh Debian 12 root (mmdebstrap, cached in $SVC_PKG_CACHE, default
#    /var/cache/mod_svc-test) with apache2 running on a free port and
#    PostgreSQL: installs the packages with apt-get, runs the three commands
#    the postinst prints (and README.Debian lists), a2enmod svc, configtest,
#    reload, and calls /internal/health and GET /api/me with a token made by
#    svcctl; installs svc-agent and runs one deployment with it (a target
#    registered, the agent started from its configuration file as its user,
#    a run's artifact planned, approved, answering on its port, torn down),
#    then purges it; upgrades to the higher version (the secret and a changed conffile
#    survive, the old token still works); removes (module disabled, config
#    kept); purges (config gone, database untouched).
#
# Every step is a checked assertion; the first one that fails stops the run
# with its name and the log that explains it. Services in the root are
# started without systemd, as their own users, and stopped, and the root's
# mounts undone, whatever happens.
#
# Knobs: SVC_PKG_CACHE (cache directory), SVC_PKG_ROOT_MAXAGE (days before
# the cached root is rebuilt, default 30), SVC_PKG_KEEP=1 (keep the root and
# logs for a post-mortem; services are stopped anyway).
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SUITE=bookworm
CACHE=${SVC_PKG_CACHE:-/var/cache/mod_svc-test}
MAXAGE=${SVC_PKG_ROOT_MAXAGE:-30}
# What the sysadmin's machine already runs; everything else the packages need
# comes from the archive at install time. (Changing this list rebuilds the
# cached root.)
ROOT_INCLUDE=apache2,postgresql
EMAIL=you@example.com

T0=$SECONDS
CURRENT=setup
CHECKS=0
declare -a TIMES=()

say()  { printf '\n=== %s\n' "$*"; }
step() { CURRENT=$1; say "$1"; }
ok()   { CHECKS=$((CHECKS + 1)); printf '  ok   %s\n' "$1"; }
# fail WHY [LOG]: stop here, saying which step and why, with the log's tail.
fail() {
    printf '\ntest-packages: FAIL in step "%s": %s\n' "$CURRENT" "$1" >&2
    if [ -n "${2:-}" ] && [ -f "$2" ]; then
        printf -- '--- last lines of %s:\n' "$2" >&2
        tail -n 40 "$2" | sed 's/^/    /' >&2
    fi
    exit 1
}
timed() { TIMES+=("$(printf '%-34s %4ds' "$1" "$2")"); }

[ "$(id -u)" = 0 ] || {
    echo "test-packages: must run as root: it builds a Debian root with mmdebstrap, chroots" \
         "into it and mounts /proc there (CI runs it as root; locally: sudo make test-packages)" >&2
    exit 1
}
export LC_ALL=C.UTF-8

OUT=$TOP/build/pkgtest
LOGS=$OUT/logs
rm -rf "$OUT"
mkdir -p "$LOGS"

# ---------------------------------------------------------------------------
step "tools"
# ---------------------------------------------------------------------------
"$TOP/tools/deps.sh" --group build --group pkg >"$LOGS/deps.log" 2>&1 \
    || fail "tools/deps.sh --group build --group pkg could not install the tools" "$LOGS/deps.log"
ok "build and packaging tools present ($(tail -n 1 "$LOGS/deps.log"))"

V1=$(make -s --no-print-directory -C "$TOP" print-version)
# A rebuilt package with a higher version, as an upgrade brings: '+' sorts
# after the end of the version for dpkg and rpm alike.
V2=$V1+pkgtest1
[ -n "$V1" ] || fail "make print-version printed nothing"
dpkg --compare-versions "$V2" gt "$V1" || fail "$V2 is not higher than $V1"
ok "versions: $V1, then $V2"

# ---------------------------------------------------------------------------
step "build: make deb (twice), make rpm"
# ---------------------------------------------------------------------------
build() {  # build NAME LOG make-args...
    local name=$1 log=$2 t=$SECONDS
    shift 2
    make -C "$TOP" --no-print-directory "$@" >"$log" 2>&1 || fail "make $* failed" "$log"
    timed "$name" $((SECONDS - t))
    ok "make $* ($((SECONDS - t)) s)"
}
build "make deb ($V1)" "$LOGS/make-deb-v1.log" deb PKG_OUT="$OUT/v1"
build "make deb ($V2)" "$LOGS/make-deb-v2.log" deb VERSION="$V2" PKG_OUT="$OUT/v2"
build "make rpm ($V1)" "$LOGS/make-rpm.log" rpm PKG_OUT="$OUT"

DEB_MOD1=$OUT/v1/deb/libapache2-mod-svc_${V1}-1_amd64.deb
DEB_TOOLS1=$OUT/v1/deb/svc-tools_${V1}-1_amd64.deb
DEB_MOD2=$OUT/v2/deb/libapache2-mod-svc_${V2}-1_amd64.deb
DEB_TOOLS2=$OUT/v2/deb/svc-tools_${V2}-1_amd64.deb
RPM1=$OUT/rpm/mod_svc-${V1}-1.x86_64.rpm
DEB_AGENT1=$OUT/v1/deb/svc-agent_${V1}-1_amd64.deb
RPM_AGENT1=$OUT/rpm/svc-agent-${V1}-1.x86_64.rpm
for f in "$DEB_MOD1" "$DEB_TOOLS1" "$DEB_MOD2" "$DEB_TOOLS2" "$RPM1" "$DEB_AGENT1" "$RPM_AGENT1"; do
    [ -f "$f" ] || fail "expected package $f was not built"
done
ok "packages built: $(cd "$OUT" && ls v1/deb/*.deb v2/deb/*.deb rpm/*.rpm | grep -v dbgsym | tr '\n' ' ')"

# ---------------------------------------------------------------------------
step "Debian packages: contents, conffiles, dependencies, lintian"
# ---------------------------------------------------------------------------
contents=$(dpkg-deb -c "$DEB_MOD1" | awk '{print $6}' | sed 's|^\./|/|')
for p in /usr/lib/apache2/modules/mod_svc.so /etc/apache2/mods-available/svc.load \
         /etc/apache2/mods-available/svc.conf /usr/libexec/mod_svc/svc-factory \
         /lib/systemd/system/apache2.service.d/mod-svc.conf; do
    grep -qxF "$p" <<<"$contents" || fail "libapache2-mod-svc lacks $p"
done
# dh_compress compresses documents over 4 KiB (Policy 12.3).
grep -qxE '/usr/share/doc/libapache2-mod-svc/README\.Debian(\.gz)?' <<<"$contents" \
    || fail "libapache2-mod-svc lacks README.Debian"
ok "libapache2-mod-svc holds the module, svc.load, svc.conf, README.Debian and the factory"
# The assets in a directory named by their content's hash (tools/install-ui.sh).
for p in /usr/share/mod_svc/ui/index.html '/usr/share/mod_svc/ui/[0-9a-f]{16}/app\.css' \
         '/usr/share/mod_svc/ui/[0-9a-f]{16}/js/app\.js'; do
    grep -qxE "$p" <<<"$contents" || fail "libapache2-mod-svc lacks the web UI's $p"
done
ok "libapache2-mod-svc holds the web UI under /usr/share/mod_svc/ui, its assets under a hash"
# (Listings go to variables first: grep -q would close the pipe early.)
tools_contents=$(dpkg-deb -c "$DEB_TOOLS1")
grep -q ' \./usr/sbin/svcctl$' <<<"$tools_contents" || fail "svc-tools lacks /usr/sbin/svcctl"
grep -q ' \./usr/share/man/man8/svcctl\.8\.gz$' <<<"$tools_contents" \
    || fail "svc-tools lacks the svcctl(8) manual page"
ok "svc-tools holds /usr/sbin/svcctl and svcctl(8)"
agent_contents=$(dpkg-deb -c "$DEB_AGENT1" | awk '{print $6}' | sed 's|^\./|/|')
for p in /usr/bin/svc-agent /lib/systemd/system/svc-agent.service \
         /usr/share/svc-agent/agent.conf.example /usr/share/man/man8/svc-agent.8.gz; do
    grep -qxF "$p" <<<"$agent_contents" || fail "svc-agent lacks $p"
done
agent_deps=$(dpkg-deb -f "$DEB_AGENT1" Depends)
for d in bubblewrap git adduser libcurl4 libjansson4; do
    grep -qE "(^|, )$d( |,|$)" <<<"$agent_deps" || fail "svc-agent does not depend on $d: $agent_deps"
done
ok "svc-agent holds /usr/bin/svc-agent, its unit, svc-agent(8), and depends on bubblewrap, git, libcurl, jansson"
conff=$(dpkg-deb --ctrl-tarfile "$DEB_MOD1" | tar -xOf - ./conffiles)
[ "$(sort <<<"$conff")" = "$(printf '/etc/apache2/mods-available/svc.conf\n/etc/apache2/mods-available/svc.load')" ] \
    || fail "conffiles are not exactly svc.conf and svc.load: $conff"
ok "conffiles: svc.conf and svc.load"
load=$(dpkg-deb --fsys-tarfile "$DEB_MOD1" | tar -xOf - ./etc/apache2/mods-available/svc.load)
grep -qx '# Depends: dbd alias headers mime' <<<"$load" || fail "svc.load does not make a2enmod enable mod_dbd, mod_alias, mod_headers and mod_mime"
ok "svc.load declares '# Depends: dbd alias headers mime' for a2enmod"
svcconf=$(dpkg-deb --fsys-tarfile "$DEB_MOD1" | tar -xOf - ./etc/apache2/mods-available/svc.conf)
grep -qxF 'LogFormat "%h %l %u %t \"%r\" %>s %b \"%{User-agent}i\" %{svc-route}n %{svc-user}n %{svc-org}n %{X-Request-Id}o" svc' <<<"$svcconf" \
    && grep -qxF 'GlobalLog ${APACHE_LOG_DIR}/svc_access.log svc env=SVC_REQUEST_ID' <<<"$svcconf" \
    || fail "svc.conf does not ship the access log with request ids on"
ok "svc.conf logs each answer's X-Request-Id to \${APACHE_LOG_DIR}/svc_access.log"
deps=$(dpkg-deb -f "$DEB_MOD1" Depends)
for d in apache2-api-20120211 apache2 libaprutil1-dbd-pgsql libjansson4 libsodium23 libpq5 \
         libcurl4 libssl3 bubblewrap git "svc-tools (= ${V1}-1)"; do
    grep -qE "(^|, )$(sed 's/[().+]/\\&/g' <<<"$d")( \(|,|$)" <<<"$deps" \
        || fail "libapache2-mod-svc does not depend on '$d' (Depends: $deps)"
done
ok "Depends: apache2-api-20120211, apache2, bubblewrap, git, libaprutil1-dbd-pgsql, the shlibs, svc-tools (= ${V1}-1)"
for r in "$OUT/v1/deb/lintian_${V1}-1.txt" "$OUT/v2/deb/lintian_${V2}-1.txt"; do
    [ -s "$r" ] || fail "no lintian report $r"
    ! grep -q '^E: ' "$r" || fail "lintian errors in $r: $(grep '^E: ' "$r" | tr '\n' ' ')"
done
ok "lintian: no errors; warnings kept (docs/decisions.md):"
grep -E '^[WI]: ' "$OUT/v1/deb/lintian_${V1}-1.txt" | sed 's/^/         /' || true

# The packaging's build dependencies are tools/deps.sh's (the one list).
want=$("$TOP/tools/deps.sh" --print deb build | grep -vxE 'gcc|make|libc6-dev' | sort -u)
have=$(sed -n '/^Build-Depends:/,/^[A-Z]/p' "$TOP/packaging/deb/control" | sed '$d' \
       | sed 's/^Build-Depends://' | tr ',' '\n' | sed 's/[[:space:]]//g; s/(.*//' \
       | grep -v '^debhelper-compat$' | grep -v '^$' | sort -u)
[ "$want" = "$have" ] || fail "debian/control Build-Depends differ from tools/deps.sh deb build
  deps.sh (without build-essential): $(echo $want)
  control:                           $(echo $have)"
ok "Build-Depends = tools/deps.sh --print deb build (less build-essential)"

# ---------------------------------------------------------------------------
step "RPM: file list, requires, scriptlet, rpmlint"
# ---------------------------------------------------------------------------
files=$(rpm -qlp "$RPM1")
for p in /usr/lib64/httpd/modules/mod_svc.so /etc/httpd/conf.modules.d/10-svc.conf \
         /etc/httpd/conf.d/svc.conf /usr/sbin/svcctl /etc/mod_svc /usr/libexec/mod_svc/svc-factory \
         /usr/lib/systemd/system/httpd.service.d/mod_svc.conf; do
    grep -qxF "$p" <<<"$files" || fail "the RPM lacks $p; it has: $(echo $files)"
done
grep -qE '^/usr/share/man/man8/svcctl\.8' <<<"$files" || fail "the RPM lacks svcctl(8)"
ok "files: %{_httpd_moddir}/mod_svc.so, conf.modules.d/10-svc.conf, conf.d/svc.conf, %{_sbindir}/svcctl, svcctl(8), /etc/mod_svc, %{_libexecdir}/mod_svc/svc-factory"
for p in /usr/share/mod_svc/ui/index.html '/usr/share/mod_svc/ui/[0-9a-f]{16}/js/app\.js'; do
    grep -qxE "$p" <<<"$files" || fail "the RPM lacks the web UI's $p"
done
ok "the RPM holds the web UI under /usr/share/mod_svc/ui"
# marked and DOMPurify, which Fedora and RHEL do not package: in the RPM, at
# the versions packaging/rpm/vendor's lockfile pins, where its svc.conf's
# /ui/vendor/ aliases point, with their licences.
for p in /usr/share/mod_svc/ui/vendor/marked.js /usr/share/mod_svc/ui/vendor/purify.js; do
    grep -qxF "$p" <<<"$files" || fail "the RPM lacks $p (marked and DOMPurify)"
done
# %license's directory: /usr/share/licenses/NAME (Fedora) or NAME-VERSION.
licdir=$(grep -E '^/usr/share/licenses/mod_svc(-[^/]*)?/LICENSE\.marked\.md$' <<<"$files" | xargs -r dirname)
[ -n "$licdir" ] && grep -qxF "$licdir/LICENSE.dompurify" <<<"$files" \
    || fail "the RPM lacks the licences of marked and DOMPurify (%license)"
rpmfile() { (cd "$OUT" && rpm2cpio "$RPM1" | cpio -i --quiet --to-stdout ".$1"); }
lock=$TOP/packaging/rpm/vendor/package-lock.json
for lib in marked dompurify; do
    v=$(perl -MJSON::PP -0e 'print JSON::PP->new->decode(<STDIN>)->{packages}{"node_modules/'$lib'"}{version}' <"$lock")
    case $lib in marked) f=marked.js; re="marked v$v " ;; *) f=purify.js; re="DOMPurify $v " ;; esac
    # Whole into a variable first: head closing the pipe early would make
    # cpio die of SIGPIPE, which pipefail reports as a failure.
    got=$(rpmfile "/usr/share/mod_svc/ui/vendor/$f")
    grep -qF "$re" <<<"${got:0:200}" \
        || fail "the RPM's $f is not $lib $v (packaging/rpm/vendor/package-lock.json)"
done
grep -qF 'under the MIT license' <<<"$(rpmfile "$licdir/LICENSE.marked.md")" \
    && grep -qF 'Apache License' <<<"$(rpmfile "$licdir/LICENSE.dompurify")" \
    || fail "the RPM's licences of marked and DOMPurify are not theirs"
rpmconf=$(rpmfile /etc/httpd/conf.d/svc.conf)
grep -qxF 'Alias /ui/vendor/marked.js "/usr/share/mod_svc/ui/vendor/marked.js"' <<<"$rpmconf" \
    && grep -qxF 'Alias /ui/vendor/purify.js "/usr/share/mod_svc/ui/vendor/purify.js"' <<<"$rpmconf" \
    || fail "the RPM's svc.conf does not alias /ui/vendor/ to the files it ships"
ok "the RPM ships marked and DOMPurify (the lockfile's versions) where its svc.conf aliases /ui/vendor/, their licences in $licdir"
[ "$(rpm -qp --configfiles "$RPM1" | sort)" = \
  "$(printf '/etc/httpd/conf.d/svc.conf\n/etc/httpd/conf.modules.d/10-svc.conf')" ] \
    || fail "the RPM's config files are not the two .conf files"
ok "config files: 10-svc.conf and svc.conf (noreplace)"
flags=$(rpm -qp --qf '[%{FILEFLAGS:fflags} %{FILENAMES}\n]' "$RPM1")
grep -qx 'cn /etc/httpd/conf.d/svc.conf' <<<"$flags" && grep -qx 'cn /etc/httpd/conf.modules.d/10-svc.conf' <<<"$flags" \
    || fail "the .conf files are not %config(noreplace): $flags"
ok "both are %config(noreplace)"
svcconf=$(cd "$OUT" && rpm2cpio "$RPM1" | cpio -i --quiet --to-stdout ./etc/httpd/conf.d/svc.conf)
grep -qxF 'LogFormat "%h %l %u %t \"%r\" %>s %b \"%{User-agent}i\" %{svc-route}n %{svc-user}n %{svc-org}n %{X-Request-Id}o" svc' <<<"$svcconf" \
    && grep -qxF 'GlobalLog logs/svc_access_log svc env=SVC_REQUEST_ID' <<<"$svcconf" \
    || fail "the RPM's svc.conf does not ship the access log with request ids on (logs/svc_access_log)"
ok "svc.conf logs each answer's X-Request-Id to logs/svc_access_log"
reqs=$(rpm -qp --requires "$RPM1")
mmn=$(sed -n 's/^#define MODULE_MAGIC_NUMBER_MAJOR \([0-9]*\).*/\1/p' "$(apxs -q INCLUDEDIR)/ap_mmn.h")
for r in "httpd-mmn = ${mmn}x8664" apr-util-pgsql httpd-filesystem 'libpq.so.5()(64bit)' \
         'libjansson.so.4()(64bit)' 'libsodium.so.23()(64bit)' 'libcurl.so.4()(64bit)' \
         'libssl.so.3()(64bit)' 'libaprutil-1.so.0()(64bit)'; do
    grep -qxF "$r" <<<"$reqs" || fail "the RPM does not require '$r'; it requires: $(echo $reqs)"
done
ok "requires: httpd-mmn = ${mmn}x8664, apr-util-pgsql, httpd-filesystem, libpq, jansson, libsodium, libcurl, OpenSSL, apr-util"
[ "$(rpm -qp --qf '%{VERSION}' "$RPM1")" = "$V1" ] || fail "the RPM's version is not $V1"
ok "version $V1 (the Makefile's)"
afiles=$(rpm -qlp "$RPM_AGENT1")
for p in /usr/bin/svc-agent /usr/lib/systemd/system/svc-agent.service /etc/svc-agent/agent.conf \
         /var/lib/svc-agent /var/lib/svc-agent-separated; do
    grep -qxF "$p" <<<"$afiles" || fail "the svc-agent RPM lacks $p; it has: $(echo $afiles)"
done
aflags=$(rpm -qp --qf '[%{FILEFLAGS:fflags} %{FILEMODES:perms} %{FILEUSERNAME} %{FILENAMES}\n]' "$RPM_AGENT1")
grep -qx 'cn -rw------- svc-agent /etc/svc-agent/agent.conf' <<<"$aflags" \
    || fail "agent.conf is not %config(noreplace), 0600, svc-agent's: $(grep agent.conf <<<"$aflags")"
areqs=$(rpm -qp --requires "$RPM_AGENT1")
for r in bubblewrap git-core 'libcurl.so.4()(64bit)' 'libjansson.so.4()(64bit)'; do
    grep -qxF "$r" <<<"$areqs" || fail "the svc-agent RPM does not require '$r'"
done
ok "subpackage svc-agent: the agent, its unit, agent.conf (noreplace, 0600, the agent's), its directories; requires bubblewrap, git-core, libcurl, jansson"
scripts=$(rpm -qp --scripts "$RPM1")
for s in 'chown root:apache' 'chmod 0640' 'setsebool -P httpd_can_network_connect_db 1' \
         'setsebool -P httpd_can_network_connect 1' 'svcctl --db dbname=svc migrate'; do
    grep -qF -- "$s" <<<"$scripts" || fail "%post does not contain '$s'"
done
ok "%post creates the secret root:apache 0640 and names the SELinux booleans"
report=$OUT/rpm/rpmlint_${V1}-1.txt
[ -s "$report" ] || fail "no rpmlint report $report"
grep -qE ' 0 errors, [0-9]+ warnings' "$report" || fail "rpmlint reports errors" "$report"
ok "rpmlint: 0 errors; warnings kept (docs/decisions.md):"
grep -E ': W: ' "$report" | sed 's/^/         /' || true
want=$("$TOP/tools/deps.sh" --print rpm build | grep -vxE 'libasan|libubsan' \
       | sed 's/^perl$/perl-interpreter/' | sort -u)
have=$(sed -n 's/^BuildRequires:[[:space:]]*//p' "$TOP/packaging/rpm/mod_svc.spec" | tr ', ' '\n\n' \
       | grep -v '^$' | sort -u)
[ "$want" = "$have" ] || fail "the spec's BuildRequires differ from tools/deps.sh rpm build
  deps.sh (without the sanitizer runtimes, perl as perl-interpreter): $(echo $want)
  spec:                                                              $(echo $have)"
ok "BuildRequires = tools/deps.sh --print rpm build (less the SANITIZE=1 runtimes)"

# ---------------------------------------------------------------------------
step "the Debian $SUITE root (cached in $CACHE)"
# ---------------------------------------------------------------------------
mkdir -p "$CACHE/archives/partial"
# One run at a time on this machine: the root cache and apt's archive cache
# are shared.
exec 9>"$CACHE/lock"
if ! flock -n 9; then
    echo "  waiting for another make test-packages on this machine..."
    flock -w 3600 9 || fail "another make test-packages held $CACHE/lock for an hour"
fi

# The host's Debian sources, as apt on the host sees them (whichever files
# configure them), for this suite: the root fetches from the same archive.
host_sources() {
    apt-cache policy | awk -v suite="$SUITE" '
        $1 ~ /^[0-9]+$/ && $2 ~ /^[a-z+]+:\/\// && $NF == "Packages" {
            uri = $2; n = split($3, a, "/"); dist = a[1]; comp = substr($3, length(dist) + 2)
            want = (dist == suite || index(dist, suite "-") == 1) && comp != ""
            next
        }
        want && /release / && /o=Debian/ { print uri, dist, comp; want = 0 }
    ' | awk '{ k = $1 " " $2; if (!(k in c)) { order[++n] = k; c[k] = $3 } else if (index(" " c[k] " ", " " $3 " ") == 0) c[k] = c[k] " " $3 }
             END { for (i = 1; i <= n; i++) print "deb " order[i] " " c[order[i]] }'
}
SOURCES=$(host_sources)
[ -n "$SOURCES" ] || fail "apt on this machine has no Debian $SUITE source (apt-cache policy); the root \
is built from the host's own sources"
# The host's apt settings that decide whether that archive can be reached.
APTOPTS=()
for key in Acquire::http::Proxy Acquire::https::Proxy Acquire::Check-Valid-Until Acquire::Check-Date; do
    val=
    eval "$(apt-config shell val "$key")"
    if [ -n "$val" ]; then APTOPTS+=(--aptopt="$key \"$val\";"); fi
done
key=$(printf '%s\n' "format 1" "$SUITE" minbase "$ROOT_INCLUDE" "$SOURCES" "${APTOPTS[@]+"${APTOPTS[@]}"}" \
      | sha256sum | cut -c1-16)
TARBALL=$CACHE/root-$SUITE-$key.tar
if [ -f "$TARBALL" ] && [ -n "$(find "$TARBALL" -mtime "+$MAXAGE")" ]; then
    echo "  the cached root is older than $MAXAGE days: rebuilding it"
    rm -f "$TARBALL"
fi
if [ -f "$TARBALL" ]; then
    ok "cached root $TARBALL"
    timed "root (cached)" 0
else
    t=$SECONDS
    printf '%s\n' "$SOURCES" >"$LOGS/root-sources.list"
    sed 's/^/  source: /' "$LOGS/root-sources.list"
    echo "  building it with mmdebstrap (a few minutes; later runs reuse it)"
    rm -f "$CACHE"/root-"$SUITE"-*.tar "$CACHE"/root-*.tar.tmp
    mmdebstrap --variant=minbase --include="$ROOT_INCLUDE" --format=tar \
        --skip=cleanup/apt/lists "${APTOPTS[@]+"${APTOPTS[@]}"}" \
        "$SUITE" "$TARBALL.tmp" "$LOGS/root-sources.list" >"$LOGS/mmdebstrap.log" 2>&1 \
        || { rm -f "$TARBALL.tmp"; fail "mmdebstrap failed" "$LOGS/mmdebstrap.log"; }
    mv "$TARBALL.tmp" "$TARBALL"
    timed "root (mmdebstrap, cold)" $((SECONDS - t))
    ok "built $TARBALL in $((SECONDS - t)) s"
fi

# --- the root of this run, and everything that must be undone ---------------
t=$SECONDS
ROOT=$(mktemp -d /var/tmp/mod_svc-pkgtest.XXXXXX)
MOUNTS=()
# root_pids: the processes whose root directory is this root.
root_pids() {
    local d
    for d in /proc/[0-9]*; do
        [ "$(readlink "$d/root" 2>/dev/null)" = "$ROOT" ] && printf '%s ' "${d#/proc/}"
    done
    return 0
}
# in_root CMD...: run a command in the root, with a clean environment.
in_root() {
    chroot "$ROOT" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}
mount_in_root() {  # mount_in_root TARGET mount-args...
    local target=$ROOT${1:+/$1}
    shift
    mkdir -p "$target"
    mount "$@" "$target" || fail "cannot mount $* on $target"
    MOUNTS+=("$target")
}

cleanup() {
    local rc=$? pid m i t=$SECONDS
    set +e
    trap - EXIT INT TERM
    if [ -n "${ROOT:-}" ] && [ -d "$ROOT" ]; then
        # The services first, as they would be stopped...
        if [ -x "$ROOT/usr/sbin/apache2ctl" ] && [ -s "$ROOT/run/apache2/apache2.pid" ]; then
            in_root apache2ctl stop >/dev/null 2>&1
        fi
        if [ -n "${PGV:-}" ]; then
            in_root pg_ctlcluster "$PGV" main stop -m fast >/dev/null 2>&1
        fi
        # ...then whatever still runs inside this root (by pid, nothing else).
        for i in 1 2 3 4 5 6 7 8 9 10; do
            pids=$(root_pids)
            [ -n "$pids" ] || break
            if [ "$i" -lt 8 ]; then kill -TERM $pids 2>/dev/null; else kill -KILL $pids 2>/dev/null; fi
            sleep 0.5
        done
        pids=$(root_pids)
        [ -z "$pids" ] || echo "test-packages: processes still running in $ROOT: $pids" >&2
        for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
            m=${MOUNTS[i]}
            umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null \
                || echo "test-packages: could not unmount $m" >&2
        done
        if awk -v r="$ROOT" '$5 == r || index($5, r "/") == 1 { found = 1 } END { exit !found }' \
                /proc/self/mountinfo; then
            echo "test-packages: something is still mounted on or under $ROOT; leaving it" >&2
        elif [ -n "${SVC_PKG_KEEP:-}" ]; then
            # (Kept roots are unpacked on disk, not in memory.)
            echo "test-packages: kept the root $ROOT (SVC_PKG_KEEP)"
        else
            rm -rf --one-file-system "$ROOT"
        fi
        echo "test-packages: cleaned up: services stopped, mounts undone, root removed ($((SECONDS - t)) s)"
    fi
    [ $rc = 0 ] || echo "test-packages: logs in ${LOGS#"$TOP"/}/" >&2
    exit $rc
}
trap cleanup EXIT
trap 'echo "test-packages: interrupted in step \"$CURRENT\"; cleaning up" >&2; exit 130' INT
trap 'echo "test-packages: terminated in step \"$CURRENT\"; cleaning up" >&2; exit 143' TERM

# In memory when there is room: unpacking is faster, and unmounting it frees
# the whole root at once (removing 600 MB of files can take half a minute on
# a busy disk).
avail_kb=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
if [ -z "${SVC_PKG_KEEP:-}" ] && [ "${avail_kb:-0}" -gt $((4 * 1024 * 1024)) ]; then
    mount_in_root "" -t tmpfs -o size=3g,mode=755 tmpfs
    where="in memory (tmpfs)"
else
    where="on disk"
fi
tar -C "$ROOT" -xf "$TARBALL" || fail "cannot unpack $TARBALL into $ROOT"
# mktemp made it 0700: inside the chroot that is "/", which postgres and
# www-data must be able to traverse.
chmod 755 "$ROOT"
mount_in_root proc -t proc proc
mount_in_root dev/shm -t tmpfs -o mode=1777,size=256m tmpfs
# For apt's terminal log only: not fatal if this kernel refuses.
mkdir -p "$ROOT/dev/pts"
if mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts "$ROOT/dev/pts" 2>/dev/null; then
    MOUNTS+=("$ROOT/dev/pts")
fi
mount_in_root var/cache/apt/archives --bind "$CACHE/archives"
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
# As in container images: installing a package must not start its service
# (nothing here runs systemd, and init scripts would take port 80).
printf '#!/bin/sh\nexit 101\n' >"$ROOT/usr/sbin/policy-rc.d"
chmod 755 "$ROOT/usr/sbin/policy-rc.d"
ok "fresh root in $ROOT, $where (proc and dev/shm mounted; invoke-rc.d denied)"

if in_root apt-get update -q >"$LOGS/apt-update.log" 2>&1; then
    ok "apt-get update in the root"
else
    echo "  apt-get update failed in the root; going on with the cached package lists"
fi

# A free port below 8529 (not 80, not 8080): bind it to be sure.
PORT=
for p in $(shuf -i 8300-8528); do
    [ "$p" != 8080 ] || continue
    if perl -MIO::Socket::INET -e 'exit(IO::Socket::INET->new(Listen => 1, ReuseAddr => 1,
            LocalAddr => "127.0.0.1", LocalPort => $ARGV[0]) ? 0 : 1)' "$p"; then
        PORT=$p
        break
    fi
done
[ -n "$PORT" ] || fail "no free port in 8300-8528"

# The machine as the sysadmin has it: PostgreSQL and apache2 running.
PGV=$(ls "$ROOT/etc/postgresql" | sort -V | tail -n 1)
[ -n "$PGV" ] || fail "no PostgreSQL cluster in the root"
# The root shares this machine's network: Unix socket only, no TCP port.
in_root pg_conftool "$PGV" main set listen_addresses '' >/dev/null \
    || fail "pg_conftool could not set listen_addresses"
in_root pg_ctlcluster "$PGV" main start >"$LOGS/pg-start.log" 2>&1 \
    || fail "PostgreSQL $PGV did not start in the root" "$LOGS/pg-start.log"
ok "PostgreSQL $PGV started (pg_ctlcluster, as user postgres, Unix socket only)"

printf 'Listen 127.0.0.1:%s\n' "$PORT" >"$ROOT/etc/apache2/ports.conf"
printf 'ServerName localhost\n' >"$ROOT/etc/apache2/conf-available/servername.conf"
in_root a2enconf -q servername >/dev/null || fail "a2enconf servername failed"
in_root apache2ctl configtest >"$LOGS/configtest-0.log" 2>&1 \
    || fail "apache2ctl configtest failed before our package was installed" "$LOGS/configtest-0.log"
# apache2ctl start would hand over to systemctl if PID 1 were systemd; start
# httpd itself with Debian's environment, as apache2ctl does otherwise.
in_root sh -c '. /etc/apache2/envvars && exec /usr/sbin/apache2 -k start' >"$LOGS/apache-start.log" 2>&1 \
    || fail "apache2 did not start in the root" "$LOGS/apache-start.log"

# http PATH [curl args]: sets CODE, BODY and HEADERS.
http() {
    local path=$1
    shift
    CODE=$(curl -sS -o "$LOGS/body" -D "$LOGS/headers" -w '%{http_code}' --max-time 10 "$@" \
           "http://127.0.0.1:$PORT$path" 2>"$LOGS/curl.err") || CODE=000
    BODY=$(cat "$LOGS/body" 2>/dev/null || true)
    HEADERS=$(tr -d '\r' <"$LOGS/headers" 2>/dev/null || true)
}
# wait_code PATH CODE [curl args]: poll until PATH answers CODE (20 s).
wait_code() {
    local path=$1 want=$2 i
    shift 2
    for i in $(seq 100); do
        http "$path" "$@"
        [ "$CODE" = "$want" ] && return 0
        sleep 0.2
    done
    return 1
}
# json FIELD: a top-level field of BODY.
json() {
    perl -MJSON::PP -e 'my $d = eval { decode_json($ARGV[1]) } or exit 1;
        my $v = $d->{$ARGV[0]}; print ref($v) ? encode_json($v) : $v // ""' "$1" "$BODY"
}
wait_code / 404 || wait_code / 200 || wait_code / 403 \
    || fail "apache2 does not answer on 127.0.0.1:$PORT (status $CODE)" "$ROOT/var/log/apache2/error.log"
ok "apache2 answers on 127.0.0.1:$PORT (started with apache2 -k start, envvars sourced)"
timed "root ready (unpack, services)" $((SECONDS - t))

# ---------------------------------------------------------------------------
step "install $V1 with apt"
# ---------------------------------------------------------------------------
t=$SECONDS
mkdir -p "$ROOT/tmp/pkgs/v1" "$ROOT/tmp/pkgs/v2"
cp "$DEB_MOD1" "$DEB_TOOLS1" "$ROOT/tmp/pkgs/v1/"
cp "$DEB_MOD2" "$DEB_TOOLS2" "$ROOT/tmp/pkgs/v2/"
chmod -R a+rX "$ROOT/tmp/pkgs"
installed() { in_root dpkg-query -W -f='${Status} ${Version}' "$1" 2>/dev/null || true; }
# Dependencies the root does not have yet: apt must fetch them.
for d in libaprutil1-dbd-pgsql libsodium23; do
    case $(installed "$d") in "install ok installed"*) fail "$d is already in the root: \
the test would not show apt resolving it" ;; esac
done
in_root apt-get install -y -q "/tmp/pkgs/v1/${DEB_MOD1##*/}" "/tmp/pkgs/v1/${DEB_TOOLS1##*/}" \
    </dev/null >"$LOGS/install-v1.log" 2>&1 || fail "apt-get install of $V1 failed" "$LOGS/install-v1.log"
for p in libapache2-mod-svc svc-tools; do
    [ "$(installed $p)" = "install ok installed ${V1}-1" ] || fail "$p is not installed at ${V1}-1: $(installed $p)"
done
ok "apt-get install ./libapache2-mod-svc_${V1}-1 ./svc-tools_${V1}-1"
for d in libaprutil1-dbd-pgsql libsodium23; do
    case $(installed "$d") in "install ok installed"*) ;; *) fail "$d was not installed" ;; esac
done
ok "apt resolved libaprutil1-dbd-pgsql and libsodium23 from the archive"
timed "install $V1" $((SECONDS - t))

sec=$ROOT/etc/mod_svc/secret.key
[ -f "$sec" ] || fail "the postinst did not create /etc/mod_svc/secret.key"
[ "$(stat -c '%U:%G %a' "$sec")" = "root:www-data 640" ] \
    || fail "secret.key is $(stat -c '%U:%G %a' "$sec"), not root:www-data 640"
grep -qxE '[0-9a-f]{64}' "$sec" || fail "secret.key is not 32 random bytes in hex"
ok "secret.key created: root:www-data 0640, 64 hex characters"
SECRET_SUM=$(sha256sum <"$sec")
conffiles=$(in_root dpkg-query -W -f='${Conffiles}' libapache2-mod-svc)
for c in /etc/apache2/mods-available/svc.conf /etc/apache2/mods-available/svc.load; do
    grep -qF " $c " <<<"$conffiles" || fail "$c is not a conffile of the installed package"
done
ok "svc.conf and svc.load are conffiles"
! in_root a2query -q -m svc || fail "the module is enabled at install; it should wait for a2enmod svc"
ok "the module is installed, not enabled"
[ "$(in_root svcctl --version)" = "svcctl $V1" ] || fail "svcctl --version says '$(in_root svcctl --version)'"
ok "svcctl --version: svcctl $V1"
# (apt runs dpkg on a terminal: its lines end in CR LF.)
mapfile -t STEPS < <(tr -d '\r' <"$LOGS/install-v1.log" | grep -E '^    runuser ' | sed 's/^    //')
[ ${#STEPS[@]} = 3 ] || fail "the postinst printed ${#STEPS[@]} commands, not 3" "$LOGS/install-v1.log"
grep -qF 'a2enmod svc && systemctl reload apache2' "$LOGS/install-v1.log" \
    || fail "the postinst does not say how to enable the module" "$LOGS/install-v1.log"
ok "the postinst printed the three commands and 'a2enmod svc && systemctl reload apache2'"
readme=$(zcat -f "$ROOT"/usr/share/doc/libapache2-mod-svc/README.Debian*)
for c in "${STEPS[@]}"; do
    grep -qF "    $c" <<<"$readme" || fail "README.Debian does not list the postinst's command: $c"
    grep -qF "    $c" "$TOP/README" || fail "README does not list the postinst's command: $c"
done
ok "README.Debian and README list the same three commands"

# ---------------------------------------------------------------------------
step "the documented steps, a2enmod svc, configtest, reload"
# ---------------------------------------------------------------------------
for i in 0 1 2; do
    c=${STEPS[i]}
    in_root sh -c "$c" </dev/null >"$LOGS/step-$((i + 1)).log" 2>&1 \
        || fail "documented command $((i + 1)) failed: $c" "$LOGS/step-$((i + 1)).log"
    ok "$c"
done
psql_root() { in_root runuser -u postgres -- psql -X -q -d svc -tAc "$1"; }
[ "$(psql_root "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = 'svc'")" = www-data ] \
    || fail "database svc is not owned by www-data"
[ "$(psql_root "SELECT count(*) FROM users WHERE email = '$EMAIL'")" = 1 ] || fail "no user $EMAIL"
SCHEMA=$(psql_root "SELECT max(version) FROM schema_migrations")
in_root runuser -u www-data -- svcctl --db dbname=svc schema-version >"$LOGS/schema-version.log" 2>&1 \
    || fail "svcctl schema-version: the schema is not current" "$LOGS/schema-version.log"
ok "database svc (owner www-data), schema version $SCHEMA (current), user $EMAIL"

in_root a2enmod svc >"$LOGS/a2enmod.log" 2>&1 || fail "a2enmod svc failed" "$LOGS/a2enmod.log"
in_root a2query -q -m svc || fail "a2query: svc is not enabled after a2enmod"
in_root a2query -q -m dbd || fail "a2enmod svc did not enable dbd"
ok "a2enmod svc (enabled dbd with it)"
in_root apache2ctl configtest >"$LOGS/configtest-1.log" 2>&1 \
    || fail "apache2ctl configtest failed with the module" "$LOGS/configtest-1.log"
grep -q 'Syntax OK' "$LOGS/configtest-1.log" || fail "configtest did not say Syntax OK" "$LOGS/configtest-1.log"
ok "apache2ctl configtest: Syntax OK"
# `systemctl reload apache2` runs `apachectl graceful` (Debian's unit).
in_root apache2ctl graceful >"$LOGS/graceful-1.log" 2>&1 \
    || fail "apache2ctl graceful failed" "$LOGS/graceful-1.log"
ok "reloaded (apache2ctl graceful, what systemctl reload apache2 runs)"

wait_code /internal/health 200 || fail "/internal/health answered $CODE: $BODY" "$ROOT/var/log/apache2/error.log"
[ "$(json status)" = ok ] && [ "$(json database)" = ok ] || fail "/internal/health: $BODY"
[ "$(json version)" = "$V1" ] || fail "/internal/health reports version '$(json version)', not $V1"
ok "GET /internal/health: 200, status ok, database ok, version $V1"
if grep -qi '^server: .*mod_svc' <<<"$HEADERS"; then
    fail "ServerTokens OS, yet the Server header names mod_svc: $(grep -i '^server:' <<<"$HEADERS")"
fi
ok "Server header without mod_svc under Debian's ServerTokens OS ($(grep -i '^server:' <<<"$HEADERS"))"
grep -q "mod_svc/$V1 configured -- resuming normal operations" "$ROOT/var/log/apache2/error.log" \
    || fail "the error log's start line does not name mod_svc/$V1" "$ROOT/var/log/apache2/error.log"
ok "the error log's start line names mod_svc/$V1 (server description)"
# The web UI, served by svc.conf's Alias from /usr/share/mod_svc/ui with its
# security headers (mod_headers, enabled by a2enmod svc's Depends).
http /orgs/pkgtest
app=$(grep -oE '/ui/[0-9a-f]{16}/js/app\.js' <<<"$BODY" | head -n 1)
[ "$CODE" = 200 ] && [ -n "$app" ] \
    || fail "GET /orgs/pkgtest did not answer the UI's page naming its hashed app.js: $CODE $BODY" "$ROOT/var/log/apache2/error.log"
grep -qixF "content-security-policy: default-src 'self'; base-uri 'none'; object-src 'none'; form-action 'self'; frame-ancestors 'none'" <<<"$HEADERS" \
    && grep -qixF 'x-content-type-options: nosniff' <<<"$HEADERS" \
    || fail "the UI's page lacks its CSP or nosniff: $HEADERS"
grep -qixF 'cache-control: no-cache' <<<"$HEADERS" || fail "the UI's page is not no-cache: $HEADERS"
http "$app"
[ "$CODE" = 200 ] && grep -qiE '^content-type: text/javascript' <<<"$HEADERS" \
    || fail "GET $app answered $CODE: $HEADERS"
grep -qixF 'cache-control: public, max-age=31536000, immutable' <<<"$HEADERS" \
    || fail "GET $app is not cached for good: $HEADERS"
http "${app%/js/app.js}/js/api.js"
[ "$CODE" = 200 ] || fail "GET ${app%/js/app.js}/js/api.js (app.js imports ./api.js) answered $CODE"
ok "the web UI: /orgs/... serves its page (no-cache) with the CSP and nosniff, $app as text/javascript cached for a year (immutable), its imports beside it"

in_root runuser -u www-data -- svcctl --db dbname=svc --secret file:/etc/mod_svc/secret.key \
    token create "$EMAIL" --scope read --name pkgtest >"$LOGS/token" 2>"$LOGS/token.err" \
    || fail "svcctl token create failed (as www-data, secret 0640 root:www-data)" "$LOGS/token.err"
TOKEN=$(cat "$LOGS/token")
[[ $TOKEN =~ ^svc_pat_[A-Za-z0-9]+$ ]] || fail "svcctl token create printed no token"
ok "svcctl token create (as www-data, reading the 0640 secret): svc_pat_…"
http /api/me
[ "$CODE" = 401 ] || fail "GET /api/me without a token answered $CODE, not 401"
http /api/me -H "Authorization: Bearer $TOKEN"
[ "$CODE" = 200 ] || fail "GET /api/me answered $CODE: $BODY" "$ROOT/var/log/apache2/error.log"
grep -qF "\"$EMAIL\"" <<<"$BODY" || fail "GET /api/me does not name $EMAIL: $BODY"
ok "GET /api/me with the token: 200, $EMAIL (401 without it)"
rid=$(sed -n 's/^x-request-id: *//Ip' <<<"$HEADERS")
[ -n "$rid" ] || fail "GET /api/me answered without X-Request-Id"
for _ in $(seq 50); do
    grep -qF "\"GET /api/me HTTP/1.1\" 200 " "$ROOT/var/log/apache2/svc_access.log" 2>/dev/null \
        && grep -qF " $rid" "$ROOT/var/log/apache2/svc_access.log" && break
    sleep 0.1
done
grep -F " $rid" "$ROOT/var/log/apache2/svc_access.log" 2>/dev/null | grep -qF '"GET /api/me HTTP/1.1" 200 ' \
    || fail "svc_access.log has no line for GET /api/me with its request id $rid" \
            "$ROOT/var/log/apache2/svc_access.log"
ok "/var/log/apache2/svc_access.log: GET /api/me with its X-Request-Id ($rid)"

# The run supervisor started with httpd, as httpd's user, with its work
# directory made for it; it claims a run and fails it at once, as the org has
# no model provider (what a real run needs beyond that is t/runs/'s).
grep -q 'SVC0079: run supervisor' "$ROOT/var/log/apache2/error.log" \
    || fail "no run supervisor start line (SVC0079) in the error log" "$ROOT/var/log/apache2/error.log"
[ "$(stat -c '%U %a' "$ROOT/var/lib/mod_svc/runs")" = "www-data 700" ] \
    || fail "/var/lib/mod_svc/runs is $(stat -c '%U %a' "$ROOT/var/lib/mod_svc/runs" 2>&1), not www-data 700"
ok "the run supervisor is up (SVC0079), /var/lib/mod_svc/runs is www-data's, 0700"
in_root runuser -u www-data -- svcctl --db dbname=svc --secret file:/etc/mod_svc/secret.key \
    token create "$EMAIL" --scope write --name pkgtest-runs >"$LOGS/token-w" 2>"$LOGS/token-w.err" \
    || fail "svcctl token create --scope write failed" "$LOGS/token-w.err"
WTOKEN=$(cat "$LOGS/token-w")
in_root runuser -u www-data -- svcctl --db dbname=svc org create pkgtest --owner "$EMAIL" \
    >"$LOGS/org.log" 2>&1 || fail "svcctl org create failed" "$LOGS/org.log"
http /api/orgs/pkgtest/projects -X POST -H "Authorization: Bearer $WTOKEN" \
    -H 'Content-Type: application/json' -d '{"slug":"app","name":"App"}'
[ "$CODE" = 201 ] || fail "POST /api/orgs/pkgtest/projects answered $CODE: $BODY"
http /api/orgs/pkgtest/projects/app/runs -X POST -H "Authorization: Bearer $WTOKEN" \
    -H 'Content-Type: application/json' -d '{"instructions":"Say hello."}'
[ "$CODE" = 201 ] || fail "starting a run answered $CODE: $BODY"
RUN=$(json id)
for i in $(seq 100); do
    http "/api/orgs/pkgtest/projects/app/runs/$RUN" -H "Authorization: Bearer $WTOKEN"
    [ "$(json status)" = failed ] && break
    sleep 0.2
done
[ "$(json status)" = failed ] \
    && [ "$(perl -MJSON::PP -e 'print decode_json($ARGV[0])->{error}{code} // ""' "$BODY")" = no_provider ] \
    || fail "the run did not fail with no_provider: $BODY" "$ROOT/var/log/apache2/error.log"
ok "a run is claimed by the supervisor and fails at once with no_provider (no model provider yet)"

# ---------------------------------------------------------------------------
step "the deploy agent: install svc-agent, one deployment, purge"
# ---------------------------------------------------------------------------
# A chroot cannot make user namespaces (the kernel refuses CLONE_NEWUSER to a
# chrooted process), so bubblewrap cannot run in this root: the planner's git
# runs through SvcRunner and the replicas through the agent's runner, both
# `env` without a sandbox, as an operator's runner program would be used. What
# bubblewrap does is t/deploy/agent.t's.
t=$SECONDS
cp "$DEB_AGENT1" "$ROOT/tmp/pkgs/v1/"
chmod a+r "$ROOT/tmp/pkgs/v1/${DEB_AGENT1##*/}"
in_root apt-get install -y -q "/tmp/pkgs/v1/${DEB_AGENT1##*/}" </dev/null >"$LOGS/install-agent.log" 2>&1 \
    || fail "apt-get install of svc-agent failed" "$LOGS/install-agent.log"
[ "$(installed svc-agent)" = "install ok installed ${V1}-1" ] || fail "svc-agent is not installed: $(installed svc-agent)"
in_root getent passwd svc-agent >/dev/null || fail "the postinst made no user svc-agent"
# (Owners as the root names them: its users' ids are not this machine's.)
[ "$(in_root stat -c '%U %a' /etc/svc-agent/agent.conf)" = "svc-agent 600" ] \
    || fail "/etc/svc-agent/agent.conf is $(in_root stat -c '%U %a' /etc/svc-agent/agent.conf), not svc-agent 600"
[ "$(in_root stat -c '%U %a' /var/lib/svc-agent)" = "svc-agent 700" ] \
    || fail "/var/lib/svc-agent is $(in_root stat -c '%U %a' /var/lib/svc-agent), not svc-agent 700"
[ ! -e "$ROOT/etc/systemd/system/multi-user.target.wants/svc-agent.service" ] \
    || fail "svc-agent.service is enabled at install: it has no key yet"
ok "apt-get install ./svc-agent_${V1}-1: user svc-agent, agent.conf 0600, /var/lib/svc-agent 0700, unit not enabled"
[ "$(in_root svc-agent --version)" = "svc-agent $V1" ] || fail "svc-agent --version says '$(in_root svc-agent --version)'"
if in_root svc-agent --key svc_dek_x >/dev/null 2>&1; then
    fail "svc-agent took an argument (the key must never be on a command line)"
fi
ok "svc-agent --version: svc-agent $V1; arguments refused"

printf 'SvcRunner /usr/bin/env -C {workspace} {command}\n' >"$ROOT/etc/apache2/conf-available/pkgtest-runner.conf"
in_root a2enconf -q pkgtest-runner >/dev/null || fail "a2enconf pkgtest-runner failed"
in_root apache2ctl graceful >"$LOGS/graceful-runner.log" 2>&1 || fail "graceful failed" "$LOGS/graceful-runner.log"
in_root runuser -u www-data -- svcctl --db dbname=svc --secret file:/etc/mod_svc/secret.key \
    token create "$EMAIL" --scope admin --name pkgtest-deploy >"$LOGS/token-a" 2>"$LOGS/token-a.err" \
    || fail "svcctl token create --scope admin failed" "$LOGS/token-a.err"
ATOKEN=$(cat "$LOGS/token-a")
wait_code /api/orgs/pkgtest/deploy-targets 201 -X POST -H "Authorization: Bearer $ATOKEN" \
    -H 'Content-Type: application/json' -d '{"name":"pkgtest-box"}' \
    || fail "registering a deploy target answered $CODE: $BODY" "$ROOT/var/log/apache2/error.log"
TARGET=$(json id)
KEY=$(json key)
[[ $KEY =~ ^svc_dek_[A-Za-z0-9]+$ ]] || fail "the target's answer holds no key"
ok "a deploy target registered (its key svc_dek_… shown once)"

# An artifact as a run leaves it: a git bundle whose Procfile serves HTTP
# (with perl: python3 is not in a minimal root), stored as a succeeded run.
mkdir -p "$ROOT/tmp/site"
cat >"$ROOT/tmp/site/Procfile" <<'PROCFILE'
web: perl -MIO::Socket::INET -e '$s = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => $ENV{PORT}, Listen => 5, ReuseAddr => 1) or die "$!"; while ($c = $s->accept) { <$c>; print $c "HTTP/1.0 200 OK\r\n\r\nhello from the package test\n"; close $c }'
PROCFILE
in_root sh -c 'set -e; cd /tmp/site; git init -q -b svc/run-pkgtest; git add -A
    git -c user.name=pkgtest -c user.email=pkgtest@example.test commit -q -m site
    git bundle create -q /tmp/site.bundle HEAD svc/run-pkgtest' >"$LOGS/bundle.log" 2>&1 \
    || fail "the artifact could not be made in the root" "$LOGS/bundle.log"
COMMIT=$(in_root git -C /tmp/site rev-parse HEAD)
HEX=$(od -An -tx1 -v "$ROOT/tmp/site.bundle" | tr -d ' \n')
DRUN=run_pkgtestDeploy0000000001
psql_root "INSERT INTO runs (id, org_id, project_id, status, instructions, timeout_seconds, started_at,
           finished_at, result, artifact_bytes)
           SELECT '$DRUN', o.id, p.id, 'succeeded', 'An artifact of the package test', 60, now(), now(),
                  jsonb_build_object('summary', 'site', 'commit', '$COMMIT', 'files', '[]'::jsonb),
                  $(stat -c %s "$ROOT/tmp/site.bundle")
           FROM orgs o JOIN projects p ON p.org_id = o.id WHERE o.slug = 'pkgtest' AND p.slug = 'app';
           INSERT INTO run_artifacts (run_id, part, data) VALUES ('$DRUN', 0, decode('$HEX', 'hex'))" \
    >"$LOGS/run-fixture.log" 2>&1 || fail "the run could not be stored" "$LOGS/run-fixture.log"

# The agent, configured as the sysadmin would (the file), run as its user.
APORTLO=$(shuf -i 21000-29000 -n 1)
cat >"$ROOT/etc/svc-agent/agent.conf" <<CONF
url = http://127.0.0.1:$PORT
key = $KEY
dir = /var/lib/svc-agent
ports = $APORTLO-$((APORTLO + 50))
heartbeat = 2
runner = /usr/bin/env PORT={port} /bin/sh -c {command}
CONF
[ "$(in_root stat -c '%U %a' /etc/svc-agent/agent.conf)" = "svc-agent 600" ] || fail "agent.conf lost its mode"
in_root runuser -u svc-agent -- env SVC_AGENT_CONFIG=/etc/svc-agent/agent.conf /usr/bin/svc-agent \
    </dev/null >"$LOGS/agent.log" 2>&1 &
AGENT_PID=$!
for _ in $(seq 100); do
    http /api/orgs/pkgtest/deploy-targets -H "Authorization: Bearer $ATOKEN"
    grep -qE '"status" *: *"online"' <<<"$BODY" && break
    sleep 0.2
done
grep -qE '"status" *: *"online"' <<<"$BODY" || fail "the target did not come online: $BODY" "$LOGS/agent.log"
ok "svc-agent (as user svc-agent, from agent.conf) connects: the target is online"

http /api/orgs/pkgtest/deployments -X POST -H "Authorization: Bearer $ATOKEN" \
    -H 'Content-Type: application/json' \
    -d "{\"project\":\"app\",\"target_id\":\"$TARGET\",\"run_id\":\"$DRUN\"}"
[ "$CODE" = 201 ] || fail "making a deployment answered $CODE: $BODY"
DEP=$(json id)
dep_status() {  # dep_status WANT: poll the deployment until it is WANT (60 s)
    local i
    for i in $(seq 300); do
        http "/api/orgs/pkgtest/deployments/$DEP" -H "Authorization: Bearer $ATOKEN"
        [ "$(json status)" = "$1" ] && return 0
        sleep 0.2
    done
    return 1
}
dep_status planned || fail "the deployment was not planned: $BODY" "$ROOT/var/log/apache2/error.log"
PLANV=$(perl -MJSON::PP -e 'print decode_json($ARGV[0])->{plan}{version}' "$BODY")
ok "deployment $DEP planned from the Procfile (plan version $PLANV)"
http "/api/orgs/pkgtest/deployments/$DEP/approve" -X POST -H "Authorization: Bearer $ATOKEN" \
    -H 'Content-Type: application/json' -d "{\"plan_version\":$PLANV}"
[ "$CODE" = 200 ] || fail "approving answered $CODE: $BODY"
dep_status running || fail "the deployment is not running: $BODY" "$LOGS/agent.log"
APORT=$(perl -MJSON::PP -e 'print decode_json($ARGV[0])->{workload}{replicas}[0]{port}' "$BODY")
APP=$(curl -sS --max-time 5 "http://127.0.0.1:$APORT/" 2>&1) || true
[ "$APP" = "hello from the package test" ] || fail "the workload on port $APORT answered '$APP'" "$LOGS/agent.log"
ok "approved, running: the workload answers on port $APORT"
http "/api/orgs/pkgtest/deployments/$DEP/teardown" -X POST -H "Authorization: Bearer $ATOKEN"
[ "$CODE" = 200 ] || fail "teardown answered $CODE: $BODY"
dep_status torn_down || fail "the deployment was not torn down: $BODY" "$LOGS/agent.log"
[ ! -e "$ROOT/var/lib/svc-agent/deployments/$DEP" ] || fail "the deployment's files are still on the target"
if curl -s --max-time 2 "http://127.0.0.1:$APORT/" >/dev/null 2>&1; then
    fail "the workload still answers after teardown"
fi
ok "torn down: no process answers, no file left"
kill -TERM "$AGENT_PID"
for _ in $(seq 100); do kill -0 "$AGENT_PID" 2>/dev/null || break; sleep 0.1; done
! kill -0 "$AGENT_PID" 2>/dev/null || fail "svc-agent did not stop on SIGTERM" "$LOGS/agent.log"
if grep -qF "$KEY" "$LOGS/agent.log"; then fail "the agent's log shows its key"; fi
ok "svc-agent stops on SIGTERM; its log never shows the key"
in_root a2disconf -q pkgtest-runner >/dev/null
rm -f "$ROOT/etc/apache2/conf-available/pkgtest-runner.conf"
in_root apache2ctl graceful >"$LOGS/graceful-norunner.log" 2>&1 || fail "graceful failed" "$LOGS/graceful-norunner.log"
in_root apt-get purge -y -q svc-agent </dev/null >"$LOGS/purge-agent.log" 2>&1 \
    || fail "apt-get purge svc-agent failed" "$LOGS/purge-agent.log"
[ ! -e "$ROOT/etc/svc-agent/agent.conf" ] && [ ! -e "$ROOT/var/lib/svc-agent" ] && [ ! -e "$ROOT/usr/bin/svc-agent" ] \
    || fail "purging svc-agent left its configuration, data or program"
[ -d "$ROOT/var/lib/svc-agent-separated" ] || fail "purging svc-agent removed the hand-over directory"
ok "apt-get purge svc-agent: program, agent.conf (with the key) and data gone; the hand-over directory kept"
timed "deploy agent" $((SECONDS - t))

# ---------------------------------------------------------------------------
step "upgrade to $V2"
# ---------------------------------------------------------------------------
t=$SECONDS
MARK="changed by make test-packages $(date +%s)"
printf '# %s\n' "$MARK" >>"$ROOT/etc/apache2/mods-available/svc.conf"
in_root apt-get install -y -q "/tmp/pkgs/v2/${DEB_MOD2##*/}" "/tmp/pkgs/v2/${DEB_TOOLS2##*/}" \
    </dev/null >"$LOGS/install-v2.log" 2>&1 || fail "apt-get install of $V2 failed" "$LOGS/install-v2.log"
for p in libapache2-mod-svc svc-tools; do
    [ "$(installed $p)" = "install ok installed ${V2}-1" ] || fail "$p is not at ${V2}-1: $(installed $p)"
done
ok "upgraded both packages to ${V2}-1"
timed "upgrade to $V2" $((SECONDS - t))
[ "$(sha256sum <"$sec")" = "$SECRET_SUM" ] || fail "the upgrade changed secret.key"
[ "$(stat -c '%U:%G %a' "$sec")" = "root:www-data 640" ] || fail "the upgrade changed secret.key's owner or mode"
ok "secret.key unchanged (content, owner, mode)"
grep -qxF "# $MARK" "$ROOT/etc/apache2/mods-available/svc.conf" \
    || fail "the changed svc.conf did not survive the upgrade"
ok "the changed conffile svc.conf survived"
in_root a2query -q -m svc || fail "the upgrade disabled the module"
ok "the module is still enabled"
[ "$(in_root svcctl --version)" = "svcctl $V2" ] || fail "svcctl --version says '$(in_root svcctl --version)'"
ok "svcctl --version: svcctl $V2"
grep -qF "upgraded from ${V1}-1" "$LOGS/install-v2.log" || fail "the postinst did not name the upgrade" "$LOGS/install-v2.log"
migrate=$(tr -d '\r' <"$LOGS/install-v2.log" | grep -E '^    runuser .* migrate$' | sed 's/^    //' | head -n 1)
[ -n "$migrate" ] || fail "the postinst did not print the migrate command" "$LOGS/install-v2.log"
in_root sh -c "$migrate" </dev/null >"$LOGS/migrate-v2.log" 2>&1 \
    || fail "the documented upgrade step failed: $migrate" "$LOGS/migrate-v2.log"
ok "documented upgrade step: $migrate"
# The postinst restarts an enabled module through invoke-rc.d, which the root
# denies; do what it would, and show the components (ServerTokens Full).
printf 'ServerTokens Full\n' >"$ROOT/etc/apache2/conf-available/zz-servertokens-full.conf"
in_root a2enconf -q zz-servertokens-full >/dev/null || fail "a2enconf zz-servertokens-full failed"
in_root apache2ctl restart >"$LOGS/restart-v2.log" 2>&1 || fail "apache2ctl restart failed" "$LOGS/restart-v2.log"
wait_code /internal/health 200 && [ "$(json version)" = "$V2" ] \
    || fail "after the upgrade, /internal/health: $CODE $BODY" "$ROOT/var/log/apache2/error.log"
ok "GET /internal/health: 200, version $V2"
grep -qi "^server: .* mod_svc/$V2" <<<"$HEADERS" \
    || fail "ServerTokens Full, yet no mod_svc/$V2 in: $(grep -i '^server:' <<<"$HEADERS")"
ok "Server header under ServerTokens Full: $(grep -i '^server:' <<<"$HEADERS" | cut -d' ' -f2-)"
http /api/me -H "Authorization: Bearer $TOKEN"
[ "$CODE" = 200 ] && grep -qF "\"$EMAIL\"" <<<"$BODY" \
    || fail "the token made before the upgrade: GET /api/me answered $CODE: $BODY"
ok "the token made before the upgrade still works (same secret, same database)"
in_root a2disconf -q zz-servertokens-full >/dev/null
rm -f "$ROOT/etc/apache2/conf-available/zz-servertokens-full.conf"

# ---------------------------------------------------------------------------
step "apt-get remove"
# ---------------------------------------------------------------------------
in_root apt-get remove -y -q libapache2-mod-svc svc-tools </dev/null >"$LOGS/remove.log" 2>&1 \
    || fail "apt-get remove failed" "$LOGS/remove.log"
case $(installed libapache2-mod-svc) in
    "deinstall ok config-files"*) ;;
    *) fail "libapache2-mod-svc after remove: '$(installed libapache2-mod-svc)', not config-files" ;;
esac
[ ! -e "$ROOT/usr/lib/apache2/modules/mod_svc.so" ] && [ ! -e "$ROOT/usr/sbin/svcctl" ] \
    || fail "mod_svc.so or svcctl is still there after remove"
ok "removed: mod_svc.so and svcctl gone, libapache2-mod-svc in state config-files"
[ ! -e "$ROOT/etc/apache2/mods-enabled/svc.load" ] && ! in_root a2query -q -m svc \
    || fail "the module is still enabled after remove"
ok "the module is disabled"
grep -qxF "# $MARK" "$ROOT/etc/apache2/mods-available/svc.conf" && [ -f "$ROOT/etc/apache2/mods-available/svc.load" ] \
    || fail "remove did not keep svc.conf (with our change) and svc.load"
[ "$(sha256sum <"$sec")" = "$SECRET_SUM" ] || fail "remove did not keep secret.key"
ok "configuration kept: svc.conf (with our change), svc.load, secret.key"
in_root apache2ctl configtest >"$LOGS/configtest-2.log" 2>&1 \
    || fail "apache2ctl configtest fails after remove" "$LOGS/configtest-2.log"
in_root apache2ctl graceful >"$LOGS/graceful-2.log" 2>&1 || fail "apache2ctl graceful failed" "$LOGS/graceful-2.log"
wait_code /internal/health 404 || fail "after remove and reload, /internal/health answered $CODE, not 404"
ok "apache2 still configures and serves without the module (/internal/health: 404)"

# ---------------------------------------------------------------------------
step "apt-get purge"
# ---------------------------------------------------------------------------
in_root apt-get purge -y -q libapache2-mod-svc svc-tools </dev/null >"$LOGS/purge.log" 2>&1 \
    || fail "apt-get purge failed" "$LOGS/purge.log"
for p in libapache2-mod-svc svc-tools; do
    case $(installed $p) in ""|"unknown ok not-installed"*) ;; *) fail "$p after purge: $(installed $p)" ;; esac
done
ok "both packages purged"
for f in /etc/apache2/mods-available/svc.conf /etc/apache2/mods-available/svc.load /etc/mod_svc \
         /var/lib/mod_svc; do
    [ ! -e "$ROOT$f" ] || fail "$f is still there after purge"
done
ok "configuration gone: svc.conf, svc.load, /etc/mod_svc (the secret), /var/lib/mod_svc (run workspaces)"
state=$(find "$ROOT/var/lib/apache2" -name svc 2>/dev/null)
[ -z "$state" ] || fail "a2enmod state for svc left after purge: $state"
ok "no a2enmod state left for svc"
[ "$(psql_root "SELECT count(*) FROM users WHERE email = '$EMAIL'")" = 1 ] \
    && [ "$(psql_root "SELECT max(version) FROM schema_migrations")" = "$SCHEMA" ] \
    && [ "$(psql_root "SELECT count(*) FROM api_tokens")" -ge 1 ] \
    || fail "the database changed with the purge"
ok "database untouched: schema version $SCHEMA, the user and the token are there"

# ---------------------------------------------------------------------------
step "summary"
# ---------------------------------------------------------------------------
timed "total" $((SECONDS - T0))
printf '  %s\n' "${TIMES[@]}"
echo
echo "test-packages: all $CHECKS checks passed"
