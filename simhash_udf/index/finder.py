"""The index's finder: a batch's near duplicates among themselves and against the index.

`IndexFinder` is the `Finder` (`simhash_udf.stages.finder`) of a run with --index: `find` is
`find_against_index` (fingerprint, skip ids the index holds, look the batch up in the index
with the session's plan, the batch's own band join, components over both, clusters that join
indexed clusters first, pairs new to the index), which also writes the run's segment;
`commit` and `abort` are the session's (`simhash_udf.index.session.IndexSession`), and the
report gets the session's `index` section.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from simhash_udf.core import bands
from simhash_udf.core.config import DedupeConfig
from simhash_udf.index import assign, lookup, sketch_lookup
from simhash_udf.index.session import IndexSession, indexed_fingerprints
from simhash_udf.index.store import IndexCorruptError, IndexError_
from simhash_udf.stages import clusters, join
from simhash_udf.stages.documents import distinct_fingerprints
from simhash_udf.stages.finder import BAND_JOIN_STAGE, SIGNATURES_STAGE, NearDuplicates
from simhash_udf.stages.finder import band_join_stage, components_stage, fingerprint_documents
from simhash_udf.stages.scratch import Stages

log = logging.getLogger("simhash_udf")

OUTPUT_COLUMNS = ("id", "cluster_id", "fingerprint", "status", "reason", "distance")

T = TypeVar("T")


@dataclass
class IndexFinder:
    """The `Finder` of a run against an index, over an open `IndexSession`."""

    session: IndexSession

    def find(self, docs: DataFrame, config: DedupeConfig, stages: Stages) -> NearDuplicates:
        return find_against_index(self.session, docs, config, stages)

    def report_sections(self) -> dict[str, Any]:
        """report.json's `index` section."""
        return {"index": self.session.report()}

    def commit(self) -> None:
        self.session.commit()

    def abort(self) -> None:
        self.session.abort()


