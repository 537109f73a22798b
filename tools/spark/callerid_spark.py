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
import ctypes
import errno
import fcntl
import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import traceback


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
        raise JobError(f"no column {selector!r} in the input (columns: {', '.join(cols)})", 65)
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


def build_partition(rows, lookup_name, stage, build_args, expected_rules):
    """Runs on an executor: one `lookup build` per region of this partition's rows (sorted by
    region, then input order). Yields (region, directory, summary, stderr, number rules) or
    raises on failure, and when the build read numbers with other rules than the driver's."""
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
        used = number_rules_used(build_args, done.stderr)
        if used != expected_rules:
            raise RuntimeError(rules_mismatch(region, used, expected_rules, done.stderr))
        return region, out, json.loads(done.stdout), done.stderr, used

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


def run(a):
    stop_with_spark_submit()
    lookup = os.path.abspath(a.lookup)
    # The output as `lookup build` takes it: through a symbolic link to its target.
    output = os.path.realpath(os.path.abspath(a.output.rstrip("/") or "/"))
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

        # The regions' parts go to a folder of this job's own, made inside --stage (or in the
        # job's folder beside the output): --stage may be a shared mount point holding other
        # things, and only what the job made is ever removed.
        if a.stage:
            os.makedirs(a.stage, exist_ok=True)
            stage = tempfile.mkdtemp(prefix="callerid-spark-", dir=os.path.abspath(a.stage))
        else:
            stage = os.path.join(job.path, "parts")
            os.mkdir(stage)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(stage, 0o777 & ~umask)   # as a folder made by mkdir: executors may run as another user

        from pyspark.sql import SparkSession
        from pyspark.sql import functions as F

        builder = SparkSession.builder.appName("callerid-build")
        if a.master:
            builder = builder.master(a.master)
        spark = builder.getOrCreate()
        sc = spark.sparkContext
        sc.addFile(lookup)
        library = os.path.join(os.path.dirname(lookup), "libcallerid-phonenumber.so")
        if os.path.exists(library):
            sc.addFile(library)

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

        lookup_name = os.path.basename(lookup)
        results = rows.rdd.mapPartitions(
            lambda it: build_partition(it, lookup_name, stage, build_args, expected_rules)).collect()
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
        run_tool([lookup, "join", "-o", joined + "/"] + parts, "lookup join")
        if a.key:
            run_tool([lookup, "sign", "--key", a.key, joined], "lookup sign")
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            switch_in(joined, output)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    except BaseException:
        # A failed job leaves no part behind: no region's manifest, no staged database. The
        # other tasks are stopped first (a task still running would stage its region again).
        # No signal cuts this short.
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        if spark is not None:
            try:
                spark.stop()
            except Exception:
                pass
        if stage is not None:
            for _ in range(20):
                shutil.rmtree(stage, ignore_errors=True)
                time.sleep(0.5)
                if not os.path.exists(stage):
                    break
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
