"""What a person tuning a run looks at: distances of candidate pairs, what each k would merge,
cluster sizes and near-duplicate pairs with their texts (`notebooks/explore.ipynb`).

Everything here is meant for a sample (thousands to tens of thousands of documents): it
reuses the band join (:mod:`simhash_udf.stages.join`), the cost model
(:mod:`simhash_udf.core.bands`) and the connected components
(:mod:`simhash_udf.stages.components`) of the job, but asks them questions a production run
never needs, such as every pair within 10 bits. Each function says what it costs at scale.

Inputs are the frames of :class:`simhash_udf.stages.finder.NearDuplicates`: `clusters` (`id`,
`cluster_id`, `fingerprint`, `status`) and fingerprint pairs (`fp_a`, `fp_b`, `distance`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from simhash_udf.core import bands
from simhash_udf.core.limits import MAX_EXPLORED_K
from simhash_udf.stages import join
from simhash_udf.stages.clusters import SKIPPED
from simhash_udf.stages.components import Materialise, connected_components


def distinct_fingerprints(clusters: DataFrame) -> DataFrame:
    """The distinct fingerprints of a result: `fingerprint` (long, not null).

    clusters: `fingerprint` (long, null for documents without one), e.g. `NearDuplicates.clusters`.
    """
    return clusters.where(F.col("fingerprint").isNotNull()).select("fingerprint").distinct()


def candidate_distances(fingerprints: DataFrame, plan: bands.BandPlan) -> DataFrame:
    """Every pair the band join of `plan` compares, with its exact Hamming distance.

    fingerprints: `fingerprint` (long, distinct). Returns `fp_a` < `fp_b` (long), `distance`
    (int, 1..64), one row per pair however many tables' keys it shares. Pairs beyond
    `plan.k` are the ones the job drops after `bit_count`: on real data, near copies edited a
    little more than k bits' worth sit just beyond k, random collisions around 32.

    Costs what the job's join costs before its filter: `bands.plan_cost(n, k, blocks)`'s
    rows shuffled and random candidates, plus a `distinct` over the candidates.
    """
    pairs = join.candidate_pairs(fingerprints, plan).select("fp_a", "fp_b").distinct()
    return pairs.select(
        "fp_a", "fp_b", F.bit_count(F.col("fp_a").bitwiseXOR(F.col("fp_b"))).cast("int").alias("distance")
    )


def distance_histogram(pairs: DataFrame, k: int) -> DataFrame:
    """How many pairs lie at each distance: `distance` (int), `pairs` (long), `within_k` (bool:
    distance <= k, the pairs a run with this k keeps), ordered by distance.

    pairs: `distance` (int), e.g. `candidate_distances` or `pairs_within`.
    """
    return (
        pairs.groupBy("distance")
        .agg(F.count(F.lit(1)).alias("pairs"))
        .select("distance", "pairs", (F.col("distance") <= k).alias("within_k"))
        .orderBy("distance")
    )


def pairs_within(fingerprints: DataFrame, max_k: int = MAX_EXPLORED_K, blocks: int | None = None) -> DataFrame:
    """Every pair of distinct fingerprints within `max_k` bits, exactly: `fp_a` < `fp_b`
    (long), `distance` (int, 1..max_k).

    fingerprints: `fingerprint` (long, distinct). The band join of the job with a plan for
    `max_k` (the cost model's, or `blocks` blocks): by the pigeonhole principle it misses no
    pair within `max_k`, so counting these pairs by distance tells what every smaller k would
    find. Cost at max_k = 10 (`bands.plan_cost`): 1,000 fingerprints, 11 tables and ~100k
    candidate pairs; 5,000: 66 tables, 0.3M rows shuffled, ~0.6M candidates (seconds on
    local[2]); 100,000: 286 tables, 29M rows, 54M candidates; 1M: 286M rows and 5.4G
    candidates, far more than the run itself (k = 3: 10M rows, 0.1M candidates). Use a
    sample.
    """
    n = fingerprints.count()
    plan = bands.choose_plan(n, max_k, blocks)
    return join.near_duplicate_pairs(fingerprints, plan)


def _cumulative_pair_counts(pairs: DataFrame, ks: list[int]) -> dict[int, int]:
    by_distance = {r["distance"]: r["count"] for r in pairs.groupBy("distance").count().collect()}
    return {k: sum(n for d, n in by_distance.items() if d <= k) for k in ks}


# Bits of a layered node id that hold the fingerprint's index; the k goes above them.
_INDEX_BITS = 40


def _components_per_k(pairs: DataFrame, ks: list[int], materialise: Materialise | None) -> DataFrame:
    """The connected components of the pairs within each k: `k` (int), `fingerprint` (long),
    `component` (long: a label shared by the fingerprints of one component of that k, unique
    across ks), for every fingerprint in a pair within its k.

    One graph holds a copy of the fingerprints per k: a node is k * 2^40 + the fingerprint's
    index in sorted order, so the copies never meet and one run of the O(log n)-round
    algorithm labels every k (running it once per k costs a dozen times more Spark jobs).
    The index is numbered in one partition: fine for the pairs of a sample.
    """
    ends = pairs.select(F.col("fp_a").alias("fingerprint")).unionByName(pairs.select(F.col("fp_b").alias("fingerprint")))
    index = ends.distinct().select(
        "fingerprint", (F.row_number().over(Window.orderBy("fingerprint")) - 1).cast("long").alias("index")
    )
    index = materialise(index) if materialise else index.localCheckpoint()
    k_frame = pairs.sparkSession.createDataFrame([(k,) for k in ks], "k int")
    layer = F.col("k").cast("long") * F.lit(1 << _INDEX_BITS)
    ia = index.select(F.col("fingerprint").alias("fp_a"), F.col("index").alias("index_a"))
    ib = index.select(F.col("fingerprint").alias("fp_b"), F.col("index").alias("index_b"))
    edges = (
        pairs.join(ia, "fp_a")
        .join(ib, "fp_b")
        .crossJoin(k_frame)
        .where(F.col("distance") <= F.col("k"))
        .select((layer + F.col("index_a")).alias("src"), (layer + F.col("index_b")).alias("dst"))
    )
    labelled = connected_components(edges, materialise)
    return labelled.select(
        F.shiftright("node", _INDEX_BITS).cast("int").alias("k"),
        F.col("node").bitwiseAND(F.lit((1 << _INDEX_BITS) - 1)).alias("index"),
        "component",
    ).join(index, "index").select("k", "fingerprint", "component")


def merges_by_k(
    clusters: DataFrame,
    pairs: DataFrame,
    ks: Iterable[int] = range(MAX_EXPLORED_K + 1),
    materialise: Materialise | None = None,
) -> DataFrame:
    """What a run with each k in `ks` would merge, on the same fingerprints.

    clusters: `id`, `cluster_id`, `fingerprint`, `status` (`NearDuplicates.clusters`: every
        document; skipped ones are left out, documents without a fingerprint keep the
        cluster of their exact copies, which no k changes).
    pairs: `fp_a`, `fp_b`, `distance`, holding every pair of distinct fingerprints within
        max(ks) bits (`pairs_within(..., max_k=max(ks))`); pairs beyond a k are ignored for it.
    Returns one row per k, ordered: `k` (int); `pairs` (long: fingerprint pairs within k);
    `clusters` (long: clusters of the documents, as `NearDuplicates.clusters` would have at
    this k); `duplicates` (long: documents not kept, exact and near); `merged_documents`
    (long: documents in clusters of two or more); `largest_cluster` (long, documents).

    The components of every k are found in one run of `components.connected_components` (see
    `_components_per_k`), in O(log n) rounds over (number of ks) x (pairs within max(ks)) edges:
    seconds on a sample; the pairs themselves are what is too costly on a whole crawl.
    """
    ks = sorted(set(ks))
    if not ks or ks[0] < 0:
        raise ValueError(f"ks must be one or more k >= 0, got {ks}")
    spark = clusters.sparkSession
    # Read four times below: compute the pairs (a band join) once.
    pairs = pairs.select("fp_a", "fp_b", "distance")
    pairs = materialise(pairs) if materialise else pairs.localCheckpoint()
    pair_counts = _cumulative_pair_counts(pairs, ks)
    active = clusters.where(F.col("status") != F.lit(SKIPPED))
    with_fp = active.where(F.col("fingerprint").isNotNull()).select("fingerprint")
    components = _components_per_k(pairs, ks, materialise)

    k_frame = spark.createDataFrame([(k,) for k in ks], "k int")
    # A fingerprint in no pair within k is a cluster of its own (with its exact copies).
    grouped = (
        with_fp.crossJoin(k_frame)
        .join(components, ["k", "fingerprint"], "left")
        # component is a layered node id, not a fingerprint: the two never share a column.
        .select("k", "component", F.when(F.col("component").isNull(), F.col("fingerprint")).alias("alone"))
        .groupBy("k", "component", "alone")
        .agg(F.count(F.lit(1)).alias("size"))
        .select("k", "size")
    )
    without_fp = (
        active.where(F.col("fingerprint").isNull())
        .groupBy("cluster_id")
        .agg(F.count(F.lit(1)).alias("size"))
        .crossJoin(k_frame)
        .select("k", "size")
    )
    sizes = grouped.unionByName(without_fp)
    per_k = sizes.groupBy("k").agg(
        F.count(F.lit(1)).alias("clusters"),
        F.sum(F.col("size") - 1).alias("duplicates"),
        F.sum(F.when(F.col("size") > 1, F.col("size")).otherwise(0)).alias("merged_documents"),
        F.max("size").alias("largest_cluster"),
    )
    counts = spark.createDataFrame([(k, pair_counts[k]) for k in ks], "k int, pairs long")
    return (
        counts.join(per_k, "k", "left")
        .select(
            "k",
            "pairs",
            *(F.coalesce(c, F.lit(0)).cast("long").alias(c) for c in ("clusters", "duplicates", "merged_documents", "largest_cluster")),
        )
        .orderBy("k")
    )


def cluster_sizes(clusters: DataFrame) -> DataFrame:
    """How many clusters have each size: `size` (long, documents), `clusters` (long),
    `documents` (long: size x clusters), ordered by size.

    clusters: `cluster_id` (null for skipped documents, which are left out).
    """
    return (
        clusters.where(F.col("cluster_id").isNotNull())
        .groupBy("cluster_id")
        .agg(F.count(F.lit(1)).alias("size"))
        .groupBy("size")
        .agg(F.count(F.lit(1)).alias("clusters"))
        .select("size", "clusters", (F.col("size") * F.col("clusters")).alias("documents"))
        .orderBy("size")
    )


def pairs_with_texts(
    pairs: DataFrame,
    docs: DataFrame,
    id_col: str = "id",
    text_col: str = "text",
    per_distance: int = 1,
    distances: Iterable[int] | None = None,
) -> DataFrame:
    """A few pairs with both texts, for a side-by-side view (`textdiff.side_by_side`).

    pairs: `id_a`, `id_b`, `distance` (e.g. `NearDuplicates.pairs`, or fingerprint pairs
        named by `clusters.pairs_by_id`). docs: the input documents, with `id_col` and
        `text_col` (the text as read, not normalised).
    Keeps the first `per_distance` pairs (by id_a, id_b) at each distance, only at
    `distances` when given. Returns `id_a`, `id_b`, `distance`, `text_a`, `text_b`, ordered
    by distance, id_a, id_b; small enough to collect.
    """
    if distances is not None:
        pairs = pairs.where(F.col("distance").isin(sorted(set(distances))))
    first = Window.partitionBy("distance").orderBy("id_a", "id_b")
    chosen = pairs.select("id_a", "id_b", "distance", F.row_number().over(first).alias("rank")).where(
        F.col("rank") <= per_distance
    )
    texts = docs.select(F.col(id_col).alias("id"), F.col(text_col).alias("text"))
    a = texts.select(F.col("id").alias("id_a"), F.col("text").alias("text_a"))
    b = texts.select(F.col("id").alias("id_b"), F.col("text").alias("text_b"))
    return (
        chosen.join(a, "id_a")
        .join(b, "id_b")
        .select("id_a", "id_b", "distance", "text_a", "text_b")
        .orderBy("distance", "id_a", "id_b")
    )


def bars(counts: Sequence[int], width: int = 40) -> list[str]:
    """Text bars for a histogram, one per count: a block per unit when the largest count fits
    in `width`, otherwise scaled so the largest is `width` long (a positive count never gets
    an empty bar)."""
    largest = max(counts, default=0)
    scale = 1.0 if largest <= width else width / largest
    return ["█" * max(1, round(n * scale)) if n > 0 else "" for n in counts]
