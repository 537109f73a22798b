# Sourced by the scripts of tools/: the one place that finds Swift and installs Debian packages.
#   use_swift                 puts /opt/swift/usr/bin on PATH when swift is not found; exits 69
#                             when there is no Swift at all
#   ensure_packages PKG...    installs with apt-get those not installed yet (sudo unless root)

use_swift() {
    if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
        export PATH="$PATH:/opt/swift/usr/bin"
    fi
    command -v swift >/dev/null 2>&1 || { echo "error: swift not found (install Swift 6.3 or newer from swift.org)" >&2; exit 69; }
}

ensure_packages() {
    local need=() pkg sudo=""
    for pkg in "$@"; do
        dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
    done
    [ ${#need[@]} -gt 0 ] || return 0
    echo "installing ${need[*]}" >&2
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
}

# The Spark scripts' preamble: `spark_preamble` sets root, venv and lookup, and exits 0 with
# SKIPPED when Java or PySpark is missing.
spark_preamble() {
    root="$(cd "$(dirname "${BASH_SOURCE[1]}")/../.." && pwd)"
    venv="${CALLERID_SPARK_VENV:-$HOME/.cache/callerid-spark}"
    if ! command -v java >/dev/null 2>&1; then echo "SKIPPED: no java (bash tools/spark/setup.sh installs default-jre-headless)"; exit 0; fi
    if [ ! -x "$venv/bin/spark-submit" ]; then echo "SKIPPED: no PySpark in $venv (bash tools/spark/setup.sh installs it)"; exit 0; fi
    lookup="${LOOKUP:-$root/.build/release/lookup}"
    [ -x "$lookup" ] || { echo "error: no $lookup: swift build -c release first (or LOOKUP=path)" >&2; exit 66; }
}

# The HTTP floor of the serving benchmarks: `nginx_floor DIR SERVER` writes DIR/nginx/nginx.conf
# (two workers, no access log, endless keep-alive, pid and error log under DIR/nginx) around the
# server block SERVER, and starts nginx on it.
nginx_floor() {
    local dir=$1 server=$2
    mkdir -p "$dir/nginx/logs"
    cat > "$dir/nginx/nginx.conf" <<NGINX
worker_processes 2;
pid $dir/nginx/nginx.pid;
error_log $dir/nginx/logs/error.log;
events { worker_connections 20000; }
http {
  access_log off;
  keepalive_requests 1000000000;
  default_type application/json;
$server
}
NGINX
    nginx -c "$dir/nginx/nginx.conf" -p "$dir/nginx"
}
