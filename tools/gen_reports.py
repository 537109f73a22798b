#!/usr/bin/env python3
"""Generate a deterministic log of people's reports for `lookup reports` (docs/REPORTS.md).

CSV with the header `number,reporter,time,category`: an E.164 number with its '+' (Russian
mobile numbers, +79…), a reporter as 16 hex digits (an opaque hash), Unix seconds, and a
blocking category or `safe`. The shape of a real complaint log:

- spammers: a few thousand numbers (N/2500, at least 1000) that draw most reports (60%),
  Zipf-like (the k-th busiest gets ~1/k^0.9 of them); each has a main category (85% of its
  reports), some other categories (10%) and some `safe` verdicts (5%);
- grey numbers (3%): N/200 numbers with a few reports each (Poisson, ~6), any category, 20%
  `safe`: the ones near the block score and the minimum of reporters;
- a long tail (32%): numbers with one report (70%) or two, any category, 10% `safe`;
- a handful of script reporters (5% of the reports, 5 scripts): each active on ~20 days and
  filing thousands of reports on such a day, half on spammer numbers, half on random numbers;
- reporters otherwise drawn uniformly from N/8 ids, so ~N/8 of them report (some report a
  number twice: the latest decides);
- times uniform over the 372 days before --now (so ~2% fall outside the 365-day window).

The rows come in random order, in chunks of a million generated with numpy (streaming: memory
stays small at any N). The same --rows, --seed and --now always give the same bytes.

  gen_reports.py --rows 10000000 --seed 1 -o /tmp/reports-10M.csv
"""

import argparse
import sys

try:
    import numpy as np
except ImportError:  # pragma: no cover
    sys.exit("error: gen_reports.py needs numpy (Debian: python3-numpy; or pip install numpy)")

# The blocking categories (Category.blockingNames) and the verdict `safe`.
CATEGORIES = ["block", "collector", "fraud", "pyramid", "robocall", "scam", "spam", "survey", "telemarketing"]
SAFE = len(CATEGORIES)
# 2026-12-05T00:00:00Z: the fixed "now" of the log (pass it to `lookup reports --now`).
DEFAULT_NOW = 1796428800
DAY = 86400
SPAN_DAYS = 372
CHUNK = 1 << 20
SCRIPTS = 5
SCRIPT_DAYS = 20

MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def mix64(x):
    """splitmix64's finalizer over a uint64 array (wrapping arithmetic)."""
    x = x.astype(np.uint64)
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x = x ^ (x >> np.uint64(31))
    return x


def digits(values, width):
    """The decimal digits of non-negative integers as a (n, width) uint8 matrix, zero-padded."""
    out = np.empty((len(values), width), dtype=np.uint8)
    v = values.astype(np.uint64)
    for i in range(width - 1, -1, -1):
        out[:, i] = (v % np.uint64(10)).astype(np.uint8) + 0x30
        v = v // np.uint64(10)
    return out


HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


def hex16(values):
    out = np.empty((len(values), 16), dtype=np.uint8)
    v = values.astype(np.uint64)
    for i in range(15, -1, -1):
        out[:, i] = HEX[(v & np.uint64(15)).astype(np.intp)]
        v = v >> np.uint64(4)
    return out


# Category text padded to one width, with the row's newline after it.
CAT_WIDTH = max(len(c) for c in CATEGORIES + ["safe"]) + 1
CAT_BYTES = np.zeros((len(CATEGORIES) + 1, CAT_WIDTH), dtype=np.uint8)
CAT_LEN = np.zeros(len(CATEGORIES) + 1, dtype=np.intp)
for i, name in enumerate(CATEGORIES + ["safe"]):
    b = (name + "\n").encode()
    CAT_BYTES[i, : len(b)] = np.frombuffer(b, dtype=np.uint8)
    CAT_LEN[i] = len(b)


