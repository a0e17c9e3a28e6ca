"""The Spark session the job runs in, with the settings its stages rely on.

Two defaults here fit the input rather than Spark's defaults (issue 11, item 6):

- local mode's driver memory: Spark starts local mode with a 1 GB heap whatever the machine;
  the driver is also every executor there, so it gets a share of the machine's memory
  (`local_driver_memory`) unless the user set it. It must be fixed before the JVM starts:
  `submit.sh` asks `python -m simhash_udf.run.session --local-driver-memory` and passes
  `--driver-memory`; `get_session` sets `spark.driver.memory` when it starts the JVM itself
  (`python jobs/dedupe.py`).
- the vectorized Parquet and ORC readers' batch (`READER_BATCH_ROWS`): Spark's 4,096 rows
  of web pages of 100 kB are 400 MB in one column vector, grown by doubling.

And the driver JVM that `get_session` (or `submit.sh`, outside cluster deploy mode) starts gets
two options (`driver_java_options`), issue 14: it maps the classes a run loads from a class data
sharing archive when the environment has one (`class_archive_options`), and it collects its
garbage with the throughput collector (`DRIVER_GC`) unless the user chose a collector.
"""

from __future__ import annotations

import logging
import os
import re
import shlex
import sys
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

# Arrow batches of at most this many rows go to the Python workers: with web pages of up to
# a few hundred kB, Spark's default of 10,000 rows can hold gigabytes in one batch.
ARROW_BATCH_ROWS = 1000

# Rows per batch of Spark's vectorized Parquet and ORC readers (Spark's default: 4,096). A
# batch holds every value of its rows in one array per column: 256 pages of 100 kB are 26 MB
# (a few hundred kB a page: under 100 MB), where 4,096 were 400 MB and a 1 GB heap failed
# ("Cannot reserve additional contiguous bytes in the vectorized reader"). Narrow columns
# (ids, given fingerprints) lose little: a batch of 256 longs still amortises the per-batch
# work.
READER_BATCH_ROWS = 256
READER_BATCH_KEYS = ("spark.sql.parquet.columnarReaderBatchSize", "spark.sql.orc.columnarReaderBatchSize")

# Local mode's driver: this share of the machine's memory, at least Spark's own 1 GB default
# and at most the cap. A quarter leaves the rest to the Python workers (one per core, ~350 MB
# each plus their Arrow batches) and the page cache; past 8 GB a local run gains little
# (the join and the components stream through Spark's spill) and a shared machine suffers.
LOCAL_DRIVER_SHARE = 4
LOCAL_DRIVER_MIN_MB = 1024
LOCAL_DRIVER_MAX_MB = 8192

# Class data sharing (the JDK's CDS): a run's driver JVM loads and verifies thousands of
# Spark's classes, seconds of a small run (mapped from an archive, the sample takes 0.89x the job
# time and 0.82x the wall time: bench/RESULTS.md section 9). A dynamic archive recorded by one run
# (`-XX:ArchiveClassesAtExit`, done by ./quickstart.sh) lets later runs map them instead. It
# lives in the environment (`sys.prefix`, submit.sh's $venv) because it is only valid for that
# environment's jars: the JVM checks the class path against the archive and ignores a stale,
# missing or damaged one (a warning we switch off: `-Xlog:cds*=off`), so using it is never
# worse than not. scripts/bootstrap.sh removes it when it reinstalls the jars; submit.sh
# applies the same rule in shell (tests/system/test_submit.py checks they agree).
CLASS_ARCHIVE_NAME = "driver-classes.jsa"
# The archive's path (default: CLASS_ARCHIVE_NAME in the environment); "none" turns it off.
CLASS_ARCHIVE_ENV = "SIMHASH_CLASS_ARCHIVE"
# Set to a path: the run records a new archive there at its exit instead of using one.
RECORD_CLASS_ARCHIVE_ENV = "SIMHASH_RECORD_CLASS_ARCHIVE"
_QUIET_CDS = "-Xlog:cds*=off"
_JAVA_OPTIONS_KEY = "spark.driver.defaultJavaOptions"