def find_against_index(
    session: IndexSession, docs: DataFrame, config: DedupeConfig, stages: Stages
) -> NearDuplicates:
    """The batch's clusters and pairs against the index; writes the run's segment.

    docs: the checked input rows (see `Finder.find`); the lookup's plan is the session's
    (`bands.index_plan`), the batch's self-join's the cost model's for its distinct
    fingerprints, or --blocks (`bands.choose_plan`).
    Clusters and pairs have the columns of `NearDuplicates`; `pairs` holds the pairs
    with at least one fingerprint new to the index (older ones were output before).
    """
    plan = session.plan
    fingerprinted, signed = fingerprint_documents(docs, config, stages)
    id_type = fingerprinted.schema["id"].dataType.simpleString()
    if session.base.id_type and session.base.id_type != id_type:
        raise IndexError_(
            f"the index {session.store.root} holds ids of type {session.base.id_type}, this input's "
            f"{config.id_col!r} is {id_type}: ids must have one type for the index's whole life"
        )
    session.id_type = id_type
    root = session.store.root  # what a damaged index file's path starts with (`_guarded`)
    entries = _guarded(root, lambda: session.store.read(session.base, "entries"))
    keys = _guarded(root, lambda: session.store.read(session.base, "keys"))

    # A count of fingerprinted would be a Spark job or two: the stored signatures' rows are
    # known, and given fingerprints (not stored) have at most the input's rows, which is all
    # mark_repeated_ids asks (whether to broadcast).
    documents = stages.rows.get(SIGNATURES_STAGE, stages.documents)
    # The run's counts of its stage results are observed while each is stored (`Stages.observed`):
    # a count of a stored copy is a Spark job or two, on every run against the index.
    marked = _stage(
        session, stages, "index_ids", lookup.mark_repeated_ids(fingerprinted, entries, documents),
        observe={"repeated_ids": F.count(F.when(F.col("reason") == lookup.ID_IN_INDEX, 1))},
    )
    repeated = marked.where(F.col("reason") == lookup.ID_IN_INDEX)
    session.stats["repeated_ids"] = stages.observed["index_ids"]["repeated_ids"]
    if session.stats["repeated_ids"]:
        with stages.timed("index_ids"):
            sample = [r["id"] for r in repeated.select("id").orderBy("id").limit(5).collect()]
        log.warning(
            "%d document(s) have ids the index already holds (skipped, reason %s), e.g. %s",
            session.stats["repeated_ids"], lookup.ID_IN_INDEX, sample,
        )
    active = F.col("reason").isNull() & F.col("fingerprint").isNotNull()
    batch = stages.materialise("distinct_fingerprints", marked.where(active).select("fingerprint").distinct())
    n = stages.rows["distinct_fingerprints"]
    found = _guarded(root, lambda: lookup.lookup(batch, keys, plan, n, stages=stages, stage="index_lookup"))
    matches = _stage(
        session, stages, "index_lookup", found.matches,
        observe={"indexed": F.count(F.when(F.col("distance") == 0, 1)), "near": F.count(F.when(F.col("distance") > 0, 1))},
    )
    matched = stages.observed["index_lookup"]
    links = _stage(session, stages, "index_lookup", found.links) if found.stats["hot_lookup_buckets"] else None
    indexed_fps = matches.where("distance = 0").select(F.col("fp_new").alias("fingerprint"))
    new_fps = batch.join(indexed_fps, "fingerprint", "left_anti")
    # The batch's own pairs: the self-join's two-level join, hot runs summarised as
    # without an index (`simhash_udf.stages.self_join`), on the plan the self-join's cost
    # model picks for the batch (or --blocks), not the index's. Any plan finds every pair
    # within k; the index's is priced for the lookup (10^9: 20 tables of 31-33-bit keys),
    # which in a self-join shuffles 5x the band rows of the batch's own (4M fingerprints:
    # 80M, not 16M).
    self_join_plan = bands.choose_plan(n, config.k, config.blocks)
    joined = band_join_stage(stages, batch, self_join_plan, n)
    with stages.timed("candidates"):
        stats = join_counts(
            join.join_stats(joined, self_join_plan, n, totals=stages.observed[BAND_JOIN_STAGE]), found.stats
        )
    stats["distinct_fingerprints"] = n
    # What the report prices the lookup for: the fingerprints the index held (key rows per table).
    stats["index_fingerprints"] = indexed_fingerprints(session.base)
    session.stats.update(found.stats)
    batch_pairs = stages.materialise(
        "verify", join.join_pairs(joined, summarised=stats["self_join_summarised_runs"] > 0)
    )
    # The edges' count, known from the stored stages, picks the components' path (none taken).
    edge_count = stages.rows["verify"] + matched["near"]
    near_index = matches.where("distance > 0")
    session.stats["pairs_with_indexed"] = matched["near"]
    sketches = None
    if signed is not None and config.sketch.jaccard is not None:
        # The sketch route within the batch and against the indexed sketches: its pairs join
        # the edges, the matches and pairs/ exactly like the lookup's (`index.sketch_lookup`).
        indexed = sketch_lookup.indexed_nodes(entries) if entries is not None else None
        route = _guarded(root, lambda: sketch_lookup.take_sketch_route(
            sketch_lookup.batch_nodes(signed, marked.where(active), indexed, indexed_fps),
            batch_pairs, near_index, new_fps, indexed, config.sketch, config.k, stages,
        ))
        stats["sketch"] = route.stats
        log.info(
            "sketch route: %d sketches, %d pairs beyond k within the batch, %d with indexed fingerprints",
            route.stats["nodes"], route.stats["pairs_beyond_k"], route.stats["pairs_with_indexed_beyond_k"],
        )
        sketches, batch_pairs, near_index = route.nodes, route.batch_pairs, route.index_pairs
        edge_count = route.batch_pair_rows + matched["near"] + route.stats["pairs_with_indexed_beyond_k"]
        matches = matches.unionByName(near_index.select("fp_new", "fp_old", "distance"))
    else:
        no_jaccard = F.lit(None).cast("double").alias("jaccard")
        batch_pairs, near_index = batch_pairs.select("*", no_jaccard), near_index.select("*", no_jaccard)
    edges = batch_pairs.select(F.col("fp_a").alias("src"), F.col("fp_b").alias("dst")).unionByName(
        near_index.select(F.col("fp_new").alias("src"), F.col("fp_old").alias("dst"))
    )
    if links is not None:
        # Paths of a hot bucket's summary that run through indexed fingerprints.
        edges = edges.unionByName(links)
    # The hot buckets' links are not counted: the edges are then.
    components = components_stage(stages, edges, edge_count if links is None else None)
    exact_entries = None
    if entries is not None:
        run_seq = {r.run_id: r.seq for r in session.base.runs}
        reached = matches
        if links is not None:
            # Indexed fingerprints a component reaches through a hot bucket's links are
            # its indexed members too (their clusters count for its choice and bridges).
            reached = matches.unionByName(
                links.select(F.col("src").alias("fp_new"), F.col("dst").alias("fp_old"), F.lit(1).alias("distance"))
            ).unionByName(
                links.select(F.col("dst").alias("fp_new"), F.col("src").alias("fp_old"), F.lit(1).alias("distance"))
            )
        by_component = _stage(
            session, stages, "index_clusters", assign.indexed_clusters(reached, components, entries, run_seq),
            observe=assign.bridges(),
        )
        session.stats.update(stages.observed["index_clusters"])
        exact_entries = entries.where(F.col("fingerprint").isNull())
    else:
        by_component = by_component_empty(batch.sparkSession)
        session.stats["bridged_components"] = session.stats["bridged_clusters"] = 0
    if session.stats["bridged_components"]:
        log.warning(
            "%d new component(s) touch several indexed clusters; they join the earliest one and "
            "the indexed clusters stay apart", session.stats["bridged_components"],
        )
    clustered_full = _stage(
        session, stages, "index_assign",
        assign.assign_with_index(marked, components, by_component, exact_entries, config.keep_order),
        observe={"joining": F.count(F.when(F.col("cluster_run_id").isNotNull(), 1))},
    )
    clustered = clustered_full.select(*OUTPUT_COLUMNS)

    # Pairs: each pair once over the life of the index, by the run that brought its
    # newer fingerprint; fingerprints are named by the id that first carried them.
    new_side = new_fps.select(F.col("fingerprint").alias("_new"))
    # A batch pair is fresh when either of its fingerprints is new: two joins on one key each
    # (hash joins), never one on `fp_a = _new OR fp_b = _new`, which Spark can only run as a
    # nested loop over pairs x new fingerprints (4M new fingerprints and 67k pairs: still
    # running after 340 s). A pair with both new comes twice; dropDuplicates below keeps one.
    fresh_batch_pairs = batch_pairs.join(new_side, F.col("fp_a") == F.col("_new"), "left_semi").unionByName(
        batch_pairs.join(new_side, F.col("fp_b") == F.col("_new"), "left_semi")
    )
    fresh_index_pairs = near_index.join(new_side, F.col("fp_new") == F.col("_new"), "left_semi").select(
        F.least("fp_new", "fp_old").alias("fp_a"), F.greatest("fp_new", "fp_old").alias("fp_b"), "distance", "jaccard"
    )
    # A new fingerprint's pair with one the batch and the index both hold is found by the
    # batch's joins and by the lookup (or the sketch route against the index) alike.
    fingerprint_pairs = _stage(
        session, stages, "index_pairs", fresh_batch_pairs.unionByName(fresh_index_pairs).dropDuplicates(["fp_a", "fp_b"])
    )
    names = marked.where(active).join(new_fps, "fingerprint").select("id", "fingerprint")
    if entries is not None:
        touched = matches.select(F.col("fp_old").alias("fingerprint")).distinct()
        names = names.unionByName(
            entries.join(touched, "fingerprint").select(
                F.col("id").cast(fingerprinted.schema["id"].dataType).alias("id"), "fingerprint"
            )
        )
    pairs = clusters.pairs_by_id(fingerprint_pairs, distinct_fingerprints(names, None))

    session.stats.update(
        {
            "batch_fingerprints_already_indexed": matched["indexed"],
            "documents_joining_indexed_clusters": stages.observed["index_assign"]["joining"],
        }
    )
    sources = docs.select(
        F.col(config.id_col).alias("id"),
        _optional(docs, session.options.url_col).alias("url"),
        _optional(docs, session.options.fetch_time_col).alias("fetch_time"),
    )
    added = assign.new_entries(clustered_full, marked, sources, indexed_fps, session.run_id, sketches)
    with stages.timed("index_write"):
        session.write_segment(added, plan)
    return NearDuplicates(clustered, pairs, fingerprint_pairs, signed, plan, stats, self_join_plan=self_join_plan)


