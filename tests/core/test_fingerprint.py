"""Pure tests of `simhash_udf.core.fingerprint`: features, weights and the 64-bit simhash (no Spark)."""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

import simhash_udf.core.fingerprint as fp_module
from simhash_udf.core.config import FingerprintConfig
from simhash_udf.core.fingerprint import (
    feature_hash,
    fingerprint,
    fingerprints,
    hamming,
    simhash_from_hashes,
    weighted_features,
)
from simhash_udf.core.normalise import normalise

ROOT = Path(__file__).resolve().parents[2]
MASK64 = (1 << 64) - 1

# A made-up vocabulary of pseudo-words, fixed by its seed, for long texts with known overlap.
_VOCAB_RNG = random.Random(20240607)
VOCAB = [
    "".join(_VOCAB_RNG.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(_VOCAB_RNG.randint(3, 9)))
    for _ in range(5000)
]


def random_text(seed: int, n_words: int = 400) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(VOCAB) for _ in range(n_words))


def reference_simhash(hashes: list[int], weights: list[float]) -> int:
    """Charikar's simhash written out bit by bit: the unsigned 64-bit result."""
    value = 0
    for bit in range(64):
        total = 0.0
        for h, w in zip(hashes, weights):
            total += w if (h >> bit) & 1 else -w
        if total > 0:
            value |= 1 << bit
    return value


# --- feature_hash ------------------------------------------------------------------------


def test_feature_hash_of_empty_is_the_xxh3_spec_value() -> None:
    # XXH3_64bits of zero bytes with seed 0, from the xxHash specification's test vectors.
    assert feature_hash("") == 0x2D06800538D394C2


@pytest.mark.parametrize("feature", ["a", "hello", "北京", "naïve", "ab\x1fc", "x" * 300])
def test_feature_hash_matches_reference_xxh3(feature: str) -> None:
    expected = int(xxhash.xxh3_64(feature.encode("utf-8")).hexdigest(), 16)
    assert feature_hash(feature) == expected
    assert 0 <= feature_hash(feature) <= MASK64


# --- weighted_features -------------------------------------------------------------------


def test_binary_weights_count_each_distinct_feature_once() -> None:
    config = FingerprintConfig(tokenizer="word", weighting="binary")
    assert weighted_features("b a b c b", config) == {"b": 1.0, "a": 1.0, "c": 1.0}


def test_tf_weights_are_counts() -> None:
    config = FingerprintConfig(tokenizer="word", weighting="tf")
    assert weighted_features("b a b c b", config) == {"b": 3.0, "a": 1.0, "c": 1.0}


@pytest.fixture(scope="module")
def jieba_reference_idf():
    """jieba's own loader of its IDF table (what `jieba.analyse.extract_tags` uses)."""
    import jieba.analyse

    return jieba.analyse.default_tfidf


def test_tfidf_weights_use_jiebas_idf_table_and_its_median(jieba_reference_idf) -> None:
    reference = jieba_reference_idf
    config = FingerprintConfig(tokenizer="jieba", weighting="tfidf")
    weights = weighted_features("北京 北京 天安门 龘", config)
    assert set(weights) == {"北京", "天安门", "龘"}
    assert weights["北京"] == pytest.approx(2 * reference.idf_freq["北京"])
    assert weights["天安门"] == pytest.approx(reference.idf_freq["天安门"])
    assert "龘" not in reference.idf_freq
    assert weights["龘"] == pytest.approx(reference.median_idf)


def test_tfidf_weights_of_english_words_follow_their_frequency() -> None:
    """jieba's table has no English: wordfreq's English list makes function words light."""
    import wordfreq

    config = FingerprintConfig(tokenizer="word", weighting="tfidf")
    weights = weighted_features("the the harbour qqzzxxunknown", config)
    assert weights["the"] == pytest.approx(-2 * math.log(wordfreq.word_frequency("the", "en")), rel=1e-3)
    assert weights["harbour"] == pytest.approx(-math.log(wordfreq.word_frequency("harbour", "en")), rel=1e-3)
    assert weights["the"] / 2 < weights["harbour"] < weights["qqzzxxunknown"]


