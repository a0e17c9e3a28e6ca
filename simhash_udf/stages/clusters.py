"""From components to documents: which document each cluster keeps, and every status.

A cluster is a connected component of the near-duplicate graph of fingerprints, fanned out to
the documents carrying them; a document too short for a fingerprint forms a cluster only with
its exact copies. Clusters are transitive: a chain of near duplicates can put two documents
more than k bits apart in one cluster (`distance` to the kept document shows it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from simhash_udf.core import cluster_rules

# Frames of at most this many rows (the pairs named by id, the dropped ids deduped/ leaves out)
# are broadcast to the join that looks them up, and the other side (every distinct fingerprint,
# every document) is streamed past them. Adaptive execution broadcasts them too, but only once
# it has shuffled both sides to learn their sizes: at 4M documents ~1 s a join, for a shuffle
# of the documents it then does not use. A broadcast hash table of long keys costs ~100 bytes
# a row (AQE's own statistics: 6 MiB for 66,700 pairs), so ~50 MB at the limit. Up to as many
# distinct fingerprints, the clusters' aggregate is also stored whole (`cluster_assignment`).
BROADCAST_ROWS = 500_000

# Up to this many documents the clusters are assigned on the driver (`core.cluster_rules`): one
# collect of the documents' small columns (id, exact key, fingerprint, reason: ~100 bytes a
# row, ~20 MB at the limit) and one of the components, where Spark's aggregates and joins
# cost about ten Spark jobs, 1.5-2.5 s even for one document. The result is a local frame of
# as many rows, which Spark writes at ~0.2 M rows/s.
DRIVER_MAX_DOCUMENTS = 200_000

KEPT = cluster_rules.KEPT
EXACT_DUPLICATE = cluster_rules.EXACT_DUPLICATE
NEAR_DUPLICATE = cluster_rules.NEAR_DUPLICATE
SKIPPED = cluster_rules.SKIPPED


@dataclass(frozen=True)
class ClusterAssignment:
    """documents: every document's cluster and status (see `cluster_assignment`). sizes: `cluster_id`, `members` (long), one row per
    cluster: the aggregate the kept documents were chosen by, so the report's histogram of
    cluster sizes is a pass over it rather than a shuffle of every document by cluster."""

    documents: DataFrame
    sizes: DataFrame


def cluster_assignment(
    documents: DataFrame,
    components: DataFrame,
    keep_order: str = "asc",
    materialise: Callable[[DataFrame], DataFrame] = lambda frame: frame,
    fingerprints: DataFrame | None = None,
    fingerprint_rows: int | None = None,
) -> ClusterAssignment:
    """Cluster and status of every document, and the size of every cluster.

    documents: `id`, [`keep_by`], `exact_key` (binary, null when there is no text),
        `fingerprint` (long, null when there is none), `reason` (a skip reason, `too_short`,
        or null).
    components: `node`, `component` (long): the component of each fingerprint with at least
        one near duplicate (others are their own component).
    keep_order: `asc` or `desc`, the order of `keep_by` in which the kept document is chosen;
        a null `keep_by` comes after every value in either order; ties, and frames without
        `keep_by`, fall back to the smallest id.
    materialise: stores a frame and returns the stored copy (a job's `Stages.materialise`):
        the clusters' aggregate is read twice (with more than BROADCAST_ROWS `fingerprints`,
        only its aggregated part is stored), and the clusters of more than one document are
        joined to the documents, which Spark broadcasts when it knows they are few.
    fingerprints: `fingerprint`, `id` (the smallest id carrying it), `members` (long: the
        documents carrying it), one row per distinct fingerprint of `documents`
        (`documents.distinct_fingerprints`, already stored by the run), or None. Without
        `keep_by` the clusters are then chosen from it: a fingerprint that is in no component
        is a cluster by itself, whose kept document and size are on its row, so only the
        fingerprints of components and the too-short texts are aggregated, not every document
        (a shuffle of the crawl, where most documents have no near duplicate). With `keep_by`
        the documents are aggregated as without it: a fingerprint's row does not say which
        of its documents comes first by `keep_by`.
    fingerprint_rows: `fingerprints`' rows, when known. Up to BROADCAST_ROWS the clusters'
        aggregate is stored whole (a small copy, read back faster than it is computed again:
        the sample's report 0.4 s faster); more, or not known, only its aggregated part.
    A small run's clusters are assigned on the driver instead (`assigned_on_driver_when`).
    Returns documents: `id`, `cluster_id` (the kept document's id; null when skipped),
    `fingerprint`, `status` (kept, exact_duplicate, near_duplicate, skipped), `reason`,
    `distance` (Hamming distance to the kept document's fingerprint, when both have one); and
    sizes (see `ClusterAssignment`).
    """
    skipped_reason = F.col("reason").isNotNull() & (F.col("reason") != F.lit("too_short"))
    active = documents.where(~skipped_reason)
    grouped = active.join(
        components.withColumnRenamed("node", "fingerprint"), "fingerprint", "left"
    ).select(
        "*",
        F.coalesce("component", "fingerprint").alias("group_fp"),
        # Only documents without a fingerprint are grouped by their exact text.
        F.when(F.col("fingerprint").isNull(), F.col("exact_key")).alias("group_exact"),
    )
    if fingerprints is not None and "keep_by" not in documents.columns:
        whole, aggregated = _kept_per_fingerprint_cluster(fingerprints, components, active)
        if few_enough_to_broadcast(fingerprint_rows):
            kept = materialise(whole.unionByName(aggregated))
        else:
            # The fingerprints in no component (most of a crawl) stay a view of `fingerprints`,
            # read again by each use (a scan and a join with the broadcast components): less
            # than storing a row per distinct fingerprint once more (4M: ~1 s less).
            kept = whole.unionByName(materialise(aggregated))
    else:
        kept = materialise(_kept_per_cluster(grouped, "keep_by" in documents.columns, keep_order))
    # A cluster of one document (most of a crawl) is whole in its aggregate row: it is kept,
    # and its row comes from there (an active document's reason is null or too_short).
    alone = kept.where(F.col("members") == 1).select(
        F.col("cluster_id").alias("id"),
        "cluster_id",
        "fingerprint",
        F.lit(KEPT).alias("status"),
        F.when(F.col("too_short"), F.lit("too_short")).alias("reason"),
        F.when(F.col("fingerprint").isNotNull(), F.lit(0)).alias("distance"),
    )
    # Only the documents of larger clusters meet their kept document: its row first (the
    # clusters joined to their kept id), then every member joined to that, so the joins
    # move the duplicates, not the crawl.
    shared = materialise(kept.where(F.col("members") > 1).select("group_fp", "group_exact", "cluster_id"))
    kept_rows = materialise(shared.join(active.select(
        F.col("id").alias("cluster_id"),
        F.col("exact_key").alias("kept_exact_key"),
        F.col("fingerprint").alias("kept_fingerprint"),
    ), "cluster_id"))
    with_kept = grouped.join(
        kept_rows.withColumnsRenamed({"group_fp": "kept_group_fp", "group_exact": "kept_group_exact"}),
        (grouped["group_fp"].eqNullSafe(F.col("kept_group_fp")))
        & (grouped["group_exact"].eqNullSafe(F.col("kept_group_exact"))),
    ).select("id", "fingerprint", "exact_key", "reason", "cluster_id", "kept_exact_key", "kept_fingerprint")
    status = (
        F.when(F.col("id") == F.col("cluster_id"), F.lit(KEPT))
        .when(F.col("exact_key") == F.col("kept_exact_key"), F.lit(EXACT_DUPLICATE))
        .otherwise(F.lit(NEAR_DUPLICATE))
    )
    clustered = with_kept.select(
        "id",
        "cluster_id",
        "fingerprint",
        status.alias("status"),
        "reason",
        F.bit_count(F.col("fingerprint").bitwiseXOR(F.col("kept_fingerprint"))).cast("int").alias("distance"),
    )
    skipped = documents.where(skipped_reason).select(
        "id",
        F.lit(None).cast(documents.schema["id"].dataType).alias("cluster_id"),
        "fingerprint",
        F.lit(SKIPPED).alias("status"),
        "reason",
        F.lit(None).cast("int").alias("distance"),
    )
    return ClusterAssignment(
        documents=alone.unionByName(clustered).unionByName(skipped),
        sizes=kept.select("cluster_id", "members"),
    )


# keep_by types whose Python values order as Spark orders them (`core.cluster_rules`); a run
# with another (an array, a struct) is clustered by Spark at any size.
_DRIVER_KEEP_BY_TYPES = (
    T.NumericType, T.StringType, T.BinaryType, T.BooleanType, T.DateType, T.TimestampType, T.TimestampNTZType,
)


def assigned_on_driver_when(documents: DataFrame, document_rows: int | None) -> bool:
    """Whether a run assigns the clusters of `documents` (`cluster_assignment`'s) on the driver
    (`assigned_on_driver`): they are at most DRIVER_MAX_DOCUMENTS (`document_rows`; None: not
    known), and their keep_by, if any, orders the same in Python as in Spark."""
    if document_rows is None or document_rows > DRIVER_MAX_DOCUMENTS:
        return False
    return "keep_by" not in documents.columns or isinstance(documents.schema["keep_by"].dataType, _DRIVER_KEEP_BY_TYPES)


def assigned_on_driver(documents: DataFrame, components: DataFrame, keep_order: str = "asc") -> ClusterAssignment:
    """`cluster_assignment`'s frames, computed on the driver by `core.cluster_rules` from one
    collect of `documents` and one of `components` (the same columns as there); returned as
    local frames of the same columns and types."""
    has_keep_by = "keep_by" in documents.columns
    names = ["id", "exact_key", "fingerprint", "reason"] + (["keep_by"] if has_keep_by else [])
    collected = documents.select(*names).toArrow()
    rows = [cluster_rules.Document(*values) for values in zip(*(collected.column(n).to_pylist() for n in names))]
    edges = components.select("node", "component").toArrow()
    component_of = dict(zip(edges.column("node").to_pylist(), edges.column("component").to_pylist()))
    assigned, sizes = cluster_rules.assign_clusters(rows, component_of, has_keep_by, keep_order)
    id_type = documents.schema["id"].dataType
    spark = documents.sparkSession
    clustered = _local_frame(spark, assigned, T.StructType([
        T.StructField("id", id_type),
        T.StructField("cluster_id", id_type),
        T.StructField("fingerprint", T.LongType()),
        T.StructField("status", T.StringType()),
        T.StructField("reason", T.StringType()),
        T.StructField("distance", T.IntegerType()),
    ]))
    sized = _local_frame(spark, sizes, T.StructType([
        T.StructField("cluster_id", id_type), T.StructField("members", T.LongType()),
    ]))
    return ClusterAssignment(documents=clustered, sizes=sized)


def _local_frame(spark: SparkSession, rows: list[tuple], schema: T.StructType) -> DataFrame:
    """A frame of `rows` (tuples in `schema`'s order), built through Arrow: a local relation
    of typed columns, not pickled rows converted again by every read."""
    arrow_schema = to_arrow_schema(schema)
    columns = list(zip(*rows)) if rows else [[] for _ in schema.fields]
    return spark.createDataFrame(pa.Table.from_arrays(
        [pa.array(column, type=field.type) for column, field in zip(columns, arrow_schema)], schema=arrow_schema,
    ))


def _kept_per_fingerprint_cluster(
    fingerprints: DataFrame, components: DataFrame, active: DataFrame
) -> tuple[DataFrame, DataFrame]:
    """`_kept_per_cluster`'s rows, without `keep_by`, from the distinct fingerprints' rows, in
    two parts: (the fingerprints in no component, a row each; the aggregated clusters).

    fingerprints: `fingerprint`, `id`, `members` (see `cluster_assignment`); components:
    `node`, `component`; active: the documents that are not skipped, of which only those
    without a fingerprint (clusters of an exact text) are used here.
    """
    with_component = fingerprints.join(components.withColumnRenamed("node", "fingerprint"), "fingerprint", "left")
    units = with_component.select(
        F.coalesce("component", "fingerprint").alias("group_fp"),
        F.lit(None).cast("binary").alias("group_exact"),
        "id",
        F.col("members").cast("long").alias("members"),
        "fingerprint",
        F.lit(False).alias("too_short"),
        F.col("component").isNull().alias("whole"),
    ).unionByName(
        active.where(F.col("fingerprint").isNull()).select(
            F.lit(None).cast("long").alias("group_fp"), F.col("exact_key").alias("group_exact"), "id",
            F.lit(1).cast("long").alias("members"), "fingerprint",
            F.col("reason").isNotNull().alias("too_short"), F.lit(False).alias("whole"),
        )
    )
    # A fingerprint in no component is a cluster whose kept document and size are on its row;
    # only the fingerprints of components and the exact texts are aggregated (one shuffle).
    whole = units.where(F.col("whole")).select(
        "group_fp", "group_exact", F.col("id").alias("cluster_id"), "members", "fingerprint", "too_short"
    )
    aggregated = units.where(~F.col("whole")).groupBy("group_fp", "group_exact").agg(
        F.min("id").alias("cluster_id"),
        F.sum("members").alias("members"),
        F.min("fingerprint").alias("fingerprint"),
        F.max("too_short").alias("too_short"),
    )
    return whole, aggregated


def _kept_per_cluster(grouped: DataFrame, has_keep_by: bool, keep_order: str) -> DataFrame:
    """Each cluster's kept document and size, chosen by aggregation.

    grouped: `group_fp`, `group_exact` (together the cluster), `id`, `fingerprint`, `reason`
        (null or too_short), and `keep_by` when `has_keep_by`.
    Returns one row per cluster: `group_fp`, `group_exact`, `cluster_id` (the kept document's
    id), `members` (long: the cluster's documents), and, meaningful only when members is 1
    (then the kept document is the whole cluster), `fingerprint` and `too_short` (bool).

    Why aggregates and not a window over each cluster: a window holds a whole cluster in one
    task, and a crawl's largest cluster (a template, an error page) can hold millions of pages;
    aggregates are combined partially in every task before the shuffle, so no task holds more
    than one row per cluster of its own input. Only fixed-width values are aggregated (the
    kept document's other columns are joined later, for the clusters that need them): with
    integer ids Spark then aggregates in a hash table, where a struct or a binary column
    would sort every document twice.
    """
    keys = ["group_fp", "group_exact"]
    members = F.count(F.lit(1)).alias("members")
    if has_keep_by:
        # The best keep_by of each cluster first (min and max skip nulls, so a null keep_by
        # loses in either order), then the smallest id among the documents that have it.
        best = (F.max if keep_order == "desc" else F.min)("keep_by").alias("best_keep_by")
        bests = grouped.groupBy(*keys).agg(best, members).select(
            F.col("group_fp").alias("b_fp"), F.col("group_exact").alias("b_exact"), "best_keep_by", "members"
        )
        candidates = grouped.join(
            bests,
            grouped["group_fp"].eqNullSafe(bests["b_fp"]) & grouped["group_exact"].eqNullSafe(bests["b_exact"]),
        ).where(F.col("best_keep_by").isNull() | (F.col("keep_by") == F.col("best_keep_by")))
        size = F.max("members").alias("members")  # one value per cluster
    else:
        candidates, size = grouped, members
    return candidates.groupBy(*keys).agg(
        F.min("id").alias("cluster_id"),
        size,
        # A cluster of one: its document's fingerprint and whether it is too short.
        F.min("fingerprint").alias("fingerprint"),
        F.max(F.col("reason").isNotNull()).alias("too_short"),
    )


def few_enough_to_broadcast(rows: int | None) -> bool:
    """Whether a frame of `rows` rows (None: not known) is broadcast to the join that looks
    it up (see `BROADCAST_ROWS`)."""
    return rows is not None and rows <= BROADCAST_ROWS


def without_dropped(documents: DataFrame, dropped: DataFrame, id_col: str, dropped_rows: int | None = None) -> DataFrame:
    """The documents whose `id_col` is not among `dropped`'s: what deduped/ holds.

    documents: the input rows, with `id_col` (unique). dropped: `id_col`, the ids of the
    documents a run drops (clusters/ rows that are not kept), usually far fewer than the
    documents, so they are what the join moves. dropped_rows: how many there are, when the
    caller knows (counted as clusters/ was written); few enough (`few_enough_to_broadcast`),
    they are broadcast and the documents are streamed past them, not shuffled.
    """
    if few_enough_to_broadcast(dropped_rows):
        dropped = F.broadcast(dropped)
    return documents.join(dropped, id_col, "left_anti")


def pairs_by_id(pairs: DataFrame, names: DataFrame, broadcast_pairs: bool = False) -> DataFrame:
    """Near-duplicate pairs named by documents: `id_a` < `id_b`, `distance`, and `jaccard`
    when `pairs` has it.

    pairs: `fp_a`, `fp_b`, `distance`, [`jaccard`]. names: `fingerprint`, `id`, one row per
    fingerprint (`documents.distinct_fingerprints`). broadcast_pairs: the pairs are known to be
    few (`few_enough_to_broadcast`) and the names many: the pairs are broadcast and the names
    streamed past them, never shuffled.
    """
    a = names.select(F.col("fingerprint").alias("fp_a"), F.col("id").alias("a"))
    b = names.select(F.col("fingerprint").alias("fp_b"), F.col("id").alias("b"))
    if broadcast_pairs:
        # Each join's result has a row per pair, so the second join's build side is as small.
        joined = F.broadcast(F.broadcast(pairs).join(a, "fp_a")).join(b, "fp_b")
    else:
        joined = pairs.join(a, "fp_a").join(b, "fp_b")
    return joined.select(
        F.least("a", "b").alias("id_a"),
        F.greatest("a", "b").alias("id_b"),
        "distance",
        *(["jaccard"] if "jaccard" in pairs.columns else []),
    )
