"""Connected components of the near-duplicate graph, in Spark, in O(log n) rounds.

The large-star / small-star alternation of Kiveris et al., "Connected Components in
MapReduce and Beyond" (SoCC 2014). Edges are kept oriented from the larger node to the
smaller one, `(u, v)` with u > v. Each round is a large-star step (every node's larger
neighbours are re-attached to the smallest node of its neighbourhood) followed by a small-star
step (the same for the smaller neighbours). It ends when the graph is a set of stars: every
node has one edge, to a root that has none; the root is then its component's smallest node.

The component label is the smallest node, so the result depends only on the graph, not on
partitioning or row order. Each round's edges are materialised (`materialise`) to cut the
lineage, which otherwise grows with every round.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

Materialise = Callable[[DataFrame], DataFrame]


class ComponentsDidNotConverge(RuntimeError):
    """More rounds than any graph of 2^63 nodes needs: a bug, never an input property."""


def _large_star(edges: DataFrame) -> DataFrame:
    both = edges.select("u", "v").unionByName(edges.select(F.col("v").alias("u"), F.col("u").alias("v")))
    smallest = both.groupBy("u").agg(F.least(F.min("v"), F.col("u")).alias("m"))
    return (
        both.join(smallest, "u")
        .where(F.col("v") > F.col("u"))
        .select(F.col("v").alias("u"), F.col("m").alias("v"))
        .distinct()
    )


def _small_star(edges: DataFrame) -> DataFrame:
    smallest = edges.groupBy("u").agg(F.min("v").alias("m"))
    with_min = edges.join(smallest, "u")
    neighbours = with_min.where(F.col("v") != F.col("m")).select(
        F.col("v").alias("u"), F.col("m").alias("v")
    )
    return neighbours.unionByName(smallest.select("u", F.col("m").alias("v"))).distinct()


def _is_star_forest(edges: DataFrame) -> bool:
    """Every node has at most one edge, and no edge points to a node that has one."""
    has_two = edges.groupBy("u").count().where(F.col("count") > 1).limit(1).count() > 0
    if has_two:
        return False
    chained = edges.select(F.col("v").alias("u")).distinct().join(edges.select("u"), "u")
    return chained.limit(1).count() == 0


def connected_components(
    edges: DataFrame,
    materialise: Materialise | None = None,
    max_rounds: int = 100,
) -> DataFrame:
    """Component of every node that has an edge.

    edges: columns `src`, `dst` (long), undirected; self-loops and repeats are allowed.
    Returns `node`, `component` (long): component is the smallest node of its component,
    and every node of an edge appears once (a component's smallest node maps to itself).
    materialise: how each round's edges are cut from their lineage (default
    `DataFrame.localCheckpoint`; the job writes them to its work folder instead).
    """
    materialise = materialise or (lambda df: df.localCheckpoint())
    current = materialise(
        edges.select(
            F.greatest("src", "dst").alias("u"), F.least("src", "dst").alias("v")
        )
        .where(F.col("u") != F.col("v"))
        .distinct()
    )
    for _ in range(max_rounds):
        if _is_star_forest(current):
            break
        current = materialise(_small_star(_large_star(current)))
    else:
        raise ComponentsDidNotConverge(f"no star forest after {max_rounds} rounds")
    roots = current.select(F.col("v").alias("node"), F.col("v").alias("component")).distinct()
    labelled = current.select(F.col("u").alias("node"), F.col("v").alias("component")).unionByName(roots)
    # A node whose only edge is a self-loop is a component of its own.
    loops = edges.where(F.col("src") == F.col("dst")).select(F.col("src").alias("node")).distinct()
    alone = loops.join(labelled, "node", "left_anti").select("node", F.col("node").alias("component"))
    return labelled.unionByName(alone)
