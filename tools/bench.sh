#!/usr/bin/env bash
# The whole comparison of BENCHMARKS.md in one command: installs what the peers need
# (Debian's libsqlite3-dev, liblmdb-dev, liblz4-dev; matplotlib from PyPI for the charts),
# builds the harness in release, generates the data sets (tools/gen_directory.py, cached in
# /tmp/callerid-bench), runs every engine in a process of its own, and rewrites
# BENCHMARKS.md, docs/benchmarks.json and the charts docs/bench-*.png.
#
#   bash tools/bench.sh            # the full run (~10 minutes on 2 cores; run it on a quiet machine)
#   bash tools/bench.sh --quick    # CI smoke run: 10k and 100k entries, < 60 s; writes nothing in the repo
#
# Other arguments go to `callerid-bench compare` (see `callerid-bench --help`), for example
# `--max-load 1.1` to repeat only runs during which other processes kept more than 1.1 cores
# busy (default 0.15). For a partial comparison that leaves BENCHMARKS.md alone, run the
# harness directly: Benchmarks/.build/release/callerid-bench compare --datasets study:1000000 --engines callerid,lmdb
set -euo pipefail
cd "$(dirname "$0")/.."

source tools/common.sh
use_swift
ensure_packages liblz4-dev libxxhash-dev libphonenumber-dev libsqlite3-dev liblmdb-dev pkg-config python3

swift build -c release --package-path Benchmarks >&2
bench=Benchmarks/.build/release/callerid-bench
# CallerID's builds read numbers with libphonenumber, as `lookup build` does: the pipeline opens
# libcallerid-phonenumber.so, a product of the main package that the harness's build does not
# make. Without it the builds take the numbering plan's slower path (the page says which ran).
swift build -c release --product callerid-phonenumber >&2
export CALLERID_PHONENUMBER_LIBRARY="$PWD/.build/release/libcallerid-phonenumber.so"

# The TSV import must stay linear whatever the number of distinct categories: 100,000 rows
# with one category, 25,000 and 100,000 with a category each (fails when a row of the second
# distinct build costs over 2x a row of the first).
"$bench" categories --rows 100000

if [ "${1:-}" = "--quick" ]; then
    # The smoke run prints its tables and leaves the repository alone.
    exec "$bench" compare "$@"
fi

python3 -c 'import matplotlib' 2>/dev/null || python3 -m pip install -q matplotlib >&2
python3 -c 'import lz4' 2>/dev/null || python3 -m pip install -q lz4 >&2 || true
echo "before: $(uptime)" >&2
"$bench" compare --markdown BENCHMARKS.md --results docs/benchmarks.json --charts docs --command "bash tools/bench.sh${*:+ $*}" "$@"
echo "after: $(uptime)" >&2
