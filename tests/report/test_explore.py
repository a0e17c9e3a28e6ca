"""simhash_udf.report.explore against brute force on random fingerprints with planted near copies."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from generators import brute_force_merges, brute_force_pairs, popcount64

from simhash_udf.core.bands import BandPlan
from simhash_udf.report import explore

MASK64 = (1 << 64) - 1


def _signed(value: int) -> int:
    value &= MASK64
    return value - (1 << 64) if value >> 63 else value


def _flip(value: int, bits: int, rng: random.Random) -> int:
    for bit in rng.sample(range(64), bits):
        value ^= 1 << bit
    return _signed(value)


def _planted_documents(seed: int = 11) -> list[tuple]:
    """(id, cluster_id, fingerprint, status) rows shaped like `NearDuplicates.clusters`.

    400 random fingerprints; 120 near copies of them 1..12 bits away; 20 chains a -> b -> c of
    3 bits each (a and c up to 6 apart, joined only through b); 40 documents sharing another
    document's fingerprint; 12 documents without a fingerprint in exact-copy groups (2 or 3
    per cluster_id) and 5 skipped ones. cluster_id of fingerprinted documents is a placeholder:
    `merges_by_k` recomputes their clusters for each k.
    """
    rng = random.Random(seed)
    fps = [_signed(rng.getrandbits(64)) for _ in range(400)]
    fps += [0, -1, -(1 << 63), (1 << 63) - 1]  # all bits equal / sign bit cases
    copies = [_flip(rng.choice(fps), 1 + i % 12, rng) for i in range(120)]
    chains = []
    for _ in range(20):
        a = _signed(rng.getrandbits(64))
        b = _flip(a, 3, rng)
        chains += [a, b, _flip(b, 3, rng)]
    every = fps + copies + chains
    rows = [(i, i, fp, "kept") for i, fp in enumerate(every)]
    for _ in range(40):
        rows.append((len(rows), len(rows), rng.choice(every), "kept"))
    for group in range(5):
        first = len(rows)
        for member in range(2 + group % 2):
            rows.append((len(rows), first, None, "kept" if member == 0 else "exact_duplicate"))
    for _ in range(5):
        rows.append((len(rows), None, None, "skipped"))
    return rows


SCHEMA = "id long, cluster_id long, fingerprint long, status string"


@pytest.fixture(scope="module")
def planted():
    return _planted_documents()


@pytest.fixture(scope="module")
def frames(spark, planted):
    clusters = spark.createDataFrame(planted, SCHEMA).cache()
    fingerprints = explore.distinct_fingerprints(clusters).cache()
    yield clusters, fingerprints
    fingerprints.unpersist()
    clusters.unpersist()


def _distinct_fps(planted) -> list[int]:
    return sorted({fp for _, _, fp, _ in planted if fp is not None})


def _brute_within(fps: list[int], k: int) -> set[tuple[int, int, int]]:
    # brute_force_pairs names each fingerprint by its smallest id: use the fingerprint itself.
    return brute_force_pairs([(fp, fp) for fp in fps], k)


def _rows(frame, *cols) -> list[tuple]:
    return [tuple(r[c] for c in cols) for r in frame.collect()]


@pytest.mark.spark
def test_distinct_fingerprints(frames, planted):
    _, fingerprints = frames
    assert sorted(r["fingerprint"] for r in fingerprints.collect()) == _distinct_fps(planted)


@pytest.mark.spark
@pytest.mark.parametrize("k, blocks", [(3, 4), (5, 6)])
def test_candidate_distances_are_every_pair_sharing_a_key(frames, planted, k, blocks):
    """Every pair that agrees on some table's blocks, once, with its popcount distance; the
    brute force tries every pair against every table mask."""
    _, fingerprints = frames
    plan = BandPlan(k, blocks)
    masks = [plan.table_mask(t) for t in range(plan.n_tables)]
    fps = _distinct_fps(planted)
    expected = set()
    for i, a in enumerate(fps):
        for b in fps[i + 1 :]:
            if any(((a ^ b) & m) == 0 for m in masks):
                expected.add((a, b, popcount64(a ^ b)))
    got = _rows(explore.candidate_distances(fingerprints, plan), "fp_a", "fp_b", "distance")
    assert len(got) == len(set(got))
    assert set(got) == expected
    # The data exercises what the view is for: pairs within k, near copies just beyond it,
    # and random collisions far beyond.
    distances = Counter(d for _, _, d in expected)
    assert sum(n for d, n in distances.items() if d <= k) > 20
    assert sum(n for d, n in distances.items() if k < d <= 12) > 5
    assert sum(n for d, n in distances.items() if d > 20) > 0
    assert _brute_within(fps, k) <= expected  # the pigeonhole property, on this data


@pytest.mark.spark
@pytest.mark.parametrize("max_k, blocks", [(10, None), (10, 12), (6, None), (0, None)])
def test_pairs_within_equal_brute_force(frames, planted, max_k, blocks):
    _, fingerprints = frames
    got = _rows(explore.pairs_within(fingerprints, max_k, blocks), "fp_a", "fp_b", "distance")
    expected = _brute_within(_distinct_fps(planted), max_k)
    assert len(got) == len(set(got))
    assert set(got) == expected
    if max_k:
        assert {d for _, _, d in expected} == set(range(1, max_k + 1))


@pytest.mark.spark
def test_distance_histogram(frames, planted):
    _, fingerprints = frames
    pairs = explore.pairs_within(fingerprints, 10)
    got = _rows(explore.distance_histogram(pairs, 3), "distance", "pairs", "within_k")
    counts = Counter(d for _, _, d in _brute_within(_distinct_fps(planted), 10))
    assert got == [(d, counts[d], d <= 3) for d in sorted(counts)]


@pytest.mark.spark
@pytest.mark.slow
def test_merges_by_k_equal_union_find(frames, planted):
    clusters, fingerprints = frames
    pairs = explore.pairs_within(fingerprints, 10).cache()
    got = [r.asDict() for r in explore.merges_by_k(clusters, pairs).collect()]
    pairs.unpersist()
    expected = [brute_force_merges(planted, k) for k in range(11)]
    assert got == expected
    # Chains make clusters transitive: at k = 3 some cluster has three fingerprints.
    assert expected[3]["largest_cluster"] >= 3
    assert expected[0]["pairs"] == 0 and expected[0]["duplicates"] > 0  # same-fingerprint copies


@pytest.mark.spark
def test_merges_by_k_for_chosen_ks(frames, planted):
    """Only the ks asked for; a k that adds no pair (none at distance 0) equals the one before."""
    clusters, fingerprints = frames
    pairs = explore.pairs_within(fingerprints, 4)
    got = [r.asDict() for r in explore.merges_by_k(clusters, pairs, ks=[4, 0, 2]).collect()]
    assert got == [brute_force_merges(planted, k) for k in (0, 2, 4)]


@pytest.mark.spark
def test_cluster_sizes(spark, planted):
    clusters = spark.createDataFrame(planted, SCHEMA)
    sizes = Counter(Counter(c for _, c, _, _ in planted if c is not None).values())
    got = _rows(explore.cluster_sizes(clusters), "size", "clusters", "documents")
    assert got == [(s, sizes[s], s * sizes[s]) for s in sorted(sizes)]
    assert len(sizes) > 1


@pytest.mark.spark
def test_pairs_with_texts(spark):
    docs = spark.createDataFrame(
        [(f"d{i}", f"text {i}") for i in range(8)] + [("x", None)], "doc string, body string"
    )
    pairs = spark.createDataFrame(
        [("d3", "d5", 2), ("d1", "d4", 2), ("d1", "d2", 1), ("d0", "d6", 5), ("d2", "d7", 5), ("d6", "x", 7)],
        "id_a string, id_b string, distance int",
    )
    got = _rows(
        explore.pairs_with_texts(pairs, docs, "doc", "body"), "id_a", "id_b", "distance", "text_a", "text_b"
    )
    assert got == [
        ("d1", "d2", 1, "text 1", "text 2"),
        ("d1", "d4", 2, "text 1", "text 4"),
        ("d0", "d6", 5, "text 0", "text 6"),
        ("d6", "x", 7, "text 6", None),
    ]
    two = _rows(explore.pairs_with_texts(pairs, docs, "doc", "body", per_distance=2, distances=[2, 5]), "id_a", "id_b")
    assert two == [("d1", "d4"), ("d3", "d5"), ("d0", "d6"), ("d2", "d7")]


def test_bars():
    assert explore.bars([]) == []
    assert explore.bars([0, 3, 1]) == ["", "███", "█"]
    assert explore.bars([40, 20]) == ["█" * 40, "█" * 20]
    assert explore.bars([100, 50, 1, 0]) == ["█" * 40, "█" * 20, "█", ""]  # scaled, 1 stays visible
    assert explore.bars([6, 14], width=7) == ["█" * 3, "█" * 7]
