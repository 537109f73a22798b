#!/usr/bin/env python3
"""Start-up and one query as a process: `lookup` against the sqlite3 CLI.

Runs each command N times, alternating the two tools (paired runs, file hot), and reports the
median wall time (fork to exit, measured here) and the median peak RSS (ru_maxrss of the child,
from os.wait4). Usage:
    python3 tools/bench_startup.py --lookup PATH --db F.cid --sqlite F.sqlite --numbers N1,N2 [--runs 20]
The sqlite file holds one table (--table, default `entries`) of (number INTEGER PRIMARY KEY,
label TEXT, category TEXT); BENCHMARKS.md, "Start-up", makes both files from the same TSV.
"""
import argparse, os, statistics, sys, time

def run(argv, stdin=None):
    """Runs argv once (stdout and stderr to /dev/null, stdin from the file `stdin` if given):
    wall ms (fork to exit), peak RSS MB of the child, exit code, CPU ms (user + system)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.dup2(devnull, 1); os.dup2(devnull, 2)
        if stdin is not None:
            os.dup2(os.open(stdin, os.O_RDONLY), 0)
        try:
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    os.close(devnull)
    return wall * 1000, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status), (usage.ru_utime + usage.ru_stime) * 1000

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--lookup", required=True); p.add_argument("--db", required=True)
    p.add_argument("--sqlite", required=True); p.add_argument("--numbers", required=True)
    p.add_argument("--table", default="entries"); p.add_argument("--miss", default="10000000000"); p.add_argument("--runs", type=int, default=20)
    a = p.parse_args()
    sqlite = "/usr/bin/sqlite3"
    cases = []
    for n in a.numbers.split(",") + [a.miss]:
        kind = "miss" if n == a.miss else "hit"
        cases.append((f"query ({kind})",
                      [a.lookup, n, "--db", a.db],
                      [sqlite, a.sqlite, f"SELECT number, label, category FROM {a.table} WHERE number = {n};"]))
    cases.append(("--help", [a.lookup, "--help"], [sqlite, "-help"]))
    print(f"| case | lookup wall ms | sqlite3 wall ms | wall ratio | lookup peak MB | sqlite3 peak MB | memory ratio |")
    print(f"|---|---:|---:|---:|---:|---:|---:|")
    for name, lk, sq in cases:
        for _ in range(3): run(lk); run(sq)   # warm the page cache and the binaries
        lw, lm, sw, sm = [], [], [], []
        for _ in range(a.runs):
            w, m, _, _ = run(lk); lw.append(w); lm.append(m)
            w, m, _, _ = run(sq); sw.append(w); sm.append(m)
        L, S = statistics.median(lw), statistics.median(sw)
        LM, SM = statistics.median(lm), statistics.median(sm)
        print(f"| {name} | {L:.2f} | {S:.2f} | {L/S:.2f}x | {LM:.1f} | {SM:.1f} | {LM/SM:.2f}x |")

if __name__ == "__main__":
    main()