# The driver JVM's garbage collector: the parallel (throughput) collector, not the JDK's default
# G1. In local mode the driver runs every task, and a batch job wants throughput, not short
# pauses: G1's concurrent marking and write barriers take CPU from the two task threads of a
# small machine. Measured by bench/driver_gc.py (the job as a process, local[2], driver 8g, the
# two collectors taking turns, medians of 3; bench/RESULTS-gc.md): wall time 0.95x G1's on the
# sample, 0.97x on 200 MB of English text, 0.96x on 4M precomputed fingerprints, the same counts
# (an earlier run, with 50 MB of text: 0.91x, 0.97x, 0.98x). The price: it grows the heap toward
# its cap sooner, so the peak resident memory was 0.3-1.0 GB higher on the two larger inputs
# (the heap stays within the driver memory). A collector the user chose anywhere the JVM reads
# its options (`gc_chosen`) is kept: two make the JVM refuse to start ("Multiple garbage
# collectors selected"). submit.sh applies the same rule (tests/system/test_submit.py).
DRIVER_GC = "-XX:+UseParallelGC"
# A JVM option that selects (or deselects) a collector: -XX:+UseG1GC, -XX:-UseParallelGC, ...
GC_OPTION = re.compile(r"-XX:[+-]Use\w*GC(?!\w)")
# The driver JVM's compiler for a run over texts in local mode: C1 only, not C1 then C2. There
# the JVM's share of the work is small (the Python workers normalise and fingerprint), and C2's
# compiler threads, busy for the first minute of every run, take CPU from the two task threads
# of a small machine. Measured with ./submit.sh, local, alternating runs: the sample's job time
# 12.6 -> 10.2 s (medians of 3), 5 MB of Chinese 14.1 -> 12.0 s, 200 MB 37.9 -> 33.1 s, 1M
# short documents 205 -> 201 s. A run on precomputed fingerprints (--fingerprint-col) is all
# JVM work, where C2's code pays: 4M fingerprints 29.3 s with C2, 33.8 s with C1 only, so it
# keeps C2, and so do sessions started without `quick_jit` (notebooks). A compiler the user
# chose anywhere the JVM reads its options (`jit_chosen`) is kept. submit.sh applies the same
# rule (tests/system/test_submit.py).
QUICK_JIT = "-XX:TieredStopAtLevel=1"
# A JVM option that chooses the compilers: -XX:TieredStopAtLevel=N, -XX:[+-]TieredCompilation.
JIT_OPTION = re.compile(r"-XX:(?:TieredStopAtLevel=|[+-]TieredCompilation(?!\w))")
# The environment variables the JDK's launcher and Spark's scripts add to the driver's options.
_JVM_OPTION_VARIABLES = ("PYSPARK_SUBMIT_ARGS", "SPARK_SUBMIT_OPTS", "JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS")


def class_archive_options(environ: Mapping[str, str] | None = None, prefix: str | None = None) -> str:
    """The driver JVM's options for class data sharing, "" for none.

    "-XX:ArchiveClassesAtExit=PATH" when RECORD_CLASS_ARCHIVE_ENV names a PATH; else
    "-XX:SharedArchiveFile=PATH" when the archive (CLASS_ARCHIVE_ENV, default
    CLASS_ARCHIVE_NAME under `prefix`, the environment's `sys.prefix`) is a file; either with
    the JVM's class-sharing log off. environ: default os.environ."""
    environ = os.environ if environ is None else environ
    record = environ.get(RECORD_CLASS_ARCHIVE_ENV, "")
    if record:
        return f"-XX:ArchiveClassesAtExit={record} {_QUIET_CDS}"
    archive = environ.get(CLASS_ARCHIVE_ENV) or str(Path(prefix or sys.prefix) / CLASS_ARCHIVE_NAME)
    if archive != "none" and Path(archive).is_file():
        return f"-XX:SharedArchiveFile={archive} {_QUIET_CDS}"
    return ""


def _spark_defaults(environ: Mapping[str, str]) -> str:
    """The text of the spark-defaults.conf pyspark's launcher reads ("" when there is none)."""
    conf_dir = environ.get("SPARK_CONF_DIR") or (
        os.path.join(environ["SPARK_HOME"], "conf") if environ.get("SPARK_HOME") else None
    )
    defaults = Path(conf_dir, "spark-defaults.conf") if conf_dir else None
    return defaults.read_text(errors="replace") if defaults and defaults.is_file() else ""


