#!/usr/bin/env bash
# The Spark job against a single-machine build, in Spark's local mode:
#   bash tools/spark/test.sh [ROWS]          (default 2,000,000 rows; needs bash tools/spark/setup.sh)
# Checks: the same databases (byte for byte, and `lookup dump` of each) and the same manifest
# as `lookup build` of the same input on one machine; TSV, CSV, JSON Lines and Parquet inputs
# give the same output; a second run writes the same bytes; stdout is the JSON summary alone;
# the result verifies and is signed; --stage's other contents are left alone. A failed
# partition, a missing or bad key, spark-submit killed during `lookup join`, and executors
# without libphonenumber fail the job and leave the previous signed output as it was. On small
# inputs, the rows are read as a single build reads them: a short first row and a row without
# a region are bad rows reported at the input's file and line, a lone CR stays in its label, a
# header is found as --header auto finds it, --dataset-version reaches the manifest, and a
# Parquet folder's files are read in name order. Then tools/spark/test_cluster.sh: the job on a
# standalone cluster started here, its executors in folders of their own running the
# --archives bundle, against a single build of 20,000 rows (SPARK_TEST_CLUSTER=no skips it).
# 7 minutes at 20,000 rows on 2 cores shared with other builds (the cluster's part 1-1.5 of
# them, the bundle 13 s when tools/install.sh has built before), 8 at the default 2,000,000.
# Then --reports: the job against `lookup reports` of REPORT_ROWS (default 2,000,000) seeded
# reports (tools/spark/gen_reports.py) and of a small log of the model's edge cases, the signed
# packs byte for byte (65 s for the job at 2,000,000, 20 s for lookup reports; SPARK_TEST_BUILD=no
# runs this part alone, SPARK_TEST_REPORTS=no skips it).
# Without Java or PySpark it says SKIPPED and why, and exits 0.
set -euo pipefail
source "$(dirname "$0")/../common.sh"
spark_preamble
rows="${1:-2000000}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export SOURCE_DATE_EPOCH=1700000000
fail() { echo "FAIL: $*" >&2; exit 1; }

# The build: SPARK_TEST_BUILD=no skips it (and the cluster), to check --reports alone.
if [ "${SPARK_TEST_BUILD:-yes}" != no ]; then
# The study data with a region column (the number's first two digits: ~70 regions).
python3 "$root/tools/gen_directory.py" --profile study --entries "$rows" --seed 7 --duplicates 0.1 -o "$work/raw.tsv" 2>/dev/null
awk -F'\t' 'BEGIN{OFS="\t"} {print $1, $2, $3, "cc-" substr($1, 1, 2)}' "$work/raw.tsv" > "$work/in.tsv"

build_args=(--format tsv --header no --number-field 1 --label-field 2 --category-field 3 --split-by field --region-field 4 --skip-bad-rows)
"$lookup" build -o "$work/single/" "$work/in.tsv" "${build_args[@]}" --memory 512M > /dev/null
"$lookup" keygen -o "$work/publisher" > /dev/null

spark() { bash "$root/tools/spark/run.sh" --master 'local[2]' --lookup "$lookup" --region-field 4 \
            --build-option=--skip-bad-rows "$@" 2> "$work/spark.err" || { tail -30 "$work/spark.err" >&2; return 1; }; }

same_as_single() {
    local dir="$1"
    cmp "$work/single/manifest.json" "$dir/manifest.json" || fail "$dir: manifest differs from the single-machine build's"
    for f in "$work/single/"*.cid; do
        name="$(basename "$f")"
        cmp -s "$f" "$dir/$name" || fail "$dir/$name differs"
        cmp -s <("$lookup" dump --db "$f") <("$lookup" dump --db "$dir/$name") || fail "lookup dump of $name differs"
    done
    [ "$(ls "$dir"/*.cid | wc -l)" = "$(ls "$work/single/"*.cid | wc -l)" ] || fail "$dir: another set of files"
}

