#!/usr/bin/env bash
# Builds a Debian package of CallerID: DIR/callerid_VERSION_ARCH.deb with
#   /usr/bin/lookup                      (Swift runtime and Foundation linked in)
#   /usr/lib/libcallerid.so              (Swift runtime linked in)
#   /usr/include/callerid.h  /usr/lib/pkgconfig/callerid.pc
#   /usr/share/man/man1/lookup.1.gz
#   /usr/share/bash-completion/completions/lookup  /usr/share/zsh/vendor-completions/_lookup
#   /usr/share/doc/callerid/copyright  /usr/share/doc/callerid/*.md (the documents lookup(1) names)
# Depends on the C libraries the binaries link (libxxhash0, liblz4-1, libsodium23, libc6), read
# from the dpkg database of this machine rather than guessed; Recommends libcurl4, which
# 'lookup fetch' opens with dlopen, and libmicrohttpd12, which 'lookup serve' opens with dlopen
# (no other command needs them). Check it with tools/check-deb.sh.
#
# The binaries are installed without debug information; --debug-dir DIR also writes it to
# DIR/*.debug (outside the package), linked from the binaries with .gnu_debuglink.
#
# The Maintainer field must hold a name and an email address (Debian policy 5.6.2). CallerID
# has no project address, so whoever builds the package is its maintainer: give
# --maintainer 'Name <email>', or set DEBFULLNAME and DEBEMAIL as for Debian's own tools.
# The package has no Homepage field: the project has no home page.
#
# Usage: bash tools/package-deb.sh --out DIR [--maintainer 'Name <email>'] [--debug-dir DIR]
set -euo pipefail
here=$PWD
cd "$(dirname "$0")/.."

usage="usage: bash tools/package-deb.sh --out DIR [--maintainer 'Name <email>'] [--debug-dir DIR]"
out=""
maintainer=""
debugdir=""
while [ $# -gt 0 ]; do
    case "$1" in
        --out) out="${2:?--out needs a directory}"; shift 2 ;;
        --out=*) out="${1#*=}"; shift ;;
        --maintainer) maintainer="${2:?--maintainer needs a value}"; shift 2 ;;
        --maintainer=*) maintainer="${1#*=}"; shift ;;
        --debug-dir) debugdir="${2:?--debug-dir needs a directory}"; shift 2 ;;
        --debug-dir=*) debugdir="${1#*=}"; shift ;;
        -h|--help) echo "$usage"; exit 0 ;;
        *) echo "error: unknown argument '$1'" >&2; echo "$usage" >&2; exit 64 ;;
    esac
done
[ -n "$out" ] || { echo "$usage" >&2; exit 64; }
if [ -z "$maintainer" ] && [ -n "${DEBFULLNAME:-}" ] && [ -n "${DEBEMAIL:-}" ]; then
    maintainer="$DEBFULLNAME <$DEBEMAIL>"
fi
if [ -z "$maintainer" ]; then
    echo "error: the package needs a maintainer with an email address (Debian policy 5.6.2): give --maintainer 'Name <email>' or set DEBFULLNAME and DEBEMAIL" >&2
    exit 64
fi
if ! grep -Eq '^[^<>@,]*[^<>@, ] <[^<>@ ,]+@[^<>@ ,]+>$' <<<"$maintainer"; then
    echo "error: --maintainer '$maintainer' is not 'Name <email>' (Debian policy 5.6.2: the name, then the email address in angle brackets)" >&2
    exit 64
fi
command -v dpkg-deb >/dev/null || { echo "error: dpkg-deb not found (a Debian or Ubuntu machine is needed)" >&2; exit 69; }
# Relative paths are the caller's, not the repository's.
case "$out" in /*) ;; *) out="$here/$out" ;; esac
case "$debugdir" in /*|"") ;; *) debugdir="$here/$debugdir" ;; esac

version=$(sed -n 's/.*static let library = "\(.*\)".*/\1/p' Sources/CallerID/Version.swift)
arch=$(dpkg --print-architecture)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root="$stage/callerid_${version}_${arch}"

debug_args=()
[ -z "$debugdir" ] || debug_args=(--debug-dir "$debugdir")
bash tools/install.sh --prefix /usr --destdir "$root" --static-stdlib ${debug_args[@]+"${debug_args[@]}"}
# Debian's places: compressed man pages, zsh's vendor directory.
gzip -9n "$root/usr/share/man/man1/lookup.1"
install -d "$root/usr/share/zsh/vendor-completions"
mv "$root/usr/share/zsh/site-functions/_lookup" "$root/usr/share/zsh/vendor-completions/_lookup"
rmdir "$root/usr/share/zsh/site-functions"
install -d "$root/usr/share/doc/callerid"
cat > "$root/usr/share/doc/callerid/copyright" <<COPYRIGHT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: callerid
Source: the CallerID repository

Files: *
Copyright: the CallerID authors
License: see the repository
 The Swift runtime and Foundation linked into /usr/bin/lookup and libcallerid.so are
 Apache-2.0 with the Runtime Library Exception (swift.org).
COPYRIGHT

# Dependencies: the Debian package owning each shared library the binaries load.
deps=()
for lib in $(ldd "$root/usr/bin/lookup" "$root/usr/lib/libcallerid.so" "$root/usr/lib/libcallerid-phonenumber.so" \
               | awk '/=> \//{print $3}' | sort -u); do
    real=$(readlink -f "$lib")
    pkg=$(dpkg -S "$lib" 2>/dev/null || dpkg -S "$real" 2>/dev/null || true)
    pkg=${pkg%%:*}
    [ -n "$pkg" ] && deps+=("$pkg")
done
# libsodium is opened with dlopen (signatures and SHA-256), so ldd does not show it.
deps+=(libsodium23)
depends=$(printf '%s\n' "${deps[@]}" | sort -u | paste -sd, | sed 's/,/, /g')
size=$(du -sk "$root/usr" | cut -f1)

install -d "$root/DEBIAN"
cat > "$root/DEBIAN/control" <<CONTROL
Package: callerid
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $size
Depends: $depends
Recommends: libcurl4, libmicrohttpd12 | libmicrohttpd12t64
Section: utils
Priority: optional
Description: caller-ID database engine: lookup tool and C library
 Builds directories of phone numbers into compact, checksummed, memory-mapped
 database files and answers "who is calling?" from them in well under a
 microsecond. Contains the lookup command-line tool, libcallerid.so with
 callerid.h and a pkg-config file, the lookup(1) man page and bash and zsh
 completions.
CONTROL

mkdir -p "$out"
dpkg-deb --build --root-owner-group "$root" "$out/callerid_${version}_${arch}.deb" >/dev/null
echo "$out/callerid_${version}_${arch}.deb (Depends: $depends)"
