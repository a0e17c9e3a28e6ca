"""Candidate pairs and their verification: the band-split self-join.

Input: distinct fingerprints. Output: every unordered pair of distinct fingerprints within
Hamming distance k, exactly once, found without comparing all pairs (see :mod:`simhash_udf.core.bands`).

`band_join` is the job's join, in two levels. Level 1 in Spark: each fingerprint is sent once
per table of the plan to the partition of its (table, key); only (table, fingerprint) is
shuffled, the key is recomputed where needed. Level 2 in numpy (`pair_kernel.join_partition`,
with `mapInArrow` over each whole partition): inside a bucket, sub-blocks of the remaining
bits narrow the candidates further, pairs are verified by popcount and emitted once by their
canonical table and sub-block, and hot runs are summarised. `near_duplicate_pairs` is the same
join with every pair listed (no summaries); `band_keys`, `candidate_pairs` and `_is_canonical`
are the parts of the earlier pure Spark SQL join (bench/sql_join.py, the benchmarks'
reference), which the index and explore.py use.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from functools import reduce
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from simhash_udf.core import hot_runs, pair_kernel
from simhash_udf.core.bands import ROWS_PER_PARTITION, BandPlan, to_signed


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


# Kinds of the rows `band_join` returns.
PAIR, SUMMARY_EDGE, PARTITION_STATS, HOT_RUN = 0, 1, 2, 3

BAND_JOIN_SCHEMA = (
    "kind byte, fp_a long, fp_b long, distance int, "
    "table int, key long, sub_block int, size long, edges long, comparisons long, "
    "listed long, hot_run_size long"
)


# Up to this many band rows (distinct fingerprints x tables) the join runs on the driver: one
# collect of the fingerprints and the kernel over them in numpy (~40 bytes a row, 8 MB at the
# limit), its rows handed to Spark as a local frame, where Spark's shuffle of the band rows and
# a Python task over each partition cost two Spark jobs and a second or so at any size.
DRIVER_BAND_ROWS = 200_000


def _partitions(spark: Any, rows: int) -> int:
    """Shuffle partitions of the band rows: ROWS_PER_PARTITION rows each (a Python worker
    holds one partition in numpy, ~40 bytes a row while it works), and at least the
    session's parallelism so every core has a partition."""
    return max(spark.sparkContext.defaultParallelism, math.ceil(rows / ROWS_PER_PARTITION))