# --stage names a folder on the driver that holds other things: the job stages the parts the
# executors send back in a folder of its own inside it and leaves everything else there as it
# was, after a success and a failure.
mkdir -p "$work/shared/other"
echo keep > "$work/shared/keep-me"
echo keep > "$work/shared/other/keep-me-too"
shared_listing() { (cd "$work/shared" && find . | sort); }
shared_before="$(shared_listing)"

start=$(date +%s)
spark --input "$work/in.tsv" -o "$work/out" --key "$work/publisher" --stage "$work/shared" > "$work/spark.json"
echo "spark local[2], $rows rows: $(( $(date +%s) - start )) s: $(cat "$work/spark.json")"
python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$work/spark.json" \
    || fail "stdout holds more than the JSON summary: $(head -5 "$work/spark.json")"
same_as_single "$work/out"
[ "$(shared_listing)" = "$shared_before" ] || fail "the job changed what --stage held: $(shared_listing)"
"$lookup" verify "$work/out" > /dev/null || fail "lookup verify"
[ -f "$work/out/manifest.json.sig" ] || fail "not signed"

# Idempotent: a second run, the same bytes.
sum_before="$(cd "$work/out" && sha256sum ./* | sort)"
spark --input "$work/in.tsv" -o "$work/out" --key "$work/publisher" > /dev/null
[ "$(cd "$work/out" && sha256sum ./* | sort)" = "$sum_before" ] || fail "a second run wrote other bytes"

# Other input formats of the same rows.
python3 - "$work" <<'PY'
import csv, json, sys
work = sys.argv[1]
with open(f"{work}/in.tsv", encoding="utf-8") as f, open(f"{work}/in.csv", "w", newline="", encoding="utf-8") as c, \
        open(f"{work}/in.jsonl", "w", encoding="utf-8") as j:
    w = csv.writer(c)
    w.writerow(["number", "label", "category", "region"])
    for line in f:
        n, l, cat, r = line.rstrip("\n").split("\t")
        w.writerow([n, l, cat, r])
        j.write(json.dumps({"number": n, "label": l, "category": cat, "region": r}, ensure_ascii=False) + "\n")
PY
"$venv/bin/python" - "$work" <<'PY'
import sys
from pyspark.sql import SparkSession
work = sys.argv[1]
spark = SparkSession.builder.master("local[2]").getOrCreate()
# From the TSV as it is (no quoting rules), so the Parquet holds exactly the rows built above.
(spark.read.option("sep", "\t").option("quote", "\u0000").csv(f"{work}/in.tsv")
    .toDF("number", "label", "category", "region").coalesce(1).write.parquet(f"{work}/in.parquet"))
spark.stop()
PY
for input in in.csv in.jsonl in.parquet; do
    spark --input "$work/$input" --region-field region --number-field number --label-field label --category-field category \
        -o "$work/out-$input" > /dev/null
    same_as_single "$work/out-$input"
done

# A failed partition: a lookup that fails for one region's rows. The job fails, the previous
# output stays whole, and no manifest of the failed run appears anywhere.
cat > "$work/failing-lookup" <<SH
#!/usr/bin/env bash
if [ "\$1" = build ] && grep -q \$'\tcc-79\$' "\$4" 2>/dev/null; then echo "simulated failure" >&2; exit 74; fi
exec "$lookup" "\$@"
SH
chmod +x "$work/failing-lookup"
if bash "$root/tools/spark/run.sh" --master 'local[2]' --lookup "$work/failing-lookup" --region-field 4 \
        --build-option=--skip-bad-rows --input "$work/in.tsv" -o "$work/out" --stage "$work/shared" > /dev/null 2> "$work/fail.err"; then
    fail "the job succeeded although a partition failed"
fi
grep -q "simulated failure" "$work/fail.err" || fail "the job's error does not say why the partition failed"
[ "$(cd "$work/out" && sha256sum ./* | sort)" = "$sum_before" ] || fail "the failed job changed the previous output"
[ "$(shared_listing)" = "$shared_before" ] || fail "the failed job changed what --stage held: $(shared_listing)"
left="$(cd "$work" && ls -A | grep '^\.out\.' || true)"
[ -z "$left" ] || fail "the failed job left $left beside the output"

