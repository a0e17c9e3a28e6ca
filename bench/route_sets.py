"""The pair sets and pair figures bench/recall_routes.py scores every route on (pure numpy
over bench/quality.py's sets; no Spark).

A set is a frame of corpus index pairs (`a`, `b`, `exact`); every text is fingerprinted and
sketched once (`Signals`), and each set's pairs carry their Hamming distance, estimated
Jaccard and today's decision (`PairData`). A route is a function of a set's `PairData` to a
merged flag per pair; `summarise` turns the flags into recall per recall set and merges per
rail.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from bench import quality
from bench.edited_copies import EDITS
from bench.pair_sets import DistinctTexts
from bench.tables import pct
from simhash_udf.core.config import FingerprintConfig, SketchConfig, VerifyConfig
from simhash_udf.core.sketch import estimated_jaccard
from simhash_udf.core.short_text_policy import keeps

FP = FingerprintConfig()
SKETCH = SketchConfig()
K = 3  # today's band join threshold (DedupeConfig's default)

# (set name, column label): the sets a route should merge, and those it must not.
RECALL_SETS = (
    ("page_article", "page ↔ article"),
    ("near1", "near 1%"),
    ("near3", "near 3%"),
    ("near5", "near 5%"),
    *((edit, edit) for edit in EDITS),
)
# Recall shown beside them but left out of the mean: pages with all visible text (boilerplate
# a recall rule should not need to see through) and issue 13's regional Chinese reprints
# (a question of normalisation rather than of the candidate route).
INFO_SETS = (("page_article_all", "page ↔ article, all text"), ("regional", "regional reprints"))
NEAR_RATES = (0.01, 0.03, 0.05)
RAIL_SETS = ("same_site", "other_site", "same_site_all", "other_site_all", "pan13", "unrelated")


# --------------------------------------------------------------------------- sets


def load_frames(data: Path, quick: bool, seed: int) -> tuple[DistinctTexts, dict[str, pd.DataFrame], str]:
    """bench/quality.py's document sets (no sentence pairs), the near-copies split by edit rate
    (`near1`, `near3`, `near5`), the edited copies by edit (`edited_copies.EDITS`) and the
    regional reprints of its target variants (`regional`); returns (corpus, frames by name,
    the extractor note)."""
    sets = quality.load_sets(data, quick, seed, max_pairs=0)
    frames = {name: f for name, f in sets.frames.items() if name not in ("pairs", "synthetic", "edited")}
    synthetic, edited = sets.frames["synthetic"], sets.frames["edited"]
    for rate in NEAR_RATES:
        frames[f"near{round(rate * 100)}"] = synthetic[synthetic["rate"] == rate].reset_index(drop=True)
    for edit in EDITS:
        frames[edit] = edited[edited["edit"] == edit].reset_index(drop=True)
    regional = frames["regional"]
    frames["regional"] = regional[regional["variant"].isin(quality.REGIONAL_TARGET_VARIANTS)].reset_index(drop=True)
    return sets.corpus, frames, sets.extractor


# --------------------------------------------------------------------------- pair figures


@dataclass
class Signals:
    """Every corpus text's fingerprint and sketch (`fingerprint.signatures`, job defaults)."""

    fingerprint: np.ndarray  # int64
    n_features: np.ndarray  # int32
    sketch: np.ndarray  # uint16 (texts, SKETCH.size)
    has_sketch: np.ndarray  # bool: at least SKETCH.min_chars characters


@dataclass
class PairData:
    """One pair set's figures: `a`, `b` (corpus indices), `ham` (default fingerprints' bits),
    `est` (sketches' estimated Jaccard, 0 without two sketches), `long` (both texts have a
    sketch) and `today` (merged by the job today: exact, or within k = 3 with its policy)."""

    a: np.ndarray
    b: np.ndarray
    ham: np.ndarray
    est: np.ndarray
    long: np.ndarray
    today: np.ndarray


