#!/usr/bin/env python3
"""Queries over many packs against one file (BENCHMARKS.md, "Queries over many packs").

Runs `lookup` as a process over a build directory (or store) of many packs and over one
database file of the same rows, alternating the two (paired runs after warm-up pairs, files
hot), and prints per case the medians of the wall time (fork to exit), of the CPU time (user +
system, from wait4) and of the child's peak RSS, and the medians of the pair-by-pair wall and
CPU ratios. Usage:
    python3 tools/bench_packs.py --lookup PATH --one one.cid --packs bundle [--packs store] \\
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
    lines = sum(1 for _ in open(a.batch))
    print("| case | --db | packs wall ms | one file wall ms | wall ratio | packs CPU ms | one file CPU ms | CPU ratio | packs peak MB | one file peak MB |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for packs in a.packs:
        cases = [("query (hit)", [a.hit], None), ("query (miss)", [a.miss], None), (f"batch of {lines:,} lines", ["-"], a.batch)]
        for name, args, stdin in cases:
            many = [a.lookup] + args + ["--db", packs]
            one = [a.lookup] + args + ["--db", a.one]
            for _ in range(3): run(many, stdin); run(one, stdin)   # warm the page cache
            m_wall, m_cpu, m_rss, o_wall, o_cpu, o_rss, r_wall, r_cpu = [], [], [], [], [], [], [], []
            for _ in range(a.runs):
                w1, k1, _, c1 = run(many, stdin)
                w2, k2, _, c2 = run(one, stdin)
                m_wall.append(w1); m_cpu.append(c1); m_rss.append(k1)
                o_wall.append(w2); o_cpu.append(c2); o_rss.append(k2)
                r_wall.append(w1 / w2)
                if c2 > 0: r_cpu.append(c1 / c2)
            med = statistics.median
            print(f"| {name} | {os.path.basename(packs.rstrip('/'))} | {med(m_wall):.2f} | {med(o_wall):.2f} | {med(r_wall):.2f}x | "
                  f"{med(m_cpu):.1f} | {med(o_cpu):.1f} | {med(r_cpu) if r_cpu else float('nan'):.2f}x | {med(m_rss):.1f} | {med(o_rss):.1f} |")

if __name__ == "__main__":
    main()