# A bad key fails the job before any work: nothing built, nothing joined, the signed output as
# it was.
head -20000 "$work/in.tsv" > "$work/small.tsv"
echo "callerid-ed25519-secret not-a-key" > "$work/bad-key"
for key in "$work/no-such-key" "$work/bad-key"; do
    if bash "$root/tools/spark/run.sh" --master 'local[2]' --lookup "$lookup" --region-field 4 \
            --input "$work/small.tsv" -o "$work/out" --key "$key" > /dev/null 2> "$work/key.err"; then
        fail "the job succeeded with the key $key"
    fi
    grep -q "key" "$work/key.err" || fail "the job's error does not name the key: $(tail -3 "$work/key.err")"
    ! grep -q "Running Spark version" "$work/key.err" || fail "the job started Spark before it checked the key $key"
    [ "$(cd "$work/out" && sha256sum ./* | sort)" = "$sum_before" ] || fail "the job with the key $key changed the output"
done

# spark-submit killed while `lookup join` runs: the join dies with the job, the output stays
# the previous signed set, and nothing of the job is left beside it.
cat > "$work/slow-join-lookup" <<SH
#!/usr/bin/env bash
if [ "\$1" = join ]; then touch "$work/join-started"; sleep 6; fi
exec "$lookup" "\$@"
SH
chmod +x "$work/slow-join-lookup"
bash "$root/tools/spark/run.sh" --master 'local[2]' --lookup "$work/slow-join-lookup" --region-field 4 \
    --build-option=--skip-bad-rows --input "$work/small.tsv" -o "$work/out" --key "$work/publisher" \
    > /dev/null 2> "$work/kill.err" &
submit=$!
for _ in $(seq 1200); do [ -e "$work/join-started" ] || ! kill -0 "$submit" 2>/dev/null && break; sleep 0.1; done
[ -e "$work/join-started" ] || { tail -20 "$work/kill.err" >&2; fail "the job never reached lookup join"; }
kill -KILL "$submit"
wait "$submit" 2>/dev/null || true
sleep 10   # the join would have ended and switched the output by now
[ "$(cd "$work/out" && sha256sum ./* | sort)" = "$sum_before" ] || fail "a job killed during lookup join changed the output"
"$lookup" verify "$work/out" > /dev/null || fail "lookup verify after the killed job"
left="$(cd "$work" && ls -A | grep '^\.out\.' || true)"
[ -z "$left" ] || fail "the killed job left $left beside the output"

# An executor that cannot load libphonenumber reads numbers with the built-in table and would
# build other bytes: the job fails, naming the region and why, and the output stays as it was.
mkdir -p "$work/no-libphonenumber"
cp "$lookup" "$work/no-libphonenumber/lookup"   # alone: no libcallerid-phonenumber.so beside it
cat > "$work/table-lookup" <<SH
#!/usr/bin/env bash
if [ "\$1" = build ]; then exec "$work/no-libphonenumber/lookup" "\$@"; fi
exec "$lookup" "\$@"
SH
chmod +x "$work/table-lookup"
if "$lookup" --version | grep -q "number rules: libphonenumber"; then
    if bash "$root/tools/spark/run.sh" --master 'local[2]' --lookup "$work/table-lookup" --region-field 4 \
            --build-option=--skip-bad-rows --input "$work/small.tsv" -o "$work/out" > /dev/null 2> "$work/rules.err"; then
        fail "the job succeeded although its executors read numbers with the built-in table"
    fi
    grep -q "with the built-in table, the driver with libphonenumber" "$work/rules.err" \
        || fail "the job's error does not say the number rules differ: $(grep -i error "$work/rules.err" | tail -3)"
    [ "$(cd "$work/out" && sha256sum ./* | sort)" = "$sum_before" ] || fail "the job with other number rules changed the output"
else
    echo "note: no libphonenumber on this machine: the check of executors without it is skipped"
fi

