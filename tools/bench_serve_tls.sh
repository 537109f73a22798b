#!/usr/bin/env bash
# "HTTP serving: TLS and keys" in BENCHMARKS.md: `lookup serve` answering GET /v1/lookup/NUMBER
# with keep-alive, plain, with API keys, and with TLS and keys, beside nginx serving the same
# answer bytes from its configuration over TLS (the floor). The four run side by side on
# 127.0.0.1, in rounds that alternate them (A B C D, A B C D, …), so that a machine that drifts
# moves all four alike; each run's requests/s, p99 and the server's CPU per request (user +
# system from /proc/PID/stat over the run) are printed, then the medians and the ratios to plain.
# Installs wrk, nginx-light, openssl and libmicrohttpd12 with apt-get when missing; not run by CI.
#
#   bash tools/bench_serve_tls.sh [--entries N] [--seconds S] [--rounds R] [--connections C] [--work DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
entries=1000000
seconds=10
rounds=5
connections=16
work=/tmp/callerid-serve-tls-bench
while [ $# -gt 0 ]; do
    case "$1" in
        --entries) entries=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --connections) connections=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        -h|--help) sed -n 2,10p "$0"; exit 0 ;;
        *) echo "error: unknown argument '$1'" >&2; exit 64 ;;
    esac
done
source tools/common.sh
use_swift
ensure_packages wrk libmicrohttpd12 openssl python3 curl $(command -v nginx >/dev/null || echo nginx-light)
swift build -c release --product lookup >&2
lookup=$PWD/.build/release/lookup
mkdir -p "$work"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; [ -f "$work/nginx/nginx.pid" ] && kill "$(cat "$work/nginx/nginx.pid")" 2>/dev/null || true; }
trap cleanup EXIT
say() { printf '%s\n' "$*"; }
cpu_ticks() { local t=0; for p in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo "$t"; }
wait_port() { for _ in $(seq 100); do curl -sk -o /dev/null "$1" && return 0; sleep 0.05; done; return 1; }

if [ ! -f "$work/a.cid" ] || [ "$(cat "$work/entries" 2>/dev/null)" != "$entries" ]; then
    python3 tools/gen_directory.py --profile study --entries "$entries" -o "$work/a.tsv" >&2
    "$lookup" build -o "$work/a.cid" "$work/a.tsv" --skip-bad-rows >/dev/null 2>&1
    echo "$entries" > "$work/entries"
fi
awk -F'\t' '!/^#/ && NF >= 2 && NR % 100 == 1 && n < 10000 { print $1; n++ }' "$work/a.tsv" > "$work/numbers.txt"
"$lookup" - --db "$work/a.cid" --json < "$work/numbers.txt" > "$work/answers.jsonl"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$work/key.pem" -out "$work/cert.pem" \
    -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 2>/dev/null
rm -f "$work/keys"
key=$("$lookup" serve --keys "$work/keys" --add-key bench --may lookup 2>/dev/null)

"$lookup" serve --db "$work/a.cid" --listen 127.0.0.1:18080 --threads 2 >/dev/null 2>&1 & plain=$!; pids+=("$plain")
"$lookup" serve --db "$work/a.cid" --listen 127.0.0.1:18082 --threads 2 --keys "$work/keys" >/dev/null 2>&1 & keyed=$!; pids+=("$keyed")
"$lookup" serve --db "$work/a.cid" --listen 127.0.0.1:18443 --threads 2 --keys "$work/keys" \
    --tls-cert "$work/cert.pem" --tls-key "$work/key.pem" >/dev/null 2>&1 & tls=$!; pids+=("$tls")
awk '!/[$\047\\]/ { print; exit }' "$work/answers.jsonl" > "$work/answer.json"
nginx_floor "$work" "  server {
    listen 127.0.0.1:18444 ssl;
    ssl_certificate $work/cert.pem;
    ssl_certificate_key $work/key.pem;
    ssl_protocols TLSv1.2 TLSv1.3;
    location / { return 200 '$(cat "$work/answer.json")'; }
  }"
