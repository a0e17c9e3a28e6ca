"""The run's report: counts, histograms, the band plan and stage times, as `report.json`."""

from __future__ import annotations

import dataclasses
import math
import time
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from simhash_udf import __version__
from simhash_udf.core import bands
from simhash_udf.core.config import DedupeConfig
from simhash_udf.run.progress import DEFAULT_INTERVAL
from simhash_udf.stages.clusters import EXACT_DUPLICATE, KEPT, NEAR_DUPLICATE, SKIPPED
from simhash_udf.stages.documents import TOO_SHORT

if TYPE_CHECKING:
    from simhash_udf.run.pipeline import Stages


def _size_bin(size: int) -> str:
    """Power-of-two bins: 1, 2, 3-4, 5-8, 9-16, ..."""
    if size <= 2:
        return str(size)
    hi = 1 << math.ceil(math.log2(size))
    return f"{hi // 2 + 1}-{hi}"


def summarise(clusters_frame: DataFrame, pairs_frame: DataFrame) -> dict[str, Any]:
    """Counts of a result, as the report gives them.

    clusters_frame: `cluster_id`, `status`, `reason` (see `NearDuplicates.clusters`).
    pairs_frame: `distance` (fingerprint pairs, or pairs by id).
    Returns by_status, by_reason (status -> reason -> count), clusters, cluster_sizes
    (power-of-two bins: 1, 2, 3-4, 5-8, ...) and distances (distance -> pairs).
    """
    status_rows = clusters_frame.groupBy("status", "reason").count().collect()
    by_status: dict[str, int] = {}
    by_reason: dict[str, dict[str, int]] = {}
    for row in status_rows:
        by_status[row["status"]] = by_status.get(row["status"], 0) + row["count"]
        if row["reason"] is not None:
            by_reason.setdefault(row["status"], {})[row["reason"]] = row["count"]
    sizes = (
        clusters_frame.where(F.col("cluster_id").isNotNull())
        .groupBy("cluster_id").count()
        .groupBy(F.col("count").alias("size")).count()
        .collect()
    )
    size_hist: dict[str, int] = {}
    for row in sorted(sizes, key=lambda r: r["size"]):
        key = _size_bin(row["size"])
        size_hist[key] = size_hist.get(key, 0) + row["count"]
    distances = pairs_frame.groupBy("distance").count().orderBy("distance").collect()
    return {
        "by_status": by_status,
        "by_reason": by_reason,
        "clusters": sum(r["count"] for r in sizes),
        "cluster_sizes": size_hist,
        "distances": {str(r["distance"]): r["count"] for r in distances},
    }


def text_counts(texts: DataFrame | None, normalised: DataFrame | None) -> dict[str, int]:
    """distinct_texts, too_short_texts (texts: `fingerprint`), invalid_utf8_documents
    (normalised: `invalid_utf8`) and, for HTML input, extract_fallbacks (normalised:
    `extract_fallback`); empty for input that carried its own fingerprints."""
    counts: dict[str, int] = {}
    if texts is not None:
        row = texts.agg(
            F.count(F.lit(1)).alias("distinct_texts"),
            F.sum(F.col("fingerprint").isNull().cast("int")).alias("too_short_texts"),
        ).first()
        counts = {"distinct_texts": row["distinct_texts"], "too_short_texts": row["too_short_texts"] or 0}
    if normalised is not None:
        row = normalised.agg(
            F.sum(F.col("invalid_utf8").cast("int")).alias("invalid_utf8_documents"),
            F.sum(F.col("extract_fallback").cast("int")).alias("extract_fallbacks"),
        ).first()
        counts["invalid_utf8_documents"] = row["invalid_utf8_documents"] or 0
        counts["extract_fallbacks"] = row["extract_fallbacks"] or 0
    return counts


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
    stages: Stages,
) -> dict[str, Any]:
    """The report of a run (see the README's table of outputs for what each part means)."""
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
            plan, join_stats["distinct_fingerprints"], config.blocks is None, join_stats.get("index_fingerprints")
        ),
        "join": {
            # Comparisons made (each a pair checked by popcount): the two-level join's
            # candidates, plus, against an index, the lookup's (see `index_run.join_counts`).
            "candidate_pairs": join_stats["candidate_pairs"],
            "verified_pairs": sum(summary["distances"].values()),
            "largest_bucket": join_stats["largest_bucket"],
            "hot_bucket_threshold": join_stats.get("hot_run_size", join_stats.get("hot_bucket_threshold")),
            "hot_buckets": join_stats.get("hot_buckets", []),
            # Hot buckets' pairs are summarised (join_kernel.summarise_run): pairs/ then holds
            # enough of them for exact clusters, not all of them.
            "summarised_buckets": join_stats.get("summarised_runs", 0),
            "summary_edges": join_stats.get("summary_edges", 0),
            "pairs_summarised": bool(join_stats.get("summarised_runs", 0)),
            **{key: join_stats[key] for key in _INDEX_JOIN_COUNTS if key in join_stats},
        },
        "distances": summary["distances"],
        "stage_seconds": dict(stages.seconds),
        "stage_rows": dict(stages.rows),
        "total_seconds": round(time.time() - started, 3),
    }


