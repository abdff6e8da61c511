#!/usr/bin/env bash
# packaging/build-rpm.sh: what `make rpm` (binary) and `make srpm` (source) run.
#
#   VERSION=0.1.0 [RPM_RELEASE=1] [PKG_OUT=build/packages/rpm] packaging/build-rpm.sh binary|source
#
# Makes Source0 (mod_svc-VERSION.tar.gz) from a clean copy of the tree and
# the web UI's marked and DOMPurify (npm, packaging/rpm/vendor's lockfile), fills
# VERSION, RELEASE and the changelog date into packaging/rpm/mod_svc.spec,
# and runs rpmbuild in build/pkg/rpm-VERSION-RELEASE. The source RPM is what
# to build on Fedora / RHEL (mock). The binary build on this Debian machine
# uses --nodeps (Fedora's BuildRequires are not Debian packages) and defines
# the httpd macros Fedora's httpd-devel would, so that the spec, its file
# list, its requires and rpmlint can be checked here; rpmlint runs on the
# binary package and the spec, and an error fails the build.
set -euo pipefail

PROG=build-rpm.sh
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$TOP/packaging/lib.sh"

MODE=${1:-binary}
case $MODE in binary|source) ;; *) die "usage: build-rpm.sh binary|source" ;; esac
VERSION=${VERSION:?VERSION is not set (make rpm sets it from the Makefile)}
RPM_RELEASE=${RPM_RELEASE:-1}
check_version "$VERSION"
[[ $RPM_RELEASE =~ ^[0-9][A-Za-z0-9.+~]*$ ]] || die "RPM_RELEASE '$RPM_RELEASE' is not a release"
need_tools rpmbuild
[ "$MODE" = source ] || need_tools rpmlint

OUT=${PKG_OUT:-build/packages/rpm}
case $OUT in /*) ;; *) OUT=$TOP/$OUT ;; esac
NVR=mod_svc-$VERSION-$RPM_RELEASE
WORK=$TOP/build/pkg/rpm-$VERSION-$RPM_RELEASE
TOPDIR=$WORK/rpmbuild
rm -rf "$WORK"
mkdir -p "$TOPDIR"/{SOURCES,SPECS,BUILD,RPMS,SRPMS} "$OUT"

say "Source0 and spec for $NVR"
clean_copy "$WORK/mod_svc-$VERSION"
# marked and DOMPurify for the web UI: Fedora and RHEL package neither, so
# Source0 carries them, fetched here from npm at the versions and digests
# packaging/rpm/vendor/package-lock.json pins (npm ci checks the integrity
# of each), with their licences: the RPM build itself needs no network.
need_tools npm
vendor=$WORK/npm-vendor
mkdir -p "$vendor"
cp "$TOP"/packaging/rpm/vendor/package.json "$TOP"/packaging/rpm/vendor/package-lock.json "$vendor"/
(cd "$vendor" && npm ci --ignore-scripts --no-audit --no-fund >"$WORK/npm-ci.log" 2>&1) \
    || { tail -n 20 "$WORK/npm-ci.log" >&2; die "npm ci in packaging/rpm/vendor failed (log: $WORK/npm-ci.log)"; }
dest=$WORK/mod_svc-$VERSION/vendor
mkdir -p "$dest"
nm=$vendor/node_modules
for f in marked/marked.min.js marked/LICENSE.md dompurify/dist/purify.min.js dompurify/LICENSE; do
    [ -f "$nm/$f" ] || die "npm's $f is missing (packaging/rpm/vendor)"
done
install -m 0644 "$nm/marked/marked.min.js" "$dest/marked.min.js"
install -m 0644 "$nm/marked/LICENSE.md" "$dest/LICENSE.marked.md"
install -m 0644 "$nm/dompurify/dist/purify.min.js" "$dest/purify.min.js"
install -m 0644 "$nm/dompurify/LICENSE" "$dest/LICENSE.dompurify"
epoch=$(source_date_epoch)
# A reproducible tarball: sorted, numeric owner, the commit's time.
tar -C "$WORK" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" \
    -czf "$TOPDIR/SOURCES/mod_svc-$VERSION.tar.gz" "mod_svc-$VERSION"
spec=$TOPDIR/SPECS/mod_svc.spec
sed -e "s/@VERSION@/$VERSION/g" -e "s/@RELEASE@/$RPM_RELEASE/g" \
    -e "s/@DATE@/$(LC_ALL=C date -u -d "@$epoch" '+%a %b %d %Y')/g" \
    "$TOP/packaging/rpm/mod_svc.spec" >"$spec"
! grep -n '@[A-Z]*@' "$spec" || die "unfilled placeholders in the spec"

defs=(--define "_topdir $TOPDIR")
log=$WORK/rpmbuild.log
if [ "$MODE" = source ]; then
    rpmbuild "${defs[@]}" --nodeps -bs "$spec" >"$log" 2>&1 \
        || { tail -n 40 "$log" >&2; die "rpmbuild -bs failed (log: $log)"; }
    cp "$TOPDIR"/SRPMS/"$NVR".src.rpm "$OUT"/
    say "source RPM: ${OUT#"$TOP"/}/$NVR.src.rpm (build it with mock on Fedora / RHEL 9)"
    exit 0
fi

# What Fedora's httpd-devel would define, from this machine's httpd headers:
# the module magic number with the ISA, as Fedora's httpd.spec writes .mmn.
apxs=$(command -v apxs || command -v apxs2 || true)
[ -n "$apxs" ] || die "apxs not found (apache2-dev)"
mmn_major=$(sed -n 's/^#define MODULE_MAGIC_NUMBER_MAJOR \([0-9]*\).*/\1/p' \
    "$("$apxs" -q INCLUDEDIR)/ap_mmn.h")