# Rows as a single build reads them, on small inputs:
# - a TSV whose first row is short (a bad row, reported at its file and line), with a lone CR
#   in a label (part of the label, not a line break) and a row without a region;
# - a TSV with a header row and no --header (auto, as lookup build), and --dataset-version;
# - a Parquet folder whose files repeat a number: the files in name order, as a single build
#   of the same files in that order (Spark reads the largest file first).
{ printf '%s\tShort row\n' "$(head -1 "$work/small.tsv" | cut -f1)"
  head -300 "$work/small.tsv"
  printf '%s\tcarriage\rreturn\t\t%s\n' "$(sed -n 2p "$work/small.tsv" | cut -f1)" "$(sed -n 2p "$work/small.tsv" | cut -f4)"
  printf '%s\tno region\n' "$(sed -n 3p "$work/small.tsv" | cut -f1)"; } > "$work/edge.tsv"
{ printf 'number\tlabel\tcategory\tregion\n'; head -300 "$work/small.tsv"; } > "$work/header.tsv"
edge_args=(--format tsv --split-by field --region-field 4 --skip-bad-rows)
"$lookup" build -o "$work/edge-single/" "$work/edge.tsv" "${edge_args[@]}" > /dev/null 2> "$work/edge-single.err"
"$lookup" build -o "$work/header-single/" "$work/header.tsv" "${edge_args[@]}" --dataset-version v-edge > /dev/null
same_files() {
    for f in "$1/"*.cid; do cmp -s "$f" "$2/$(basename "$f")" || fail "$2/$(basename "$f") differs from $f"; done
    [ "$(ls "$1"/*.cid | wc -l)" = "$(ls "$2"/*.cid | wc -l)" ] || fail "$2: another set of files than $1"
}
spark --input "$work/edge.tsv" -o "$work/edge-out" > /dev/null || fail "the job failed on a short first row"
same_files "$work/edge-single" "$work/edge-out"
cmp -s "$work/edge-single/manifest.json" "$work/edge-out/manifest.json" || fail "edge.tsv: manifest differs"
grep -q "^$work/edge.tsv:1: no " "$work/spark.err" || fail "the short first row is not reported at edge.tsv:1: $(grep -i 'row\|field' "$work/spark.err" | head -3)"
grep -q "^$work/edge.tsv:303: no region field" "$work/spark.err" || fail "the row without a region is not reported at edge.tsv:303"
! grep -q "rows.tsv" "$work/spark.err" || fail "a bad-row report names the executor's temporary file"
spark --input "$work/header.tsv" -o "$work/header-out" --dataset-version v-edge > /dev/null \
    || fail "the job failed on a TSV with a header row"
same_files "$work/header-single" "$work/header-out"
cmp -s "$work/header-single/manifest.json" "$work/header-out/manifest.json" || fail "header.tsv: manifest differs (--dataset-version?)"
grep -q '"dataset_version" *: *"v-edge"' "$work/header-out/manifest.json" || fail "--dataset-version is not in the manifest"

"$venv/bin/python" - "$work" <<'PY' 2> /dev/null
import os, shutil, sys
from pyspark.sql import SparkSession
work = sys.argv[1]
spark = SparkSession.builder.master("local[1]").getOrCreate()
rows = [l.rstrip("\n").split("\t") for l in open(f"{work}/small.tsv", encoding="utf-8")][:300]
first = [[rows[0][0], "From the first file", rows[0][2], rows[0][3]]]
with open(f"{work}/order.tsv", "w", encoding="utf-8") as f:       # the files' rows in name order
    for r in first + rows:
        f.write("\t".join(r) + "\n")
os.makedirs(f"{work}/order.parquet")
for name, part in (("part-0.parquet", first), ("part-1.parquet", rows)):   # part-1 is the larger
    spark.createDataFrame(part, "number string, label string, category string, region string") \
        .coalesce(1).write.parquet(f"{work}/tmp-{name}")
    made = [f for f in os.listdir(f"{work}/tmp-{name}") if f.endswith(".parquet")][0]
    shutil.move(f"{work}/tmp-{name}/{made}", f"{work}/order.parquet/{name}")
