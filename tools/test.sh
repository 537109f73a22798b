#!/usr/bin/env bash
# Sets up and runs every test (XCTest and Swift Testing, one `swift test`); extra arguments go
# to `swift test` (for example --filter CLITests).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh --build-tests
swift test "$@"
