#!/usr/bin/env python3
"""Print the characteristics of a directory TSV that decide how small a database can be.

  data_stats.py directory.tsv [--json]

NUMBER<TAB>LABEL<TAB>CATEGORY[<TAB>WEIGHT] per line, numbers as E.164 digits (the output of
gen_directory.py without --messy). A repeated number keeps its last row, as `lookup build`.

Figures (entropies are empirical Shannon entropies, bits per entry):
  tsv_bytes_per_entry    input size / rows
  key_gap_entropy_bits   entropy of the gaps between consecutive sorted numbers, each gap
                         value a symbol (the first number counts as a gap from 0)
  gap1_share             share of gaps equal to 1 (consecutive runs)
  label_entropy_bits     entropy of the label value over entries (each distinct label a symbol)
  category_entropy_bits  entropy of the category over entries
  distinct_labels        distinct non-empty labels, and their UTF-8 bytes
  label_text_lz4hc       those bytes, sorted by frequency, in 16 KiB LZ4HC-12 chunks (needs
                         the `lz4` module from PyPI; omitted without it)
  floor_bytes_per_entry  (key gap + label + category entropy) / 8 + LZ4HC label text / entries
"""

import argparse
import json
import math
import sys
from collections import Counter


def entropy(counts, total):
    h = 0.0
    for c in counts:
        p = c / total
        h -= p * math.log2(p)
    return h


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tsv")
    ap.add_argument("--json", action="store_true", help="one JSON object instead of text")
    a = ap.parse_args(argv)

    rows = {}
    size = 0
    with open(a.tsv, "rb") as f:
        for line in f:
            size += len(line)
            p = line.rstrip(b"\r\n").split(b"\t")
            rows[int(p[0])] = (p[1], p[2] if len(p) > 2 else b"identify")
    n = len(rows)
    if n == 0:
        sys.exit("data_stats: no rows")
    keys = sorted(rows)
    gaps = Counter()
    prev = 0
    for k in keys:
        gaps[k - prev] += 1
        prev = k
    labels = Counter(v[0] for v in rows.values())
    cats = Counter(v[1] for v in rows.values())
    distinct = [l for l in labels if l]
    distinct_bytes = sum(len(l) for l in distinct)

    out = {
        "entries": n,
        "tsv_bytes": size,
        "tsv_bytes_per_entry": round(size / n, 2),
        "key_gap_entropy_bits": round(entropy(gaps.values(), n), 2),
        "gap1_share": round(gaps[1] / n, 3),
        "label_entropy_bits": round(entropy(labels.values(), n), 2),
        "category_entropy_bits": round(entropy(cats.values(), n), 2),
        "categories": len(cats),
        "distinct_labels": len(distinct),
        "distinct_label_bytes": distinct_bytes,
        "mean_label_bytes_per_entry": round(sum(len(l) * c for l, c in labels.items()) / n, 2),
    }
    try:
        import lz4.block
        text = b"".join(l + b"\0" for l, _ in labels.most_common() if l)
        z = sum(len(lz4.block.compress(text[i:i + 16384], mode="high_compression", compression=12,
                                       store_size=False))
                for i in range(0, len(text), 16384))
        out["label_text_lz4hc_bytes"] = z
    except ImportError:
        z = distinct_bytes
    bits = out["key_gap_entropy_bits"] + out["label_entropy_bits"] + out["category_entropy_bits"]
    out["floor_bytes_per_entry"] = round(bits / 8 + z / n, 2)

    if a.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            print(f"{k:28} {v:,}" if isinstance(v, int) else f"{k:28} {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
