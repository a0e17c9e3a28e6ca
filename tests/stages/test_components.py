"""Connected components against a plain union-find in Python, on both paths: one task
(`local`: scipy in one Python worker) and the distributed rounds (`distributed`).

Graphs: a long path with shuffled node ids (the worst case for label propagation), stars,
cliques, many small components, negative and extreme node ids, self-loops and repeated
edges. The label of a component must be its smallest node, and every node of an edge must
appear exactly once; both paths must give the same rows. The path taken is read off the
query plan (the local path is a MapInArrow over one partition), never assumed.
"""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from simhash_udf.stages.components import component_labels, connected_components

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
# local_max_edges that sends any graph to one path or the other.
PATHS = {"local": LONG_MAX, "distributed": -1}


def _union_find_components(edges: list[tuple[int, int]]) -> dict[int, int]:
    """node -> smallest node of its component, for every node of an edge."""
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        parent.setdefault(x, x)
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            # Keep the smaller node as the root: the root is then the component's minimum.
            parent[max(ra, rb)] = min(ra, rb)
    return {node: find(node) for node in list(parent)}


def _took_local_path(result) -> bool:
    """The local path is the only one with a MapInArrow in its plan."""
    return "MapInArrow" in result._jdf.queryExecution().optimizedPlan().toString()


def _run(
    spark, edges: list[tuple[int | None, int | None]], partitions: int | None = None, path: str = "local"
) -> list[tuple[int, int]]:
    frame = spark.createDataFrame(edges, "src long, dst long")
    if partitions is not None:
        frame = frame.repartition(partitions)
    result = connected_components(frame, local_max_edges=PATHS[path])
    assert _took_local_path(result) == (path == "local")
    assert [(f.name, f.dataType.simpleString()) for f in result.schema.fields] == [
        ("node", "bigint"),
        ("component", "bigint"),
    ]
    return [(r.node, r.component) for r in result.collect()]


def _assert_components(got: list[tuple[int, int]], edges: list[tuple[int, int]]) -> None:
    expected = _union_find_components(edges)
    nodes = [node for node, _ in got]
    repeated = sorted(n for n, count in Counter(nodes).items() if count > 1)
    assert not repeated, f"nodes listed more than once: {repeated[:10]}"
    assert set(nodes) == set(expected), (
        f"missing nodes {sorted(set(expected) - set(nodes))[:10]}, "
        f"extra nodes {sorted(set(nodes) - set(expected))[:10]}"
    )
    wrong = [(n, c, expected[n]) for n, c in got if c != expected[n]]
    assert not wrong, f"{len(wrong)} nodes with a wrong label (node, got, expected), e.g. {wrong[:10]}"


def _path(nodes: list[int]) -> list[tuple[int, int]]:
    return list(zip(nodes, nodes[1:]))


def _mixed_graph(seed: int) -> list[tuple[int, int]]:
    """Many shapes at once, on disjoint node ranges, in random order and orientation."""
    rng = random.Random(seed)
    edges: list[tuple[int, int]] = []
    ids = rng.sample(range(-10**12, 10**12), 6000)  # distinct ids, about half negative
    take = iter(ids)

    def nodes(n: int) -> list[int]:
        return [next(take) for _ in range(n)]

    # Paths of various lengths, ids shuffled (so labels must travel far).
    for length in (2, 3, 50, 400):
        edges += _path(nodes(length))
    # Stars: centre smallest, centre largest, centre in the middle.
    for _ in range(3):
        members = nodes(60)
        centre = members[rng.randrange(len(members))]
        edges += [(centre, m) for m in members if m != centre]
    edges += [(LONG_MAX, m) for m in nodes(20)]  # star around the largest long
    # Cliques.
    for size in (2, 5, 12):
        members = nodes(size)
        edges += [(a, b) for i, a in enumerate(members) for b in members[i + 1 :]]
    # Many small components: random trees and random sparse graphs of 2..6 nodes.
    for _ in range(300):
        members = nodes(rng.randint(2, 6))
        for i in range(1, len(members)):
            edges.append((members[i], members[rng.randrange(i)]))
        for _ in range(rng.randint(0, 3)):
            edges.append((rng.choice(members), rng.choice(members)))
    # A random graph on 500 nodes with about 1.2 edges per node: a few large tangled components.
    # Self-loops on nodes that have other edges; self-loop-only nodes have a test of their own.
    members = nodes(500)
    edges += [(a, b) for a, b in ((rng.choice(members), rng.choice(members)) for _ in range(600)) if a != b]
    # Extreme ids: the smallest long joined to a path.
    tail = nodes(5)
    edges += _path([LONG_MIN, *tail]) + [(tail[-1], LONG_MAX - 1)]
    # Self-loops on nodes that also have other edges, and repeated edges in both orientations.
    edges += [(n, n) for n in rng.sample([a for a, _ in edges], 50)]
    edges += rng.sample(edges, 200)
    edges += [(b, a) for a, b in rng.sample(edges, 200)]
    rng.shuffle(edges)
    return [(a, b) if rng.random() < 0.5 else (b, a) for a, b in edges]


