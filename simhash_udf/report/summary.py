"""The run's report: counts, histograms, the band plan and stage times, as `report.json`.

Plain data in, a dict out: the run (`simhash_udf.run.pipeline`) passes the frames to count,
the plan its finder used and the stage times and rows its `Stages` recorded. What --explain
prints is `simhash_udf.report.explain`.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from simhash_udf import __version__
from simhash_udf.core import bands
from simhash_udf.core.config import DedupeConfig
from simhash_udf.stages.clusters import DRIVER_MAX_DOCUMENTS, EXACT_DUPLICATE, KEPT, NEAR_DUPLICATE, SKIPPED
from simhash_udf.stages.documents import TOO_SHORT


def _size_bin(size: int) -> str:
    """Power-of-two bins: 1, 2, 3-4, 5-8, 9-16, ..."""
    if size <= 2:
        return str(size)
    hi = 1 << math.ceil(math.log2(size))
    return f"{hi // 2 + 1}-{hi}"


def summarise(
    clusters_frame: DataFrame, pairs_frame: DataFrame, cluster_sizes: DataFrame | None = None
) -> dict[str, Any]:
    """Counts of a result, as the report gives them.

    clusters_frame: `cluster_id`, `status`, `reason` (see `NearDuplicates.clusters`).
    pairs_frame: `distance` (fingerprint pairs, or pairs by id).
    cluster_sizes: `cluster_id`, `members`, one row per cluster of clusters_frame
    (`NearDuplicates.cluster_sizes`), or None to count every cluster's rows in clusters_frame
    (a shuffle of every document by cluster).
    Returns by_status, by_reason (status -> reason -> count), clusters, cluster_sizes
    (power-of-two bins: 1, 2, 3-4, 5-8, ...) and distances (distance -> pairs).
    """
    if cluster_sizes is None:
        cluster_sizes = clusters_frame.where(F.col("cluster_id").isNotNull()).groupBy("cluster_id").agg(
            F.count(F.lit(1)).alias("members")
        )
    # The three tables are a few dozen rows each: their keys are put in one frame and counted
    # by one aggregation, one shuffle (each source is still counted partially in its own tasks
    # before it), where an aggregation of each is a shuffle, so a Spark job, of its own.
    no_text, no_value = F.lit(None).cast("string"), F.lit(None).cast("long")
    keys = (
        clusters_frame.select(F.lit("status").alias("table"), "status", "reason", no_value.alias("value"))
        .unionByName(cluster_sizes.select(
            F.lit("size").alias("table"), no_text.alias("status"), no_text.alias("reason"),
            F.col("members").cast("long").alias("value"),
        ))
        .unionByName(pairs_frame.select(
            F.lit("distance").alias("table"), no_text.alias("status"), no_text.alias("reason"),
            F.col("distance").cast("long").alias("value"),
        ))
    )
    rows = keys.groupBy("table", "status", "reason", "value").count().collect()
    by_status: dict[str, int] = {}
    by_reason: dict[str, dict[str, int]] = {}
    for row in (r for r in rows if r["table"] == "status"):
        by_status[row["status"]] = by_status.get(row["status"], 0) + row["count"]
        if row["reason"] is not None:
            by_reason.setdefault(row["status"], {})[row["reason"]] = row["count"]
    sizes = sorted((r["value"], r["count"]) for r in rows if r["table"] == "size")
    size_hist: dict[str, int] = {}
    for size, count in sizes:
        key = _size_bin(size)
        size_hist[key] = size_hist.get(key, 0) + count
    # Sorted here, not by Spark: a few dozen rows, and an orderBy is two more Spark jobs.
    distances = sorted((r["value"], r["count"]) for r in rows if r["table"] == "distance")
    return {
        "by_status": by_status,
        "by_reason": by_reason,
        "clusters": sum(count for _, count in sizes),
        "cluster_sizes": size_hist,
        "distances": {str(distance): count for distance, count in distances},
    }


_TEXT_COUNTS = ("distinct_texts", "too_short_texts", "invalid_utf8_documents", "extract_fallbacks")


def text_counts(signed: DataFrame | None, rows: int | None = None) -> dict[str, int]:
    """distinct_texts, too_short_texts, invalid_utf8_documents and, for HTML input,
    extract_fallbacks, in one pass over the documents' signatures (signed: `exact_key`,
    `fingerprint`, `invalid_utf8`, `extract_fallback`); empty for input that carried its own
    fingerprints. rows: signed's rows, when known: up to `clusters.DRIVER_MAX_DOCUMENTS`
    (a small run, whose clusters the driver assigned too) they are counted on the driver from
    one collect of those columns (~40 bytes a row), where Spark's two distinct counts are three
    Spark jobs."""
    if signed is None:
        return {}
    if rows is not None and rows <= DRIVER_MAX_DOCUMENTS:
        return _text_counts_on_driver(signed)
    too_short = F.when(F.col("exact_key").isNotNull() & F.col("fingerprint").isNull(), F.col("exact_key"))
    row = signed.agg(
        F.count_distinct("exact_key").alias("distinct_texts"),
        F.count_distinct(too_short).alias("too_short_texts"),
        F.sum(F.col("invalid_utf8").cast("int")).alias("invalid_utf8_documents"),
        F.sum(F.col("extract_fallback").cast("int")).alias("extract_fallbacks"),
    ).first()
    return {key: int(row[key] or 0) for key in _TEXT_COUNTS}


def _text_counts_on_driver(signed: DataFrame) -> dict[str, int]:
    """`text_counts` from one collect of `signed`'s four columns."""
    table = signed.select("exact_key", "fingerprint", "invalid_utf8", "extract_fallback").toArrow()
    keys, fingerprints = table.column("exact_key").to_pylist(), table.column("fingerprint").to_pylist()
    return {
        "distinct_texts": len({key for key in keys if key is not None}),
        "too_short_texts": len({key for key, fp in zip(keys, fingerprints) if key is not None and fp is None}),
        "invalid_utf8_documents": sum(table.column("invalid_utf8").fill_null(False).to_pylist()),
        "extract_fallbacks": sum(table.column("extract_fallback").fill_null(False).to_pylist()),
    }


