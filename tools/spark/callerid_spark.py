"""Builds a CallerID build directory on a Spark cluster: one `lookup build` per region.

    spark-submit tools/spark/callerid_spark.py --lookup .build/release/lookup \\
        --input directory.parquet --region-field region -o bundle/ [--key publisher]

(or `bash tools/spark/run.sh …`, which finds spark-submit in the venv of tools/spark/setup.sh).

What it does, and why each step is where it is (docs/SCALE.md):
1. Checks, before any work, the output (missing or a build directory) and the key (an empty
   build signed with it), and what reads numbers on the driver (`lookup --version`).
2. Reads the inputs (TSV, CSV, JSON Lines or Parquet: `--format`, else from the name) as
   `lookup build` reads them, each row with its file and line: the rows keep the order of a
   single build (inputs in order, a folder's files by name, each file's rows in order), so
   the last row of a number wins as there, and bad-row reports name the input's file and line.
3. Partitions the rows by region (`--region-field`), sorted within a partition by input order.
4. On the executors, runs `lookup build` once per region on that region's rows (TSV written
   to the executor's local disk, `--split-by field` with the region fixed by the data, and
   `--memory`: the build's memory is outside the JVM, in spark.executor.memoryOverhead):
   numbers are normalized, labels cleaned, duplicates merged, shards cut by the same code as
   on one machine. The executors' `lookup` is the bundle of tools/spark/bundle.sh passed with
   --archives (`--lookup-archive`), or the driver's binary with libcallerid-phonenumber.so
   beside it, shipped with the job; a task whose build read numbers with other rules than the
   driver's (no libphonenumber on its executor) fails the job. Each region's build directory
   comes back to the driver through Spark as (name, bytes) records: driver and executors
   share no folder. The job runs with spark.speculation off.
5. On the driver, once every partition has succeeded: the parts are written to a folder of
   the job's own (inside --stage, or beside the output), `lookup join` writes the one build
   directory (the databases and one manifest, by the same code as a single build) into the
   job's folder beside the output, `lookup sign` signs it there, and it is switched in with
   one directory exchange. A failed or stopped job leaves the previous output as it was,
   signature included, and removes only the folders it made. Running it again gives the same
   bytes (with SOURCE_DATE_EPOCH set, the same manifest too). stdout holds the JSON summary
   alone; everything else goes to stderr.
"""
import argparse
import ctypes
import errno
import fcntl
import hashlib
import json
import math
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import traceback


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--input", action="append", required=True, help="input file (repeatable; rows keep this order)")
    ap.add_argument("--format", choices=["tsv", "csv", "jsonl", "parquet"], help="default: from the first input's name")
    ap.add_argument("--header", choices=["auto", "yes", "no"], default="auto",
                    help="TSV/CSV header row (auto, as lookup build: yes when the number field of a file's "
                         "first record has no digit)")
    ap.add_argument("--number-field", default=None, help="column name or 1-based position (default: 1st column / 'number')")
    ap.add_argument("--label-field", default=None, help="default: 2nd column / 'label'")
    ap.add_argument("--category-field", default=None, help="default: 3rd column / 'category'")
    ap.add_argument("--region-field", default=None, help="the column the rows are partitioned by (required; with "
                    "--reports only for --split-by field: the region of each report)")
    ap.add_argument("-o", "--output", required=True, help="the build directory to write, on the driver (a path or a "
                    "file:// URI)")
    ap.add_argument("--lookup", required=True, help="the driver's lookup binary (version, join, sign); shipped to "
                    "the executors too, with libcallerid-phonenumber.so beside it, unless --lookup-archive is given")
    ap.add_argument("--lookup-archive", default=None, metavar="NAME",
                    help="run NAME/lookup on the executors: the bundle of tools/spark/bundle.sh given to spark-submit "
                    "as --archives callerid-lookup.tar.gz#NAME (the self-contained lookup with libphonenumber and "
                    "its libraries), or an absolute folder every executor has (/opt/callerid in the image of "
                    "tools/spark/Dockerfile)")
    ap.add_argument("--key", help="sign the result with this secret key (lookup keygen)")
    ap.add_argument("--dataset-version", help="stamped in manifest.json, as lookup build --dataset-version "
                    "(default: a hash of the files)")
    ap.add_argument("--stage", help="a folder on the driver in which the job makes its own folder for the regions' "
                    "parts sent back by the executors, and removes only that (default: beside --output)")
    ap.add_argument("--master", default=None, help="Spark master (default: spark-submit's, else local[*])")
    ap.add_argument("--partitions", type=int, default=0, help="shuffle partitions (default: the default parallelism)")
    ap.add_argument("--memory", default="512M", help="lookup build --memory on each executor task (default 512M)")
    ap.add_argument("--max-entries", default=None, help="lookup build --max-entries")
    ap.add_argument("--build-option", action="append", default=[],
                    help="one more lookup build argument, e.g. --build-option=--country=RU (repeatable)")
    r = ap.add_argument_group("--reports: a log of people's reports scored into a block pack, as lookup reports "
                              "does (docs/REPORTS.md); the options below mean what they mean there")
    r.add_argument("--reports", action="store_true", help="read the inputs as report logs (JSON Lines, CSV, TSV) and "
                   "write the scored block pack, the bytes of lookup reports -o OUT/ with the same options")
    for name in ("--reporter-field", "--time-field", "--country-field", "--country", "--validity", "--number-rules",
                 "--numbering-plan", "--category-map", "--category", "--now", "--half-life", "--max-age",
                 "--reporter-daily-cap", "--safe-weight", "--block-score", "--min-reporters", "--label-language",
                 "--split-by", "--region-map", "--region-after", "--max-bad-rows", "--hidden-characters", "--protect",
                 "--protected-label"):
        r.add_argument(name, default=None)
    r.add_argument("--label", default=None, help="a blocked number's label template (lookup reports --label)")
    r.add_argument("--skip-bad-rows", action="store_true")
    a = ap.parse_args(argv)
    if not a.reports and a.region_field is None:
        ap.error("the following arguments are required: --region-field")
    return a


# The default names of `lookup build` (FieldSlots.defaultNames), matched loosely as it does.
DEFAULT_NAMES = {
    "number": ["number", "phone", "phonenumber", "tel", "telephone", "msisdn", "e164", "номер", "телефон"],
    "label": ["label", "name", "title", "caption", "название"],
    "category": ["category", "type", "kind", "категория"],
}
KEYS = ("number", "label", "category", "region")


def loose(name):
    """Lowercased letters and digits of a name, as lookup compares column names."""
    return "".join(c for c in name.lower() if c.isalnum())


def selectors(a):
    return {"number": a.number_field, "label": a.label_field, "category": a.category_field, "region": a.region_field}


def required_fields(a):
    """Which of number, label, category, region a row must have (a row without one is a bad
    row, as in lookup build): the number, the region, and the fields chosen explicitly."""
    return (True, a.label_field is not None, a.category_field is not None, True)


def local_name(uri):
    """A file of Spark's _metadata.file_path as lookup's messages name it: a path for file: URIs."""
    if uri and uri.startswith("file:"):
        from urllib.parse import unquote, urlparse
        return unquote(urlparse(uri).path)
    return uri


