"""The sketch route in Spark (`stages/sketch_join.py`) against an all-pairs brute force in numpy.

Texts: families of articles made of random words (an original, the same with a paragraph
dropped, with a footer appended, with a few words replaced) and unrelated articles. Their
fingerprints and sketches come from the pure `fingerprint.signatures`; the expected pairs are
every pair of nodes whose sketches agree on a whole band (`sketch.bands_agree`), estimate a
Jaccard similarity of at least the threshold and whose fingerprints are within the distance,
found by comparing every pair, so a pair the Spark join misses or reports twice shows up.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from pyspark.sql import functions as F

from simhash_udf.core import sketch
from simhash_udf.core.config import DedupeConfig, FingerprintConfig, SketchConfig
from simhash_udf.core.fingerprint import signatures
from simhash_udf.core.normalise import normalise
from simhash_udf.stages import sketch_join
from simhash_udf.stages.scratch import Stages
from simhash_udf.stages.self_join import find_near_duplicates

pytestmark = pytest.mark.spark

WORDS = [f"{a}{b}" for a in ("ka", "lo", "mi", "nu", "pe", "ra", "si", "to", "vu", "ze") for b in
         ("bar", "cen", "dor", "fal", "gim", "hul", "jot", "kes", "lum", "mon", "nix", "pol")]


def _article(rng: random.Random, paragraphs: int = 5, words: int = 60) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(words)) + "." for _ in range(paragraphs)]


def _families(seed: int, families: int, unrelated: int) -> list[str]:
    """Originals and their edited copies, plus unrelated articles (raw, not normalised)."""
    rng = random.Random(seed)
    texts = []
    footer = "subscribe to our newsletter for the latest stories privacy policy terms of use contact us"
    for _ in range(families):
        paragraphs = _article(rng)
        texts.append("\n".join(paragraphs))
        texts.append("\n".join(paragraphs[:2] + paragraphs[3:]))  # a paragraph dropped
        texts.append("\n".join(paragraphs) + "\n" + footer)  # a footer appended
        edited = [p.split(" ") for p in paragraphs]
        for _ in range(6):
            para = rng.randrange(len(edited))
            edited[para][rng.randrange(len(edited[para]))] = rng.choice(WORDS)
        texts.append("\n".join(" ".join(p) for p in edited))  # a few words replaced
    texts += ["\n".join(_article(rng)) for _ in range(unrelated)]
    return texts


def _nodes(texts: list[str], config: SketchConfig) -> tuple[np.ndarray, np.ndarray]:
    """Distinct fingerprints (uint64) and their sketches, as the job's nodes."""
    found = signatures([normalise(t) for t in texts], FingerprintConfig(), config)
    keep = found.has_fingerprint & found.has_sketch
    fps, first = np.unique(found.fingerprint[keep].view(np.uint64), return_index=True)
    return fps, found.sketch[keep][first]


def _brute_force(fps: np.ndarray, sketches: np.ndarray, config: SketchConfig) -> set[tuple[int, int]]:
    n = len(fps)
    i, j = np.triu_indices(n, k=1)
    distance = np.bitwise_count(fps[i] ^ fps[j])
    agree = sketch.bands_agree(sketches[i], sketches[j], config)
    estimate = sketch.estimated_jaccard(sketches[i], sketches[j])
    keep = agree & (estimate >= config.jaccard) & (distance <= config.max_distance)
    signed = fps.view(np.int64)
    return {(min(int(signed[a]), int(signed[b])), max(int(signed[a]), int(signed[b])))
            for a, b in zip(i[keep], j[keep])}


def _frame(spark, fps: np.ndarray, sketches: np.ndarray):
    rows = [(int(f), sketch.sketch_bytes(s)) for f, s in zip(fps.view(np.int64), sketches)]
    return spark.createDataFrame(rows, "fingerprint long, sketch binary")


def _found_by_shuffles(nodes, config, hot_size=sketch_join.HOT_BUCKET_SIZE):
    """(candidate pairs, kept rows, hot buckets) by the shuffles' path."""
    candidates, hot = sketch_join.candidate_pairs(sketch_join.band_rows(nodes, config), hot_size=hot_size)
    found = sketch_join.sketch_pairs(candidates, nodes, config).collect()
    return [(r["fp_a"], r["fp_b"]) for r in candidates.collect()], found, hot.count()


def _found_in_one_task(nodes, config, hot_size=sketch_join.HOT_BUCKET_SIZE):
    """(candidate pairs, kept rows, hot buckets) by `route_in_one_task`, without band pairs."""
    rows = sketch_join.route_in_one_task(nodes, config, hot_size=hot_size).collect()
    assert len({r["hot_buckets"] for r in rows}) <= 1, "one count, on every row"
    assert all(r["candidate"] and not r["band_pair"] for r in rows)
    return [(r["fp_a"], r["fp_b"]) for r in rows], [r for r in rows if r["kept"]], rows[0]["hot_buckets"] if rows else 0


