#!/usr/bin/env bash
# tools/deps.sh: the ONE list of system packages mod_svc needs to build, run
# and test, for Debian/Ubuntu (apt) and for RPM systems (dnf).  The packaging
# lists the build group again (Build-Depends in packaging/deb/control,
# BuildRequires in packaging/rpm/mod_svc.spec, which must stand alone in a
# source package); `make test-packages` compares them with --print, so the
# lists cannot drift apart.
#
#   tools/deps.sh                     install whatever is missing (all groups)
#   tools/deps.sh --check             exit 1 and name what is missing
#   tools/deps.sh [--check] --group G [--group G ...]
#                                     the same for the named groups only
#   tools/deps.sh --print deb|rpm [build|run|test|pkg|all]
#                                     print one package name per line
#
# Groups: build = compile the module and svcctl; run = what the installed
# module needs at run time (plus the PostgreSQL server `make run` starts);
# test = the test harness, `make bench` and `make fuzz`; pkg = `make deb`, `make rpm` and
# `make test-packages` (not in `all`: only CI and packagers need it).
#
# The test group also installs the npm packages pinned in
# t/contract/package-lock.json (npm ci into t/contract/node_modules): the
# OpenAPI linter and client generator t/kernel/openapi.t runs, and the
# validating proxy (Prism) t/kernel/prism.t runs; and those pinned in
# t/ui/package-lock.json: playwright-core and axe-core, which
# t/ui/browser.t drives the system's chromium and checks pages with.
set -euo pipefail

# --- Debian 12 / Ubuntu --------------------------------------------------
DEB_BUILD=(
    gcc make pkg-config libc6-dev perl
    apache2-dev            # apxs, httpd headers, apr-1-config, apu-1-config
    libjansson-dev libsodium-dev libcurl4-openssl-dev libpq-dev libssl-dev
)
DEB_RUN=(
    apache2                # /usr/sbin/apache2 and the event MPM module
    libaprutil1-dbd-pgsql  # apr_dbd's PostgreSQL driver, used by mod_dbd
    postgresql             # server (initdb, pg_ctl) + psql for `make run`
    bubblewrap             # the runs' sandbox (bwrap)
    git                    # build/svc-factory, the factory of runs, commits with it;
                           # the artifact is a git bundle
    libjs-marked node-dompurify  # the web UI's Markdown and its sanitizer (svc.conf's Alias)
)
DEB_TEST=(
    libapache2-mod-perl2   # Debian ships Apache::Test in this package
    libwww-perl            # LWP, used by Apache::TestRequest and SvcTest.pm
    libhttp-daemon-perl    # fake code-hosting/payment/LLM providers
    libio-socket-ssl-perl  # the fake provider behind a private CA (HTTPS)
    openssl                # makes that private CA
    valgrind               # unit tests (without SANITIZE=1)
    wrk                    # make bench
    curl procps            # health probes; ps/pgrep in the scripts; curl in a run's
                           # sandbox (t/runs/agent.t: no network there)
    python3                # what the agent's tests build and test in the sandbox
    iproute2               # ss: the event-stream tests count sockets by state
    pgbouncer              # t/nodes/pgbouncer.t: the stack through PgBouncer (session mode)
    libjson-validator-perl # every answer checked against the OpenAPI document (SvcContract.pm)
    nodejs                 # t/kernel/openapi.t: Redocly, openapi-typescript, tsc (npm ci;
                           # Node 20 or later: NodeSource's nodejs carries npm, Debian's needs
                           # its npm package, which deps.sh adds then)
    util-linux             # runuser, setpriv (dropping root in test.sh)
    passwd                 # useradd (the unprivileged test user)
    tar coreutils findutils
    clang                  # make fuzz: the libFuzzer targets (t/fuzz, docs/fuzzing.md)
    libclang-rt-dev        # libFuzzer and the sanitizers' runtimes (libclang-rt-14-dev on
                           # Debian 12): clang only recommends it, and we install without
    chromium               # t/ui/browser.t: the web UI in a headless browser (playwright-core
                           # drives this one; no browser is ever downloaded)
    prometheus             # promtool: t/admin/metrics.t checks /internal/metrics with it
)
DEB_PKG=(
    debhelper dpkg-dev     # dpkg-buildpackage, dh (compat 13); dh_apache2 is in apache2-dev
    lintian                # make deb checks its packages
    rpm                    # rpmbuild, rpm -qp (make rpm on this Debian machine)
    rpmlint
    mmdebstrap             # the clean Debian root of make test-packages
    curl                   # probes of the server in that root
    nodejs                 # npm: make rpm fetches the web UI's marked and DOMPurify into
                           # Source0 (packaging/rpm/vendor); Debian's nodejs needs its npm
                           # package, NodeSource's carries it
)