def delimited_positions(file, first, header_mode, chosen):
    """The 1-based columns of number, label, category and region in one TSV/CSV file, given its
    first record, as `lookup build` resolves them (--header auto: a header when the number
    column of the first record has no digit; fields chosen by name always need one)."""
    by_name = any(v is not None and not v.isdigit() for v in chosen.values())
    if header_mode == "yes":
        header = True
    elif header_mode == "no":
        header = False
    elif by_name:
        header = True
    else:
        n = chosen["number"]
        p = int(n) - 1 if n is not None else 0
        value = first[p] if first is not None and p < len(first) and first[p] is not None else ""
        header = not any(c.isdigit() for c in value)
    if by_name and not header:
        raise JobError(f"{file}: fields are chosen by name but the file has no header row "
                       f"(use positions like --number-field 1, or --header yes)", 64)
    names = [(v or "").strip(" \t") for v in (first or [])] if header else []

    def resolve(key):
        v = chosen[key]
        if v is not None and v.isdigit():
            return int(v)
        if v is not None:
            for i, n in enumerate(names):
                if n == v:
                    return i + 1
            for i, n in enumerate(names):
                if loose(n) == loose(v):
                    return i + 1
            raise JobError(f"{file}: no column {v!r} for the {key} in the header (columns: {', '.join(map(repr, names[:10]))})", 65)
        if header:
            wanted = DEFAULT_NAMES.get(key, [])
            for i, n in enumerate(names):
                if loose(n) in wanted:
                    return i + 1
            if key == "number":
                raise JobError(f"{file}: no number column in the header (columns: {', '.join(map(repr, names[:10]))}); "
                               f"choose one with --number-field", 65)
            return None
        return {"number": 1, "label": 2, "category": 3}.get(key)

    return [resolve(k) for k in KEYS], header


def read_input(spark, index, path, fmt, a):
    """The rows of one --input with where each comes from: its file (`_path`, Spark's
    _metadata.file_path) and its line in that file (`_line`; the row's 1-based position for
    Parquet and for CSV records), number/label/category/region as text (None: the row has no
    such field), and for CSV records Spark could not fit to its columns the record itself
    (`_raw`, with the columns `_pn`.. `_pr`) to read again on the executor."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    chosen = selectors(a)
    mono = F.monotonically_increasing_id().alias("_mono")
    meta = [F.col("_metadata.file_path").alias("_path"), F.col("_metadata.file_block_start").alias("_block"), mono]
    raw = F.lit(None).cast("string").alias("_raw")
    if fmt == "tsv":
        # Lines as lookup reads them: split at LF only (a lone CR belongs to its line, a CRLF
        # line loses its CR), empty lines and '#' lines skipped, fields split at TAB.
        text = F.regexp_replace("value", "\r$", "")
        lines = (spark.read.option("lineSep", "\n").text(path)
                 .select(F.split(text, "\t", -1).alias("_fields"), ((text == "") | text.startswith("#")).alias("_skip"), *meta, raw))
    elif fmt == "csv":
        # RFC 4180, as lookup reads CSV: "" is a quote inside a quoted field, which may hold
        # line breaks (so a file is read by one task). Every value as text; a record with more
        # or fewer fields than the columns is kept whole (_corrupt) and read on the executor.
        probe = spark.read.option("header", "false").option("escape", '"').option("multiLine", "true").csv(path)
        width = max([len(probe.columns)] + [int(v) for v in chosen.values() if v is not None and v.isdigit()])
        schema = T.StructType([T.StructField(f"c{i}", T.StringType()) for i in range(1, width + 1)]
                              + [T.StructField("_corrupt", T.StringType())])
        df = (spark.read.schema(schema).option("header", "false").option("escape", '"').option("multiLine", "true")
              .option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", "_corrupt").csv(path))
        lines = df.select(F.array(*[F.coalesce(F.col(f"c{i}"), F.lit("")) for i in range(1, width + 1)]).alias("_fields"),
                          F.lit(False).alias("_skip"), *meta, F.col("_corrupt").alias("_raw"))
    elif fmt == "jsonl":
        # One object per line, blank lines skipped; values as text (numbers as written).
        text = F.col("value")
        lines = (spark.read.option("lineSep", "\n").text(path)
                 .select(F.from_json(text, T.MapType(T.StringType(), T.StringType())).alias("_map"),
                         F.regexp_replace(text, "[ \t\r]", "").isin("").alias("_skip"), *meta, raw))
    else:
        df = spark.read.parquet(path)
        data_columns = df.columns
        lines = df.select(*[F.col(f"`{c}`") for c in data_columns], F.lit(False).alias("_skip"), *meta, raw)

    # Each file's lines: the rows of a split are numbered in order, and the splits of a file
    # counted in order of their place in it. For TSV and CSV also each file's first record,
    # for its header.
    agg = [F.count(F.lit(1)).alias("n"), F.min("_mono").alias("first")]
    if fmt in ("tsv", "csv"):
        agg.append(F.min(F.when(~F.col("_skip"), F.struct("_mono", "_fields"))).alias("head"))
    blocks = {}
    for r in lines.groupBy("_path", "_block").agg(*agg).collect():
        blocks.setdefault(r["_path"], []).append(r)
    table = []
    for file, parts in blocks.items():
        parts.sort(key=lambda r: r["_block"])
        head = next((r["head"] for r in parts if fmt in ("tsv", "csv") and r["head"] is not None), None)
        if fmt in ("tsv", "csv"):
            positions, has_header = delimited_positions(local_name(file), head["_fields"] if head else None, a.header, chosen)
            header_mono = head["_mono"] if head is not None and has_header else -1
        else:
            positions, header_mono = [None] * 4, -1
        offset = 0
        for r in parts:
            table.append((file, r["_block"], offset, r["first"], header_mono, *positions))
            offset += r["n"]
    where = spark.createDataFrame(table, "_path string, _block long, _offset long, _first long, _header long, "
                                         "_pn int, _pl int, _pc int, _pr int") if table else None
    if where is None:
        return None
    rows = (lines.join(F.broadcast(where), ["_path", "_block"])
            .withColumn("_line", F.col("_offset") + F.col("_mono") - F.col("_first") + 1)
            .where(~F.col("_skip") & (F.col("_mono") != F.col("_header"))))

    required = required_fields(a)
    if fmt in ("tsv", "csv"):
        values = [F.expr(f"try_element_at(_fields, {p})") for p in ("_pn", "_pl", "_pc", "_pr")]
    elif fmt == "jsonl":
        def key(k):
            v = chosen[k]
            if v is not None and v.isdigit():
                raise JobError(f"{path}: JSON Lines fields are chosen by name, not position ({k}: {v})", 64)
            names = [v] if v is not None else DEFAULT_NAMES.get(k, [])
            return F.coalesce(*[F.col("_map").getItem(n) for n in names]) if names else F.lit(None).cast("string")
        values = [key(k) for k in KEYS]
    else:
        cols = data_columns

        def col(k):
            v = chosen[k]
            if v is None:
                if k in cols:
                    return F.col(f"`{k}`").cast("string")
                p = {"number": 1, "label": 2, "category": 3}[k]
                return F.col(f"`{cols[p - 1]}`").cast("string") if p <= len(cols) else F.lit(None).cast("string")
            if v.isdigit():
                if int(v) > len(cols) or int(v) < 1:
                    raise JobError(f"{path}: no column {v} (columns: {', '.join(cols)})", 65)
                return F.col(f"`{cols[int(v) - 1]}`").cast("string")
            if v not in cols:
                raise JobError(f"{path}: no column {v!r} in the input (columns: {', '.join(cols)})", 65)
            return F.col(f"`{v}`").cast("string")
        values = [col(k) for k in KEYS]
    if fmt != "tsv":
        # Only TSV tells a missing field from an empty one here (CSV records that lack fields
        # are read again on the executor): an absent value is an empty one, but the region's.
        values = [v if k == "region" else F.coalesce(v, F.lit("")) for k, v in zip(KEYS, values)]
    else:
        values = [v if req else F.coalesce(v, F.lit("")) for v, req in zip(values, required)]
    return rows.select(*[v.alias(k) for k, v in zip(KEYS, values)], F.lit(index).alias("_file"), "_path", "_line", "_raw",
                       "_pn", "_pl", "_pc", "_pr")


def partition_dir(stage, region):
    """A region's build directory in the stage: a name any file system takes."""
    return os.path.join(stage, "region-" + hashlib.sha256(region.encode("utf-8")).hexdigest()[:20])


