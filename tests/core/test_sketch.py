"""MinHash sketches (`core.sketch`) against exact set arithmetic.

The oracle is the exact Jaccard similarity of the shingle sets (Python sets of tuples of
tokens, built without the module), on random and adversarial inputs: sets of controlled
overlap, tiny sets, repeated shingles, reordered shingles, one document among many in a batch.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from simhash_udf.core import sketch
from simhash_udf.core.config import ConfigError, FingerprintConfig, SketchConfig
from simhash_udf.core.fingerprint import fingerprints, signatures
from simhash_udf.core.normalise import normalise
from simhash_udf.core.tokens import tokens

SIZE = SketchConfig().size


def _sketch_of_sets(sets: list[np.ndarray]) -> np.ndarray:
    """Sketches of documents given as arrays of (already random) 64-bit shingle hashes."""
    flat = np.concatenate(sets) if sets else np.zeros(0, np.uint64)
    sketches, has = sketch.sketches_from_shingles(flat, [len(s) for s in sets], SIZE)
    assert has.tolist() == [len(s) > 0 for s in sets]
    return sketches


def _pair_with_jaccard(rng: np.random.Generator, size: int, target: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Two sets of random 64-bit values of about `size` each, with Jaccard close to target."""
    shared = int(round(2 * size * target / (1 + target)))
    own = size - shared
    values = rng.integers(0, 2**64, size=shared + 2 * own, dtype=np.uint64, endpoint=False)
    a = values[: shared + own]
    b = np.concatenate([values[:shared], values[shared + own:]])
    exact = len(set(a.tolist()) & set(b.tolist())) / len(set(a.tolist()) | set(b.tolist()))
    return a, b, exact