def test_tfidf_weight_of_an_ngram_is_count_times_mean_idf(jieba_reference_idf) -> None:
    idf = jieba_reference_idf.idf_freq
    config = FingerprintConfig(tokenizer="jieba", weighting="tfidf", ngram=2)
    weights = weighted_features("北京 天安门 北京 天安门", config)
    pairs = {tuple(f.split(fp_module._JOIN)): w for f, w in weights.items()}
    assert pairs[("北京", "天安门")] == pytest.approx(2 * (idf["北京"] + idf["天安门"]) / 2)
    assert pairs[("天安门", "北京")] == pytest.approx((idf["北京"] + idf["天安门"]) / 2)
    assert len(pairs) == 2


def test_ngram_features_do_not_collide_across_token_boundaries() -> None:
    config = FingerprintConfig(tokenizer="word", weighting="binary", ngram=2)
    left = weighted_features("ab c", config)
    right = weighted_features("a bc", config)
    assert len(left) == len(right) == 1
    assert not set(left) & set(right)
    assert {feature_hash(f) for f in left} != {feature_hash(f) for f in right}


def test_max_chars_limits_what_is_fingerprinted() -> None:
    prefix = random_text(1, 60) + " "
    text = prefix + random_text(2, 60)
    limited = FingerprintConfig(max_chars=len(prefix))
    assert fingerprint(text, limited) == fingerprint(prefix, FingerprintConfig())
    assert fingerprint(text, FingerprintConfig()) != fingerprint(prefix, FingerprintConfig())


# --- weighting modes in the fingerprint --------------------------------------------------


def test_tf_lets_a_repeated_word_dominate_binary_does_not() -> None:
    others = " ".join(VOCAB[1:10])  # nine distinct words
    text = f"{VOCAB[0]} " * 100 + others
    dominant = feature_hash(VOCAB[0])
    expected = dominant - (1 << 64) if dominant >> 63 else dominant
    # With tf, weight 100 outweighs the nine other features on every bit.
    assert fingerprint(text, FingerprintConfig(tokenizer="word", weighting="tf")) == expected
    # With binary, the repetitions count once: same as the word appearing once.
    binary = FingerprintConfig(tokenizer="word", weighting="binary")
    assert fingerprint(text, binary) == fingerprint(f"{VOCAB[0]} {others}", binary)
    assert fingerprint(text, binary) != expected


def test_tfidf_downweights_common_chinese_words(jieba_reference_idf) -> None:
    idf = jieba_reference_idf.idf_freq
    config = FingerprintConfig(tokenizer="jieba", weighting="tfidf")
    weights = weighted_features("的 的 量子力学", config)
    assert idf["的"] < idf["量子力学"]
    assert weights["的"] < weights["量子力学"]  # twice as frequent, still lighter
    tf = weighted_features("的 的 量子力学", FingerprintConfig(tokenizer="jieba", weighting="tf"))
    assert tf["的"] > tf["量子力学"]


# --- determinism -------------------------------------------------------------------------

DETERMINISM_TEXTS = [
    random_text(11),
    normalise("我爱北京天安门，天安门上太阳升。今天天气很好，我们一起去公园散步，看看花草树木。"),
    normalise("Near-duplicate detection with SimHash: Charikar 2002, Manku et al. 2007. " * 3),
]
DETERMINISM_CONFIGS = [
    FingerprintConfig(),
    FingerprintConfig(tokenizer="char", ngram=3, weighting="tf", min_features=1),
]


def test_every_call_in_a_process_gives_the_definitions_value() -> None:
    """Each of three calls (the later ones after the first has filled any cache: the IDF
    table, the segmenter) equals Charikar's simhash written out from the features' xxh3
    hashes and weights, not merely the previous call."""
    for config in DETERMINISM_CONFIGS:
        expected = []
        for text in DETERMINISM_TEXTS:
            feats = weighted_features(text, config)
            expected.append(reference_simhash([feature_hash(f) for f in feats], list(feats.values())))
        for _ in range(3):
            values, ok, _ = fingerprints(list(DETERMINISM_TEXTS), config)
            assert ok.all()
            assert [int(v) & MASK64 for v in values] == expected


