#!/usr/bin/env bash
# Queries over many packs (BENCHMARKS.md, "Queries over many packs"): a 4,000,000-number
# directory (study profile) built into 217 packs — 108 regions by number prefix, each with a
# separate block list, and a top-100,000 set (see LAYOUT below) — and into one file of the
# same rows; then `lookup NUMBER` and a 100,000-line `lookup -` over the build directory, over a store it was
# installed into, and over the one file, side by side (tools/bench_packs.py). Not run by CI.
# Usage: bash tools/bench_packs.sh      (WORK=/tmp/... ENTRIES=... RUNS=... LAYOUT=areas|catch-all
#        to change; LOOKUP=path/to/lookup to use a built binary instead of building the release one;
#        PREPARE_ONLY=1 to make the data and stop)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="${WORK:-/tmp/callerid-bench-packs}"
ENTRIES="${ENTRIES:-4000000}"
RUNS="${RUNS:-20}"
mkdir -p "$WORK"
if [ -z "${LOOKUP:-}" ]; then
    (cd "$ROOT" && swift build -c release --product lookup >/dev/null)
    LOOKUP="$ROOT/.build/release/lookup"
fi
cd "$WORK"

if [ ! -s "study-$ENTRIES.tsv" ]; then
    python3 "$ROOT/tools/gen_directory.py" --profile study --entries "$ENTRIES" --seed 5 --weights -o "study-$ENTRIES.tsv"
fi
# Regions (LAYOUT=areas, the default): the three-digit prefixes of the data, the largest cut
# into their four-digit prefixes, until there are 108 — disjoint, like area codes. LAYOUT=catch-all:
# the 107 four-digit prefixes holding the most rows and '*' for the rest, a region whose numbers
# span the whole number line. 100,000 query lines: half numbers of the data, half numbers near
# them (mostly absent).
python3 - "study-$ENTRIES.tsv" "${LAYOUT:-areas}" <<'PY'
import collections, random, sys
c3, c4 = collections.Counter(), collections.Counter()
numbers = []
with open(sys.argv[1]) as f:
    for line in f:
        c3[line[:3]] += 1
        c4[line[:4]] += 1
        numbers.append(int(line.split("\t", 1)[0]))
if sys.argv[2] == "catch-all":
    regions = {p for p, _ in c4.most_common(107)}
else:
    regions = set(c3)
    children = lambda p: {q for q in c4 if q.startswith(p)}
    while len(regions) < 108:
        fits = [p for p in regions if len(p) == 3 and 1 < len(children(p)) <= 108 - len(regions) + 1]
        if not fits:
            break
        largest = max(fits, key=lambda p: c3[p])
        regions = (regions - {largest}) | children(largest)
with open("regions.tsv", "w") as out:
    for p in sorted(regions):
        out.write(f"{p}\tr{p}\n")
    out.write("*\tworld\n")
rng = random.Random(7)
with open("numbers.txt", "w") as out:
    for _ in range(50000):
        n = rng.choice(numbers)
        out.write(f"{n}\n{n + rng.randint(1, 999)}\n")
PY
rm -rf bundle store
"$LOOKUP" build -o bundle "study-$ENTRIES.tsv" --split-by prefix --region-map regions.tsv --block-list separate \
    --top 100000 --weight-field 4 >/dev/null
"$LOOKUP" build -o one.cid "study-$ENTRIES.tsv" --weight-field 4 --max-entries "$((ENTRIES + 1))" >/dev/null
"$LOOKUP" install --store store bundle --slots 3 >/dev/null
echo "packs: $(ls bundle/*.cid | wc -l), manifest $(stat -c %s bundle/manifest.json) bytes"
# PREPARE_ONLY=1: the data only (tools/bench_sources.sh starts from it).
[ "${PREPARE_ONLY:-}" = 1 ] && exit 0
HIT=$(head -1 "study-$ENTRIES.tsv" | cut -f1)
python3 "$ROOT/tools/bench_packs.py" --lookup "$LOOKUP" --one one.cid --packs bundle --packs store \
    --hit "$HIT" --miss 10000000000 --batch numbers.txt --runs "$RUNS"
