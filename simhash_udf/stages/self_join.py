"""The self-join finder: a batch's near duplicates among themselves (no index).

fingerprint -> distinct fingerprints -> band plan (`bands.choose_plan` for their number, or
--blocks) -> band join (`join.band_join`) -> short-text check (`short_text_check`, text
input with --verify) -> the sketch route's pairs beyond k (`sketch_join`, text input with
--sketch) -> connected components -> clusters and pairs by id.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from simhash_udf.core import bands
from simhash_udf.core.config import DedupeConfig, SketchConfig
from simhash_udf.stages import clusters, documents, join, short_text_check, sketch_join
from simhash_udf.stages.finder import BAND_JOIN_STAGE, SIGNATURES_STAGE, NearDuplicates
from simhash_udf.stages.finder import band_join_stage, components_stage, fingerprint_documents
from simhash_udf.stages.scratch import Stages

log = logging.getLogger("simhash_udf")


class SelfJoinFinder:
    """The `Finder` of a run without an index: nothing to publish or undo."""

    def find(self, docs: DataFrame, config: DedupeConfig, stages: Stages) -> NearDuplicates:
        """Every stage from checked input documents to clusters and pairs (see `Finder.find`)."""
        # The short texts ride along with the signatures: the check compares them without
        # going back to the input (short_text_check.texts_by_fingerprint).
        fingerprinted, signed = fingerprint_documents(docs, config, stages, carry_short_texts=True)
        # Stored: read by the band join, the short-text check and pairs/ (its ids name the pairs).
        table = stages.materialise("distinct_fingerprints", documents.distinct_fingerprints(fingerprinted, signed))
        distinct = table.select("fingerprint")
        n = stages.rows["distinct_fingerprints"]
        plan = bands.choose_plan(n, config.k, config.blocks)
        checking = signed is not None and config.verify.threshold is not None
        if checking:
            # Which fingerprints' pairs the short-text check looks at: the join lists those
            # pairs even in hot runs, so no pair the check drops stands for others (short_text_check).
            distinct = short_text_check.checked_fingerprints(table, config.verify)
        # One shuffle of the band rows (none for a small join, run on the driver): the join's
        # output carries its own counts (join_stats).
        joined = band_join_stage(stages, distinct, plan, n)
        with stages.timed("candidates"):
            stats = join.join_stats(joined, plan, n, totals=stages.observed[BAND_JOIN_STAGE])
        stats["distinct_fingerprints"] = n
        log.info(
            "band plan: %d blocks, %d tables; %d distinct fingerprints, %d candidate pairs",
            plan.blocks, plan.n_tables, n, stats["candidate_pairs"],
        )
        if stats["summarised_runs"]:
            log.warning(
                "%d hot band bucket(s) of more than %d fingerprints were summarised: pairs/ holds "
                "enough of their pairs for exact clusters, not all of them (report.json: join.hot_buckets)",
                stats["summarised_runs"], stats["hot_run_size"],
            )
        fingerprint_pairs = join.join_pairs(joined, summarised=stats["summarised_runs"] > 0)
        if checking:
            # The short-text policy: pairs of short texts must also share enough shingles
            # (`core.short_text_policy`); dropped pairs never reach the components nor pairs/.
            marked, marks = _marked_pairs(fingerprint_pairs, table, config, stages)
            if marks["needs_texts"]:
                scored, totals = _scored_pairs(marked, signed, docs, config, stages, marks)
            else:
                # No pair has a short text: none goes back to the input for its texts, and
                # every pair is kept unchecked.
                scored = short_text_check.unchecked(marked)
                totals = {"pairs": marks["rows"], "checked": 0, "dropped": 0}
            stats["verify"] = short_text_check.counts(totals, config.verify)
            fingerprint_pairs = short_text_check.kept_pairs(scored)
        if signed is not None and config.sketch.jaccard is not None:
            # The sketches straight from the documents' rows: one shuffle, not two (by text, then
            # by fingerprint).
            fingerprint_pairs, edge_count = _with_sketch_route(fingerprint_pairs, signed, config, stages, stats)
        else:
            fingerprint_pairs = fingerprint_pairs.withColumn("jaccard", F.lit(None).cast("double"))
            edge_count = None
        # The sketch route's pairs are stored: their count is known.
        components = components_stage(
            stages, fingerprint_pairs.select(F.col("fp_a").alias("src"), F.col("fp_b").alias("dst")), edge_count
        )
        # The documents: those signed (text input), else at most the input's rows.
        document_rows = stages.rows.get(SIGNATURES_STAGE, stages.documents)
        if clusters.assigned_on_driver_when(fingerprinted, document_rows):
            with stages.timed("clusters"):
                clustered = clusters.assigned_on_driver(fingerprinted, components, config.keep_order)
        else:
            clustered = clusters.cluster_assignment(
                fingerprinted, components, config.keep_order, materialise=lambda frame: stages.materialise("clusters", frame),
                fingerprints=table, fingerprint_rows=n,
            )
        # At most as many pairs as the stored rows they came from: the sketch route's (counted),
        # else the band join's (its pairs, stats and hot runs' rows). When the
        # names are few too, Spark's own plan broadcasts the smaller side at no shuffle, and a
        # forced broadcast of the pairs would only add a Spark job.
        pair_rows = edge_count if edge_count is not None else stages.rows[BAND_JOIN_STAGE]
        broadcast_pairs = clusters.few_enough_to_broadcast(pair_rows) and not clusters.few_enough_to_broadcast(n)
        pairs = clusters.pairs_by_id(fingerprint_pairs, table.select("fingerprint", "id"), broadcast_pairs)
        return NearDuplicates(
            clustered.documents, pairs, fingerprint_pairs, signed, plan, stats, cluster_sizes=clustered.sizes
        )

    def report_sections(self) -> dict[str, Any]:
        return {}

    def commit(self) -> None:
        pass

    def abort(self) -> None:
        pass


def _marked_pairs(
    pairs: DataFrame, table: DataFrame, config: DedupeConfig, stages: Stages
) -> tuple[DataFrame, dict[str, int]]:
    """`short_text_check.mark_pairs` of the band join's pairs in stage verify_texts, and the
    marks' counts `rows`, `needs_texts`, `needs_input`. table: the stored distinct
    fingerprints. A few pairs (the band join stored few rows) are marked on the driver, else
    the marks are stored, their counts observed by the write."""
    if short_text_check.few_enough_for_driver(stages.rows[BAND_JOIN_STAGE]):
        with stages.timed("verify_texts"):
            return short_text_check.marked_on_driver(pairs, table, config.verify)
    marked = stages.materialise(
        "verify_texts", short_text_check.mark_pairs(pairs, table, config.verify),
        observe={
            "needs_texts": F.count(F.when(F.col("needs_texts"), 1)),
            "needs_input": F.count(F.when(F.col("needs_input"), 1)),
        },
    )
    return marked, {"rows": stages.rows["verify_texts"], **stages.observed["verify_texts"]}


def _scored_pairs(
    marked: DataFrame, signed: DataFrame, docs: DataFrame, config: DedupeConfig, stages: Stages, marks: dict[str, int]
) -> tuple[DataFrame, dict[str, int]]:
    """The marked pairs scored (`short_text_check.score_marked`'s rows) and their
    `short_text_check.totals()`, in stage verify_texts. marks: the marked pairs' counts
    (`_marked_pairs`). A few pairs are judged on the driver, their scores a view over the
    marks; else Spark judges and stores them. Either reads the input again only when a pair
    has a text the one pass did not carry (a short text paired with a longer one)."""
    needs_input = marks["needs_input"]
    if needs_input:
        log.info(
            "short-text check: %d pair(s) of a short and a longer text; the input is read again "
            "for the longer texts", needs_input,
        )
    if short_text_check.few_enough_for_driver(marks["needs_texts"]):
        with stages.timed("verify_texts"):
            judged = short_text_check.scored_on_driver(
                marked, signed, docs, config, marks["rows"], from_input=needs_input > 0
            )
        if judged is not None:
            return judged
    scored = stages.materialise(
        "verify_texts",
        short_text_check.score_marked(
            marked, signed, docs, config, from_input=needs_input > 0,
            few_read_again=short_text_check.few_enough_for_driver(needs_input),
        ),
        observe=short_text_check.totals(),
    )
    return scored, stages.observed["verify_texts"]


def _with_sketch_route(
    band_pairs: DataFrame, signed: DataFrame, config: DedupeConfig, stages: Stages, stats: dict[str, Any]
) -> tuple[DataFrame, int]:
    """`sketch_route` over the batch's sketch nodes; adds its counts to stats as `sketch`.
    Returns its pairs and their number."""
    route = sketch_route(band_pairs, sketch_join.sketch_nodes(signed), config.sketch, config.k, stages)
    stats["sketch"] = route.counts
    log.info(
        "sketch route: %d sketches, %d candidate pairs, %d pairs kept, %d beyond k",
        route.counts["nodes"], route.counts["candidate_pairs"], route.counts["pairs"], route.counts["pairs_beyond_k"],
    )
    return route.pairs, route.pair_rows


@dataclass(frozen=True)
class BatchRoute:
    """What `sketch_route` found.

    nodes: the nodes as stored (stage `sketch_nodes`). pairs: the band join's pairs with their
    estimated Jaccard and the sketch route's pairs beyond them, `fp_a`, `fp_b`, `distance`,
    `jaccard`, read from a stored copy by the components and pairs/. pair_rows: their number.
    counts: report.json's `sketch` counts: `nodes`, `candidate_pairs`, `pairs` (kept by the
    sketch route, within k or not), `pairs_beyond_k` (what it adds: the band join has every
    pair within k), `hot_buckets` (buckets paired star-wise).
    """

    nodes: DataFrame
    pairs: DataFrame
    pair_rows: int
    counts: dict[str, int]


def sketch_route(band_pairs: DataFrame, nodes: DataFrame, sketch: SketchConfig, k: int, stages: Stages) -> BatchRoute:
    """The sketch route within a batch (`sketch_join`), a run with an index's too.

    band_pairs: `fp_a` < `fp_b`, `distance` (the band join's pairs within k); nodes:
    `fingerprint`, `sketch`, one row per distinct fingerprint (`sketch_join.sketch_nodes`).
    Up to `sketch_join.ONE_TASK_NODES` nodes the route runs in one task (stage
    `sketch_candidates`), else in Spark's shuffles (stages `sketch_candidates`, `sketch_verify`
    and `jaccard`): the same pairs and counts either way.
    """
    nodes = stages.materialise("sketch_nodes", nodes)
    if sketch_join.few_enough_for_one_task(stages.rows["sketch_nodes"]):
        return _route_in_one_task(band_pairs, nodes, sketch, k, stages)
    return _route_by_shuffles(band_pairs, nodes, sketch, k, stages)


def _route_by_shuffles(band_pairs: DataFrame, nodes: DataFrame, sketch: SketchConfig, k: int, stages: Stages) -> BatchRoute:
    """`sketch_route` in Spark, from the stored nodes."""
    rows = sketch_join.band_rows(nodes, sketch)
    # The shared buckets are stored under the candidates' stage name (its time adds up; its
    # rows are the candidates', stored last): read twice, they are not shuffled twice.
    # The counts the report needs are observed while their stage result is stored, not counted
    # after (a Spark job or two each).
    hot_size = sketch_join.HOT_BUCKET_SIZE
    buckets = stages.materialise(
        "sketch_candidates", sketch_join.shared_buckets(rows),
        observe={"hot_buckets": F.count(F.when(F.col("size") > hot_size, 1))},
    )
    hot_buckets = stages.observed["sketch_candidates"]["hot_buckets"]
    candidates, _ = sketch_join.candidate_pairs(rows, buckets, hot_size)
    candidates = stages.materialise("sketch_candidates", candidates)
    found = stages.materialise("sketch_verify", sketch_join.sketch_pairs(candidates, nodes, sketch))
    beyond = found.join(band_pairs.select("fp_a", "fp_b"), ["fp_a", "fp_b"], "left_anti")
    pairs = stages.materialise(
        "jaccard", sketch_join.with_jaccard(band_pairs, nodes).unionByName(beyond),
        observe={"beyond_k": F.count(F.when(F.col("distance") > k, 1))},
    )
    counts = {
        "nodes": stages.rows["sketch_nodes"],
        "candidate_pairs": stages.rows["sketch_candidates"],
        "pairs": stages.rows["sketch_verify"],
        "pairs_beyond_k": stages.observed["jaccard"]["beyond_k"],
        "hot_buckets": hot_buckets,
    }
    return BatchRoute(nodes, pairs, stages.rows["jaccard"], counts)


def _route_in_one_task(band_pairs: DataFrame, nodes: DataFrame, sketch: SketchConfig, k: int, stages: Stages) -> BatchRoute:
    """`sketch_route` in one task (`sketch_join.route_in_one_task`): every candidate and band
    pair stored once, under `sketch_candidates`, with the counts observed by the write; the
    pairs are a view of it."""
    paired = F.col("band_pair") | F.col("kept")
    route = stages.materialise(
        "sketch_candidates", sketch_join.route_in_one_task(nodes, sketch, band_pairs),
        observe={
            "candidates": F.count(F.when(F.col("candidate"), 1)),
            "kept": F.count(F.when(F.col("kept"), 1)),
            "pairs": F.count(F.when(paired, 1)),
            "beyond_k": F.count(F.when(paired & (F.col("distance") > k), 1)),
            "hot_buckets": F.max("hot_buckets"),  # null: no rows, so no candidates
        },
    )
    observed = stages.observed["sketch_candidates"]
    counts = {
        "nodes": stages.rows["sketch_nodes"],
        "candidate_pairs": observed["candidates"],
        "pairs": observed["kept"],
        "pairs_beyond_k": observed["beyond_k"],
        "hot_buckets": observed["hot_buckets"] or 0,
    }
    pairs = route.where(paired).select("fp_a", "fp_b", "distance", "jaccard")
    return BatchRoute(nodes, pairs, observed["pairs"], counts)


def find_near_duplicates(docs: DataFrame, config: DedupeConfig, stages: Stages | None = None) -> NearDuplicates:
    """`SelfJoinFinder().find` for notebooks: stage results checkpointed locally unless
    `stages` says otherwise."""
    return SelfJoinFinder().find(docs, config, stages or Stages())