def _stage(
    session: IndexSession, stages: Stages, name: str, frame: DataFrame, observe: dict[str, Column] | None = None
) -> DataFrame:
    """`stages.materialise(name, frame, observe)`, a damaged index file named (`_guarded`)."""
    return _guarded(session.store.root, lambda: stages.materialise(name, frame, observe=observe))


def _guarded(index_root: str, action: Callable[[], T]) -> T:
    """Run a step that reads the index at index_root. Spark's failure to read or decode one
    of its files becomes an IndexCorruptError naming that file and Spark's reason, with the
    Spark error as its cause. Any other error is raised as it is, even if its text names an
    index file: a lost executor or a memory error says nothing about the file."""
    try:
        return action()
    except Exception as error:  # Py4J / Spark errors carry the file in their text
        message = str(error)
        path = _index_file_in(message, index_root)
        if path is None or not _READ_FAILURE.search(message):
            raise
        raise IndexCorruptError(
            f"index file {path} cannot be read ({_reason(message, index_root)}); restore it, or remove "
            f"its run with jobs/index.py remove-run"
        ) from error


def join_counts(self_join: dict[str, Any], lookup: dict[str, Any]) -> dict[str, Any]:
    """The join section's counts of a run against the index, with the meanings they have
    without an index (`join.join_stats`): candidate_pairs = comparisons made, here those of
    the batch's self-join plus those of the lookup (stored rows joined to a batch row's key,
    each checked by bit_count, and the comparisons of summarised hot lookup buckets);
    summarised_runs counts the self-join's hot runs and the lookup's hot buckets, since
    either leaves pairs/ with only enough of their pairs for exact clusters. The two parts
    are kept apart as self_join_candidate_pairs / lookup_candidate_pairs and
    self_join_summarised_runs / hot_lookup_buckets."""
    return {
        **self_join,
        "candidate_pairs": self_join["candidate_pairs"] + lookup["lookup_candidate_pairs"],
        "self_join_candidate_pairs": self_join["candidate_pairs"],
        "lookup_candidate_pairs": lookup["lookup_candidate_pairs"],
        "summarised_runs": self_join["summarised_runs"] + lookup["hot_lookup_buckets"],
        "self_join_summarised_runs": self_join["summarised_runs"],
        "hot_lookup_buckets": lookup["hot_lookup_buckets"],
    }


