#!/bin/sh
# tools/install-ui.sh DIR: installs the web UI (ui/) into DIR, as the
# packages ship it (make install-ui; docs/ui.md, "Caching").
#
# The assets (the stylesheet and the modules) go into DIR/<hash>/, the
# first 16 hex digits of the SHA-256 of their names and contents, and
# DIR/index.html names that directory. A URL under /ui/<hash>/ therefore
# never holds two versions, and conf/svc.conf lets browsers cache it for a
# year without asking again; index.html stays no-cache, so a new version is
# in use at the next page load. The modules import each other by relative
# names, which the move leaves as they are. No tool but coreutils and sed.
set -eu
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
dest=$1
cd "$(dirname "$0")/.."

assets=$(ls ui/*.css ui/js/*.js | LC_ALL=C sort)
hash=$(for f in $assets; do printf '%s\n' "$f"; cat "$f"; done | sha256sum | cut -c1-16)

for ref in '"/ui/app.css"' '"/ui/js/app.js"'; do
    grep -qF "$ref" ui/index.html || {
        echo "install-ui: ui/index.html no longer names $ref: update $0" >&2
        exit 1
    }
done

install -d -m 0755 "$dest" "$dest/$hash" "$dest/$hash/js"
for f in $assets; do
    install -m 0644 "$f" "$dest/$hash/${f#ui/}"
done
sed -e "s|\"/ui/app.css\"|\"/ui/$hash/app.css\"|" \
    -e "s|\"/ui/js/app.js\"|\"/ui/$hash/js/app.js\"|" ui/index.html >"$dest/index.html.tmp"
chmod 0644 "$dest/index.html.tmp"
mv "$dest/index.html.tmp" "$dest/index.html"
echo "install-ui: $dest/index.html, assets in $dest/$hash/"
