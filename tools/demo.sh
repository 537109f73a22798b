#!/usr/bin/env bash
# Sets up, builds the bundled sample directory into a database and looks numbers up.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh -c release
lookup=.build/release/lookup
out=${TMPDIR:-/tmp}/callerid-sample.cid

set -x
"$lookup" build -o "$out" samples/sample.tsv
"$lookup" verify "$out"
"$lookup" info "$out"
number=$(head -n 1 samples/sample.tsv | cut -f1)
"$lookup" "+$number" --db "$out"
"$lookup" "$number" --db "$out" --json
printf '%s\n79990000000\n' "$number" | "$lookup" --db "$out" -
"$lookup" dump --db "$out" --action block | head -n 5
