"""Issue 13's targets, each beside what bench/quality.py measured: the top of docs/quality.md.

Recall targets are shares of a set's pairs merged (at least the target); rails are counts of
must-not-merge pairs merged (0) and, for every sentence-pair dataset on its own, the share of
its non-duplicates merged (at most 1%; PAWS-X is reported apart, see
`pair_sets.RAIL_EXCLUDED_DATASET_PREFIX`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from bench.pair_sets import RAIL_EXCLUDED_DATASET_PREFIX
from bench.rails import MAX_NON_DUP_MERGED
from bench.tables import md_table, pct

# (label, goal, the method's figure) of every recall target of issue 13; a figure is a
# `quality.Figures` attribute, NaN when the set was not measured.
RECALL_TARGETS: tuple[tuple[str, float, Callable[[Any], float]], ...] = (
    ("page ↔ article, --extract main", 0.92, lambda f: f.page_recall),
    ("near copies, 1% of words edited", 0.97, lambda f: f.near_copy.get(0.01, math.nan)),
    ("near copies, 3% of words edited", 0.85, lambda f: f.near_copy.get(0.03, math.nan)),
    ("near copies, 5% of words edited", 0.70, lambda f: f.near_copy.get(0.05, math.nan)),
    ("a real article, sentence added", 0.90, lambda f: f.edited.get("sentence added", math.nan)),
    ("a real article, footer appended", 0.90, lambda f: f.edited.get("footer appended", math.nan)),
    ("a real article, paragraph dropped", 0.90, lambda f: f.edited.get("paragraph dropped", math.nan)),
    ("regional copies (s2twp/s2hk and back)", 0.98, lambda f: f.regional),
)


@dataclass(frozen=True)
class Target:
    """One line of the targets table: the goal and each method's figure (NaN: not measured)."""

    label: str
    size: str
    goal: str
    values: list[float]
    is_count: bool  # a number of pairs merged (rails), else a share
    met: bool | None  # the first method meets the goal; None: not measured


def targets(figs: Sequence, sizes: dict[str, str], datasets: Sequence[str],
            frames: dict[str, pd.DataFrame]) -> list[Target]:
    """Every target of issue 13 with the figures of each method (figs: one `quality.Figures`
    per method, ours first). sizes: the pair count shown per recall label."""
    out = []
    for label, goal, figure in RECALL_TARGETS:
        values = [figure(f) for f in figs]
        measured = not np.isnan(values[0])
        out.append(Target(label, sizes.get(label, "-"), f"≥ {goal:.0%}", values, False,
                          bool(values[0] >= goal) if measured else None))
    for label, attribute, frame in (
        ("same-site different articles merged, main text", "same_site", "same_site"),
        ("same-site different articles merged, all text", "same_site_all", "same_site_all"),
        ("pages of other sites merged, main text", "other_site", "other_site"),
        ("pages of other sites merged, all text", "other_site_all", "other_site_all"),
        ("PAN-13 pairs sharing one passage merged", "pan13", "pan13"),
        ("unrelated long documents merged", "unrelated", "unrelated"),
    ):
        values = [float(getattr(f, attribute)) for f in figs]
        out.append(Target(label, f"{len(frames[frame]):,} pairs", "0", values, True, values[0] == 0))
    pairs = frames["pairs"]
    for dataset in datasets:
        n_non = int(((pairs["dataset"] == dataset) & (pairs["dup"] == 0)).sum())
        values = [f.non_dup_by_dataset.get(dataset, float("nan")) for f in figs]
        apart = dataset.startswith(RAIL_EXCLUDED_DATASET_PREFIX)
        out.append(Target(f"{dataset} sentence non-duplicates merged" + (" (reported apart)" if apart else ""),
                          f"{n_non:,} pairs", "-" if apart else f"≤ {MAX_NON_DUP_MERGED:.0%}", values,
                          False, None if apart else bool(values[0] <= MAX_NON_DUP_MERGED)))
    return out


def _cell(value: float, is_count: bool, digits: int) -> str:
    if np.isnan(value):
        return "-"
    return str(int(value)) if is_count else pct(value, digits)


def targets_section(names: Sequence[str], rows: Sequence[Target], margin_note: str = "") -> str:
    """The markdown section: each target, its size, its goal, each method's figure, met or not;
    `margin_note`: a sentence on the rails one step looser (see the defaults section)."""
    table = []
    for t in rows:
        digits = 2 if "non-duplicates" in t.label else 1
        verdict = "not measured" if t.met is None and t.goal != "-" else (
            "-" if t.met is None else ("met" if t.met else "**missed**"))
        table.append([t.label, t.size, t.goal, " / ".join(_cell(v, t.is_count, digits) for v in t.values),
                      verdict])
    missed = [t.label for t in rows if t.met is False]
    summary = ("Every measured target is met." if not missed
               else f"Missed: {len(missed)} of {sum(t.met is not None for t in rows)} measured targets ("
               + "; ".join(missed) + ").")
    return (
        "## Targets (issue 13)\n\n"
        f"Each target, the set it is measured on, and the figures of **{' / '.join(names)}** "
        "in this run; *met* judges the first (the job's defaults). " + summary
        + (" " + margin_note if margin_note else "") + "\n\n"
        + md_table(["target", "set", "goal", " / ".join(names), "ours: met?"], table)
        + "\n"
    )
