#!/usr/bin/env bash
# packaging/build-deb.sh: what `make deb` runs.
#
#   VERSION=0.1.0 [DEB_REVISION=1] [PKG_OUT=build/packages/deb] packaging/build-deb.sh
#
# Copies the tree (clean_copy) to build/pkg/deb-VERSION/mod-svc-VERSION,
# puts packaging/deb there as debian/, writes debian/changelog for
# VERSION-DEB_REVISION, runs `dpkg-buildpackage -us -uc -b`, moves the
# packages to PKG_OUT and runs lintian on them: an error fails the build,
# warnings are shown (docs/decisions.md lists the ones we keep, and why).
set -euo pipefail

PROG=build-deb.sh
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$TOP/packaging/lib.sh"

VERSION=${VERSION:?VERSION is not set (make deb sets it from the Makefile)}
DEB_REVISION=${DEB_REVISION:-1}
check_version "$VERSION"
[[ $DEB_REVISION =~ ^[0-9][A-Za-z0-9.+~]*$ ]] || die "DEB_REVISION '$DEB_REVISION' is not a revision"
need_tools dpkg-buildpackage dh dh_apache2 lintian
DEBVER=$VERSION-$DEB_REVISION

OUT=${PKG_OUT:-build/packages/deb}
case $OUT in /*) ;; *) OUT=$TOP/$OUT ;; esac
WORK=$TOP/build/pkg/deb-$DEBVER
SRC=$WORK/mod-svc-$VERSION

say "building mod-svc $DEBVER in $SRC"
rm -rf "$WORK"
clean_copy "$SRC"
cp -R "$SRC/packaging/deb" "$SRC/debian"

# The one version is the Makefile's; the changelog is written from it, so
# there is no second place to bump.
{
    printf 'mod-svc (%s) unstable; urgency=medium\n\n' "$DEBVER"
    printf '  * mod_svc %s (the version in the Makefile); what changed is in\n' "$VERSION"
    printf '    the project'"'"'s git history.\n\n'
    printf ' -- %s  %s\n' "$(sed -n 's/^Maintainer: //p' "$SRC/debian/control")" \
        "$(date -u -R -d "@$(source_date_epoch)")"
} >"$SRC/debian/changelog"

log=$WORK/dpkg-buildpackage.log
# On every core (debian/rules reads parallel=N), unless the caller chose.
case " ${DEB_BUILD_OPTIONS:-} " in
    *" parallel="*) ;;
    *) export DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:+$DEB_BUILD_OPTIONS }parallel=$(nproc 2>/dev/null || echo 1)" ;;
esac
if ! (cd "$SRC" && dpkg-buildpackage -us -uc -b) >"$log" 2>&1; then
    tail -n 60 "$log" >&2
    die "dpkg-buildpackage failed (whole log: $log)"
fi

mkdir -p "$OUT"
rm -f "$OUT"/*_"$DEBVER"_*.deb "$OUT"/*_"$DEBVER"_*.ddeb "$OUT/mod-svc_${DEBVER}"_*.changes \
    "$OUT/mod-svc_${DEBVER}"_*.buildinfo "$OUT/lintian_$DEBVER.txt"
shopt -s nullglob
built=("$WORK"/*_"$DEBVER"_*.deb)
[ ${#built[@]} -ge 2 ] || die "dpkg-buildpackage made no packages (log: $log)"
mv "${built[@]}" "$WORK"/*_"$DEBVER"_*.ddeb "$WORK"/*.changes "$WORK"/*.buildinfo "$OUT"/
shopt -u nullglob
changes=$(ls "$OUT/mod-svc_${DEBVER}"_*.changes)

# lintian over the .changes (both packages). --fail-on error: warnings are
# reported, not fatal; the report is kept next to the packages for the test.
report=$OUT/lintian_$DEBVER.txt
say "lintian $changes"
rc=0
lintian --fail-on error --display-info "$changes" >"$report" 2>&1 || rc=$?
sed 's/^/    /' "$report"
if [ $rc != 0 ] || grep -q '^E: ' "$report"; then
    die "lintian found errors (see above; report in $report)"
fi
say "packages in $OUT:"
(cd "$OUT" && ls -1 ./*_"$DEBVER"_*.deb | sed 's|^\./|    |')
