#!/usr/bin/env bash
# A store composed of sources on the 108-region, 4,000,000-number directory of
# tools/bench_packs.sh (BENCHMARKS.md, "A store of sources"): the directory signed and served on
# 127.0.0.1 as one publisher, a block list signed by another; then the steps of a user's own
# set — subscribe to 107 regions, add one, a new version with 1% of one subscribed region's rows
# relabelled, drop a region, add the block list — each timed, with the files downloaded and
# linked, and the calls per slot of `lookup feed --from-previous` after it; then `lookup N` and a
# 100,000-line batch over the composed store against one file (tools/bench_packs.py). Not run by CI.
# Usage: bash tools/bench_sources.sh   (WORK, ENTRIES, RUNS, LOOKUP as for tools/bench_packs.sh)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="${WORK:-/tmp/callerid-bench-packs}"
ENTRIES="${ENTRIES:-4000000}"
RUNS="${RUNS:-10}"
if [ -z "${LOOKUP:-}" ]; then
    (cd "$ROOT" && swift build -c release --product lookup >/dev/null)
    LOOKUP="$ROOT/.build/release/lookup"
fi
[ -s "$WORK/bundle/manifest.json" ] || WORK="$WORK" ENTRIES="$ENTRIES" LOOKUP="$LOOKUP" PREPARE_ONLY=1 bash "$ROOT/tools/bench_packs.sh"
cd "$WORK"
TSV="study-$ENTRIES.tsv"
rm -rf web keys store-sources bundle-v2
mkdir -p web keys
"$LOOKUP" keygen -o keys/city >/dev/null
"$LOOKUP" keygen -o keys/blocks >/dev/null

# The directory as published (v1), and v2: 1% of the rows of one region relabelled, built the
# same way (the other regions' files come out byte for byte the same).
cp -r bundle web/city
"$LOOKUP" sign --key keys/city web/city >/dev/null
PREFIX=$(sed -n 10p regions.tsv | cut -f1)
awk -F'\t' -v p="$PREFIX" 'BEGIN { OFS = "\t" } index($1, p) == 1 && ++n % 100 == 0 { $2 = $2 " v2" } { print }' "$TSV" > v2.tsv
"$LOOKUP" build -o bundle-v2/ v2.tsv --split-by prefix --region-map regions.tsv --block-list separate \
    --top 100000 --weight-field 4 >/dev/null
# The block list of another publisher: every 60th number of the directory and 20,000 of its own.
awk -F'\t' 'NR % 60 == 0 { print $1 "\tSpam\tspam" }' "$TSV" > spam.tsv
python3 -c 'import sys; [print(f"{79990000000 + 7 * i}\tSpam\tspam") for i in range(20000)]' >> spam.tsv
"$LOOKUP" build -o web/blocks/ spam.tsv >/dev/null
"$LOOKUP" sign --key keys/blocks web/blocks >/dev/null

PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server "$PORT" --bind 127.0.0.1 --directory web >/dev/null 2>&1 &
SERVER=$!
trap 'kill $SERVER' EXIT
sleep 1
CITY="http://127.0.0.1:$PORT/city"
BLOCKS="http://127.0.0.1:$PORT/blocks"
REGIONS=$("$LOOKUP" fetch "$CITY" --trust keys/city.pub --list --json | python3 -c '
import json, sys
print(",".join(r["region"] for r in json.load(sys.stdin)["regions"]))')
CHANGED=$(sed -n 10p regions.tsv | cut -f2)
LAST=$(echo "$REGIONS" | tr , '\n' | grep -v -x "$CHANGED" | grep -v -x top | tail -1)
FIRST107=$(echo "$REGIONS" | tr , '\n' | grep -v -x "$LAST" | paste -sd, -)
DROP=$(echo "$REGIONS" | tr , '\n' | grep -v -x "$CHANGED" | grep -v -x "$LAST" | grep -v -x top | head -1)
echo "$(echo "$REGIONS" | tr , '\n' | wc -l) regions offered; changed in v2: $CHANGED; added later: $LAST; dropped: $DROP"

echo "| step | seconds | files fetched | files reused or linked | bytes downloaded | packs | calls per slot 1 / 2 / 3 (feed --from-previous) |"
echo "|---|---:|---:|---:|---:|---:|---|"
step() {
    local name=$1
    shift
    "$LOOKUP" "$@" --json > step.json
    "$LOOKUP" store list --store store-sources --json > list.json
    : > feeds.json
    if [ "$(python3 -c 'import json; print(json.load(open("list.json"))["generation"])')" != 1 ]; then
        for k in 1 2 3; do
            "$LOOKUP" feed --store store-sources --slot "$k/3" --from-previous --simulate --json >> feeds.json
        done
    fi
    python3 - "$name" <<'PY'
import json, sys
j, l = json.load(open("step.json")), json.load(open("list.json"))
feeds = [json.loads(x) for x in open("feeds.json") if x.strip()]
calls = " / ".join(f'{f["identification"] + f["blocking"] + f["removed_identification"] + f["removed_blocking"]:,}' for f in feeds)
packs = sum(len(r["packs"]) for s in l["sources"] for r in s["installed"])
reused = j.get("files_reused", j.get("linked_files", 0))
print(f'| {sys.argv[1]} | {float(j["seconds"]):.2f} | {j.get("files_fetched", 0)} | {reused} | {j.get("bytes_downloaded", 0):,} | {packs} | {calls or "(first load)"} |')
PY
}
step "subscribe 107 regions (3 slots)" fetch "$CITY" --store store-sources --trust keys/city.pub --source city --regions "$FIRST107" --slots 3
step "add 1 region" fetch "$CITY" --store store-sources --trust keys/city.pub --source city --regions "$LAST"
rm -rf web/city && cp -r bundle-v2 web/city && "$LOOKUP" sign --key keys/city web/city >/dev/null
step "update (1% of one region)" fetch "$CITY" --store store-sources --trust keys/city.pub --source city
step "drop 1 region" store remove --store store-sources --source city --regions "$DROP"
step "add a block list (priority 1)" fetch "$BLOCKS" --store store-sources --trust keys/blocks.pub --source blocks --priority 1

HIT=$(head -1 "$TSV" | cut -f1)
python3 "$ROOT/tools/bench_packs.py" --lookup "$LOOKUP" --one one.cid --packs store-sources \
    --hit "$HIT" --miss 10000000000 --batch numbers.txt --runs "$RUNS"
