"""The defaults of the short-text policy and of the sketch route, chosen against the rails on
bench/quality.py's sets: the section of docs/defaults.md that bench/tune_defaults.py adds.

Two steps, each a variant of one parameter at a time around the job's defaults:
1. the short-text policy (`VerifyConfig`): among the thresholds whose rails hold (every
   sentence-pair dataset <= 1% on its own, PAWS-X aside, also at k + 1), the one that merges
   the most labelled duplicates (the least lost);
2. the sketch route (`SketchConfig`), under the policy of step 1: for each parameter, the value
   with the best recall score (`rails.recall_score`) among those whose rails hold as set and
   at k + 1 and with the sketch one step looser (`quality.margin`: k + 1, Jaccard threshold
   - 0.05, Hamming limit + 2 bits, at once), in both extraction modes; ties (within 0.5
   points) keep the default.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from bench.fingerprinting import fingerprint_all
from bench.quality import (
    DEFAULT_SKETCH,
    RULES_TEXT,
    Row,
    ScoredRow,
    default_setting,
    first_break,
    job_methods,
    load_sets,
    policy_rows,
    policy_text,
    score_rows,
    sketch_rows,
    sketch_text,
    variants_table,
)
from bench.rails import mean_dup, rail_breaks, recall_score, worst_dataset
from bench.tables import pct
from simhash_udf.core.config import SketchConfig, VerifyConfig

TIE = 0.005  # recall scores this close are equal


@dataclass
class RouteSweep:
    """The scored variants: the policy's (default first), then the sketch route's under the
    chosen policy (its default first)."""

    policy: list[ScoredRow]
    policy_choice: ScoredRow | None
    sketch: list[ScoredRow]
    sketch_choice: dict[str, ScoredRow]  # per parameter, the chosen row (the default when kept)
    together: ScoredRow | None  # the parameters chosen apart, scored together (None: all default)
    sizes: dict[str, int]


def choose_policy(scored: Sequence[ScoredRow]) -> ScoredRow | None:
    """The admissible threshold (the default, scored[0], or a `short-text policy` row: the
    length checked stays the default's) that merges the most labelled duplicates (mean of
    languages); ties to the first (the default comes first)."""
    thresholds = [scored[0]] + [sr for sr in scored[1:] if sr.row.parameter == "short-text policy"]
    ok = [sr for sr in thresholds if sr.holds(sketch_margin=False)]
    return max(ok, key=lambda sr: round(mean_dup(sr.figures), 4)) if ok else None


def choose_sketch(scored: Sequence[ScoredRow]) -> dict[str, ScoredRow]:
    """Per sketch parameter, the admissible value (the default, scored[0], among them) with
    the best recall score; the default unless another beats it by more than TIE, or when
    none is admissible."""
    base = scored[0]
    choice = {}
    for parameter in dict.fromkeys(sr.row.parameter for sr in scored[1:]):
        candidates = [base] + [sr for sr in scored[1:] if sr.row.parameter == parameter]
        ok = [sr for sr in candidates if sr.holds(sketch_margin=True)]
        best = max(ok, key=lambda sr: recall_score(sr.figures)) if ok else base
        if base.holds(sketch_margin=True) and recall_score(best.figures) <= recall_score(base.figures) + TIE:
            best = base
        choice[parameter] = best
    return choice


def sweep(data: Path, quick: bool, seed: int, max_pairs: int | None, workers: int) -> RouteSweep:
    """Load bench/quality.py's sets, sign them with the default setting, score both steps."""
    sets = load_sets(data, quick, seed, max_pairs)
    texts = sets.corpus.texts
    setting = default_setting()
    fps = fingerprint_all(texts, [setting], workers)
    base = job_methods(texts, [("default", setting.label, setting)], fps)["default"]
    default_row = Row("default", f"defaults (verify {policy_text(VerifyConfig())}, "
                      f"{sketch_text(DEFAULT_SKETCH)})", base)
    policy = score_rows([default_row] + policy_rows(base, texts), sets.frames)
    chosen = choose_policy(policy)
    if chosen is not None and chosen is not policy[0]:
        base = chosen.row.method
    sketch_base = Row("default", f"sketch defaults ({sketch_text(DEFAULT_SKETCH)}), "
                      f"{chosen.row.label if chosen else 'default policy'}", base, sketch_margin=True)
    sketch = score_rows([sketch_base] + sketch_rows(base), sets.frames)
    picks = choose_sketch(sketch)
    # Turning the route off is the fallback when no threshold holds; the others combine.
    combined = combine(sketch[0].row.method.sketch,
                       [sr.row.method.sketch for p, sr in picks.items() if p != "sketch route"])
    together = None
    if combined != sketch[0].row.method.sketch:
        label = f"chosen together: {sketch_text(combined)}"
        together = score_rows([Row("together", label, base.variant(label, sketch=combined), sketch_margin=True)],
                              sets.frames)[0]
    sizes = {name: len(frame) for name, frame in sets.frames.items()}
    return RouteSweep(policy, chosen, sketch, picks, together, sizes)


