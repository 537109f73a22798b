#!/usr/bin/env bash
# Builds at scale (BENCHMARKS.md, "Builds at scale"): `lookup build` of the study data held in
# memory against the bounded-memory build (--memory), at 4,000,000 and 40,000,000 rows; peak
# RSS and times from /usr/bin/time -v, the machine's load around each run, and whether the
# outputs are the same bytes (and the same `lookup dump`). Prints a Markdown table.
#
#   swift build -c release --product lookup && swift build -c release --product callerid-phonenumber
#   bash tools/bench_scale.sh [DATA_DIR]      # DATA_DIR keeps the generated TSV (default /tmp/callerid-scale)
#
# SCALE_ROWS="4000000 40000000" chooses the sizes; SCALE_SPARK=1 also runs the Spark job on
# local[2] at the largest size (tools/spark/setup.sh first).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
data="${1:-/tmp/callerid-scale}"
lookup="${LOOKUP:-$root/.build/release/lookup}"
[ -x "$lookup" ] || { echo "error: no $lookup: swift build -c release --product lookup first" >&2; exit 66; }
[ -x /usr/bin/time ] || { echo "error: /usr/bin/time (Debian package time) is needed for peak RSS" >&2; exit 69; }
mkdir -p "$data"
rows_list="${SCALE_ROWS:-4000000 40000000}"

load() { cut -d' ' -f1-3 /proc/loadavg; }
# run NAME ARGS…: one timed build; prints a table row.
run() {
    local name="$1" out="$2"; shift 2
    local before; before="$(load)"
    local stat="$data/time.txt"
    rm -rf "$out"
    /usr/bin/time -v "$lookup" build -o "$out" "$@" > /dev/null 2> "$stat"
    local after; after="$(load)"
    local wall user sys rss
    wall="$(grep 'Elapsed (wall clock)' "$stat" | awk '{print $NF}')"
    user="$(grep 'User time' "$stat" | awk '{print $NF}')"
    sys="$(grep 'System time' "$stat" | awk '{print $NF}')"
    rss="$(grep 'Maximum resident' "$stat" | awk '{print $NF}')"
    printf '| %s | %s | %s s | %s s | %s MB | %s | %s |\n' "$name" "$wall" "$user" "$sys" "$((rss / 1024))" "$before" "$after"
}

echo "Machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo); other builders share it (load average: 1, 5, 15 minutes)."
echo "Command: bash tools/bench_scale.sh $data (commit $(git -C "$root" rev-parse --short HEAD))"
echo
echo "| build | wall | user | sys | peak RSS | load before | load after |"
echo "|---|---|---|---|---|---|---|"
for rows in $rows_list; do
    tsv="$data/study-$rows.tsv"
    [ -s "$tsv" ] || python3 "$root/tools/gen_directory.py" --profile study --entries "$rows" --seed 1 -o "$tsv" 2>/dev/null
    label="$(printf "%'d" "$rows") rows"
    # In memory: a limit no build of this size reaches.
    run "$label, in memory (--memory 64G)" "$data/mem.cid" "$tsv" --memory 64G
    for m in ${SCALE_MEMORY:-512M 128M}; do
        run "$label, --memory $m" "$data/bounded-$m.cid" "$tsv" --memory "$m"
        cmp -s "$data/mem.cid" "$data/bounded-$m.cid" || { echo "FAIL: --memory $m wrote other bytes" >&2; exit 1; }
    done
    first="$(echo ${SCALE_MEMORY:-512M} | cut -d' ' -f1)"
    [ "$("$lookup" dump --db "$data/mem.cid" | sha256sum)" = "$("$lookup" dump --db "$data/bounded-$first.cid" | sha256sum)" ] \
        || { echo "FAIL: lookup dump differs" >&2; exit 1; }
    echo "| $label: outputs | $(stat -c %s "$data/mem.cid") bytes, identical files and \`lookup dump\` | | | | | |"
done
if [ "${SCALE_SPARK:-0}" = 1 ]; then
    rows="${rows_list##* }"
    tsv="$data/study-$rows.tsv"
    awk -F'\t' 'BEGIN{OFS="\t"} {print $1, $2, $3, "cc-" substr($1, 1, 2)}' "$tsv" > "$data/regions.tsv"
    before="$(load)"
    start=$(date +%s.%N)
    bash "$root/tools/spark/run.sh" --master 'local[2]' --lookup "$lookup" --input "$data/regions.tsv" --region-field 4 \
        --build-option=--skip-bad-rows -o "$data/spark" > "$data/spark.json" 2> "$data/spark.err"
    end=$(date +%s.%N)
    echo "| $(printf "%'d" "$rows") rows by region, Spark local[2] | $(echo "$end - $start" | bc) s | | | | $before | $(load) |"
    before="$(load)"
    start=$(date +%s.%N)
    "$lookup" build -o "$data/single/" "$data/regions.tsv" --format tsv --header no --number-field 1 --label-field 2 \
        --category-field 3 --split-by field --region-field 4 --skip-bad-rows --memory 512M > /dev/null
    end=$(date +%s.%N)
    echo "| $(printf "%'d" "$rows") rows by region, one process --memory 512M | $(echo "$end - $start" | bc) s | | | | $before | $(load) |"
fi
