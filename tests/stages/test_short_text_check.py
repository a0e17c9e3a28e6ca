"""The short-text check in Spark (`simhash_udf.stages.short_text_check`): the scored pairs
against the policy's rule applied in Python, the texts of paired fingerprints, and the job with
--verify on planted short texts."""

from __future__ import annotations

import itertools
import json
import random

import pytest
from generators import VOCAB, brute_jaccard, brute_word_shingles

from simhash_udf.core.config import VerifyConfig
from simhash_udf.core.fingerprint import fingerprint, hamming
from simhash_udf.core.normalise import normalise
from simhash_udf.core.short_text_policy import jaccard, keeps, shingles


# --- the Spark transform ----------------------------------------------------------------------


@pytest.mark.spark
@pytest.mark.parametrize(
    "policy",
    [
        VerifyConfig(threshold=0.5, below_chars=30, shingle=2),
        VerifyConfig(threshold=0.3, below_chars=None, shingle=1),
        VerifyConfig(threshold=0.8, below_chars=None, shingle=3),
        VerifyConfig(threshold=None),
    ],
    ids=["0.5-below30-2", "0.3-all-1", "0.8-all-3", "off"],
)
def test_scored_pairs_equal_the_rule_applied_in_python(spark, policy):
    from simhash_udf.stages.short_text_check import kept_pairs, scored_pairs

    rng = random.Random(5)
    # Fingerprints are just keys here; fingerprint 0 carries two texts (a 64-bit collision).
    texts = {fp: [" ".join(rng.choice(VOCAB[:8]) for _ in range(rng.randint(1, 9)))] for fp in range(1, 25)}
    texts[0] = ["river stone garden window", "copper violin lantern harbor"]
    texts[25] = [" ".join(VOCAB)]  # long: never checked when below_chars is 30
    pairs = sorted({tuple(sorted(rng.sample(sorted(texts), 2))) for _ in range(80)})
    frame_texts = spark.createDataFrame([(fp, t) for fp, ts in texts.items() for t in ts], "fingerprint long, text string")
    frame_pairs = spark.createDataFrame([(a, b, 1 + (a + b) % 3) for a, b in pairs], "fp_a long, fp_b long, distance int")

    scored = {(r["fp_a"], r["fp_b"]): r for r in scored_pairs(frame_pairs, frame_texts, policy).collect()}
    kept = {(r["fp_a"], r["fp_b"], r["distance"]) for r in kept_pairs(scored_pairs(frame_pairs, frame_texts, policy)).collect()}

    assert set(scored) == set(pairs)
    expected_kept = set()
    for a, b in pairs:
        text_pairs = list(itertools.product(texts[a], texts[b]))
        checked = [policy.threshold is not None and (policy.below_chars is None or min(len(x), len(y)) < policy.below_chars) for x, y in text_pairs]
        sims = [brute_jaccard(brute_word_shingles(x, policy.shingle), brute_word_shingles(y, policy.shingle)) for x, y in text_pairs]
        keep = any(not c or s >= policy.threshold for c, s in zip(checked, sims))
        assert keep == any(keeps(x, y, policy) for x, y in text_pairs)
        row = scored[(a, b)]
        assert row["checked"] == any(checked) and row["kept"] == keep
        if any(checked):
            assert row["similarity"] == pytest.approx(max(s for c, s in zip(checked, sims) if c))
        else:
            assert row["similarity"] is None
        if keep:
            expected_kept.add((a, b, 1 + (a + b) % 3))
    assert kept == expected_kept
    if policy.threshold is not None:
        assert 0 < len(kept) < len(pairs), "the case must both keep and drop pairs"


# --- the job ----------------------------------------------------------------------------------


def _colliding_pair(k: int, threshold: float, n: int) -> tuple[str, str]:
    """Two short texts of the same words in another order (one repeated) whose fingerprints are
    within k bits while their word n-gram Jaccard is below the threshold: unigram simhash
    cannot tell them apart. Found with the library's fingerprint, so the planted collision
    follows any change of tokenizer or weights."""
    rng = random.Random(7)
    for _ in range(20_000):
        words = rng.sample(VOCAB, rng.choice([4, 5, 6]))
        other = words[:]
        rng.shuffle(other)
        other.insert(rng.randrange(len(other) + 1), rng.choice(words))
        a, b = " ".join(words), " ".join(other)
        fa, fb = fingerprint(normalise(a)), fingerprint(normalise(b))
        if fa is None or fb is None:
            continue
        if 1 <= hamming(fa, fb) <= k and jaccard(shingles(a, n), shingles(b, n)) < threshold:
            return a, b
    raise AssertionError("no colliding pair found: the search space needs widening")


def _near_copy(base: str, k: int) -> str:
    """`base` with one word (or character, for Chinese) changed, dropped or added, within k bits."""
    fb = fingerprint(normalise(base))
    han = any("\u4e00" <= c <= "\u9fff" for c in base)
    units = list(base) if han else base.split(" ")
    joiner = "" if han else " "
    for i in range(len(units) - 1, 0, -1):
        for variant in (units[:i] + units[i + 1 :], units[:i] + units[i - 1 : i] + units[i:]):
            text = joiner.join(variant)
            f = fingerprint(normalise(text))
            if f is not None and 1 <= hamming(fb, f) <= k:
                return text
    raise AssertionError(f"no near copy of {base!r} within {k} bits")


