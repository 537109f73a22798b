"""Builds a CallerID build directory on a Spark cluster: one `lookup build` per region.

    spark-submit tools/spark/callerid_spark.py --lookup .build/release/lookup \\
        --input directory.parquet --region-field region -o bundle/ [--key publisher]

(or `bash tools/spark/run.sh …`, which finds spark-submit in the venv of tools/spark/setup.sh).

What it does, and why each step is where it is (docs/SCALE.md):
1. Reads the inputs (TSV, CSV, JSON Lines or Parquet: `--format`, else from the name), each
   file on its own with its position kept, so that the rows keep their input order: the last
   row of a number wins, as in a single `lookup build`.
2. Partitions the rows by region (`--region-field`), sorted within a partition by input order.
3. On the executors, runs `lookup build` once per region on that region's rows (TSV written
   to a local temporary file, `--split-by field` with the region fixed by the data): numbers
   are normalized, labels cleaned, duplicates merged, shards cut by the same code as on one
   machine. The `lookup` binary (and `libcallerid-phonenumber.so` beside it) is shipped to the
   executors with the job. Each region's build directory goes to a staging folder that the
   driver and the executors share (local disk in local mode; a shared file system on a
   cluster: `--stage`).
4. On the driver, once every partition has succeeded: `lookup join` writes the one build
   directory (the databases and one manifest, by the same code as a single build), then
   `lookup sign` signs it. A failed partition fails the job before the join: no manifest is
   written and the previous output stays as it was. Running it again gives the same bytes
   (with SOURCE_DATE_EPOCH set, the same manifest too).
"""
import argparse
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--input", action="append", required=True, help="input file (repeatable; rows keep this order)")
    ap.add_argument("--format", choices=["tsv", "csv", "jsonl", "parquet"], help="default: from the first input's name")
    ap.add_argument("--header", choices=["yes", "no"], default=None,
                    help="TSV/CSV header row (default: yes for CSV, no for TSV)")
    ap.add_argument("--number-field", default=None, help="column name or 1-based position (default: 1st column / 'number')")
    ap.add_argument("--label-field", default=None, help="default: 2nd column / 'label'")
    ap.add_argument("--category-field", default=None, help="default: 3rd column / 'category'")
    ap.add_argument("--region-field", required=True, help="the column the rows are partitioned by")
    ap.add_argument("-o", "--output", required=True, help="the build directory to write")
    ap.add_argument("--lookup", required=True, help="the lookup binary to ship to the executors")
    ap.add_argument("--key", help="sign the result with this secret key (lookup keygen)")
    ap.add_argument("--stage", help="a folder shared by the driver and the executors, in which the job makes its own "
                    "staging folder and removes only that (default: beside --output)")
    ap.add_argument("--master", default=None, help="Spark master (default: spark-submit's, else local[*])")
    ap.add_argument("--partitions", type=int, default=0, help="shuffle partitions (default: the default parallelism)")
    ap.add_argument("--memory", default="512M", help="lookup build --memory on each executor task (default 512M)")
    ap.add_argument("--max-entries", default=None, help="lookup build --max-entries")
    ap.add_argument("--build-option", action="append", default=[],
                    help="one more lookup build argument, e.g. --build-option=--country=RU (repeatable)")
    return ap.parse_args(argv)


def column(df, selector, default_position, default_name):
    """The column a selector names: a 1-based position or a name (default: position or name)."""
    cols = df.columns
    if selector is None:
        if default_name in cols:
            return default_name
        return cols[default_position - 1] if default_position <= len(cols) else None
    if selector.isdigit():
        return cols[int(selector) - 1]
    if selector not in cols:
        raise SystemExit(f"error: no column {selector!r} in the input (columns: {', '.join(cols)})")
    return selector


def read_input(spark, path, fmt, header):
    reader = spark.read
    if fmt in ("tsv", "csv"):
        # Every value as text, no quoting rules for TSV (lookup's TSV has none), '#' lines skipped.
        reader = reader.option("header", header).option("inferSchema", "false")
        if fmt == "tsv":
            reader = reader.option("sep", "\t").option("quote", "\u0000").option("comment", "#")
        else:
            # RFC 4180, as lookup reads CSV: "" is a quote inside a quoted field, which may
            # hold line breaks (so a file is read by one task: Parquet splits, CSV cannot).
            reader = reader.option("escape", '"').option("multiLine", "true")
        return reader.csv(path)
    if fmt == "jsonl":
        return reader.option("primitivesAsString", "true").json(path)
    return reader.parquet(path)


def partition_dir(stage, region):
    """A region's build directory in the stage: a name any file system takes."""
    return os.path.join(stage, "region-" + hashlib.sha256(region.encode("utf-8")).hexdigest()[:20])


