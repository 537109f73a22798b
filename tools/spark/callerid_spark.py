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
    ap.add_argument("--region-field", required=True, help="the column the rows are partitioned by")
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
    return ap.parse_args(argv)


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


def build_partition(rows, lookup_name, archive, build_args, expected_rules, required):
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
        cmd = [lookup, "build", "-o", out + "/", path, "--format", "tsv", "--header", "no",
               "--number-field", "1", "--label-field", "2", "--category-field", "3",
               "--split-by", "field", "--region-field", "4", "--json"] + build_args
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
        from pyspark.sql import functions as F

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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
