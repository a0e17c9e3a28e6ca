"""Connected components of the near-duplicate graph: in one Spark task when the edges are
few, else in Spark in O(log n) rounds.

Local path (at most `local_max_edges` edges): the edges are shuffled into one partition
(`repartition(1)`, so whatever computes them stays parallel) and one Python worker labels
them with scipy's `connected_components` (`component_labels`). One Spark job instead of
three per round: on the job's 66k pairs the rounds took 22-25 s.

Distributed path: the large-star / small-star alternation of Kiveris et al., "Connected
Components in MapReduce and Beyond" (SoCC 2014). Edges are kept oriented from the larger
node to the smaller one, `(u, v)` with u > v. Each round is a large-star step (every node's
larger neighbours are re-attached to the smallest node of its neighbourhood) followed by a
small-star step (the same for the smaller neighbours). It ends when the graph is a set of
stars: every node has one edge, to a root that has none; the root is then its component's
smallest node. Each round's edges are materialised (`materialise`) to cut the lineage, which
otherwise grows with every round.

Both paths label a component with its smallest node, so the result depends only on the
graph, not on the path, the partitioning or the row order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

Materialise = Callable[[DataFrame], DataFrame]

# The most edges labelled in one Python worker. Measured by bench/components_bench.py --memory
# (the worker's code on Arrow batches of 10,000 edges, peak RSS above an interpreter with
# numpy, pyarrow and scipy loaded): 115 MB at 1M edges, 354 MB at 4M, 764 MB at 10M (~80 bytes
# an edge: the edges, their sort, scipy's CSR and its transpose, the output). 4M edges keeps a
# worker near 550 MB with its own ~180 MB (measured idle after a run), well under 1 GB; the
# job's pairs are usually far fewer (66k, where the rounds took 22-25 s), and above 4M the
# distributed rounds take over, each round's memory spread over the cluster.
LOCAL_MAX_EDGES = 4_000_000
# Rows per output batch: slices of the result, so the JVM never takes one huge Arrow batch.
OUTPUT_BATCH_ROWS = 1 << 16

OUTPUT_SCHEMA = "node long, component long"


class ComponentsDidNotConverge(RuntimeError):
    """More rounds than any graph of 2^63 nodes needs: a bug, never an input property."""


# ---------------------------------------------------------------- local path (one task)


def component_labels(ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(node, component) of every node of the edges in `ends` (int64, length 2m: the edges'
    first ends, then their second ends, so edge i joins ends[i] and ends[m + i]; undirected,
    self-loops and repeats allowed): nodes ascending, each once; component is the smallest
    node of its component. `ends` is overwritten (sorted in place, to save a copy)."""
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import connected_components as scipy_components

    m = len(ends) // 2
    if m == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    # Nodes densified to 0..n-1 in ascending order of value: what np.unique(ends,
    # return_inverse=True) gives, at 40% of its peak memory (125 vs 312 MB over 4M edges:
    # int32 indices, the sort done in place, every temporary dropped as soon as it is used).
    order = np.argsort(ends)
    ends[:] = ends[order]
    first = np.empty(len(ends), dtype=bool)
    first[0] = True
    np.not_equal(ends[1:], ends[:-1], out=first[1:])
    nodes = ends[first]
    dense = np.cumsum(first, dtype=np.int32 if len(ends) < 2**31 else np.int64)
    dense -= 1
    del first
    index = np.empty_like(dense)
    index[order] = dense
    del order, dense
    n = len(nodes)
    # float64 weights: the dtype scipy's validation converts to, so it keeps this matrix
    # instead of copying it. Only the structure counts: repeated edges just add up.
    graph = csr_array((np.ones(m, dtype=np.float64), (index[:m], index[m:])), shape=(n, n))
    del index
    count, labels = scipy_components(graph, directed=False)
    del graph
    # Nodes are in ascending order, so a component's smallest node is its smallest index.
    smallest = np.full(count, n, dtype=np.int64)
    np.minimum.at(smallest, labels, np.arange(n, dtype=np.int64))
    return nodes, nodes[smallest[labels]]


def _label_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow's function over the one partition of edges (`src`, `dst`: long, no nulls):
    every batch read, then `node`, `component` (long) in slices of OUTPUT_BATCH_ROWS."""
    src_chunks: list[np.ndarray] = []
    dst_chunks: list[np.ndarray] = []
    for batch in batches:
        src_chunks.append(batch.column(0).to_numpy())
        dst_chunks.append(batch.column(1).to_numpy())
    if not src_chunks:
        return
    ends = np.concatenate(src_chunks + dst_chunks)
    del src_chunks, dst_chunks  # the Arrow batches they view go with them
    if len(ends) == 0:
        return
    nodes, components = component_labels(ends)
    del ends
    result = pa.RecordBatch.from_arrays([pa.array(nodes), pa.array(components)], names=["node", "component"])
    for start in range(0, result.num_rows, OUTPUT_BATCH_ROWS):
        yield result.slice(start, OUTPUT_BATCH_ROWS)


def _local_components(edges: DataFrame) -> DataFrame:
    # repartition, not coalesce: coalesce(1) would pull the edges' whole computation into
    # the one task; a shuffle keeps it parallel and only the edges travel. Null ends are
    # dropped, as the distributed path drops them (greatest/least skip nulls, then u == v).
    one = (
        edges.select(F.col("src").cast("long").alias("src"), F.col("dst").cast("long").alias("dst"))
        .where(F.col("src").isNotNull() & F.col("dst").isNotNull())
        .repartition(1)
    )
    return one.mapInArrow(_label_batches, OUTPUT_SCHEMA)


# ---------------------------------------------------------------- distributed path (rounds)


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


def _distributed_components(edges: DataFrame, materialise: Materialise, max_rounds: int) -> DataFrame:
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


def connected_components(
    edges: DataFrame,
    materialise: Materialise | None = None,
    max_rounds: int = 100,
    edge_count: int | None = None,
    local_max_edges: int | None = None,
) -> DataFrame:
    """Component of every node that has an edge.

    edges: columns `src`, `dst` (long), undirected; self-loops and repeats are allowed.
    Returns `node`, `component` (long): component is the smallest node of its component,
    and every node of an edge appears once (a component's smallest node maps to itself; a
    node whose only edges are self-loops is a component of its own).
    edge_count: the rows of `edges` (repeats and self-loops included), when the caller knows
    it (a materialised stage's row count); counted here otherwise, which runs `edges` once more.
    local_max_edges: up to this many edges, one task labels them all (local path, see the
    module's docstring); above it, the distributed rounds. Default: LOCAL_MAX_EDGES.
    materialise, max_rounds: the distributed path's only. materialise: how each round's
    edges are cut from their lineage (default `DataFrame.localCheckpoint`; the job writes
    them to its work folder instead); max_rounds: the rounds before ComponentsDidNotConverge.
    """
    if edge_count is None:
        edge_count = edges.count()
    if edge_count <= (LOCAL_MAX_EDGES if local_max_edges is None else local_max_edges):
        return _local_components(edges)
    return _distributed_components(edges, materialise or (lambda df: df.localCheckpoint()), max_rounds)
