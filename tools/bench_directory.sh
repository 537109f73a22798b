#!/usr/bin/env bash
# Call Directory loader benchmark (release build), the figures of docs/CALL-DIRECTORY.md:
#   - full merged load of 3 regions totalling ENTRIES (default 4,200,000) entries, one stream
#     and per slot (3 extensions of 1,999,999): entries/s and heap peak (streaming checker);
#   - a second version differing by 1% of the rows: delta size and time (`lookup diff`, and the
#     incremental requests of each slot in the CallKit simulator, `feed --from-previous`).
# Usage: bash tools/bench_directory.sh            (WORK=/tmp/... ENTRIES=... to change)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="${WORK:-/tmp/callerid-bench-directory}"
ENTRIES="${ENTRIES:-4200000}"
mkdir -p "$WORK"
cd "$ROOT"
swift build -c release --product lookup >/dev/null
L="$ROOT/.build/release/lookup"
cd "$WORK"

if [ ! -s "v1-$ENTRIES.tsv" ]; then
    python3 "$ROOT/tools/gen_directory.py" --entries "$ENTRIES" --profile study --seed 5 -o "v1-$ENTRIES.tsv"
fi
# Version 2: 1% of the rows differ (a third dropped, a third relabelled, a third new numbers).
python3 - "v1-$ENTRIES.tsv" "v2-$ENTRIES.tsv" <<'PY'
import random, sys
random.seed(7)
with open(sys.argv[1]) as src, open(sys.argv[2], "w") as out:
    for line in src:
        r = random.random()
        if r < 0.0033:
            continue
        if r < 0.0066:
            p = line.rstrip("\n").split("\t"); p[1] += " 2"; line = "\t".join(p) + "\n"
        out.write(line)
        if r > 0.9967:
            out.write(f"{int(line.split(chr(9))[0]) + 1}\tNew business\n")
PY
printf '7\tru\n8\tkr\n*\tworld\n' > regions.tsv
rm -rf b1 b2 store
"$L" build -o b1 "v1-$ENTRIES.tsv" --split-by prefix --region-map regions.tsv --max-entries 3000000 >/dev/null
"$L" build -o b2 "v2-$ENTRIES.tsv" --split-by prefix --region-map regions.tsv --max-entries 3000000 >/dev/null

echo "== install v1 (3 slots)"
"$L" install --store store b1 --slots 3
echo "== full merged load, one stream (streaming checker)"
"$L" feed --store store --slot 1/1 --max-entries 10000000 --json
echo "== per slot"
for s in 1 2 3; do "$L" feed --store store --slot "$s/3" --json; done
echo "== per slot, CallKit simulator, chunks of 50,000"
for s in 1 2 3; do "$L" feed --store store --slot "$s/3" --chunk 50000 --simulate --json; done
echo "== lookup diff v1 v2"
start=$(date +%s.%N)
"$L" diff b1 b2 > delta.tsv
end=$(date +%s.%N)
echo "changes: $(wc -l < delta.tsv) ($(cut -f1,2 delta.tsv | sort | uniq -c | tr -s ' ' | paste -sd, -)) in $(echo "$end - $start" | bc) s"
echo "== install v2, incremental requests per slot"
"$L" install --store store b2
for s in 1 2 3; do "$L" feed --store store --slot "$s/3" --from-previous --json; done
