#!/usr/bin/env bash
# Stable slots: calls per slot of the incremental request that follows an install, for each
# kind of step, with two `lookup` binaries (BENCHMARKS.md, "Stable slots").
#
#   - a 108-region directory: the study profile's 4,000,000 rows (gen_directory.py --profile
#     study --seed 5) split by the 107 four-digit prefixes holding the most rows, plus "rest";
#   - a block list built separately (40,000 spam numbers over the whole number line: half of
#     them numbers of the directory, half new), added to the build directory as one more file;
#   - steps, each from a fresh store with 3 slots of 1,999,999: one region added, one region
#     removed, one region changed (1% of its rows: a third dropped, a third relabelled, a third
#     new), the block-list pack added;
#   - after each step, `lookup feed --store S --slot K/3 --from-previous --simulate --json` per
#     slot: its calls (additions, removals and "remove all"), mode and seconds.
#
# Usage: bash tools/bench_slots.sh [AFTER_LOOKUP] [BEFORE_LOOKUP]
#   AFTER_LOOKUP   default .build/release/lookup (swift build -c release first)
#   BEFORE_LOOKUP  a lookup built from an earlier commit (balanced re-split at every install);
#                  optional
#   WORK=/tmp/...  where the data and stores go (default /tmp/callerid-bench-slots)
# The data (about 140 MB of TSV, 5 builds) stay in WORK and are reused by the next run.
# Not part of CI.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
AFTER="$(realpath "${1:-$ROOT/.build/release/lookup}")"
BEFORE="${2:+$(realpath "$2")}"
WORK="${WORK:-/tmp/callerid-bench-slots}"
mkdir -p "$WORK"
cd "$WORK"
[ -x "$AFTER" ] || { echo "no $AFTER: swift build -c release first" >&2; exit 66; }

if [ ! -s study-4000000.tsv ]; then
    python3 "$ROOT/tools/gen_directory.py" --entries 4000000 --profile study --seed 5 -o study-4000000.tsv
fi

# The region map, the region the steps add, remove and change (the 54th largest), the
# variants of the rows, and the block list.
python3 - <<'PY'
import collections, random
rows = open("study-4000000.tsv", encoding="utf-8").read().splitlines(keepends=True)
count = collections.Counter(r[:4] for r in rows)
top = [p for p, _ in count.most_common(107)]
with open("regions.tsv", "w") as f:
    for p in sorted(top):
        f.write(f"{p}\tp{p}\n")
    f.write("*\trest\n")
x = top[53]
open("region.txt", "w").write(f"p{x} {count[x]}\n")
with open("without.tsv", "w", encoding="utf-8") as f:
    f.writelines(r for r in rows if not r.startswith(x))
rng = random.Random(7)
with open("changed.tsv", "w", encoding="utf-8") as f:
    for r in rows:
        if r.startswith(x):
            u = rng.random()
            if u < 0.0033:
                continue
            if u < 0.0066:
                p = r.rstrip("\n").split("\t"); p[1] += " 2"; r = "\t".join(p) + "\n"
            if u > 0.9967:
                f.write(f"{int(r.split(chr(9))[0]) + 1}\tNew business\n")
        f.write(r)
numbers = [int(r.split("\t", 1)[0]) for r in rows]
rng = random.Random(11)
blocks = set(rng.sample(numbers, 20000))
while len(blocks) < 40000:
    blocks.add(rng.choice(numbers) + rng.randrange(1, 1000))
with open("blocks.tsv", "w") as f:
    for n in sorted(blocks):
        f.write(f"{n}\t\tspam\n")
PY
read -r REGION REGION_ROWS < region.txt

build() {   # build DIR INPUT: the 108 regions
    [ -s "$1/manifest.json" ] || "$AFTER" build -o "$1/" "$2" --split-by prefix --region-map regions.tsv >/dev/null
}
build full study-4000000.tsv
build without without.tsv
build changed changed.tsv
[ -s blocklist/manifest.json ] || "$AFTER" build -o blocklist/ blocks.tsv >/dev/null
# full + the block list as one more file of the build directory.
if [ ! -s withblocks/manifest.json ]; then
    rm -rf withblocks && mkdir withblocks
    ln full/*.cid withblocks/
    python3 - <<'PY'
import json, os, shutil
m = json.load(open("full/manifest.json"))
b = json.load(open("blocklist/manifest.json"))
for f in b["files"]:
    shutil.copy(os.path.join("blocklist", f["file"]), os.path.join("withblocks", "blocklist-" + f["file"]))
    f["file"] = "blocklist-" + f["file"]
    f["region"] = "blocklist"
    m["files"].append(f)
json.dump(m, open("withblocks/manifest.json", "w"), indent=1)
PY
fi
echo "regions: $(($(wc -l < regions.tsv))); the steps' region: $REGION ($REGION_ROWS rows); block list: $(wc -l < blocks.tsv) numbers"

# step NAME FROM TO BINARY LABEL: a fresh store with FROM, then TO; one line per slot.
step() {
    local name=$1 from=$2 to=$3 lookup=$4 label=$5
    local store="$WORK/store-$label"
    rm -rf "$store"
    "$lookup" install --store "$store" "$from" --slots 3 >/dev/null
    "$lookup" install --store "$store" "$to" --json > install.json
    local split
    split=$(python3 -c 'import json; j = json.load(open("install.json")); print((j.get("split") or "balanced (every install)") + " | %.2f" % j["seconds"])')
    for s in 1 2 3; do
        "$lookup" feed --store "$store" --slot "$s/3" --from-previous --simulate --json > feed.json
        python3 - "$name" "$label" "$s" "$split" <<'PY'
import json, sys
name, label, slot, split = sys.argv[1:]
i = json.load(open("install.json"))["slots"][int(slot) - 1]
f = json.load(open("feed.json"))
calls = f.get("calls")
if calls is None:   # a binary whose feed report has no "calls": count them
    calls = f["identification"] + f["blocking"] + f["removed_identification"] + f["removed_blocking"] + (2 if f["mode"] == "full" else 0)
changed = i.get("content_changed")
print(f"| {name} | {label} | {slot} | {i['identify'] + i['block']:,} | {split} | "
      f"{'' if changed is None else ('yes' if changed else 'no')} | {calls:,} | {f['mode']} | {f['seconds']:.2f} |")
PY
    done
}

echo
echo "| step | binary | slot | entries after | split | install s | content changed | calls | mode | feed s |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for binary in before after; do
    if [ "$binary" = before ]; then lookup="$BEFORE"; else lookup="$AFTER"; fi
    [ -n "$lookup" ] || continue
    step "region added ($REGION)" without full "$lookup" "$binary"
    step "region removed ($REGION)" full without "$lookup" "$binary"
    step "region changed ($REGION, 1%)" full changed "$lookup" "$binary"
    step "block-list pack added" full withblocks "$lookup" "$binary"
done