def _small_mixed_graph(seed: int) -> list[tuple[int, int]]:
    """A few hundred edges of every shape at once: a chain, a star, many small components,
    self-loops (some on nodes with no other edge), repeats in both orientations, and ids over
    the whole long range with its extremes. Ids are drawn with replacement, so shapes may
    touch and merge: the oracle decides, not the construction."""
    rng = random.Random(seed)
    extremes = [LONG_MIN, LONG_MIN + 1, -1, 0, 1, LONG_MAX - 1, LONG_MAX]
    pool = extremes + [rng.randint(LONG_MIN, LONG_MAX) for _ in range(400)]

    def pick(n: int) -> list[int]:
        return [rng.choice(pool) for _ in range(n)]

    edges = _path(pick(rng.randint(2, 60)))
    centre = rng.choice(pool)
    edges += [(centre, m) for m in pick(rng.randint(1, 30))]
    for _ in range(rng.randint(5, 40)):
        members = pick(rng.randint(2, 10))
        edges += [(members[i], members[rng.randrange(i)]) for i in range(1, len(members))]
    edges += [(n, n) for n in pick(rng.randint(0, 5))]  # self-loops, maybe a node's only edge
    if edges:
        edges += rng.sample(edges, min(len(edges), 20))
        edges += [(b, a) for a, b in rng.sample(edges, min(len(edges), 20))]
    rng.shuffle(edges)
    return edges


@pytest.mark.parametrize("seed", range(40))
def test_component_labels_matches_union_find(seed):
    """The local path's kernel alone (numpy + scipy, no Spark), on many random graphs."""
    edges = _small_mixed_graph(seed)
    src = np.array([a for a, _ in edges], dtype=np.int64)
    dst = np.array([b for _, b in edges], dtype=np.int64)
    nodes, components = component_labels(np.concatenate([src, dst]))
    assert nodes.dtype == components.dtype == np.int64
    got = list(zip(nodes.tolist(), components.tolist()))
    assert nodes.tolist() == sorted(set(nodes.tolist()))  # ascending, each node once
    _assert_components(got, edges)


def test_component_labels_of_no_edges():
    nodes, components = component_labels(np.empty(0, dtype=np.int64))
    assert len(nodes) == len(components) == 0


@pytest.mark.spark
@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow), pytest.param(2, marks=pytest.mark.slow)])
def test_random_graphs_match_union_find_on_both_paths(spark, seed):
    """Each path against the oracle, and the two paths row for row."""
    edges = _small_mixed_graph(100 + seed)
    by_path = {path: sorted(_run(spark, edges, partitions=3, path=path)) for path in PATHS}
    for got in by_path.values():
        _assert_components(got, edges)
    assert by_path["local"] == by_path["distributed"]


@pytest.mark.spark
@pytest.mark.parametrize("path", PATHS)
def test_long_path_with_shuffled_ids(spark, path):
    """2,000 nodes in one chain: the diameter is 1,999, the labels must still converge."""
    rng = random.Random(7)
    nodes = rng.sample(range(-5000, 5000), 2000)
    edges = _path(nodes)
    rng.shuffle(edges)
    got = _run(spark, edges, path=path)
    _assert_components(got, edges)
    assert {c for _, c in got} == {min(nodes)}


