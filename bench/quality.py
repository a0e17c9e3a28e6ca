"""Detection quality, measured on every set in ../shared/data; writes docs/quality.md.

    .venv/bin/python -m bench.quality            # full run, a few minutes on 2 cores
    .venv/bin/python -m bench.quality --quick    # small seeded samples: a smoke test, not a result

What is scored is what the job runs: a page's text comes from `extract.extract(html, "main")`
(the job's `--extract main`), every text is `normalise.normalise`d, fingerprinted and sketched
by `fingerprint.signatures` with the default `FingerprintConfig` and `SketchConfig`, and a
pair is merged as the job merges it: exact copies (equal normalised text) always; or both
texts fingerprinted (at least `min_features` distinct features) and at most `k` bits apart,
a pair whose shorter text is below `VerifyConfig.below_chars` characters also passing the
short-text policy (`simhash_udf.core.short_text_policy`); or the sketch route
(`bench/job_rule.py`): both texts of at least `SketchConfig.min_chars` characters, sketches
agreeing on one band, estimated Jaccard >= `SketchConfig.jaccard`, Hamming distance <=
`SketchConfig.max_distance`. The band join finds every pair within k (tests/stages/test_join.py
holds it to brute force) and the MinHash join every pair whose bands agree, so pair figures
stand for the joins without running Spark.

Anchors, on the same normalised texts in the same run:
- datasketch's MinHashLSH (threshold 0.8, 128 permutations) over word 5-gram shingles
  (character 5-grams for text with Han characters: `short_text_policy.shingles(text, 5)`); a pair is
  merged when it is an LSH candidate (shares one of the index's band buckets, which is what
  `MinHashLSH.query` returns); its "distance" is 1 - the MinHash Jaccard estimate;
- the `simhash` PyPI package (`Simhash(text)`, its own character 4-gram features; the numpy-2
  fix of bench/fingerprint_throughput.py) at the same k.

Sets: page <-> article text (web/aeb, web/readability), different articles of one site,
pages of different sites (these page sets both as `--extract main` gives them and as all
visible text, `extract_text(html, "all")`: plain-text input often still carries boilerplate,
and the job extracts nothing from it), PAN-13 documents sharing one passage, labelled
sentence pairs (per dataset and language; STS-B graded), synthetic near-copies of the articles
(1, 3 and 5 % of words edited, as bench/near_copies.py makes them), the articles with a
sentence added, a footer appended or a paragraph dropped (bench/edited_copies.py) and
unrelated long documents. The report opens with issue 13's targets (bench/targets.py). Then
every default is varied around its value on the same sets; a variant is admissible only when
the rails (bench/rails.py) hold in both extraction modes, as set and one step looser (k + 1,
and the sketch route's Jaccard threshold - 0.05 and Hamming limit + 2). The sets are loaded by
bench/datasets.py, paired by bench/pair_sets.py and copied by bench/near_copies.py and
bench/edited_copies.py; fingerprinted by bench/fingerprinting.py.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from bench.datasets import (
    AEB,
    DEFAULT_DATA,
    PAN13_PAIRS,
    READABILITY,
    SENTENCE_PAIRS,
    check_data,
    count_lines_gz,
    load_aeb,
    load_pan13,
    load_readability,
    load_sentence_pairs,
    resolve,
)
from bench.edited_copies import EDITS, edited_frame
from bench.fingerprinting import Fingerprinted, Setting, fingerprint_all, software
from bench.job_rule import looser, sketch_route
from bench.machine import library_version, machine_line
from bench.metrics import auc, spearman
from bench.near_copies import synthetic_frame, synthetic_sources
from bench.pair_sets import (
    RAIL_EXCLUDED_DATASET_PREFIX,
    DistinctTexts,
    other_site_frame,
    page_article_frame,
    pan13_frame,
    same_site_frame,
    sentence_pair_frame,
    sts_bucket,
    text_group,
    unrelated_frame,
)
from bench.rails import (
    MAX_NON_DUP_MERGED,
    mean_dup,
    rail_breaks,
    rails_cell,
    rails_hold,
    recall_score,
    worst_dataset,
    worst_non_dup,
)
from bench.regional import DEFAULT_LIMIT as REGIONAL_LIMIT
from bench.regional import regional_frame, regional_sources
from bench.runners import log
from bench.tables import md_table, num, pct
from bench.targets import targets, targets_section
from simhash_udf.core import bands
from simhash_udf.core.config import DedupeConfig, FingerprintConfig, SketchConfig, VerifyConfig
from simhash_udf.core.extract import extract, extract_text  # the job's --extract
from simhash_udf.core.short_text_policy import keeps, shingles

DEFAULT_OUT = Path("docs/quality.md")
SEED = 20_240_601

MINHASH_THRESHOLD = 0.8
MINHASH_PERM = 128
MINHASH_SHINGLE = 5
EDIT_RATES = (0.01, 0.03, 0.05)  # synthetic near-copies: share of words edited
QUICK_SITES = ("nytimes", "yahoo", "qq", "bbc", "wikipedia")  # readability sites kept by --quick
DIST_BINS = ((0, 0), (1, 3), (4, 6), (7, 10), (11, 16), (17, 64))

DEFAULT_FP = FingerprintConfig()
DEFAULT_K = DedupeConfig().k
DEFAULT_SKETCH = SketchConfig()
# The sketch route's variants (see `default_rows`); the default's shingle is among them.
SKETCH_JACCARDS = (0.6, 0.7, 0.75, 0.8, 0.85)
SKETCH_DISTANCES = (8, 10, 12, 16, 64)  # 64: no Hamming check
SKETCH_SHINGLES = tuple(sorted({2, 3, 5, DEFAULT_SKETCH.shingle}))
SKETCH_MIN_CHARS = (150, 300, 600)
POLICY_THRESHOLDS = (0.3, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8)  # the short-text policy's variants
# Issue 13's regional target: Simplified articles reprinted for Taiwan and Hong Kong (phrases
# included), and Traditional texts reprinted back (`bench/regional.py` makes more variants).
REGIONAL_TARGET_VARIANTS = ("s2twp", "s2hk", "tw2sp", "hk2s")


# --------------------------------------------------------------------------- metrics (pure)


def hamming_many(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Hamming distances of two equal-length arrays of 64-bit fingerprints (signed or not)."""
    xor = np.bitwise_xor(x.astype(np.int64).view(np.uint64), y.astype(np.int64).view(np.uint64))
    return np.bitwise_count(xor).astype(np.int64)


def simhash_merged(
    dist: np.ndarray, exact: np.ndarray, fingerprinted: np.ndarray, k: int
) -> np.ndarray:
    """The job's rule: exact copies, or both texts fingerprinted and at most k bits apart."""
    return np.asarray(exact) | (np.asarray(fingerprinted) & (np.asarray(dist) <= k))


def lsh_candidates(
    hashvalues_a: np.ndarray, hashvalues_b: np.ndarray, hashranges: Sequence[tuple[int, int]]
) -> np.ndarray:
    """Whether each pair (row of a, row of b) shares a MinHashLSH band bucket.

    hashranges: `MinHashLSH.hashranges` (the b bands of r hash values). Two MinHashes share a
    bucket exactly when one band of their hash values is equal, which is when
    `MinHashLSH.query` of one returns the other.
    """
    found = np.zeros(len(hashvalues_a), dtype=bool)
    for start, end in hashranges:
        found |= (hashvalues_a[:, start:end] == hashvalues_b[:, start:end]).all(axis=1)
    return found


