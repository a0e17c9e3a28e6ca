"""`simhash_udf.report.summary`: the counts of report.json, against counts made in plain Python
over the same rows, and the band plan section against the cost model's parts."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from simhash_udf.core import bands
from simhash_udf.core.config import DedupeConfig
from simhash_udf.report import summary


def power_of_two_bin(size: int) -> str:
    """The bin a cluster size falls in, by counting: 1, 2, then (2^i, 2^(i+1)]."""
    if size <= 2:
        return str(size)
    hi = 4
    while hi < size:
        hi *= 2
    return f"{hi // 2 + 1}-{hi}"


def clusters_rows(seed: int) -> list[tuple]:
    """(id, cluster_id, status, reason) rows: clusters of random sizes, one kept document each,
    the others exact or near duplicates; empty documents skipped without a cluster."""
    rng = random.Random(seed)
    rows, next_id = [], 0
    for cluster in range(60):
        size = rng.choice([1, 1, 1, 2, 3, 4, 5, 8, 9, 17, 40])
        for member in range(size):
            status = "kept" if member == 0 else rng.choice(["exact_duplicate", "near_duplicate"])
            reason = "too_short" if status == "kept" and rng.random() < 0.1 else None
            rows.append((next_id, f"c{cluster}", status, reason))
            next_id += 1
    rows += [(next_id + i, None, "skipped", "empty") for i in range(7)]
    return rows


@pytest.mark.spark
def test_summarise_counts_what_python_counts(spark):
    rows = clusters_rows(3)
    frame = spark.createDataFrame(rows, "id long, cluster_id string, status string, reason string")
    rng = random.Random(4)
    distances = [rng.randint(1, 3) for _ in range(150)]
    pairs = spark.createDataFrame([(d,) for d in distances], "distance int")

    got = summary.summarise(frame, pairs)

    assert got["by_status"] == dict(Counter(status for _, _, status, _ in rows))
    by_reason: dict = {}
    for _, _, status, reason in rows:
        if reason is not None:
            by_reason.setdefault(status, Counter())[reason] += 1
    assert got["by_reason"] == {s: dict(c) for s, c in by_reason.items()}
    sizes = Counter(cluster for _, cluster, _, _ in rows if cluster is not None)
    assert got["clusters"] == len(sizes)
    assert got["cluster_sizes"] == dict(Counter(power_of_two_bin(n) for n in sizes.values()))
    assert got["distances"] == {str(d): n for d, n in sorted(Counter(distances).items())}


def test_build_adds_up_the_counts_and_keeps_the_stage_records():
    by_status = {"kept": 40, "exact_duplicate": 7, "near_duplicate": 9, "skipped": 3}
    result = summary.build(
        config=DedupeConfig(),
        input_path="in.jsonl",
        fmt="json",
        started=0.0,
        input_rows=61,
        rejected={"null_id": 2},
        summary={
            "by_status": by_status,
            "by_reason": {"skipped": {"empty": 3}, "kept": {"too_short": 4}},
            "clusters": 40,
            "cluster_sizes": {"1": 35, "2": 3, "3-4": 2},
            "distances": {"1": 5, "2": 6},
        },
        text_counts={"distinct_texts": 50},
        plan=bands.choose_plan(45, 3),
        join_stats={"distinct_fingerprints": 45, "candidate_pairs": 30, "largest_bucket": 4, "hot_run_size": 2000},
        stage_seconds={"read": 1.5, "verify": 2.0},
        stage_rows={"verify": 11},
    )
    c = result["counts"]
    assert c["documents"] == 59 and c["input_rows"] == c["documents"] + sum(c["rejected_rows"].values())
    assert (c["kept"], c["exact_duplicates"], c["near_duplicates"], c["skipped"]) == (40, 7, 9, {"empty": 3})
    assert c["too_short"] == 4  # skipped documents are empty, not too short
    assert result["join"]["verified_pairs"] == 11 and result["join"]["pairs_summarised"] is False
    assert result["stage_seconds"] == {"read": 1.5, "verify": 2.0} and result["stage_rows"] == {"verify": 11}
    assert result["band_plan"]["chosen_by"] == "cost model for 45 distinct fingerprints"


def test_the_plan_section_of_an_index_run_adds_the_lookups_expectation():
    plan = bands.BandPlan(3, 6, chosen_by=bands.CHOSEN_BY_MANIFEST)
    section = summary.plan_summary(plan, 1_000, index_fingerprints=50_000)
    self_join = bands.plan_cost(1_000, 3, 6)
    lookup = bands.lookup_cost(50_000, 1_000, 3, 6)
    assert section["chosen_by"] == "the index's manifest (6 blocks, fixed when the index was created)"
    assert section["tables"] == 20 and section["sub_blocks"] == plan.sub_blocks == 4
    assert section["lookup"]["stored_rows_scanned"] == 50_000 * 20
    assert section["expected_random_candidates"] == pytest.approx(
        self_join.random_candidates + lookup.joined_rows, abs=0.1
    )
    alone = summary.plan_summary(bands.BandPlan(3, 6, chosen_by=bands.CHOSEN_BY_BLOCKS), 1_000)
    assert "lookup" not in alone and alone["chosen_by"] == "--blocks"


@pytest.mark.spark
def test_summarise_reads_cluster_sizes_when_the_finder_gives_them(spark):
    """With `cluster_sizes` (the self-join's aggregate) the histogram and the cluster count
    come from it, and must be what Python counts in the clusters' rows."""
    rows = clusters_rows(5)
    frame = spark.createDataFrame(rows, "id long, cluster_id string, status string, reason string")
    sizes = Counter(cluster for _, cluster, _, _ in rows if cluster is not None)
    given = spark.createDataFrame(list(sizes.items()), "cluster_id string, members long")
    pairs = spark.createDataFrame([(1,)], "distance int")

    got = summary.summarise(frame, pairs, given)

    assert got["clusters"] == len(sizes)
    assert got["cluster_sizes"] == dict(Counter(power_of_two_bin(n) for n in sizes.values()))
    assert got == summary.summarise(frame, pairs)


@pytest.mark.spark
@pytest.mark.parametrize("on_driver", [True, False], ids=["driver", "spark"])
def test_text_counts_count_what_python_counts(spark, on_driver):
    """distinct_texts, too_short_texts and the two document counts, on the driver (a small
    run) or by Spark's aggregation, against counts made in plain Python over the same rows."""
    rng = random.Random(4)
    keys = [bytes([k]) * 8 for k in range(30)] + [None]
    rows = []
    for _ in range(500):
        key = rng.choice(keys)
        # A text's fingerprint follows from its key; some keys are too short for one.
        fingerprint = None if key is None or key[0] % 3 == 0 else key[0]
        rows.append((key, fingerprint, rng.choice([True, False, None]), rng.choice([True, False, None])))
    signed = spark.createDataFrame(rows, "exact_key binary, fingerprint long, invalid_utf8 boolean, extract_fallback boolean")
    counts = summary.text_counts(signed, len(rows) if on_driver else None)
    assert counts == {
        "distinct_texts": len({key for key, *_ in rows if key is not None}),
        "too_short_texts": len({key for key, fp, *_ in rows if key is not None and fp is None}),
        "invalid_utf8_documents": sum(1 for *_, invalid, _ in rows if invalid),
        "extract_fallbacks": sum(1 for *_, fallback in rows if fallback),
    }
    assert 0 < counts["too_short_texts"] < counts["distinct_texts"]