# What `lookup build` says on stderr when it reads numbers with its built-in table because
# libphonenumber could not be loaded (Sources/lookup/PipelineBuild.swift, noteNumberRules).
BUILT_IN_TABLE_NOTE = "note: numbers are read with the built-in table"


def forced_number_rules(build_args):
    """The --number-rules of the build options ("table", "libphonenumber"), None for auto."""
    value = None
    for k, arg in enumerate(build_args):
        if arg.startswith("--number-rules="):
            value = arg.split("=", 1)[1]
        elif arg == "--number-rules" and k + 1 < len(build_args):
            value = build_args[k + 1]
    return None if value == "auto" else value


def number_rules_used(build_args, build_stderr):
    """What read the numbers of a `lookup build`: "built-in table" when the options ask for it or
    the build said it fell back to it, else "libphonenumber"."""
    if forced_number_rules(build_args) == "table" or BUILT_IN_TABLE_NOTE in build_stderr:
        return "built-in table"
    return "libphonenumber"


def driver_number_rules(lookup, build_args):
    """What reads numbers on the driver with these options ("libphonenumber" or "built-in
    table"), and lookup --version's line about it: what every task must use too, so that the
    output is the bytes of a single build on this machine."""
    if forced_number_rules(build_args) == "table":
        return "built-in table", "built-in table (--number-rules table)"
    done = subprocess.run([lookup, "--version"], capture_output=True, text=True, preexec_fn=die_with_parent)
    if done.returncode != 0:
        raise JobError(f"{lookup} --version failed (exit {done.returncode}): {done.stderr.strip()}", done.returncode)
    line = next((l for l in done.stdout.splitlines() if l.startswith("number rules: ")), "number rules: unknown")
    described = line[len("number rules: "):]
    return ("libphonenumber" if described.startswith("libphonenumber") else "built-in table"), described


def rules_mismatch(region, used, expected, stderr):
    note = next((l for l in stderr.splitlines() if l.startswith(BUILT_IN_TABLE_NOTE)), "")
    return (f"region {region!r} read its numbers with the {used}, the driver with {expected}: its database would "
            f"not be the one a single build writes{' (' + note + ')' if note else ''}. Install libphonenumber on every "
            f"executor (the libcallerid-phonenumber.so shipped with the job needs the system's libphonenumber), or pass "
            f"--build-option=--number-rules=table to read numbers with the built-in table everywhere")


