#!/usr/bin/env python3
"""Draw the benchmark charts from the results document `callerid-bench compare --results` wrote.

  bench_charts.py docs/benchmarks.json docs/

Writes docs/bench-latency.png (point-lookup percentiles per engine), docs/bench-size.png
(bytes per entry per engine) and docs/bench-scan.png (full ascending scan rate), for the
headline data set (the largest "study" one). Needs matplotlib (pip install matplotlib).
"""

import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

CALLERID = "#1f6feb"
PEER = "#8c959f"


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    doc = json.load(open(argv[1]))
    out = argv[2]
    key = doc["primary"]
    titles = doc["titles"]
    runs = [r for r in doc["results"] if r["dataset"] == key]
    ds = next(d for d in doc["datasets"] if d["key"] == key)
    subtitle = f"{ds['profile']} profile, {ds['entries']:,} entries · {doc['machine'].get('CPU', '')}".strip()
    subtitle = subtitle.split(" (")[0] + f" · {doc['date'][:10]}"
    names = [titles.get(r["engine"], r["engine"]) for r in runs]
    colors = [CALLERID if r["engine"].startswith("callerid") else PEER for r in runs]

    # Latency percentiles (log scale), found lookups, hot page cache.
    fig, ax = plt.subplots(figsize=(9, 0.55 * len(runs) + 1.6), dpi=110)
    h = 0.26
    for j, (k, label, alpha) in enumerate([("lookup_p50_ns", "p50", 1.0), ("lookup_p99_ns", "p99", 0.6),
                                           ("lookup_p999_ns", "p99.9", 0.35)]):
        ys = [i + (j - 1) * h for i in range(len(runs))]
        xs = [r[k] or 0 for r in runs]
        ax.barh(ys, xs, height=h, color=colors, alpha=alpha, label=label, edgecolor="white")
        if k == "lookup_p50_ns":
            for y, x in zip(ys, xs):
                ax.text(x * 1.08, y, fmt_ns(x), va="center", fontsize=7.5)
    ax.set_xscale("log")
    ax.set_yticks(range(len(runs)))
    ax.set_yticklabels(names, fontsize=9)
    ax.invert_yaxis()
    ax.set_xlabel("ns per lookup (log scale); bars: p50, p99, p99.9 over batches of 256")
    ax.set_title(f"Point lookup, found, label included, hot page cache\n{subtitle}", fontsize=10)
    ax.axvline(250, color="#cf222e", lw=1, ls="--")
    ax.text(250 * 1.05, len(runs) - 0.4, "target p50 ≤ 250 ns", color="#cf222e", fontsize=8)
    ax.grid(axis="x", which="both", alpha=0.25)
    from matplotlib.patches import Patch
    ax.legend(handles=[Patch(color=PEER, alpha=a, label=l) for a, l in [(1, "p50"), (0.6, "p99"), (0.35, "p99.9")]],
              loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "bench-latency.png"))
    plt.close(fig)

    # Size per engine.
    sized = [r for r in runs if r["engine"] != "callerid-cabi"]
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(sized) + 1.4), dpi=110)
    xs = [r["bytes_per_entry"] for r in sized]
    ax.barh(range(len(sized)), xs, color=[CALLERID if r["engine"].startswith("callerid") else PEER for r in sized])
    for i, x in enumerate(xs):
        ax.text(x + 0.3, i, f"{x:.2f}", va="center", fontsize=8)
    ax.set_yticks(range(len(sized)))
    ax.set_yticklabels([titles.get(r["engine"], r["engine"]) for r in sized], fontsize=9)
    ax.invert_yaxis()
    ax.axvline(4.0, color="#cf222e", lw=1, ls="--")
    ax.text(4.2, len(sized) - 0.4, "target ≤ 4.0", color="#cf222e", fontsize=8)
    ax.set_xlabel("file bytes per entry")
    ax.set_title(f"Size\n{subtitle}", fontsize=10)
    ax.grid(axis="x", alpha=0.25)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "bench-size.png"))
    plt.close(fig)

    # Scan rate.
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(runs) + 1.4), dpi=110)
    xs = [r["scan_entries_per_s"] / 1e6 for r in runs]
    ax.barh(range(len(runs)), xs, color=colors)
    for i, x in enumerate(xs):
        ax.text(x * 1.08, i, f"{x:.1f} M/s", va="center", fontsize=8)
    ax.set_xscale("log")
    ax.set_yticks(range(len(runs)))
    ax.set_yticklabels(names, fontsize=9)
    ax.invert_yaxis()
    ax.axvline(200, color="#cf222e", lw=1, ls="--")
    ax.text(200 * 1.05, len(runs) - 0.4, "target ≥ 200 M/s", color="#cf222e", fontsize=8)
    ax.set_xlabel("million entries per second (log scale), labels resolved")
    ax.set_title(f"Full ascending scan\n{subtitle}", fontsize=10)
    ax.grid(axis="x", which="both", alpha=0.25)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "bench-scan.png"))
    plt.close(fig)
    print(f"bench_charts: wrote bench-latency.png, bench-size.png, bench-scan.png in {out}", file=sys.stderr)
    return 0


def fmt_ns(x):
    if x >= 1e6:
        return f"{x / 1e6:.1f} ms"
    if x >= 1e3:
        return f"{x / 1e3:.1f} µs"
    return f"{x:.0f} ns"


if __name__ == "__main__":
    sys.exit(main(sys.argv))
