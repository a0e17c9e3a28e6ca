"""The second candidate generator: MinHash-LSH over the sketches of the distinct fingerprints.

The band join finds fingerprints within k bits; pages that differ by a paragraph, a caption or
a footer land 4-12 bits apart and share 75% and more of their token shingles. Their sketches
(`core.sketch`, carried beside each fingerprint from the fingerprint stage on) find them:

- `sketch_nodes`: one sketch per distinct fingerprint (the sketch of its smallest exact key's
  text: the graph's nodes are fingerprints, and texts that share one are one node already);
- `band_rows`: each node once per band, keyed by the 64-bit xxhash of the band's `rows`
  16-bit values, computed in Spark SQL (no Python);
- `candidate_pairs`: nodes that share a (band, key), each pair once. A bucket of more than
  `hot_size` nodes (a template, a parked domain) is not expanded into all its pairs: each of
  its members is paired with the bucket's smallest fingerprint only, enough to cluster
  near-identical pages, and the bucket is counted in report.json;
- `sketch_pairs`: the candidates whose sketches estimate a Jaccard similarity of at least
  `SketchConfig.jaccard` and whose fingerprints are at most `max_distance` bits apart. The
  check never goes back to the texts: the sketches are 256 bytes a node.

`with_jaccard` adds the estimate to any pairs of fingerprints (pairs/ carries it).

Up to `ONE_TASK_NODES` nodes, `route_in_one_task` does what `candidate_pairs`, `sketch_pairs`
and `with_jaccard` (for the band join's pairs) do, in one Python task (`core.sketch_candidates`:
the same pairs, in numpy): one Spark job instead of two shuffles of every node's band rows and
two joins of pairs to the sketches.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from simhash_udf.core import hot_runs, sketch
from simhash_udf.core.config import SketchConfig
from simhash_udf.core.sketch_candidates import BandPairs, checked_candidates
from simhash_udf.stages import udfs

# A bucket with more nodes than this is paired star-wise (see the module docstring): the
# band join's hot-run size, for the same reason (a bucket's pairs grow as its square).
HOT_BUCKET_SIZE = hot_runs.HOT_RUN_SIZE
# The most nodes whose candidates are made and checked in one Python task: within the memory
# budget of the other one-task path (`components.LOCAL_MAX_EDGES`: 354 MB of a worker's data at
# its limit, the worker near 550 MB with its own). `bench/sketch_route.py --memory` (peak RSS of
# `_route_batches` over Arrow batches of 10,000 random sketches of 128 values, 10% near copies,
# its input included): 210 MB at 200,000 nodes, 313 MB at 300,000, 470 MB at 440,000, 1,071 MB
# at 1,000,000 (~1,050-1,070 bytes a node). One task is also the quicker path there on two
# cores: stages sketch_nodes to jaccard, medians of 3 alternating runs, 5.2 s in one task
# against 14.1 s by the shuffles at 300,000 nodes (6.6 against 18.6 s at 440,000), the same
# candidates and pairs. Above it, the shuffles spread the band rows over the cluster.
ONE_TASK_NODES = 300_000
# What `route_in_one_task` returns (see there).
ROUTE_SCHEMA = (
    "fp_a long, fp_b long, distance int, jaccard double, candidate boolean, kept boolean, band_pair boolean, "
    "hot_buckets long"
)
# Rows per output batch: slices of the result, so the JVM never takes one huge Arrow batch.
_OUTPUT_BATCH_ROWS = 1 << 16


def sketch_nodes(texts: DataFrame) -> DataFrame:
    """`fingerprint`, `sketch`: one row per distinct fingerprint with a sketch.

    texts: `exact_key`, `fingerprint`, `sketch` (`documents.signed_documents`: one row per
    document; a text's documents all carry its sketch). A fingerprint
    several texts share takes the sketch of the text with the smallest exact key, so the
    choice does not depend on the input's order.
    """
    return (
        texts.where(F.col("fingerprint").isNotNull() & F.col("sketch").isNotNull())
        .groupBy("fingerprint")
        .agg(F.min_by("sketch", "exact_key").alias("sketch"))
    )


def band_rows(nodes: DataFrame, config: SketchConfig) -> DataFrame:
    """`band` (int), `key` (long), `fingerprint`: each node once per band.

    nodes: `fingerprint`, `sketch`. Band b is the sketch's values b*rows .. b*rows + rows - 1
    (`core.sketch.bands_agree` is the same test in numpy); its key is the xxhash64 of their
    bytes, so two nodes share (band, key) when they agree on the band (keys of different
    values collide with probability 2^-64).
    """
    width = 2 * config.rows  # bytes of one band (16-bit values)
    keys = F.array(
        *[
            F.struct(
                F.lit(b).alias("band"),
                F.xxhash64(F.substring(F.col("sketch"), b * width + 1, width)).alias("key"),
            )
            for b in range(config.bands)
        ]
    )
    return nodes.select("fingerprint", F.explode(keys).alias("b")).select(
        F.col("b.band").alias("band"), F.col("b.key").alias("key"), "fingerprint"
    )


def shared_buckets(rows: DataFrame) -> DataFrame:
    """The (band, key) buckets of `band_rows` that hold more than one node: `band`, `key`,
    `size`, `anchor` (the smallest fingerprint). Few, next to the band rows: most nodes share no
    bucket with another, so a run stores these once and reads them twice (the candidates, and
    the count of hot buckets) instead of shuffling every band row twice."""
    return rows.groupBy("band", "key").agg(
        F.count(F.lit(1)).alias("size"), F.min("fingerprint").alias("anchor")
    ).where(F.col("size") > 1)


def candidate_pairs(
    rows: DataFrame, buckets: DataFrame | None = None, hot_size: int = HOT_BUCKET_SIZE
) -> tuple[DataFrame, DataFrame]:
    """(candidates, hot buckets) of `band_rows`.

    buckets: `shared_buckets(rows)`, computed here when not given (a run passes its stored copy).
    candidates: `fp_a` < `fp_b`, each pair once: every pair of nodes sharing a (band, key)
    bucket of at most `hot_size` nodes, and every member of a larger bucket paired with the
    bucket's smallest fingerprint.
    hot buckets: `band`, `key`, `size`, `anchor` (the smallest fingerprint) of the buckets
    paired star-wise.
    """
    buckets = shared_buckets(rows) if buckets is None else buckets
    hot = buckets.where(F.col("size") > hot_size)
    ordinary = rows.join(buckets.where(F.col("size") <= hot_size).select("band", "key"), ["band", "key"], "left_semi")
    a = ordinary.select("band", "key", F.col("fingerprint").alias("fp_a"))
    b = ordinary.select("band", "key", F.col("fingerprint").alias("fp_b"))
    within = a.join(b, ["band", "key"]).where(F.col("fp_a") < F.col("fp_b")).select("fp_a", "fp_b")
    star = (
        rows.join(hot.select("band", "key", "anchor"), ["band", "key"])
        .where(F.col("fingerprint") != F.col("anchor"))
        .select(F.least("fingerprint", "anchor").alias("fp_a"), F.greatest("fingerprint", "anchor").alias("fp_b"))
    )
    return within.unionByName(star).distinct(), hot


def with_jaccard(pairs: DataFrame, nodes: DataFrame) -> DataFrame:
    """`pairs` with `jaccard` (double): the Jaccard similarity the two nodes' sketches
    estimate, null when either has no sketch.

    pairs: `fp_a`, `fp_b`, ...; nodes: `fingerprint`, `sketch` (`sketch_nodes`).
    """
    a = nodes.select(F.col("fingerprint").alias("fp_a"), F.col("sketch").alias("_sketch_a"))
    b = nodes.select(F.col("fingerprint").alias("fp_b"), F.col("sketch").alias("_sketch_b"))
    joined = pairs.join(a, "fp_a", "left").join(b, "fp_b", "left")
    return joined.select(
        *pairs.columns, udfs.sketch_jaccard(F.col("_sketch_a"), F.col("_sketch_b")).alias("jaccard")
    )


def sketch_pairs(candidates: DataFrame, nodes: DataFrame, config: SketchConfig) -> DataFrame:
    """The candidates the sketch route keeps: `fp_a`, `fp_b`, `distance` (int, Hamming),
    `jaccard` (double, estimated), with jaccard >= `config.jaccard` and distance <=
    `config.max_distance`.

    candidates: `fp_a`, `fp_b` (`candidate_pairs`); nodes: `fingerprint`, `sketch`.
    """
    distance = F.bit_count(F.col("fp_a").bitwiseXOR(F.col("fp_b"))).cast("int")
    near = candidates.select("fp_a", "fp_b", distance.alias("distance")).where(
        F.col("distance") <= config.max_distance
    )
    return with_jaccard(near, nodes).where(F.col("jaccard") >= F.lit(config.jaccard))


def few_enough_for_one_task(nodes: int | None) -> bool:
    """Whether `nodes` sketch nodes (None: not known) are checked in one task (see
    `ONE_TASK_NODES`)."""
    return nodes is not None and nodes <= ONE_TASK_NODES


def route_in_one_task(
    nodes: DataFrame, config: SketchConfig, band_pairs: DataFrame | None = None, hot_size: int = HOT_BUCKET_SIZE
) -> DataFrame:
    """The sketch route in one task: every candidate of `candidate_pairs`, checked as
    `sketch_pairs` checks them, and every band pair with its Jaccard estimate (`with_jaccard`).

    nodes: `fingerprint`, `sketch`, one row per distinct fingerprint (a stored copy: it is read
    by one task); band_pairs: `fp_a` < `fp_b`, `distance` (the band join's pairs), or None.
    Returns one row per pair that is a candidate or a band pair: `fp_a` < `fp_b`, `distance`
    (int), `jaccard` (double; null when either has no sketch), `candidate`, `kept` (the pairs
    `sketch_pairs` returns), `band_pair` (bool), and `hot_buckets` (long: how many buckets were
    paired star-wise; the same on every row, since one task saw them all; no rows means none).
    """
    node_rows = nodes.where(F.col("fingerprint").isNotNull() & F.col("sketch").isNotNull()).select(
        "fingerprint", "sketch", F.lit(None).cast("long").alias("fp_b"), F.lit(None).cast("int").alias("distance")
    )
    if band_pairs is not None:
        node_rows = node_rows.unionByName(band_pairs.select(
            F.col("fp_a").alias("fingerprint"), F.lit(None).cast("binary").alias("sketch"), "fp_b",
            F.col("distance").cast("int").alias("distance"),
        ))
    bands, rows, jaccard, max_distance = config.bands, config.rows, config.jaccard, config.max_distance

    def route(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return _route_batches(batches, bands, rows, hot_size, jaccard, max_distance)

    return node_rows.coalesce(1).mapInArrow(route, ROUTE_SCHEMA)


def _route_batches(
    batches: Iterator[pa.RecordBatch], bands: int, rows: int, hot_size: int, jaccard: float, max_distance: int
) -> Iterator[pa.RecordBatch]:
    """mapInArrow's function over `route_in_one_task`'s one partition (`fingerprint`, `sketch`,
    `fp_b`, `distance`: a node when fp_b is null, else a band pair): every batch read, then
    `ROUTE_SCHEMA`'s rows in slices of _OUTPUT_BATCH_ROWS."""
    fingerprints: list[np.ndarray] = []
    sketches: list[np.ndarray] = []
    pairs: list[pa.RecordBatch] = []
    for batch in batches:
        is_node = pc.is_null(batch.column(2))
        node_part = batch.filter(is_node)
        if node_part.num_rows:
            fingerprints.append(node_part.column(0).to_numpy(zero_copy_only=False))
            sketches.append(_sketch_values(node_part.column(1)))
        pair_part = batch.filter(pc.invert(is_node))
        if pair_part.num_rows:
            pairs.append(pair_part)
    values = np.concatenate(fingerprints) if fingerprints else np.empty(0, dtype=np.int64)
    order = np.argsort(values, kind="stable")
    values = values[order]
    table = np.concatenate(sketches)[order] if sketches else np.zeros((0, 0), dtype=np.uint16)
    del fingerprints, sketches
    band = BandPairs(*_pair_columns(pairs), values)
    del pairs
    hot, slices = checked_candidates(values, table, bands, rows, hot_size, jaccard, max_distance)
    for checked in slices:
        is_band_pair = band.mark(checked.a, checked.b)
        yield from _slices(
            hot, values[checked.a], values[checked.b], checked.distance, checked.jaccard,
            np.ones(len(checked.a), dtype=bool), checked.kept, is_band_pair,
        )
    # The band pairs no bucket made a candidate: their estimate, if both ends have a sketch.
    fp_a, fp_b, distance, estimate, estimated = band.unmarked(table)
    no = np.zeros(len(fp_a), dtype=bool)
    yield from _slices(hot, fp_a, fp_b, distance, estimate, no, no, ~no, missing=~estimated)


def _slices(hot: int, fp_a: np.ndarray, fp_b: np.ndarray, distance: np.ndarray, jaccard: np.ndarray,
            candidate: np.ndarray, kept: np.ndarray, band_pair: np.ndarray,
            missing: np.ndarray | None = None) -> Iterator[pa.RecordBatch]:
    """`ROUTE_SCHEMA` batches of at most _OUTPUT_BATCH_ROWS rows; missing: where jaccard is null."""
    for at in range(0, len(fp_a), _OUTPUT_BATCH_ROWS):
        part = slice(at, at + _OUTPUT_BATCH_ROWS)
        count = len(fp_a[part])
        yield pa.RecordBatch.from_arrays(
            [
                pa.array(fp_a[part]),
                pa.array(fp_b[part]),
                pa.array(distance[part].astype(np.int32)),
                pa.array(jaccard[part], mask=None if missing is None else missing[part]),
                pa.array(candidate[part]),
                pa.array(kept[part]),
                pa.array(band_pair[part]),
                pa.array(np.full(count, hot, dtype=np.int64)),
            ],
            names=["fp_a", "fp_b", "distance", "jaccard", "candidate", "kept", "band_pair", "hot_buckets"],
        )


def _sketch_values(column: pa.Array) -> np.ndarray:
    """A batch's binary sketches (no nulls, all of one size) as uint16 (rows, size), read from
    the Arrow buffers (not a Python bytes object per row: 60 MB and a second at 200,000)."""
    if len(column) == 0:
        return np.zeros((0, 0), dtype=np.uint16)
    offsets = np.frombuffer(column.buffers()[1], dtype=np.int32)[column.offset:column.offset + len(column) + 1]
    widths = np.diff(offsets)
    if column.null_count or widths.min() != widths.max() or widths[0] % 2:
        return sketch.from_bytes(column.to_pylist())  # raises on sketches of different sizes
    data = np.frombuffer(column.buffers()[2], dtype=np.uint8)[offsets[0]:offsets[-1]]
    return data.view("<u2").reshape(len(column), -1)


def _pair_columns(batches: list[pa.RecordBatch]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """fp_a, fp_b (int64) and distance (int32) of band pair rows (`fingerprint` as fp_a, -,
    `fp_b`, `distance`)."""
    if not batches:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int32)
    fp_a, fp_b, distance = (
        np.concatenate([b.column(i).to_numpy(zero_copy_only=False) for b in batches]) for i in (0, 2, 3)
    )
    return fp_a, fp_b, distance.astype(np.int32)