def executor_lookup(lookup_name, archive):
    """The `lookup` a task runs: inside the folder an --archives bundle was unpacked to
    (tools/spark/bundle.sh: ARCHIVE/lookup), or the binary shipped with SparkContext.addFile."""
    from pyspark import SparkFiles
    if archive is not None:
        tried = []
        for base in (SparkFiles.getRootDirectory(), os.getcwd()):
            candidate = os.path.join(base, archive, "lookup")
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
            tried.append(candidate)
        raise RuntimeError(f"no executable lookup in the archive folder {archive!r} on this executor (tried "
                           f"{', '.join(tried)}): pass the bundle of tools/spark/bundle.sh with --archives FILE#{archive}")
    lookup = SparkFiles.get(lookup_name)
    mode = os.stat(lookup).st_mode
    if not mode & stat.S_IXUSR:
        os.chmod(lookup, mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return lookup


def executor_scratch():
    """A folder of the task's own on the executor's local disk (the folder Spark keeps its
    files in on that executor, on spark.local.dir; removed with the executor): the region's
    rows, the build's spilled runs and its output are written there, never to a folder the
    driver sees."""
    from pyspark import SparkFiles
    base = os.path.dirname(SparkFiles.getRootDirectory())
    return tempfile.mkdtemp(prefix="callerid-task-", dir=base if os.path.isdir(base) else None)


# How the executors' `lookup build` reads the TSV they write: number, label, category, region,
# split by the region.
FIELD_LAYOUT = ["--number-field", "1", "--label-field", "2", "--category-field", "3", "--split-by", "field", "--region-field", "4"]


def executor_args(args):
    """Arguments naming a file shipped with SparkContext.addFile (`sparkfile:NAME`, see
    ship_file) as the path it has on this executor."""
    from pyspark import SparkFiles
    return [SparkFiles.get(v[len("sparkfile:"):]) if v.startswith("sparkfile:") else v for v in args]


def build_partition(rows, lookup_name, archive, build_args, expected_rules, required, layout=FIELD_LAYOUT):
    """Runs on an executor: one `lookup build` per region of this partition's rows (sorted by
    region, then input order), in a folder on the executor's own disk. Yields, per region,
    ("file", region, name, bytes) for each file of its build directory (the databases and the
    manifest: small, about 3 bytes a number) and then ("region", region, summary, stderr,
    number rules); raises on failure, and when the build read numbers with other rules than
    the driver's. Nothing is written where the driver can see it: the files reach the driver
    through Spark. The build's reports of bad rows name the input file and line, not the
    temporary TSV."""
    import array
    import csv
    import io
    lookup = executor_lookup(lookup_name, archive)

    def clean(value):
        # The TSV row is one line: a tab or line break in a label is a space (lookup's label
        # cleaning turns it into one and collapses spaces anyway).
        return str(value).replace("\t", " ").replace("\r", " ").replace("\n", " ")

    def tsv_line(values):
        # A field the row lacks ends the line there, so that lookup build reports the row as
        # it reports a short row of its own input (a missing field is a bad row).
        fields = []
        for value, needed in zip(values, required):
            if value is None:
                if needed:
                    break
                value = ""
            fields.append(clean(value))
        return "\t".join(fields) if fields else "\t"

    def reread(raw, columns):
        # A CSV record with another number of fields than Spark's columns: read as lookup does.
        fields = next(csv.reader(io.StringIO(raw, newline=""), delimiter=",", quotechar='"', doublequote=True), [])
        return [None if p is None or p > len(fields) else fields[p - 1] for p in columns]

    files, file_ids, lines = [], {}, None

    def cite(text, path):
        # lookup build names its input (`.../rows.tsv:N: ...`): name the row's file and line.
        def where(m):
            k = int(m.group(1)) - 1
            return f"{files[file_ids_of[k]]}:{lines[k]}:" if 0 <= k < len(lines) else m.group(0)
        return re.sub(re.escape(path) + r":(\d+):", where, text)

    def run(region, path):
        out = os.path.join(workdir, "out")
        shutil.rmtree(out, ignore_errors=True)
        cmd = [lookup, "build", "-o", out + "/", path, "--format", "tsv", "--header", "no"] + executor_args(layout) \
            + ["--json"] + executor_args(build_args)
        done = subprocess.run(cmd, capture_output=True, text=True)
        stderr = cite(done.stderr, path)
        if done.returncode != 0:
            raise RuntimeError(f"lookup build of region {region!r} failed with exit {done.returncode}:\n{stderr[-4000:]}")
        used = number_rules_used(build_args, stderr)
        if used != expected_rules:
            raise RuntimeError(rules_mismatch(region, used, expected_rules, stderr))
        summary = json.loads(done.stdout)
        for name in sorted(os.listdir(out)):
            file = os.path.join(out, name)
            if not os.path.isfile(file) or os.path.islink(file):
                raise RuntimeError(f"lookup build of region {region!r} wrote {name}, not a file")
            with open(file, "rb") as f:
                yield ("file", region, name, f.read())
        shutil.rmtree(out, ignore_errors=True)
        yield ("region", region, summary, stderr, used)

    current, handle, path = None, None, None
    file_ids_of = None
    workdir = executor_scratch()
    try:
        for row in rows:
            region = row["_key"]
            if region != current:
                if handle is not None:
                    handle.close()
                    yield from run(current, path)
                current = region
                path = os.path.join(workdir, "rows.tsv")
                handle = open(path, "w", encoding="utf-8", newline="\n")
                file_ids_of, lines = array.array("i"), array.array("q")
            values = [row[k] for k in KEYS]
            if row["_raw"] is not None:
                values = reread(row["_raw"], [row["_pn"], row["_pl"], row["_pc"], row["_pr"]])
                values = [v if v is not None or k == "region" or required[i] else "" for i, (k, v) in enumerate(zip(KEYS, values))]
            name = local_name(row["_path"])
            if name not in file_ids:
                file_ids[name] = len(files)
                files.append(name)
            file_ids_of.append(file_ids[name])
            lines.append(row["_line"])
            handle.write(tsv_line(values) + "\n")
        if handle is not None:
            handle.close()
            yield from run(current, path)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# --reports: `lookup reports` partitioned by number (docs/REPORTS.md, docs/SCALE.md).
#
# 1. Reading. Each split of a log (a block of lines of one file; a whole file for CSV, whose
#    quoted fields may hold line breaks) is read on an executor by `lookup reports --records`:
#    the same fields, normalizer, reporter hash, times and verdicts as one machine, bad rows
#    reported at the input's file and line. Out come records: number, reporter hash, time,
#    verdict, region.
# 2. The score, in Spark's integer arithmetic, as ReportScore.swift computes it: the records
#    partitioned by number; per (number, reporter) the latest verdict at or before --now (ties:
#    safe first, then categories by name, then the region read first); the window; per
#    (reporter, UTC day) the count n of the kept verdicts, each weighing decay * min(n, cap) / n
#    (integer division); per number the sums, the reporters, the category of most weight (ties:
#    the first by name) and the region of the latest complaint.
# 3. The blocked numbers, labelled as ReportLabels.swift labels them, go to the build path of
#    the job: one `lookup build` per region (--split-by field; one for the whole pack otherwise)
#    with the options of ReportBuild.packOptions(), then join and sign.
# ---------------------------------------------------------------------------------------------

DAY = 86400
ONE = 1 << 16

REPORT_DEFAULT_NAMES = {
    "number": DEFAULT_NAMES["number"],
    "reporter": ["reporter", "reporterid", "reporterhash", "user", "userid", "userhash", "device", "deviceid", "client", "clientid"],
    "time": ["time", "timestamp", "ts", "date", "datetime", "reportedat", "createdat", "created"],
    "category": ["category", "verdict", "type", "kind", "категория"],
}

# ReportLabels.displayName: a category's name in labels, (en, ru).
DISPLAY_NAMES = {
    "block": ("Unwanted call", "Нежелательный звонок"),
    "collector": ("Debt collector", "Коллекторы"),
    "fraud": ("Fraud", "Мошенничество"),
    "pyramid": ("Financial pyramid", "Финансовая пирамида"),
    "robocall": ("Robocall", "Автообзвон"),
    "scam": ("Scam", "Мошенники"),
    "spam": ("Spam", "Спам"),
    "survey": ("Survey", "Опросы"),
    "telemarketing": ("Telemarketing", "Реклама"),
}


def swift_rounded(x):
    """Double.rounded() (to nearest, halves away from zero) of a value >= 0, as an integer."""
    whole = int(x)
    return whole + 1 if x - whole >= 0.5 else whole


def parse_days(name, text):
    """lookup reports' durations: days (90), or a number with d, w or h (90d, 12w, 36h)."""
    t, scale = text.lower(), 1.0
    if t and t[-1] in "dwh":
        scale = {"d": 1.0, "w": 7.0, "h": 1.0 / 24}[t[-1]]
        t = t[:-1]
    try:
        v = float(t)
    except ValueError:
        raise JobError(f"{name} takes a duration: days (90), or a number with d, w or h (90d, 12w, 36h)", 64)
    if v != v or v in (float("inf"), float("-inf")) or v < 0:
        raise JobError(f"{name} takes a duration: days (90), or a number with d, w or h (90d, 12w, 36h)", 64)
    return v * scale


def parse_time(text):
    """--now as lookup reports reads it: Unix seconds or RFC 3339 with an offset, to whole seconds."""
    import calendar
    t = text.strip()
    if t and all(c.isdigit() or c == "." for c in t):
        whole = t.split(".", 1)[0]
        if whole and len(whole) <= 15 and int(whole) < 100_000_000_000:
            return int(whole)
        raise JobError("--now takes RFC 3339 (2026-12-05T00:00:00Z) or Unix seconds", 64)
    m = re.match(r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:([Zz])|([+-])(\d{2}):(\d{2}))$", t)
    if m is None:
        raise JobError("--now takes RFC 3339 (2026-12-05T00:00:00Z) or Unix seconds", 64)
    y, mo, d, h, mi, sec = (int(m.group(k)) for k in range(1, 7))
    offset = 0 if m.group(7) else (1 if m.group(8) == "+" else -1) * (int(m.group(9)) * 3600 + int(m.group(10)) * 60)
    return calendar.timegm((y, mo, d, h, mi, sec, 0, 0, 0)) - offset


class ScoreOptions:
    """The score's and the labels' options, checked as lookup reports checks them."""

    def __init__(self, a):
        def integer(name, value, default, low):
            if value is None:
                return default
            if not re.fullmatch(r"[+-]?\d+", value) or int(value) < low:
                raise JobError(f"{name} must be an integer >= {low}", 64)
            return int(value)

        def number(name, value, default):
            if value is None:
                return default
            try:
                v = float(value)
            except ValueError:
                v = -1.0
            if v != v or v < 0 or v == float("inf"):
                raise JobError(f"{name} must be a number >= 0", 64)
            return v

        self.half_life = parse_days("--half-life", a.half_life) if a.half_life is not None else 90.0
        if self.half_life <= 0:
            raise JobError("--half-life must be more than 0", 64)
        max_age = parse_days("--max-age", a.max_age) if a.max_age is not None else 365.0
        if not 1 <= max_age <= 36_500:
            raise JobError("--max-age must be 1 to 36500 days", 64)
        self.max_age = int(math.ceil(max_age))
        self.now = parse_time(a.now) if a.now is not None else None
        self.cap = integer("--reporter-daily-cap", a.reporter_daily_cap, 5, 1)
        self.safe_weight = number("--safe-weight", a.safe_weight, 1.0)
        if self.safe_weight > 1000:
            raise JobError("the safe weight must be 0...1000", 64)
        block_score = number("--block-score", a.block_score, 3.0)
        if block_score <= 0 or block_score > 1e9:
            raise JobError("--block-score must be more than 0", 64)
        self.min_reporters = integer("--min-reporters", a.min_reporters, 3, 1)
        self.safe_fixed = swift_rounded(self.safe_weight * ONE)
        self.threshold = swift_rounded(block_score * ONE)
        self.label = a.label if a.label is not None else "{category} · {reporters}"
        for field in re.findall(r"\{([^{}]*)\}", self.label):
            if field not in ("category", "reporters", "count", "name"):
                raise JobError(f"unknown field {{{field}}} in the label template {self.label!r}: use {{category}}, "
                               f"{{reporters}}, {{count}}, {{name}}", 64)
        self.language = a.label_language or "en"
        if self.language not in ("en", "ru"):
            raise JobError("--label-language takes en or ru", 64)

    def decays(self):
        """ReportWeight.decay of every age a kept verdict can have (0 ... max age - 1 days)."""
        return [(age, swift_rounded(65536.0 * math.pow(0.5, age / self.half_life))) for age in range(self.max_age + 1)]


def rounded_count(n):
    """ReportLabels.rounded: 1-4 exact, then 5+, 10+, 20+, 50+, 100+, 200+, 500+..."""
    if n < 5:
        return str(n)
    step = 5
    while True:
        lead = step
        while lead >= 10:
            lead //= 10
        following = step // 2 * 5 if lead == 2 else step * 2
        if following > n:
            break
        step = following
    return f"{step}+"


def reporters_text(n, language):
    shown = rounded_count(n)
    if language == "en":
        return "1 report" if shown == "1" else f"{shown} reports"
    if n == 1:
        return "1 жалоба"
    if 2 <= n <= 4:
        return f"{n} жалобы"
    return f"{shown} жалоб"


def render_label(template, category, reporters, language):
    """ReportLabels.render: the fields replaced in this order."""
    known = DISPLAY_NAMES.get(category)
    display = category if known is None else known[0 if language == "en" else 1]
    return (template.replace("{category}", display).replace("{reporters}", reporters_text(reporters, language))
            .replace("{count}", rounded_count(reporters)).replace("{name}", ""))


def report_header(first, a):
    """Whether a TSV log has a header, as ReportFields.delimited decides from its first record:
    yes when a field is chosen by name, else when the number column has no digit."""
    chosen = [a.number_field, a.reporter_field, a.time_field, a.category_field, a.country_field, a.region_field]
    by_name = any(v is not None and not v.isdigit() for v in chosen)
    if a.header != "auto":
        return a.header == "yes"
    if by_name:
        return True
    column = int(a.number_field) - 1 if a.number_field is not None and a.number_field.isdigit() else 0
    fields = first.split("\t") if first is not None else []
    value = fields[column] if column < len(fields) else ""
    return not any("0" <= c <= "9" for c in value)


def ship_file(sc, path, option):
    """A file an option names (a numbering plan, a category map, a region map), shipped to the
    executors; `sparkfile:NAME` in their arguments (executor_args)."""
    if not os.path.isfile(path):
        raise JobError(f"{path}: no such file ({option})", 66)
    sc.addFile(os.path.abspath(path))
    return "sparkfile:" + os.path.basename(path)


def read_reports_partition(rows, lookup_name, archive, read_args, expected_rules, blocks):
    """Runs on an executor: each split of a log in this partition (rows in file order) written
    to the task's disk and read by `lookup reports --records`. Yields ("r", file, line, number,
    reporter, time, verdict, region) per report, the line the input's, and per split ("m",
    counts, stderr, number rules); raises when the split's numbers were read with other rules
    than the driver's."""
    lookup = executor_lookup(lookup_name, archive)
    workdir = executor_scratch()

    def read(key, values):
        file_index, name, fmt, offset, header, header_line, whole = blocks[key]
        part = os.path.join(workdir, "part." + fmt)
        records = os.path.join(workdir, "records.tsv")
        # A split after the header's is given the header again, so fields are found by name.
        prepend = header and offset > 0 and header_line is not None
        shift = offset - 1 if prepend else offset
        with open(part, "w", encoding="utf-8", newline="\n") as f:
            if prepend:
                f.write(header_line + "\n")
            for v in values:
                f.write(v if whole else v + "\n")
        cmd = [lookup, "reports", "--records", records, part, "--format", fmt, "--skip-bad-rows"] + executor_args(read_args)
        if fmt == "tsv":
            cmd += ["--header", "yes" if header else "no"]
        done = subprocess.run(cmd, capture_output=True, text=True)
        stderr = re.sub(re.escape(part) + r":(\d+):", lambda m: f"{name}:{int(m.group(1)) + shift}:", done.stderr)
        if done.returncode != 0:
            raise RuntimeError(f"lookup reports --records of {name} (lines from {offset + 1}) failed with exit "
                               f"{done.returncode}:\n{stderr[-4000:]}")
        used = number_rules_used(read_args, stderr)
        if used != expected_rules:
            raise RuntimeError(rules_mismatch(name, used, expected_rules, stderr))
        with open(records, encoding="utf-8", newline="\n") as f:
            for line in f:
                k, number, reporter, t, verdict, region = line.rstrip("\n").split("\t", 5)
                r = int(reporter)
                yield ("r", file_index, int(k) + shift, int(number), r - (1 << 64) if r >= 1 << 63 else r, int(t),
                       verdict, region)
        yield ("m", file_index, 0, 0, 0, 0, done.stdout, stderr)

    try:
        current, values = None, []
        for row in rows:
            key = (row["_path"], row["_block"])
            if key != current:
                if current is not None:
                    yield from read(current, values)
                current, values = key, []
            values.append(row["value"])
        if current is not None:
            yield from read(current, values)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def report_lines(spark, a):
    """The logs as lines (CSV: each file whole), each with its file and its split, and per
    split where it is: (file index, name, format, lines before it, header?, header line,
    whole file?)."""
    from pyspark.sql import functions as F
    fmt = a.format or {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl"}.get(
        os.path.splitext(a.input[0])[1].lower(), "tsv")
    if fmt == "parquet":
        raise JobError("--reports reads JSON Lines, CSV or TSV logs (as lookup reports does), not Parquet", 64)
    frames, blocks = [], {}
    for index, path in enumerate(a.input):
        reader = spark.read.option("wholetext", "true") if fmt == "csv" else spark.read.option("lineSep", "\n")
        df = reader.text(path).select("value", F.col("_metadata.file_path").alias("_path"),
                                     F.col("_metadata.file_block_start").alias("_block"),
                                     F.monotonically_increasing_id().alias("_mono"))
        agg = [F.count(F.lit(1)).alias("n")]
        if fmt == "tsv":
            skip = (F.regexp_replace("value", "\r$", "") == "") | F.col("value").startswith("#")
            agg.append(F.min(F.when(~skip, F.struct("_mono", "value"))).alias("head"))
        parts = {}
        for r in df.groupBy("_path", "_block").agg(*agg).collect():
            parts.setdefault(r["_path"], []).append(r)
        for file in sorted(parts):          # a folder's files by name, as lookup reports is given them
            splits = sorted(parts[file], key=lambda r: r["_block"])
            name = local_name(file)
            first = next((r["head"]["value"] for r in splits if fmt == "tsv" and r["head"] is not None), None)
            header = fmt == "tsv" and first is not None and report_header(first.rstrip("\r"), a)
            offset = 0
            for r in splits:
                blocks[(file, r["_block"])] = (len(blocks), name, fmt, offset, header, first if header else None, fmt == "csv")
                offset += r["n"]
        frames.append(df)
    rows = frames[0]
    for f in frames[1:]:
        rows = rows.unionByName(f)
    return rows, blocks


def read_options(a, sc):
    """The options of `lookup reports --records` on the executors: how the log is read."""
    args = []
    for option, value in (("--number-field", a.number_field), ("--reporter-field", a.reporter_field),
                          ("--time-field", a.time_field), ("--category-field", a.category_field),
                          ("--country-field", a.country_field), ("--country", a.country), ("--validity", a.validity),
                          ("--number-rules", a.number_rules), ("--category", a.category)):
        if value is not None:
            args.append(f"{option}={value}")
    if a.region_field is not None and a.split_by == "field":
        args.append(f"--region-field={a.region_field}")
    for option, value in (("--numbering-plan", a.numbering_plan), ("--category-map", a.category_map)):
        if value is not None:
            args += [option, ship_file(sc, value, option)]
    if a.format == "csv" and a.header != "auto":
        args += ["--header", a.header]
    return args + a.build_option


def check_report_options(a):
    if a.protect is not None or a.protected_label is not None:
        raise JobError("--protect is not offered by the Spark job's --reports mode: run lookup reports --protect on one "
                       "machine, or leave the protected numbers out of the log (docs/SCALE.md)", 64)
    if a.split_by not in (None, "field", "prefix"):
        raise JobError("--split-by takes field or prefix", 64)
    if a.split_by == "field" and a.region_field is None:
        raise JobError("--split-by field needs --region-field (the region of each report)", 64)
    if a.split_by == "prefix" and a.region_map is None:
        raise JobError("--split-by prefix needs --region-map", 64)
    if a.max_bad_rows is not None and not re.fullmatch(r"\d+(\.\d+)?%|\d+", a.max_bad_rows):
        raise JobError("--max-bad-rows takes N or P%", 64)


def score_reports(spark, records, o, now):
    """The three passes over the records (a DataFrame: number, reporter, time, verdict, region,
    and _rr the region's order of first appearance): the blocked numbers with their category,
    complaining reporters and region, and the count of numbers scored."""
    from pyspark.sql import functions as F
    from pyspark.sql import Window
    oldest = now - o.max_age * DAY
    # Pass 1, by number: each reporter's latest verdict at or before now. Structs compare field
    # by field: the time, then safe before complaints, then categories by name, then the region
    # read first (the order of ReportKey: time, verdict code, region id), the greatest last.
    latest = (records.where(F.col("time") <= now)
              .groupBy("number", "reporter")
              .agg(F.max(F.struct("time", (F.col("verdict") != "safe").alias("complaint"), "verdict", "_rr", "region")).alias("v"))
              .select("number", "reporter", "v.*")
              .where(F.col("time") > oldest))
    # Pass 2, by reporter and UTC day: the daily cap, in integers.
    decays = spark.createDataFrame(o.decays(), "age long, decay long")
    day = Window.partitionBy("reporter", "day")
    weighed = (latest.withColumn("day", F.expr("`time` div 86400"))
               .withColumn("n", F.count(F.lit(1)).over(day))
               .withColumn("age", F.expr(f"({now} - `time`) div 86400"))
               .join(F.broadcast(decays), "age")
               .withColumn("weight", F.expr(f"(decay * least(n, {o.cap})) div n")))
    # Pass 3, by number: the sums, the reporters, the category, the region.
    per_verdict = (weighed.repartition("number")
                   .groupBy("number", "verdict")
                   .agg(F.sum("weight").alias("w"), F.count(F.lit(1)).alias("k"),
                        F.max(F.struct("time", "verdict", "_rr", "region")).alias("last")))
    complaint = F.col("verdict") != "safe"
    per_number = (per_verdict.groupBy("number")
                  .agg(F.sum(F.when(complaint, F.col("w")).otherwise(0)).alias("total"),
                       F.sum(F.when(complaint, 0).otherwise(F.col("w"))).alias("against"),
                       F.sum(F.when(complaint, F.col("k")).otherwise(0)).alias("reporters"),
                       F.min(F.when(complaint, F.struct((-F.col("w")).alias("nw"), F.col("verdict")))).alias("best"),
                       F.max(F.when(complaint, F.col("last"))).alias("last")))
    scored = per_number.withColumn("score", F.expr(f"total - (against * {o.safe_fixed}) div {ONE}"))
    blocked = (scored.where(F.col("best").isNotNull() & (F.col("reporters") >= o.min_reporters)
                            & (F.col("score") >= o.threshold))
               .select("number", F.col("best.verdict").alias("category"), "reporters", F.col("last.region").alias("region")))
    return blocked, per_number


def report_parts(a, spark, sc, lookup, stage, expected_rules):
    """--reports: reads and scores the logs, builds the blocked numbers per region on the
    executors; returns what receive_parts returns and the summary."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
    o = ScoreOptions(a)
    read_args = read_options(a, sc)
    lines, blocks = report_lines(spark, a)
    lookup_name, archive = os.path.basename(lookup), a.lookup_archive
    out = lines.rdd.mapPartitions(lambda it: read_reports_partition(it, lookup_name, archive, read_args, expected_rules, blocks))
    out.persist(StorageLevel.MEMORY_AND_DISK)
    meta = out.filter(lambda r: r[0] == "m").collect()
    rows_read, rejected, reasons, shown = 0, 0, {}, 0
    for m in sorted(meta, key=lambda m: m[1]):
        counts = json.loads(m[6])
        rows_read += counts["reports"]
        rejected += counts["bad_rows"]
        for k, v in counts["rejected_by_reason"].items():
            reasons[k] = reasons.get(k, 0) + v
        lines_of_stderr = [l for l in m[7].splitlines() if l.strip()]
        for l in lines_of_stderr:
            if shown < 1000:
                say(l)
            shown += 1
    if rejected:
        say("rejected rows by reason:")
        for k, v in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])):
            say(f"  {v:>8}  {k}")
        say(f"{rejected} bad row{'' if rejected == 1 else 's'} of {rows_read}")
    limit = a.max_bad_rows or "0"
    if not a.skip_bad_rows:
        if limit.endswith("%"):
            if rows_read and rejected * 100 / rows_read > float(limit[:-1]):
                raise JobError(f"{rejected} of {rows_read} reports rejected ({rejected * 100 / rows_read:.2f}%), more "
                               f"than the {limit[:-1]}% allowed; nothing written", 65)
        elif rejected > int(limit):
            raise JobError("a report was rejected and no bad rows are allowed; nothing written (allow some with "
                           "--max-bad-rows N or N%, or --skip-bad-rows)" if limit == "0"
                           else f"more than {limit} reports rejected; nothing written", 65)

    schema = ("_file int, _line long, number long, reporter long, time long, verdict string, region string")
    records = spark.createDataFrame(out.filter(lambda r: r[0] == "r").map(lambda r: r[1:]), schema)
    # The region's id in lookup reports is its order of first appearance among the reports read;
    # it breaks ties of verdicts in the same second.
    firsts = records.groupBy("region").agg(F.min(F.struct("_file", "_line")).alias("first")).collect()
    ranks = [(r["region"], k) for k, r in enumerate(sorted(firsts, key=lambda r: (r["first"]["_file"], r["first"]["_line"])))]
    now = o.now
    if now is None:
        newest = records.agg(F.max("time")).collect()[0][0]
        now = max(newest if newest is not None else -1, 0)
    ranked = records.join(F.broadcast(spark.createDataFrame(ranks, "region string, _rr int")), "region") \
        .repartition("number")
    blocked, scored = score_reports(spark, ranked, o, now)
    blocked.persist(StorageLevel.MEMORY_AND_DISK)
    by_category = {r["category"]: r["count"] for r in blocked.groupBy("category").count().collect()}

    # The blocked numbers as the rows ReportBuild hands its build (NUMBER, LABEL, CATEGORY,
    # REGION), partitioned by region for --split-by field, else one build of them all.
    template, language, split = o.label, o.language, a.split_by

    def row(r):
        label = render_label(template, r["category"], r["reporters"], language)
        region = r["region"] if split == "field" else ""
        return (str(r["number"]), label, r["category"], region if split == "field" else None, region, None, "blocked", 0, 0)
    rows = spark.createDataFrame(blocked.rdd.map(row), "number string, label string, category string, region string, "
                                 "_key string, _raw string, _path string, _line long, _file int")
    partitions = (a.partitions or sc.defaultParallelism) if split == "field" else 1
    rows = rows.repartition(partitions, "_key").sortWithinPartitions("_key", "number")
    layout = ["--number-field", "1", "--label-field", "2", "--category-field", "3"]
    if split == "field":
        layout = FIELD_LAYOUT
    elif split == "prefix":
        layout = layout + ["--split-by", "prefix", "--region-map", ship_file(sc, a.region_map, "--region-map")]
        if a.region_after is not None:
            layout += ["--region-after", a.region_after]
    # ReportBuild.packOptions: the numbers were read already (E.164 digits, stored as they are).
    build_args = ["--memory", a.memory, "--validity", "any", "--number-rules", "table", "--max-bad-rows", "0"]
    build_args += ["--max-entries", a.max_entries] if a.max_entries else []
    if a.numbering_plan is not None:
        build_args += ["--numbering-plan", ship_file(sc, a.numbering_plan, "--numbering-plan")]
    if a.category_map is not None:
        build_args += ["--category-map", ship_file(sc, a.category_map, "--category-map")]
    if a.hidden_characters is not None:
        build_args += ["--hidden-characters", a.hidden_characters]
    required = (True, True, True, split == "field")
    results = receive_parts(rows.rdd.mapPartitions(
        lambda it: build_partition(it, lookup_name, archive, build_args, "built-in table", required, layout)), stage)
    out.unpersist()
    blocked.unpersist()
    summary = {"reports": rows_read, "bad_rows": rejected, "rejected_by_reason": reasons, "now": now,
               "blocked": sum(by_category.values()), "blocked_by_category": by_category, "regions": len(results),
               "entries": sum(s["entries"] for _, _, s, _, _ in results), "number_rules": expected_rules}
    for region, _, _, stderr, _ in results:
        if stderr.strip():
            say(f"region {region!r}:\n{stderr}")
    return results, summary


class JobError(Exception):
    """A failure the job reports in one line and exits with (the exit code of the step that failed)."""

    def __init__(self, message, code=1):
        super().__init__(message)
        self.code = code


class Stopped(BaseException):
    """The job was told to stop (SIGTERM, SIGHUP, or spark-submit's end)."""


class Messages:
    """spark-submit runs this Python process with its stderr merged into its stdout
    (PythonRunner), so a line written to stderr here would land among the JSON summary. Under
    spark-submit the driver's lines go to the JVM's own stderr through its gateway (no
    SparkContext needed): stdout holds the summary alone."""
    jvm = None

    @classmethod
    def connect(cls):
        if "PYSPARK_GATEWAY_PORT" not in os.environ:
            return
        try:
            from pyspark import SparkContext
            SparkContext._ensure_initialized()
            cls.jvm = SparkContext._jvm
        except Exception:
            cls.jvm = None


def say(text):
    """A message for people: on stderr (spark-submit's when it runs the job), never on stdout."""
    if not text.endswith("\n"):
        text += "\n"
    if Messages.jvm is not None:
        try:
            Messages.jvm.System.err.print(text)
            Messages.jvm.System.err.flush()
            return
        except Exception:
            Messages.jvm = None     # spark-submit has ended
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


PR_SET_PDEATHSIG = 1
STOP_SIGNALS = {signal.SIGTERM, signal.SIGHUP, signal.SIGINT}


def _libc():
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


_LIBC = _libc()
_PRCTL = getattr(_LIBC, "prctl", None)


def die_with_parent(sig=signal.SIGKILL):
    """Asks the kernel to send `sig` to this process when the one that started it ends (Linux).
    Used as the preexec_fn of the driver's tools, so a `lookup join` never outlives its job."""
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)


def stop_with_spark_submit():
    """The driver ends with its job: under spark-submit (which started this Python process) a
    SIGTERM comes when spark-submit ends, and SIGTERM or SIGHUP stop the job like Ctrl-C: the
    running tool is killed, the staging folders are removed, the output is left as it was."""
    stopping = []

    def stop(signum, _frame):
        if not stopping:            # once: a second signal must not cut the cleanup short
            stopping.append(signum)
            raise Stopped(f"stopped by signal {signum}")
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        die_with_parent(signal.SIGTERM)
        if os.getppid() == 1:
            raise Stopped("spark-submit has ended")


def run_tool(cmd, what):
    """Runs a lookup command on the driver: its lines go to stderr (stdout holds the job's JSON
    summary only), it is killed if the driver ends, and a failure is a JobError with its exit."""
    done = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=die_with_parent)
    if done.returncode != 0:
        raise JobError(f"{what} failed (exit {done.returncode}): {done.stderr.strip()}", done.returncode if done.returncode > 0 else 1)
    if done.stdout or done.stderr:
        say(done.stdout + done.stderr)


