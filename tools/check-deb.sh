#!/usr/bin/env bash
# Checks a package made by tools/package-deb.sh: its control data (a real Maintainer, no
# placeholder), its file list (the documents lookup(1) names included), stripped binaries, that
# the unpacked `lookup` needs no Swift library and answers a query on the bundled sample from a
# temporary root, and that the man page renders; under CI (as root) also installs it with dpkg -i,
# queries the installed tool and removes it again.
# Usage: bash tools/check-deb.sh FILE.deb
set -euo pipefail
deb=${1:?usage: bash tools/check-deb.sh FILE.deb}
# A relative path is the caller's: resolved before the script moves to the repository.
case "$deb" in /*) ;; *) deb="$PWD/$deb" ;; esac
[ -f "$deb" ] || { echo "check-deb: $deb: no such file" >&2; exit 66; }
cd "$(dirname "$0")/.."
fail() { echo "check-deb: $*" >&2; exit 1; }
source tools/common.sh
command -v groff >/dev/null || ensure_packages groff-base

info=$(dpkg-deb --info "$deb")
for field in "Package: callerid" "Depends: .*libxxhash0" "Depends: .*liblz4-1" "Depends: .*libphonenumber8" "Depends: .*libsodium23" "Section: utils" \
             "Maintainer: [^<>]+ <[^<>@ ]+@[^<>@ ]+>$"; do
    grep -Eq "$field" <<<"$info" || fail "control lacks '$field'"
done
# liblz4 writes the LZ4 groups of version 3.1 files (docs/FORMAT.md 5.13): the binaries link it.
# No made-up values: the project has no home page and no address of its own.
if grep -Eq "Homepage:|@localhost" <<<"$info"; then fail "control has a placeholder: $(grep -E 'Homepage:|@localhost' <<<"$info")"; fi
listing=$(dpkg-deb --contents "$deb")
contents=$(awk '{print $6}' <<<"$listing")
for path in ./usr/bin/lookup ./usr/lib/libcallerid.so ./usr/lib/libcallerid-phonenumber.so ./usr/include/callerid.h ./usr/lib/pkgconfig/callerid.pc \
            ./usr/share/man/man1/lookup.1.gz ./usr/share/bash-completion/completions/lookup \
            ./usr/share/zsh/vendor-completions/_lookup ./usr/share/doc/callerid/copyright; do
    grep -qx "$path" <<<"$contents" || fail "package lacks $path"
done
# Every document the man page names is in the package.
for doc in $(grep -o '[A-Z][A-Z\-]*\.md' docs/man/lookup.1 | tr -d '\\' | sort -u); do
    grep -qx "./usr/share/doc/callerid/$doc" <<<"$contents" || fail "lookup(1) names $doc, which the package lacks"
done

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
dpkg-deb -x "$deb" "$root"
lookup="$root/usr/bin/lookup"
# (Output captured first: `grep -q` on a pipe ends it early, and pipefail turns that into SIGPIPE.)
deps=$(ldd "$lookup" "$root/usr/lib/libcallerid.so")
if grep -E 'libswift|libFoundation' <<<"$deps"; then fail "lookup or libcallerid.so loads Swift libraries"; fi
# Stripped binaries: no debug information, no symbol table (they stay in the build folders).
for bin in "$lookup" "$root/usr/lib/libcallerid.so" "$root/usr/lib/libcallerid-phonenumber.so"; do
    sections=$(readelf -S -W "$bin")
    if grep -Eq '\.debug_info|\.symtab' <<<"$sections"; then fail "$(basename "$bin") is not stripped ($(du -k "$bin" | cut -f1) KB)"; fi
done
# Linked at a fixed address (tools/install.sh without --pie): no start-up relocation of its image.
elf=$(readelf -h "$lookup")
grep -E 'Type: +EXEC' <<<"$elf" >/dev/null || fail "lookup is not a fixed-address executable: $(grep Type: <<<"$elf")"
# Run it with no Swift on the library path: the bundled sample, built and queried.
sample=samples/sample.tsv
env -i PATH=/usr/bin:/bin "$lookup" build -o "$root/sample.cid" "$sample" >/dev/null
number=$(awk -F'\t' '!/^#/ && NF { print $1; exit }' "$sample")
answer=$(env -i PATH=/usr/bin:/bin "$lookup" "$number" --db "$root/sample.cid")
[ "$(cut -f1 <<<"$answer")" = "$(tr -dc 0-9 <<<"$number")" ] || fail "query of $number answered '$answer'"
env -i PATH=/usr/bin:/bin "$lookup" verify "$root/sample.cid" >/dev/null || fail "verify of the sample failed"
# libphonenumber reached from ../lib: a national form read in its country.
printf 'phone,name\n8 (913) 123-45-67,Store\n' > "$root/national.csv"
env -i PATH=/usr/bin:/bin "$lookup" build -o "$root/national.cid" "$root/national.csv" --country RU --number-rules libphonenumber \
    >/dev/null || fail "lookup build with libphonenumber failed"
national=$(env -i PATH=/usr/bin:/bin "$lookup" 79131234567 --db "$root/national.cid") || fail "the national form was not stored as +7 913 123-45-67"
# The man page renders (groff is what man(1) runs).
page=$(zcat "$root/usr/share/man/man1/lookup.1.gz")
warnings=$(groff -man -Tutf8 -ww <<<"$page" 2>&1 >/dev/null)
[ -z "$warnings" ] || fail "groff warnings in lookup.1: $warnings"
rendered=$(groff -man -Tutf8 <<<"$page" 2>/dev/null)
grep -q "lookup diff" <<<"$rendered" || fail "man page renders without its commands"
# Installed for real (CI only, as root, on a machine without the package): dpkg unpacks it into
# /usr, the installed tool answers from the system path, and removal leaves nothing behind.
installed=""
if [ "${CI:-}" = true ] && [ "$(id -u)" -eq 0 ] && ! dpkg -s callerid >/dev/null 2>&1; then
    dpkg -i "$deb" >/dev/null || fail "dpkg -i failed"
    answer=$(/usr/bin/lookup "$number" --db "$root/sample.cid") || { dpkg -r callerid >/dev/null; fail "installed lookup did not answer"; }
    pc=-lcallerid
    if command -v pkg-config >/dev/null; then pc=$(pkg-config --libs callerid 2>&1 || true); fi
    dpkg -r callerid >/dev/null || fail "dpkg -r failed"
    grep -q -- "-lcallerid" <<<"$pc" || fail "pkg-config does not know the installed callerid: $pc"
    [ ! -e /usr/bin/lookup ] || fail "dpkg -r left /usr/bin/lookup"
    installed=", installed with dpkg -i and removed"
fi
echo "check-deb: ok ($(basename "$deb"): $(wc -l <<<"$contents") paths, lookup answered $number, ldd without Swift, not PIE$installed)"
