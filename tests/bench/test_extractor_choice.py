"""bench/extractors.py's choice rule (`eligible`, `choose`) on made-up figures: which extractor
the job should run given each candidate's quality and speed. The rule decides what
docs/extraction.md tells the job to do, so each of its clauses gets a case that turns on it."""

from __future__ import annotations

import pytest

from bench.extractors import (
    CANDIDATES, INCUMBENT, TARGET_JOB_RECALL, TARGET_PAGES_PER_S, choose, eligible,
)


def figures(within_k: float = 0.60, recall: float = 0.90, mean: float = 5.0, false_merges: int = 0,
            errors: int = 0) -> dict:
    """One candidate's quality figures in the shape `quality` gives them."""
    return {"both": {"within_k": within_k, "mean": mean}, "job_recall": recall,
            "false_merges": false_merges, "errors": errors}


def field(**overrides: dict) -> tuple[dict, dict]:
    """Every candidate below the bars and slow; the incumbent at 66% within k, 92.6% recall,
    88 pages/s; `overrides` maps a candidate to (its figures, its pages/s)."""
    q = {n: figures() for n in CANDIDATES}
    speed = {n: 50.0 for n in CANDIDATES}
    q[INCUMBENT], speed[INCUMBENT] = figures(within_k=0.66, recall=0.926, mean=3.3), 88.0
    for name, (quality, pages_per_s) in overrides.items():
        q[name], speed[name] = quality, pages_per_s
    return q, speed


FAST = "lexbor-readability"
OTHER_FAST = "resiliparse"
assert {FAST, OTHER_FAST, INCUMBENT} <= set(CANDIDATES)


def test_a_fast_candidate_as_good_as_the_incumbent_replaces_it():
    q, speed = field(**{FAST: (figures(within_k=0.67, recall=0.93, mean=3.0), 600.0)})
    assert eligible(q, speed) == [n for n in CANDIDATES if n in (INCUMBENT, FAST)]
    assert choose(q, speed) == FAST


@pytest.mark.parametrize("quality,why", [
    (figures(within_k=0.65, recall=0.95, mean=3.0), "fewer pages within k than the incumbent"),
    (figures(within_k=0.70, recall=TARGET_JOB_RECALL - 0.001, mean=3.0), "job rule recall under the target"),
    (figures(within_k=0.70, recall=0.95, mean=3.0, false_merges=1), "a same-site pair within k"),
    (figures(within_k=0.70, recall=0.95, mean=3.0, errors=1), "raises on a real page"),
])
def test_a_fast_candidate_below_a_quality_bar_does_not_replace_the_incumbent(quality, why):
    q, speed = field(**{FAST: (quality, 900.0)})
    assert FAST not in eligible(q, speed), why
    assert choose(q, speed) == INCUMBENT, why


def test_an_eligible_candidate_under_the_speed_target_does_not_replace_the_incumbent():
    q, speed = field(**{FAST: (figures(within_k=0.70, recall=0.95, mean=2.0), TARGET_PAGES_PER_S - 1)})
    assert FAST in eligible(q, speed)
    assert choose(q, speed) == INCUMBENT


def test_among_fast_eligible_candidates_the_fastest_within_ten_percent_first_in_order():
    good = figures(within_k=0.70, recall=0.95, mean=3.0)
    first, second = sorted((FAST, OTHER_FAST), key=CANDIDATES.index)
    q, speed = field(**{first: (good, 500.0), second: (good, 540.0)})
    assert choose(q, speed) == first          # 500 is within 10% of 540: order decides
    q, speed = field(**{first: (good, 500.0), second: (good, 700.0)})
    assert choose(q, speed) == second         # 700 is more than 10% faster


def test_without_an_eligible_incumbent_the_smallest_mean_distance_then_speed():
    q, speed = field(**{
        INCUMBENT: (figures(within_k=0.66, recall=0.80, mean=3.3), 88.0),   # recall under the target
        FAST: (figures(within_k=0.50, recall=0.80, mean=3.6), 600.0),         # a tie (within 0.5 bits), faster
        OTHER_FAST: (figures(within_k=0.50, recall=0.80, mean=3.2, false_merges=2), 900.0),  # unsafe
    })
    assert eligible(q, speed) == []
    assert choose(q, speed) == FAST