def check_key(lookup, key, work):
    """Signs an empty build directory with the key before any work: a missing, unreadable or
    invalid secret key fails the job before the cluster is asked for anything."""
    probe = os.path.join(work, "key-check")
    empty = os.path.join(work, "key-check.tsv")
    open(empty, "w").close()
    for cmd, what in (([lookup, "build", "-o", probe + "/", empty, "--format", "tsv", "--header", "no", "--max-entries", "1"],
                       "an empty build for the key check"),
                      ([lookup, "sign", "--key", key, probe], f"the key check (lookup sign --key {key})")):
        done = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=die_with_parent)
        if done.returncode != 0:
            raise JobError(f"{what} failed (exit {done.returncode}): {done.stderr.strip()}", done.returncode)
    shutil.rmtree(probe, ignore_errors=True)
    os.unlink(empty)


def rename_exchange(a, b):
    """Swaps two directories in one step (Linux renameat2 RENAME_EXCHANGE), as `lookup build`
    switches a build directory."""
    fn = getattr(_LIBC, "renameat2", None)
    if fn is None:
        raise OSError(errno.ENOSYS, "renameat2 is not available")
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd, rename_exchange_flag = -100, 2
    if fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange_flag) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), b)


def sync_directory(path):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def switch_in(new, target):
    """Puts the directory `new` (on the file system of `target`) in place of `target` in one
    step, as `lookup build` and `lookup join` do: a rename when there is no `target`, else the
    atomic exchange, so readers see the old set or the new one, never none. Where the file
    system has no exchange, two renames with the old set at `.NAME.old-…` between them, the
    name `lookup build` and `lookup join` put back after a crash. Returns the directory that
    now holds the previous set (to remove), or None."""
    parent, name = os.path.split(target)
    if not os.path.lexists(target):
        os.rename(new, target)
        sync_directory(parent)
        return None
    try:
        rename_exchange(new, target)
        sync_directory(parent)
        return new
    except OSError as e:
        if e.errno not in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
            raise
    old = tempfile.mkdtemp(prefix=f".{name}.old-", dir=parent)
    os.rename(target, old)          # replaces the empty folder just made: the name is ours
    try:
        os.rename(new, target)
    except OSError:
        os.rename(old, target)
        raise
    sync_directory(parent)
    return old