# --- Fedora / RHEL (EPEL for wrk and libsodium on RHEL) ---------------------
RPM_BUILD=(
    gcc make pkgconf-pkg-config perl
    httpd-devel apr-devel apr-util-devel
    jansson-devel libsodium-devel libcurl-devel libpq-devel openssl-devel
    libasan libubsan       # SANITIZE=1
)
RPM_RUN=(
    httpd
    apr-util-pgsql
    postgresql-server postgresql
    bubblewrap git
)
RPM_TEST=(
    perl-Apache-Test perl-libwww-perl perl-HTTP-Daemon perl-JSON-PP perl-IO-Socket-SSL openssl
    perl-Time-HiRes perl-Digest-SHA perl-IPC-Cmd perl-JSON-Validator
    nodejs npm
    valgrind wrk curl procps-ng iproute util-linux shadow-utils tar coreutils findutils
    python3
    pgbouncer              # t/nodes/pgbouncer.t
    clang compiler-rt      # make fuzz: clang, libFuzzer and the sanitizers' runtimes
    chromium               # t/ui/browser.t (Fedora; EPEL on RHEL)
)
RPM_PKG=(
    rpm-build rpmlint
    nodejs npm             # make srpm fetches marked and DOMPurify (packaging/rpm/vendor)
)

die() { echo "deps.sh: $*" >&2; exit 1; }

# pick <deb|rpm> <group>: prints the package names of a group.
pick() {
    case $1:$2 in
        deb:build) printf '%s\n' "${DEB_BUILD[@]}" ;;
        deb:run)   printf '%s\n' "${DEB_RUN[@]}" ;;
        deb:test)  printf '%s\n' "${DEB_TEST[@]}" ;;
        rpm:build) printf '%s\n' "${RPM_BUILD[@]}" ;;
        rpm:run)   printf '%s\n' "${RPM_RUN[@]}" ;;
        rpm:test)  printf '%s\n' "${RPM_TEST[@]}" ;;
        deb:pkg)   printf '%s\n' "${DEB_PKG[@]}" ;;
        rpm:pkg)   printf '%s\n' "${RPM_PKG[@]}" ;;
        deb:all|rpm:all) pick "$1" build; pick "$1" run; pick "$1" test ;;
        *) die "unknown family/group '$1 $2' (deb|rpm; build|run|test|pkg|all)" ;;
    esac
}

family() {
    if command -v dpkg-query >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
        echo deb
    elif command -v rpm >/dev/null 2>&1 && command -v dnf >/dev/null 2>&1; then
        echo rpm
    else
        echo unknown
    fi
}

# missing <fam>: the packages of the chosen groups (DEP_GROUPS) that are not installed.
DEP_GROUPS=(all)
missing() {
    local fam=$1 p g
    while read -r p; do
        case $fam in
            deb) dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' \
                     || echo "$p" ;;
            rpm) rpm -q --whatprovides "$p" >/dev/null 2>&1 || echo "$p" ;;
        esac
    done < <(for g in "${DEP_GROUPS[@]}"; do pick "$fam" "$g"; done | sort -u)
}