def build(
    *,
    config: DedupeConfig,
    input_path: str,
    fmt: str,
    started: float,
    input_rows: int,
    rejected: dict[str, int],
    summary: dict[str, Any],
    text_counts: dict[str, int],
    plan: bands.BandPlan,
    join_stats: dict[str, Any],
    self_join_plan: bands.BandPlan | None = None,
    stage_seconds: dict[str, float],
    stage_rows: dict[str, int],
    stage_jobs: dict[str, int] | None = None,
    spark_jobs: int | None = None,
) -> dict[str, Any]:
    """The report of a run (see the README's table of outputs for what each part means).

    plan, join_stats and self_join_plan: the finder's (`NearDuplicates.plan`,
    `NearDuplicates.join_stats`, `NearDuplicates.self_join_plan`);
    stage_seconds, stage_rows, stage_jobs: `Stages.seconds`, `Stages.rows` and `Stages.jobs`
    of the run; spark_jobs: the Spark jobs the whole run submitted (`Stages.spark_jobs`).
    """
    by_status, by_reason = summary["by_status"], summary["by_reason"]
    too_short = sum(
        n for status, reasons in by_reason.items() if status != SKIPPED
        for reason, n in reasons.items() if reason == TOO_SHORT
    )
    return {
        "simhash_udf_version": __version__,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "input": {"path": input_path, "format": fmt},
        "parameters": dataclasses.asdict(config),
        "counts": {
            "input_rows": input_rows,
            "rejected_rows": rejected,
            "documents": sum(by_status.values()),
            "skipped": by_reason.get(SKIPPED, {}),
            "too_short": too_short,
            "kept": by_status.get(KEPT, 0),
            "exact_duplicates": by_status.get(EXACT_DUPLICATE, 0),
            "near_duplicates": by_status.get(NEAR_DUPLICATE, 0),
            "clusters": summary["clusters"],
            **text_counts,
            "distinct_fingerprints": join_stats["distinct_fingerprints"],
        },
        "cluster_sizes": summary["cluster_sizes"],
        "band_plan": plan_summary(
            plan, join_stats["distinct_fingerprints"], join_stats.get("index_fingerprints"), self_join_plan
        ),
        "join": {
            # Comparisons made (each a pair checked by popcount): the two-level join's
            # candidates, plus, against an index, the lookup's (see `index.finder.join_counts`).
            "candidate_pairs": join_stats["candidate_pairs"],
            "verified_pairs": sum(summary["distances"].values()),
            "largest_bucket": join_stats["largest_bucket"],
            "hot_bucket_threshold": join_stats.get("hot_run_size", join_stats.get("hot_bucket_threshold")),
            "hot_buckets": join_stats.get("hot_buckets", []),
            # Hot buckets' pairs are summarised (`hot_runs.summarise_run`): pairs/ then holds
            # enough of them for exact clusters, not all of them.
            "summarised_buckets": join_stats.get("summarised_runs", 0),
            "summary_edges": join_stats.get("summary_edges", 0),
            "pairs_summarised": bool(join_stats.get("summarised_runs", 0)),
            **{key: join_stats[key] for key in _INDEX_JOIN_COUNTS if key in join_stats},
        },
        "distances": summary["distances"],
        "stage_seconds": dict(stage_seconds),
        "stage_rows": dict(stage_rows),
        "stage_jobs": dict(stage_jobs or {}),
        "spark_jobs": spark_jobs,
        "total_seconds": round(time.time() - started, 3),
    }


