"""`store.write_segment` on real folders: the counts it returns are the rows it wrote.

Oracle: pyarrow's row counts of the segment's entries/ and keys/ files, read independently of
Spark (the counts are observed by the write's own tasks, `Observation`).
"""

from __future__ import annotations

import random

import pyarrow.dataset as ds
import pytest

from simhash_udf.core import bands
from simhash_udf.index.store import IndexStore, entry_schema, write_segment

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("rows", [0, 1, 300])
def test_write_segment_returns_the_entries_and_key_rows_it_wrote(spark, tmp_path, rows):
    rng = random.Random(rows)
    # Every fifth entry has no fingerprint (a too-short text): an entry, but no band keys.
    values = [(i, None if i % 5 == 4 else rng.getrandbits(63), f"run-{i % 3}") for i in range(rows)]
    entries = spark.createDataFrame(
        [(i, fp, None, None, None, run, "kept", i, fp, None, run, None) for i, fp, run in values],
        entry_schema("bigint"),
    )
    plan = bands.BandPlan(3, 6)
    store = IndexStore(spark, str(tmp_path / "index"))

    written, key_rows = write_segment(store, "segments/s1", entries, plan)

    on_disk = ds.dataset(tmp_path / "index" / "segments" / "s1" / "entries", format="parquet").count_rows()
    keys = ds.dataset(tmp_path / "index" / "segments" / "s1" / "keys", format="parquet",
                      partitioning="hive").count_rows()
    assert written == on_disk == rows
    assert key_rows == keys == sum(1 for _, fp, _ in values if fp is not None) * plan.n_tables


@pytest.mark.parametrize("change", ["renamed", "retyped", "missing"])
def test_entries_the_index_would_read_as_null_are_refused_before_anything_is_written(spark, tmp_path, change):
    """`IndexStore.read` reads segments with the declared schema, so an entries column written
    under another name or type would come back null on every later run: write_segment refuses
    such entries, and the segment folder is not created."""
    full = spark.createDataFrame([(1, 5, None, None, None, "r", "kept", 1, 5, None, "r", None)], entry_schema("bigint"))
    entries = {
        "renamed": full.withColumnRenamed("cluster_run_id", "cluster_run"),
        "retyped": full.withColumn("fingerprint", full["fingerprint"].cast("string")),
        "missing": full.drop("sketch"),
    }[change]
    store = IndexStore(spark, str(tmp_path / "index"))
    with pytest.raises(RuntimeError, match="is read as"):
        write_segment(store, "segments/s1", entries, bands.BandPlan(3, 6))
    assert not (tmp_path / "index" / "segments" / "s1").exists()
