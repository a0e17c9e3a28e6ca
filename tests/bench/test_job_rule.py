"""bench/job_rule.py and the sketches bench/fingerprinting.py makes for it: the vectorised
sketch route against a per-pair oracle written from the rule's definition (with the library's
own `signatures` deciding which texts have a sketch), and the min_chars shortcut."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest

from bench import quality
from bench.fingerprinting import Setting, fingerprint_all, sketch_config
from bench.job_rule import looser, sketch_route
from simhash_udf.core.config import FingerprintConfig, SketchConfig
from simhash_udf.core.fingerprint import hamming, signatures

WORDS = [f"w{i}" for i in range(400)]


def corpus(seed: int) -> list[str]:
    """Texts of 20-120 random words and copies of them with 0-40% of the words replaced: long
    and short texts (min_chars 300 cuts between them), pairs on both sides of every threshold."""
    rng = random.Random(seed)
    texts = []
    for _ in range(30):
        words = [rng.choice(WORDS) for _ in range(rng.randint(20, 120))]
        texts.append(" ".join(words))
        for rate in (0.0, 0.02, 0.05, 0.1, 0.2, 0.4):
            copy = [rng.choice(WORDS) if rng.random() < rate else w for w in words]
            texts.append(" ".join(copy))
    return texts


def oracle(x: int, y: int, texts: list[str], config: SketchConfig) -> bool:
    """The rule, pair by pair: both texts have a sketch (the library decides), the sketches
    agree on every value of one band, the agreeing share less chance reaches the threshold,
    and the fingerprints are within max_distance."""
    signed = signatures([texts[x], texts[y]], FingerprintConfig(), config)
    if not (signed.has_sketch.all() and signed.has_fingerprint.all()):
        return False
    sa, sb = signed.sketch[0].tolist(), signed.sketch[1].tolist()
    band = any(sa[i * config.rows:(i + 1) * config.rows] == sb[i * config.rows:(i + 1) * config.rows]
               for i in range(config.bands))
    chance = 2.0**-16
    estimate = (sum(p == q for p, q in zip(sa, sb)) / len(sa) - chance) / (1 - chance)
    close = hamming(int(signed.fingerprint[0]), int(signed.fingerprint[1])) <= config.max_distance
    return band and estimate >= config.jaccard and close


@pytest.mark.parametrize("config", [SketchConfig(), SketchConfig(jaccard=0.6, max_distance=20),
                                    SketchConfig(shingle=2, min_chars=150, jaccard=0.85)])
def test_sketch_route_matches_the_rule_pair_by_pair(config):
    texts = corpus(7)
    fps = fingerprint_all(texts, [Setting("auto", 1, "logtfidf", (config.shingle,))], workers=1)[0]
    signed = quality.Signed(fps.values, fps.n_features, np.array([len(t) for t in texts]), fps.sketches)
    rng = random.Random(3)
    pairs = [(i, i + d) for i in range(0, len(texts), 7) for d in range(1, 7)]  # each text and its copies
    pairs += [tuple(rng.sample(range(len(texts)), 2)) for _ in range(60)]  # mostly unrelated
    a, b = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    dist = quality.hamming_many(signed.values[a], signed.values[b])
    both = np.minimum(signed.n_features[a], signed.n_features[b]) >= 4
    merged, jaccard = sketch_route(a, b, dist, both, signed.lengths, signed.sketches[config.shingle], config)
    expected = [oracle(x, y, texts, config) for x, y in pairs]
    assert merged.tolist() == expected
    assert 0 < sum(expected) < len(expected)  # both outcomes occur
    short = np.minimum(signed.lengths[a], signed.lengths[b]) < config.min_chars
    assert short.any() and np.isnan(jaccard[short]).all() and not np.isnan(jaccard[~short]).any()


def test_sketches_made_for_every_text_stand_for_any_min_chars():
    texts = corpus(11) + ["", "short text"]
    lengths = np.array([len(t) for t in texts])
    made = fingerprint_all(texts, [Setting("auto", 1, "logtfidf", (2, 3))], workers=1)[0]
    for shingle in (2, 3):
        for min_chars in (1, 150, 300):
            direct = signatures(texts, FingerprintConfig(), SketchConfig(shingle=shingle, min_chars=min_chars))
            assert direct.has_sketch.tolist() == ((lengths >= min_chars) & (lengths > 0)).tolist()
            assert np.array_equal(made.sketches[shingle][direct.has_sketch], direct.sketch[direct.has_sketch])
    plain = signatures(texts, FingerprintConfig(), sketch_config(3))
    assert np.array_equal(made.values[plain.has_fingerprint], plain.fingerprint[plain.has_fingerprint])


def test_ours_merges_through_the_sketch_route_only_when_it_is_on():
    texts = corpus(5)
    made = fingerprint_all(texts, [Setting("auto", 1, "logtfidf", (3,))], workers=1)[0]
    signed = quality.Signed(made.values, made.n_features, np.array([len(t) for t in texts]), made.sketches)
    starts = np.arange(0, len(texts), 7)
    frame = pd.DataFrame({"a": starts, "b": starts + 3, "exact": False})  # 10% of the words replaced
    on = quality.Ours(signed, "on", k=0, sketch=SketchConfig(max_distance=64))
    off = on.variant("off", sketch=None)
    scored, plain = on.score(frame), off.score(frame)
    identical = scored.dist == 0
    assert plain.merged.tolist() == identical.tolist() and plain.jaccard is None
    long_enough = np.minimum(signed.lengths[starts], signed.lengths[starts + 3]) >= 300
    # Above 0.75 a pair misses every one of 25 bands of 5 rows with chance < 0.1%: none here.
    assert scored.merged.tolist() == (identical | (long_enough & (scored.jaccard >= 0.75))).tolist()
    assert (scored.merged & ~plain.merged).any()
    assert on.variant("x", sketch=SketchConfig(jaccard=None)).score(frame).merged.tolist() == identical.tolist()


def test_one_step_looser():
    assert looser(SketchConfig()) == SketchConfig(jaccard=0.7, max_distance=14)
    assert looser(SketchConfig(max_distance=64)).max_distance == 64
    assert looser(SketchConfig(jaccard=None)) == SketchConfig(jaccard=None)
