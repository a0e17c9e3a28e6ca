"""`Stages.materialise(..., observe=...)`: aggregates over a stage result as it is stored.

Oracles: the counts taken in Python from the stored rows themselves; the Spark jobs a
materialise runs with and without observed aggregates (counted in a job group): one, the write.
"""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from simhash_udf.stages.scratch import Stages

pytestmark = pytest.mark.spark


def _numbers(spark):
    """0..1999 over 4 partitions without the multiples of 7: `id`, `odd`."""
    frame = spark.range(0, 2000, numPartitions=4).withColumn("odd", F.col("id") % 2 == 1)
    return frame.where(F.col("id") % 7 != 0)


def _observe() -> dict:
    """Three counts of `_numbers` rows (columns need a running session: built per test)."""
    return {
        "odd": F.count(F.when(F.col("odd"), 1)),
        "big": F.count(F.when(F.col("id") >= 1900, 1)),
        "none": F.count(F.when(F.col("id") < 0, 1)),
    }


@pytest.mark.parametrize("in_a_job", [True, False], ids=["scratch_parquet", "local_checkpoint"])
def test_observed_aggregates_equal_counts_of_the_stored_rows(spark, tmp_path, in_a_job):
    stages = Stages(work=str(tmp_path / "work") if in_a_job else None, spark=spark)
    stored = stages.materialise("numbers", _numbers(spark), observe=_observe())
    ids = [row["id"] for row in stored.collect()]
    assert stages.rows["numbers"] == len(ids) == 2000 - len(range(0, 2000, 7))
    assert stages.observed["numbers"] == {
        "odd": sum(1 for i in ids if i % 2 == 1),
        "big": sum(1 for i in ids if i >= 1900),
        "none": 0,
    }


def test_a_stage_stored_again_under_its_name_keeps_the_newest_aggregates(spark, tmp_path):
    stages = Stages(work=str(tmp_path / "work"), spark=spark)
    stages.materialise("numbers", _numbers(spark), observe=_observe())
    stages.materialise("numbers", _numbers(spark).where(F.col("id") < 100), observe=_observe())
    assert stages.observed["numbers"]["odd"] == sum(1 for i in range(100) if i % 7 and i % 2 == 1)
    assert stages.observed["numbers"]["big"] == 0


def test_observing_runs_no_spark_job_of_its_own(spark, tmp_path):
    jobs = {}
    try:
        for observe in (None, _observe()):
            name = "observed" if observe else "plain"
            stages = Stages(work=str(tmp_path / name), spark=spark)
            stages.count_jobs(spark, f"test-observed-counts-{name}")
            stages.materialise("numbers", _numbers(spark), observe=observe)
            jobs[name] = stages.jobs["numbers"]
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    # One job, the write: the stored copy is read back with the frame's schema, not with a
    # Spark job that reads a footer to learn it (`outputs.read_back`).
    assert jobs["plain"] == 1 and jobs["observed"] == jobs["plain"]