def _java_options_given(conf: Mapping[str, str]) -> bool:
    """Whether anything pyspark's launcher reads sets spark.driver.defaultJavaOptions (the
    setting the archive's options go in, which a value of our own would replace)."""
    if _JAVA_OPTIONS_KEY in conf or _JAVA_OPTIONS_KEY in os.environ.get("PYSPARK_SUBMIT_ARGS", ""):
        return True
    return _JAVA_OPTIONS_KEY in _spark_defaults(os.environ)


def _option_chosen(option: re.Pattern[str], conf: Mapping[str, str], environ: Mapping[str, str] | None) -> bool:
    """Whether `option` is set anywhere the driver JVM takes options from: conf's values, the
    launcher's and the JDK's environment variables (`_JVM_OPTION_VARIABLES`),
    spark-defaults.conf. environ: default os.environ."""
    environ = os.environ if environ is None else environ
    texts = [*conf.values(), *(environ.get(name, "") for name in _JVM_OPTION_VARIABLES), _spark_defaults(environ)]
    return any(option.search(text) for text in texts)


def gc_chosen(conf: Mapping[str, str], environ: Mapping[str, str] | None = None) -> bool:
    """Whether a garbage collector is chosen (`GC_OPTION`) anywhere the driver JVM takes options
    from (`_option_chosen`)."""
    return _option_chosen(GC_OPTION, conf, environ)


def jit_chosen(conf: Mapping[str, str], environ: Mapping[str, str] | None = None) -> bool:
    """Whether the JIT compilers are chosen (`JIT_OPTION`) anywhere the driver JVM takes options
    from (`_option_chosen`)."""
    return _option_chosen(JIT_OPTION, conf, environ)


def driver_java_options(
    conf: Mapping[str, str], environ: Mapping[str, str] | None = None, prefix: str | None = None,
    quick_jit: bool = False,
) -> str:
    """The options `get_session` gives a driver JVM it starts: `DRIVER_GC` unless `gc_chosen`,
    `QUICK_JIT` when `quick_jit` unless `jit_chosen`, then `class_archive_options`; "" for none."""
    gc = "" if gc_chosen(conf, environ) else DRIVER_GC
    jit = QUICK_JIT if quick_jit and not jit_chosen(conf, environ) else ""
    return " ".join(option for option in (gc, jit, class_archive_options(environ, prefix)) if option)


def physical_memory_bytes() -> int | None:
    """This machine's memory as the process may use it: physical memory, or a cgroup's
    memory limit when lower (a container sees the host's memory in /proc). None if unknown."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(limit_file).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and 0 < int(text) < total:
            total = int(text)
    return total if total > 0 else None


def local_driver_memory(total_bytes: int | None) -> str:
    """The driver memory for local mode on a machine of `total_bytes` (a Spark size string:
    "5939m"): a LOCAL_DRIVER_SHARE-th of it, between LOCAL_DRIVER_MIN_MB and
    LOCAL_DRIVER_MAX_MB; Spark's own 1g when the machine's memory is unknown."""
    if not total_bytes:
        return f"{LOCAL_DRIVER_MIN_MB}m"
    share_mb = total_bytes // LOCAL_DRIVER_SHARE // (1024 * 1024)
    return f"{max(LOCAL_DRIVER_MIN_MB, min(LOCAL_DRIVER_MAX_MB, share_mb))}m"


def driver_memory_note(memory: str, total_bytes: int | None) -> str:
    """The one log line that says what local mode's driver got and how to change it."""
    machine = f"{total_bytes / 2**30:.1f} GB" if total_bytes else "unknown memory"
    return (
        f"local mode: driver memory {memory} (a 1/{LOCAL_DRIVER_SHARE} share of this machine's "
        f"{machine}, {LOCAL_DRIVER_MIN_MB // 1024}-{LOCAL_DRIVER_MAX_MB // 1024} GB; "
        "--driver-memory sets it)"
    )


def is_local_master(master: str | None) -> bool:
    """local, local[N], local[*], local[N,F] (None is local: the job's default master)."""
    return master is None or master == "local" or master.startswith("local[")


def _driver_memory_given(conf: dict[str, str]) -> bool:
    """Whether the user fixed the driver memory in a way pyspark's launcher passes on."""
    if "spark.driver.memory" in conf or os.environ.get("SPARK_DRIVER_MEMORY"):
        return True
    words = shlex.split(os.environ.get("PYSPARK_SUBMIT_ARGS", ""))
    return any(w == "--driver-memory" or w.startswith("--driver-memory=") or "spark.driver.memory" in w for w in words)


