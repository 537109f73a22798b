#!/usr/bin/env bash
# Installs what the Spark job needs (and nothing the rest of CallerID needs): Java from Debian
# (default-jre-headless) and PySpark from PyPI in a virtual environment of its own.
#   bash tools/spark/setup.sh            # then: tools/spark/run.sh … (it uses the same venv)
# CALLERID_SPARK_VENV chooses the environment (default ~/.cache/callerid-spark);
# PYSPARK_VERSION pins PySpark (default 3.5.3, which runs on Java 17).
set -euo pipefail
venv="${CALLERID_SPARK_VENV:-$HOME/.cache/callerid-spark}"
version="${PYSPARK_VERSION:-3.5.3}"

if ! command -v java >/dev/null 2>&1; then
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -q
    $sudo apt-get install -y -q default-jre-headless
fi
java -version 2>&1 | head -1

if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q "pyspark==$version"
"$venv/bin/python" -c 'import pyspark; print("pyspark", pyspark.__version__, "in '"$venv"'")'