@pytest.mark.spark
@pytest.mark.slow
def test_mixed_random_graph_matches_union_find_on_1_and_8_partitions(spark):
    """Right on both paths and both partitionings, hence also the same on all of them (labels
    are deterministic)."""
    edges = _mixed_graph(1)
    expected = _union_find_components(edges)
    assert len(set(expected.values())) > 300  # many components, not one blob
    runs = {
        (path, n): sorted(_run(spark, edges, n, path=path)) for path in PATHS for n in (1, 8)
    }
    for got in runs.values():
        _assert_components(got, edges)
    assert len({tuple(got) for got in runs.values()}) == 1


@pytest.mark.spark
@pytest.mark.parametrize("path", PATHS)
def test_handmade_graph(spark, path):
    """Small enough to check by eye: {-3, 5, 9} via a chain, {4, 7} with repeats, {-8, -2}."""
    edges = [(9, 5), (5, -3), (7, 4), (4, 7), (7, 4), (-2, -8), (9, 9)]
    assert sorted(_run(spark, edges, path=path)) == [(-8, -8), (-3, -3), (-2, -8), (4, 4), (5, -3), (7, 4), (9, -3)]


@pytest.mark.spark
@pytest.mark.parametrize("path", PATHS)
def test_no_edges_gives_no_nodes(spark, path):
    assert _run(spark, [], path=path) == []


@pytest.mark.spark
@pytest.mark.parametrize("path", PATHS)
def test_node_with_only_a_self_loop_is_its_own_component(spark, path):
    assert sorted(_run(spark, [(3, 3), (1, 2), (3, 3)], path=path)) == [(1, 1), (2, 1), (3, 3)]


@pytest.mark.spark
@pytest.mark.parametrize("path", PATHS)
def test_edges_with_a_null_end_are_dropped(spark, path):
    """Not in the contract (ends are never null), but both paths must agree: an edge with a
    null end adds nothing, not even its other end."""
    edges = [(1, None), (None, 4), (None, None), (2, 3)]
    assert sorted(_run(spark, edges, path=path)) == [(2, 2), (3, 2)]


@pytest.mark.spark
def test_threshold_edge_count_given(spark):
    """edge_count == local_max_edges goes local, one more goes to the rounds; the given count
    is trusted (it is deliberately not the frame's row count here: 4 rows)."""
    frame = spark.createDataFrame([(1, 2), (2, 3), (5, 6), (6, 6)], "src long, dst long")
    expected = [(1, 1), (2, 1), (3, 1), (5, 5), (6, 5)]
    for edge_count, local in ((7, True), (8, False)):
        result = connected_components(frame, edge_count=edge_count, local_max_edges=7)
        assert _took_local_path(result) == local
        assert sorted((r.node, r.component) for r in result.collect()) == expected


@pytest.mark.spark
def test_threshold_edge_count_counted(spark):
    """Without edge_count the frame's rows are counted (4, self-loop and repeat included)."""
    frame = spark.createDataFrame([(1, 2), (2, 1), (5, 6), (6, 6)], "src long, dst long")
    assert _took_local_path(connected_components(frame, local_max_edges=4))
    assert not _took_local_path(connected_components(frame, local_max_edges=3))


@pytest.mark.spark
def test_local_path_is_one_task_after_a_shuffle(spark):
    """repartition(1), not coalesce(1): the edges' own computation keeps its partitions, and
    one task labels them all."""
    frame = spark.range(0, 400, numPartitions=4).selectExpr("id AS src", "id + 1 AS dst")
    result = connected_components(frame, edge_count=400)
    plan = result._jdf.queryExecution().executedPlan().toString()
    assert "Exchange SinglePartition" in plan or "RoundRobinPartitioning(1)" in plan, plan
    assert "Coalesce" not in plan, plan
    assert result.rdd.getNumPartitions() == 1
    assert sorted((r.node, r.component) for r in result.collect()) == [(i, 0) for i in range(401)]
