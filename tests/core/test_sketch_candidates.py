"""core/sketch_candidates.py against a brute force written from the rule, not from the code.

The brute force puts every node in a Python dict per band, keyed by the band's values, and
makes a pair a candidate when some band's bucket holds both and is either small (at most
hot_size nodes) or has the pair's smaller node as its smallest member. The sketches are
random, with bands copied between nodes so that buckets of every size, hot ones among them,
and pairs sharing several bands occur.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from simhash_udf.core import sketch, sketch_candidates
from simhash_udf.core.sketch_candidates import checked_candidates

BANDS, ROWS, SIZE = 6, 3, 32


def _nodes(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(fingerprints int64 ascending and distinct, sketches uint16 (n, SIZE)): some nodes
    copy whole sketches of others with a few values changed, some copy single bands."""
    rng = np.random.default_rng(seed)
    fingerprints = np.unique(rng.integers(-(2**63), 2**63 - 1, size=n, dtype=np.int64))
    sketches = rng.integers(0, 2**16, size=(len(fingerprints), SIZE)).astype(np.uint16)
    # Near copies: a family of up to 8 nodes from one sketch, each with 4 values changed.
    for origin in rng.choice(len(sketches), size=len(sketches) // 10, replace=False):
        for member in rng.choice(len(sketches), size=rng.integers(1, 8), replace=False):
            sketches[member] = sketches[origin]
            sketches[member, rng.choice(SIZE, size=4, replace=False)] = rng.integers(0, 2**16, size=4)
    # One band's values shared by many nodes: a bucket past any small hot_size.
    crowd = rng.choice(len(sketches), size=len(sketches) // 5, replace=False)
    sketches[crowd, ROWS:2 * ROWS] = sketches[crowd[0], ROWS:2 * ROWS]
    # Small buckets in the last band.
    for _ in range(len(sketches) // 8):
        group = rng.choice(len(sketches), size=rng.integers(2, 5), replace=False)
        sketches[group, (BANDS - 1) * ROWS:BANDS * ROWS] = sketches[group[0], (BANDS - 1) * ROWS:BANDS * ROWS]
    return fingerprints, sketches


def _brute_force(sketches: np.ndarray, hot_size: int) -> tuple[set[tuple[int, int]], int]:
    candidates: set[tuple[int, int]] = set()
    hot = 0
    for band in range(BANDS):
        buckets: dict[bytes, list[int]] = defaultdict(list)
        for node in range(len(sketches)):
            buckets[sketches[node, band * ROWS:(band + 1) * ROWS].tobytes()].append(node)
        for members in buckets.values():
            if len(members) > hot_size:
                hot += 1
                candidates.update((min(members), m) for m in members if m != min(members))
            else:
                candidates.update((a, b) for a in members for b in members if a < b)
    return candidates, hot


@pytest.mark.parametrize("hot_size", [3, 6, 2000])
@pytest.mark.parametrize("chunk", [5, 1 << 22])
def test_the_candidates_are_the_brute_forces_each_once_and_checked(monkeypatch, hot_size, chunk):
    monkeypatch.setattr(sketch_candidates, "CHUNK_PAIRS", chunk)
    fingerprints, sketches = _nodes(seed=hot_size + chunk, n=400)
    expected, expected_hot = _brute_force(sketches, hot_size)
    hot, slices = checked_candidates(fingerprints, sketches, BANDS, ROWS, hot_size, jaccard=0.6, max_distance=40)
    got = [(int(a), int(b), int(d), float(j), bool(k)) for s in slices
           for a, b, d, j, k in zip(s.a, s.b, s.distance, s.jaccard, s.kept)]
    pairs = [(a, b) for a, b, *_ in got]
    assert len(pairs) == len(set(pairs)), "each candidate once"
    assert set(pairs) == expected
    assert hot == expected_hot
    assert hot > 0 or hot_size == 2000
    unsigned = fingerprints.view(np.uint64)
    for a, b, distance, jaccard, kept in got:
        assert distance == int(np.bitwise_count(unsigned[a] ^ unsigned[b]))
        assert jaccard == pytest.approx(float(sketch.estimated_jaccard(sketches[a:a + 1], sketches[b:b + 1])[0]))
        assert kept == (jaccard >= 0.6 and distance <= 40)
    # The test could fail: some candidates are kept, some are not.
    assert {kept for *_, kept in got} == {True, False}


def test_no_nodes_and_one_node_make_no_candidates():
    for n in (0, 1):
        hot, slices = checked_candidates(
            np.arange(n, dtype=np.int64), np.zeros((n, SIZE), dtype=np.uint16), BANDS, ROWS, 3, 0.5, 64
        )
        assert hot == 0 and list(slices) == []


def test_fingerprints_out_of_order_are_refused():
    with pytest.raises(ValueError, match="ascending"):
        checked_candidates(np.array([5, 2], dtype=np.int64), np.zeros((2, SIZE), dtype=np.uint16), BANDS, ROWS, 3, 0.5, 64)


def test_node_numbers_find_the_nodes_and_mark_the_rest():
    nodes = np.array([-7, 0, 3, 2**62], dtype=np.int64)
    values = np.array([3, -7, 5, 2**62, -8, 2**63 - 1], dtype=np.int64)
    assert sketch_candidates.node_numbers(nodes, values).tolist() == [2, 0, -1, 3, -1, -1]
    assert sketch_candidates.node_numbers(nodes[:0], values).tolist() == [-1] * 6


def test_band_pairs_know_which_are_candidates_and_which_ends_have_no_sketch():
    nodes = np.array([-5, 1, 4, 9], dtype=np.int64)
    band = sketch_candidates.BandPairs(
        np.array([-5, 1, -5, 2], dtype=np.int64), np.array([1, 9, 4, 9], dtype=np.int64),
        np.array([1, 2, 3, 1], dtype=np.int32), nodes,
    )
    assert band.a_node.tolist() == [0, 1, 0, -1] and band.b_node.tolist() == [1, 3, 2, 3]
    # Candidates (0, 1) and (1, 3) are band pairs, (0, 3) and (2, 3) are not.
    assert band.mark(np.array([0, 0, 2, 1]), np.array([1, 3, 3, 3])).tolist() == [True, False, False, True]
    assert band.marked.tolist() == [True, True, False, False]
    nothing = sketch_candidates.BandPairs(*(np.empty(0, dtype=t) for t in (np.int64, np.int64, np.int32)), nodes)
    assert nothing.mark(np.array([0]), np.array([1])).tolist() == [False]