# The join counts a run against an index adds to report.json's `join` (`index.finder.join_counts`).
_INDEX_JOIN_COUNTS = (
    "self_join_candidate_pairs", "lookup_candidate_pairs", "self_join_summarised_runs", "hot_lookup_buckets",
)


def plan_summary(
    plan: bands.BandPlan, n: int, index_fingerprints: int | None = None, self_join_plan: bands.BandPlan | None = None
) -> dict[str, Any]:
    """The band plan as the report shows it: the plan that ran, how it was picked, and what
    the cost model expects of it for this run.

    n: the run's distinct fingerprints. chosen_by: `plan.reason` ("cost model for N distinct
    fingerprints", "--blocks", "the index's manifest (...)", ...). index_fingerprints: for a run against an index, the
    fingerprints it held; then `lookup` prices the lookup of the n against them
    (`bands.lookup_cost`), and expected_random_candidates is the self-join's plus the
    lookup's expected joined rows, so it estimates what join.candidate_pairs counts.
    self_join_plan: the plan of the batch's own band join when it is not `plan` (against an
    index: `NearDuplicates.self_join_plan`), shown as `self_join`; rows_shuffled,
    shuffle_bytes, sub_blocks and the self-join's part of expected_random_candidates are then
    its, since only the self-join shuffles band rows.
    """
    self_join = self_join_plan or plan
    cost = bands.plan_cost(max(n, 2), self_join.k, self_join.blocks)
    summary: dict[str, Any] = {
        "chosen_by": plan.reason,
        "k": plan.k,
        **_plan_shape(plan),
        "rows_shuffled": int(cost.rows_shuffled),
        "shuffle_bytes": int(cost.shuffle_bytes),
        "sub_blocks": cost.sub_blocks,
        "expected_random_candidates": round(cost.random_candidates, 1),
    }
    if index_fingerprints is not None:
        lookup = bands.lookup_cost(index_fingerprints, n, plan.k, plan.blocks)
        summary["lookup"] = {
            "index_fingerprints": index_fingerprints,
            "batch_fingerprints": n,
            "stored_rows_scanned": int(lookup.stored_rows_scanned),
            "batch_key_rows": int(lookup.batch_key_rows),
            "expected_stored_rows_met_per_fingerprint": float(f"{lookup.matches_per_batch_row:.4g}"),
            "expected_joined_rows": round(lookup.joined_rows, 1),
        }
        summary["expected_random_candidates"] = round(cost.random_candidates + lookup.joined_rows, 1)
    if self_join_plan is not None:
        summary["self_join"] = {"chosen_by": self_join_plan.reason, **_plan_shape(self_join_plan)}
    return summary


def _plan_shape(plan: bands.BandPlan) -> dict[str, Any]:
    """A plan's `blocks`, `tables` and `key_bits` (the distinct widths of its tables' keys)."""
    return {
        "blocks": plan.blocks,
        "tables": plan.n_tables,
        "key_bits": sorted({plan.key_bits(t) for t in range(plan.n_tables)}),
    }