def _kernel_batches(
    batches: Iterator[pa.RecordBatch], kernel_plan: pair_kernel.KernelPlan, hot_run_size: int | None
) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: a whole partition's (table, fingerprint[, checked]) rows in, its
    pairs and counts out (`BAND_JOIN_SCHEMA`)."""
    # A bucket's rows may be spread over several Arrow batches: gather the partition first.
    collected = list(batches)
    checked = None
    if collected:
        table = pa.Table.from_batches(collected)
        tables = table.column("table").to_numpy()
        fps = table.column("fingerprint").to_numpy()
        if "checked" in table.column_names:
            checked = table.column("checked").fill_null(True).to_numpy(zero_copy_only=False)
    else:
        tables, fps = np.empty(0, np.int32), np.empty(0, np.int64)
    del collected
    out = pair_kernel.join_partition(tables, fps, kernel_plan, hot_run_size, checked)
    n_pairs = len(out.fp_a)
    kinds = np.where(out.summarised, SUMMARY_EDGE, PAIR).astype(np.int8)
    empty_long = pa.nulls(n_pairs, pa.int64())
    step = 1 << 20
    for start in range(0, n_pairs, step):
        stop = min(start + step, n_pairs)
        yield pa.RecordBatch.from_arrays(
            [
                pa.array(kinds[start:stop]),
                pa.array(out.fp_a[start:stop]),
                pa.array(out.fp_b[start:stop]),
                pa.array(out.distance[start:stop]),
                pa.nulls(stop - start, pa.int32()),
                empty_long.slice(start, stop - start),
                pa.nulls(stop - start, pa.int32()),
                empty_long.slice(start, stop - start),
                empty_long.slice(start, stop - start),
                empty_long.slice(start, stop - start),
                empty_long.slice(start, stop - start),
                empty_long.slice(start, stop - start),
            ],
            names=BAND_JOIN_SCHEMA_NAMES,
        )
    # One row of counts per partition (size: its band rows, edges: its pairs, hot_run_size:
    # the threshold this kernel used), and one per hot run, so the counts come from the join
    # itself rather than a second pass over the keys.
    stats = [(PARTITION_STATS, None, out.largest_bucket, None, len(fps), n_pairs, out.candidates, None, hot_run_size)]
    stats += [
        (HOT_RUN, h.table, to_signed(h.key), h.sub_block, h.size, h.edges, h.comparisons, h.listed, None)
        for h in out.hot
    ]
    yield pa.RecordBatch.from_arrays(
        [
            pa.array([r[0] for r in stats], pa.int8()),
            pa.nulls(len(stats), pa.int64()),
            pa.nulls(len(stats), pa.int64()),
            pa.nulls(len(stats), pa.int32()),
            pa.array([r[1] for r in stats], pa.int32()),
            pa.array([r[2] for r in stats], pa.int64()),
            pa.array([r[3] for r in stats], pa.int32()),
            pa.array([r[4] for r in stats], pa.int64()),
            pa.array([r[5] for r in stats], pa.int64()),
            pa.array([r[6] for r in stats], pa.int64()),
            pa.array([r[7] for r in stats], pa.int64()),
            pa.array([r[8] for r in stats], pa.int64()),
        ],
        names=BAND_JOIN_SCHEMA_NAMES,
    )


BAND_JOIN_SCHEMA_NAMES = [part.split()[0] for part in BAND_JOIN_SCHEMA.split(", ")]


def band_join(
    fingerprints: DataFrame,
    plan: BandPlan,
    n: int | None = None,
    hot_run_size: int | None = hot_runs.HOT_RUN_SIZE,
) -> DataFrame:
    """The two-level band join: pairs, summary edges of hot runs and the join's counts.

    fingerprints: `fingerprint` (long, distinct) and optionally `checked` (bool: the
    short-text check looks at the fingerprint's pairs, `short_text_check.checked_fingerprints`; a hot
    run lists every pair of such members instead of summarising it). n: their number when
    known (it sets the partitions). hot_run_size: see `pair_kernel.join_partition` (None:
    list every pair).
    Up to DRIVER_BAND_ROWS band rows, the kernel runs on the driver and the frame returned is
    local (the same rows; its counts are of one partition).
    Returns `BAND_JOIN_SCHEMA` rows of four kinds (`kind`):
    PAIR: `fp_a` < `fp_b`, `distance` (1..k): a pair within k, from its canonical table and
        sub-block, once in the whole output.
    SUMMARY_EDGE: the same columns: a pair within k written for a hot run's summary (the
        same edge may come from several hot runs, and a PAIR row may repeat it).
    PARTITION_STATS: per partition, `size` (band rows), `edges` (pair and edge rows),
        `comparisons` (candidate pairs compared), `key` (its largest bucket's size),
        `hot_run_size` (the hot threshold used; null: none).
    HOT_RUN: per hot run, `table`, `key` (the table's key, signed), `sub_block`, `size`
        (members), `edges` (summary edges written), `comparisons`, `listed` (pairs with a
        checked member, listed as PAIR rows).
    `join_pairs` and `join_stats` read them; materialise the frame once before both.
    """
    spark = fingerprints.sparkSession
    if n is None:
        n = fingerprints.count()
    if plan.k == 0:
        # Distinct fingerprints are never at distance 0: nothing to join, and no counts.
        return spark.createDataFrame([], BAND_JOIN_SCHEMA)
    if joins_on_driver(n, plan):
        return local_band_join(fingerprints, plan, hot_run_size)[0]
    rows = _band_rows(fingerprints, plan)
    kernel_plan = pair_kernel.KernelPlan.of(plan)
    # Partition by (table, key) without shuffling the key: two rows of one bucket meet.
    masks = F.array(*[_mask(plan.table_mask(t)) for t in range(plan.n_tables)])
    key = F.col("fingerprint").bitwiseAND(F.element_at(masks, F.col("table") + 1))
    shuffled = rows.repartition(_partitions(spark, n * plan.n_tables), F.col("table"), key)
    return shuffled.mapInArrow(
        lambda batches: _kernel_batches(batches, kernel_plan, hot_run_size), BAND_JOIN_SCHEMA
    )


def _band_rows(fingerprints: DataFrame, plan: BandPlan) -> DataFrame:
    """Each fingerprint once per table of `plan`: `table` (int), `fingerprint`[, `checked`]."""
    carried = [F.col("fingerprint")] + ([F.col("checked")] if "checked" in fingerprints.columns else [])
    return fingerprints.select(F.explode(F.sequence(F.lit(0), F.lit(plan.n_tables - 1))).alias("table"), *carried)


def joins_on_driver(n: int, plan: BandPlan) -> bool:
    """Whether `band_join` of `n` distinct fingerprints runs its kernel on the driver (up to
    DRIVER_BAND_ROWS band rows; at k = 0 there is nothing to join)."""
    return plan.k > 0 and n * plan.n_tables <= DRIVER_BAND_ROWS


def _joined_on_driver(band_rows: DataFrame, kernel_plan: pair_kernel.KernelPlan, hot_run_size: int | None) -> pa.Table:
    """The kernel over all the band rows (`table`, `fingerprint`[, `checked`]) collected to
    the driver, as one partition (a partition holds whole buckets): `BAND_JOIN_SCHEMA` rows."""
    collected = band_rows.toArrow()
    return pa.Table.from_batches(list(_kernel_batches(iter(collected.to_batches()), kernel_plan, hot_run_size)))


def local_band_join(
    fingerprints: DataFrame, plan: BandPlan, hot_run_size: int | None = hot_runs.HOT_RUN_SIZE
) -> tuple[DataFrame, int, dict[str, Any]]:
    """`band_join` on the driver (only where `joins_on_driver`), with what storing its frame
    would tell: (the frame, local: a collect of it runs no Spark job; its rows; the totals of
    `stats_aggregates`, computed here by `stats_totals`). Nothing is written: the rows are in
    hand, and a stored copy would cost a Spark job to write and one to read back."""
    joined = _joined_on_driver(_band_rows(fingerprints, plan), pair_kernel.KernelPlan.of(plan), hot_run_size)
    return fingerprints.sparkSession.createDataFrame(joined), joined.num_rows, stats_totals(joined)


def stats_totals(joined: pa.Table) -> dict[str, Any]:
    """`stats_aggregates` of a band join's rows in Arrow: the same totals, with Spark's
    aggregates' nulls (a sum or max over no row is null, a count 0)."""
    kind = joined.column("kind")
    partition = joined.filter(pc.equal(kind, PARTITION_STATS))
    hot = joined.filter(pc.equal(kind, HOT_RUN))

    # Arrow's sum and max are null over no values, as Spark's are.
    return {
        "partitions": partition.num_rows,
        "band_rows": pc.sum(partition.column("size")).as_py(),
        "largest_bucket": pc.max(partition.column("key")).as_py(),
        "comparisons": pc.sum(partition.column("comparisons")).as_py(),
        "hot_run_size": pc.max(partition.column("hot_run_size")).as_py(),
        "hot_runs": hot.num_rows,
        "hot_edges": pc.sum(hot.column("edges")).as_py(),
        "hot_listed": pc.sum(hot.column("listed")).as_py(),
    }


def join_pairs(joined: DataFrame, summarised: bool = True) -> DataFrame:
    """The pairs of a `band_join`: `fp_a` < `fp_b`, `distance`, each pair once.

    summarised: whether any hot run was summarised (`join_stats(...)["summarised_runs"] > 0`);
    if so, summary edges are made distinct and those a PAIR row already has are dropped from
    the PAIR side. Summary edges are fewer than the hot runs' members, but those can be a
    large share of a crawl: the join is left to Spark's adaptive execution, which broadcasts
    them only when they are under its size threshold (a forced broadcast would put all of
    them on the driver and on every executor).
    """
    columns = ["fp_a", "fp_b", "distance"]
    pairs = joined.where(F.col("kind") == PAIR).select(*columns)
    if not summarised:
        return pairs
    edges = joined.where(F.col("kind") == SUMMARY_EDGE).select(*columns).distinct()
    return pairs.join(edges.select("fp_a", "fp_b"), ["fp_a", "fp_b"], "left_anti").unionByName(edges)


def stats_aggregates() -> dict[str, Column]:
    """The totals `join_stats` reads of a `band_join`'s stats rows, as named aggregates over
    all its rows: for `Stages.materialise(..., observe=...)`, which computes them while the
    join's output is stored, so that reading them costs no Spark job."""
    partition, hot = F.col("kind") == PARTITION_STATS, F.col("kind") == HOT_RUN
    return {
        "partitions": F.count(F.when(partition, 1)),
        "band_rows": F.sum(F.when(partition, F.col("size"))),
        "largest_bucket": F.max(F.when(partition, F.col("key"))),
        "comparisons": F.sum(F.when(partition, F.col("comparisons"))),
        "hot_run_size": F.max(F.when(partition, F.col("hot_run_size"))),
        "hot_runs": F.count(F.when(hot, 1)),
        "hot_edges": F.sum(F.when(hot, F.col("edges"))),
        "hot_listed": F.sum(F.when(hot, F.col("listed"))),
    }


def join_stats(
    joined: DataFrame,
    plan: BandPlan,
    n: int,
    hot_listed: int = 10,
    hot_run_size: int | None = hot_runs.HOT_RUN_SIZE,
    totals: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The counts of a `band_join`: `stats_aggregates` of its rows, given as `totals` (observed
    while it was stored) or computed here (one small aggregation); the hot runs' rows are read
    only when there are some.

    Returns candidate_pairs (pairs compared by popcount), band_rows (rows shuffled),
    largest_bucket (the largest (table, key) bucket), hot_run_size (the threshold the
    join's kernels used, as their stats rows say; `hot_run_size` only when the join ran no
    kernel, at k = 0; None: nothing was summarised), summarised_runs and summary_edges (hot
    runs and the edges written for them, before their distinct), listed_pairs (pairs of hot
    runs listed for the short-text check), hot_buckets (the `hot_listed` largest hot runs:
    table, blocks, key, sub_block, size, edges, listed, comparisons, and
    candidate_pairs_avoided = size (size - 1) / 2).
    """
    if plan.k == 0:
        return {
            "candidate_pairs": 0, "band_rows": 0, "largest_bucket": 1 if n else 0,
            "hot_run_size": hot_run_size, "summarised_runs": 0, "summary_edges": 0,
            "listed_pairs": 0, "hot_buckets": [],
        }
    if totals is None:
        aggregates = [column.alias(name) for name, column in stats_aggregates().items()]
        totals = joined.agg(*aggregates).first().asDict()
    part, hot = totals["partitions"] > 0, totals["hot_runs"] > 0
    listed = (
        joined.where(F.col("kind") == HOT_RUN)
        .orderBy(F.col("size").desc(), "table", "key", "sub_block")
        .limit(hot_listed)
        .collect()
        if hot
        else []
    )
    return {
        "candidate_pairs": int(totals["comparisons"] or 0) if part else 0,
        "band_rows": int(totals["band_rows"] or 0) if part else 0,
        "largest_bucket": int(totals["largest_bucket"] or 0) if part else (1 if n else 0),
        # What the kernels were given (every partition gets the same), not the default.
        "hot_run_size": _int_or_none(totals["hot_run_size"]) if part else hot_run_size,
        "summarised_runs": int(totals["hot_runs"]) if hot else 0,
        "summary_edges": int(totals["hot_edges"] or 0) if hot else 0,
        "listed_pairs": int(totals["hot_listed"] or 0) if hot else 0,
        "hot_buckets": [
            {
                "table": r["table"],
                "blocks": list(plan.tables[r["table"]]),
                "key": r["key"],
                "sub_block": r["sub_block"],
                "size": r["size"],
                "edges": r["edges"],
                "listed": r["listed"],
                "comparisons": r["comparisons"],
                "candidate_pairs_avoided": r["size"] * (r["size"] - 1) // 2,
            }
            for r in listed
        ],
    }


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def near_duplicate_pairs(fingerprints: DataFrame, plan: BandPlan, n: int | None = None) -> DataFrame:
    """Every pair of distinct fingerprints within `plan.k` bits, once each (`band_join` with
    no summaries: hot runs are expanded, so the pairs are complete even under skew).

    Input columns: `fingerprint` (long, distinct). Output columns: `fp_a` < `fp_b` (long),
    `distance` (int, 1..k).
    """
    joined = band_join(fingerprints, plan, n, hot_run_size=None)
    return join_pairs(joined, summarised=False)