def minhash_jaccard(hashvalues_a: np.ndarray, hashvalues_b: np.ndarray) -> np.ndarray:
    """MinHash's Jaccard estimate per pair: the share of equal hash values."""
    return (hashvalues_a == hashvalues_b).mean(axis=1)


def merged_count(merged: Sequence[bool]) -> int:
    """How many pairs merged."""
    return int(np.count_nonzero(np.asarray(merged, dtype=bool)))


def bin_label(low: int, high: int) -> str:
    """`0`, `1-3`, `17+`."""
    return str(low) if low == high else (f"{low}+" if high >= 64 else f"{low}-{high}")


def distance_histogram(dist: np.ndarray, bins: Sequence[tuple[int, int]] = DIST_BINS) -> list[float]:
    """Share of distances in each inclusive bin (NaN when there are none)."""
    dist = np.asarray(dist)
    if len(dist) == 0:
        return [float("nan")] * len(bins)
    return [float(((dist >= lo) & (dist <= hi)).mean()) for lo, hi in bins]


def mean_by_score_bin(scores: pd.Series, dist: pd.Series) -> pd.DataFrame:
    """Mean distance and pair count per STS-B score bin ([0,1) ... [4,5])."""
    frame = pd.DataFrame({"bin": scores.map(sts_bucket), "dist": dist.to_numpy()})
    return frame.groupby("bin")["dist"].agg(["mean", "size"])


# --------------------------------------------------------------------------- methods


@dataclass
class Scored:
    """One method's view of one pair set: a distance and a merge decision per pair."""

    dist: np.ndarray  # bits for simhash, 1 - estimated Jaccard for MinHash
    merged: np.ndarray
    has: np.ndarray | None = None  # both texts have a signature (None: every pair has)
    jaccard: np.ndarray | None = None  # ours: the sketches' estimated Jaccard (NaN: no sketches)


@dataclass(frozen=True)
class Signed:
    """Every corpus text's signatures under one fingerprint setting.

    values int64 fingerprints, n_features int32 distinct features, lengths int64 characters of
    the normalised text; sketches: shingle size -> uint16 (texts, size), made for every
    non-empty text (see `job_rule`); empty when the setting has none.
    """

    values: np.ndarray
    n_features: np.ndarray
    lengths: np.ndarray
    sketches: dict[int, np.ndarray]


class Ours:
    """The job's decision on the library's signatures of every corpus text: exact copies, or
    fingerprints within k (short pairs also through `policy`), or the sketch route
    (`job_rule.sketch_route` under `sketch`; None or `jaccard` None: off)."""

    def __init__(self, signed: Signed, label: str, k: int = DEFAULT_K,
                 min_features: int = DEFAULT_FP.min_features,
                 policy: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
                 sketch: SketchConfig | None = None) -> None:
        self.signed, self.label = signed, label
        self.k, self.min_features, self.policy, self.sketch = k, min_features, policy, sketch

    def variant(self, label: str, **changes: object) -> Ours:
        """The same signatures under another k, min_features, policy or sketch route."""
        fields = {"k": self.k, "min_features": self.min_features, "policy": self.policy,
                  "sketch": self.sketch}
        fields.update(changes)
        return Ours(self.signed, label, **fields)  # type: ignore[arg-type]

    def score(self, frame: pd.DataFrame) -> Scored:
        a, b = frame["a"].to_numpy(), frame["b"].to_numpy()
        signed = self.signed
        dist = hamming_many(signed.values[a], signed.values[b])
        both = np.minimum(signed.n_features[a], signed.n_features[b]) >= self.min_features
        exact = frame["exact"].to_numpy(dtype=bool)
        merged = simhash_merged(dist, exact, both, self.k)
        if self.policy is not None:  # checked only where it can change something, as the job does
            check = merged & ~exact
            merged = merged.copy()
            merged[check] = self.policy(a[check], b[check])
        jaccard = None
        if self.sketch is not None and self.sketch.shingle in signed.sketches:
            route, jaccard = sketch_route(a, b, dist, both, signed.lengths,
                                          signed.sketches[self.sketch.shingle], self.sketch)
            merged = merged | route
        # Pairs without two fingerprints have no distance: the farthest, so they rank last.
        return Scored(np.where(both | exact, dist, 64), merged, both | exact, jaccard)


class SimhashPackage:
    """The `simhash` PyPI package's fingerprint of every corpus text, merged at k bits."""

    label = "simhash pkg"

    def __init__(self, texts: Sequence[str], k: int = DEFAULT_K) -> None:
        from bench.fingerprint_throughput import _simhash_class  # its numpy-2 fix

        cls = _simhash_class()
        self.values = np.array([cls(t).value for t in texts], dtype=np.uint64).view(np.int64)
        self.k = k

    def score(self, frame: pd.DataFrame) -> Scored:
        a, b = frame["a"].to_numpy(), frame["b"].to_numpy()
        dist = hamming_many(self.values[a], self.values[b])
        exact = frame["exact"].to_numpy(dtype=bool)
        return Scored(dist, simhash_merged(dist, exact, np.ones(len(a), bool), self.k))


class MinHashAnchor:
    """datasketch MinHash of every corpus text's shingles, merged when MinHashLSH would."""

    label = "MinHashLSH"

    def __init__(self, texts: Sequence[str]) -> None:
        from datasketch import MinHash, MinHashLSH

        sets = [[s.encode("utf-8") for s in shingles(t, MINHASH_SHINGLE, normalised=True)]
                for t in texts]
        minhashes = MinHash.bulk(sets, num_perm=MINHASH_PERM)
        self.hashvalues = np.vstack([m.hashvalues for m in minhashes])
        lsh = MinHashLSH(threshold=MINHASH_THRESHOLD, num_perm=MINHASH_PERM)
        self.hashranges, self.bands, self.rows = lsh.hashranges, lsh.b, lsh.r

    def score(self, frame: pd.DataFrame) -> Scored:
        a, b = frame["a"].to_numpy(), frame["b"].to_numpy()
        merged = np.zeros(len(a), dtype=bool)
        dist = np.zeros(len(a), dtype=float)
        for start in range(0, len(a), 50_000):  # bounds memory on large pair sets
            ha, hb = self.hashvalues[a[start:start + 50_000]], self.hashvalues[b[start:start + 50_000]]
            merged[start:start + 50_000] = lsh_candidates(ha, hb, self.hashranges)
            dist[start:start + 50_000] = 1.0 - minhash_jaccard(ha, hb)
        return Scored(dist, merged | frame["exact"].to_numpy(dtype=bool))