ROUTES = {"shuffles": _found_by_shuffles, "one task": _found_in_one_task}


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("config", [SketchConfig(), SketchConfig(jaccard=0.6, max_distance=64, bands=16, rows=8)],
                         ids=["defaults", "looser"])
def test_the_sketch_route_finds_exactly_the_brute_force_pairs(spark, config, route):
    fps, sketches = _nodes(_families(11, families=40, unrelated=60), config)
    expected = _brute_force(fps, sketches, config)
    nodes = _frame(spark, fps, sketches)
    candidates, found, hot = ROUTES[route](nodes, config)
    assert len(candidates) == len(set(candidates)), "each candidate once"
    got = [(r["fp_a"], r["fp_b"]) for r in found]
    assert len(got) == len(set(got)), "each pair once"
    assert set(got) == expected
    assert hot == 0
    # The test could fail: the route finds pairs the band join at k = 3 would not.
    beyond = [r for r in found if r["distance"] > 3]
    assert beyond, "pairs 4+ bits apart exist"
    for r in found:
        assert r["distance"] == int(np.bitwise_count(np.uint64(r["fp_a"] & (2**64 - 1)) ^ np.uint64(r["fp_b"] & (2**64 - 1))))
        assert r["jaccard"] >= config.jaccard


def test_a_hot_bucket_is_paired_with_its_smallest_fingerprint(spark):
    config = SketchConfig()
    rng = np.random.default_rng(3)
    sketches = rng.integers(0, 2**16, size=(6, config.size)).astype(np.uint16)
    sketches[:5, : config.rows] = sketches[0, : config.rows]  # five nodes share band 0
    fps = np.array([40, 10, 30, 20, 50, 60], dtype=np.uint64)
    rows = sketch_join.band_rows(_frame(spark, fps, sketches), config)
    candidates, hot = sketch_join.candidate_pairs(rows, hot_size=4)
    assert sorted((r["fp_a"], r["fp_b"]) for r in candidates.collect()) == [(10, 20), (10, 30), (10, 40), (10, 50)]
    assert [(r["band"], r["size"], r["anchor"]) for r in hot.collect()] == [(0, 5, 10)]
    everything, hot = sketch_join.candidate_pairs(rows, hot_size=5)
    assert everything.count() == 10 and hot.count() == 0


def test_in_one_task_a_hot_bucket_is_paired_with_its_smallest_fingerprint_and_counted(spark):
    config = SketchConfig()
    rng = np.random.default_rng(3)
    sketches = rng.integers(0, 2**16, size=(6, config.size)).astype(np.uint16)
    sketches[:5, : config.rows] = sketches[0, : config.rows]  # five nodes share band 0
    # Negative fingerprints too: the smallest is the smallest signed long, as Spark orders them.
    fps = np.array([40, -10, 30, 20, 50, 60], dtype=np.int64)
    nodes = _frame(spark, fps.view(np.uint64), sketches)
    candidates, _, hot = _found_in_one_task(nodes, config, hot_size=4)
    assert sorted(candidates) == [(-10, 20), (-10, 30), (-10, 40), (-10, 50)]
    assert hot == 1
    candidates, _, hot = _found_in_one_task(nodes, config, hot_size=5)
    assert len(candidates) == 10 and hot == 0
    assert _found_in_one_task(nodes.limit(0), config) == ([], [], 0)


def test_in_one_task_the_band_pairs_get_their_estimate_as_with_jaccard_gives_it(spark):
    config = SketchConfig()
    fps, sketches = _nodes(_families(13, families=10, unrelated=10), config)
    nodes = _frame(spark, fps, sketches)
    signed = sorted(int(f) for f in fps.view(np.int64))
    _, found, _ = _found_by_shuffles(nodes, config)
    kept = sorted((r["fp_a"], r["fp_b"]) for r in found)
    # Band pairs: two the route keeps as well, two nodes it does not pair, and pairs with an
    # end that has no sketch (a short text's fingerprint), either end.
    outside = signed[0] - 1
    band = sorted({*kept[:2], (signed[1], signed[-1]), (signed[2], signed[-2]), (outside, signed[3]),
                   (signed[4], signed[-1] + 1)})
    band_pairs = spark.createDataFrame([(a, b, 3) for a, b in band], "fp_a long, fp_b long, distance int")
    expected = sketch_join.with_jaccard(band_pairs, nodes).collect()
    rows = sketch_join.route_in_one_task(nodes, config, band_pairs).collect()
    got = {(r["fp_a"], r["fp_b"]): r for r in rows}
    assert len(got) == len(rows), "each pair once"
    assert {p for p, r in got.items() if r["band_pair"]} == set(band)
    assert {p for p, r in got.items() if r["kept"]} == set(kept)
    for r in expected:
        mine = got[(r["fp_a"], r["fp_b"])]
        assert mine["jaccard"] == r["jaccard"]  # the same doubles, or both null
    assert got[(outside, signed[3])]["jaccard"] is None and got[(signed[4], signed[-1] + 1)]["jaccard"] is None
    assert not got[(signed[1], signed[-1])]["candidate"]


