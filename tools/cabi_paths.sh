#!/usr/bin/env bash
# Instructions of the C ABI's scan and lookup paths (callgrind), for comparing two builds on a
# machine too busy for wall-clock figures (BENCHMARKS.md, "Instruction counts").
#
#   swift build -c release --product callerid
#   bash tools/cabi_paths.sh DB NUMBERS_FILE [LIB_DIR]   # LIB_DIR: default .build/release
#
# Prints the instructions of 20 full scans (cid_cursor_next_batch) and of 20 passes of cid_lookup
# over NUMBERS_FILE, each with the per-entry or per-lookup figure. Needs valgrind and a C compiler.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
db="$1"; numbers="$2"; lib="${3:-$root/.build/release}"
command -v valgrind > /dev/null || { echo "error: valgrind is needed (Debian: apt-get install valgrind)" >&2; exit 69; }
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
# callgrind cannot read the debug information of a Swift shared library: a stripped copy.
cp "$lib/libcallerid.so" "$work/" && strip --strip-debug "$work/libcallerid.so"
cc -std=c11 -O2 -I"$root/include" "$root/tools/cabi_paths.c" -L"$work" -Wl,-rpath,"$work" -lcallerid -o "$work/cabi_paths"
count() { valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" "$work/cabi_paths" "$db" "$@" 2>&1 | sed -n 's/.*I *refs: *//p' | tr -d ,; }
base=$(count 0 "$numbers" 0)
scan=$(count 20 "$numbers" 0)
look=$(count 0 "$numbers" 20)
entries=$("$work/cabi_paths" "$db" 1 "$numbers" 0 | awk '{print $2}')
lookups=$(( $(grep -c . "$numbers") * 20 ))
echo "scan:    $(( scan - base )) instructions for 20 scans of $entries entries ($(( (scan - base) / (20 * entries) )) per entry)"
echo "lookups: $(( look - base )) instructions for $lookups lookups ($(( (look - base) / lookups )) per lookup)"
