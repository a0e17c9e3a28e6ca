"""bench/recall_routes.py and its modules (route_pairs, route_sets, route_chains): every all-pairs helper against brute force
or the library's own definition, the rules against hand-made pairs, the --quick run end to end."""

from __future__ import annotations

import itertools
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bench import recall_routes, route_chains, route_pairs, route_sets
from simhash_udf.core.config import FingerprintConfig, SketchConfig
from simhash_udf.core.fingerprint import fingerprints, hamming
from simhash_udf.core.sketch import bands_agree

ROOT = Path(__file__).resolve().parents[2]


def random_fingerprints(rng: np.random.Generator, n: int) -> np.ndarray:
    """n random fingerprints, a third of them a few bits off an earlier one (near pairs exist)."""
    values = rng.integers(-(2**63), 2**63 - 1, size=n, dtype=np.int64)
    for i in range(1, n, 3):
        flips = rng.choice(64, size=int(rng.integers(0, 8)), replace=False)
        mask = sum(1 << int(b) for b in flips)
        values[i] = np.int64(np.uint64((int(values[i - 1]) ^ mask) & (2**64 - 1)).view(np.int64))
    return values


@pytest.mark.parametrize("seed", range(5))
def test_pairs_within_finds_exactly_the_brute_force_pairs(seed):
    rng = np.random.default_rng(seed)
    values = random_fingerprints(rng, 600)  # more rows than one chunk
    for k in (0, 3, 7):
        i, j, dist = route_pairs.pairs_within(values, k)
        expected = {(x, y): hamming(int(values[x]), int(values[y]))
                    for x, y in itertools.combinations(range(len(values)), 2)
                    if hamming(int(values[x]), int(values[y])) <= k}
        assert dict(zip(zip(i.tolist(), j.tolist()), dist.tolist())) == expected
        assert len(i) == len(expected)  # each pair once


@pytest.mark.parametrize("shape", [(25, 5), (16, 8), (32, 4), (20, 6)])
def test_lsh_pairs_equal_bands_agree_on_every_pair(shape):
    rng = np.random.default_rng(sum(shape))
    n, size = 120, 128
    sketches = rng.integers(0, 4, size=(n, size), dtype=np.uint16)  # 4 values: bands often agree
    for i in range(1, n, 4):  # and some copies with a few values changed
        sketches[i] = sketches[i - 1]
        sketches[i, rng.choice(size, size=int(rng.integers(0, 40)), replace=False)] ^= 7
    config = SketchConfig(bands=shape[0], rows=shape[1])
    a, b = np.array(list(itertools.combinations(range(n), 2))).T
    expected = set(zip(a[bands_agree(sketches[a], sketches[b], config)].tolist(),
                       b[bands_agree(sketches[a], sketches[b], config)].tolist()))
    i, j = route_pairs.lsh_pairs(sketches, *shape)
    assert set(zip(i.tolist(), j.tolist())) == expected
    assert len(i) == len(expected) and expected  # each pair once, and the test had some


def test_components_match_a_union_find():
    rng = random.Random(3)
    n = 200
    edges = [(rng.randrange(n), rng.randrange(n)) for _ in range(150)]
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            x = parent[x]
        return x

    for x, y in edges:
        parent[find(x)] = find(y)
    first, second = np.array(edges).T
    labels = route_pairs.components(n, first, second)
    for x, y in itertools.combinations(range(n), 2):
        assert (labels[x] == labels[y]) == (find(x) == find(y))


def test_anchors_and_the_anchor_guard():
    labels = np.array([5, 2, 5, 2, 7, 5])
    assert route_pairs.anchors_of(labels).tolist() == [0, 1, 0, 1, 4, 0]
    reaches = np.array([True, True, False, True, True, True])
    guarded = route_pairs.anchor_guard(labels, reaches)
    assert guarded[0] == guarded[5] and guarded[1] == guarded[3]
    assert len(set(guarded.tolist())) == 4  # node 2 left alone; 0-5, 1-3 and 4 stay


def test_shingle_set_and_jaccard_by_hand():
    assert route_pairs.shingle_set(["a", "b", "c", "d"], 3) == {("a", "b", "c"), ("b", "c", "d")}
    assert route_pairs.shingle_set(["a", "b"], 3) == {("a", "b")}
    assert route_pairs.shingle_set([], 3) == set()
    assert route_pairs.jaccard({1, 2, 3}, {2, 3, 4}) == 0.5
    assert route_pairs.jaccard(set(), set()) == 1.0


def test_seed_0_is_the_library_fingerprint_and_another_seed_differs():
    texts = ["the quick brown fox jumps over the lazy dog " * 3, "一个 中文 句子 用来 测试 指纹", "alpha beta gamma delta"]
    config = FingerprintConfig()
    values, ok, n_features = fingerprints(texts, config)
    seeded, counts = route_pairs.seeded_fingerprints(texts, config, 0)
    assert seeded.tolist() == values.tolist() and counts.tolist() == n_features.tolist()
    other, _ = route_pairs.seeded_fingerprints(texts, config, 1)
    assert all(x != y for x, y in zip(other.tolist(), values.tolist()))


def test_lsh_probability_matches_a_monte_carlo_of_bands():
    rng = np.random.default_rng(0)
    bands, rows, j = 20, 6, 0.8
    agree = rng.random((200_000, bands, rows)) < j  # each value agrees with probability j
    observed = agree.all(axis=2).any(axis=1).mean()
    assert recall_routes.lsh_probability(j, bands, rows) == pytest.approx(observed, abs=0.005)


