"""The vectorised batch path of `fingerprints` against the one-text definition.

`weighted_features` (a Counter of n-grams, an IDF per feature) with `feature_hash` and a
bit-by-bit simhash is the definition; `fingerprints` numbers a batch's features with Arrow,
counts them with numpy and sums bits through byte histograms. They must agree exactly, for
every tokenizer, n and weighting, in any batch (no Spark).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import simhash_udf.core.fingerprint as fp_module
from simhash_udf.core.config import WEIGHTINGS, FingerprintConfig, SketchConfig
from simhash_udf.core.fingerprint import feature_hash, fingerprints, signatures, weighted_features
from simhash_udf.core.normalise import normalise

ROOT = Path(__file__).resolve().parents[2]
MASK64 = (1 << 64) - 1


def reference(text: str | None, config: FingerprintConfig) -> tuple[int, int]:
    """(unsigned simhash, distinct features) of one text, bit by bit, in fixed point as the
    library documents (weights rounded to 1/1024, ties clear)."""
    features = weighted_features(text, config) if text else {}
    value = 0
    for bit in range(64):
        total = 0
        for feature, weight in features.items():
            fixed = round(weight * 1024)
            total += fixed if (feature_hash(feature) >> bit) & 1 else -fixed
        if total > 0:
            value |= 1 << bit
    return value, len(features)


def _sample_texts() -> list[str]:
    texts = []
    for line in (ROOT / "examples" / "sample.jsonl").read_text("utf-8").splitlines():
        texts.append(normalise(json.loads(line).get("text") or ""))
    return texts


def _check(texts: list[str | None], config: FingerprintConfig) -> None:
    values, ok, n_features = fingerprints(texts, config)
    assert values.dtype == np.int64 and n_features.dtype == np.int32
    for i, text in enumerate(texts):
        expected, distinct = reference(text, config)
        assert int(n_features[i]) == distinct, i
        assert bool(ok[i]) == (distinct >= config.min_features), i
        if distinct:
            assert int(values[i]) & MASK64 == expected, (i, text[:40] if text else text)


@pytest.mark.parametrize("weighting", WEIGHTINGS)
@pytest.mark.parametrize(("tokenizer", "ngram"), [("auto", 1), ("auto", 2), ("auto", 3), ("char", 2), ("word", 1), ("jieba", 1)])
def test_batch_equals_the_definition_on_the_sample(tokenizer: str, ngram: int, weighting: str) -> None:
    texts = _sample_texts()
    assert len(texts) == 49
    _check(texts, FingerprintConfig(tokenizer=tokenizer, ngram=ngram, weighting=weighting))


def test_batch_with_empty_and_missing_texts_and_repeats() -> None:
    sample = _sample_texts()
    texts = [None, "", sample[0], "a", sample[1], None, sample[0], "", sample[2]]
    _check(texts, FingerprintConfig(min_features=1))
    values, _, _ = fingerprints(texts, FingerprintConfig())
    assert values[2] == values[6]


def test_small_chunks_split_documents_and_batches_alike() -> None:
    """Chunks of a few features or documents put boundaries inside and between documents."""
    texts = _sample_texts()
    config = FingerprintConfig(ngram=2, weighting="logtfidf")
    expected = fingerprints(texts, config)[0].tolist()
    for chunk, doc_chunk in ((1, 1), (7, 2), (50, 3), (1 << 17, 5)):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(fp_module, "_CHUNK", chunk)
            patch.setattr(fp_module, "_DOC_CHUNK", doc_chunk)
            assert fingerprints(texts, config)[0].tolist() == expected, (chunk, doc_chunk)


def test_the_feature_cache_does_not_carry_weights_between_settings() -> None:
    text = _sample_texts()[3]
    for weighting in ("binary", "idf", "binary", "logtfidf", "tf"):
        config = FingerprintConfig(weighting=weighting, min_features=1)
        assert int(fingerprints([text], config)[0][0]) & MASK64 == reference(text, config)[0]


def test_a_full_cache_is_cleared_not_grown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fp_module, "_FEATURE_CACHE_SIZE", 50)
    monkeypatch.setattr(fp_module, "_feature_cache", {})
    config = FingerprintConfig()
    texts = _sample_texts()
    first = fingerprints(texts, config)[0].tolist()
    for i, text in enumerate(texts):
        value, _, distinct = fingerprints([text], config)
        assert int(value[0]) == first[i]
        assert len(fp_module._feature_cache) <= max(50, int(distinct[0]))


_WORDS = ["北京", "天安门", "的", "量子", "力学", "harbour", "the", "crane", "龘", "㐀", "2024", "été"]


@given(st.lists(st.lists(st.sampled_from(_WORDS), max_size=40).map(" ".join), max_size=8),
       st.sampled_from(WEIGHTINGS), st.integers(1, 3))
@settings(max_examples=150, deadline=None)
def test_batch_equals_the_definition_on_random_batches(texts: list[str], weighting: str, ngram: int) -> None:
    _check(texts, FingerprintConfig(ngram=ngram, weighting=weighting, min_features=1))


def test_long_documents_with_many_repeats() -> None:
    """Counts in the hundreds (logtfidf's log table) and a document longer than a chunk."""
    rng = random.Random(7)
    long_text = " ".join(rng.choice(_WORDS) for _ in range(5000))
    _check([long_text, _sample_texts()[5]], FingerprintConfig())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fp_module, "_CHUNK", 3)
        _check([long_text, _sample_texts()[5]], FingerprintConfig())


@pytest.mark.parametrize("ngram", [1, 2, 3])
@pytest.mark.parametrize("weighting", ["binary", "tfidf", "logtfidf"])
def test_signatures_give_the_definitions_fingerprints_and_one_sketch_for_any_n(ngram: int, weighting: str) -> None:
    """`signatures` numbers the tokens once and, with n-grams of 1, uses those numbers as the
    fingerprint's features too: its fingerprints must still be the definition's for every n
    and weighting, and its sketches (token shingles) must not depend on n or the weighting."""
    texts = _sample_texts()[:20] + [None, "", "one two"]
    config = FingerprintConfig(ngram=ngram, weighting=weighting, min_features=1)
    found = signatures(texts, config, SketchConfig(min_chars=30))
    for i, text in enumerate(texts):
        value, n_features = reference(text, config)
        assert int(found.n_features[i]) == n_features, i
        if n_features:
            assert int(found.fingerprint[i]) & MASK64 == value, i
    baseline = signatures(texts, FingerprintConfig(), SketchConfig(min_chars=30))
    assert np.array_equal(found.has_sketch, baseline.has_sketch)
    assert np.array_equal(found.sketch[found.has_sketch], baseline.sketch[baseline.has_sketch])


@given(st.lists(st.integers(0, 1 << 40), max_size=300), st.booleans())
@settings(max_examples=200, deadline=None)
def test_unique_counts_are_numpys_unique_for_any_keys(keys: list[int], document_major: bool) -> None:
    """The batch path's own unique-with-counts (a stable sort) against `np.unique`, on keys in
    any order and on keys sorted by their high bits as documents' keys come."""
    array = np.array(keys, dtype=np.int64)
    if document_major:
        array = array[np.argsort(array >> 20, kind="stable")]
    found, counts = fp_module._unique_counts(array)
    expected, expected_counts = np.unique(array, return_counts=True)
    assert np.array_equal(found, expected) and np.array_equal(counts, expected_counts)
