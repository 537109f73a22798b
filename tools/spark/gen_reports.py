#!/usr/bin/env python3
"""A seeded log of people's reports for checking the Spark job's --reports mode against
`lookup reports` (tools/spark/test.sh). Standard library only: the executors' and the test's
Python need nothing else.

JSON Lines, one report a line: number, reporter, time, category, region, and a comment that
both sides ignore. The shape makes every rule of the score matter (docs/REPORTS.md):

- busy numbers (a few thousand) draw most reports, Zipf-like, each with a main category and
  some `safe` verdicts: the blocked ones;
- grey numbers with a handful of reports each: near the block score and --min-reporters;
- a long tail of numbers reported once or twice;
- script reporters filing hundreds of reports on some days: the daily cap;
- reporters who report a number again (the latest decides), sometimes in the same second;
- times over the 380 days before --now and a few after it: the window;
- numbers written as E.164 (+79…), as digits alone, and nationally (8 9xx …, for --country RU),
  so the normalizer reads them; regions from the number (ru-NN) for --split-by field;
- a few bad rows (a reporter that is a phone number, a time in milliseconds, an unknown
  category) at known lines, for --skip-bad-rows and the reports of file:line.

The same --rows, --seed and --now give the same bytes.

  gen_reports.py --rows 2000000 --seed 11 -o reports.jsonl
"""
import argparse
import json
import datetime
import random

CATEGORIES = ["collector", "fraud", "pyramid", "robocall", "scam", "spam", "survey", "telemarketing", "block"]
NOW = 1796428800            # 2026-12-05T00:00:00Z
DAY = 86400


def number_text(rng, n):
    """The number 7 9XX XXX XX XX written one of the ways a backend receives it."""
    digits = str(n)
    pick = rng.random()
    if pick < 0.80:
        return "+" + digits
    if pick < 0.90:
        return digits
    rest = digits[1:]
    return f"8 {rest[:3]} {rest[3:6]}-{rest[6:8]}-{rest[8:]}"


def time_text(rng, t):
    if rng.random() < 0.5:
        return str(t)
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--now", type=int, default=NOW, help="Unix seconds (default 2026-12-05T00:00:00Z)")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    busy = [79000000000 + rng.randrange(1_000_000_000) for _ in range(max(a.rows // 600, 50))]
    busy_category = [rng.choice(CATEGORIES) for _ in busy]
    grey = [79000000000 + rng.randrange(1_000_000_000) for _ in range(max(a.rows // 100, 50))]
    reporters = max(a.rows // 6, 100)
    scripts = [f"script-{k:02d}" for k in range(8)]
    script_days = {s: {rng.randrange(380) for _ in range(15)} for s in scripts}
    weights = [1 / (k + 1) ** 0.9 for k in range(len(busy))]
    cumulative, total = [], 0.0
    for w in weights:
        total += w
        cumulative.append(total)
    previous = []           # (number, reporter, time) of recent rows, for reports again
    with open(a.output, "w", encoding="utf-8", newline="\n") as out:
        line = 0
        while line < a.rows:
            line += 1
            if line % 250_000 == 17:        # a few bad rows at known lines
                kind = (line // 250_000) % 3
                bad = {"number": "+79130000001", "reporter": "+7 913 555-12-34", "time": str(a.now - DAY),
                       "category": "spam", "region": "ru-91"}
                if kind == 1:
                    bad.update(reporter="r-bad", time=str((a.now - DAY) * 1000))
                elif kind == 2:
                    bad.update(reporter="r-bad", category="lottery")
                out.write(json.dumps(bad) + "\n")
                continue
            r = rng.random()
            age = rng.randrange(380 * DAY)
            t = a.now - age if rng.random() > 0.001 else a.now + rng.randrange(1, 30 * DAY)
            if r < 0.55:
                k = rng.random() * total
                lo, hi = 0, len(cumulative) - 1
                while lo < hi:
                    mid = (lo + hi) // 2
                    if cumulative[mid] < k:
                        lo = mid + 1
                    else:
                        hi = mid
                number = busy[lo]
                v = rng.random()
                category = busy_category[lo] if v < 0.85 else ("safe" if v < 0.92 else rng.choice(CATEGORIES))
                reporter = f"u{rng.randrange(reporters):08x}"
            elif r < 0.75:
                number = rng.choice(grey)
                category = "safe" if rng.random() < 0.2 else rng.choice(CATEGORIES)
                reporter = f"u{rng.randrange(reporters):08x}"
            elif r < 0.90:
                number = 79000000000 + rng.randrange(1_000_000_000)
                category = "safe" if rng.random() < 0.1 else rng.choice(CATEGORIES)
                reporter = f"u{rng.randrange(reporters):08x}"
            elif r < 0.95 and previous:
                # The same reporter on the same number again: later, or in the same second.
                number, reporter, t0 = rng.choice(previous)
                t = t0 if rng.random() < 0.3 else min(t0 + rng.randrange(0, 40 * DAY), a.now)
                category = "safe" if rng.random() < 0.4 else rng.choice(CATEGORIES)
            else:
                s = rng.choice(scripts)
                day = rng.choice(sorted(script_days[s]))
                t = a.now - day * DAY - rng.randrange(DAY) if day else a.now - rng.randrange(DAY // 2)
                number = busy[rng.randrange(len(busy))] if rng.random() < 0.5 else 79000000000 + rng.randrange(1_000_000_000)
                category = rng.choice(CATEGORIES)
                reporter = s
            if len(previous) < 5000:
                previous.append((number, reporter, t))
            elif rng.random() < 0.01:
                previous[rng.randrange(5000)] = (number, reporter, t)
            row = {"number": number_text(rng, number), "reporter": reporter, "time": time_text(rng, t),
                   "category": category, "region": "ru-" + str(number)[2:4]}
            if rng.random() < 0.1:
                row["comment"] = "called 3 times"
            out.write(json.dumps(row, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
