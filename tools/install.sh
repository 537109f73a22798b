#!/usr/bin/env bash
# Builds the `lookup` tool and libcallerid.so (release) and installs them with callerid.h and callerid.pc:
#   PREFIX/bin/lookup (the Swift runtime and Foundation linked in: `ldd` shows only glibc and the
#   Debian C libraries, so it runs on a machine without Swift; linked at a fixed address, see --pie)
#   PREFIX/lib/libcallerid.so  PREFIX/include/callerid.h  PREFIX/lib/pkgconfig/callerid.pc
#   PREFIX/lib/libcallerid-phonenumber.so (libphonenumber for `lookup build`, loaded on demand)
# so that `cc app.c $(pkg-config --cflags --libs callerid)` works (the .pc adds an rpath),
# and the man page, shell completions and documents of the `lookup` tool:
#   PREFIX/share/man/man1/lookup.1
#   PREFIX/share/bash-completion/completions/lookup  PREFIX/share/zsh/site-functions/_lookup
#   PREFIX/share/doc/callerid/{FORMAT,PIPELINE,CALL-DIRECTORY,LIVE-CALLER-ID,C-ABI,SCALE}.md (the man page's SEE ALSO)
# The installed binaries are stripped (no debug information, no symbol table: `lookup` goes from
# 76 MB to 58 MB, most of the rest being Foundation's ICU data); --debug-dir keeps both in
# separate files, which gdb and Swift's backtracer find through .gnu_debuglink.
#
# Usage: bash tools/install.sh [--prefix DIR] [--static-stdlib] [--destdir DIR] [--pie] [--debug-dir DIR]
#   --prefix DIR      install root (default /usr/local)
#   --static-stdlib   link the Swift runtime into the .so, so that the target machine needs no
#                     Swift installation (built in .build/static-stdlib, a separate scratch path)
#   --destdir DIR     stage under DIR (the .pc still says PREFIX), for packaging
#   --pie             link `lookup` as a position-independent executable. By default it is not:
#                     with Foundation linked in, a PIE carries ~74,000 relative relocations that
#                     the loader applies at every start, copying ~270 pages, a third of a
#                     one-number lookup's time (BENCHMARKS.md, "Start-up"). Without PIE the
#                     binary's own image has no address randomization (its libraries, stack,
#                     heap and the mapped database still do); --pie trades that start-up for it.
#   --debug-dir DIR   also write the debug information of each binary to DIR/NAME.debug (not
#                     under --destdir: packages leave it out), linked from the binary with a
#                     .gnu_debuglink section so that gdb finds it (set debug-file-directory to DIR)
set -euo pipefail
here=$PWD
cd "$(dirname "$0")/.."

prefix=/usr/local
destdir=""
static=0
pie=0
debugdir=""
usage() { echo "usage: bash tools/install.sh [--prefix DIR] [--static-stdlib] [--destdir DIR] [--pie] [--debug-dir DIR]"; }
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) prefix="${2:?--prefix needs a value}"; shift 2 ;;
        --prefix=*) prefix="${1#*=}"; shift ;;
        --destdir) destdir="${2:?--destdir needs a value}"; shift 2 ;;
        --destdir=*) destdir="${1#*=}"; shift ;;
        --static-stdlib) static=1; shift ;;
        --pie) pie=1; shift ;;
        --debug-dir) debugdir="${2:?--debug-dir needs a value}"; shift 2 ;;
        --debug-dir=*) debugdir="${1#*=}"; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "error: unknown argument '$1'" >&2; usage >&2; exit 64 ;;
    esac
