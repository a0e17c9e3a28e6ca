"""Shared fixtures: one local Spark session for the whole test run, and the shared data."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"


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


def load_job(name: str):
    """`main(argv, spark)` of jobs/NAME.py, loaded from its file as spark-submit does."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"{name}_job", ROOT / "jobs" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main


@pytest.fixture(scope="session")
def dedupe_main():
    """`main(argv, spark)` of jobs/dedupe.py."""
    return load_job("dedupe")


@pytest.fixture(scope="session")
def index_main():
    """`main(argv, spark)` of jobs/index.py."""
    return load_job("index")


def popcount64(value: int) -> int:
    """Set bits of a 64-bit value given signed or unsigned (independent of the library)."""
    return bin(value & 0xFFFFFFFFFFFFFFFF).count("1")


def brute_force_pairs(id_fingerprints: list[tuple], k: int) -> set[tuple]:
    """Every (id_a, id_b, distance) with 1 <= distance <= k over distinct fingerprints, each
    fingerprint named by the smallest id carrying it, id_a < id_b: the contract of pairs/."""
    smallest: dict[int, object] = {}
    for doc_id, fp in id_fingerprints:
        if fp is not None and (fp not in smallest or doc_id < smallest[fp]):
            smallest[fp] = doc_id
    items = sorted(smallest.items())
    found = set()
    for i, (fa, ia) in enumerate(items):
        for fb, ib in items[i + 1 :]:
            d = popcount64(fa ^ fb)
            if 1 <= d <= k:
                found.add((min(ia, ib), max(ia, ib), d))
    return found
