#!/usr/bin/env bash
# Checks that a build made with the PortableCodecs trait links no system codec library
# (libxxhash, and liblz4, which writes LZ4 label groups: such a build reads them with the
# package's own decoder and writes the symbol-coded labels):
# libcallerid.so and lookup in BIN_DIR (`swift build --traits PortableCodecs --show-bin-path`).
# Used by tools/test-portable.sh and by CI (.ci/run), which runs the sanitized suites with that trait.
#
#   bash tools/check-portable-links.sh BIN_DIR
set -euo pipefail
bin=${1:?usage: tools/check-portable-links.sh BIN_DIR}
for f in "$bin/libcallerid.so" "$bin/lookup"; do
    [ -e "$f" ] || { echo "error: no $f" >&2; exit 66; }
    if ldd "$f" | grep -E 'liblz4|libxxhash'; then
        echo "error: $f links a system codec library with --traits PortableCodecs" >&2
        exit 1
    fi
done
echo "portable: libcallerid.so and lookup link no system codec library"