def test_simhash_rule_merges_as_the_job_does():
    long_a = "word " * 100
    texts = [long_a, "a short sentence about cats and dogs", "a short sentence about cats and dogs!",
             long_a + "x", "nothing alike in this one at all"]
    values = np.array([0, 0, 0, 0b111, 0], dtype=np.int64)
    n_features = np.array([10, 10, 10, 10, 10])
    frame = pd.DataFrame({"a": [0, 1, 0, 1, 0], "b": [0, 2, 3, 4, 2],
                          "exact": [True, False, False, False, False]})
    merged = route_sets.simhash_rule(frame, values, n_features, texts)
    # exact copy; similar short texts at 0 bits; long pair at 3 bits; dissimilar short texts
    # at 0 bits (the short-text policy's Jaccard says no); a long and a short text at 0 bits
    # that share nothing (the shorter is below 300 characters: checked, refused)
    assert merged.tolist() == [True, True, True, False, False]
    values[3] = 0b1111  # 4 bits: beyond k
    assert route_sets.simhash_rule(frame, values, n_features, texts)[2] == np.False_
    no_features = route_sets.simhash_rule(frame, values, np.array([10, 3, 10, 10, 10]), texts)
    assert no_features.tolist() == [True, False, False, False, False]


def test_summarise_counts_recall_shares_and_rail_merges():
    merged = {name: np.array([True, False, False, True]) for name, _ in route_sets.RECALL_SETS}
    merged["page_article_all"] = np.array([False, False])
    merged["regional"] = np.array([True, True, True])
    merged.update({name: np.array([False, True, True]) for name in route_sets.RAIL_SETS})
    r = route_sets.summarise(merged)
    assert r["near1"] == 0.5 and r["page_article_all"] == 0.0 and r["pan13"] == 2
    assert r["regional"] == 1.0  # shown, not in the mean
    assert not route_sets.rails_hold(r)
    assert route_sets.mean_recall(r) == 0.5


@pytest.mark.slow
def test_quick_run_writes_every_section(shared_data, tmp_path):
    out = tmp_path / "routes.md"
    done = subprocess.run(
        [sys.executable, "-m", "bench.recall_routes", "--quick", "--data", str(shared_data), "--out", str(out)],
        capture_output=True, text=True, timeout=600, check=False, cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    doc = out.read_text(encoding="utf-8")
    for heading in ("## 1. Today", "## 2. A larger k", "## 3. More than one fingerprint",
                    "## 4. MinHash-LSH", "## 5. Features", "## 6. CPU cost", "## 7. Chaining",
                    "## How this was measured"):
        assert heading in doc, heading
    assert doc.count("**What it bought and cost**") == 4 and "--quick: small samples" in doc


def test_clusters_of_measures_diameters_and_anchor_distances_by_brute_force():
    rng = random.Random(11)
    n = 40
    fps = random_fingerprints(np.random.default_rng(11), n)
    sets = [set(rng.sample(range(30), rng.randint(1, 20))) for _ in range(n)]
    edges = [(x, y) for x, y in itertools.combinations(range(n), 2) if rng.random() < 0.04]
    first, second = np.array(edges).T
    found = route_chains.clusters_of(first, second, fps, lambda node: sets[node])
    labels = found.labels
    groups = {}
    for node in range(n):
        groups.setdefault(labels[node], []).append(node)
    clusters = [g for g in groups.values() if len(g) >= 2]
    expected = sorted((len(g), max(hamming(int(fps[x]), int(fps[y])) for x, y in itertools.combinations(g, 2)),
                       min(route_pairs.jaccard(sets[x], sets[y]) for x, y in itertools.combinations(g, 2)))
                      for g in clusters)
    assert sorted(map(tuple, found.diameters.itertuples(index=False))) == expected
    assert len(found.members) == sum(len(g) - 1 for g in clusters)
    for row in found.members.itertuples(index=False):
        group = groups[labels[row.member]]
        assert row.anchor == min(group) and row.member != row.anchor
        assert row.jaccard == route_pairs.jaccard(sets[row.anchor], sets[row.member])
        assert row.hamming == hamming(int(fps[row.anchor]), int(fps[row.member]))
        assert row.direct == ((row.anchor, row.member) in set(edges))


def test_size_buckets():
    assert [route_chains.size_bucket(s) for s in (2, 3, 4, 5, 9, 10, 500)] == [
        "2", "3-4", "3-4", "5-9", "5-9", "10+", "10+"]


def test_lsh_cost_ratio_adds_the_rows_to_the_k3_join():
    base = recall_routes.join_figures(3, 10**9)
    assert recall_routes.lsh_cost_ratio(0, 10**9) == 1.0
    assert recall_routes.lsh_cost_ratio(25, 10**9) == pytest.approx(1 + 25e9 / base.cost)


def test_text_families_are_the_components_of_derivation_pairs():
    frame = lambda a, b: pd.DataFrame({"a": a, "b": b})  # noqa: E731
    frames = {"page_article": frame([10, 11], [1, 1]), "page_article_all": frame([12, 13], [1, 2])}
    frames.update({f"near{r}": frame([1, 2], [20 + r, 30 + r]) for r in (1, 3, 5)})
    frames.update({edit: frame([2], [40 + i]) for i, edit in enumerate(route_chains.EDITS)})
    frames["regional"] = frame([50, 51, 60], [51, 50, 61])  # a reprint and its way back
    families = route_chains.text_families(frames)
    groups = [(10, 11, 12, 1, 21, 23, 25), (13, 2, 31, 33, 35, 40, 41, 42), (50, 51), (60, 61)]
    for group in groups:
        assert len({families[t] for t in group}) == 1, group
    assert len({families[g[0]] for g in groups}) == len(groups)
    assert 99 not in families