def combine(default: SketchConfig, chosen: Sequence[SketchConfig]) -> SketchConfig:
    """The default with every parameter that a chosen config changes changed (each chosen
    config differs from the default in one parameter, or none)."""
    changes = {}
    for config in chosen:
        for name in ("jaccard", "max_distance", "shingle", "min_chars"):
            if getattr(config, name) != getattr(default, name):
                changes[name] = getattr(config, name)
    return replace(default, **changes)


_VALUE = re.compile(r"(-?\d+(?:\.\d+)?)")


def picked_value(sr: ScoredRow, parameter: str) -> str:
    """The value a chosen row stands for: `0.8`, `off`, or `default` when the default is kept."""
    if sr.row.parameter != parameter:
        return "default"
    if "off" in sr.row.label:
        return "off"
    found = _VALUE.findall(sr.row.label)
    return found[0] if found else sr.row.label


def routes_section(s: RouteSweep) -> str:
    """The markdown section of docs/defaults.md."""
    p = s.policy_choice
    if p is None:
        policy_line = ("**No short-text policy holds the rails**: every threshold tried leaves a "
                       "dataset above 1% (as set or at k + 1).")
    else:
        dataset, worst = worst_dataset(p.figures)
        policy_line = (f"Chosen: **{p.row.label}** (worst dataset {dataset} {pct(worst, 2)} of its "
                       f"non-duplicates merged; duplicates merged, mean of languages "
                       f"{pct(mean_dup(p.figures), 1)}; at k + 1: "
                       + ("; ".join(rail_breaks(p.looser)) or "rails hold") + ").")
    base = s.sketch[0]
    picks = []
    for parameter, sr in s.sketch_choice.items():
        value = picked_value(sr, parameter)
        picks.append(f"**{parameter}**: " + (
            f"the default (recall score {pct(recall_score(base.figures), 1)}"
            + (")" if base.admissible else f"; its rails break {first_break(base)})")
            if value == "default" else
            f"**{value}** (recall score {pct(recall_score(sr.figures), 1)} against the default's "
            f"{pct(recall_score(base.figures), 1)}; rails hold as set and one step looser)"))
    return (
        "## The short-text policy and the sketch route\n\n"
        "Chosen by `bench/route_defaults.py` on bench/quality.py's sets (same seed; "
        f"{s.sizes['page_article']} page ↔ article pairs, {s.sizes['synthetic']} near copies, "
        f"{s.sizes['edited']} structurally edited articles, {s.sizes['pairs']:,} sentence pairs, "
        f"{s.sizes['same_site']} / {s.sizes['same_site_all']} same-site and "
        f"{s.sizes['other_site']:,} / {s.sizes['other_site_all']:,} other-site pairs in main / all "
        f"text, {s.sizes['pan13']} PAN-13 and {s.sizes['unrelated']:,} unrelated pairs). "
        + RULES_TEXT + "\n\n"
        "### 1. The short-text policy\n\n"
        "Among the thresholds whose rails hold with margin (the length checked kept at "
        f"{VerifyConfig().below_chars} characters; the length variants are shown), the one that "
        "merges the most labelled duplicates. " + policy_line + "\n\n"
        + variants_table(s.policy) + "\n\n"
        "### 2. The sketch route, under that policy\n\n"
        "Each parameter varied alone; per parameter, the admissible value with the best "
        "recall score (ties keep the default).\n\n"
        + variants_table(s.sketch + ([s.together] if s.together else [])) + "\n\n"
        + "\n".join(f"- {line}" for line in picks) + "\n"
        + (f"- **Together** ({s.together.row.label}, the table's last row): recall score "
           f"{pct(recall_score(s.together.figures), 1)}; rails "
           + ("hold as set and one step looser" if s.together.admissible else
              f"**break** {first_break(s.together)}")
           + ".\n" if s.together else "")
    )


def chosen_sketch(s: RouteSweep) -> SketchConfig:
    """The sketch route as chosen: every parameter's pick together (the default when none moved)."""
    return (s.together or s.sketch[0]).row.method.sketch