[ -n "$mmn_major" ] || die "cannot read MODULE_MAGIC_NUMBER_MAJOR from ap_mmn.h"
isa=$(rpm --eval '%{__isa_name}%{__isa_bits}')
defs+=(--define "_httpd_mmn ${mmn_major}${isa}"
       # No debuginfo subpackage here: Debian has no find-debuginfo; Fedora makes it.
       --define "debug_package %{nil}")
rpmbuild "${defs[@]}" --nodeps -bb "$spec" >"$log" 2>&1 \
    || { tail -n 40 "$log" >&2; die "rpmbuild -bb failed (log: $log)"; }
arch=$(rpm --eval '%{_arch}')
rpmfile=$TOPDIR/RPMS/$arch/$NVR.$arch.rpm
[ -f "$rpmfile" ] || die "rpmbuild made no $NVR.$arch.rpm (log: $log)"
# The deploy agent's subpackage, for the deploy targets.
agentfile=$TOPDIR/RPMS/$arch/svc-agent-$VERSION-$RPM_RELEASE.$arch.rpm
[ -f "$agentfile" ] || die "rpmbuild made no svc-agent subpackage (log: $log)"
cp "$rpmfile" "$agentfile" "$spec" "$OUT"/

# rpmlint with Fedora's settings where they differ from the generic ones
# (packaging/rpm/rpmlint.toml): errors fail the build; warnings are shown
# (docs/decisions.md lists the ones we keep). The report stays next to the
# package for the test.
report=$OUT/rpmlint_$VERSION-$RPM_RELEASE.txt
say "rpmlint $NVR.$arch.rpm ${agentfile##*/} mod_svc.spec"
rc=0
rpmlint -c "$TOP/packaging/rpm/rpmlint.toml" "$OUT/$NVR.$arch.rpm" "$OUT/${agentfile##*/}" \
    "$OUT/mod_svc.spec" >"$report" 2>&1 || rc=$?
sed 's/^/    /' "$report"
summary=$(grep -E '[0-9]+ errors?, [0-9]+ warnings?' "$report" | tail -n 1)
[ -n "$summary" ] || die "rpmlint printed no summary (exit $rc; report in $report)"
errors=$(sed -E 's/.* ([0-9]+) errors?,.*/\1/' <<<"$summary")
[ "$errors" = 0 ] || die "rpmlint found $errors error(s) (see above; report in $report)"
say "packages: ${OUT#"$TOP"/}/$NVR.$arch.rpm, ${OUT#"$TOP"/}/${agentfile##*/}"
