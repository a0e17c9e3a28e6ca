"""A batch against the index: indexed fingerprints near the batch's, and ids it already holds.

DataFrame transforms only (the files are `index/store.IndexStore`'s). The batch's M distinct
fingerprints are exploded into band keys (M x tables rows) and joined to the index's stored
key rows with the batch side broadcast: the index is read column by column and streamed,
never exploded, shuffled or sorted (a self-join over N + M would be all three). Its plan is
priced for this lookup (`bands.choose_index_plan`), so a batch key meets few stored rows by
chance; a (table, key) bucket that is hot anyway (a template's pages on both sides) is
summarised by the self-join's kernel instead of joined in full (`lookup`). The batch's ids are
looked up the same way (`mark_repeated_ids`). What the batch's clusters become against the
indexed ones is `index/assign.py`'s.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from simhash_udf.core import hot_runs
from simhash_udf.core.bands import BandPlan
from simhash_udf.stages import join
from simhash_udf.stages.documents import TOO_SHORT
from simhash_udf.stages.scratch import Stages

# Reason of a batch document whose id is already an entry of the index (status `skipped`):
# the index names clusters by these ids, so a second document with the same id is never added.
ID_IN_INDEX = "id_in_index"

# Batch key rows up to this many are broadcast to the index scan; more, and both sides are
# shuffled by (table, key) (still no explode of the index).
BROADCAST_KEY_ROWS = 20_000_000


@dataclass
class Lookup:
    """What a lookup found, and what it cost.

    matches: `fp_new` (batch), `fp_old` (indexed), `distance` (int, 0..k), each pair once:
        distance 0 means the batch fingerprint is already in the index. In a hot bucket (below)
        only the summary's edges are listed, not every pair within k.
    links: `src`, `dst` (indexed fingerprints, longs): edges between two indexed fingerprints
        that a hot bucket's summary needs to keep its components whole (the summary is a
        spanning forest of the whole bucket, and its paths may run through indexed members).
        For the components only: they are never pairs of the output.
    stats: lookup_candidate_pairs (comparisons made: stored rows joined to a batch row's
        key outside hot buckets, each checked by bit_count, plus the comparisons of the hot
        buckets' summaries), stored_rows_met (stored key rows sharing a key with a batch row),
        hot_lookup_buckets (how many (table, key) buckets were summarised) and
        lookup_hot_buckets (the HOT_LISTED largest: table, key, batch_members,
        indexed_members, edges, comparisons, candidate_pairs_avoided = their product).
    """

    matches: DataFrame
    links: DataFrame
    stats: dict[str, Any]


# Rows of the hot buckets' Python worker (`_summarise_buckets`): a match, a link, a bucket's counts.
_MATCH, _LINK, _HOT = 0, 1, 2
_HOT_SCHEMA = (
    "kind byte, fp_new long, fp_old long, distance int, "
    "table int, key long, batch_members long, indexed_members long, edges long, comparisons long"
)
_HOT_NAMES = [part.split()[0] for part in _HOT_SCHEMA.split(", ")]
HOT_LISTED = 10


def _summarise_bucket(
    new: np.ndarray, old: np.ndarray, k: int
) -> tuple[list[tuple[int, int, int]], list[tuple[int, int, int]], int]:
    """One hot bucket: batch fingerprints `new` and indexed ones `old` (uint64, distinct each).

    The bucket's members (both sides, a value once) are summarised by the self-join's kernel
    (`hot_runs.summarise_run`): edges within k whose components equal those of all the
    bucket's pairs within k. An edge with a batch end and an indexed end is a match; one
    between two indexed fingerprints a link; one between two batch-only fingerprints is left
    out (the batch's own self-join connects those). A value on both sides is a match at
    distance 0. Returns (matches as (new, old, distance), links, comparisons).
    """
    members = np.union1d(new, old)
    a, b, d, comparisons = hot_runs.summarise_run(members, k)
    in_new_a, in_old_a = np.isin(a, new), np.isin(a, old)
    in_new_b, in_old_b = np.isin(b, new), np.isin(b, old)
    forward = in_new_a & in_old_b
    backward = ~forward & in_new_b & in_old_a
    link = ~forward & ~backward & in_old_a & in_old_b
    signed = lambda x: x.view(np.int64).tolist()  # noqa: E731
    dist = d.astype(np.int64)
    matches = list(zip(signed(a[forward]), signed(b[forward]), dist[forward].tolist()))
    matches += list(zip(signed(b[backward]), signed(a[backward]), dist[backward].tolist()))
    both = np.intersect1d(new, old)
    matches += [(x, x, 0) for x in signed(both)]
    links = list(zip(signed(a[link]), signed(b[link]), dist[link].tolist()))
    return matches, links, comparisons


def _summarise_buckets(batches: Iterator[pa.RecordBatch], k: int) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: a partition's hot-bucket rows (`table`, `key`, `fingerprint`, `indexed`)
    in, matches, links and one counts row per bucket out (`_HOT_SCHEMA`)."""
    collected = list(batches)
    if not collected:
        return
    frame = pa.Table.from_batches(collected)
    tables = frame.column("table").to_numpy()
    keys = frame.column("key").to_numpy()
    fps = frame.column("fingerprint").to_numpy().view(np.uint64)
    indexed = frame.column("indexed").to_numpy(zero_copy_only=False).astype(bool)
    order = np.lexsort((keys, tables))
    tables, keys, fps, indexed = tables[order], keys[order], fps[order], indexed[order]
    starts = np.flatnonzero(np.r_[True, (tables[1:] != tables[:-1]) | (keys[1:] != keys[:-1])])
    ends = np.r_[starts[1:], len(tables)]
    rows: list[tuple] = []
    for lo, hi in zip(starts.tolist(), ends.tolist()):
        side = indexed[lo:hi]
        new, old = np.unique(fps[lo:hi][~side]), np.unique(fps[lo:hi][side])
        matches, links, comparisons = _summarise_bucket(new, old, k)
        table, key = int(tables[lo]), int(keys[lo])
        rows += [(_MATCH, n, o, dd, None, None, None, None, None, None) for n, o, dd in matches]
        rows += [(_LINK, x, y, dd, None, None, None, None, None, None) for x, y, dd in links]
        rows.append((_HOT, None, None, None, table, key, len(new), len(old), len(matches) + len(links), comparisons))
    columns = list(zip(*rows))
    types = [pa.int8(), pa.int64(), pa.int64(), pa.int32(), pa.int32(), pa.int64(), pa.int64(), pa.int64(), pa.int64(), pa.int64()]
    yield pa.RecordBatch.from_arrays(
        [pa.array(list(c), t) for c, t in zip(columns, types)], names=_HOT_NAMES
    )


def lookup(
    batch: DataFrame,
    index_keys: DataFrame | None,
    plan: BandPlan,
    batch_rows: int | None = None,
    hot_run_size: int | None = hot_runs.HOT_RUN_SIZE,
    stages: Stages | None = None,
    stage: str = "index_lookup",
) -> Lookup:
    """Indexed fingerprints within k of each batch fingerprint, once per pair (see `Lookup`).

    batch: `fingerprint` (long, distinct). index_keys: `table`, `key`, `fingerprint` (the
    index's stored band keys) or None for an empty index.
    batch_rows: the batch's row count when known; the batch side is broadcast unless its key
    rows exceed BROADCAST_KEY_ROWS.
    hot_run_size: a (table, key) bucket whose batch and indexed members together are more
    than this is *hot*: instead of joining its b batch rows to its s stored rows (b x s
    candidates), its members are summarised as the self-join summarises a hot run (None:
    every bucket is joined in full).
    stages: stores, as stage `stage`, what is read more than once (the stored key rows that
    share a batch key, the batch key rows on those keys, the bucket sizes), with the counts
    the lookup needs observed as each is stored; default `Stages()` (local checkpoints).
    Only the batch's key rows are broadcast in full, once, for the scan; what follows joins
    the few rows that share keys.
    """
    spark = batch.sparkSession
    if index_keys is None:
        empty = spark.createDataFrame([], "fp_new long, fp_old long, distance int")
        return Lookup(empty, spark.createDataFrame([], "src long, dst long"), _lookup_stats(0, 0, []))
    stages = stages or Stages()

    def stored(frame: DataFrame, observe: dict[str, Column]) -> tuple[DataFrame, dict[str, int]]:
        # The counts below are observed while each frame is stored: a count of a stored copy
        # is a Spark job or two of its own, on every run against the index.
        result = stages.materialise(stage, frame, observe=observe)
        return result, stages.observed[stage]

    rows = {"rows": F.count(F.lit(1))}
    keys = join.band_keys(batch, plan).select("table", "key", F.col("fingerprint").alias("fp_new"))
    small = batch_rows is None or batch_rows * plan.n_tables <= BROADCAST_KEY_ROWS
    side = F.broadcast if small else (lambda frame: frame)
    # One scan of the index, streamed past the batch's key rows: the stored rows that share a
    # key with some batch row (a few per batch fingerprint with the lookup's plan), stored once.
    hits, hit_count = stored(
        index_keys.select("table", "key", F.col("fingerprint").alias("fp_old")).join(
            side(keys.select("table", "key")), ["table", "key"], "left_semi"
        ),
        rows,
    )
    # The batch rows on the other side of those keys: as few (the batch's key rows are
    # streamed past the hits' keys, not broadcast again).
    stored_sizes = hits.groupBy("table", "key").agg(F.count(F.lit(1)).alias("s"))
    few = F.broadcast if hit_count["rows"] <= BROADCAST_KEY_ROWS else (lambda frame: frame)
    batch_hits, batch_hit_count = stored(
        keys.join(few(stored_sizes.select("table", "key")), ["table", "key"], "left_semi"), rows
    )
    # Keys on both sides only: b batch rows and s stored rows, b x s joined rows.
    is_hot = (F.col("b") + F.col("s") > F.lit(hot_run_size)) if hot_run_size is not None else F.lit(False)
    sizes, totals = stored(
        batch_hits.groupBy("table", "key").agg(F.count(F.lit(1)).alias("b")).join(stored_sizes, ["table", "key"]),
        {
            "cold": F.sum(F.when(~is_hot, F.col("b") * F.col("s")).otherwise(0)),
            "met": F.sum("s"),
            "hot": F.sum(is_hot.cast("long")),
        },
    )
    cold_candidates, met, n_hot = int(totals["cold"] or 0), int(totals["met"] or 0), int(totals["hot"] or 0)
    keys = batch_hits
    side = F.broadcast if batch_hit_count["rows"] <= BROADCAST_KEY_ROWS else (lambda frame: frame)
    differing = F.col("fp_new").bitwiseXOR(F.col("fp_old"))
    distance = F.bit_count(differing).cast("int")

    def verified(joined: DataFrame) -> DataFrame:
        # A pair sharing several tables' keys (always, at distance 0) is kept by its
        # canonical table only, as in the self-join.
        return (
            joined.where(distance <= plan.k)
            .where(join._is_canonical(F.col("table"), differing, plan))
            .select("fp_new", "fp_old", distance.alias("distance"))
        )

    if not n_hot:
        matches = verified(hits.join(side(keys), ["table", "key"]))
        return Lookup(matches, spark.createDataFrame([], "src long, dst long"), _lookup_stats(cold_candidates, met, []))
    hot_keys = F.broadcast(sizes.where(is_hot).select("table", "key"))
    cold = verified(
        hits.join(hot_keys, ["table", "key"], "left_anti").join(side(keys.join(hot_keys, ["table", "key"], "left_anti")), ["table", "key"])
    )
    members = (
        keys.join(hot_keys, ["table", "key"]).select("table", "key", F.col("fp_new").alias("fingerprint"), F.lit(False).alias("indexed"))
        .unionByName(hits.join(hot_keys, ["table", "key"]).select("table", "key", F.col("fp_old").alias("fingerprint"), F.lit(True).alias("indexed")))
    )
    k = plan.k
    summarised = stages.materialise(
        stage,
        members.repartition(max(1, min(n_hot, spark.sparkContext.defaultParallelism)), "table", "key")
        .mapInArrow(lambda batches: _summarise_buckets(batches, k), _HOT_SCHEMA),
    )
    hot_rows = summarised.where(F.col("kind") == _HOT).orderBy(
        (F.col("batch_members") * F.col("indexed_members")).desc(), "table", "key"
    ).collect()
    # A pair can come from the hot buckets of several tables, or from a hot and a cold one.
    matches = cold.unionByName(
        summarised.where(F.col("kind") == _MATCH).select("fp_new", "fp_old", "distance")
    ).distinct()
    link_rows = summarised.where(F.col("kind") == _LINK)
    links = link_rows.select(F.col("fp_new").alias("src"), F.col("fp_old").alias("dst")).distinct()
    return Lookup(matches, links, _lookup_stats(cold_candidates + sum(r["comparisons"] for r in hot_rows), met, hot_rows))


def _lookup_stats(candidates: int, met: int, hot_rows: list) -> dict[str, Any]:
    """The `stats` of a `Lookup` (hot_rows: its buckets' counts rows, largest first)."""
    return {
        "lookup_candidate_pairs": candidates,
        "stored_rows_met": met,
        "hot_lookup_buckets": len(hot_rows),
        "lookup_hot_buckets": [
            {
                "table": r["table"],
                "key": r["key"],
                "batch_members": r["batch_members"],
                "indexed_members": r["indexed_members"],
                "edges": r["edges"],
                "comparisons": r["comparisons"],
                "candidate_pairs_avoided": r["batch_members"] * r["indexed_members"],
            }
            for r in hot_rows[:HOT_LISTED]
        ],
    }


def mark_repeated_ids(fingerprinted: DataFrame, entries: DataFrame | None, batch_rows: int | None = None) -> DataFrame:
    """Documents whose id is already an index entry get reason `id_in_index` (so they are
    skipped: never matched, never added). Columns as `fingerprinted` (`id`, ..., `reason`).

    The index's id column is streamed past the batch's ids (broadcast unless the batch has
    more than BROADCAST_KEY_ROWS documents); entry ids are unique, so nothing is shuffled.
    """
    if entries is None:
        return fingerprinted
    ids = fingerprinted.select("id")
    small = batch_rows is None or batch_rows <= BROADCAST_KEY_ROWS
    seen = entries.select("id").join(F.broadcast(ids) if small else ids, "id", "left_semi")
    flagged = fingerprinted.join(seen.select(F.col("id").alias("_seen")), F.col("id") == F.col("_seen"), "left")
    # Documents skipped for their own reason (empty) keep it.
    matchable = F.col("reason").isNull() | (F.col("reason") == F.lit(TOO_SHORT))
    reason = F.when(F.col("_seen").isNotNull() & matchable, F.lit(ID_IN_INDEX)).otherwise(F.col("reason"))
    return flagged.withColumn("reason", reason).drop("_seen")
