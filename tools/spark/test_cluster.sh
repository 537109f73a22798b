#!/usr/bin/env bash
# The Spark job on a standalone cluster started here, against a single-machine build:
#   bash tools/spark/test_cluster.sh [ROWS]     (default 20,000 rows; tools/spark/test.sh runs it too)
# A master and a worker on 127.0.0.1 (pyspark's spark-class), the worker with a work folder and
# local folder of its own and, when this runs as root, in a mount namespace of its own where
# the driver's folder (inputs aside: the output, the key, the staging folder), the Swift
# runtime, the repository's .build and the system's libphonenumber are hidden: its executors
# share no folder with the driver and can run no lookup but the --archives bundle of
# tools/spark/bundle.sh. Checks: the output equals `lookup build --split-by field` of the same
# rows byte for byte, the signature included; the executors ran the bundle (unpacked in their
# own folders) and a Python shipped with --archives; spark.speculation asked for on is turned
# off; without the bundle the job fails and leaves the output as it was.
# CALLERID_BUNDLE=FILE uses an archive bundle.sh made before (else it is made here, with
# tools/install.sh: minutes the first time). Without Java or PySpark it says SKIPPED and exits 0.
set -euo pipefail
source "$(dirname "$0")/../common.sh"
spark_preamble
rows="${1:-20000}"