def _jvm_running() -> bool:
    """A JVM is already up: spark-submit started this Python, or a session was made before.
    Settings fixed at start-up (driver memory) cannot change then."""
    from pyspark import SparkContext

    return bool(os.environ.get("PYSPARK_GATEWAY_PORT")) or SparkContext._gateway is not None


def get_session(
    app_name: str = "simhash-dedupe",
    master: str | None = None,
    conf: dict[str, str] | None = None,
    quick_jit: bool = False,
) -> SparkSession:
    """The active session, or a new one (local mode on all cores unless a master is set).

    conf: further Spark settings for a new session (e.g. {"spark.driver.memory": "4g"});
    settings fixed at start-up have no effect on a session that is already running.
    quick_jit: the session runs a job over texts: a local-mode driver JVM started here compiles
    with C1 only (`QUICK_JIT`).

    A new local-mode JVM started here gets `local_driver_memory` of this machine unless conf,
    PYSPARK_SUBMIT_ARGS or SPARK_DRIVER_MEMORY set it (said in one log line), and any JVM
    started here gets `driver_java_options` (the parallel collector, C1 only with quick_jit in
    local mode, the environment's class archive) through spark.driver.defaultJavaOptions unless something sets that option already. The
    readers' batch is READER_BATCH_ROWS unless the session's conf already sets it (--conf).

    Python workers run the interpreter that runs the driver unless PYSPARK_PYTHON says
    otherwise, so a virtual environment's packages are found in local mode.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    conf = dict(conf or {})
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    local = is_local_master(master or conf.get("spark.master"))
    if local and not _jvm_running() and not _driver_memory_given(conf):
        total = physical_memory_bytes()
        conf["spark.driver.memory"] = local_driver_memory(total)
        log.info(driver_memory_note(conf["spark.driver.memory"], total))
    if not _jvm_running() and not _java_options_given(conf):
        # The driver JVM starts here: its collector, its compilers, the environment's class archive.
        options = driver_java_options(conf, quick_jit=quick_jit and local)
        if options:
            conf[_JAVA_OPTIONS_KEY] = options
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(ARROW_BATCH_ROWS))
    set_reader_batch(spark)
    return spark


# A small run's queries evaluate their expressions interpreted instead of compiling them. Spark
# generates Java source for each query's projections, filters and aggregations and compiles it
# with Janino before the first row: tens of milliseconds a query in a warm JVM, far more in a
# run's cold one, and a small run is ~30 queries over a few rows each. Interpreted, each row
# costs more instead, so the documents decide, known once the input is read. Measured with
# ./submit.sh, alternating runs on a shared machine: the sample in process on a warm session,
# 5.99 -> 5.57 s (medians of 5; the report stage 0.60 -> 0.37 s); as a process, 14.5 -> 12.4 s
# (medians of 3, every query interpreted); 20,000 short documents (21 MB) faster interpreted in
# each of three pairs (31/35, 29/32, 21/22 s); 100,000 (105 MB) slower in each of three (73/67,
# 70/69, 87/57 s; the stages after the signatures 32/30, 31/29, 44/26 s). Hence the limit:
# the largest size measured to gain. `factoryMode` is an internal setting of Spark SQL (its own
# tests run expressions interpreted with it); `wholeStage` is a public one.
INTERPRETED_MAX_DOCUMENTS = 20_000
INTERPRETED_SETTINGS = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
# The front of a run (read, parse, the ids' check) runs before its documents are counted; it is
# interpreted when the input's files hold at most this many bytes, few rows in any format:
# ~5,000 documents of 200 bytes of text, ~70,000 rows of bare fingerprints (id and
# fingerprint: ~15 bytes a row in Parquet). Measured on a shared machine: the sample (94 kB)
# as a process, alternating runs, parse 2.6/1.7, 2.3/1.7, 1.9/2.0 s and the ids' check
# 1.3/0.8, 1.0/0.7, 0.8/0.8 s, compiled/interpreted; but the ids' aggregation over 250,000
# fingerprints (3.6 MB) in a warm session, 2.2 s compiled against 3.2 s interpreted (medians
# of 5), so the limit stays well below that.
INTERPRETED_MAX_INPUT_BYTES = 1 << 20


def interpret_small_run(spark: SparkSession, documents: int | None = None, input_bytes: int | None = None) -> bool:
    """Set INTERPRETED_SETTINGS on the session when a run is small: `documents` documents (at
    most INTERPRETED_MAX_DOCUMENTS), or, before they are counted, `input_bytes` bytes of input
    files (at most INTERPRETED_MAX_INPUT_BYTES); unless the session was started with either
    setting of its own (`--conf`). True when set. The caller gives the session back its own
    settings after the run or its front (`settings_restored`)."""
    started_with = spark.sparkContext.getConf()
    if any(started_with.contains(k) for k in INTERPRETED_SETTINGS):
        return False
    if documents is not None and documents > INTERPRETED_MAX_DOCUMENTS:
        return False
    if input_bytes is not None and input_bytes > INTERPRETED_MAX_INPUT_BYTES:
        return False
    for key, value in INTERPRETED_SETTINGS.items():
        spark.conf.set(key, value)
    return True


@contextmanager
def settings_restored(spark: SparkSession, keys: Iterable[str]) -> Iterator[None]:
    """Give the session back its values of `keys` when the block ends, whatever it set."""
    before = {key: spark.conf.get(key, None) for key in keys}
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def set_reader_batch(spark: SparkSession) -> None:
    """READER_BATCH_ROWS for the vectorized Parquet and ORC readers, unless the session was
    started with a value of its own (`--conf spark.sql.parquet.columnarReaderBatchSize=...`)."""
    started_with = spark.sparkContext.getConf()
    for key in READER_BATCH_KEYS:
        if not started_with.contains(key):
            spark.conf.set(key, str(READER_BATCH_ROWS))


# What Spark says when memory ran out: the JVM's own error (a task's, carried in the job's
# failure, or the driver's), Spark's execution-memory error, an executor JVM that exited
# with SparkUncaughtExceptionHandler's code 52 for an OutOfMemoryError, YARN's kill.
OUT_OF_MEMORY = re.compile(
    r"OutOfMemoryError|exit(?:ed)? (?:with )?(?:code|status) 52\b|killed by YARN for exceeding memory",
    re.IGNORECASE,
)
TASK_FAILURE = re.compile(r"Job aborted due to stage failure|Lost task|ExecutorLostFailure")


def memory_hint(error_text: str, master: str | None, jvm_exit_code: int | None = None) -> str | None:
    """One line naming the setting to raise when `error_text` (an error from Spark) or the
    driver JVM's exit code 52 says memory ran out; None when it is another error.

    Local mode runs every task in the driver's JVM: --driver-memory. On a cluster, a task's
    failure is the executors' (their heap, or the Python workers beside it); anything else
    is the driver's.
    """
    if jvm_exit_code != 52 and not OUT_OF_MEMORY.search(error_text):
        return None
    if is_local_master(master):
        where, raise_ = "local mode runs every task in the driver's JVM", "--driver-memory"
    elif TASK_FAILURE.search(error_text):
        where = "a task on an executor"
        raise_ = "--executor-memory (the JVM heap) or spark.executor.memoryOverhead (the Python workers)"
    else:
        where, raise_ = "the driver", "--driver-memory"
    return f"dedupe.py: error: Spark ran out of memory ({where}): raise {raise_}"


def jvm_exit_code(wait_seconds: float = 0.0) -> int | None:
    """The exit code of the driver JVM this Python started (`python jobs/dedupe.py`), once it
    has exited (waiting up to `wait_seconds`: a JVM that lost its connection may still be
    shutting down); None while it runs or when spark-submit started it (and this Python)."""
    import subprocess

    from pyspark import SparkContext

    proc = getattr(SparkContext._gateway, "proc", None)
    if proc is None:
        return None
    try:
        return proc.wait(timeout=wait_seconds) if wait_seconds else proc.poll()
    except subprocess.TimeoutExpired:
        return None


def _main(argv: list[str]) -> int:
    """`python -m simhash_udf.run.session --local-driver-memory`: two lines for submit.sh, the
    driver memory for local mode on this machine and the log line that says so."""
    if argv != ["--local-driver-memory"]:
        print("usage: python -m simhash_udf.run.session --local-driver-memory", file=sys.stderr)
        return 2
    total = physical_memory_bytes()
    memory = local_driver_memory(total)
    print(memory)
    print(driver_memory_note(memory, total))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
