"""The sketch route of a run against the index: within the batch, and between the batch and
the index.

A self-join run pairs fingerprints 4-12 bits apart through their MinHash sketches
(`simhash_udf.stages.sketch_join`); a run against the index must find the same pairs across
days, so the index's entries keep their node's sketch (`index/assign.new_entries`) and each
run takes the route twice, with the same verification (estimated Jaccard >= `jaccard`,
Hamming distance <= `max_distance`):

- within the batch: `sketch_join` over the batch's nodes, as without an index;
- batch against index: the band rows of the batch's *new* nodes (fingerprints the index does
  not hold) are joined by (band, key) with band rows computed, on each run, from the sketches
  the index stores (`index_candidates`). A bucket with more than `hot_size` indexed nodes is
  not expanded: each batch node in it is paired with the bucket's smallest indexed
  fingerprint only, as the self-join pairs a hot bucket star-wise.

A fingerprint both in the batch and in the index is one node with the index's sketch, so a
node has one sketch over the index's life (the first run's). DataFrame transforms only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from simhash_udf.core.config import SketchConfig
from simhash_udf.index.lookup import BROADCAST_KEY_ROWS
from simhash_udf.stages import self_join, sketch_join
from simhash_udf.stages.scratch import Stages


@dataclass
class SketchRoute:
    """What the sketch route adds to a run against the index.

    nodes: `fingerprint`, `sketch` of the batch's nodes (what its new entries store).
    batch_pairs: `fp_a` < `fp_b`, `distance`, `jaccard`: the band join's pairs within the batch
        with their estimate, and the sketch route's pairs within the batch beyond them.
    batch_pair_rows: how many batch_pairs there are (counted when they were stored).
    index_pairs: `fp_new` (batch), `fp_old` (indexed), `distance`, `jaccard`: the lookup's
        pairs within k (distance > 0) with their estimate, and the sketch route's pairs between
        new batch nodes and indexed ones beyond them.
    stats: report.json's `sketch` counts (`nodes`, `candidate_pairs`, `pairs`,
        `pairs_beyond_k`, `hot_buckets` as without an index, for the batch;
        `indexed_candidate_pairs`, `pairs_with_indexed`, `pairs_with_indexed_beyond_k`,
        `hot_indexed_buckets` for the batch against the index).
    """

    nodes: DataFrame
    batch_pairs: DataFrame
    batch_pair_rows: int
    index_pairs: DataFrame
    stats: dict[str, Any]


def indexed_nodes(entries: DataFrame) -> DataFrame:
    """`fingerprint`, `sketch` of the entries that have both (one entry per fingerprint)."""
    return entries.where(F.col("fingerprint").isNotNull() & F.col("sketch").isNotNull()).select(
        "fingerprint", "sketch"
    )


def batch_nodes(texts: DataFrame, active: DataFrame, indexed: DataFrame | None, indexed_fps: DataFrame) -> DataFrame:
    """`fingerprint`, `sketch`: one node per distinct fingerprint of the batch's active documents.

    texts: `exact_key`, `fingerprint`, `sketch`; active: `exact_key` of the documents the run
    matches (ids the index holds are left out); indexed: `indexed_nodes` (None for an index
    without entries); indexed_fps: `fingerprint` of the batch's fingerprints the index holds,
    which keep the index's sketch when it has one.
    """
    nodes = sketch_join.sketch_nodes(texts.join(active.select("exact_key").distinct(), "exact_key", "left_semi"))
    if indexed is None:
        return nodes
    held = indexed.join(indexed_fps, "fingerprint", "left_semi").select(
        "fingerprint", F.col("sketch").alias("_indexed")
    )
    return nodes.join(held, "fingerprint", "left").select(
        "fingerprint", F.coalesce("_indexed", "sketch").alias("sketch")
    )


def index_buckets(new_rows: DataFrame, indexed_rows: DataFrame, broadcast: bool) -> DataFrame:
    """The (band, key) buckets of the index's band rows that the batch's new rows share:
    `band`, `key`, `size` (indexed nodes in it), `anchor` (its smallest indexed fingerprint).

    new_rows, indexed_rows: `band_rows` of the batch's new nodes and of the indexed ones.
    Only the index's rows whose bucket the batch has are grouped (a semi-join first, with the
    batch's keys broadcast when `broadcast`: the index's rows are then filtered as they are
    read, never shuffled).
    """
    return _met(new_rows, indexed_rows, broadcast).groupBy("band", "key").agg(
        F.count(F.lit(1)).alias("size"), F.min("fingerprint").alias("anchor")
    )


def _met(new_rows: DataFrame, indexed_rows: DataFrame, broadcast: bool) -> DataFrame:
    keys = new_rows.select("band", "key").distinct()
    return indexed_rows.join(F.broadcast(keys) if broadcast else keys, ["band", "key"], "left_semi")


def index_candidates(
    new_rows: DataFrame,
    indexed_rows: DataFrame,
    buckets: DataFrame,
    broadcast: bool,
    hot_size: int = sketch_join.HOT_BUCKET_SIZE,
) -> DataFrame:
    """The candidates between the batch's and the index's band rows (`band_rows`): `fp_a`
    (batch), `fp_b` (indexed), each pair once: every pair sharing a (band, key) bucket of at
    most `hot_size` indexed nodes, and every batch node of a larger (hot) bucket paired with
    the bucket's smallest indexed fingerprint.

    buckets: `index_buckets(new_rows, indexed_rows, broadcast)` (a run passes its stored copy).
    """
    met = _met(new_rows, indexed_rows, broadcast)
    batch = new_rows.select("band", "key", F.col("fingerprint").alias("fp_a"))
    ordinary = batch.join(
        met.join(buckets.where(F.col("size") <= hot_size).select("band", "key"), ["band", "key"], "left_semi")
        .select("band", "key", F.col("fingerprint").alias("fp_b")),
        ["band", "key"],
    ).select("fp_a", "fp_b")
    hot = buckets.where(F.col("size") > hot_size)
    star = batch.join(hot.select("band", "key", F.col("anchor").alias("fp_b")), ["band", "key"]).select("fp_a", "fp_b")
    return ordinary.unionByName(star).distinct()


def take_sketch_route(
    nodes: DataFrame,
    batch_pairs: DataFrame,
    near_index: DataFrame,
    new_fps: DataFrame,
    indexed: DataFrame | None,
    config: SketchConfig,
    k: int,
    stages: Stages,
) -> SketchRoute:
    """The sketch route of a run against the index (module docstring).

    nodes: `batch_nodes`; batch_pairs: `fp_a`, `fp_b`, `distance` (the batch's band join);
    near_index: `fp_new`, `fp_old`, `distance` (the lookup's matches at distance > 0, each
    pair once); new_fps: `fingerprint` of the batch's fingerprints the index does not hold;
    indexed: `indexed_nodes` (None for an index without entries); k: the band join's (pairs
    beyond it are the route's additions, counted). Stage results go to `stages`, their counts
    observed while they are stored.
    """
    # Within the batch: as without an index.
    route = self_join.sketch_route(batch_pairs, nodes, config, k, stages)
    nodes, within, stats = route.nodes, route.pairs, route.counts
    lookup = near_index.select(F.col("fp_new").alias("fp_a"), F.col("fp_old").alias("fp_b"), "distance")
    stats.update(
        dict.fromkeys(("indexed_candidate_pairs", "pairs_with_indexed", "pairs_with_indexed_beyond_k", "hot_indexed_buckets"), 0)
    )
    if indexed is None:
        index_pairs = sketch_join.with_jaccard(lookup, nodes)
    else:
        new_nodes = nodes.join(new_fps, "fingerprint", "left_semi")
        broadcast = stages.rows["sketch_nodes"] * config.bands <= BROADCAST_KEY_ROWS  # batch rows, at most
        new_rows, indexed_rows = sketch_join.band_rows(new_nodes, config), sketch_join.band_rows(indexed, config)
        hot_size = sketch_join.HOT_BUCKET_SIZE
        # The buckets are stored under the candidates' stage name, their hot ones counted as
        # they are (as within the batch).
        buckets = stages.materialise(
            "index_sketch_candidates", index_buckets(new_rows, indexed_rows, broadcast),
            observe={"hot": F.count(F.when(F.col("size") > hot_size, 1))},
        )
        stats["hot_indexed_buckets"] = stages.observed["index_sketch_candidates"]["hot"]
        cross = stages.materialise(
            "index_sketch_candidates", index_candidates(new_rows, indexed_rows, buckets, broadcast, hot_size)
        )
        stats["indexed_candidate_pairs"] = stages.rows["index_sketch_candidates"]
        # Only the indexed nodes a pair names are joined for their sketches (the index's
        # sketches are scanned once for the band rows, never shuffled whole).
        named = cross.select(F.col("fp_b").alias("fingerprint")).unionByName(
            lookup.select(F.col("fp_b").alias("fingerprint"))
        )
        pair_nodes = new_nodes.unionByName(indexed.join(named, "fingerprint", "left_semi"))
        # Each kept pair marked by whether the lookup has it already (it lists each pair once),
        # so the ones beyond it are counted while they are stored.
        in_lookup = lookup.select("fp_a", "fp_b", F.lit(True).alias("_in_lookup"))
        found_index = stages.materialise(
            "index_sketch_verify",
            sketch_join.sketch_pairs(cross, pair_nodes, config).join(in_lookup, ["fp_a", "fp_b"], "left"),
            observe={"beyond": F.count(F.when(F.col("_in_lookup").isNull(), 1))},
        )
        stats["pairs_with_indexed"] = stages.rows["index_sketch_verify"]
        stats["pairs_with_indexed_beyond_k"] = stages.observed["index_sketch_verify"]["beyond"]
        beyond_index = found_index.where(F.col("_in_lookup").isNull()).drop("_in_lookup")
        index_pairs = sketch_join.with_jaccard(lookup, pair_nodes).unionByName(beyond_index)
    renamed = index_pairs.select(
        F.col("fp_a").alias("fp_new"), F.col("fp_b").alias("fp_old"), "distance", "jaccard"
    )
    return SketchRoute(nodes, within, route.pair_rows, renamed, stats)
