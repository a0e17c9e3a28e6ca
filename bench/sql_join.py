"""The earlier pure Spark SQL band join, kept as the benchmarks' reference.

`sql_near_duplicate_pairs` is the one-level join the job ran before `join.band_join`: a
self-join per table of the plan on the table's key (`join.candidate_pairs`), every bucket
expanded into all its pairs, each verified by `bit_count(a ^ b)` in Spark SQL and kept once
by its canonical table. bench/skew.py and bench/scale_sections.py measure the job's join
against it; the job never calls it.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from simhash_udf.core.bands import BandPlan
from simhash_udf.stages import join


def sql_near_duplicate_pairs(fingerprints: DataFrame, plan: BandPlan) -> DataFrame:
    """Every pair of distinct fingerprints within `plan.k` bits, once each, by the SQL join.

    Input columns: `fingerprint` (long, distinct). Output columns: `fp_a` < `fp_b` (long),
    `distance` (int, 1..k). Its candidates are all pairs sharing a table's key,
    C(n, 2) / 2^key bits per table.
    """
    if plan.k == 0:
        # Distinct fingerprints are never at distance 0: there is nothing to join.
        spark = fingerprints.sparkSession
        return spark.createDataFrame([], "fp_a long, fp_b long, distance int")
    pairs = join.candidate_pairs(fingerprints, plan)
    differing = F.col("fp_a").bitwiseXOR(F.col("fp_b"))
    distance = F.bit_count(differing).cast("int")
    return (
        pairs.where(distance <= plan.k)
        .where(join._is_canonical(F.col("table"), differing, plan))
        .select("fp_a", "fp_b", distance.alias("distance"))
    )
