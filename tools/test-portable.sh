#!/usr/bin/env bash
# Builds and runs the whole test suite with the PortableCodecs trait (the package's own XXH3
# in C, as on iOS and macOS), in its own scratch directory so the default build is left alone,
# then checks that libcallerid.so and lookup link no system codec library.
# Usage: bash tools/test-portable.sh [swift test arguments, e.g. --filter PortableCodecTests]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/opt/swift/usr/bin"
scratch=.build-portable

swift build --build-tests --traits PortableCodecs --scratch-path "$scratch"
bin=$(swift build --traits PortableCodecs --scratch-path "$scratch" --show-bin-path)
bash tools/check-portable-links.sh "$bin"
swift test --skip-build --traits PortableCodecs --scratch-path "$scratch" "$@"