def test_with_jaccard_is_null_without_two_sketches(spark):
    config = SketchConfig()
    rng = np.random.default_rng(4)
    sketches = rng.integers(0, 2**16, size=(2, config.size)).astype(np.uint16)
    nodes = _frame(spark, np.array([1, 2], dtype=np.uint64), sketches)
    pairs = spark.createDataFrame([(1, 2, 5), (1, 3, 6)], "fp_a long, fp_b long, distance int")
    got = {(r["fp_a"], r["fp_b"]): r["jaccard"] for r in sketch_join.with_jaccard(pairs, nodes).collect()}
    assert got[(1, 3)] is None
    assert got[(1, 2)] == pytest.approx(float(sketch.estimated_jaccard(sketches[:1], sketches[1:])[0]))


@pytest.mark.slow
def test_the_finder_adds_the_sketch_routes_pairs_beyond_k_and_nothing_with_it_off(spark):
    texts = _families(5, families=6, unrelated=6)
    docs = spark.createDataFrame(list(enumerate(texts)), "id long, text string")
    on = find_near_duplicates(docs, DedupeConfig())
    off = find_near_duplicates(docs, DedupeConfig(sketch=SketchConfig(jaccard=None)))
    pairs_on = {(r["id_a"], r["id_b"]): r for r in on.pairs.collect()}
    pairs_off = {(r["id_a"], r["id_b"]): r for r in off.pairs.collect()}
    assert set(pairs_off) <= set(pairs_on)
    assert all(r["jaccard"] is None for r in pairs_off.values())
    added = set(pairs_on) - set(pairs_off)
    assert added and all(pairs_on[p]["distance"] > 3 for p in added)
    # Every pair the route adds is within one family (ids 4f .. 4f + 3), never an unrelated text.
    assert all(a // 4 == b // 4 and b < 4 * 6 for a, b in added)
    assert on.join_stats["sketch"]["pairs_beyond_k"] == len({(a, b) for a, b in added})
    clusters_on = on.clusters.where(F.col("status") == "near_duplicate").count()
    assert clusters_on > off.clusters.where(F.col("status") == "near_duplicate").count()


@pytest.mark.slow
def test_the_finder_finds_the_same_pairs_and_counts_in_one_task_as_by_shuffles(spark, monkeypatch):
    texts = _families(7, families=8, unrelated=8)
    docs = spark.createDataFrame(list(enumerate(texts)), "id long, text string")
    one_task_stages = Stages()
    in_one_task = find_near_duplicates(docs, DedupeConfig(), one_task_stages)
    assert "sketch_candidates" in one_task_stages.rows
    assert "sketch_verify" not in one_task_stages.rows and "jaccard" not in one_task_stages.rows
    monkeypatch.setattr(sketch_join, "ONE_TASK_NODES", 0)
    stages = Stages()
    by_shuffles = find_near_duplicates(docs, DedupeConfig(), stages)
    assert "sketch_verify" in stages.rows, "the shuffles' path ran"
    assert sorted(in_one_task.pairs.collect()) == sorted(by_shuffles.pairs.collect())
    assert in_one_task.join_stats["sketch"] == by_shuffles.join_stats["sketch"]
    assert in_one_task.join_stats["sketch"]["pairs_beyond_k"] > 0


def test_sketches_are_read_from_the_arrow_buffers_as_from_their_bytes():
    import pyarrow as pa

    rng = np.random.default_rng(5)
    sketches = rng.integers(0, 2**16, size=(7, 16)).astype(np.uint16)
    column = pa.array([sketch.sketch_bytes(s) for s in sketches], type=pa.binary())
    for part in (column, column.slice(2, 4), column.slice(7)):
        expected = sketch.from_bytes(part.to_pylist())
        got = sketch_join._sketch_values(part)
        assert got.shape == expected.shape and np.array_equal(got, expected)
    with pytest.raises(ValueError):
        sketch_join._sketch_values(pa.array([b"\x01\x02", b"\x01\x02\x03\x04"], type=pa.binary()))