for url in http://127.0.0.1:18080/healthz http://127.0.0.1:18082/healthz https://127.0.0.1:18443/healthz https://127.0.0.1:18444/; do
    wait_port "$url"
done
workers=$(pgrep -P "$(cat "$work/nginx/nginx.pid")" | tr '\n' ' ')

say "## lookup serve, plain / keys / TLS and keys, and nginx with TLS: $entries entries, -c$connections, ${seconds}s runs, $rounds rounds, $(date -u +%Y-%m-%dT%H:%MZ)"
say "machine: $(nproc) processors, $(uptime | sed 's/.*load average/load average/')"
say "$ wrk -t2 -c$connections -d${seconds}s --latency -s tools/serve_wrk.lua [-H 'Authorization: Bearer KEY'] URL -- numbers.txt"
say
printf '%-8s %5s %10s %9s %12s\n' target round "requests/s" "p99 ms" "CPU us/req" | tee "$work/results.txt"
for round in $(seq "$rounds"); do
    for target in plain keys tls nginx; do
        case $target in
            plain) pid=$plain; args=(-s tools/serve_wrk.lua http://127.0.0.1:18080 -- "$work/numbers.txt") ;;
            keys) pid=$keyed; args=(-H "Authorization: Bearer $key" -s tools/serve_wrk.lua http://127.0.0.1:18082 -- "$work/numbers.txt") ;;
            tls) pid=$tls; args=(-H "Authorization: Bearer $key" -s tools/serve_wrk.lua https://127.0.0.1:18443 -- "$work/numbers.txt") ;;
            nginx) pid=$workers; args=(https://127.0.0.1:18444/fixed) ;;
        esac
        before=$(cpu_ticks $pid)
        wrk -t2 -c"$connections" -d"${seconds}s" --latency "${args[@]}" > "$work/wrk.txt"
        after=$(cpu_ticks $pid)
        if grep -q "Non-2xx" "$work/wrk.txt"; then say "WARNING: $target answered other than 200"; fi
        requests=$(awk '/requests in/ {print $1}' "$work/wrk.txt")
        rate=$(awk '/^Requests\/sec/ {printf "%.0f", $2}' "$work/wrk.txt")
        p99=$(awk '$1 == "99%" { v = $2; if (v ~ /us$/) { sub(/us$/, "", v); v /= 1000 } else if (v ~ /ms$/) { sub(/ms$/, "", v) } else if (v ~ /s$/) { sub(/s$/, "", v); v *= 1000 } printf "%.2f", v }' "$work/wrk.txt")
        us=$(awk -v t=$((after - before)) -v r="$requests" 'BEGIN { printf "%.2f", t * 10000 / r }')
        printf '%-8s %5s %10s %9s %12s\n' "$target" "$round" "$rate" "$p99" "$us" | tee -a "$work/results.txt"
    done
done
say
say "medians (ratio to plain, each round's pair first, then the median of those ratios):"
python3 - "$work/results.txt" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1]).read().splitlines()[1:]]
by = {}
for target, rnd, rate, p99, us in rows:
    by.setdefault(target, {})[int(rnd)] = (float(rate), float(p99), float(us))
plain = by["plain"]
print("%-8s %10s %9s %12s %16s %16s" % ("target", "requests/s", "p99 ms", "CPU us/req", "CPU/plain", "requests/plain"))
for target in ["plain", "keys", "tls", "nginx"]:
    runs = by[target]
    cpu = statistics.median([runs[r][2] / plain[r][2] for r in runs])
    rate = statistics.median([runs[r][0] / plain[r][0] for r in runs])
    print("%-8s %10.0f %9.2f %12.2f %16.2f %16.2f" % (target, statistics.median(v[0] for v in runs.values()),
          statistics.median(v[1] for v in runs.values()), statistics.median(v[2] for v in runs.values()), cpu, rate))
PY
