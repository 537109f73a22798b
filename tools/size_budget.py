#!/usr/bin/env python3
"""Where a database file's bytes go, part by part, against the data's entropy floor.

  size_budget.py FILE.cid [STATS.json] [--json]

FILE.cid is read for its section lengths and, record by record, the parts of the block
records (docs/FORMAT.md 5.4): headers, sync tables, upper words (and how many of their bits
the last set bit needs), lower bytes, value streams. STATS.json is the output of
`tools/data_stats.py --json` for the directory the file was built from; with it, each part
is set beside the share of the floor it stands for:

  keys          upper words + lower bytes + gap-1 bitmaps   key-gap entropy / 8
  value codes   value streams                               (label + category entropy) / 8
  labels        hot offsets, hot labels, symbol table,      LZ4HC of the distinct label text
                cold index, cold labels (3.1: the LZ4
                cold label index and groups)
  structure     record headers, sync tables, block index,   nothing (what the format spends to
                summary, value categories, the rest          find and check things)

All figures are bytes per entry. The floor is data_stats.py's: a rough lower bound for any
format that stores this information.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from parse_format import u16, u32, u64  # noqa: E402  (the independent parser's readers)

SECTION_NAMES = {1: "categories", 2: "block summary", 3: "block index", 4: "block records",
                 5: "value code lengths", 6: "value categories", 7: "hot label offsets",
                 8: "hot labels", 9: "label symbol table", 10: "cold label index",
                 11: "cold labels", 12: "ranges", 13: "LZ4 cold label index", 14: "LZ4 cold labels"}
LABEL_SECTIONS = (7, 8, 9, 10, 11, 13, 14)


def budget(path):
    f = open(path, "rb").read()
    entries, blocks, sync_shift, table = u64(f, 24), u32(f, 32), f[44], u64(f, 48)
    footer = len(f) - 32
    sections = {}
    for i in range((footer - table) // 32):
        e = table + 32 * i
        sections[u32(f, e)] = (u64(f, e + 8), u64(f, e + 16))
    records, _ = sections[4]
    index, _ = sections[3]
    parts = dict(headers=0, sync=0, bitmaps=0, upper=0, upper_needed=0.0, lower=0, values=0)
    for b in range(blocks):
        start, end = u32(f, index + 12 * b + 8), u32(f, index + 12 * (b + 1) + 8)
        r = records + start
        n, codec, upper_words, lower_bytes = u16(f, r), f[r + 3], u16(f, r + 4), u16(f, r + 6)
        m = n - 1
        syncs = m >> sync_shift
        bitmap_words = (m + 63) // 64 if codec == 2 else 0
        upper_start = r + 8 + 2 * syncs + 8 * bitmap_words
        words = [u64(f, upper_start + 8 * w) for w in range(upper_words)]
        last = max((64 * w + x.bit_length() for w, x in enumerate(words) if x), default=0)
        parts["headers"] += 8
        parts["sync"] += 2 * syncs
        parts["bitmaps"] += 8 * bitmap_words
        parts["upper"] += 8 * upper_words
        parts["upper_needed"] += last / 8
        parts["lower"] += lower_bytes
        parts["values"] += (end - start) - (8 + 2 * syncs + 8 * bitmap_words + 8 * upper_words + lower_bytes)
    per = {k: v / entries for k, v in parts.items()}
    lengths = {k: length for k, (_, length) in sections.items()}
    labels = sum(lengths.get(k, 0) for k in LABEL_SECTIONS) / entries
    keys = per["upper"] + per["lower"] + per["bitmaps"]
    structure = len(f) / entries - keys - per["values"] - labels
    return dict(file=path, entries=entries, bytes=len(f), bytes_per_entry=len(f) / entries,
                keys=keys, value_codes=per["values"], labels=labels, structure=structure,
                record_headers=per["headers"], sync_tables=per["sync"],
                upper_words_unused=per["upper"] - per["upper_needed"],
                sections={SECTION_NAMES.get(k, str(k)): lengths[k] / entries for k in sorted(lengths)})


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file")
    ap.add_argument("stats", nargs="?")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    b = budget(a.file)
    floor = None
    if a.stats:
        s = json.load(open(a.stats))
        floor = dict(keys=s["key_gap_entropy_bits"] / 8,
                     value_codes=(s["label_entropy_bits"] + s["category_entropy_bits"]) / 8,
                     labels=s["label_text_lz4hc_bytes"] / s["entries"], structure=0.0)
        b["floor"] = floor
        b["floor_bytes_per_entry"] = sum(floor.values())
    if a.json:
        print(json.dumps(b, indent=1))
        return
    print(f"{b['file']}: {b['entries']:,} entries, {b['bytes']:,} bytes, {b['bytes_per_entry']:.3f} B/entry")
    print(f"{'part':12s} {'B/entry':>8s}" + (f" {'floor':>8s} {'above':>8s}" if floor else ""))
    for part in ("keys", "value_codes", "labels", "structure"):
        line = f"{part:12s} {b[part]:8.3f}"
        if floor:
            line += f" {floor[part]:8.3f} {b[part] - floor[part]:+8.3f}"
        print(line)
    total = f"{'all':12s} {b['bytes_per_entry']:8.3f}"
    if floor:
        total += f" {b['floor_bytes_per_entry']:8.3f} {b['bytes_per_entry'] - b['floor_bytes_per_entry']:+8.3f}"
    print(total)
    print(f"of the keys: upper-word bits past the last set bit {b['upper_words_unused']:.3f}; "
          f"of the structure: record headers {b['record_headers']:.3f}, sync tables {b['sync_tables']:.3f}, "
          + ", ".join(f"{k} {v:.3f}" for k, v in b["sections"].items() if k in ("block index", "block summary", "value categories")))


if __name__ == "__main__":
    main()