def short_text_policy(texts: Sequence[str], policy: VerifyConfig) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """`--verify`'s check (`verify.keeps`) as a function of pair indices: True when a pair
    passes. Each pair's decision is kept, since every variant scored asks again."""
    decided: dict[tuple[int, int], bool] = {}

    def passes(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        out = np.ones(len(a), dtype=bool)
        for j, pair in enumerate(zip(a.tolist(), b.tolist())):
            if pair not in decided:
                decided[pair] = keeps(texts[pair[0]], texts[pair[1]], policy)
            out[j] = decided[pair]
        return out

    return passes


# --------------------------------------------------------------------------- data


@dataclass
class Sets:
    """Every pair set as a frame of corpus indices (`a`, `b`, `exact`) plus its labels."""

    corpus: DistinctTexts
    frames: dict[str, pd.DataFrame]
    total_pairs: int
    extractor: str


def load_sets(data: Path, quick: bool, seed: int, max_pairs: int | None) -> Sets:
    """Load, extract and normalise every set (seeded samples with --quick or --max-pairs)."""
    corpus = DistinctTexts()
    fallbacks = [0, 0]  # pages where --extract main found nothing and kept all visible text

    def main(html: str) -> str:
        done = extract(html, "main")
        fallbacks[0] += done.fallback
        fallbacks[1] += 1
        return done.text

    readability_dir, aeb_dir = data / READABILITY, data / AEB
    readability, aeb = load_readability(readability_dir, main), load_aeb(aeb_dir, main)
    def all_text(html: str) -> str:  # `--extract all`: what plain-text input with boilerplate is like
        return extract_text(html, "all")

    readability_all = load_readability(readability_dir, all_text)
    aeb_all = load_aeb(aeb_dir, all_text)
    if quick:  # a fixed handful of pages: whole sites, so that same-site pairs remain
        readability = [p for p in readability if p.name.split("-")[0] in QUICK_SITES]
        keep = {p.name for p in readability}
        readability_all = [p for p in readability_all if p.name in keep]
        aeb, aeb_all = aeb[:20], aeb_all[:20]
    n_pairs = max_pairs if max_pairs is not None else (4_000 if quick else None)
    sentence_rows = load_sentence_pairs(data / SENTENCE_PAIRS, n_pairs, seed)
    pan13_rows = load_pan13(data / PAN13_PAIRS, 40 if quick else None, seed)
    sources = synthetic_sources(readability_all, aeb_all, [], 40 if quick else None, seed)
    frames = {
        "page_article": pd.concat([page_article_frame(readability, "readability", corpus),
                                   page_article_frame(aeb, "aeb", corpus)], ignore_index=True),
        "page_article_all": pd.concat([page_article_frame(readability_all, "readability", corpus),
                                       page_article_frame(aeb_all, "aeb", corpus)], ignore_index=True),
        "same_site": same_site_frame(readability, aeb, corpus),
        "same_site_all": same_site_frame(readability_all, aeb_all, corpus),
        "pan13": pan13_frame(pan13_rows, corpus),
        "pairs": sentence_pair_frame(sentence_rows, corpus),
    }
    frames["synthetic"] = synthetic_frame(sources, corpus, 1, seed, rates=EDIT_RATES)
    # Footers come from every page's all visible text (its boilerplate), as plain-text input has it.
    frames["edited"] = edited_frame(sources, [(p.label, p.text) for p in readability_all + aeb_all],
                                    corpus, seed)
    regional = regional_sources(data, 10 if quick else REGIONAL_LIMIT, seed)
    frames["regional"] = regional_frame(corpus, regional, seed)
    long_docs = [(a, text_group(corpus.texts[a])) for a in frames["synthetic"]["a"].unique()]
    long_docs += [(i, text_group(corpus.texts[i]))
                  for i in itertools.chain(frames["pan13"]["a"], frames["pan13"]["b"])]
    related = set(zip(frames["pan13"]["a"], frames["pan13"]["b"]))
    frames["unrelated"] = unrelated_frame(long_docs, related)
    for suffix in ("", "_all"):
        frames["other_site" + suffix] = other_site_frame(frames["page_article" + suffix],
                                                         frames["same_site" + suffix])
    extractor = (f"`extract.extract(html, 'main')` (the job's `--extract main`; it fell back to all "
                 f"visible text on {fallbacks[0]} of {fallbacks[1]} pages)")
    return Sets(corpus, frames, count_lines_gz(data / SENTENCE_PAIRS), extractor)


# --------------------------------------------------------------------------- variants


def default_setting() -> Setting:
    """The library's default fingerprint setting, with sketches at every shingle size of
    SKETCH_SHINGLES (the sketch route's variants)."""
    return Setting(DEFAULT_FP.tokenizer, DEFAULT_FP.ngram, DEFAULT_FP.weighting, SKETCH_SHINGLES)


def fingerprint_variants() -> list[tuple[str, str, Setting]]:
    """(parameter, label, setting): the default, then each fingerprint default changed alone
    (those with the default sketch only: the sketch's tokens are the tokenizer's)."""
    d = default_setting()
    out = [("default", d.label, d)]
    d = replace(d, sketch_shingles=(DEFAULT_SKETCH.shingle,))
    for tok, n in (("jieba", d.ngram), ("word", d.ngram), ("char", 2), ("char", 3)):
        if tok != d.tokenizer:
            out.append(("tokenizer", f"tokenizer {tok}" + (f" (ngram {n})" if n != d.ngram else ""),
                        replace(d, tokenizer=tok, ngram=n)))
    for n in (1, 2, 3):
        if n != d.ngram:
            out.append(("ngram", f"ngram {n}", replace(d, ngram=n)))
    for w in ("binary", "tf", "tfidf", "idf", "logtfidf"):
        if w != d.weighting:
            out.append(("weighting", f"weighting {w}", replace(d, weighting=w)))
    return out


@dataclass
class Row:
    """One line of the defaults table: which default it supports and the method it scores."""

    parameter: str
    label: str
    method: Ours
    sketch_margin: bool = False  # also scored with the sketch route one step looser (`ScoredRow`)


def default_rows(fps: dict[str, Ours], texts: Sequence[str]) -> list[Row]:
    """Every variant of the defaults table, the job's defaults first (all with its policy and
    its sketch route unless the row changes them)."""
    base = fps["default"]
    rows = [Row("default", f"defaults ({default_setting().label}, k {DEFAULT_K}, min_features "
                f"{DEFAULT_FP.min_features}, verify {policy_text(VerifyConfig())}, "
                f"{sketch_text(DEFAULT_SKETCH)})", base, sketch_margin=True)]
    rows += [Row(p, label, fps[label]) for p, label, _ in fingerprint_variants()[1:]]
    rows += [Row("k", f"k {k}", base.variant(f"k {k}", k=k)) for k in (2, 4, 5) if k != DEFAULT_K]
    rows += [Row("min_features", f"min_features {m}", base.variant(f"min_features {m}", min_features=m))
             for m in (1, 8, 16) if m != DEFAULT_FP.min_features]
    return rows + policy_rows(base, texts) + sketch_rows(base)


def policy_rows(base: Ours, texts: Sequence[str]) -> list[Row]:
    """The short-text policy varied around the default: off and other thresholds (parameter
    `short-text policy`), other lengths checked (`short-text length`)."""
    v = VerifyConfig()
    alternatives: list[tuple[float | None, int | None]] = [(None, v.below_chars)]
    alternatives += [(t, v.below_chars) for t in POLICY_THRESHOLDS if t != v.threshold]
    alternatives += [(v.threshold, b) for b in (100, 1000) if b != v.below_chars]
    rows = []
    for threshold, below in alternatives:
        alt = replace(v, threshold=threshold, below_chars=below)
        label = f"verify {policy_text(alt)}"
        parameter = "short-text policy" if below == v.below_chars else "short-text length"
        rows.append(Row(parameter, label, base.variant(label, policy=job_policy(texts, alt))))
    return rows


def sketch_rows(base: Ours) -> list[Row]:
    """The sketch route varied around the default, one parameter at a time, and turned off."""
    d = DEFAULT_SKETCH
    changes: list[tuple[str, str, SketchConfig]] = [("sketch route", "sketch route off", replace(d, jaccard=None))]
    changes += [("sketch jaccard", f"sketch jaccard {j:g}", replace(d, jaccard=j))
                for j in SKETCH_JACCARDS if j != d.jaccard]
    changes += [("sketch max_distance", f"sketch max_distance {m}" + (" (no Hamming check)" if m >= 64 else ""),
                 replace(d, max_distance=m)) for m in SKETCH_DISTANCES if m != d.max_distance]
    changes += [("sketch shingle", f"sketch shingle {n}", replace(d, shingle=n))
                for n in SKETCH_SHINGLES if n != d.shingle]
    changes += [("sketch min_chars", f"sketch min_chars {c}", replace(d, min_chars=c))
                for c in SKETCH_MIN_CHARS if c != d.min_chars]
    return [Row(parameter, label, base.variant(label, sketch=config), sketch_margin=True)
            for parameter, label, config in changes]


def sketch_text(c: SketchConfig) -> str:
    """`sketch jaccard 0.75, max_distance 12, 3-shingles, min_chars 300`, or `sketch off`."""
    if c.jaccard is None:
        return "sketch off"
    return f"sketch jaccard {c.jaccard:g}, max_distance {c.max_distance}, {c.shingle}-shingles, min_chars {c.min_chars}"


def margin(method: Ours, sketch: bool) -> Ours:
    """The method one step looser, where the rails must hold too (the safety margin of
    bench/tune_defaults.py): k + 1; with `sketch`, also the sketch route one step looser
    (`job_rule.looser`: Jaccard threshold - 0.05, Hamming limit + 2 bits)."""
    config = looser(method.sketch) if sketch and method.sketch is not None else method.sketch
    return method.variant(method.label, k=method.k + 1, sketch=config)


def policy_text(v: VerifyConfig) -> str:
    """`jaccard:0.5 below 300 chars, 2-shingles`, or `none`."""
    if v.threshold is None:
        return "none"
    below = f" below {v.below_chars} chars" if v.below_chars else ""
    return f"jaccard:{v.threshold:g}{below}, {v.shingle}-shingles"


def job_policy(texts: Sequence[str], v: VerifyConfig) -> Callable | None:
    """The short-text policy of a VerifyConfig as a pair check (None when it is off)."""
    if v.threshold is None:
        return None
    return short_text_policy(texts, v)


def job_methods(texts: Sequence[str], variants: Sequence[tuple[str, str, Setting]],
                fps: Sequence[Fingerprinted]) -> dict[str, Ours]:
    """Every fingerprint variant (`default` for the defaults, labelled `ours`) scored as the job
    runs it: with the default short-text policy and sketch route."""
    policy = job_policy(texts, VerifyConfig())
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    ours = {("default" if p == "default" else label):
            Ours(Signed(fp.values, fp.n_features, lengths, fp.sketches), label, policy=policy,
                 sketch=DEFAULT_SKETCH)
            for (p, label, _), fp in zip(variants, fps)}
    ours["default"].label = "ours"
    return ours


# --------------------------------------------------------------------------- report


@dataclass
class Figures:
    """The headline figures of one method on every set."""

    page_recall: float
    page_recall_all: float
    same_site: int
    same_site_all: int
    other_site: int  # pages of different sites (main text) merged
    other_site_all: int  # the same with all visible text
    pan13: int
    unrelated: int
    near_copy: dict[float, float]
    edited: dict[str, float]  # recall per structural edit (`edited_copies.EDITS`)
    regional: float  # recall of the regional copies of REGIONAL_TARGET_VARIANTS
    non_dup: dict[str, float]  # per language, PAWS-X left out
    non_dup_by_dataset: dict[str, float]  # per sentence-pair dataset (the rail leaves PAWS-X out)
    dup: dict[str, float]
    auc: dict[str, float]
    sts_rho: dict[str, float]  # per STS-B dataset (STS-B-en, STS-B-zh)


def figures(method: Ours | SimhashPackage | MinHashAnchor, frames: dict[str, pd.DataFrame]) -> Figures:
    """Score one method on every set."""
    s = {name: method.score(frame) for name, frame in frames.items()}
    pairs = frames["pairs"]
    railed = ~pairs["dataset"].str.startswith(RAIL_EXCLUDED_DATASET_PREFIX).to_numpy()
    non_dup, dup, aucs = {}, {}, {}
    non_dup_by_dataset = {}
    for dataset in sorted(pairs["dataset"].unique()):
        is_non = (pairs["dataset"] == dataset).to_numpy() & (pairs["dup"] == 0).to_numpy()
        if is_non.any():
            non_dup_by_dataset[dataset] = float(s["pairs"].merged[is_non].mean())
    for lang in sorted(pairs["lang"].unique()):
        lang_rows = (pairs["lang"] == lang).to_numpy() & railed
        is_dup, is_non = lang_rows & (pairs["dup"] == 1).to_numpy(), lang_rows & (pairs["dup"] == 0).to_numpy()
        non_dup[lang] = float(s["pairs"].merged[is_non].mean()) if is_non.any() else float("nan")
        dup[lang] = float(s["pairs"].merged[is_dup].mean()) if is_dup.any() else float("nan")
        aucs[lang] = auc(s["pairs"].dist[is_dup], s["pairs"].dist[is_non])
    rho = {}
    for dataset in sorted(d for d in pairs["dataset"].unique() if d.startswith("STS-B")):
        sts = (pairs["dataset"] == dataset).to_numpy() & pairs["score"].notna().to_numpy()
        rho[dataset] = spearman(pd.Series(s["pairs"].dist[sts]),
                                pairs.loc[sts, "score"].reset_index(drop=True))
    syn = frames["synthetic"]
    near = {r: float(s["synthetic"].merged[(syn["rate"] == r).to_numpy()].mean()) for r in EDIT_RATES}
    ed = frames["edited"]
    edited = {e: float(s["edited"].merged[(ed["edit"] == e).to_numpy()].mean()) for e in EDITS}
    targeted = frames["regional"]["variant"].isin(REGIONAL_TARGET_VARIANTS).to_numpy()
    return Figures(
        page_recall=float(s["page_article"].merged.mean()),
        page_recall_all=float(s["page_article_all"].merged.mean()),
        same_site=merged_count(s["same_site"].merged),
        same_site_all=merged_count(s["same_site_all"].merged),
        other_site=merged_count(s["other_site"].merged),
        other_site_all=merged_count(s["other_site_all"].merged),
        pan13=merged_count(s["pan13"].merged),
        unrelated=merged_count(s["unrelated"].merged),
        near_copy=near,
        edited=edited,
        regional=float(s["regional"].merged[targeted].mean()),
        non_dup=non_dup,
        non_dup_by_dataset=non_dup_by_dataset,
        dup=dup,
        auc=aucs,
        sts_rho=rho,
    )


def recall_sizes(frames: dict[str, pd.DataFrame]) -> dict[str, str]:
    """The pair count of every recall target's set, by the target's label (`targets.RECALL_TARGETS`)."""
    sizes = {"page ↔ article, --extract main": f"{len(frames['page_article'])} pairs"}
    for r in EDIT_RATES:
        sizes[f"near copies, {r:.0%} of words edited"] = f"{int((frames['synthetic']['rate'] == r).sum())} articles"
    for e in EDITS:
        sizes[f"a real article, {e}"] = f"{int((frames['edited']['edit'] == e).sum())} articles"
    n_regional = int(frames["regional"]["variant"].isin(REGIONAL_TARGET_VARIANTS).sum())
    sizes["regional copies (s2twp/s2hk and back)"] = f"{n_regional} pairs"
    return sizes


def trio(values: Sequence[str]) -> str:
    """`ours / MinHashLSH / simhash pkg` in one cell."""
    return " / ".join(values)


def headline_section(methods: Sequence, figs: Sequence[Figures], frames: dict[str, pd.DataFrame],
                     k: int) -> str:
    """The main table: every set, every figure, ours beside the anchors."""
    names = " / ".join(m.label for m in methods)
    langs = list(figs[0].non_dup)
    fa = frames["page_article"]
    rows = [
        ["page ↔ article recall, --extract main", f"{len(fa)} pairs (" + _counts(fa["source"]) + ")",
         trio([pct(f.page_recall, 0) for f in figs]), "higher; extraction, k"],
        ["page ↔ article recall, --extract all", f"{len(frames['page_article_all'])} pairs",
         trio([pct(f.page_recall_all, 0) for f in figs]), "(why --extract main)"],
    ]
    for r in EDIT_RATES:
        n = int((frames["synthetic"]["rate"] == r).sum())
        rows.append([f"near-copies, {r:.0%} of words edited", f"{n} articles",
                     trio([pct(f.near_copy[r], 0) for f in figs]),
                     "higher; tokenizer, ngram, weighting, k, sketch route"])
    for e in EDITS:
        n = int((frames["edited"]["edit"] == e).sum())
        rows.append([f"a real article, {e}", f"{n} articles",
                     trio([pct(f.edited[e], 0) for f in figs]), "higher; k, sketch route"])
    n_regional = int(frames["regional"]["variant"].isin(REGIONAL_TARGET_VARIANTS).sum())
    rows.append(["regional copies: " + ", ".join(REGIONAL_TARGET_VARIANTS) + " (see Pages and documents)",
                 f"{n_regional} pairs", trio([pct(f.regional, 1) for f in figs]),
                 "higher; normalisation (regional Chinese)"])
    rows += [
        ["same-site different articles merged (main text)", f"{len(frames['same_site'])} pairs",
         trio([str(f.same_site) for f in figs]), "0; extraction, k"],
        ["same-site different articles merged (all text)", f"{len(frames['same_site_all'])} pairs",
         trio([str(f.same_site_all) for f in figs]), "(why --extract main)"],
        ["PAN-13 pairs sharing one passage merged", f"{len(frames['pan13'])} pairs",
         trio([str(f.pan13) for f in figs]), "0; ngram, k"],
        ["unrelated long documents merged", f"{len(frames['unrelated']):,} pairs",
         trio([str(f.unrelated) for f in figs]), "0; weighting (stopwords)"],
    ]
    pairs = frames["pairs"]
    for lang in langs:
        part = pairs[(pairs["lang"] == lang) & ~pairs["dataset"].str.startswith(RAIL_EXCLUDED_DATASET_PREFIX)]
        n_non, n_dup = int((part["dup"] == 0).sum()), int((part["dup"] == 1).sum())
        rows += [
            [f"{lang} sentence non-duplicates merged (≤ 1% per dataset: see Targets)", f"{n_non:,} pairs",
             trio([pct(f.non_dup[lang], 2) for f in figs]), "≤ 1%; k, min_features, short-text policy"],
            [f"{lang} sentence duplicates merged", f"{n_dup:,} pairs",
             trio([pct(f.dup[lang], 1) for f in figs]), "(informative: labels mean same meaning)"],
            [f"{lang} sentence pairs AUC", f"{n_non + n_dup:,} pairs",
             trio([num(f.auc[lang], 3) for f in figs]), "higher; tokenizer, weighting"],
        ]
    for dataset in figs[0].sts_rho:
        n_sts = int(((pairs["dataset"] == dataset) & pairs["score"].notna()).sum())
        rows.append([f"{dataset}: Spearman of distance with score (negative: distance falls as "
                     "the score rises)", f"{n_sts:,} pairs",
                     trio([num(f.sts_rho[dataset], 3) for f in figs]), "lower; tokenizer, weighting"])
    return (
        "## Headline\n\n"
        f"Each cell: **{names}** (k = {k} for both simhashes; MinHashLSH at Jaccard "
        f"{MINHASH_THRESHOLD}, {MINHASH_PERM} permutations). *ours* is the job with its defaults"
        + f", including the short-text policy `--verify {policy_text(VerifyConfig())}` and the "
        f"sketch route ({sketch_text(DEFAULT_SKETCH)}); *simhash alone* is fingerprints within "
        f"k = {k}, without either. Sentence-pair rows leave PAWS-X out "
        "(see *Sentence pairs*); \"merged\" is what the job does: exact copies always, otherwise "
        "fingerprints within k (a pair with a text under "
        f"{VerifyConfig().below_chars} characters also passing the short-text policy), or both "
        f"texts of at least {DEFAULT_SKETCH.min_chars} characters whose sketches agree on one of "
        f"{DEFAULT_SKETCH.bands} bands of {DEFAULT_SKETCH.rows} rows, estimate a Jaccard "
        f"similarity ≥ {DEFAULT_SKETCH.jaccard:g} and whose fingerprints are at most "
        f"{DEFAULT_SKETCH.max_distance} bits apart.\n\n"
        + md_table(["set", "size", names, "good is; defaults it supports"], rows)
        + "\n"
    )


def _share_of(cell: str) -> float:
    """The first method's share in a `a% / b% / ...` cell, as a fraction (NaN for `-`)."""
    first = cell.split(" / ")[0].rstrip("%")
    return float(first) / 100 if first not in ("-", "") else float("nan")


def _digits(method: object) -> int:
    """Decimals of a distance: bits are whole, MinHash's 1 - Jaccard is a fraction."""
    return 3 if isinstance(method, MinHashAnchor) else 1


def _counts(column: pd.Series) -> str:
    return ", ".join(f"{n} {v}" for v, n in column.value_counts().sort_index().items())


def _jaccard_quantiles(values: np.ndarray | None) -> str:
    """`0.71 / 0.93` (5th percentile / median of the defined values), `-` when none."""
    if values is None or not np.isfinite(values).any():
        return "-"
    low, mid = np.nanquantile(values, [0.05, 0.5])
    return f"{low:.2f} / {mid:.2f}"


def sentence_section(methods: Sequence, frames: dict[str, pd.DataFrame]) -> str:
    """Per dataset and language: sizes, AUC, non-dups and dups merged, ours beside anchors;
    then ours' distance distribution of duplicates and non-duplicates."""
    pairs = frames["pairs"]
    scored = [m.score(pairs) for m in methods]
    names = " / ".join(m.label for m in methods)
    rows, hist_rows = [], []
    for (dataset, lang), g in pairs[pairs["dup"].notna()].groupby(["dataset", "lang"]):
        idx = g.index.to_numpy()
        dup, non = (g["dup"] == 1).to_numpy(), (g["dup"] == 0).to_numpy()
        rows.append([
            dataset, lang, f"{dup.sum():,} / {non.sum():,}",
            trio([num(auc(s.dist[idx][dup], s.dist[idx][non]), 3) for s in scored]),
            trio([pct(s.merged[idx][non].mean() if non.any() else np.nan, 2) for s in scored]),
            trio([pct(s.merged[idx][dup].mean() if dup.any() else np.nan, 1) for s in scored]),
            f"{np.median(scored[0].dist[idx][dup]):.0f} / {np.median(scored[0].dist[idx][non]):.0f}"
            if dup.any() and non.any() else "-",
        ])
    for lang, g in pairs[pairs["dup"].notna()].groupby("lang"):
        idx = g.index.to_numpy()
        for label, mask in (("duplicates", (g["dup"] == 1).to_numpy()), ("non-duplicates", (g["dup"] == 0).to_numpy())):
            has = scored[0].has[idx][mask]
            hist = distance_histogram(scored[0].dist[idx][mask][has])
            hist_rows.append([lang, label, f"{mask.sum():,}", pct(1 - has.mean(), 1)]
                             + [pct(h, 1) for h in hist])
    over = [f"{r[0]} ({r[4].split(' / ')[0]})" for r in rows
            if not r[0].startswith(RAIL_EXCLUDED_DATASET_PREFIX) and _share_of(r[4]) > MAX_NON_DUP_MERGED]
    over_note = (
        "\n\nThe rail is ≤ 1% per dataset; these exceed it "
        f"for {methods[0].label}: " + ", ".join(over) + "." if over else ""
    )
    graded = pairs[pairs["dup"].isna() & pairs["score"].notna()]
    sts_rows = []
    for dataset, g in graded.groupby("dataset"):
        idx = g.index.to_numpy()
        per = [mean_by_score_bin(g["score"], pd.Series(s.dist[idx])) for s in scored]
        for b in sorted(per[0].index):
            sts_rows.append([dataset, b, f"{int(per[0].loc[b, 'size']):,}"]
                            + [f"{p.loc[b, 'mean']:.{_digits(m)}f}" for m, p in zip(methods, per)])
        sts_rows.append([dataset, "Spearman", f"{len(g):,}"]
                        + [num(spearman(pd.Series(s.dist[idx]), g["score"].reset_index(drop=True)), 3)
                           for s in scored])
    return (
        "## Sentence pairs\n\n"
        "Human labels of *same meaning*, not of near-duplicate text: simhash is not meant to find "
        "paraphrases, so duplicates merged is informative only; what must hold is that "
        "non-duplicates are (almost) never merged. PAWS-X non-duplicates are word-order "
        "permutations of one bag of words, built to fool bag-of-words models; they are shown "
        "here and left out of the rail. AUC: P(a duplicate pair is closer than a "
        "non-duplicate), ties half; a pair without two fingerprints counts as 64 bits apart.\n\n"
        + md_table(["dataset", "lang", "dups / non-dups", f"AUC ({names})",
                    f"non-dups merged ({names})", f"dups merged ({names})",
                    "ours: median bits dup / non"], rows)
        + over_note
        + "\n\n### Distance distribution (ours, default settings)\n\n"
        + "Share of the pairs with two fingerprints at each distance; `no fingerprint`: pairs where "
        "a text has fewer than min_features features (merged only if exact copies).\n\n"
        + md_table(["lang", "pairs", "n", "no fingerprint"]
                   + [f"{bin_label(lo, hi)} bits" for lo, hi in DIST_BINS], hist_rows)
        + "\n\n### Graded pairs: mean distance per score bin\n\n"
        f"Columns: {names} (bits; MinHashLSH: 1 - estimated Jaccard). The distance should fall as "
        "the score rises, and Spearman's rho of distance with score be negative.\n\n"
        + md_table(["dataset", "score", "pairs"] + [m.label for m in methods], sts_rows)
        + "\n"
    )


def documents_section(methods: Sequence, frames: dict[str, pd.DataFrame]) -> str:
    """Page <-> article per source, with median distances; same-site pairs that merged."""
    rows = []
    for name, label in (("page_article", "main"), ("page_article_all", "all")):
        frame = frames[name]
        scored = [m.score(frame) for m in methods]
        for source, g in frame.groupby("source"):
            idx = g.index.to_numpy()
            rows.append([source, f"--extract {label}", len(g),
                         trio([pct(s.merged[idx].mean(), 0) for s in scored]),
                         trio([f"{np.median(s.dist[idx]):.{_digits(m)}f}" for m, s in zip(methods, scored)]),
                         _jaccard_quantiles(scored[0].jaccard[idx])])
    names = " / ".join(m.label for m in methods)
    merged_rows, closest_rows = [], []
    for name in ("same_site", "same_site_all", "other_site", "other_site_all", "pan13", "unrelated"):
        frame = frames[name]
        for m in methods:
            s = m.score(frame)
            for i in np.flatnonzero(s.merged):
                r = frame.iloc[i]
                merged_rows.append([name, m.label, r.get("pair", f"pair {i}"), f"{s.dist[i]:.2f}".rstrip("0").rstrip(".")])
            if m is methods[0] and s.jaccard is not None and np.isfinite(s.jaccard).any():
                i = int(np.nanargmax(s.jaccard))
                closest_rows.append([name, f"{len(frame):,}", frame.iloc[i].get("pair", f"pair {i}"),
                                     f"{s.jaccard[i]:.3f}", str(s.dist[i])])
    regional = frames["regional"]
    regional_scored = [m.score(regional) for m in methods]
    regional_rows = []
    for variant, g in regional.groupby("variant", sort=False):
        idx = g.index.to_numpy()
        regional_rows.append([variant + (" (target)" if variant in REGIONAL_TARGET_VARIANTS else ""),
                              len(g), pct(g["exact"].mean(), 1),
                              trio([pct(sc.merged[idx].mean(), 1) for sc in regional_scored]),
                              f"{np.median(regional_scored[0].dist[idx]):.0f}"])
    text = (
        "## Pages and documents\n\n"
        f"Page ↔ its own article text, per source. Cells: {names}; distance in bits "
        "(MinHashLSH: 1 - estimated Jaccard).\n\n"
        + md_table(["source", "page text", "pairs", "recall", "median distance",
                    "ours: estimated Jaccard, 5th percentile / median"], rows)
        + "\n\nRegional copies (bench/regional.py): People's Daily articles and the readability "
        "pages qq, gmw (Simplified) and pixnet (Traditional) against their reprint by each OpenCC "
        "configuration (Simplified to Taiwan / Hong Kong, with or without phrases; Traditional "
        f"back to Simplified); exact: equal after `normalise`. Cells: {names}.\n\n"
        + md_table(["reprint", "pairs", "exact after normalise", "merged", "ours: median bits"], regional_rows)
        + "\n\nThe must-not-merge pair of each set that the sketches find most alike (ours; what "
        f"the sketch route's Jaccard threshold {DEFAULT_SKETCH.jaccard} and Hamming limit "
        f"{DEFAULT_SKETCH.max_distance} keep apart):\n\n"
        + md_table(["set", "pairs", "pair", "estimated Jaccard", "distance (bits)"], closest_rows)
        + "\n\nEvery must-not-merge document pair that merged (same site, pages of other sites: "
        f"{len(frames['other_site']):,} pairs with main text, {len(frames['other_site_all']):,} "
        "with all text; PAN-13):\n\n"
    )
    if merged_rows:
        text += md_table(["set", "method", "pair", "distance"], merged_rows) + "\n"
    else:
        text += "None, for any method.\n"
    return text


@dataclass
class ScoredRow:
    """A defaults-table row scored: its figures as set, at k + 1 (`looser`) and, for rows with
    `sketch_margin`, at k + 1 with the sketch route one step looser (`sketch_looser`)."""

    row: Row
    figures: Figures
    looser: Figures
    sketch_looser: Figures | None

    def holds(self, sketch_margin: bool) -> bool:
        """The rails hold as set and at k + 1, and with `sketch_margin` also with the sketch
        route one step looser (the rule for choosing a sketch parameter)."""
        ok = rails_hold(self.figures) and rails_hold(self.looser)
        if sketch_margin:
            ok = ok and self.sketch_looser is not None and rails_hold(self.sketch_looser)
        return ok

    @property
    def admissible(self) -> bool:
        """The row may be chosen: its rails hold with the margin its parameter needs."""
        return self.holds(self.row.sketch_margin)

    def margins(self) -> list[tuple[str, Figures]]:
        """(label, figures) of each looser setting scored."""
        out = [("at k + 1", self.looser)]
        if self.sketch_looser is not None:
            out.append(("with the sketch one step looser", self.sketch_looser))
        return out


def score_rows(rows: Sequence[Row], frames: dict[str, pd.DataFrame]) -> list[ScoredRow]:
    """Every row's figures, as set and looser (see `ScoredRow`)."""
    return [ScoredRow(r, figures(r.method, frames), figures(margin(r.method, sketch=False), frames),
                      figures(margin(r.method, sketch=True), frames) if r.sketch_margin else None)
            for r in rows]


def _doc_rails(f: Figures) -> str:
    """`same-site / other-site (main); (all); PAN-13 / unrelated` merged, one cell."""
    return (f"{f.same_site} / {f.other_site}; {f.same_site_all} / {f.other_site_all}; "
            f"{f.pan13} / {f.unrelated}")


def variants_table(scored: Sequence[ScoredRow]) -> str:
    """One line per variant: recall on every set, the rails as set and one step looser."""
    langs = list(scored[0].figures.dup)
    table = []
    for sr in scored:
        f, f1, f2 = sr.figures, sr.looser, sr.sketch_looser
        dataset, worst = worst_dataset(f)
        table.append([
            sr.row.parameter, sr.row.label, pct(f.page_recall, 0),
            " / ".join(pct(f.near_copy[x], 0) for x in EDIT_RATES),
            " / ".join(pct(f.edited[e], 0) for e in EDITS),
            f"{f.same_site} / {f.other_site}",
            f"{f.same_site_all} / {f.other_site_all}",
            f"{f.pan13} / {f.unrelated}",
            _doc_rails(f1),
            _doc_rails(f2) if f2 is not None else "-",
            f"{pct(worst, 2)} ({dataset})",
            " / ".join(pct(f.dup[lang], 1) for lang in langs),
            " / ".join(num(f.auc[lang], 3) for lang in langs),
            pct(recall_score(f), 1),
            rails_cell(f, sr.margins()),
        ])
    lang_cells = " / ".join(langs)
    rates = " / ".join(f"{x:.0%}" for x in EDIT_RATES)
    headers = ["supports", "variant", "page ↔ article", f"near-copies {rates}",
               "sentence added / footer appended / paragraph dropped",
               "merged, main text: same-site / other-site pages",
               "merged, all text: same-site / other-site pages",
               "merged: PAN-13 / unrelated documents",
               "at k + 1: main; all; PAN-13 / unrelated",
               "at k + 1, sketch one step looser: main; all; PAN-13 / unrelated",
               "non-dups merged, worst dataset",
               f"dups merged {lang_cells}", f"AUC {lang_cells}", "recall score", "rails hold"]
    return md_table(headers, table)


RULES_TEXT = (
    "The rails: non-duplicate sentence pairs merged ≤ 1% for every dataset on its own (PAWS-X "
    "aside), and no document pair that must stay apart merged, with pages in **both** extraction "
    "modes: main text (`--extract main`, what the job gives HTML) and all visible text "
    "(`extract_text(html, \"all\")`: what plain-text input that still carries boilerplate looks "
    "like, since the job extracts nothing from JSON/CSV/Parquet/text); PAN-13 and unrelated long "
    "documents are plain text, the same in both modes. Every rail must also hold **one step "
    "looser** (the must-not-merge samples are small next to a crawl): at k + 1 bits for every "
    "variant, and for the sketch route's defaults and variants also with the sketch one step "
    "looser at once: Jaccard threshold 0.05 lower, Hamming limit 2 bits higher (and k + 1). "
    "Among variants that hold them all, the "
    "better one has the higher recall score: the mean recall over page ↔ article, the near "
    "copies at every edit rate and the three structurally edited sets; ties (within 0.5 "
    "points) are decided on sentence pairs."
)


def defaults_section(rows: Sequence[Row], frames: dict[str, pd.DataFrame]) -> tuple[str, list[ScoredRow]]:
    """Each default varied around its value: the figures, which hold the rails, and the choice."""
    scored = score_rows(rows, frames)
    verdicts = []
    for parameter in dict.fromkeys(r.parameter for r in rows[1:]):
        group = [sr for sr in scored if sr.row.parameter == parameter]
        base_ok = scored[0].holds(sketch_margin=group[0].row.sketch_margin)
        verdicts.append(verdict(parameter, scored[0].figures, base_ok, group))
    text = (
        "## Defaults, each varied around its value\n\n"
        "One parameter changed at a time, everything else at its default, on the same texts "
        f"({len(frames['same_site'])} same-site pairs in main text, {len(frames['same_site_all'])} "
        f"in all text; {len(frames['other_site']):,} / {len(frames['other_site_all']):,} pairs of "
        f"pages of other sites; {len(frames['pan13']):,} PAN-13 pairs; "
        f"{len(frames['unrelated']):,} unrelated pairs). " + RULES_TEXT + " The `supports` column "
        "names the default a row is evidence for. There is no stopword list: the weighting "
        "decides how much frequent words count (`tf` is the no-stopword, no-IDF case).\n\n"
        + variants_table(scored)
        + "\n\n"
        + "\n".join(f"- {v}" for v in verdicts)
        + "\n"
    )
    return text, scored


def verdict(parameter: str, base: Figures, base_ok: bool, group: Sequence[ScoredRow]) -> str:
    """One sentence per parameter: is the default the best admissible choice, and why.

    base_ok: the default's rails hold with the margin this parameter needs; group: the
    variants of this parameter, scored.
    """
    base_score = recall_score(base)
    better = [(sr.row, sr.figures) for sr in group
              if sr.admissible and recall_score(sr.figures) > base_score + 0.005]
    ties = [(sr.row, sr.figures) for sr in group
            if sr.admissible and abs(recall_score(sr.figures) - base_score) <= 0.005]
    broken = [f"{sr.row.label} ({first_break(sr)})" for sr in group if not sr.admissible]
    text = f"**{parameter}**: the default (recall score {pct(base_score, 0)}"
    text += ", rails hold with margin, main and all text)" if base_ok else ", rails **broken** with margin)"
    holding = [sr for sr in group if sr.admissible]
    if not base_ok and holding:  # the default cannot stay: what holds, whatever it costs in recall
        best = max(holding, key=lambda sr: recall_score(sr.figures))
        text += (f"; **the best variant that holds the rails with margin: {best.row.label} (recall "
                 f"score {pct(recall_score(best.figures), 1)})**")
    elif not base_ok:
        text += "; **no variant of this parameter holds the rails with margin either**"
    if better:
        best_r, best_f = max(better, key=lambda rf: recall_score(rf[1]))
        text += (f"; **{best_r.label} scores higher ({pct(recall_score(best_f), 0)}) and holds the "
                 "rails with margin, main and all text, on these sets**: a candidate to change the default")
    else:
        text += "; no variant that holds the rails with margin in both modes finds more"
    if ties:  # same recall on long texts: the trade-off is on the short sentence pairs
        text += "; equal recall on long texts, the trade-off is on sentence pairs (non-duplicates " \
                f"merged in the worst dataset / duplicates merged, mean of languages; default " \
                f"{pct(worst_non_dup(base), 2)} / {pct(mean_dup(base), 1)}): " + ", ".join(
                    f"{r.label} {pct(worst_non_dup(f), 2)} / {pct(mean_dup(f), 1)}" for r, f in ties)
    if broken:
        text += "; rails broken (as set or one step looser) by: " + ", ".join(broken)
    if parameter == "k":  # recall is not free: the band join's cost grows with k
        text += ("; the band join's modelled cost at a billion pages (bands.plan_cost of the plan "
                 "the job would choose: rows shuffled + candidates), relative to k "
                 f"{DEFAULT_K}: " + ", ".join(f"k {k}: {join_cost(k) / join_cost(DEFAULT_K):.1f}x"
                                               for k in (2, 3, 4, 5))
                 + f" (k {DEFAULT_K} is the job's contract)")
    return text + "."


def margin_note(default: ScoredRow) -> str:
    """Whether the defaults' rails also hold one step looser (at k + 1; with the sketch route
    one step looser), in one sentence for the targets section."""
    if default.holds(sketch_margin=True):
        return "The rails also hold one step looser (at k + 1, and with the sketch one step looser)."
    return (f"**With margin, the rails do not all hold** ({first_break(default)}; see *Defaults, each "
            "varied around its value*).")


def first_break(sr: ScoredRow) -> str:
    """Where a row's rails first break: as set, or in which looser setting, and how."""
    if rail_breaks(sr.figures):
        return "as set: " + "; ".join(rail_breaks(sr.figures))
    for label, figs in sr.margins():
        if rail_breaks(figs):
            return f"{label}: " + "; ".join(rail_breaks(figs))
    return "not scored with the sketch one step looser"


def join_cost(k: int, pages: int = 10**9) -> float:
    """The cost model's figure for the band join at threshold k on `pages` fingerprints."""
    return bands.plan_cost(pages, k, bands.choose_plan(pages, k).blocks).cost


def method_section(args: argparse.Namespace, sets: Sets, wall: dict[str, float], anchors: dict) -> str:
    """How, where and on what this was measured."""
    pairs = sets.frames["pairs"]
    rows = [
        ["date", time.strftime("%Y-%m-%d %H:%M %Z")],
        ["machine", machine_line()],
        ["software", software(("datasketch", "simhash", "trafilatura"))],
        ["library", library_version()],
        ["command", "`.venv/bin/python -m bench.quality" + "".join(f" {a}" for a in args.argv) + "`"],
        ["page text", f"{sets.extractor}, then `normalise.normalise`; articles: the ground truth"],
        ["sentence pairs", f"{len(pairs):,} of {sets.total_pairs:,}"
         + (f" (random sample, seed {args.seed})" if len(pairs) < sets.total_pairs else " (all)")],
        ["near-copies", f"{sets.frames['synthetic']['a'].nunique()} article texts ≥ 300 characters, "
         f"one seeded copy (seed {args.seed}) per edit rate" + (" (seeded sample)" if args.quick else "")],
        ["MinHashLSH", f"{anchors['bands']} bands × {anchors['rows']} rows (datasketch's choice for "
         f"threshold {MINHASH_THRESHOLD}, {MINHASH_PERM} permutations)"],
        ["distinct texts", f"{len(sets.corpus.texts):,} ({sets.corpus.n_chars / 1e6:.1f} M characters)"],
        ["time", ", ".join(f"{k} {v:.0f} s" for k, v in wall.items())
         + f"; 1-minute load average at the end {os.getloadavg()[0]:.1f} (2 would be this run "
         "alone on 2 cores; more means other work shared the machine)"],
    ]
    return "## How this was measured\n\n" + md_table(["", ""], rows) + "\n"


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and its finished children (the pool)."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


# --------------------------------------------------------------------------- command line


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help="shared data folder (relative paths are from the repository root)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="markdown report to write")
    parser.add_argument("--quick", action="store_true",
                        help="seeded small samples of every set (4000 sentence pairs, 40 PAN-13 "
                        "pairs, a few sites): a smoke test, not a result")
    parser.add_argument("--max-pairs", type=int, default=None,
                        help="sample this many sentence pairs (None: all, or 4000 with --quick)")
    parser.add_argument("--workers", type=int, default=2, help="fingerprinting processes")
    parser.add_argument("--seed", type=int, default=SEED, help="seed of every sample and edit")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    data, out = resolve(args.data), resolve(args.out)
    problem = check_data(data)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    wall: dict[str, float] = {}
    t0 = time.perf_counter()
    log("loading, extracting and normalising")
    sets = load_sets(data, args.quick, args.seed, args.max_pairs)
    texts = sets.corpus.texts
    wall["load + extract"] = time.perf_counter() - t0
    log(f"{len(texts):,} distinct texts, {sets.corpus.n_chars / 1e6:.1f} M characters")

    t0 = time.perf_counter()
    variants = fingerprint_variants()
    fps = fingerprint_all(texts, [s for _, _, s in variants], args.workers)
    ours = job_methods(texts, variants, fps)
    wall["fingerprint (all variants)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    minhash = MinHashAnchor(texts)
    wall["MinHash"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    package = SimhashPackage(texts)
    wall["simhash pkg"] = time.perf_counter() - t0
    log("fingerprinted; scoring")

    t0 = time.perf_counter()
    # What the short-text policy and the sketch route add: simhash at k alone, beside the anchors.
    methods: list = [ours["default"], ours["default"].variant("simhash alone", policy=None, sketch=None),
                     minhash, package]
    rows = default_rows(ours, texts)
    figs = [figures(m, sets.frames) for m in methods]
    datasets = sorted(sets.frames["pairs"].loc[sets.frames["pairs"]["dup"].notna(), "dataset"].unique())
    defaults_text, scored = defaults_section(rows, sets.frames)
    sections = [
        targets_section([m.label for m in methods],
                        targets(figs, recall_sizes(sets.frames), datasets, sets.frames),
                        margin_note(scored[0])),
        headline_section(methods, figs, sets.frames, DEFAULT_K),
        documents_section(methods, sets.frames),
        sentence_section(methods, sets.frames),
        defaults_text,
    ]
    wall["score"] = time.perf_counter() - t0
    wall["CPU of all processes"] = cpu_seconds()
    sections.append(method_section(args, sets, wall,
                                   {"bands": minhash.bands, "rows": minhash.rows}))
    doc = (
        "# Detection quality, measured\n\n"
        "Written by `.venv/bin/python -m bench.quality` (do not edit by hand). What the job "
        "merges on every real set in `../shared/data`, beside datasketch's MinHashLSH and the "
        "`simhash` PyPI package on the same texts in the same run"
        + (" **(--quick: small samples, a smoke test, not a result)**" if args.quick else "")
        + ".\n\n" + "\n".join(sections)
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(doc, encoding="utf-8")
    log(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
