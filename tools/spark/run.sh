#!/usr/bin/env bash
# Runs the Spark job (callerid_spark.py) with the PySpark of tools/spark/setup.sh:
#   bash tools/spark/run.sh --master 'local[2]' --lookup .build/release/lookup \
#       --input directory.parquet --region-field region -o bundle/ --key publisher
# Any spark-submit options go in SPARK_SUBMIT_OPTS_EXTRA (e.g. '--driver-memory 2g').
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${CALLERID_SPARK_VENV:-$HOME/.cache/callerid-spark}"
if [ ! -x "$venv/bin/spark-submit" ]; then
    echo "error: no PySpark in $venv: run bash tools/spark/setup.sh first" >&2
    exit 69
fi
export PYSPARK_PYTHON="$venv/bin/python"
# shellcheck disable=SC2086
exec "$venv/bin/spark-submit" ${SPARK_SUBMIT_OPTS_EXTRA:-} "$here/callerid_spark.py" "$@"