def test_the_estimate_is_unbiased_and_within_its_standard_error_on_random_sets():
    rng = np.random.default_rng(7)
    errors, scaled = [], []
    for _ in range(300):
        size = int(rng.integers(SIZE // 2, 20 * SIZE))  # with and without empty bins
        a, b, exact = _pair_with_jaccard(rng, size, float(rng.uniform(0.05, 0.98)))
        sa, sb = _sketch_of_sets([a, b])
        estimate = float(sketch.estimated_jaccard(sa[None], sb[None])[0])
        errors.append(estimate - exact)
        scaled.append((estimate - exact) / max(math.sqrt(exact * (1 - exact) / SIZE), 1e-3))
    errors_arr, scaled_arr = np.array(errors), np.array(scaled)
    assert abs(errors_arr.mean()) < 0.01, "no bias"
    assert np.abs(errors_arr).max() < 0.15
    # Most estimates within two standard errors of a 128-sample estimate (a binomial share).
    assert np.mean(np.abs(scaled_arr) <= 2.0) > 0.9


def test_identical_sets_estimate_one_whatever_the_order_and_repeats():
    rng = np.random.default_rng(1)
    for size in (1, 2, 5, 50, SIZE, 10 * SIZE):
        values = rng.integers(0, 2**64, size=size, dtype=np.uint64)
        shuffled = rng.permutation(np.concatenate([values, values[: max(1, size // 3)]]))
        sa, sb = _sketch_of_sets([values, shuffled])
        assert np.array_equal(sa, sb), size
        assert sketch.estimated_jaccard(sa[None], sb[None])[0] == pytest.approx(1.0, abs=1e-4)


def test_disjoint_sets_estimate_about_zero_even_when_tiny():
    rng = np.random.default_rng(2)
    estimates = []
    for size in (1, 2, 3, 10, 100, 1000):
        for _ in range(10):
            values = rng.integers(0, 2**64, size=2 * size, dtype=np.uint64)
            sa, sb = _sketch_of_sets([values[:size], values[size:]])
            estimates.append(float(sketch.estimated_jaccard(sa[None], sb[None])[0]))
    assert max(estimates) < 0.1
    assert np.mean(estimates) < 0.01


def test_a_document_without_shingles_has_no_sketch():
    sketches, has = sketch.sketches_from_shingles(np.zeros(0, np.uint64), [0, 0], SIZE)
    assert has.tolist() == [False, False]
    assert sketches.shape == (2, SIZE)


def test_a_sketch_does_not_depend_on_the_other_documents_of_its_batch():
    rng = np.random.default_rng(3)
    sets = [rng.integers(0, 2**64, size=int(n), dtype=np.uint64) for n in rng.integers(0, 400, size=30)]
    together = _sketch_of_sets(sets)
    for i, values in enumerate(sets):
        if len(values):
            assert np.array_equal(together[i], _sketch_of_sets([values])[0]), i


def _python_shingles(toks: list[str], n: int) -> set[tuple[str, ...]]:
    if len(toks) < n:
        return {tuple(toks)} if toks else set()
    return {tuple(toks[i:i + n]) for i in range(len(toks) - n + 1)}


def test_shingle_hashes_are_one_per_shingle_and_never_cross_documents():
    rng = np.random.default_rng(4)
    vocabulary = [f"w{i}" for i in range(12)]  # a small vocabulary: many repeated shingles
    docs = [[vocabulary[j] for j in rng.integers(0, len(vocabulary), size=int(n))] for n in rng.integers(0, 40, size=60)]
    token_hash = {w: np.uint64(int(rng.integers(0, 2**63)) * 2 + 1) for w in vocabulary}
    flat = np.array([token_hash[w] for d in docs for w in d], dtype=np.uint64)
    for n in (1, 2, 3, 5):
        hashes, counts = sketch.shingle_hashes(flat, [len(d) for d in docs], n)
        offsets = np.concatenate([[0], np.cumsum(counts)])
        by_shingle: dict[tuple[str, ...], int] = {}
        for i, d in enumerate(docs):
            mine = hashes[offsets[i]:offsets[i + 1]]
            expected = _python_shingles(d, n)
            assert len(set(mine.tolist())) == len(expected), (n, i)
            alone, _ = sketch.shingle_hashes(np.array([token_hash[w] for w in d], dtype=np.uint64), [len(d)], n)
            assert np.array_equal(np.sort(alone), np.sort(mine)), "independent of the neighbours"
            grams = [tuple(d[j:j + n]) for j in range(len(d) - n + 1)] if len(d) >= n else ([tuple(d)] if d else [])
            for gram, value in zip(grams, mine.tolist()):
                assert by_shingle.setdefault(gram, value) == value, "one shingle, one hash"
        assert len(set(by_shingle.values())) == len(by_shingle), "different shingles, different hashes"


def test_a_short_text_is_one_shingle_of_all_its_tokens():
    a, _ = sketch.shingle_hashes(np.array([5, 6], dtype=np.uint64), [2], 3)
    b, _ = sketch.shingle_hashes(np.array([5, 6, 0], dtype=np.uint64), [3], 3)
    c, _ = sketch.shingle_hashes(np.array([6, 5], dtype=np.uint64), [2], 3)
    assert len(a) == 1 and len(b) == 1
    assert a[0] != b[0], "a token hashed to 0 is not padding"
    assert a[0] != c[0], "order matters"


def test_bands_agree_is_band_equality():
    config = SketchConfig()
    rng = np.random.default_rng(5)
    a = rng.integers(0, 4, size=(2000, SIZE)).astype(np.uint16)  # 4 values: bands often agree
    b = rng.integers(0, 4, size=(2000, SIZE)).astype(np.uint16)
    expected = [
        any(np.array_equal(x[i * config.rows:(i + 1) * config.rows], y[i * config.rows:(i + 1) * config.rows])
            for i in range(config.bands))
        for x, y in zip(a, b)
    ]
    got = sketch.bands_agree(a, b, config).tolist()
    assert got == expected
    assert 0 < sum(got) < len(got)


def test_the_lsh_finds_similar_pairs_and_rarely_dissimilar_ones():
    """The S-curve of 25 bands x 5 rows: P(candidate) = 1 - (1 - J^5)^25, 0.99 at J = 0.7 and
    0.06 at J = 0.3; checked on sketches of random sets, not on the formula."""
    config = SketchConfig()
    rng = np.random.default_rng(6)

    def share(target: float) -> float:
        hits = 0
        for _ in range(150):
            a, b, _ = _pair_with_jaccard(rng, 1500, target)
            sa, sb = _sketch_of_sets([a, b])
            hits += bool(sketch.bands_agree(sa[None], sb[None], config)[0])
        return hits / 150

    assert share(0.8) >= 0.97
    assert share(0.2) <= 0.05


def test_signatures_give_the_fingerprints_and_sketches_of_the_exact_token_shingles():
    texts = [
        normalise("The council voted on Tuesday to build a protected bike lane along Harbor Street. " * 3),
        normalise("The council voted on Tuesday to build a protected bike lane along Harbor Street. " * 3 + "Subscribe today."),
        normalise("我爱北京天安门，天安门上太阳升。今天天气很好，我们一起去公园散步，看看花草树木。" * 4),
        "",
        None,
        "short",
    ]
    config = FingerprintConfig()
    found = signatures(texts, config, SketchConfig(min_chars=30))
    values, ok, n_features = fingerprints(texts, config)
    assert np.array_equal(found.has_fingerprint, ok)
    assert np.array_equal(found.fingerprint[ok], values[ok])
    assert np.array_equal(found.n_features, n_features)
    assert found.has_sketch.tolist() == [True, True, True, False, False, False]
    sets = [_python_shingles(tokens(t, "auto"), 3) for t in texts[:3]]
    exact = len(sets[0] & sets[1]) / len(sets[0] | sets[1])
    estimate = float(sketch.estimated_jaccard(found.sketch[:1], found.sketch[1:2])[0])
    assert abs(estimate - exact) < 0.15
    assert float(sketch.estimated_jaccard(found.sketch[:1], found.sketch[2:3])[0]) < 0.1


def test_bytes_round_trip():
    rng = np.random.default_rng(8)
    rows = rng.integers(0, 2**16, size=(3, SIZE)).astype(np.uint16)
    blobs = [sketch.sketch_bytes(r) for r in rows]
    assert all(len(b) == 2 * SIZE for b in blobs)
    assert np.array_equal(sketch.from_bytes(blobs), rows)


@pytest.mark.parametrize(
    "changes",
    [{"jaccard": 0.0}, {"jaccard": 1.5}, {"max_distance": 65}, {"size": 100}, {"bands": 30, "rows": 5},
     {"shingle": 0}, {"min_chars": 0}],
)
def test_bad_sketch_settings_are_refused(changes):
    with pytest.raises(ConfigError):
        SketchConfig(**changes)
