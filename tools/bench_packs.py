#!/usr/bin/env python3
"""Queries over many packs against one file (BENCHMARKS.md, "Queries over many packs").

Runs `lookup` as a process over a build directory (or store) of many packs and over one
database file of the same rows, alternating the two (paired runs after warm-up pairs, files
hot), and prints per case the medians of the wall time (fork to exit) and of the child's peak
RSS, and the median of the pair-by-pair wall ratio. Usage:
    python3 tools/bench_packs.py --lookup PATH --one one.cid --packs bundle [--packs store] \
        --hit N --miss N --batch numbers.txt [--runs 20]
tools/bench_packs.sh makes the data and runs it.
"""
import argparse, os, statistics, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_startup import run

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--lookup", required=True); p.add_argument("--one", required=True)
    p.add_argument("--packs", action="append", required=True)
    p.add_argument("--hit", required=True); p.add_argument("--miss", required=True)
    p.add_argument("--batch", required=True); p.add_argument("--runs", type=int, default=20)
    a = p.parse_args()
    print("| case | --db | packs wall ms | one file wall ms | wall ratio (median of pairs) | packs peak MB | one file peak MB |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for packs in a.packs:
        cases = [("query (hit)", [a.hit], None), ("query (miss)", [a.miss], None),
                 ("batch of %d lines" % sum(1 for _ in open(a.batch)), ["-"], a.batch)]
        for name, args, stdin in cases:
            many = [a.lookup] + args + ["--db", packs]
            one = [a.lookup] + args + ["--db", a.one]
            runs = a.runs if stdin is None else max(5, a.runs // 4)
            for _ in range(3): run(many, stdin); run(one, stdin)   # warm the page cache
            mw, mm, ow, om, ratio = [], [], [], [], []
            for _ in range(runs):
                w1, m1, _ = run(many, stdin); w2, m2, _ = run(one, stdin)
                mw.append(w1); mm.append(m1); ow.append(w2); om.append(m2); ratio.append(w1 / w2)
            print(f"| {name} | {os.path.basename(packs.rstrip('/'))} | {statistics.median(mw):.2f} | {statistics.median(ow):.2f} | "
                  f"{statistics.median(ratio):.2f}x | {statistics.median(mm):.1f} | {statistics.median(om):.1f} |")

if __name__ == "__main__":
    main()