spark.stop()
PY
"$lookup" build -o "$work/order-single/" "$work/order.tsv" "${build_args[@]}" > /dev/null
spark --input "$work/order.parquet" --region-field region -o "$work/order-out" > /dev/null
same_files "$work/order-single" "$work/order-out"

echo "PASS: spark local[2] output = single-machine build ($rows rows; tsv, csv, jsonl, parquet; idempotent; a failed partition, a bad key, a killed job and executors without libphonenumber leave the output as it was; short rows, headers, CRs, Parquet file order)"

fi

# --reports: the Spark job against `lookup reports` of the same log, the same --now: the pack's
# databases, manifest and signature byte for byte. A seeded log of REPORT_ROWS reports (JSON
# Lines; numbers as E.164, digits and national, for --country RU; some bad rows), then a small
# log of the model's edge cases.
if [ "${SPARK_TEST_REPORTS:-yes}" != no ]; then
report_rows="${REPORT_ROWS:-2000000}"
python3 "$root/tools/spark/gen_reports.py" --rows "$report_rows" --seed 11 -o "$work/reports.jsonl"
now=2026-12-05T00:00:00Z
[ -f "$work/publisher" ] || "$lookup" keygen -o "$work/publisher" > /dev/null
report_args=(--country RU --now "$now" --skip-bad-rows --split-by field --region-field region)
start=$(date +%s)
"$lookup" reports -o "$work/reports-single/" "$work/reports.jsonl" "${report_args[@]}" --json > "$work/reports-single.json" 2> "$work/reports-single.err"
"$lookup" sign --key "$work/publisher" "$work/reports-single" > /dev/null
echo "lookup reports, $report_rows reports: $(( $(date +%s) - start )) s"
start=$(date +%s)
bash "$root/tools/spark/run.sh" --master 'local[2]' --lookup "$lookup" --reports --input "$work/reports.jsonl" \
    -o "$work/reports-out" --key "$work/publisher" "${report_args[@]}" > "$work/reports-spark.json" 2> "$work/reports-spark.err" \
    || { tail -30 "$work/reports-spark.err" >&2; fail "the --reports job failed"; }
