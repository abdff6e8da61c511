# packaging/lib.sh: shared by build-deb.sh and build-rpm.sh (sourced).
# Expects TOP (the tree) to be set.

say() { printf '%s: %s\n' "$PROG" "$*"; }
die() { printf '%s: %s\n' "$PROG" "$*" >&2; exit 1; }

# check_version V: a version both dpkg and rpm accept as an upstream version
# (a digit first; letters, digits, '.', '+', '~'; no '-', which both use to
# separate the packaging revision).
check_version() {
    [[ $1 =~ ^[0-9][A-Za-z0-9.+~]*$ ]] \
        || die "VERSION '$1' is not usable as a package version (digits, letters, . + ~)"
}

# need_tools CMD...: fail with the way out when a packaging tool is missing.
need_tools() {
    local t miss=()
    for t in "$@"; do command -v "$t" >/dev/null 2>&1 || miss+=("$t"); done
    [ ${#miss[@]} -eq 0 ] \
        || die "missing ${miss[*]}; install them with: tools/deps.sh --group build --group pkg"
}

# clean_copy DEST: the source tree as the developer sees it, without what
# builds and runs leave behind (build/, var/, t/logs, ...). In a git checkout
# that is the tracked files plus new files that are not ignored; otherwise
# everything but the known output directories.
clean_copy() {
    local dest=$1
    rm -rf "$dest"
    mkdir -p "$dest"
    if git -C "$TOP" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        (cd "$TOP" && git ls-files -z --cached --others --exclude-standard |
            while IFS= read -r -d '' f; do
                # A tracked file deleted in the work tree is not part of it.
                if [ -e "$f" ] || [ -L "$f" ]; then printf '%s\0' "$f"; fi
            done | tar --null -T - -cf -) | tar -C "$dest" -xf -
    else
        tar -C "$TOP" --exclude=./build --exclude=./build-fuzz --exclude=./var --exclude=./t/logs \
            --exclude=./.git -cf - . | tar -C "$dest" -xf -
    fi
    [ -f "$dest/Makefile" ] && [ -d "$dest/mod_svc" ] || die "the copy in $dest is incomplete"
}

# source_date: the date of the last commit (reproducible), or now.
source_date_epoch() {
    git -C "$TOP" log -1 --format=%ct 2>/dev/null || date +%s
}
