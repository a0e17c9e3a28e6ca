"""A batch's clusters against the index's: which indexed cluster each component joins, every
document's cluster and status, and the entries the batch adds.

DataFrame transforms only, after `index/lookup.py` found the batch's matches among the indexed
fingerprints and the components were computed over batch and indexed fingerprints together.
Indexed clusters are never merged or renamed: a component that touches the index joins the
first indexed cluster it touches (earliest run, then smallest id); the others are reported as
bridges.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from simhash_udf.stages import clusters
from simhash_udf.stages.documents import TOO_SHORT


def indexed_clusters(
    matches: DataFrame, components: DataFrame, entries: DataFrame, run_seq: dict[str, int]
) -> DataFrame:
    """The indexed cluster each component touching the index joins.

    matches: `fp_new`, `fp_old`, `distance` (from `lookup`). components: `node`, `component`.
    entries: the index's entries. run_seq: publication order of each run id.
    Returns `component`, `cluster_id`, `cluster_fingerprint`, `cluster_exact_key`,
    `cluster_run_id` - the first indexed cluster (earliest run, then smallest id) the
    component touches - and `clusters` (long): how many indexed clusters it touches. More than
    one makes it a bridge (a new page near two clusters the index keeps apart; they stay
    apart), counted by `bridges`.
    """
    # The touched fingerprints are as many as the batch's matches: no forced broadcast
    # (Spark's adaptive execution broadcasts them while they are under its size threshold).
    touched = matches.select(F.col("fp_old").alias("fingerprint")).distinct()
    info = entries.join(touched, "fingerprint").select(
        "fingerprint", "cluster_id", "cluster_fingerprint", "cluster_exact_key", "cluster_run_id"
    )
    # A batch fingerprint equal to an indexed one (distance 0) is that node itself; otherwise
    # the indexed node is in the component of the batch fingerprints it is near.
    node_component = info.join(
        components.withColumnRenamed("node", "fingerprint"), "fingerprint", "left"
    ).select("*", F.coalesce("component", "fingerprint").alias("comp"))
    seq = F.create_map(*[x for r, s in sorted(run_seq.items()) for x in (F.lit(r), F.lit(s))]) if run_seq else None
    order_seq = seq[F.col("cluster_run_id")] if seq is not None else F.lit(0)
    ranked = node_component.select(
        F.col("comp").alias("component"),
        "cluster_id", "cluster_fingerprint", "cluster_exact_key", "cluster_run_id",
        order_seq.alias("_seq"),
    )
    # The first cluster of each component by aggregates, not a window: a component can touch
    # many indexed nodes, and a window would gather them all in one task. The struct orders
    # by run (a run missing from run_seq last), then cluster id.
    first = F.min(
        F.struct(
            F.col("_seq").isNull().alias("_no_seq"), "_seq", "cluster_id",
            "cluster_fingerprint", "cluster_exact_key", "cluster_run_id",
        )
    ).alias("_first")
    # The bridges' count in the same aggregation: one shuffle of the touched nodes, not two.
    return ranked.groupBy("component").agg(first, F.countDistinct("cluster_id").alias("clusters")).select(
        "component", "_first.cluster_id", "_first.cluster_fingerprint", "_first.cluster_exact_key",
        "_first.cluster_run_id", "clusters",
    )


def bridges() -> dict[str, Column]:
    """Aggregates over `indexed_clusters`' rows (to observe while they are stored):
    `bridged_components` (components touching several indexed clusters) and
    `bridged_clusters` (the indexed clusters those touch, summed)."""
    bridge = F.col("clusters") > 1
    return {
        "bridged_components": F.count(F.when(bridge, 1)),
        "bridged_clusters": F.coalesce(F.sum(F.when(bridge, F.col("clusters"))), F.lit(0)),
    }


def assign_with_index(
    fingerprinted: DataFrame,
    components: DataFrame,
    by_component: DataFrame,
    exact_entries: DataFrame | None,
    keep_order: str,
) -> DataFrame:
    """Cluster and status of every batch document, indexed clusters first.

    fingerprinted: `id`, [`keep_by`], `exact_key`, `fingerprint`, `reason` (with
        `id_in_index` marked). components: `node`, `component` (over batch and indexed
        fingerprints). by_component: from `indexed_clusters`. exact_entries: `exact_key`,
        `cluster_id` of the index's too-short texts (or None).
    A document whose fingerprint's component touches the index joins that indexed cluster
    (exact_duplicate when its text equals the kept document's, near_duplicate otherwise); a
    too-short document whose text is indexed joins that text's cluster; every other document
    is clustered within the batch as without an index (`clusters.cluster_assignment`).
    Returns the columns of `clusters.cluster_assignment`'s documents plus `cluster_fingerprint`,
    `cluster_exact_key`, `cluster_run_id` of the indexed cluster joined (null for clusters
    created by this batch).
    """
    active = F.col("reason").isNull() | (F.col("reason") == F.lit(TOO_SHORT))
    with_comp = fingerprinted.join(
        components.withColumnRenamed("node", "fingerprint"), "fingerprint", "left"
    ).withColumn("component", F.when(F.col("fingerprint").isNotNull(), F.coalesce("component", "fingerprint")))
    near = with_comp.where(active & F.col("fingerprint").isNotNull()).join(by_component, "component")
    matched = [
        near.select(
            "id", "cluster_id", "fingerprint",
            F.when(F.col("exact_key") == F.col("cluster_exact_key"), F.lit(clusters.EXACT_DUPLICATE))
            .otherwise(F.lit(clusters.NEAR_DUPLICATE)).alias("status"),
            "reason",
            F.bit_count(F.col("fingerprint").bitwiseXOR(F.col("cluster_fingerprint"))).cast("int").alias("distance"),
            "cluster_fingerprint", "cluster_exact_key", "cluster_run_id",
        )
    ]
    if exact_entries is not None:
        short = fingerprinted.where(active & F.col("fingerprint").isNull()).join(
            exact_entries.select(
                "exact_key", "cluster_id", "cluster_fingerprint", "cluster_exact_key", "cluster_run_id"
            ),
            "exact_key",
        )
        matched.append(
            short.select(
                "id", "cluster_id", "fingerprint", F.lit(clusters.EXACT_DUPLICATE).alias("status"),
                "reason", F.lit(None).cast("int").alias("distance"),
                "cluster_fingerprint", "cluster_exact_key", "cluster_run_id",
            )
        )
    matched_rows = matched[0] if len(matched) == 1 else matched[0].unionByName(matched[1])
    rest = fingerprinted.join(matched_rows.select("id"), "id", "left_anti")
    own = clusters.cluster_assignment(rest, components, keep_order).documents.select(
        "*",
        F.lit(None).cast("long").alias("cluster_fingerprint"),
        F.lit(None).cast("binary").alias("cluster_exact_key"),
        F.lit(None).cast("string").alias("cluster_run_id"),
    )
    id_type = fingerprinted.schema["id"].dataType
    return own.unionByName(matched_rows.withColumn("cluster_id", F.col("cluster_id").cast(id_type)))


def new_entries(
    clustered: DataFrame,
    fingerprinted: DataFrame,
    sources: DataFrame,
    indexed_fps: DataFrame,
    run_id: str,
    sketches: DataFrame | None,
) -> DataFrame:
    """The rows this batch adds to the index (see `index/store.ENTRY_SCHEMA_DOC`).

    clustered: `assign_with_index`'s result. fingerprinted: `id`, `exact_key`. sources:
    `id`, `url`, `fetch_time`. indexed_fps: `fingerprint` of batch fingerprints already in
    the index (left out). sketches: `fingerprint`, `sketch` of the batch's sketch nodes
    (`sketch_join.sketch_nodes`; None when the run makes no sketches). One entry per new
    distinct fingerprint, carried by the cluster's kept document when it has that
    fingerprint, else by the smallest id, with its node's sketch (null without one); one per
    new too-short text (its kept document).
    """
    docs = clustered.where(F.col("status") != clusters.SKIPPED).join(
        fingerprinted.select("id", "exact_key"), "id"
    )
    kept = docs.where(F.col("status") == clusters.KEPT).select(
        F.col("id").alias("cluster_id"),
        F.col("fingerprint").alias("_kfp"),
        F.col("exact_key").alias("_kkey"),
    )
    # For clusters of this batch the kept document is here; for indexed clusters the match
    # carried its fingerprint and key (see `indexed_clusters`), kept on the rows below.
    with_cluster = docs.join(kept, "cluster_id", "left")
    fresh = with_cluster.where(F.col("fingerprint").isNotNull()).join(indexed_fps, "fingerprint", "left_anti")
    first = Window.partitionBy("fingerprint").orderBy(
        (F.col("status") == clusters.KEPT).desc(), F.col("id").asc()
    )
    by_fp = fresh.withColumn("_rank", F.row_number().over(first)).where("_rank = 1").drop("_rank")
    short_kept = with_cluster.where(F.col("fingerprint").isNull() & (F.col("status") == clusters.KEPT))
    rows = by_fp.unionByName(short_kept).join(sources, "id", "left")
    if sketches is not None:
        rows = rows.join(sketches.select("fingerprint", "sketch"), "fingerprint", "left")
    else:
        rows = rows.withColumn("sketch", F.lit(None).cast("binary"))
    return rows.select(
        "id",
        "fingerprint",
        "exact_key",
        F.col("url").cast("string").alias("url"),
        F.col("fetch_time").cast("string").alias("fetch_time"),
        F.lit(run_id).alias("run_id"),
        "status",
        "cluster_id",
        F.coalesce("cluster_fingerprint", "_kfp").alias("cluster_fingerprint"),
        F.coalesce("cluster_exact_key", "_kkey").alias("cluster_exact_key"),
        F.coalesce("cluster_run_id", F.lit(run_id)).alias("cluster_run_id"),
        "sketch",
    )