echo "spark local[2] --reports, $report_rows reports: $(( $(date +%s) - start )) s: $(cat "$work/reports-spark.json")"
same_pack() {
    for f in "$1"/*; do cmp -s "$f" "$2/$(basename "$f")" || fail "$2/$(basename "$f") differs from $f"; done
    [ "$(ls "$1" | wc -l)" = "$(ls "$2" | wc -l)" ] || fail "$2: another set of files than $1"
}
same_pack "$work/reports-single" "$work/reports-out"
[ -f "$work/reports-out/manifest.json.sig" ] || fail "the --reports pack is not signed"
# The bad rows are reported at the log's file and line, as lookup reports reports them.
grep "^$work/reports.jsonl:" "$work/reports-single.err" | sort > "$work/bad-single"
grep "^$work/reports.jsonl:" "$work/reports-spark.err" | sort > "$work/bad-spark"
[ -s "$work/bad-single" ] && cmp -s "$work/bad-single" "$work/bad-spark" \
    || fail "the bad rows are not reported as lookup reports reports them: $(diff "$work/bad-single" "$work/bad-spark" | head -5)"

# The edge cases, each where docs/REPORTS.md says how it goes (times at 09:00 UTC unless said).
python3 - "$work/edge.jsonl" <<'PY'
import json, sys
now = 1796461200                                    # 2026-12-05T09:00:00Z
day = 86400
rows = []
def r(number, reporter, age, category, region="ru-a", at=None):
    rows.append({"number": number, "reporter": reporter, "time": str(at if at is not None else now - age * day),
                 "category": category, "region": region})
# Ties in the same second: safe first, then categories by name, the last wins (collector, scam).
for k in range(4):
    r("+79130000001", f"t{k}", 1, "safe")
    r("+79130000001", f"t{k}", 1, "collector")
    r("+79130000002", f"t{k}", 1, "scam")
    r("+79130000002", f"t{k}", 1, "fraud")
# Safe after a complaint: s5 counts against; five complaints stay (5+ жалоб).
for k in range(6):
    r("+79130000003", f"s{k}", 20, "survey")
r("+79130000003", "s5", 3, "safe")
# A reporter over the daily cap (9 reports in one UTC day), on numbers three others reported.
for k in range(9):
    number = f"+7913000001{k}"
    r(number, "script", 2, "robocall", region="ru-b")
    for j in range(3):
        r(number, f"c{k}{j}", 5, "telemarketing" if j else "robocall", region="ru-b")
# Outside the window (400 days) and after --now.
for k in range(6):
    r("+79130000020", f"o{k}", 400, "fraud")
    r("+79130000021", f"f{k}", 0, "spam", at=now + 3600)
# Equal weight in two categories: the first by name; many reporters: 10+, 20+ жалоб.
for k in range(3):
    r("+79130000030", f"e{k}", 7, "pyramid")
    r("+79130000030", f"g{k}", 7, "block")
for k in range(23):
    r("+79130000031", f"m{k}", k % 30, "collector", region="ru-c")
for k in range(11):
    r("+79130000032", f"n{k}", k, "scam", region="ru-c")
# The latest complaint's region, two in the same second: the region read first loses.
r("+79130000033", "x0", 1, "spam", region="ru-d")
r("+79130000033", "x1", 2, "spam", region="ru-e")
r("+79130000033", "x2", 0, "spam", region="ru-f", at=now - 60)
r("+79130000033", "x3", 0, "spam", region="ru-a", at=now - 60)
with open(sys.argv[1], "w", encoding="utf-8") as f:
    for row in rows:
        f.write(json.dumps(row) + "\n")
    f.write(json.dumps({"number": "+79130000001", "reporter": "8 913 555-12-34", "time": str(now), "category": "spam", "region": "ru-a"}) + "\n")
PY
edge_count=$(wc -l < "$work/edge.jsonl")
for variant in ru en; do
    if [ "$variant" = ru ]; then
        args=(--now 2026-12-05T09:00:00Z --label-language ru --split-by field --region-field region --skip-bad-rows)
        single="$work/edge-reports-single/"
    else
        args=(--half-life 30d --reporter-daily-cap 2 --min-reporters 2 --block-score 1.5 --label '{category}: {count}' --skip-bad-rows)
        single="$work/edge-reports-single-en/"
    fi
    "$lookup" reports -o "$single" "$work/edge.jsonl" "${args[@]}" > /dev/null 2> "$work/edge-reports.err"
    bash "$root/tools/spark/run.sh" --master 'local[2]' --lookup "$lookup" --reports --input "$work/edge.jsonl" \
        -o "$work/edge-reports-out-$variant" "${args[@]}" > /dev/null 2> "$work/edge-spark.err" \
        || { tail -30 "$work/edge-spark.err" >&2; fail "the --reports job failed on the edge log ($variant)"; }
    same_pack "${single%/}" "$work/edge-reports-out-$variant"
    grep -q "^$work/edge.jsonl:$edge_count: the reporter reads as a phone number" "$work/edge-spark.err" \
        || fail "the bad report is not reported at edge.jsonl:$edge_count"
done
"$lookup" dump --db "$work/edge-reports-out-ru" > "$work/edge-dump"
for expect in $'79130000001\tКоллекторы · 4 жалобы' $'79130000002\tМошенники · 4 жалобы' $'79130000003\tОпросы · 5+ жалоб' \
        $'79130000031\tКоллекторы · 20+ жалоб' $'79130000032\tМошенники · 10+ жалоб' $'79130000030\tНежелательный звонок · 5+ жалоб'; do
    grep -q "^$expect" "$work/edge-dump" || fail "the edge pack lacks '$expect': $(cat "$work/edge-dump")"
done
! grep -q "^7913000002[01]" "$work/edge-dump" || fail "reports outside the window blocked a number"
echo "PASS: spark --reports = lookup reports ($report_rows reports, signature included; the edge log in ru and en)"
fi

[ "${SPARK_TEST_CLUSTER:-yes}" = no ] || [ "${SPARK_TEST_BUILD:-yes}" = no ] || bash "$root/tools/spark/test_cluster.sh" 20000
