#!/usr/bin/env bash
# Feeds hostile input rows to a release `lookup build --skip-bad-rows` and measures each run
# with /usr/bin/time -v: exit status, stderr size and maximum resident set size.
#
#   bash tools/hostile-input.sh            # all cases, RSS limit 400 MB each
#   RSS_LIMIT_MB=200 bash tools/hostile-input.sh
#
# Cases: 100,000 bad rows in a row (several reasons); 100,000 rows of invalid UTF-8 and NUL
# bytes; 10 MB lines (number, label, category, no TAB, NULs); a baseline of 100,000 good rows;
# and, through the pipeline (CSV), 100,000 bad CSV rows and an unterminated quote. Every run
# must end with exit 0 and a valid database of the good rows, within the RSS limit.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/opt/swift/usr/bin"
limit_mb=${RSS_LIMIT_MB:-400}

[ -x /usr/bin/time ] || apt-get install -y -q time > /dev/null
swift build -c release --product lookup > /dev/null
bin=$(swift build -c release --show-bin-path)/lookup
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 - "$work" <<'PY'
import sys, os
w = sys.argv[1]
def write(name, data):
    with open(os.path.join(w, name), "wb") as f: f.write(data)
good = b"79131234567\tFirst good\n"
last = b"79131234568\tLast good\n"
reasons = [b"12a4\tletters\n", b"0123\tleading zero\n", b"1234567890123456\ttoo long\n",
           b"no tab at all\n", b"79131234569\tx\tBad Category!\n", b"1\t2\t3\t4\n"]
write("bad-rows.tsv", good + b"".join(reasons[i % len(reasons)] for i in range(100_000)) + last)
enc = [b"79131234569\t\xff\xfe label\n", b"7913\x001234567\tnul in number\n",
       b"79131234569\tnul\x00label\n", b"\xed\xa0\x80\tsurrogate\n", b"79131234569\t\xc0\xafoverlong\n"]
write("utf8-nul.tsv", good + b"".join(enc[i % len(enc)] for i in range(100_000)) + last)
big = 10 << 20
write("ten-mb-lines.tsv", good + b"1" * big + b"\tlabel\n" + b"79131234569\t" + b"a" * big + b"\n"
      + b"79131234570\tx\t" + b"b" * big + b"\n" + b"c" * big + b"\n" + b"\x00" * big + b"\tx\n" + last)
write("good-rows.tsv", b"".join(b"%d\tBusiness %d\n" % (79000000000 + 7 * i, i % 5000) for i in range(100_000)))
csvbad = [b"12a4,letters\n", b"\"unclosed,x\"y\n", b",\n", b"0123,zero\n"]
write("bad-rows.csv", b"number,label\n79131234567,First good\n" + b"".join(csvbad[i % len(csvbad)] for i in range(100_000)) + b"79131234568,Last good\n")
write("unterminated.csv", b"number,label\n79131234567,First good\n79131234568,\"never closed\n"
      + b"".join(b"%d,row %d\n" % (79000000000 + i, i) for i in range(100_000)))
PY

printf '%-22s %6s %10s %12s %8s %s\n' case exit "rss MB" "stderr B" entries result
failed=0
run() {  # NAME FILE EXPECTED_ENTRIES(or -)
    local name=$1 input=$2 expect=$3 out="$work/$1.cid"
    local status=0
    /usr/bin/time -v -o "$work/$name.time" "$bin" build --skip-bad-rows -o "$out" "$work/$input" \
        > "$work/$name.out" 2> "$work/$name.err" || status=$?
    local rss=$(( $(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/$name.time") / 1024 ))
    local errbytes; errbytes=$(wc -c < "$work/$name.err")
    local entries=-
    [ -f "$out" ] && entries=$("$bin" info --json "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["entries"])')
    local result=ok
    if [ "$status" -ne 0 ]; then result="exit $status"; fi
    if [ "$rss" -gt "$limit_mb" ]; then result="rss over ${limit_mb} MB"; fi
    if [ "$expect" != - ] && [ "$entries" != "$expect" ]; then result="entries $entries, expected $expect"; fi
    if [ -f "$out" ] && ! "$bin" verify "$out" > /dev/null; then result="verify failed"; fi
    [ "$result" = ok ] || failed=1
    printf '%-22s %6s %10s %12s %8s %s\n' "$name" "$status" "$rss" "$errbytes" "$entries" "$result"
}
run good-rows good-rows.tsv 100000
run bad-rows bad-rows.tsv 2
run utf8-nul utf8-nul.tsv 2
run ten-mb-lines ten-mb-lines.tsv 2
if "$bin" build --help | grep -q -- --max-bad-rows; then
    run csv-bad-rows bad-rows.csv 2
    run csv-unterminated unterminated.csv -
fi
echo "first lines of stderr for bad-rows:"; head -3 "$work/bad-rows.err"
echo "last lines of stderr for bad-rows:"; tail -4 "$work/bad-rows.err"
echo "stderr for ten-mb-lines:"; head -8 "$work/ten-mb-lines.err" | cut -c1-200
if [ -f "$work/csv-unterminated.err" ]; then echo "stderr for csv-unterminated:"; head -5 "$work/csv-unterminated.err" | cut -c1-200; fi
exit $failed
