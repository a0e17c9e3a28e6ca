"""Shared fixtures (one local Spark session for the whole test run, the shared data, the jobs'
`main`) and the `system` marker for tests/system/.

Functions and constants tests import are in tests/helpers.py (paths, job drivers, output
readers) and tests/generators.py (data generators, brute-force oracles), never here.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from helpers import SHARED_DATA, load_job

SYSTEM_TESTS = Path(__file__).resolve().parent / "system"

# Every Spark driver the tests start as a process (each job, spark-submit, notebook kernel and
# Airflow task, which inherit this environment) compiles with C1 only, starts no web UI, and plans
# without adaptive execution over 2 shuffle partitions. Such a JVM lives a minute or less on a few
# thousand rows: C2's optimising compiles of Spark's code were a third of a sample run's CPU time
# and never paid back, the UI's server ~3 s of its start-up, and AQE's job per exchange 36 of the
# sample's 103 Spark jobs (a run 81 -> 66 s). No test reads the UI unless it turns it on; the
# `spark` fixture's JVM keeps every default (see its docstring). Results depend on none of
# them; bench/ measures speed with the defaults. spark-submit adds SPARK_SUBMIT_OPTS to the
# driver's java command silently (JAVA_TOOL_OPTIONS would print a line into every log the tests
# read), and SparkConf takes `-Dspark.*` properties as settings, below any --conf a test passes.
PROCESS_JVM_OPTIONS = ("-XX:TieredStopAtLevel=1 -Dspark.ui.enabled=false "
                       "-Dspark.sql.adaptive.enabled=false -Dspark.sql.shuffle.partitions=2")
os.environ.setdefault("SPARK_SUBMIT_OPTS", PROCESS_JVM_OPTIONS)


def pytest_collection_modifyitems(config, items) -> None:
    """Mark every test under tests/system/ (a standalone cluster, Airflow, notebooks,
    spark-submit, the README's commands) `system`, so `-m "not system"` leaves them out."""
    for item in items:
        if SYSTEM_TESTS in Path(item.path).parents:
            item.add_marker(pytest.mark.system)


@pytest.fixture(scope="session")
def spark():
    """local[2] with few shuffle partitions and no UI: small frames run in seconds.

    Its JVM starts without PROCESS_JVM_OPTIONS, so the in-process tests cover adaptive execution
    and the default JIT: it serves every in-process test of its pytest process (./test.sh runs
    two, for half an hour each), where C2's compiles pay back: with C1 only
    (PROCESS_JVM_OPTIONS) the 25 whole-job examples of tests/files/test_fuzz_readers.py took
    428 s, against 287 s with it."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    # Ours (not a user's own setting): this JVM starts without it.
    ours = os.environ.get("SPARK_SUBMIT_OPTS") == PROCESS_JVM_OPTIONS
    if ours:
        del os.environ["SPARK_SUBMIT_OPTS"]
    try:
        session = (
            SparkSession.builder.master("local[2]")
            .appName("simhash-udf-tests")
            .config("spark.sql.shuffle.partitions", "4")
            .config("spark.default.parallelism", "4")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.memory", "2g")
            .config("spark.sql.execution.arrow.maxRecordsPerBatch", "1000")
            .getOrCreate()
        )
    finally:
        if ours:
            os.environ["SPARK_SUBMIT_OPTS"] = PROCESS_JVM_OPTIONS
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """`../shared/data` beside the project; tests that need it skip when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def dedupe_main():
    """`main(argv, spark)` of jobs/dedupe.py."""
    return load_job("dedupe")


@pytest.fixture(scope="session")
def index_main():
    """`main(argv, spark)` of jobs/index.py."""
    return load_job("index")

