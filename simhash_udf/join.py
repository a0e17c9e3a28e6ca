"""Candidate pairs and their verification: the band-split self-join, in Spark SQL.

Input: distinct fingerprints. Output: every unordered pair of distinct fingerprints within
Hamming distance k, exactly once, found without comparing all pairs (see :mod:`bands`).
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from simhash_udf.bands import BandPlan, to_signed


def _mask(value: int) -> Column:
    return F.lit(to_signed(value)).cast("long")


def band_keys(fingerprints: DataFrame, plan: BandPlan) -> DataFrame:
    """One row per fingerprint and table: `table` (int), `key` (long), `fingerprint` (long).

    key is the fingerprint with every bit outside the table's blocks cleared, so two
    fingerprints share (table, key) exactly when they agree on all of the table's blocks.
    """
    fp = F.col("fingerprint")
    keys = F.array(
        *[
            F.struct(F.lit(t).alias("table"), (fp.bitwiseAND(_mask(plan.table_mask(t)))).alias("key"))
            for t in range(plan.n_tables)
        ]
    )
    return fingerprints.select(fp, F.explode(keys).alias("band")).select(
        F.col("band.table").alias("table"), F.col("band.key").alias("key"), fp
    )


def _is_canonical(table: Column, differing: Column, plan: BandPlan) -> Column:
    """True when `table` is the pair's canonical (first agreeing) table.

    The join already guarantees agreement on the table's own blocks; the pair belongs to an
    earlier table exactly when it also agrees on a block the table skips before its last one.
    """
    expr = None
    for t in range(plan.n_tables):
        disagrees_on_skipped = reduce(
            lambda acc, m: acc & (differing.bitwiseAND(_mask(m)) != 0),
            plan.skipped_block_masks(t),
            F.lit(True),
        )
        expr = (F.when if expr is None else expr.when)(table == t, disagrees_on_skipped)
    return expr.otherwise(F.lit(False))


def candidate_pairs(fingerprints: DataFrame, plan: BandPlan) -> DataFrame:
    """Pairs of fingerprints that share a table's key: `table`, `fp_a` < `fp_b` (longs).

    A pair appears once per table it shares a key in (the canonical-table filter is applied
    by `near_duplicate_pairs`).
    """
    keys = band_keys(fingerprints, plan)
    a, b = keys.alias("a"), keys.alias("b")
    joined = a.join(
        b,
        (F.col("a.table") == F.col("b.table"))
        & (F.col("a.key") == F.col("b.key"))
        & (F.col("a.fingerprint") < F.col("b.fingerprint")),
    )
    return joined.select(
        F.col("a.table").alias("table"),
        F.col("a.fingerprint").alias("fp_a"),
        F.col("b.fingerprint").alias("fp_b"),
    )


def near_duplicate_pairs(fingerprints: DataFrame, plan: BandPlan) -> DataFrame:
    """Every pair of distinct fingerprints within `plan.k` bits, once each.

    Input columns: `fingerprint` (long, distinct). Output columns: `fp_a` < `fp_b` (long),
    `distance` (int, 1..k). The Hamming check is `bit_count(a ^ b)` in Spark SQL.
    """
    if plan.k == 0:
        # Distinct fingerprints are never at distance 0: there is nothing to join.
        spark = fingerprints.sparkSession
        return spark.createDataFrame([], "fp_a long, fp_b long, distance int")
    pairs = candidate_pairs(fingerprints, plan)
    differing = F.col("fp_a").bitwiseXOR(F.col("fp_b"))
    distance = F.bit_count(differing).cast("int")
    return (
        pairs.where(distance <= plan.k)
        .where(_is_canonical(F.col("table"), differing, plan))
        .select("fp_a", "fp_b", distance.alias("distance"))
    )


def bucket_sizes(fingerprints: DataFrame, plan: BandPlan) -> DataFrame:
    """Band buckets with more than one member: `table` (int), `key` (long), `size` (long).

    The join produces sum(size * (size - 1) / 2) candidate rows over these buckets; the
    largest ones are the hot buckets the report lists.
    """
    return (
        band_keys(fingerprints, plan)
        .groupBy("table", "key")
        .agg(F.count(F.lit(1)).alias("size"))
        .where(F.col("size") > 1)
    )
