"""The guard rails a default must hold, and the recall that ranks the defaults that hold them,
over a method's `quality.Figures` (bench/quality.py's defaults table, bench/tune_defaults.py's
sketch route and short-text policy sweep).

The rails: non-duplicate sentence pairs merged <= 1% for every dataset on its own (PAWS-X
aside, see `pair_sets.RAIL_EXCLUDED_DATASET_PREFIX`), and no document pair that must stay
apart merged: different articles of one site and pages of other sites, with pages both as
`--extract main` gives them and as all visible text, PAN-13 documents sharing one passage,
unrelated long documents.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from bench.pair_sets import RAIL_EXCLUDED_DATASET_PREFIX
from bench.tables import pct

MAX_NON_DUP_MERGED = 0.01  # the guard rail on non-duplicate sentence pairs, per dataset


class RailFigures(Protocol):
    """What the rails and the recall score read of a method's figures (`quality.Figures`)."""

    page_recall: float
    same_site: int
    same_site_all: int
    other_site: int
    other_site_all: int
    pan13: int
    unrelated: int
    near_copy: dict[float, float]
    edited: dict[str, float]
    dup: dict[str, float]
    non_dup_by_dataset: dict[str, float]


def worst_dataset(f: RailFigures) -> tuple[str, float]:
    """The sentence-pair dataset whose non-duplicates merge most, PAWS-X aside, and that share
    ("-", NaN when there is none)."""
    defined = [(v, d) for d, v in f.non_dup_by_dataset.items()
               if not np.isnan(v) and not d.startswith(RAIL_EXCLUDED_DATASET_PREFIX)]
    if not defined:
        return "-", float("nan")
    value, dataset = max(defined)
    return dataset, value


def worst_non_dup(f: RailFigures) -> float:
    """The highest share of non-duplicate sentence pairs merged over the datasets."""
    return worst_dataset(f)[1]


def rail_breaks(f: RailFigures) -> list[str]:
    """Which guard rails a method breaks (empty: it holds them all)."""
    broken = []
    dataset, worst = worst_dataset(f)
    if not np.isnan(worst) and worst > MAX_NON_DUP_MERGED:
        broken.append(f"{dataset} non-dups {pct(worst, 2)}")
    for label, site, other in (("main text", f.same_site, f.other_site),
                               ("all text", f.same_site_all, f.other_site_all)):
        if site or other:
            broken.append(f"{label}: {site} same-site, {other} other-site")
    if f.pan13 or f.unrelated:
        broken.append(f"{f.pan13} PAN-13, {f.unrelated} unrelated")
    return broken


def rails_hold(f: RailFigures) -> bool:
    """All guard rails hold, pages in both extraction modes."""
    return not rail_breaks(f)


def rails_cell(f: RailFigures, margins: Sequence[tuple[str, RailFigures]]) -> str:
    """`yes`, or which rails break as set (`**no**`) or only in one of the looser settings
    `margins` ((label, figures), e.g. `at k + 1`)."""
    if rail_breaks(f):
        return "**no**: " + "; ".join(rail_breaks(f))
    for label, looser in margins:
        if rail_breaks(looser):
            return f"yes, **not {label}**: " + "; ".join(rail_breaks(looser))
    return "yes"


def recall_score(f: RailFigures) -> float:
    """What ranks variants that hold the rails: the mean recall over page <-> article, the
    near copies at every edit rate and the structurally edited copies."""
    return float(np.mean([f.page_recall, *f.near_copy.values(), *f.edited.values()]))


def mean_dup(f: RailFigures) -> float:
    """The mean over languages of the share of duplicate sentence pairs merged."""
    return float(np.nanmean(list(f.dup.values())))
