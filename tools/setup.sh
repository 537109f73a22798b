#!/usr/bin/env bash
# Installs what CallerID needs (Debian's libxxhash-dev, libphonenumber-dev for the
# build pipeline's numbers, libsodium-dev for signed build directories, libmicrohttpd-dev for
# `lookup serve` (its runtime library; the header checks the server's ABI values at build time),
# curl for the server's tests, and protobuf-compiler: the tests decode the Live Caller ID export
# with protoc; python3 serves files to the network tests) when missing, then builds the package.
# Usage: bash tools/setup.sh [-c release]
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
    export PATH="$PATH:/opt/swift/usr/bin"
fi
command -v swift >/dev/null 2>&1 || { echo "error: swift not found (install Swift 6.3 or newer from swift.org)" >&2; exit 69; }

need=()
for pkg in libxxhash-dev libphonenumber-dev libsodium-dev libmicrohttpd-dev curl pkg-config protobuf-compiler python3; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
    echo "installing ${need[*]}" >&2
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi

swift build "$@"
