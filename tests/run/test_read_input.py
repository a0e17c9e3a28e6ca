"""`read_input` on input read in place (Parquet): its rows counted and its ids checked in
one aggregation by id.

Oracles: the Spark jobs of the reads it cannot avoid (the Parquet schema, one aggregation by
id), counted in a job group; rows built by hand whose repeated ids are known.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import jobs_in_group
from pyspark.sql import functions as F

from simhash_udf.core.config import DedupeConfig
from simhash_udf.run.pipeline import read_input
from simhash_udf.stages.scratch import Stages

pytestmark = pytest.mark.spark


def test_a_parquet_input_is_counted_by_the_aggregation_that_checks_its_ids(spark, tmp_path):
    """Counting the rows of an input read in place is no pass of its own: reading and checking
    a Parquet input runs the jobs of learning its schema and of one aggregation by id, no more
    (a separate count of its rows was a pass over the input before the ids' check)."""
    path = tmp_path / "in.parquet"
    ids = list(range(3_000))
    pq.write_table(pa.table({"id": ids, "text": [f"text {i}" for i in ids]}), path, row_group_size=500)

    def one_aggregation_by_id():
        frame = spark.read.parquet(str(path))
        frame.groupBy("id").count().agg(F.count(F.lit(1))).first()

    expected = jobs_in_group(spark, "test-read-input-oracle", one_aggregation_by_id)
    read = {}
    ran = jobs_in_group(spark, "test-read-input-job", lambda: read.setdefault("input", read_input(
        spark, DedupeConfig(), str(path), "parquet", Stages(work=str(tmp_path / "work")))))
    assert read["input"].rows == 3_000 and read["input"].rejected_counts == {}
    assert ran == expected


def test_ids_that_differ_only_in_invalid_bytes_are_one_id_once_repaired(spark, tmp_path):
    """Ids are compared as the documents carry them, repaired: "a\\xff" and "a\\xfe" are both
    "a\\ufffd", so one of the two rows is a duplicate_id; a null id is counted as such."""
    raw_ids = [b"a\xff", b"a\xfe", b"b", b"c", None]
    table = pa.table({
        "id": pa.array(raw_ids, type=pa.binary()).view(pa.string()),
        "text": [f"text {i}" for i in range(len(raw_ids))],
    })
    path = tmp_path / "in.parquet"
    pq.write_table(table, path)
    source = read_input(spark, DedupeConfig(), str(path), "parquet", Stages(work=str(tmp_path / "work")))
    assert source.rows == 5
    assert source.rejected_counts == {"null_id": 1, "duplicate_id": 1}
    assert sorted(r["id"] for r in source.documents.collect()) == ["a\ufffd", "b", "c"]