_SUBPROCESS = textwrap.dedent(
    """
    import json, sys
    from simhash_udf.core.config import FingerprintConfig
    from simhash_udf.core.fingerprint import fingerprints
    texts = json.loads(sys.argv[1])
    configs = [FingerprintConfig(), FingerprintConfig(tokenizer="char", ngram=3,
               weighting="tf", min_features=1)]
    print(json.dumps({
        "python_hash": hash("simhash"),
        "fingerprints": [[int(v) for v in fingerprints(texts, c)[0]] for c in configs],
    }))
    """
)


def test_fingerprints_are_identical_across_processes_with_different_hash_seeds() -> None:
    seed = "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"
    proc = subprocess.run(
        [sys.executable, "-c", _SUBPROCESS, json.dumps(DETERMINISM_TEXTS)],
        cwd=ROOT,
        env=dict(os.environ, PYTHONHASHSEED=seed),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    # The two processes really do hash differently: Python's hash() would break this test.
    assert result["python_hash"] != hash("simhash")
    here = [[int(v) for v in fingerprints(DETERMINISM_TEXTS, c)[0]] for c in DETERMINISM_CONFIGS]
    assert result["fingerprints"] == here


# --- similarity behaviour ----------------------------------------------------------------


@pytest.mark.parametrize("weighting", ["tfidf", "tf", "binary"])
def test_one_changed_word_is_close_unrelated_texts_are_far(weighting: str) -> None:
    config = FingerprintConfig(weighting=weighting)
    originals, edited, unrelated = [], [], []
    for seed in range(30):
        text = random_text(seed)
        words = text.split()
        words[random.Random(seed).randrange(len(words))] = "zzzreplacedword"
        originals.append(text)
        edited.append(" ".join(words))
        unrelated.append(random_text(10_000 + seed))
    a, ok_a, _ = fingerprints(originals, config)
    b, ok_b, _ = fingerprints(edited, config)
    c, ok_c, _ = fingerprints(unrelated, config)
    assert ok_a.all() and ok_b.all() and ok_c.all()
    near = [hamming(int(x), int(y)) for x, y in zip(a, b)]
    far = [hamming(int(x), int(z)) for x, z in zip(a, c)]
    # One feature in ~350 flips a bit only where that bit's sum was near zero.
    assert np.mean(near) <= 3
    assert max(near) <= 8
    # Independent texts behave like independent random 64-bit values: Binomial(64, 1/2).
    assert 28 <= np.mean(far) <= 36
    assert min(far) >= 12 and max(far) <= 52
    assert max(near) < min(far)


def test_traditional_and_simplified_copies_get_the_same_fingerprint() -> None:
    traditional = "我愛北京天安門。這是一個關於網頁重複檢測的測試，請不要擔心。我們學習中文，也學習電腦。"
    simplified = "我爱北京天安门。这是一个关于网页重复检测的测试，请不要担心。我们学习中文，也学习电脑。"
    config = FingerprintConfig()
    a = fingerprint(normalise(traditional), config)
    assert a is not None
    assert a == fingerprint(normalise(simplified), config)


# --- texts without a fingerprint ---------------------------------------------------------


def test_empty_and_short_texts_have_no_fingerprint() -> None:
    texts = ["", None, "   ", "one two", "你好", random_text(3)]
    values, ok, n_features = fingerprints(texts, FingerprintConfig(min_features=8))
    assert ok.tolist() == [False, False, False, False, False, True]
    assert n_features.tolist()[:5] == [0, 0, 0, 2, 1]
    assert fingerprint("") is None
    assert fingerprint("one two", FingerprintConfig(min_features=8)) is None
    assert fingerprint("one two") is None  # below the default min_features (4)
    assert fingerprint("one two three four") is not None
    assert fingerprint(random_text(3), FingerprintConfig(min_features=8)) == int(values[5])


def test_unrelated_short_texts_never_match_through_a_fingerprint() -> None:
    # Whatever value sits in the fingerprint column of a text without features, the flag
    # is what keeps it out of the join: two unrelated empty texts must both be unflagged.
    _, ok, _ = fingerprints(["", "", "!!!", "???", "a"], FingerprintConfig(min_features=1))
    assert ok.tolist() == [False, False, False, False, True]


@pytest.mark.parametrize("min_features", [1, 5, 8, 20])
def test_min_features_boundary(min_features: int) -> None:
    config = FingerprintConfig(tokenizer="word", weighting="binary", min_features=min_features)
    exactly = " ".join(VOCAB[:min_features])
    one_short = " ".join(VOCAB[: min_features - 1])
    repeated = " ".join([VOCAB[0]] * (min_features + 5))  # many tokens, one feature
    _, ok, n = fingerprints([exactly, one_short, repeated], config)
    assert n.tolist() == [min_features, min_features - 1, 1]
    assert ok.tolist() == [True, False, min_features == 1]


# --- simhash_from_hashes against the reference -------------------------------------------

_DOCS = st.lists(
    st.lists(
        st.tuples(st.integers(0, MASK64), st.integers(0, 1000).map(float)),
        max_size=8,
    ),
    max_size=6,
)


def _flatten(docs: list[list[tuple[int, float]]]) -> tuple[np.ndarray, np.ndarray, list[int]]:
    hashes = np.array([h for doc in docs for h, _ in doc], dtype=np.uint64)
    weights = np.array([w for doc in docs for _, w in doc], dtype=np.float64)
    return hashes, weights, [len(doc) for doc in docs]


@given(_DOCS)
@settings(max_examples=100, deadline=None)
def test_simhash_from_hashes_matches_reference(docs: list[list[tuple[int, float]]]) -> None:
    hashes, weights, lengths = _flatten(docs)
    expected = [reference_simhash([h for h, _ in d], [w for _, w in d]) for d in docs]
    # Chunks of 1, 2, 3 and 5 features put chunk boundaries inside documents and
    # between them, chunks of 1 and 2 documents between documents; the default chunks
    # hold the whole batch.
    for chunk in (1, 2, 3, 5, fp_module._CHUNK):
        for doc_chunk in (1, 2, fp_module._DOC_CHUNK):
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(fp_module, "_CHUNK", chunk)
                patch.setattr(fp_module, "_DOC_CHUNK", doc_chunk)
                result = simhash_from_hashes(hashes, weights, lengths)
            assert result.dtype == np.int64
            assert result.shape == (len(docs),)
            assert [int(v) & MASK64 for v in result] == expected, f"chunk={chunk}, doc_chunk={doc_chunk}"


def test_simhash_with_featureless_documents_in_the_middle_of_a_batch() -> None:
    rng = random.Random(5)
    docs = [
        [(rng.getrandbits(64), float(rng.randint(1, 9))) for _ in range(7)],
        [],
        [(rng.getrandbits(64), float(rng.randint(1, 9))) for _ in range(4)],
        [],
        [],
        [(rng.getrandbits(64), float(rng.randint(1, 9))) for _ in range(5)],
    ]
    hashes, weights, lengths = _flatten(docs)
    expected = [reference_simhash([h for h, _ in d], [w for _, w in d]) for d in docs]
    for chunk in (2, 3, 4, fp_module._CHUNK):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(fp_module, "_CHUNK", chunk)
            result = simhash_from_hashes(hashes, weights, lengths)
        assert [int(v) & MASK64 for v in result] == expected
        assert result[1] == result[3] == result[4] == 0


def test_ties_clear_the_bit() -> None:
    h = 0x0123_4567_89AB_CDEF
    hashes = np.array([h, h ^ MASK64], dtype=np.uint64)  # every bit set in exactly one
    assert simhash_from_hashes(hashes, np.array([2.0, 2.0]), [2]).tolist() == [0]
    # Break the tie and the heavier feature wins on every bit.
    assert int(simhash_from_hashes(hashes, np.array([2.0, 3.0]), [2])[0]) & MASK64 == h ^ MASK64


def test_empty_batch() -> None:
    values, ok, n = fingerprints([], FingerprintConfig())
    assert values.shape == ok.shape == n.shape == (0,)


# --- the sign bit ------------------------------------------------------------------------


def test_bit_63_is_the_sign_of_the_int64() -> None:
    hashes = np.array([1 << 63, (1 << 63) | 1, 1], dtype=np.uint64)
    value = int(simhash_from_hashes(hashes, np.array([1.0, 1.0, 1.0]), [3])[0])
    assert value == -(1 << 63) + 1  # bits 63 and 0 set, read as signed
    assert hamming(value, 0) == 2
    assert hamming(value, (1 << 63) | 1) == 0  # the same 64 bits given unsigned
    assert hamming(value, 1) == 1


@pytest.mark.parametrize(
    ("a", "b", "distance"),
    [
        (0, 0, 0),
        (-1, 0, 64),
        (-1, MASK64, 0),
        (-(1 << 63), 1 << 63, 0),
        (-(1 << 63), 0, 1),
        (-2, 1, 64),  # 0xFF..FE vs 0x00..01
        (0b1011, 0b0110, 3),
        (-1, 1 << 62, 63),
    ],
)
def test_hamming_signed_and_unsigned(a: int, b: int, distance: int) -> None:
    assert hamming(a, b) == distance
    assert hamming(b, a) == distance


@given(st.integers(-(1 << 63), (1 << 63) - 1), st.integers(-(1 << 63), (1 << 63) - 1))
@settings(max_examples=200)
def test_hamming_matches_numpy_on_int64(a: int, b: int) -> None:
    xor = np.array([a], dtype=np.int64).view(np.uint64) ^ np.array([b], dtype=np.int64).view(
        np.uint64
    )
    assert hamming(a, b) == int(np.bitwise_count(xor)[0])
    assert hamming(a, b) == hamming(a & MASK64, b & MASK64)


def test_real_fingerprints_use_the_sign_bit_consistently() -> None:
    texts = [random_text(100 + i, 60) for i in range(40)]
    config = FingerprintConfig(tokenizer="word", weighting="tf")
    values, ok, _ = fingerprints(texts, config)
    assert ok.all()
    expected = []
    for text in texts:
        feats = weighted_features(text, config)
        expected.append(reference_simhash([feature_hash(f) for f in feats], list(feats.values())))
    assert [int(v) & MASK64 for v in values] == expected
    negative = [int(v) < 0 for v in values]
    assert negative == [bool(e >> 63) for e in expected]
    assert any(negative) and not all(negative)  # both halves are exercised


# --- batch vs one at a time --------------------------------------------------------------


def test_batch_equals_one_at_a_time() -> None:
    texts = [
        random_text(1),
        "",
        normalise("今天天气很好，我们一起去公园散步，看看花草树木，听听鸟儿唱歌。"),
        None,
        "too short",
        random_text(2, 50),
        random_text(1),  # a repeat inside the batch
    ]
    config = FingerprintConfig(min_features=8)
    values, ok, _ = fingerprints(texts, config)
    for text, value, has in zip(texts, values, ok):
        single = fingerprint(text, config) if text is not None else None
        if has:
            assert single == int(value)
        else:
            assert single is None
    assert ok.tolist() == [True, False, True, False, False, True, True]
    assert values[0] == values[6]


def test_idf_and_logtfidf_weights() -> None:
    """idf: each distinct feature once at its IDF; logtfidf: (1 + ln count) x IDF, so a word
    said 50 times weighs (1 + ln 50) ~ 4.9 times its IDF, not 50 times."""
    from simhash_udf.core.idf import idf

    text = " ".join(["harbour"] * 50 + ["the", "crane"])
    by_idf = weighted_features(text, FingerprintConfig(tokenizer="word", weighting="idf"))
    by_log = weighted_features(text, FingerprintConfig(tokenizer="word", weighting="logtfidf"))
    assert by_idf == pytest.approx({"harbour": idf("harbour"), "the": idf("the"), "crane": idf("crane")})
    assert by_log["harbour"] == pytest.approx((1 + math.log(50)) * idf("harbour"))
    assert by_log["the"] == pytest.approx(idf("the")) and idf("the") < idf("crane")
