"""Connected components in Spark against a plain union-find in Python.

Graphs: a long path with shuffled node ids (the worst case for label propagation), stars,
cliques, many small components, negative and extreme node ids, self-loops and repeated
edges. The label of a component must be its smallest node, and every node of an edge must
appear exactly once.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

from simhash_udf.stages.components import connected_components

pytestmark = pytest.mark.spark

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


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


def _run(spark, edges: list[tuple[int, int]], partitions: int | None = None) -> list[tuple[int, int]]:
    frame = spark.createDataFrame(edges, "src long, dst long")
    if partitions is not None:
        frame = frame.repartition(partitions)
    result = connected_components(frame)
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


def test_long_path_with_shuffled_ids(spark):
    """2,000 nodes in one chain: the diameter is 1,999, the labels must still converge."""
    rng = random.Random(7)
    nodes = rng.sample(range(-5000, 5000), 2000)
    edges = _path(nodes)
    rng.shuffle(edges)
    got = _run(spark, edges)
    _assert_components(got, edges)
    assert {c for _, c in got} == {min(nodes)}


@pytest.mark.slow
def test_mixed_random_graph_matches_union_find_on_1_and_8_partitions(spark):
    """Right on both partitionings, hence also the same on both (labels are deterministic)."""
    edges = _mixed_graph(1)
    expected = _union_find_components(edges)
    assert len(set(expected.values())) > 300  # many components, not one blob
    by_partitions = {n: sorted(_run(spark, edges, n)) for n in (1, 8)}
    for got in by_partitions.values():
        _assert_components(got, edges)
    assert by_partitions[1] == by_partitions[8]


def test_handmade_graph(spark):
    """Small enough to check by eye: {-3, 5, 9} via a chain, {4, 7} with repeats, {-8, -2}."""
    edges = [(9, 5), (5, -3), (7, 4), (4, 7), (7, 4), (-2, -8), (9, 9)]
    assert sorted(_run(spark, edges)) == [(-8, -8), (-3, -3), (-2, -8), (4, 4), (5, -3), (7, 4), (9, -3)]


def test_no_edges_gives_no_nodes(spark):
    assert _run(spark, []) == []


def test_node_with_only_a_self_loop_is_its_own_component(spark):
    assert sorted(_run(spark, [(3, 3), (1, 2)])) == [(1, 1), (2, 1), (3, 3)]