def recover_output(target):
    """A job or build killed between the two renames of the fallback left no `target` and the
    previous set at `.NAME.old-…`: put it back first, as `lookup build` does."""
    if os.path.lexists(target):
        return
    parent, name = os.path.split(target)
    old = [os.path.join(parent, e) for e in os.listdir(parent) if e.startswith(f".{name}.old-")]
    old = [p for p in old if os.path.isdir(p) and not os.path.islink(p)]
    if old:
        os.rename(max(old, key=os.path.getmtime), target)


class JobFolder:
    """`.NAME.spark-XXXXXX` beside the output: the job's own folder (its staged parts without
    --stage, the joined and signed set before the switch), locked while the job runs. Such
    folders of killed jobs, no longer locked, are removed when the next job starts."""

    def __init__(self, target):
        parent, name = os.path.split(target)
        prefix = f".{name}.spark-"
        for entry in os.listdir(parent):
            if entry.startswith(prefix):
                self._remove_if_unlocked(os.path.join(parent, entry))
        self.path = tempfile.mkdtemp(prefix=prefix, dir=parent)
        self.fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY)
        fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

    @staticmethod
    def _remove_if_unlocked(path):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return
        shutil.rmtree(path, ignore_errors=True)
        os.close(fd)

    def remove(self):
        shutil.rmtree(self.path, ignore_errors=True)
        os.close(self.fd)


