#!/usr/bin/env bash
# The load figures of `lookup serve` in BENCHMARKS.md ("HTTP serving"), measured with wrk against
# the server on 127.0.0.1; not run by CI (about 8 minutes; run it on a quiet machine).
#   1. throughput and latency with keep-alive, and the same load against nginx returning the
#      same bytes from a file and from its configuration (the HTTP floor);
#   2. the server's CPU per request against `lookup - --json` answering the same numbers;
#   3. 100 installs into the followed store during a load of 60 seconds or more: failed and wrong answers
#      (every body checked against the two sets' answers), RSS and descriptors before and after;
#   4. hostile clients (tools/serve_hostile.py: 10,000 idle connections, 500 slowloris, oversized
#      headers and bodies, malformed request lines and escapes) beside a well-behaved load;
#   5. 10,000 idle connections held through a well-behaved load (none reaches its deadline).
# Installs wrk, nginx-light and libmicrohttpd12 with apt-get when missing. Everything runs on
# 127.0.0.1; the data is generated (tools/gen_directory.py --profile study) in $WORK.
#
#   bash tools/bench_serve.sh [--entries N] [--seconds S] [--work DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
entries=1000000
seconds=20
work=/tmp/callerid-serve-bench
while [ $# -gt 0 ]; do
    case "$1" in
        --entries) entries=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        -h|--help) sed -n 2,15p "$0"; exit 0 ;;
        *) echo "error: unknown argument '$1'" >&2; exit 64 ;;
    esac