# as_root CMD...: run as root directly, or through sudo, or explain.
as_root() {
    if [ "$(id -u)" = 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        return 127
    fi
}

install_deb() {
    local pkgs=("$@") policy=/usr/sbin/policy-rc.d made_policy=0
    # Installing apache2 or postgresql would start their system services
    # (port 80, a cluster on 5432).  We never use those, so keep them off,
    # the way container images do, unless the machine already decided.
    if [ ! -e "$policy" ]; then
        as_root sh -c "printf '#!/bin/sh\nexit 101\n' > $policy && chmod 755 $policy" \
            && made_policy=1
    fi
    local rc=0
    {
        # SVC_APT_UPDATED=1: the caller (.ci/run) has just refreshed the lists.
        if [ -z "${SVC_APT_UPDATED:-}" ]; then
            as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
        fi &&
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
            --no-install-recommends "${pkgs[@]}"
    } || rc=$?
    if [ "$made_policy" = 1 ]; then as_root rm -f "$policy"; fi
    return $rc
}

install_rpm() {
    as_root dnf install -y "$@"
}

# The npm packages of the test group: npm ci into DIR/node_modules, for each
# directory with a lockfile, when the lockfile changed since the last install
# (a stamp of its digest).
TOP_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NPM_DIRS=("$TOP_DIR/t/contract" "$TOP_DIR/t/ui")
npm_stamp() { sha256sum "$1/package-lock.json" | cut -d' ' -f1; }
npm_current() {
    [ -f "$1/node_modules/.svc-lock" ] \
        && [ "$(cat "$1/node_modules/.svc-lock")" = "$(npm_stamp "$1")" ]
}
npm_deps() {
    local mode=$1 dir name
    for dir in "${NPM_DIRS[@]}"; do
        name=${dir#"$TOP_DIR"/}
        if npm_current "$dir"; then
            echo "deps.sh: npm packages of $name present"
            continue
        fi
        if [ "$mode" = check ]; then
            echo "deps.sh: missing: the npm packages of $name (npm ci)" >&2
            return 1
        fi
        if ! command -v npm >/dev/null 2>&1; then
            [ "$(family)" = deb ] || die "npm is missing (install nodejs and npm)"
            echo "deps.sh: installing: npm"
            install_deb npm || die "npm could not be installed"
        fi
        echo "deps.sh: npm ci in $name"
        # No install scripts: the tools need none (playwright-core's would
        # only fetch browsers, and we use the system's chromium), and a
        # registry package's scripts have no business running as root here.
        (cd "$dir" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error) \
            || die "npm ci failed in $name"
        npm_stamp "$dir" > "$dir/node_modules/.svc-lock"
    done
}

main() {
    local mode=install
    local -a groups=()
    while [ $# -gt 0 ]; do
        case $1 in
            --print) [ $# -ge 2 ] || die "usage: deps.sh --print deb|rpm [build|run|test|pkg|all]"
                     pick "$2" "${3:-all}"; return ;;
            --check) mode=check ;;
            --group) [ $# -ge 2 ] || die "--group needs a group name"
                     pick deb "$2" >/dev/null   # dies on an unknown group
                     groups+=("$2"); shift ;;
            -h|--help) sed -n '2,24p' "$0"; return ;;
            *) die "unknown argument '$1' (see --help)" ;;
        esac
        shift
    done
    [ ${#groups[@]} -eq 0 ] || DEP_GROUPS=("${groups[@]}")

    local fam
    fam=$(family)
    [ "$fam" != unknown ] || die "neither apt-get nor dnf found; install by hand:
  Debian: $(pick deb all | tr '\n' ' ')
  RPM:    $(pick rpm all | tr '\n' ' ')"

    local -a miss
    mapfile -t miss < <(missing "$fam")
    if [ ${#miss[@]} -eq 0 ]; then
        echo "deps.sh: all $(for g in "${DEP_GROUPS[@]}"; do pick "$fam" "$g"; done | sort -u | wc -l) packages present (${DEP_GROUPS[*]})"
        if wants_npm; then npm_deps "$mode"; fi
        return
    fi
    if [ "$mode" = check ]; then
        echo "deps.sh: missing: ${miss[*]}" >&2
        return 1
    fi

    echo "deps.sh: installing: ${miss[*]}"
    local rc=0
    "install_$fam" "${miss[@]}" || rc=$?
    if [ $rc = 127 ]; then
        die "not root and no sudo; as root, install: ${miss[*]}"
    elif [ $rc != 0 ]; then
        die "package installation failed (exit $rc); needed: ${miss[*]}"
    fi
    # What apt says it installed is not proof; check again.
    mapfile -t miss < <(missing "$fam")
    [ ${#miss[@]} -eq 0 ] || die "still missing after install: ${miss[*]}"
    if wants_npm; then npm_deps install; fi
}

# Whether the chosen groups include the test group's npm packages.
wants_npm() {
    local g
    for g in "${DEP_GROUPS[@]}"; do
        case $g in all|test) return 0 ;; esac
    done
    return 1
}

main "$@"