def rows_bytes(national, reporter, time, category):
    """CSV rows: '+7' + 10 national digits, reporter hex, time, category."""
    n = len(national)
    fixed = 2 + 10 + 1 + 16 + 1 + 10 + 1
    width = fixed + CAT_WIDTH
    m = np.zeros((n, width), dtype=np.uint8)
    m[:, 0] = ord("+")
    m[:, 1] = ord("7")
    m[:, 2:12] = digits(national, 10)
    m[:, 12] = ord(",")
    m[:, 13:29] = hex16(reporter)
    m[:, 29] = ord(",")
    m[:, 30:40] = digits(time, 10)
    m[:, 40] = ord(",")
    m[:, 41:] = CAT_BYTES[category]
    mask = np.arange(width)[None, :] < (fixed + CAT_LEN[category])[:, None]
    return m[mask].tobytes()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, required=True, help="reports to write")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--now", type=int, default=DEFAULT_NOW, help=f"Unix seconds (default {DEFAULT_NOW}, 2026-12-05T00:00:00Z)")
    p.add_argument("-o", "--output", default="-")
    a = p.parse_args()
    if a.rows < 1:
        p.error("--rows must be at least 1")

    rng = np.random.Generator(np.random.PCG64(a.seed))
    total = a.rows
    spammers = max(1000, total // 2500)
    reporters = max(16, total // 8)
    salt = np.uint64(rng.integers(0, 1 << 63))

    # Spammer numbers: distinct national numbers 9000000000… spread by a permutation-like mix.
    spam_numbers = np.unique(np.uint64(9_000_000_000) + mix64(np.arange(spammers, dtype=np.uint64) + salt) % np.uint64(1_000_000_000))
    spammers = len(spam_numbers)
    rng.shuffle(spam_numbers)
    spam_weight = 1.0 / np.arange(1, spammers + 1) ** 0.9
    spam_cdf = np.cumsum(spam_weight / spam_weight.sum())
    spam_main = rng.integers(0, len(CATEGORIES), spammers)
    grey_numbers = np.uint64(9_000_000_000) + rng.integers(0, 1_000_000_000, max(100, total // 200), dtype=np.uint64)
    # Script reporters: ids past the honest ones, each active on SCRIPT_DAYS days.
    script_days = rng.integers(0, SPAN_DAYS, (SCRIPTS, SCRIPT_DAYS))
    oldest = a.now - SPAN_DAYS * DAY

    out = sys.stdout.buffer if a.output == "-" else open(a.output, "wb", buffering=1 << 22)
    out.write(b"number,reporter,time,category\n")
    done = 0
    while done < total:
        n = min(CHUNK, total - done)
        kind = rng.random(n)  # < .60 spammer, < .63 grey, < .95 tail, else script
        national = np.empty(n, dtype=np.uint64)
        reporter = rng.integers(0, reporters, n, dtype=np.uint64)
        time = rng.integers(oldest, a.now + 1, n, dtype=np.int64)
        category = rng.integers(0, len(CATEGORIES), n)

        spam = kind < 0.60
        k = np.searchsorted(spam_cdf, rng.random(spam.sum()))
        k = np.minimum(k, spammers - 1)
        national[spam] = spam_numbers[k]
        verdict = rng.random(spam.sum())
        main_cat = spam_main[k]
        cats = np.where(verdict < 0.85, main_cat, np.where(verdict < 0.95, category[spam], SAFE))
        category[spam] = cats

        grey = (kind >= 0.60) & (kind < 0.63)
        g_n = int(grey.sum())
        national[grey] = grey_numbers[rng.integers(0, len(grey_numbers), g_n)]
        category[grey] = np.where(rng.random(g_n) < 0.20, SAFE, category[grey])

        tail = (kind >= 0.63) & (kind < 0.95)
        t_idx = np.flatnonzero(tail)
        tail_numbers = np.uint64(9_000_000_000) + rng.integers(0, 1_000_000_000, len(t_idx), dtype=np.uint64)
        # 30% of tail numbers get a second report: the next tail row repeats the number.
        twice = rng.random(len(t_idx)) < 0.3
        repeat = np.zeros(len(t_idx), dtype=bool)
        repeat[1:] = twice[:-1]
        tail_numbers[1:][repeat[1:]] = tail_numbers[:-1][repeat[1:]]
        national[tail] = tail_numbers
        category[tail] = np.where(rng.random(len(t_idx)) < 0.10, SAFE, category[tail])

        script = kind >= 0.95
        s_n = int(script.sum())
        which = rng.integers(0, SCRIPTS, s_n)
        reporter[script] = np.uint64(reporters) + which.astype(np.uint64)
        day = script_days[which, rng.integers(0, SCRIPT_DAYS, s_n)]
        time[script] = oldest + day * DAY + rng.integers(0, DAY, s_n)
        time[script] = np.minimum(time[script], a.now)
        on_spam = rng.random(s_n) < 0.5
        ks = np.minimum(np.searchsorted(spam_cdf, rng.random(s_n)), spammers - 1)
        national[script] = np.where(on_spam, spam_numbers[ks],
                                    np.uint64(9_000_000_000) + rng.integers(0, 1_000_000_000, s_n, dtype=np.uint64))

        out.write(rows_bytes(national, mix64(reporter ^ salt), time, category))
        done += n
    if out is not sys.stdout.buffer:
        out.close()


if __name__ == "__main__":
    main()