def check_output(target):
    """The output is a build directory, or missing: anything else is never replaced."""
    if not os.path.isdir(os.path.dirname(target)):
        raise JobError(f"{target}: its folder {os.path.dirname(target)} does not exist", 66)
    if not os.path.lexists(target):
        return
    if not os.path.isdir(target):
        raise JobError(f"{target} is not a directory: give -o a build directory", 64)
    contents = os.listdir(target)
    if contents and "manifest.json" not in contents:
        raise JobError(f"{target}: the directory exists and is not the output of a build (no manifest.json); refusing to replace it", 64)


def main(argv):
    a = parse_args(argv)
    try:
        Messages.connect()
        return run(a)
    except JobError as e:
        say(f"error: {e}")
        return e.code
    except Stopped as e:
        say(f"error: {e}; the output was left as it was")
        return 143
    except KeyboardInterrupt:
        say("error: interrupted; the output was left as it was")
        return 130
    except Exception:
        say(traceback.format_exc() + "error: the job failed; the output was left as it was")
        return 1


def local_output(output):
    """The output on the driver's file system: a path, or a file:// URI. The job joins, signs
    and switches the output there, with a rename: on HDFS or S3 there is no directory exchange
    (an S3 "rename" is a copy), so a published copy is made after the job (docs/SCALE.md)."""
    m = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*)://", output)
    if m is None:
        return output
    if m.group(1).lower() == "file":
        from urllib.parse import unquote, urlparse
        return unquote(urlparse(output).path)
    raise JobError(f"{output}: the output is written on the driver's file system (a path or a file:// URI), where "
                   f"it is switched in one step; copy the signed build directory to {m.group(1)}:// after the job", 64)


