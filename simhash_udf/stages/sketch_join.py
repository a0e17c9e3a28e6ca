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
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from simhash_udf.core import hot_runs
from simhash_udf.core.config import SketchConfig
from simhash_udf.stages import udfs

# A bucket with more nodes than this is paired star-wise (see the module docstring): the
# band join's hot-run size, for the same reason (a bucket's pairs grow as its square).
HOT_BUCKET_SIZE = hot_runs.HOT_RUN_SIZE


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