work="$(mktemp -d)"
pids=()
cleanup() {
    for pid in ${pids[@]+"${pids[@]}"}; do kill "$pid" 2>/dev/null || true; done
    for pid in ${pids[@]+"${pids[@]}"}; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
export SOURCE_DATE_EPOCH=1700000000
fail() { echo "FAIL: $*" >&2; exit 1; }
mkdir -p "$work/data" "$work/driver/stage" "$work/worker" "$work/worker-local"

start=$(date +%s)
bundle="${CALLERID_BUNDLE:-}"
if [ -z "$bundle" ]; then
    bundle="$work/data/callerid-lookup.tar.gz"
    bash "$root/tools/spark/bundle.sh" -o "$bundle" > "$work/bundle.log" 2>&1 || { tail -20 "$work/bundle.log" >&2; fail "bundle.sh"; }
fi
echo "bundle: $(( $(date +%s) - start )) s: $(tail -1 "$work/bundle.log" 2>/dev/null || echo "$bundle")"

# The rows (the study data, a region column) where executors read them; the single build.
python3 "$root/tools/gen_directory.py" --profile study --entries "$rows" --seed 11 --duplicates 0.1 -o "$work/raw.tsv" 2>/dev/null
awk -F'\t' 'BEGIN{OFS="\t"} {print $1, $2, $3, "cc-" substr($1, 1, 2)}' "$work/raw.tsv" > "$work/data/in.tsv"
"$lookup" build -o "$work/single/" "$work/data/in.tsv" --format tsv --header no --number-field 1 --label-field 2 \
    --category-field 3 --split-by field --region-field 4 --skip-bad-rows --memory 64M > /dev/null
"$lookup" keygen -o "$work/driver/publisher" > /dev/null
"$lookup" sign --key "$work/driver/publisher" "$work/single" > /dev/null
echo keep > "$work/driver/stage/keep-me"

# A Python for the executors, shipped as an archive (what venv-pack makes of a real one): its
# python notes that it ran, then is the system's.
python3 -m venv --without-pip "$work/pyenv"
rm "$work/pyenv/bin/python"
printf '#!/bin/sh\necho "$$" >> "%s"\nexec %s "$@"\n' "$work/data/executor-python-ran" "$(readlink -f "$(command -v python3)")" \
    > "$work/pyenv/bin/python"
chmod +x "$work/pyenv/bin/python"
tar -czf "$work/data/pyenv.tar.gz" -C "$work/pyenv" .

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
mport=$(free_port); mui=$(free_port); wui=$(free_port)
# Spark's own launcher, from the pyspark of the venv (its SPARK_HOME).
SPARK_HOME="$("$venv/bin/python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')"
export SPARK_HOME
"$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.master.Master --host 127.0.0.1 --port "$mport" --webui-port "$mui" \
    > "$work/master.log" 2>&1 &
pids+=($!)

# The worker: where the Linux kernel lets us (root), in a mount namespace where the driver's
# folder, the Swift runtime, this repository's .build and the system's libphonenumber are not
# there to be used by accident.
hidden="no"
worker_cmd=("$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.worker.Worker "spark://127.0.0.1:$mport"
            --host 127.0.0.1 --cores 2 --memory 2g --work-dir "$work/worker" --webui-port "$wui")
phonenumber="$(ldconfig -p | awk '/libphonenumber\.so\.[0-9]+ / { print $NF; exit }')"
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
    hidden="yes"
    # shellcheck disable=SC2016
    SPARK_LOCAL_DIRS="$work/worker-local" unshare -m bash -c '
        set -e
        driver="$1"; build="$2"; phonenumber="$3"; shift 3
        mount -t tmpfs none "$driver"
        [ ! -d /opt/swift ] || mount -t tmpfs none /opt/swift
        [ ! -d "$build" ] || mount -t tmpfs none "$build"
        [ -z "$phonenumber" ] || mount --bind /dev/null "$(readlink -f "$phonenumber")"
        exec "$@"' _ "$work/driver" "$root/.build" "$phonenumber" "${worker_cmd[@]}" > "$work/worker.log" 2>&1 &
else
    echo "note: not root or no mount namespaces: the worker sees the driver's files (the job still sends none through them)"
    SPARK_LOCAL_DIRS="$work/worker-local" "${worker_cmd[@]}" > "$work/worker.log" 2>&1 &
fi
pids+=($!)
for _ in $(seq 600); do
    grep -q "Successfully registered with master" "$work/worker.log" 2>/dev/null && break
    kill -0 "${pids[0]}" 2>/dev/null && kill -0 "${pids[1]}" 2>/dev/null || break
    sleep 0.1
done
grep -q "Successfully registered with master" "$work/worker.log" || { tail -20 "$work/worker.log" >&2; fail "the worker did not register"; }

submit_opts=(--master "spark://127.0.0.1:$mport" --deploy-mode client
             --conf spark.executor.cores=1 --conf spark.cores.max=2 --conf spark.executor.memory=512m
             --conf spark.executor.memoryOverhead=600m --conf spark.speculation=true
             --archives "$bundle#callerid,$work/data/pyenv.tar.gz#env"
             --conf spark.pyspark.python=./env/bin/python --conf "spark.pyspark.driver.python=$venv/bin/python")
job() {   # job LOOKUP_ARCHIVE_ARGS... -- JOB ARGS: spark-submit from the driver's folder
    SPARK_SUBMIT_OPTS_EXTRA="${submit_opts[*]}" bash "$root/tools/spark/run.sh" "$@"
}
cd "$work/driver"
start=$(date +%s)
job --lookup "$lookup" --lookup-archive callerid --memory 64M --region-field 4 --build-option=--skip-bad-rows \
    --input "$work/data/in.tsv" -o "$work/driver/out" --key "$work/driver/publisher" --stage "$work/driver/stage" \
    > "$work/cluster.json" 2> "$work/cluster.err" || { tail -40 "$work/cluster.err" >&2; fail "the job failed on the standalone cluster"; }
echo "spark standalone (1 worker, 2 executors of 1 core; workers hidden from the driver's folder: $hidden), $rows rows: $(( $(date +%s) - start )) s: $(cat "$work/cluster.json")"

python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$work/cluster.json" || fail "stdout holds more than the JSON summary"
for f in "$work/single/"*; do
    cmp -s "$f" "$work/driver/out/$(basename "$f")" || fail "out/$(basename "$f") differs from the single build's"
done
[ "$(ls "$work/single" | wc -l)" = "$(ls "$work/driver/out" | wc -l)" ] || fail "out/ holds another set of files"
[ -f "$work/driver/out/manifest.json.sig" ] || fail "not signed"
"$lookup" verify "$work/driver/out" > /dev/null || fail "lookup verify"
[ "$(ls -A "$work/driver/stage")" = keep-me ] || fail "the job left $(ls -A "$work/driver/stage") in --stage"
[ "$(ls -A "$work/driver")" = "$(printf 'out\npublisher\npublisher.pub\nstage')" ] || fail "the job left $(ls -A "$work/driver") in the driver's folder"
grep -q "spark.speculation is turned off" "$work/cluster.err" || fail "the job did not say it turned speculation off"
unpacked="$(find "$work/worker" "$work/worker-local" -path '*/callerid/lookup' 2>/dev/null | wc -l)"
[ "$unpacked" -ge 1 ] || fail "no executor unpacked the bundle in its own folder"
[ -s "$work/data/executor-python-ran" ] || fail "the executors did not run the Python of the archive"

# Without the bundle the executors get the driver's lookup (SparkContext.addFile), which
# needs the Swift runtime they do not have here: the job fails and the output stays.
if [ "$hidden" = yes ]; then
    sum_before="$(cd "$work/driver/out" && sha256sum ./* | sort)"
    if job --lookup "$lookup" --region-field 4 --build-option=--skip-bad-rows --input "$work/data/in.tsv" \
            -o "$work/driver/out" --key "$work/driver/publisher" > /dev/null 2> "$work/nobundle.err"; then
        fail "the job succeeded on executors without the Swift runtime and without the bundle"
    fi
    grep -q "lookup build of region .* failed\|libswiftCore" "$work/nobundle.err" \
        || fail "the job's error does not say why: $(grep -i error "$work/nobundle.err" | tail -3)"
    echo "without the bundle: $(grep -oE "lookup build of region '[^']*' failed with exit [0-9]+" "$work/nobundle.err" | head -1): $(grep -o 'error while loading shared libraries: [^:]*' "$work/nobundle.err" | head -1)"
    [ "$(cd "$work/driver/out" && sha256sum ./* | sort)" = "$sum_before" ] || fail "the failed job changed the output"
    [ "$(ls -A "$work/driver")" = "$(printf 'out\npublisher\npublisher.pub\nstage')" ] || fail "the failed job left $(ls -A "$work/driver")"
fi
echo "PASS: spark standalone output = single-machine build ($rows rows, signature included; executors ran the --archives bundle and Python in their own folders; speculation turned off; without the bundle the job fails and the output stays)"