@pytest.mark.slow
@pytest.mark.spark
def test_job_separates_colliding_short_texts_and_keeps_copies(spark, dedupe_main, tmp_path):
    k, policy = 3, VerifyConfig()
    assert policy.threshold is not None
    c1, c2 = _colliding_pair(k, policy.threshold, policy.shingle)
    english = "the battery lasts two full days and the screen is bright enough to read in the sun"
    chinese = "这本书的内容很精彩，翻译也很流畅，推荐给喜欢历史的朋友们阅读"
    docs = {
        1: "Great phone, fast delivery, would buy again from this shop",
        2: "great  phone, fast delivery,  would buy again from this shop",  # exact copy after normalising
        3: "GREAT PHONE, FAST DELIVERY, WOULD BUY AGAIN FROM THIS SHOP",  # exact copy
        4: c1,
        5: c1.upper(),  # exact copy of one side of the collision
        6: c2,
        7: english,
        8: _near_copy(english, k),
        9: chinese,
        10: _near_copy(chinese, k),
        11: "the hotel room was clean but the breakfast was cold and the staff seemed tired",
        12: "delivery took three weeks and the box arrived crushed, never ordering here again",
    }
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in docs.items()), encoding="utf-8")

    def run(name: str, *extra: str) -> tuple[dict, set, dict]:
        out = tmp_path / name
        assert dedupe_main(["--input", str(src), "--output", str(out), "--k", str(k), *extra], spark=spark) == 0
        clusters = {r["id"]: r["cluster_id"] for r in spark.read.parquet(str(out / "clusters")).collect()}
        pairs = {(r["id_a"], r["id_b"]) for r in spark.read.parquet(str(out / "pairs")).collect()}
        return clusters, pairs, json.loads((out / "report.json").read_text())

    plain, plain_pairs, plain_report = run("none", "--verify", "none")
    checked, checked_pairs, report = run("default")  # the default policy, no option given

    # Without the policy the planted collision is merged: the case is real.
    assert plain[4] == plain[6]
    assert plain_report["verify"]["applied"] is False
    # With it: the colliding texts are apart, every exact and near copy stays together.
    assert checked[4] != checked[6]
    assert checked[1] == checked[2] == checked[3]
    assert checked[4] == checked[5]
    assert checked[7] == checked[8] and checked[9] == checked[10]
    assert plain[7] == plain[8] and plain[9] == plain[10]
    # pairs/ with the policy = the candidate pairs (pairs/ without it) the rule keeps.
    norm = {i: normalise(t) for i, t in docs.items()}
    assert checked_pairs == {(a, b) for a, b in plain_pairs if keeps(norm[a], norm[b], policy)}
    assert (4, 6) in plain_pairs and (4, 6) not in checked_pairs
    v = report["verify"]
    assert v["applied"] and v["spec"] == f"jaccard:{policy.threshold:g}" and v["below_chars"] == policy.below_chars
    assert v["pairs_within_k"] == len(plain_pairs) == v["checked_pairs"]  # every text here is short
    assert v["dropped_pairs"] == len(plain_pairs - checked_pairs) >= 1
    assert report["join"]["verified_pairs"] == len(checked_pairs)


@pytest.mark.spark
def test_job_rejects_a_bad_verify_value(spark, dedupe_main, tmp_path, capsys):
    src = tmp_path / "in.jsonl"
    src.write_text('{"id": 1, "text": "a b c d e"}\n', encoding="utf-8")
    for bad in (["--verify", "jaccard:2"], ["--verify", "cosine:0.5"], ["--verify-shingle", "0"], ["--verify-below", "-3"]):
        assert dedupe_main(["--input", str(src), "--output", str(tmp_path / "out"), *bad], spark=spark) == 2
        assert "verify" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.spark
def test_texts_by_fingerprint_normalises_the_paired_fingerprints_texts_again_once(spark):
    from simhash_udf.core.config import DedupeConfig
    from simhash_udf.stages.short_text_check import texts_by_fingerprint

    docs = spark.createDataFrame(
        [(1, "A  b"), (2, "a b"), (3, "c d"), (4, "e f"), (5, "g h"), (6, None)], "id long, text string"
    )
    # ids 1 and 2 are one text (k1) once normalised; k1 and k2 collide on fingerprint 10;
    # k4 has no fingerprint (too short); 30 is not asked for.
    signed = spark.createDataFrame(
        [(1, b"k1", 10), (2, b"k1", 10), (3, b"k2", 10), (4, b"k3", 30), (5, b"k4", None), (6, None, None)],
        "id long, exact_key binary, fingerprint long",
    )
    wanted = spark.createDataFrame([(10,), (20,)], "fingerprint long")
    got = sorted((r["fingerprint"], r["text"]) for r in texts_by_fingerprint(signed, docs, DedupeConfig(), wanted).collect())
    assert got == [(10, "a b"), (10, "c d")]
