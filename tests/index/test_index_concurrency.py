"""Two runs on one index at once: the one that publishes second is refused with a clear
message and leaves nothing behind, or both succeed; no entry is ever silently lost."""

from __future__ import annotations

import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from generators import planted_rows, write_days
from helpers import entries_of, start_job

from simhash_udf.core.config import DedupeConfig, IndexOptions
from simhash_udf.index.finder import IndexFinder
from simhash_udf.index.session import IndexSession
from simhash_udf.index.store import IndexConflictError, IndexStore
from simhash_udf.run import pipeline

pytestmark = pytest.mark.spark

CONFIG = DedupeConfig(fingerprint_col="fp", k=3)


@pytest.mark.slow  # two whole runs on one index, like the kill tests
def test_the_second_publisher_is_refused_and_cleans_up(spark, two_days, tmp_path):
    """Both runs open the same version; the first publishes; the second's publish finds its
    version number taken: IndexConflictError, its segment removed, no output written."""
    index = tmp_path / "index"
    shutil.copytree(two_days["template"], index)
    other = tmp_path / "other.parquet"
    pq.write_table(
        pa.table({"id": pa.array([900_001, 900_002], pa.int64()), "fp": pa.array([12345, 12344], pa.int64())}),
        other,
    )
    first = IndexSession.open(spark, IndexOptions(str(index), "first"), CONFIG, str(two_days["day2"]))
    second = IndexSession.open(spark, IndexOptions(str(index), "second"), CONFIG, str(other))
    pipeline.run(spark, CONFIG, str(two_days["day2"]), str(tmp_path / "out1"), finder=IndexFinder(first))
    with pytest.raises(IndexConflictError, match="another run published version 2"):
        pipeline.run(spark, CONFIG, str(other), str(tmp_path / "out2"), finder=IndexFinder(second))
    assert not (tmp_path / "out2").exists()
    store = IndexStore(spark, str(index))
    latest = store.latest()
    assert [r.run_id for r in latest.runs] == ["d1", "first"]
    assert store.unreferenced(latest) == [], "the refused run removed its segment"
    # Rerun after the refusal: it builds on version 2 and loses nothing.
    third = IndexSession.open(spark, IndexOptions(str(index), "second"), CONFIG, str(other))
    pipeline.run(spark, CONFIG, str(other), str(tmp_path / "out2"), finder=IndexFinder(third))
    fps = {e["fingerprint"] for e in entries_of(spark, index)}
    assert {12345, 12344} <= fps
    assert [r.run_id for r in store.latest().runs] == ["d1", "first", "second"]


@pytest.mark.slow
def test_two_job_processes_at_once(spark, two_days, tmp_path):
    """Two real job processes started together on one index: each either succeeds or is
    refused with the conflict message; every fingerprint of each successful run is indexed."""
    index = tmp_path / "index"
    shutil.copytree(two_days["template"], index)
    rows = planted_rows(seed=21, groups=20, singletons=80)
    other_day = write_days(tmp_path, [(i, fp) for i, fp in rows], days=1, seed=1)[0]
    renamed = tmp_path / "other.parquet"
    table = pq.read_table(other_day)
    pq.write_table(table.set_column(0, "id", pa.array([i + 5_000_000 for i in table["id"].to_pylist()], pa.int64())), renamed)
    jobs = {
        "a": start_job(two_days["day2"], tmp_path / "out-a", index, "a"),
        "b": start_job(renamed, tmp_path / "out-b", index, "b"),
    }
    logs = {name: job.communicate(timeout=900)[0] for name, job in jobs.items()}
    codes = {name: job.returncode for name, job in jobs.items()}
    assert set(codes.values()) <= {0, 2}, logs
    assert 0 in codes.values(), logs
    store = IndexStore(spark, str(index))
    latest = store.latest()
    published = {r.run_id for r in latest.runs}
    indexed = {e["fingerprint"] for e in entries_of(spark, index)}
    for name, source in (("a", two_days["day2"]), ("b", renamed)):
        if codes[name] == 0:
            assert name in published
            assert {fp for fp in pq.read_table(source)["fp"].to_pylist()} <= indexed
            assert (tmp_path / f"out-{name}").exists()
        else:
            assert "another run published version" in logs[name]
            assert name not in published
            assert not (tmp_path / f"out-{name}").exists()
    assert len(indexed) == len(entries_of(spark, index)), "each fingerprint once"
