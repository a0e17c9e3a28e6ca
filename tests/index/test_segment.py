"""`store.write_segment` on real folders: the counts it returns are the rows it wrote.

Oracle: pyarrow's row counts of the segment's entries/ and keys/ files, read independently of
Spark (the counts are observed by the write's own tasks, `Observation`).
"""

from __future__ import annotations

import random

import pyarrow.dataset as ds
import pytest

from simhash_udf.core import bands
from simhash_udf.index.store import IndexStore, write_segment

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("rows", [0, 1, 300])
def test_write_segment_returns_the_entries_and_key_rows_it_wrote(spark, tmp_path, rows):
    rng = random.Random(rows)
    # Every fifth entry has no fingerprint (a too-short text): an entry, but no band keys.
    values = [(i, None if i % 5 == 4 else rng.getrandbits(63), f"run-{i % 3}") for i in range(rows)]
    entries = spark.createDataFrame(values, "id long, fingerprint long, run_id string")
    plan = bands.BandPlan(3, 6)
    store = IndexStore(spark, str(tmp_path / "index"))

    written, key_rows = write_segment(store, "segments/s1", entries, plan)

    on_disk = ds.dataset(tmp_path / "index" / "segments" / "s1" / "entries", format="parquet").count_rows()
    keys = ds.dataset(tmp_path / "index" / "segments" / "s1" / "keys", format="parquet",
                      partitioning="hive").count_rows()
    assert written == on_disk == rows
    assert key_rows == keys == sum(1 for _, fp, _ in values if fp is not None) * plan.n_tables
