"""bench/route_defaults.py: which policy and which sketch parameters it picks, on hand-made
figures whose right answer is known."""

from __future__ import annotations

from dataclasses import replace

from bench import quality
from bench.route_defaults import choose_policy, choose_sketch, combine
from simhash_udf.core.config import SketchConfig


def figures(**changes) -> quality.Figures:
    base = dict(page_recall=0.8, page_recall_all=0.1, same_site=0, same_site_all=0, other_site=0,
                other_site_all=0, pan13=0, unrelated=0, near_copy={0.01: 0.9, 0.03: 0.6, 0.05: 0.4},
                edited={"sentence added": 0.9, "footer appended": 0.9, "paragraph dropped": 0.9}, regional=0.99,
                non_dup={"zh": 0.005}, non_dup_by_dataset={"LCQMC": 0.009},
                dup={"en": 0.01, "zh": 0.05}, auc={"zh": 0.6}, sts_rho={})
    base.update(changes)
    return quality.Figures(**base)


def scored(parameter: str, label: str, f: quality.Figures, looser: quality.Figures | None = None,
           sketch: SketchConfig | None = None) -> quality.ScoredRow:
    """A row whose figures hold `looser` at k + 1 and with the sketch one step looser."""
    method = quality.Ours(None, label, sketch=sketch)  # type: ignore[arg-type]  # not scored here
    row = quality.Row(parameter, label, method, sketch_margin=sketch is not None)
    return quality.ScoredRow(row, f, looser or f, (looser or f) if sketch is not None else None)


def test_the_policy_that_holds_the_rails_and_loses_the_fewest_duplicates():
    rows = [
        scored("default", "0.5", figures(non_dup_by_dataset={"LCQMC": 0.012}, dup={"zh": 0.07})),
        scored("short-text policy", "0.55", figures(dup={"zh": 0.065}),
               looser=figures(non_dup_by_dataset={"LCQMC": 0.011})),
        scored("short-text policy", "0.6", figures(dup={"zh": 0.058})),
        scored("short-text policy", "0.7", figures(dup={"zh": 0.04})),
        scored("short-text length", "0.5 below 100", figures(dup={"zh": 0.06})),  # another parameter
    ]
    assert choose_policy(rows).row.label == "0.6"  # 0.5 breaks as set, 0.55 one step looser
    assert choose_policy(rows[:2]) is None


def test_sketch_picks_per_parameter_keep_the_default_on_ties_and_skip_broken_rails():
    d = SketchConfig()
    rows = [
        scored("default", "default", figures(), sketch=d),
        scored("sketch jaccard", "0.6", figures(page_recall=0.99), looser=figures(same_site_all=1),
               sketch=replace(d, jaccard=0.6)),
        scored("sketch jaccard", "0.7", figures(page_recall=0.9), sketch=replace(d, jaccard=0.7)),
        scored("sketch shingle", "2", figures(page_recall=0.802), sketch=replace(d, shingle=2)),
        scored("sketch min_chars", "150", figures(page_recall=0.5), sketch=replace(d, min_chars=150)),
    ]
    picks = choose_sketch(rows)
    assert picks["sketch jaccard"].row.label == "0.7"  # 0.6 finds more but breaks one step looser
    assert picks["sketch shingle"].row.label == "default"  # within the tie margin
    assert picks["sketch min_chars"].row.label == "default"
    assert combine(d, [sr.row.method.sketch for sr in picks.values()]) == replace(d, jaccard=0.7)


def test_the_policy_ignores_the_sketch_margin_and_the_sketch_needs_it():
    d = SketchConfig()
    default = quality.ScoredRow(quality.Row("default", "default", quality.Ours(None, "d", sketch=d),  # type: ignore[arg-type]
                                            sketch_margin=True), figures(), figures(), figures(same_site_all=1))
    assert choose_policy([default]) is default
    better = scored("sketch jaccard", "0.8", figures(page_recall=0.7), sketch=replace(d, jaccard=0.8))
    assert choose_sketch([default, better])["sketch jaccard"].row.label == "0.8"


def test_when_the_default_breaks_a_rail_the_best_admissible_value_is_picked():
    d = SketchConfig()
    rows = [
        scored("default", "default", figures(other_site_all=1), sketch=d),
        scored("sketch max_distance", "8", figures(page_recall=0.7), sketch=replace(d, max_distance=8)),
        scored("sketch max_distance", "10", figures(page_recall=0.75), sketch=replace(d, max_distance=10)),
    ]
    assert choose_sketch(rows)["sketch max_distance"].row.label == "10"