def by_component_empty(spark: SparkSession) -> DataFrame:
    """No indexed cluster for any component (an index without entries yet)."""
    return spark.createDataFrame(
        [], "component long, cluster_id string, cluster_fingerprint long, cluster_exact_key binary, cluster_run_id string"
    )


def _optional(frame: DataFrame, column: str) -> Column:
    return F.col(column).cast("string") if column in frame.columns else F.lit(None).cast("string")


def _index_file_pattern(root: str) -> re.Pattern[str]:
    """A path under the index root as an error message writes it (`file:` and slashes
    optional, the path ending at a space, comma, semicolon, quote or bracket)."""
    bare = root.split(":", 1)[1] if root.startswith("file:") else root
    bare = bare.lstrip("/")
    return re.compile(r"((?:file:)?/*" + re.escape(bare) + r"[^\s,;'\"\]\)]*)")


def _index_file_in(message: str, root: str) -> str | None:
    """The first path under the index root mentioned in an error message, if any."""
    match = _index_file_pattern(root).search(message)
    return match.group(1).rstrip(".") if match else None


# Spark's words for a file it could not read or decode: its error classes (Spark 4) and the
# Parquet reader's exceptions. A data file that is not Parquet, or whose pages or footer do not
# decode, fails with one of these in the error's text or its causes'.
_READ_FAILURE = re.compile(
    r"FAILED_READ_FILE|CANNOT_READ_FILE_FOOTER|not a Parquet file|ParquetDecodingException"
    r"|Could not read footer"
)
# A cause line of a Java stack trace: "Caused by: some.Exception: what went wrong".
_CAUSE = re.compile(r"Caused by: (?:[\w.$]+(?:Exception|Error): )?(.+)")
REASON_CHARS = 200


def _reason(message: str, root: str) -> str:
    """The innermost cause a Spark error message gives (its last "Caused by:" line, else its
    first line), without a stack trace, with paths under the index root as "the file" (the
    error names the file already), at most REASON_CHARS characters."""
    causes = _CAUSE.findall(message)
    lines = causes or message.strip().splitlines() or [""]
    reason = _index_file_pattern(root).sub("the file", lines[-1] if causes else lines[0]).strip()
    return reason if len(reason) <= REASON_CHARS else reason[: REASON_CHARS - 3] + "..."
