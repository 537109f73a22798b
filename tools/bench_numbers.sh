#!/usr/bin/env bash
# Numbers as the world writes them, the large run:
#   1. agreement with libphonenumber on every region, every type, typed as people type them
#      (tools/gen_phone_samples.py, seed 13, 3 numbers per region and type; phonenumbers pinned
#      to the metadata of Debian's libphonenumber8), through the pipeline's normalizer;
#   2. throughput of `lookup build` (release) on messy national-form input, in rows per second per
#      core (user + system CPU), beside the same numbers written as +E.164 (the length-table path)
#      and read with the built-in table only.
# Usage: bash tools/bench_numbers.sh            (WORK=/tmp/... to change where files go)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="${WORK:-/tmp/callerid-bench-numbers}"
mkdir -p "$WORK"
cd "$ROOT"
export PATH="$PATH:/opt/swift/usr/bin"
python3 -c 'import phonenumbers, sys; sys.exit(phonenumbers.__version__ != "8.12.57")' 2>/dev/null \
    || pip install --quiet "phonenumbers==8.12.57"

samples="$WORK/phone-samples-large.tsv"
python3 tools/gen_phone_samples.py --seed 13 --per-type 3 -o "$samples"
echo "== agreement: $(($(wc -l < "$samples") - 1)) samples"
swift build --build-tests >/dev/null
CALLERID_PHONE_SAMPLES="$samples" swift test --skip-build --filter agreesWithLibphonenumberOnTheLargeSample 2>&1 \
    | grep -E "phone samples|passed|failed|issue" | grep -v "^.*started"

echo "== throughput (release lookup build, rows per second per core)"
swift build -c release --product lookup >/dev/null
swift build -c release --product callerid-phonenumber >/dev/null
L="$ROOT/.build/release/lookup"
# The same rows three ways: as typed (national forms, each read in its region), as +E.164, and
# 20 copies so that a run lasts seconds.
python3 - "$samples" "$WORK" <<'PY'
import csv, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1], encoding="utf-8")][1:]
with open(sys.argv[2] + "/typed.csv", "w", newline="", encoding="utf-8") as t, \
     open(sys.argv[2] + "/e164.csv", "w", newline="", encoding="utf-8") as e:
    wt, we = csv.writer(t), csv.writer(e)
    wt.writerow(["country", "phone", "name"]); we.writerow(["country", "phone", "name"])
    for copy in range(20):
        for i, (region, form, text, expected) in enumerate(rows):
            wt.writerow([region, text, f"row {i}"])
            if not expected.startswith("-"):
                we.writerow([region, "+" + expected, f"row {i}"])
PY
run() {  # name, input, extra options
    local name=$1 input=$2; shift 2
    local rows=$(($(wc -l < "$input") - 1))
    local t; t=$( { /usr/bin/time -f "%U %S" "$L" build -o "$WORK/$name.cid" "$input" --country-field country \
        --number-field phone --label-field name --max-bad-rows 100% --no-progress "$@" >/dev/null; } 2>&1 | tail -1)
    python3 -c "import sys; u, s = map(float, sys.argv[2].split()); print(f'{sys.argv[1]:<40} {int(sys.argv[3]):>9,} rows  {int(sys.argv[3]) / (u + s):>10,.0f} rows/s/core')" \
        "$name" "$t" "$rows"
}
run "typed, libphonenumber" "$WORK/typed.csv"
run "typed, built-in table" "$WORK/typed.csv" --number-rules table
run "+E.164, libphonenumber (length table)" "$WORK/e164.csv"
run "+E.164, built-in table" "$WORK/e164.csv" --number-rules table
