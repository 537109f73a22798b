#!/usr/bin/env python3
"""TSV rows for the bounded build's label measurements (BENCHMARKS.md, "Labels beyond the
memory limit"): ROWS distinct numbers 79000000000 + a permutation of 0..ROWS-1, each with a
label "Shop <hex>" — all distinct (DISTINCT = 0) or drawn from DISTINCT labels.

usage: python3 tools/gen_label_rows.py ROWS DISTINCT SEED > rows.tsv
"""
import random
import sys

rows, distinct, seed = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
labels = ["Shop %012x" % rng.getrandbits(48) for _ in range(distinct)] if distinct else None
out, buf = sys.stdout, []
for i in range(rows):
    n = 79000000000 + (i * 7919) % rows  # 7919 is prime: a permutation unless it divides ROWS
    label = labels[rng.randrange(distinct)] if labels else "Shop %016x" % rng.getrandbits(64)
    buf.append("%d\t%s\n" % (n, label))
    if len(buf) >= 100000:
        out.write("".join(buf))
        buf = []
out.write("".join(buf))
