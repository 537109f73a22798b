#!/usr/bin/env python3
"""The score of `lookup reports` (docs/REPORTS.md, "The score", default options) in DuckDB's SQL,
for tools/bench_reports.sh: the same aggregation on the same CSV, to time against and to check
the blocked numbers and their categories.

  reports_duckdb.py REPORTS.csv --now SECONDS -o BLOCKED.tsv    # NUMBER<TAB>CATEGORY, by number

The file is read as `tools/gen_reports.py` writes it (number,reporter,time,category; the number
E.164 with '+', the time Unix seconds). DuckDB runs with its default threads and memory limit
unless --threads / --memory-limit are given. A benchmark tool only: DuckDB (PyPI `duckdb`) is no
dependency of the package.
"""

import argparse
import sys

try:
    import duckdb
except ImportError:  # pragma: no cover
    sys.exit("error: reports_duckdb.py needs the duckdb module (pip install duckdb, in a venv)")

# Blocking categories by name: a verdict's code is its index + 1, `safe` is 0 (so a tie in the
# same second puts safe first, then categories by name, and the last one wins).
CATEGORIES = ["block", "collector", "fraud", "pyramid", "robocall", "scam", "spam", "survey", "telemarketing"]

SQL = """
COPY (
WITH reports AS (
    SELECT CAST(substr(number, 2) AS UBIGINT) AS number,
           reporter,
           time AS t,
           coalesce(list_position({categories}, category), 0) AS code
    FROM read_csv('{path}', header = true, delim = ',', quote = '',
                  columns = {{'number': 'VARCHAR', 'reporter': 'VARCHAR', 'time': 'BIGINT', 'category': 'VARCHAR'}})
),
-- 1. per (number, reporter) the latest report at or before now (ties: the higher code wins),
--    kept when younger than the maximum age
latest AS (
    SELECT number, reporter, max(t * 16 + code) AS k
    FROM reports
    WHERE t <= {now}
    GROUP BY number, reporter
),
kept AS (
    SELECT number, reporter, k // 16 AS t, k % 16 AS code
    FROM latest
    WHERE k // 16 > {now} - {max_age}
),
-- 2. the daily cap: a reporter's verdicts of one UTC day weigh decay * least(n, 5) // n
weighed AS (
    SELECT number, code,
           CAST(round(65536 * pow(0.5, (({now} - t) // 86400) / {half_life})) AS BIGINT)
               * least(count(*) OVER (PARTITION BY reporter, t // 86400), {cap})
               // count(*) OVER (PARTITION BY reporter, t // 86400) AS w
    FROM kept
),
-- 3. per number: complaints minus safe verdicts, the reporters, the heaviest category
per_category AS (
    SELECT number, code, sum(w) AS w, count(*) AS reporters
    FROM weighed
    GROUP BY number, code
),
per_number AS (
    SELECT number,
           sum(CASE WHEN code > 0 THEN w ELSE 0 END) - sum(CASE WHEN code = 0 THEN w ELSE 0 END) AS score,
           sum(CASE WHEN code > 0 THEN reporters ELSE 0 END) AS reporters,
           arg_max(code, w * 16 + (15 - code)) FILTER (WHERE code > 0) AS category
    FROM per_category
    GROUP BY number
)
SELECT number, {categories}[category] AS category
FROM per_number
WHERE score >= {block_score} AND reporters >= {min_reporters}
ORDER BY number
) TO '{out}' (FORMAT csv, DELIMITER '\t', HEADER false)
"""


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("reports")
    p.add_argument("--now", type=int, required=True)
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--threads", type=int)
    p.add_argument("--memory-limit")
    a = p.parse_args()
    con = duckdb.connect()
    if a.threads:
        con.execute(f"SET threads = {a.threads}")
    if a.memory_limit:
        con.execute(f"SET memory_limit = '{a.memory_limit}'")
    con.execute("SET preserve_insertion_order = false")
    quoted = "[" + ", ".join(f"'{c}'" for c in CATEGORIES) + "]"
    con.execute(SQL.format(path=a.reports.replace("'", "''"), out=a.output.replace("'", "''"), now=a.now,
                           categories=quoted, max_age=365 * 86400, half_life="90.0", cap=5,
                           block_score=3 * 65536, min_reporters=3))


if __name__ == "__main__":
    main()
