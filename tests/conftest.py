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


def pytest_collection_modifyitems(config, items) -> None:
    """Mark every test under tests/system/ (a standalone cluster, Airflow, notebooks,
    spark-submit, the README's commands) `system`, so `-m "not system"` leaves them out."""
    for item in items:
        if SYSTEM_TESTS in Path(item.path).parents:
            item.add_marker(pytest.mark.system)


@pytest.fixture(scope="session")
def spark():
    """local[2] with few shuffle partitions and no UI: small frames run in seconds."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

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