# The join counts a run against an index adds to report.json's `join` (`index_run.join_counts`).
_INDEX_JOIN_COUNTS = (
    "self_join_candidate_pairs", "lookup_candidate_pairs", "self_join_summarised_runs", "hot_lookup_buckets",
)


def plan_summary(
    plan: bands.BandPlan, n: int, chosen_by_model: bool = True, index_fingerprints: int | None = None
) -> dict[str, Any]:
    """The band plan as the report shows it: the plan that ran, how it was picked, and what
    the cost model expects of it for this run.

    n: the run's distinct fingerprints. chosen_by: `plan.reason` ("cost model for N distinct
    fingerprints", "--blocks", "the index's manifest (...)", ...); a plan that does not say
    falls back on chosen_by_model. index_fingerprints: for a run against an index, the
    fingerprints it held; then `lookup` prices the lookup of the n against them
    (`bands.lookup_cost`), and expected_random_candidates is the self-join's plus the
    lookup's expected joined rows, so it estimates what join.candidate_pairs counts.
    """
    cost = bands.plan_cost(max(n, 2), plan.k, plan.blocks)
    if plan.chosen_by:
        chosen_by = plan.reason
    else:
        chosen_by = "cost model" if chosen_by_model else "--blocks"
    summary: dict[str, Any] = {
        "chosen_by": chosen_by,
        "k": plan.k,
        "blocks": plan.blocks,
        "tables": plan.n_tables,
        "key_bits": sorted({plan.key_bits(t) for t in range(plan.n_tables)}),
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
    return summary


def run_stages(
    fmt: str | None, fingerprint_col: bool = False, write_pairs: bool = True, verify_texts: bool = True
) -> list[tuple[str, str]]:
    """The stages a run goes through, in order, as (name, what it does): the names are those
    of the progress lines and of `stage_seconds` in the report. fmt: the input format (None:
    not known yet, the parse stage is listed as conditional); verify_texts: the short-text
    policy (`--verify`) is on, which runs only when the input has texts."""
    stages = [("read", "list the input files and read the schema")]
    if fmt in ("json", "csv"):
        stages.append(("parse", "parse every line once into the work folder"))
    elif fmt in ("warc", "wet"):
        stages.append(("parse", "read every record, one task per file, into the work folder; count them by reason"))
    elif fmt is None:
        stages.append(("parse", "(JSON, CSV, WARC and WET input only) parse every line or record once into the work folder"))
    stages.append(("check_ids", "set aside rows without an id; check the ids are unique"))
    if fingerprint_col:
        stages.append(("fingerprint", "take the fingerprints the input carries"))
    else:
        stages += [
            ("normalise", "decode, extract text from HTML, NFKC, Simplified Chinese, case, whitespace; exact keys"),
            ("fingerprint", "tokenise and fingerprint each distinct text"),
            ("document_fingerprints", "give every document its text's fingerprint"),
        ]
    stages += [
        ("distinct_fingerprints", "one row per distinct fingerprint"),
        ("verify", "band join: shuffle band rows by (table, key), then per partition in numpy sub-blocks, "
         "candidates verified by popcount, hot buckets summarised"),
        ("candidates", "read the join's counts: candidate pairs, largest and hot buckets"),
    ]
    if verify_texts and not fingerprint_col:
        stages.append(("verify_texts", "pairs of short texts: keep those whose shingles' Jaccard reaches --verify"))
    stages += [
        ("components", "connected components, one line per round"),
        ("clusters", "write clusters/"),
    ]
    if write_pairs:
        stages += [("pairs", "write pairs/"), ("sample_pairs", "collect a few pairs for report.html")]
    stages += [("deduped", "write deduped/"), ("report", "count everything; check every input row is accounted for")]
    return stages


@dataclasses.dataclass(frozen=True)
class IndexExplain:
    """What --explain knows of the --index a run would use.

    plan: the manifest's plan of an existing index (None: the run would create the index and
    choose its plan with `bands.choose_index_plan`). fingerprints: the fingerprints it holds
    (0 for a new one). expected_size: --index-size (what a new index is planned for).
    """

    path: str
    plan: bands.BandPlan | None
    fingerprints: int
    expected_size: int


def explain(
    n: int,
    k: int,
    blocks: int | None,
    *,
    fmt: str | None = None,
    fingerprint_col: bool = False,
    write_pairs: bool = True,
    verify_texts: bool = True,
    index: IndexExplain | None = None,
) -> str:
    """What `--explain` prints: the band plan a run would use and why, the other plans it was
    chosen from, the candidate pairs to expect, and the stages the run would go through (fmt,
    fingerprint_col, write_pairs, verify_texts: see `run_stages`).

    n is the input's row count, an upper bound on the distinct fingerprints the run plans
    for: said so, since the run may then pick fewer blocks (report.json's
    `band_plan.chosen_by` names the plan that ran and the number it was priced for).
    index: the run is against an index: its plan is the manifest's (or, for a new index, the
    lookup cost model's for --index-size), priced for the lookup of n fingerprints.
    """
    if index is None:
        lines = _explain_self_join(n, k, blocks)
    else:
        lines = _explain_index(n, k, blocks, index)
    lines.append(
        f"stages of the run (each logs its start, its progress every {DEFAULT_INTERVAL:.0f} s while "
        "it runs, and its time and rows at its end):"
    )
    # Runs against an index do not apply the short-text policy (see `pipeline._run_staged`).
    stages = run_stages(fmt, fingerprint_col, write_pairs, verify_texts and index is None)
    if index is not None:
        stages = _with_index_stages(stages, index.plan is not None)
    for name, what in stages:
        lines.append(f"  {name:<22} {what}")
    return "\n".join(lines)


def _with_index_stages(stages: list[tuple[str, str]], existing: bool) -> list[tuple[str, str]]:
    """`run_stages` with the stages of a run against an index (`index_run.IndexSession.find`)
    in their places. existing: the index has entries (a new one has no clusters to read)."""
    out: list[tuple[str, str]] = []
    for name, what in stages:
        if name == "distinct_fingerprints":
            out.append(("index_ids", "documents whose id the index already holds are skipped (id_in_index)"))
        out.append((name, what))
        if name == "distinct_fingerprints":
            out.append((
                "index_lookup",
                "the index's key rows that share a batch key (one scan), bucket sizes, the matches; "
                "hot buckets summarised",
            ))
        if name == "components":
            if existing:
                out.append(("index_clusters", "the indexed cluster each component touching the index joins"))
            out += [
                ("index_assign", "cluster and status of every document, indexed clusters first"),
                ("index_pairs", "the pairs with at least one fingerprint new to the index"),
                ("index_write", "write the run's entries and keys into its new segment"),
            ]
    return out


def _explain_self_join(n: int, k: int, blocks: int | None) -> list[str]:
    """--explain without an index: the self-join's plans for n rows (`bands.plan_costs`)."""
    chosen = bands.choose_plan(n, k, blocks)
    # The chosen plan and a few wider ones: further rows only add tables.
    costs = [c for c in bands.plan_costs(max(n, 2), k) if c.blocks <= chosen.blocks + 3]
    if all(c.blocks != chosen.blocks for c in costs):
        costs.append(bands.plan_cost(max(n, 2), k, chosen.blocks))
    why = f"chosen by the cost model for {n:,} rows" if blocks is None else "--blocks"
    lines = [
        f"band plans for {n:,} fingerprints (the input's rows: an upper bound on the distinct ones), k = {k}:",
        f"  {'blocks':>6} {'tables':>6} {'key bits':>9} {'rows shuffled':>14} "
        f"{'random candidates':>18} {'bucket pairs':>16} {'shuffle bytes':>14} {'partitions':>10}",
    ]
    for c in costs:
        mark = f"  <- {why}" if c.blocks == chosen.blocks else ""
        lines.append(
            f"  {c.blocks:>6} {c.tables:>6} {_bits(c.min_key_bits, c.max_key_bits):>9} {c.rows_shuffled:>14,.0f} "
            f"{c.random_candidates:>18,.0f} {c.bucket_pairs:>16,.0f} {c.shuffle_bytes:>14,.0f} "
            f"{c.partitions:>10,}{mark}"
        )
    lines.append(
        "Every pair within k is found whatever the plan; a plan only changes the cost: "
        "rows shuffled = fingerprints x tables (each sent to the partition of its table's key); "
        f"inside a bucket the other bits are cut into k + 1 = {k + 1} sub-blocks, and random "
        "candidates = pairs sharing a key and a sub-block by chance (each checked with popcount "
        "and dropped); bucket pairs = pairs sharing a key, what verifying whole buckets would cost."
    )
    if blocks is None:
        lines.append(
            f"The run plans for its distinct fingerprints, at most these {n:,} rows (exact copies and "
            "too-short texts count once or not at all): with fewer it may choose fewer blocks. "
            "report.json's band_plan.chosen_by names the plan that ran and the number it was priced for."
        )
    cost = bands.plan_cost(max(n, 2), k, chosen.blocks)
    lines.append(
        f"expected candidate pairs with the chosen plan: about {cost.random_candidates:,.0f} by chance "
        "(fingerprints spread at random), plus the near-duplicate pairs themselves, which only "
        "the run counts (report.json: join.candidate_pairs, the comparisons made)."
    )
    return lines


def _explain_index(n: int, k: int, blocks: int | None, index: IndexExplain) -> list[str]:
    """--explain with --index: the manifest's plan, or a new index's lookup plans."""
    m = max(n, 2)
    lines = []
    if index.plan is not None:
        chosen = index.plan
        why = "the index's manifest"
        lines.append(
            f"band plan: from the manifest of the index {index.path}: k = {chosen.k}, {chosen.blocks} "
            f"blocks, {chosen.n_tables} tables, fixed when the index was created (--k must equal it; "
            "--blocks must be left out or equal)."
        )
        if chosen.k != k or (blocks is not None and blocks != chosen.blocks):
            lines.append(
                f"This run asks for k = {k}{f', --blocks {blocks}' if blocks is not None else ''}: "
                "it would be refused (exit code 2)."
            )
        size = index.fingerprints
        lines.append(
            f"lookup plans for {n:,} fingerprints (the input's rows: an upper bound on the distinct ones) "
            f"against the {size:,} the index holds, k = {chosen.k}:"
        )
    else:
        chosen = bands.choose_index_plan(index.expected_size, k, blocks)
        why = (
            f"chosen by the lookup cost model for {index.expected_size:,} indexed fingerprints"
            if blocks is None else "--blocks"
        )
        size = index.expected_size
        lines.append(
            f"the index {index.path} does not exist yet: this run creates it with the plan marked "
            f"below, fixed for its life (--index-size {index.expected_size:,}). Plans are priced for "
            f"the lookup of daily batches of {bands.lookup_batch_size(size):,} fingerprints against "
            f"{size:,}; a plan whose batch keys would each meet more than "
            f"{bands.MAX_MATCHES_PER_KEY_ROW:g} stored row by chance is never chosen."
        )
        lines.append(f"lookup plans for {n:,} fingerprints (the input's rows) against {size:,}, k = {k}:")
    costs = [c for c in bands.lookup_costs(max(size, 2), m, chosen.k) if c.blocks <= chosen.blocks + 2]
    if all(c.blocks != chosen.blocks for c in costs):
        costs.append(bands.lookup_cost(max(size, 2), m, chosen.k, chosen.blocks))
    lines.append(
        f"  {'blocks':>6} {'tables':>6} {'key bits':>9} {'stored rows read':>17} "
        f"{'met per fingerprint':>20} {'joined rows':>16} {'batch key rows':>15}"
    )
    for c in costs:
        mark = f"  <- {why}" if c.blocks == chosen.blocks else ""
        lines.append(
            f"  {c.blocks:>6} {c.tables:>6} {_bits(c.min_key_bits, c.max_key_bits):>9} "
            f"{c.stored_rows_scanned:>17,.0f} {c.matches_per_batch_row:>20,.3f} {c.joined_rows:>16,.0f} "
            f"{c.batch_key_rows:>15,.0f}{mark}"
        )
    lines.append(
        "The lookup is an equi-join of the batch's key rows (fingerprints x tables, broadcast) with "
        "the index's stored key rows (all read); met per fingerprint = stored rows sharing a table's "
        "key with one random batch fingerprint, summed over tables; joined rows = the batch x that, "
        "each checked with bit_count. The batch is also joined with itself with the same plan, and "
        "a (table, key) bucket hot on both sides is summarised, not joined in full."
    )
    lookup = bands.lookup_cost(max(size, 2), m, chosen.k, chosen.blocks)
    self_join = bands.plan_cost(m, chosen.k, chosen.blocks)
    lines.append(
        f"expected candidate pairs with this plan: about {lookup.joined_rows + self_join.random_candidates:,.0f} "
        f"by chance ({lookup.joined_rows:,.0f} in the lookup, {self_join.random_candidates:,.0f} in the "
        "batch's self-join), plus the near-duplicate pairs themselves, which only the run counts "
        "(report.json: join.candidate_pairs, the comparisons made, and its parts "
        "lookup_candidate_pairs and self_join_candidate_pairs)."
    )
    return lines


def _bits(lo: int, hi: int) -> str:
    return f"{lo}" if lo == hi else f"{lo}-{hi}"
