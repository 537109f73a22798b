#!/usr/bin/env bash
# Reports (BENCHMARKS.md, "Reports"): `lookup reports` against DuckDB running the same score in
# SQL (tools/reports_duckdb.py) on the same generated CSV, in turn (CallerID, DuckDB, CallerID,
# …) so both see the same machine; wall time and peak RSS of each run from /usr/bin/time -v,
# the medians and the ratio of the medians, and whether the blocked numbers and their
# categories agree (DuckDB's answer against `lookup dump` of the pack). Prints a Markdown table.
#
#   swift build -c release --product lookup && swift build -c release --product callerid-phonenumber
#   python3 -m venv /tmp/callerid-duckdb-venv && /tmp/callerid-duckdb-venv/bin/pip install duckdb
#   bash tools/bench_reports.sh [DATA_DIR]     # DATA_DIR keeps the generated CSV (default /tmp/callerid-reports)
#
# REPORTS_ROWS="10000000 100000000" chooses the sizes; PAIRS="3 1" the pairs of runs for each
# (in order); MEMORY="1G 512M" the --memory of `lookup reports` for each. DUCKDB_PYTHON is the
# Python with duckdb (default /tmp/callerid-duckdb-venv/bin/python). DuckDB runs with its
# default threads (one per core); `lookup reports` parses plain CSV lines and sorts on two
# threads and scores on one.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
data="${1:-/tmp/callerid-reports}"
lookup="${LOOKUP:-$root/.build/release/lookup}"
py="${DUCKDB_PYTHON:-/tmp/callerid-duckdb-venv/bin/python}"
now=1796428800   # tools/gen_reports.py's fixed now, 2026-12-05T00:00:00Z
[ -x "$lookup" ] || { echo "error: no $lookup: swift build -c release --product lookup first" >&2; exit 66; }
[ -x /usr/bin/time ] || { echo "error: /usr/bin/time (Debian package time) is needed for peak RSS" >&2; exit 69; }
"$py" -c 'import duckdb' 2>/dev/null || { echo "error: $py has no duckdb (python3 -m venv /tmp/callerid-duckdb-venv && /tmp/callerid-duckdb-venv/bin/pip install duckdb)" >&2; exit 69; }
mkdir -p "$data"
read -r -a sizes <<< "${REPORTS_ROWS:-10000000 100000000}"
read -r -a pairs <<< "${PAIRS:-3 1}"
read -r -a memory <<< "${MEMORY:-1G 512M}"

# timed FILE CMD…: runs CMD under /usr/bin/time -v; prints "WALL_SECONDS RSS_KB".
timed() {
    local stat="$1"; shift
    /usr/bin/time -v "$@" > /dev/null 2> "$stat"
    local wall rss
    wall="$(grep 'Elapsed (wall clock)' "$stat" | awk '{print $NF}' | awk -F: '{ if (NF == 3) print $1*3600+$2*60+$3; else print $1*60+$2 }')"
    rss="$(grep 'Maximum resident' "$stat" | awk '{print $NF}')"
    echo "$wall $rss"
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

echo "Machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), shared; DuckDB $("$py" -c 'import duckdb; print(duckdb.__version__)') with its default threads ($(nproc)); lookup reports parses and sorts on two threads, scores on one."
echo "Command: bash tools/bench_reports.sh $data (commit $(git -C "$root" rev-parse --short HEAD)), load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| reports | CallerID time | DuckDB time | ratio | CallerID peak RSS | DuckDB peak RSS | blocked numbers | pairs | agreement |"
echo "|---|---|---|---|---|---|---|---|---|"
for i in "${!sizes[@]}"; do
    rows="${sizes[$i]}"
    n="${pairs[$i]:-1}"
    mem="${memory[$i]:-1G}"
    csv="$data/reports-$rows.csv"
    [ -s "$csv" ] || python3 "$root/tools/gen_reports.py" --rows "$rows" --seed 1 --now "$now" -o "$csv"
    : > "$data/c.times"; : > "$data/d.times"
    for _ in $(seq "$n"); do
        rm -f "$data/pack.cid"
        timed "$data/c.stat" "$lookup" reports -o "$data/pack.cid" "$csv" --now "$now" --memory "$mem" >> "$data/c.times"
        timed "$data/d.stat" "$py" "$root/tools/reports_duckdb.py" "$csv" --now "$now" -o "$data/duckdb.tsv" >> "$data/d.times"
    done
    "$lookup" dump --db "$data/pack.cid" | awk -F'\t' '{print $1 "\t" $3}' > "$data/callerid.tsv"
    if cmp -s "$data/callerid.tsv" "$data/duckdb.tsv"; then agree="same numbers and categories"; else agree="DIFFER (diff $data/callerid.tsv $data/duckdb.tsv)"; fi
    ct="$(awk '{print $1}' "$data/c.times" | median)"; dt="$(awk '{print $1}' "$data/d.times" | median)"
    cr="$(awk '{print $2}' "$data/c.times" | median)"; dr="$(awk '{print $2}' "$data/d.times" | median)"
    printf '| %s | %.2f s | %.2f s | %.2f× | %d MB | %d MB | %s | %s | %s |\n' "$(printf "%'d" "$rows") (--memory $mem)" "$ct" "$dt" \
        "$(echo "$ct / $dt" | bc -l)" "$((${cr%.*} / 1024))" "$((${dr%.*} / 1024))" "$(wc -l < "$data/callerid.tsv")" "$n" "$agree"
    echo "  CallerID runs (s, KB): $(tr '\n' ' ' < "$data/c.times")  DuckDB runs: $(tr '\n' ' ' < "$data/d.times")" >&2
done