def chunked(a: np.ndarray, b: np.ndarray, pairwise: Callable[[np.ndarray, np.ndarray], np.ndarray],
            size: int = 50_000) -> np.ndarray:
    """pairwise(rows of a, rows of b) over the pairs in chunks (bounds memory on 400k pairs)."""
    if len(a) == 0:
        return np.zeros(0)
    return np.concatenate([pairwise(a[s:s + size], b[s:s + size]) for s in range(0, len(a), size)])


def simhash_rule(frame: pd.DataFrame, values: np.ndarray, n_features: np.ndarray,
                 texts: Sequence[str]) -> np.ndarray:
    """The job's decision without the sketch, per pair of the frame: exact copies, or both
    texts fingerprinted (`min_features`) and at most k = 3 bits apart, a pair whose shorter
    text is below the short-text policy's length also reaching its Jaccard (`keeps`)."""
    a, b = frame["a"].to_numpy(), frame["b"].to_numpy()
    exact = frame["exact"].to_numpy(dtype=bool)
    both = np.minimum(n_features[a], n_features[b]) >= FP.min_features
    merged = exact | (both & (quality.hamming_many(values[a], values[b]) <= K))
    policy = VerifyConfig()
    for i in np.flatnonzero(merged & ~exact):  # keeps() passes pairs it does not check
        merged[i] = keeps(texts[a[i]], texts[b[i]], policy)
    return merged


def pair_data(frame: pd.DataFrame, sig: Signals, texts: Sequence[str]) -> PairData:
    """The figures of one pair frame (see `PairData`)."""
    a, b = frame["a"].to_numpy(), frame["b"].to_numpy()
    long = sig.has_sketch[a] & sig.has_sketch[b]
    est = chunked(a, b, lambda x, y: estimated_jaccard(sig.sketch[x], sig.sketch[y]))
    return PairData(a, b, quality.hamming_many(sig.fingerprint[a], sig.fingerprint[b]),
                    np.where(long, est, 0.0), long, simhash_rule(frame, sig.fingerprint, sig.n_features, texts))


Route = Callable[[PairData], np.ndarray]


def summarise(merged: dict[str, np.ndarray]) -> dict[str, float]:
    """Recall (share merged) on each recall and informative set; count merged on each rail
    set. merged: a bool per pair, by set name."""
    out: dict[str, float] = {}
    for name, _ in RECALL_SETS + INFO_SETS:
        out[name] = float(merged[name].mean())
    for name in RAIL_SETS:
        out[name] = int(np.count_nonzero(merged[name]))
    return out


def evaluate(route: Route, pairs: dict[str, PairData]) -> dict[str, float]:
    """`summarise` of a route applied to every set."""
    return summarise({name: route(p) for name, p in pairs.items()})


def result_cells(r: dict[str, float]) -> list[str]:
    """Recall cells, then rails: main same-site / other-site; all text; PAN-13 / unrelated."""
    return ([pct(r[name], 1) for name, _ in RECALL_SETS + INFO_SETS]
            + [f"{r['same_site']} / {r['other_site']}", f"{r['same_site_all']} / {r['other_site_all']}",
               f"{r['pan13']} / {r['unrelated']}"])


def result_headers(pairs: dict[str, PairData]) -> list[str]:
    """Column names with each set's size."""
    return ([f"{label} ({len(pairs[name].a)})" for name, label in RECALL_SETS]
            + [f"{label} ({len(pairs[name].a)}; not in the mean)" for name, label in INFO_SETS]
            + [f"merged, main: same-site ({len(pairs['same_site'].a)}) / other-site "
               f"({len(pairs['other_site'].a):,})",
               f"merged, all text: same-site ({len(pairs['same_site_all'].a)}) / other-site "
               f"({len(pairs['other_site_all'].a):,})",
               f"merged: PAN-13 ({len(pairs['pan13'].a)}) / unrelated ({len(pairs['unrelated'].a):,})"])


def rails_hold(r: dict[str, float]) -> bool:
    return all(r[name] == 0 for name in RAIL_SETS)


def mean_recall(r: dict[str, float]) -> float:
    """The mean over the recall sets (what ranks routes that hold the rails)."""
    return float(np.mean([r[name] for name, _ in RECALL_SETS]))


