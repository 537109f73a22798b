#!/usr/bin/env bash
# Runs the whole test suite under a sanitizer: `swift test --sanitize=address|thread`.
#
#   bash tools/sanitize.sh address    # AddressSanitizer (+ LeakSanitizer), ~N min on 2 cores
#   bash tools/sanitize.sh thread     # ThreadSanitizer
#
# Each sanitizer builds into its own directory (.build/sanitize-KIND), so the normal debug
# build is left alone. The `lookup` binary the CLI tests run is instrumented too. The runtime
# libraries (libclang_rt.asan/tsan) ship with the Swift toolchain; nothing else is needed.
# Extra arguments go to `swift test` (for example --filter CorruptionTests). CALLERID_TRAITS
# (for example PortableCodecs) builds and tests with those package traits, in a directory of its own.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/opt/swift/usr/bin"

kind=${1:?usage: tools/sanitize.sh address|thread [swift test arguments]}
shift
# Swift's crash backtracer reads the crashed process's memory with memcpy, which the
# sanitizer intercepts and reports in turn: the process then hangs instead of exiting.
export SWIFT_BACKTRACE=enable=no
case "$kind" in
    address)
        # The first report ends the process with an error, so a finding fails the run; leaks
        # are checked at exit (XCTest's own bookkeeping is suppressed, see the file).
        export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1}
        export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tools/lsan-suppressions.txt:print_suppressions=0}
        ;;
    thread)
        export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
        ;;
    *) echo "error: unknown sanitizer '$kind' (address or thread)" >&2; exit 64 ;;
esac
export CALLERID_SANITIZER=$kind

if ! [ -e /usr/include/xxhash.h ]; then
    bash tools/setup.sh
fi

scratch=.build/sanitize-$kind
traits=()
if [ -n "${CALLERID_TRAITS:-}" ]; then
    traits=(--traits "$CALLERID_TRAITS")
    scratch=$scratch-$(echo "$CALLERID_TRAITS" | tr ',' '-')
fi

# The C ABI tests compile C programs against libcallerid.so and load it from Python. An
# instrumented library needs the sanitizer runtime in the process: `cc`/`c++` on PATH become
# the toolchain's clang with the same -fsanitize, and `python3` preloads the shared runtime.
toolchain=$(dirname "$(command -v swift)")
short=$([ "$kind" = address ] && echo asan || echo tsan)
runtime=$(find "$toolchain/../lib" -name "libclang_rt.$short-x86_64.so" | head -1)
wrappers=$PWD/$scratch/tool-wrappers
mkdir -p "$wrappers"
# (The TSan runtime intercepts libdispatch, so a thread-sanitized program links it and the
# blocks runtime too, and Python preloads them with it.)
swiftlib=$(cd "$toolchain/../lib/swift/linux" && pwd)
extra=$([ "$kind" = thread ] && echo "-L$swiftlib -ldispatch -lBlocksRuntime -Wl,-rpath,$swiftlib" || true)
preload=$runtime
[ "$kind" = thread ] && preload="$runtime $swiftlib/libdispatch.so $swiftlib/libBlocksRuntime.so"
for tool in cc:clang c++:clang++; do
    printf '#!/bin/sh\nexec "%s/%s" -fuse-ld=bfd -Wno-unused-command-line-argument -fsanitize=%s "$@" %s\n' \
        "$toolchain" "${tool#*:}" "$kind" "$extra" > "$wrappers/${tool%%:*}"
done
# The interpreter itself, not a shim script (the runtime would be preloaded into a shell).
python=$(python3 -c 'import sys; print(sys.executable)')
# (Python itself is not leak-clean at exit: leak checking is off inside it; options given
# later win, so detect_leaks=0 goes last.)
printf '#!/bin/sh\nLD_PRELOAD="%s" ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" exec "%s" "$@"\n' \
    "$preload" "$python" > "$wrappers/python3"
chmod +x "$wrappers"/*
export PATH="$wrappers:$PATH"
# The tests resolve python3 to the interpreter once (to skip version-manager shims); this tells
# them to run the wrapper instead.
export CALLERID_PYTHON="$wrappers/python3"
started=$(date +%s)
swift build --build-tests --sanitize="$kind" "${traits[@]}" --scratch-path "$scratch"
built=$(date +%s)
if [[ ",${CALLERID_TRAITS:-}," == *,PortableCodecs,* ]]; then
    bash tools/check-portable-links.sh "$(swift build --sanitize="$kind" "${traits[@]}" --scratch-path "$scratch" --show-bin-path)"
fi
status=0
swift test --skip-build --sanitize="$kind" "${traits[@]}" --scratch-path "$scratch" "$@" || status=$?
finished=$(date +%s)
echo "sanitize $kind: build $((built - started)) s, tests $((finished - built)) s, exit $status"
exit $status