done
source tools/common.sh
use_swift
# nginx-light only when no nginx is installed (another nginx package serves as well).
ensure_packages wrk libmicrohttpd12 python3 curl $(command -v nginx >/dev/null || echo nginx-light)
swift build -c release --product lookup >&2
lookup=$PWD/.build/release/lookup
mkdir -p "$work"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; [ -f "$work/nginx/nginx.pid" ] && kill "$(cat "$work/nginx/nginx.pid")" 2>/dev/null || true; }
trap cleanup EXIT
say() { printf '%s\n' "$*"; }
run() { say "\$ $*"; "$@"; }
load() { say "machine: $(nproc) processors, $(uptime | sed 's/.*load average/load average/')"; }
cpu_ticks() { local t=0; for p in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo "$t"; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
fds() { ls "/proc/$1/fd" | wc -l; }
wait_port() { for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$1/healthz" && return 0; sleep 0.05; done; return 1; }
# Starts `lookup serve ARGS --listen 127.0.0.1:18080 --threads 2` (stopping the one before), its
# stderr in $work/LOG; $server is its process id.
server=""
serve_on() {
    local log=$1; shift
    if [ -n "$server" ]; then kill "$server"; wait "$server" 2>/dev/null || true; fi
    say "\$ lookup serve $* --listen 127.0.0.1:18080 --threads 2"
    "$lookup" serve "$@" --listen 127.0.0.1:18080 --threads 2 2>"$work/$log" >/dev/null &
    server=$!; pids+=("$server")
    wait_port 18080
}
# The well-behaved load (wrk, $seconds) beside `tools/serve_hostile.py ARGS`, started RAMP seconds
# after it so that its connections are open; its report in $work/NAME.json, wrk's in wrk-NAME.txt.
beside_hostile() {
    local name=$1 ramp=$2; shift 2
    load
    run python3 tools/serve_hostile.py 18080 --seconds $((seconds + ramp + 10)) "$@" > "$work/$name.json" &
    local hostile=$!
    sleep "$ramp"
    say "open connections with the hostile clients in place: $(curl -s http://127.0.0.1:18080/metrics | awk '/^callerid_http_connections / {print $2}')"
    run wrk -t2 -c16 -d${seconds}s --latency -s tools/serve_wrk.lua http://127.0.0.1:18080 -- "$work/numbers.txt" | tee "$work/wrk-$name.txt"
    wait "$hostile"
    say "hostile clients: $(tail -1 "$work/$name.json")"
    # The server closes what the client left open within moments: wait for it before counting.
    for _ in $(seq 100); do
        [ "$(curl -s http://127.0.0.1:18080/metrics | awk '/^callerid_http_connections / {print $2}')" -le 1 ] && break
        sleep 0.05
    done
}

# Data: the study directory, set A, and set B (the same numbers, each label with " (B)").
if [ ! -f "$work/a.cid" ] || [ "$(cat "$work/entries" 2>/dev/null)" != "$entries" ]; then
    python3 tools/gen_directory.py --profile study --entries "$entries" -o "$work/a.tsv" >&2
    awk -F'\t' 'BEGIN { OFS = "\t" } !/^#/ && NF >= 2 { $2 = $2 " (B)" } { print }' "$work/a.tsv" > "$work/b.tsv"
    "$lookup" build -o "$work/a.cid" "$work/a.tsv" --skip-bad-rows >/dev/null 2>&1
    "$lookup" build -o "$work/b.cid" "$work/b.tsv" --skip-bad-rows >/dev/null 2>&1
    for s in a b; do
        rm -rf "$work/set-$s"
        "$lookup" build -o "$work/set-$s/" "$work/$s.tsv" --skip-bad-rows --max-entries $((entries / 4 + 1)) >/dev/null 2>&1
    done
    echo "$entries" > "$work/entries"
fi
# 10,000 numbers of the data (every 100th row), and their answers from each set.
awk -F'\t' '!/^#/ && NF >= 2 && NR % 100 == 1 && n < 10000 { print $1; n++ }' "$work/a.tsv" > "$work/numbers.txt"
"$lookup" - --db "$work/a.cid" --json < "$work/numbers.txt" > "$work/answers-a.jsonl"
"$lookup" - --db "$work/b.cid" --json < "$work/numbers.txt" > "$work/answers-b.jsonl"

say "## lookup serve: $(wc -l < "$work/numbers.txt") numbers of a $entries-entry study directory ($(stat -c %s "$work/a.cid") bytes), $(date -u +%Y-%m-%dT%H:%MZ)"
load
say
say "### 1. Throughput with keep-alive, and the HTTP floor"
serve_on serve.log --db "$work/a.cid"
mkdir -p "$work/nginx/html"
# A real answer as the floor's body (one nginx can quote in its configuration too).
awk '!/[$\047\\]/ { print; exit }' "$work/answers-a.jsonl" > "$work/nginx/html/answer.json"
nginx_floor "$work" "  open_file_cache max=16;
  server {
    listen 127.0.0.1:18081;
    root $work/nginx/html;
    location = /fixed { return 200 '$(cat "$work/nginx/html/answer.json")'; }
  }"
wait_port 18081 || true
workers=$(pgrep -P "$(cat "$work/nginx/nginx.pid")" | tr '\n' ' ')
for c in 16 64; do
    for target in serve nginx nginx-fixed; do
        load
        if [ "$target" = serve ]; then
            before=$(cpu_ticks "$server")
            run wrk -t2 -c$c -d${seconds}s --latency -s tools/serve_wrk.lua http://127.0.0.1:18080 -- "$work/numbers.txt" | tee "$work/wrk-$target-$c.txt"
            after=$(cpu_ticks "$server")
        else
            # nginx: the file (open_file_cache), and the same bytes from its configuration (no file).
            path=/answer.json; [ "$target" = nginx-fixed ] && path=/fixed
            before=$(cpu_ticks $workers)
            run wrk -t2 -c$c -d${seconds}s --latency "http://127.0.0.1:18081$path" | tee "$work/wrk-$target-$c.txt"
            after=$(cpu_ticks $workers)
        fi
        requests=$(awk '/requests in/ {print $1}' "$work/wrk-$target-$c.txt")
        if grep -q "Non-2xx" "$work/wrk-$target-$c.txt"; then say "WARNING: answers other than 200 in this run"; fi
        say "$target -c$c: server CPU $(( (after - before) * 10 )) ms for $requests requests = $(awk -v t=$((after - before)) -v r="$requests" 'BEGIN { printf "%.1f", t * 10000 / r }') us per request"
        say
    done
    rate() { awk '/Requests\/sec/ {print $2}' "$work/wrk-$1-$c.txt"; }
    say "requests per second at -c$c: serve $(rate serve), nginx file $(rate nginx), nginx fixed $(rate nginx-fixed);" \
        "serve / nginx file = $(awk -v a="$(rate serve)" -v b="$(rate nginx)" 'BEGIN { printf "%.2f", a / b }')," \
        "serve / nginx fixed = $(awk -v a="$(rate serve)" -v b="$(rate nginx-fixed)" 'BEGIN { printf "%.2f", a / b }')"
    say
done
kill "$(cat "$work/nginx/nginx.pid")"

say "### 2. The same answers without HTTP: lookup - --json, 1,000,000 lines"
for _ in $(seq 100); do cat "$work/numbers.txt"; done > "$work/numbers-1m.txt"
load
say "\$ /usr/bin/time lookup - --db a.cid --json < numbers-1m.txt > /dev/null"
/usr/bin/time -f "%U user %S sys %e wall seconds, %M KB peak" "$lookup" - --db "$work/a.cid" --json < "$work/numbers-1m.txt" 2>&1 > /dev/null
before=$(cpu_ticks "$server")
say "\$ curl -T numbers-1m.txt -X POST http://127.0.0.1:18080/v1/lookup"
/usr/bin/time -f "%e wall seconds" curl -s -T "$work/numbers-1m.txt" -X POST http://127.0.0.1:18080/v1/lookup -o "$work/batch-1m.jsonl" 2>&1
after=$(cpu_ticks "$server")
say "the server: $(( (after - before) * 10 )) ms of CPU for 1,000,000 numbers in one POST; RSS $(rss_kb "$server") KB; answers identical to lookup -: $(cmp -s "$work/batch-1m.jsonl" <("$lookup" - --db "$work/a.cid" --json < "$work/numbers-1m.txt") && echo yes || echo NO)"
say

say "### 3. 100 store switches during a load of at least 60 seconds"
rm -rf "$work/store"
"$lookup" install --store "$work/store" "$work/set-a" >/dev/null
serve_on serve-store.log --store "$work/store"
sleep 1
rss_before=$(rss_kb "$server"); fds_before=$(fds "$server")
load
# The load runs until the last install is followed (SIGINT stops wrk, which then prints its
# figures): on a busy machine 100 installs of a 1M-entry set take longer than 60 seconds.
say "\$ wrk -t2 -c16 -d600s --latency -s tools/serve_wrk.lua http://127.0.0.1:18080 -- --check answers-a.jsonl answers-b.jsonl   (stopped with SIGINT after the 100th install)"
wrk -t2 -c16 -d600s --latency -s tools/serve_wrk.lua http://127.0.0.1:18080 -- --check "$work/answers-a.jsonl" "$work/answers-b.jsonl" > "$work/wrk-switch.txt" &
wrk_pid=$!; pids+=("$wrk_pid")
started=$(date +%s.%N)
for i in $(seq 100); do
    if [ $((i % 2)) -eq 1 ]; then set=set-b; else set=set-a; fi
    generation=$("$lookup" install --store "$work/store" "$work/$set" --json | sed 's/.*"generation":\([0-9]*\).*/\1/')
    # At most one install every 0.6 seconds: the 100 take 60 seconds or more.
    target=$(awk -v s="$started" -v i="$i" 'BEGIN { printf "%.3f", s + i * 0.6 }')
    now=$(date +%s.%N)
    sleep "$(awk -v t="$target" -v n="$now" 'BEGIN { d = t - n; print (d > 0 ? d : 0) }')"
done
installed=$(date +%s.%N)
for _ in $(seq 100); do
    curl -s "http://127.0.0.1:18080/healthz" | grep -q "\"generation\":$generation," && break
    sleep 0.05
done
sleep 1
kill -INT "$wrk_pid"
wait "$wrk_pid" || true
cat "$work/wrk-switch.txt"
sleep 1
rss_after=$(rss_kb "$server"); fds_after=$(fds "$server")
say "installs: 100 in $(awk -v s="$started" -v e="$installed" 'BEGIN { printf "%.1f", e - s }') s, all during the load; the server followed $(curl -s "http://127.0.0.1:18080/metrics" | awk '/^callerid_reloads_total\{result="ok"\}/ {print $2}') of them (reloads), failed reloads $(curl -s "http://127.0.0.1:18080/metrics" | awk '/^callerid_reloads_total\{result="failed"\}/ {print $2}')"
say "RSS before $rss_before KB, after $rss_after KB ($(( (rss_after - rss_before) )) KB); descriptors before $fds_before, after $fds_after"
say "generation files mapped now: $(grep -o '/gen-[0-9]*/' "/proc/$server/maps" | sort -u | tr '\n' ' ')"
say

say "### 4. Hostile clients beside a well-behaved load"
serve_on serve-hostile.log --db "$work/a.cid"
load
run wrk -t2 -c16 -d${seconds}s --latency -s tools/serve_wrk.lua http://127.0.0.1:18080 -- "$work/numbers.txt" | tee "$work/wrk-calm.txt"
say
beside_hostile hostile 15 --idle 10000 --slow 500
curl -s http://127.0.0.1:18080/metrics | grep -E '^callerid_http_(connections|requests_total\{endpoint="http"|requests_total\{endpoint="other"|requests_total\{endpoint="batch")' || true
say "RSS $(rss_kb "$server") KB, descriptors $(fds "$server")"
load
say

say "### 5. 10,000 idle connections held through the load (a request deadline longer than the run)"
# Section 4's idle connections meet the 10-second deadline together and are reopened together:
# a storm of 10,000 closes and connects every 10 seconds. Here none is closed while wrk runs.
serve_on serve-idle.log --db "$work/a.cid" --request-timeout 120
beside_hostile idle 12 --idle 10000 --slow 0
say "RSS $(rss_kb "$server") KB, descriptors $(fds "$server")"
load