def turn_speculation_off(builder):
    """Speculative copies of a task would run a second `lookup build` of the same region (its
    --memory again, outside the JVM, on an executor sized for one per core) for a result that
    is the same bytes: the job runs with spark.speculation off, and says so when it was asked
    for on."""
    from pyspark import SparkConf
    asked = SparkConf().get("spark.speculation", "false").strip().lower()
    if asked == "true":
        say("note: spark.speculation is turned off for this job: every task is one lookup build of a region, "
            "and a speculative copy would build it again beside the first")
    return builder.config("spark.speculation", "false")


def receive_parts(results, stage):
    """The regions' build directories, sent by the executors as (name, bytes) records, written
    into `stage` on the driver, one folder per region. The results are kept by Spark
    (MEMORY_AND_DISK) while every task runs; then they are fetched one partition at a time,
    so the driver holds one partition's files at once, not the whole output. Returns the
    regions' (region, folder, summary, stderr, number rules)."""
    from pyspark import StorageLevel
    results.persist(StorageLevel.MEMORY_AND_DISK)
    results.count()                 # every task runs here, in parallel; a failed one fails the job
    regions, seen = [], set()
    for record in results.toLocalIterator():
        kind, region = record[0], record[1]
        folder = partition_dir(stage, region)
        if kind == "file":
            name, data = record[2], record[3]
            if name in ("", ".", "..") or "/" in name or "\0" in name:
                raise JobError(f"region {region!r}: an executor sent a file named {name!r}", 70)
            if region not in seen:
                if os.path.lexists(folder):
                    raise JobError(f"region {region!r} came from two tasks (two spellings of one region value?)", 65)
                os.mkdir(folder)
                seen.add(region)
            with open(os.path.join(folder, name), "wb") as f:
                f.write(data)
        else:
            if region not in seen:      # a region with no file: lookup join reports it missing
                os.mkdir(folder)
                seen.add(region)
            regions.append((region, folder) + tuple(record[2:]))
    results.unpersist()
    return regions


def run(a):
    stop_with_spark_submit()
    lookup = os.path.abspath(a.lookup)
    # The output as `lookup build` takes it: through a symbolic link to its target.
    output = os.path.realpath(os.path.abspath(local_output(a.output).rstrip("/") or "/"))
    recover_output(output)
    check_output(output)
    job = JobFolder(output)
    stage = None
    spark = None
    try:
        # Everything that can be checked on the driver is checked before the cluster does any work.
        if a.key:
            check_key(lookup, a.key, job.path)
        build_args = ["--memory", a.memory] + (["--max-entries", a.max_entries] if a.max_entries else []) + a.build_option
        if a.reports:
            check_report_options(a)
            build_args = ([f"--number-rules={a.number_rules}"] if a.number_rules else []) + a.build_option
        expected_rules, described = driver_number_rules(lookup, build_args)
        say(f"numbers are read with {described}")

        # The regions' parts come back through Spark and are written on the driver, into a
        # folder of this job's own: inside --stage (a local folder that may hold other
        # things: only what the job made is ever removed), or in the job's folder beside the
        # output. Executors never see it.
        if a.stage:
            os.makedirs(a.stage, exist_ok=True)
            stage = tempfile.mkdtemp(prefix="callerid-spark-", dir=os.path.abspath(a.stage))
        else:
            stage = os.path.join(job.path, "parts")
            os.mkdir(stage)

        from pyspark.sql import SparkSession

        builder = turn_speculation_off(SparkSession.builder.appName("callerid-build"))
        if a.master:
            builder = builder.master(a.master)
        spark = builder.getOrCreate()
        sc = spark.sparkContext
        if sc.getConf().get("spark.speculation", "false").strip().lower() == "true":
            raise JobError("spark.speculation is on and could not be turned off: run the job with "
                           "--conf spark.speculation=false", 64)
        if a.lookup_archive is None:
            sc.addFile(lookup)
            library = os.path.join(os.path.dirname(lookup), "libcallerid-phonenumber.so")
            if os.path.exists(library):
                sc.addFile(library)

        if a.reports:
            results, summary = report_parts(a, spark, sc, lookup, stage, expected_rules)
        else:
            results, summary = build_parts(a, spark, sc, lookup, stage, build_args, expected_rules)
        parts = sorted(directory for _, directory, _, _, _ in results)

        # The join and the signature go to the job's folder (the output's file system); the
        # output is switched once, signed, in one step, or not at all.
        joined = os.path.join(job.path, "out")
        version = ["--dataset-version", a.dataset_version] if a.dataset_version is not None else []
        run_tool([lookup, "join", "-o", joined + "/"] + version + parts, "lookup join")
        if a.key:
            run_tool([lookup, "sign", "--key", a.key, joined], "lookup sign")
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            switch_in(joined, output)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    except BaseException:
        # A failed job leaves nothing behind: no region's part, no staged database. Spark is
        # stopped first (its tasks end with it). No signal cuts this short.
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        if spark is not None:
            try:
                spark.stop()
            except Exception:
                pass
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)
        job.remove()
        raise
    if a.stage:
        shutil.rmtree(stage, ignore_errors=True)
    job.remove()
    print(json.dumps(dict(summary, output=output)), flush=True)
    spark.stop()
    return 0


def build_parts(a, spark, sc, lookup, stage, build_args, expected_rules):
    """The build: the inputs read, partitioned by region, one `lookup build` per region on the
    executors; returns what receive_parts returns and the summary."""
    from pyspark.sql import functions as F
    fmt = a.format or {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}.get(
        os.path.splitext(a.input[0])[1].lower(), "tsv")
    frames = [f for f in (read_input(spark, i, path, fmt, a) for i, path in enumerate(a.input)) if f is not None]
    if not frames:
        raise JobError("no rows in the input", 65)
    rows = frames[0]
    for f in frames[1:]:
        rows = rows.unionByName(f)
    # Partitioned by region; within a region the rows keep the order of a single build:
    # the inputs in their order, a folder's files by name, each file's rows in its order.
    partitions = a.partitions or sc.defaultParallelism
    rows = (rows.withColumn("_key", F.coalesce("region", F.lit("")))
            .repartition(partitions, "_key").sortWithinPartitions("_key", "_file", "_path", "_line"))

    lookup_name, archive = os.path.basename(lookup), a.lookup_archive
    required = required_fields(a)
    results = receive_parts(rows.rdd.mapPartitions(
        lambda it: build_partition(it, lookup_name, archive, build_args, expected_rules, required)), stage)
    summary = {"regions": len(results), "rows": 0, "entries": 0, "bad_rows": 0, "duplicates_merged": 0,
               "number_rules": expected_rules}
    for region, _, s, stderr, _ in results:
        for k in ("rows", "entries", "bad_rows", "duplicates_merged"):
            summary[k] += s[k]
        if stderr.strip():
            say(f"region {region!r}:\n{stderr}")
    for region, _, _, stderr, used in results:
        if used != expected_rules:
            raise JobError(rules_mismatch(region, used, expected_rules, stderr), 70)
    return results, summary


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
