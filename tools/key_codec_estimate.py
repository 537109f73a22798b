#!/usr/bin/env python3
"""Key codec estimate: what a block codec aware of runs of gap 1 would save on a directory.

    python3 tools/key_codec_estimate.py /tmp/callerid-bench/default-4000000-seed1-gen*.tsv [--block-size 256]

Reads NUMBER<TAB>... rows (distinct numbers, sorted here), cuts them into blocks of
--block-size entries as the writer does, and prints the key bytes per entry of:
  - format 2.0: a run record (nothing stored) when the block is consecutive numbers, else
    Elias-Fano (docs/FORMAT.md 5.4: ceil(m*l/8) lower bytes + 8 * upper words);
  - runs + Elias-Fano: a bitmap of the m entries (1 = one above the previous key) and
    Elias-Fano over the other keys, each lowered by the gap-1 entries before it (the sequence
    stays strictly ascending); per block the smaller of this and format 2.0's record;
  - the empirical entropy of the gaps (tools/data_stats.py's key-gap figure), for the floor.
Block headers, sync entries and value codes are the same in both and left out.
"""
import math
import sys
from collections import Counter


def ef_bytes(m, u):
    """Bytes of format 2.0's Elias-Fano part for m elements above the first key, universe u."""
    if m == 0:
        return 0
    l = 0
    if u // m >= 1:
        l = min(56, (u // m).bit_length() - 1)
    upper_words = ((u >> l) + m + 63) // 64
    return (m * l + 7) // 8 + 8 * upper_words


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__, file=sys.stderr)
        return 64
    block = 256
    if "--block-size" in args:
        i = args.index("--block-size")
        block = int(args[i + 1])
        del args[i:i + 2]
    numbers = set()
    with open(args[0], "rb") as f:
        for line in f:
            tab = line.find(b"\t")
            if tab > 0:
                numbers.add(int(line[:tab]))
    keys = sorted(numbers)
    n = len(keys)
    gaps = Counter(keys[i] - keys[i - 1] for i in range(1, n))
    entropy = -sum(c / (n - 1) * math.log2(c / (n - 1)) for c in gaps.values())
    old = new = 0
    for s in range(0, n, block):
        k = keys[s:s + block]
        m = len(k) - 1
        u = k[-1] - k[0]
        if m > 0 and u == m:
            continue  # a run: nothing stored in either codec
        a = ef_bytes(m, u)
        ones = [i for i in range(1, len(k)) if k[i] - k[i - 1] == 1]
        rest, removed = [], 0
        ones_set = set(ones)
        for i in range(1, len(k)):
            if i in ones_set:
                removed += 1
            else:
                rest.append(k[i] - k[0] - removed)
        b = (m + 7) // 8 + ef_bytes(len(rest), rest[-1] if rest else 0)
        old += a
        new += min(a, b + 1)  # + 1: a byte saying which codec (the header's codec byte is free today)
    print(f"{args[0]}: {n:,} keys, blocks of {block}; gap = 1: {gaps[1] / (n - 1):.1%}")
    print(f"key-gap entropy: {entropy:.2f} bits = {entropy / 8:.3f} B/entry")
    print(f"format 2.0 keys (Elias-Fano or run): {old / n:.3f} B/entry")
    print(f"runs + Elias-Fano, the smaller per block: {new / n:.3f} B/entry ({(new - old) / n:+.3f} B/entry)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
