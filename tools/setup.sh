#!/usr/bin/env bash
# Installs what CallerID needs (Debian's libxxhash-dev, liblz4-dev for writing LZ4 label groups, libphonenumber-dev for the
# build pipeline's numbers, libsodium-dev for signed build directories, libmicrohttpd-dev for
# `lookup serve` (its runtime library; the header checks the server's ABI values at build time),
# curl and openssl for the server's tests (HTTPS with a certificate made at test time), and
# protobuf-compiler: the tests decode the Live Caller ID export
# with protoc; python3 serves files to the network tests) when missing, then builds the package.
# Usage: bash tools/setup.sh [-c release]
set -euo pipefail
cd "$(dirname "$0")/.."

source tools/common.sh
use_swift
ensure_packages libxxhash-dev liblz4-dev libphonenumber-dev libsodium-dev libmicrohttpd-dev curl openssl pkg-config protobuf-compiler python3

swift build "$@"