def build_partition(rows, lookup_name, stage, build_args):
    """Runs on an executor: one `lookup build` per region of this partition's rows (sorted by
    region, then input order). Yields (region, directory, summary) or raises on failure."""
    from pyspark import SparkFiles
    lookup = SparkFiles.get(lookup_name)
    mode = os.stat(lookup).st_mode
    if not mode & stat.S_IXUSR:
        os.chmod(lookup, mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)

    def clean(value):
        # The TSV row is one line: a tab or line break in a label is a space (lookup's label
        # cleaning turns it into one and collapses spaces anyway).
        return "" if value is None else str(value).replace("\t", " ").replace("\r", " ").replace("\n", " ")

    def run(region, path):
        out = partition_dir(stage, region)
        shutil.rmtree(out, ignore_errors=True)
        cmd = [lookup, "build", "-o", out + "/", path, "--format", "tsv", "--header", "no",
               "--number-field", "1", "--label-field", "2", "--category-field", "3",
               "--split-by", "field", "--region-field", "4", "--json"] + build_args
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"lookup build of region {region!r} failed with exit {done.returncode}:\n{done.stderr[-4000:]}")
        return region, out, json.loads(done.stdout), done.stderr

    current, handle, path = None, None, None
    workdir = tempfile.mkdtemp(prefix="callerid-spark-")
    try:
        for number, label, category, region, _file, _row in rows:
            region = "" if region is None else str(region)
            if region != current:
                if handle is not None:
                    handle.close()
                    yield run(current, path)
                current = region
                path = os.path.join(workdir, "rows.tsv")
                handle = open(path, "w", encoding="utf-8", newline="\n")
            handle.write(f"{clean(number)}\t{clean(label)}\t{clean(category)}\t{clean(region)}\n")
        if handle is not None:
            handle.close()
            yield run(current, path)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv):
    a = parse_args(argv)
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    builder = SparkSession.builder.appName("callerid-build")
    if a.master:
        builder = builder.master(a.master)
    spark = builder.getOrCreate()
    sc = spark.sparkContext

    lookup = os.path.abspath(a.lookup)
    sc.addFile(lookup)
    library = os.path.join(os.path.dirname(lookup), "libcallerid-phonenumber.so")
    if os.path.exists(library):
        sc.addFile(library)

    output = os.path.abspath(a.output.rstrip("/"))
    # The regions' parts go to a folder of this job's own, made inside --stage (or beside the
    # output): --stage may be a shared mount point holding other things, and only what the
    # job made is ever removed.
    if a.stage:
        os.makedirs(a.stage, exist_ok=True)
        stage = tempfile.mkdtemp(prefix="callerid-spark-", dir=os.path.abspath(a.stage))
    else:
        stage = tempfile.mkdtemp(prefix="." + os.path.basename(output) + ".spark-stage-", dir=os.path.dirname(output))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(stage, 0o777 & ~umask)   # as a folder made by mkdir: executors may run as another user

    fmt = a.format or {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}.get(
        os.path.splitext(a.input[0])[1].lower(), "tsv")
    header = a.header or ("yes" if fmt == "csv" else "no")
    frames = []
    for i, path in enumerate(a.input):
        df = read_input(spark, path, fmt, header == "yes")
        number = column(df, a.number_field, 1, "number")
        label = column(df, a.label_field, 2, "label")
        category = column(df, a.category_field, 3, "category")
        region = column(df, a.region_field, 4, "region")
        pick = lambda c: F.col(f"`{c}`").cast("string") if c else F.lit(None).cast("string")
        frames.append(df.select(pick(number).alias("number"), pick(label).alias("label"), pick(category).alias("category"),
                                pick(region).alias("region"))
                      .withColumn("_file", F.lit(i)).withColumn("_row", F.monotonically_increasing_id()))
    rows = frames[0]
    for f in frames[1:]:
        rows = rows.unionByName(f)
    partitions = a.partitions or sc.defaultParallelism
    rows = rows.repartition(partitions, "region").sortWithinPartitions("region", "_file", "_row")

    build_args = ["--memory", a.memory] + (["--max-entries", a.max_entries] if a.max_entries else []) + a.build_option
    lookup_name = os.path.basename(lookup)
    try:
        results = rows.rdd.mapPartitions(lambda it: build_partition(it, lookup_name, stage, build_args)).collect()
        summary = {"regions": len(results), "rows": 0, "entries": 0, "bad_rows": 0, "duplicates_merged": 0}
        for region, _, s, stderr in results:
            for k in ("rows", "entries", "bad_rows", "duplicates_merged"):
                summary[k] += s[k]
            if stderr.strip():
                sys.stderr.write(f"region {region!r}:\n{stderr}")
        parts = sorted(directory for _, directory, _, _ in results)
        subprocess.run([lookup, "join", "-o", output + "/"] + parts, check=True)
        if a.key:
            subprocess.run([lookup, "sign", "--key", a.key, output], check=True)
    except BaseException:
        # A failed job leaves no part behind: no region's manifest, no staged database. The
        # other tasks are stopped first (a task still running would stage its region again).
        spark.stop()
        for _ in range(20):
            shutil.rmtree(stage, ignore_errors=True)
            time.sleep(0.5)
            if not os.path.exists(stage):
                break
        raise
    shutil.rmtree(stage, ignore_errors=True)
    print(json.dumps(dict(summary, output=output)))
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
