"""bench/quality.py and the shared bench/metrics.py and bench/pair_sets.py it scores with: the
metrics against brute force, the merge rules against hand-made cases, the --quick run end to end."""

from __future__ import annotations

import itertools
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bench import quality
from bench.metrics import auc
from bench.pair_sets import other_site_frame
from simhash_udf.core.config import VerifyConfig
from simhash_udf.core.fingerprint import hamming
from simhash_udf.core.short_text_policy import jaccard, shingles

ROOT = Path(__file__).resolve().parents[2]


def brute_auc(pos: list[float], neg: list[float]) -> float:
    """Every (positive, negative) pair: 1 if the positive is closer, 1/2 on a tie."""
    wins = sum(1.0 if p < n else 0.5 if p == n else 0.0 for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


@pytest.mark.parametrize("seed", range(20))
def test_auc_matches_brute_force_pair_count(seed):
    rng = random.Random(seed)
    # Small integer ranges force many ties; floats in some draws.
    draw = (lambda: rng.randint(0, 6)) if seed % 2 else (lambda: round(rng.random(), 1))
    pos = [draw() for _ in range(rng.randint(1, 12))]
    neg = [draw() for _ in range(rng.randint(1, 12))]
    assert auc(pos, neg) == pytest.approx(brute_auc(pos, neg), abs=1e-12)


def test_auc_extremes_and_empty():
    assert auc([0, 1], [5, 6, 7]) == 1.0
    assert auc([5, 6], [0, 1]) == 0.0
    assert auc([3], [3]) == 0.5
    assert np.isnan(auc([], [1]))


def test_hamming_many_matches_scalar_hamming():
    rng = np.random.default_rng(7)
    x = rng.integers(-(2**63), 2**63 - 1, size=200, dtype=np.int64)
    y = x ^ rng.integers(0, 2**20, size=200, dtype=np.int64)  # near ones, sign bit kept
    y[:50] = rng.integers(-(2**63), 2**63 - 1, size=50, dtype=np.int64)  # far ones
    got = quality.hamming_many(x, y)
    assert list(got) == [hamming(int(a), int(b)) for a, b in zip(x, y)]


def test_ours_counts_merges_as_the_job_does():
    # Hand-made fingerprints: text 1 is 2 bits from text 0, text 2 is 4 bits away, text 3 is
    # 1 bit away but too short, text 4 is far but an exact copy in its pair.
    values = np.array([0, 0b11, 0b1111, 0b1, -1], dtype=np.int64)
    n_features = np.array([10, 10, 10, 2, 10], dtype=np.int32)
    frame = pd.DataFrame({"a": [0, 0, 0, 0], "b": [1, 2, 3, 4],
                          "exact": [False, False, False, True]})
    signed = quality.Signed(values, n_features, np.full(5, 10), {})
    ours = quality.Ours(signed, "t", k=3, min_features=4)
    scored = ours.score(frame)
    assert scored.merged.tolist() == [True, False, False, True]
    assert scored.dist.tolist() == [2, 4, 64, 64]  # no fingerprint counts as farthest
    assert quality.merged_count(scored.merged) == 2
    assert ours.variant("k4", k=4).score(frame).merged.tolist() == [True, True, False, True]
    assert ours.variant("mf1", min_features=1).score(frame).merged.tolist() == [True, False, True, True]
    # A policy that rejects every pair leaves only the exact copy.
    reject = ours.variant("p", policy=lambda a, b: np.zeros(len(a), bool))
    assert reject.score(frame).merged.tolist() == [False, False, False, True]


def test_lsh_candidates_equal_minhashlsh_query():
    from datasketch import MinHash, MinHashLSH

    rng = random.Random(3)
    words = [f"w{i}" for i in range(500)]
    base = [" ".join(rng.choice(words) for _ in range(150)) for _ in range(6)]
    texts = list(base)
    for text in base:  # near copies with 1, 4 and 12 words changed
        for changes in (1, 4, 12):
            tokens = text.split()
            for i in rng.sample(range(len(tokens)), changes):
                tokens[i] = rng.choice(words)
            texts.append(" ".join(tokens))
    anchor = quality.MinHashAnchor(texts)
    lsh = MinHashLSH(threshold=quality.MINHASH_THRESHOLD, num_perm=quality.MINHASH_PERM)
    minhashes = []
    for i, text in enumerate(texts):
        m = MinHash(num_perm=quality.MINHASH_PERM)
        for s in shingles(text, quality.MINHASH_SHINGLE, normalised=True):
            m.update(s.encode("utf-8"))
        assert np.array_equal(m.hashvalues, anchor.hashvalues[i])
        lsh.insert(i, m)
        minhashes.append(m)
    pairs = list(itertools.combinations(range(len(texts)), 2))
    frame = pd.DataFrame({"a": [a for a, _ in pairs], "b": [b for _, b in pairs], "exact": False})
    got = anchor.score(frame).merged
    expected = [b in lsh.query(minhashes[a]) for a, b in pairs]
    assert got.tolist() == expected
    assert 0 < sum(expected) < len(pairs)  # the case is not degenerate


def test_short_text_policy_checks_only_short_pairs():
    texts = ["a b c d e f", "a b c d x y", "p q r s", "a b c d e f g h i j " * 40,
             "k l m n o p q r s t " * 40]
    passes = quality.short_text_policy(texts, VerifyConfig(threshold=0.5, below_chars=100, shingle=2))
    a, b = np.array([0, 0, 3]), np.array([1, 2, 4])
    expected_01 = jaccard(shingles(texts[0], 2), shingles(texts[1], 2)) >= 0.5
    # (3, 4) are unrelated but long: the policy leaves long pairs to simhash.
    assert passes(a, b).tolist() == [expected_01, False, True]


def _figures(**changes) -> "quality.Figures":
    base = dict(page_recall=0.5, page_recall_all=0.1, same_site=0, same_site_all=0, other_site=0,
                other_site_all=0, pan13=0, unrelated=0, near_copy={0.01: 0.9, 0.03: 0.6},
                edited={"sentence added": 0.9}, regional=0.99, non_dup={"en": 0.0, "zh": 0.005},
                non_dup_by_dataset={"MRPC": 0.0, "LCQMC": 0.009, "PAWSX-zh": 0.2},
                dup={"en": 0.01, "zh": 0.05},
                auc={"en": 0.7, "zh": 0.6}, sts_rho={"STS-B-en": -0.5})
    base.update(changes)
    return quality.Figures(**base)


@pytest.mark.parametrize("change", [{"same_site": 1}, {"other_site": 2}, {"same_site_all": 1},
                                    {"other_site_all": 1}, {"pan13": 1}, {"unrelated": 3},
                                    {"non_dup_by_dataset": {"MRPC": 0.0, "LCQMC": 0.011}}])
def test_every_rail_counts_in_both_extraction_modes(change):
    assert quality.rails_hold(_figures())
    broken = _figures(**change)
    assert not quality.rails_hold(broken)
    assert quality.rails_cell(broken, [("at k + 1", _figures())]).startswith("**no**")
    # Holding as set but not one step looser is shown as such (and is not admissible in the verdict).
    assert "not at k + 1" in quality.rails_cell(_figures(), [("at k + 1", broken)])


def test_the_sentence_rail_is_per_dataset_and_leaves_paws_x_out():
    # Pooled over zh the share would be under 1%; LCQMC alone is over it.
    assert not quality.rails_hold(_figures(non_dup={"zh": 0.004},
                                           non_dup_by_dataset={"LCQMC": 0.012, "BQ": 0.0}))
    assert quality.rails_hold(_figures(non_dup_by_dataset={"LCQMC": 0.01, "PAWSX-zh": 0.5}))


def test_a_variant_that_breaks_all_text_rails_at_k_plus_1_is_no_candidate():
    base = _figures()
    better = _figures(page_recall=0.9)
    row = quality.Row("weighting", "weighting x", None)  # type: ignore[arg-type]
    holds = quality.verdict("weighting", base, True, [quality.ScoredRow(row, better, _figures(), None)])
    assert "candidate to change the default" in holds
    # Same figures at k, but one same-site pair of all-text pages merged at k + 1.
    breaks = quality.verdict("weighting", base, True,
                             [quality.ScoredRow(row, better, _figures(same_site_all=1), None)])
    assert "candidate" not in breaks and "weighting x (at k + 1: all text: 1 same-site" in breaks


def test_a_sketch_variant_must_also_hold_with_the_sketch_one_step_looser():
    row = quality.Row("sketch jaccard", "sketch jaccard x", None, sketch_margin=True)  # type: ignore[arg-type]
    loose = quality.ScoredRow(row, _figures(page_recall=0.9), _figures(), _figures(other_site_all=1))
    assert not loose.admissible and loose.holds(sketch_margin=False)
    text = quality.verdict("sketch jaccard", _figures(), True, [loose])
    assert "candidate" not in text and "with the sketch one step looser: all text: 0 same-site, 1 other-site" in text
    # A sketch row scored without its sketch margin is never admissible.
    assert not quality.ScoredRow(row, _figures(), _figures(), None).admissible


def test_other_site_frame_leaves_out_same_site_pairs_and_other_scripts():
    pages = pd.DataFrame({"a": [0, 1, 2, 3], "group": ["other", "other", "other", "han"]})
    same_site = pd.DataFrame({"a": [1], "b": [0]})  # either order
    frame = other_site_frame(pages, same_site)
    assert sorted(zip(frame["a"], frame["b"])) == [(0, 2), (1, 2)]
    assert not frame["exact"].any()


def test_distance_histogram_and_score_bins():
    assert quality.distance_histogram(np.array([0, 2, 3, 5, 20]), ((0, 0), (1, 3), (4, 64))) == [
        0.2, 0.4, 0.4]
    stats = quality.mean_by_score_bin(pd.Series([0.5, 0.7, 4.5, 5.0]), pd.Series([30, 20, 4, 6]))
    assert stats.loc["[0,1)", "mean"] == 25 and stats.loc["[4,5]", "size"] == 2


@pytest.mark.slow
def test_quick_run_writes_every_section(shared_data, tmp_path):
    out = tmp_path / "quality.md"
    done = subprocess.run(
        [sys.executable, "-m", "bench.quality", "--quick", "--data", str(shared_data),
         "--out", str(out)],
        capture_output=True, text=True, timeout=600, check=False, cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    doc = out.read_text(encoding="utf-8")
    for heading in ("## Targets (issue 13)", "## Headline", "## Pages and documents", "## Sentence pairs",
                    "### Distance distribution", "### Graded pairs", "## Defaults",
                    "## How this was measured"):
        assert heading in doc
    for row in ("merged, main text: same-site / other-site pages",
                "merged, all text: same-site / other-site pages", "at k + 1: main; all",
                "at k + 1, sketch one step looser: main; all",
                "near copies, 5% of words edited", "a real article, footer appended",
                "**sketch jaccard**", "**sketch max_distance**", "**sketch shingle**",
                "**sketch min_chars**", "**sketch route**", "**short-text policy**",
                "page ↔ article recall", "same-site different articles merged",
                "PAN-13 pairs sharing one passage merged", "sentence non-duplicates merged",
                "STS-B-en: Spearman", "MinHashLSH", "simhash pkg", "**tokenizer**",
                "**ngram**", "**weighting**", "**k**", "**min_features**"):
        assert row in doc, row
    assert "--quick: small samples" in doc


def test_missing_data_is_a_clear_error(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "bench.quality", "--data", str(tmp_path / "none"),
         "--out", str(tmp_path / "q.md")],
        capture_output=True, text=True, timeout=120, check=False, cwd=ROOT,
    )
    assert done.returncode == 2 and "shared data not found" in done.stderr
    assert not (tmp_path / "q.md").exists()