done
# Relative paths are the caller's, not the repository's.
case "$prefix" in /*) ;; *) prefix="$here/$prefix" ;; esac
case "$destdir" in /*|"") ;; *) destdir="$here/$destdir" ;; esac
case "$debugdir" in /*|"") ;; *) debugdir="$here/$debugdir" ;; esac

source tools/common.sh
use_swift

scratch=.build
flags=()
if [ "$static" = 1 ]; then
    scratch=.build/static-stdlib
    flags=(-Xswiftc -static-stdlib)
fi
swift build -c release --product callerid --scratch-path "$scratch" ${flags[@]+"${flags[@]}"}
lib="$scratch/release/libcallerid.so"
[ -f "$lib" ] || { echo "error: $lib was not built" >&2; exit 70; }
# The pipeline's libphonenumber interface, loaded by `lookup build` with dlopen from ../lib.
swift build -c release --product callerid-phonenumber
phonelib=.build/release/libcallerid-phonenumber.so
[ -f "$phonelib" ] || { echo "error: $phonelib was not built" >&2; exit 70; }

# The command-line tool, always self-contained (start-up cost); no $ORIGIN run path, so the loader
# does not search the binary's own folder for libxxhash and the others at every start; not a PIE
# unless --pie (see above). Its own scratch path: its link flags differ from the library's.
tool_flags=()
[ "$pie" = 1 ] || tool_flags=(-Xswiftc -Xclang-linker -Xswiftc -no-pie)
swift build -c release --product lookup --static-swift-stdlib --disable-local-rpath \
    --scratch-path .build/tool ${tool_flags[@]+"${tool_flags[@]}"}
tool=.build/tool/release/lookup
[ -x "$tool" ] || { echo "error: $tool was not built" >&2; exit 70; }

version=$(sed -n 's/.*static let library = "\(.*\)".*/\1/p' Sources/CallerID/Version.swift)
root="$destdir$prefix"
install -d "$root/bin" "$root/lib/pkgconfig" "$root/include"
install -m 0755 "$tool" "$root/bin/lookup"
install -m 0755 "$lib" "$root/lib/libcallerid.so"
install -m 0755 "$phonelib" "$root/lib/libcallerid-phonenumber.so"
# Stripped: the debug information and symbol table (18 MB of the 76 MB `lookup`) serve
# debuggers, not users; the builds in .build keep them, and --debug-dir copies them out first.
for installed in "$root/bin/lookup" "$root/lib/libcallerid.so" "$root/lib/libcallerid-phonenumber.so"; do
    debugfile=""
    if [ -n "$debugdir" ]; then
        install -d "$debugdir"
        debugfile="$debugdir/$(basename "$installed").debug"
        objcopy --only-keep-debug "$installed" "$debugfile"
        chmod 0644 "$debugfile"
    fi
    case "$installed" in
        *.so) strip --strip-unneeded "$installed" ;;   # keeps the exported (dynamic) symbols
        *) strip --strip-all "$installed" ;;
    esac
    [ -z "$debugfile" ] || objcopy --add-gnu-debuglink="$debugfile" "$installed"
done
install -m 0644 include/callerid.h "$root/include/callerid.h"
sed -e "s|@PREFIX@|$prefix|g" -e "s|@VERSION@|${version:-0.0.0}|g" tools/callerid.pc.in > "$root/lib/pkgconfig/callerid.pc"

# The man page and the completion scripts of `lookup`, where man(1), bash-completion and zsh look.
install -d "$root/share/man/man1" "$root/share/bash-completion/completions" "$root/share/zsh/site-functions"
install -m 0644 docs/man/lookup.1 "$root/share/man/man1/lookup.1"
install -m 0644 completions/lookup.bash "$root/share/bash-completion/completions/lookup"
install -m 0644 completions/_lookup "$root/share/zsh/site-functions/_lookup"
# The documents the man page's SEE ALSO names, where a user who has only the package finds them.
install -d "$root/share/doc/callerid"
for doc in FORMAT PIPELINE CALL-DIRECTORY LIVE-CALLER-ID C-ABI SERVE SCALE REPORTS; do
    install -m 0644 "docs/$doc.md" "$root/share/doc/callerid/$doc.md"
done

echo "installed lookup $version into $root/bin (Swift runtime linked in$([ "$pie" = 1 ] && echo ", PIE"))"
echo "installed libcallerid.so $version into $root/lib ($([ "$static" = 1 ] && echo "Swift runtime linked in" || echo "needs the Swift runtime at run time"))"
echo "installed lookup(1) into $root/share/man/man1, bash and zsh completions into $root/share, documents into $root/share/doc/callerid"
[ -z "$debugdir" ] || echo "debug information of the three binaries in $debugdir"
echo "build against it with:"
echo "  PKG_CONFIG_PATH=$prefix/lib/pkgconfig cc app.c \$(pkg-config --cflags --libs callerid)"
