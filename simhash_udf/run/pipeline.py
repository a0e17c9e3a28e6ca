"""The stages chained: `find_near_duplicates` (DataFrames in, DataFrames out) and `run`
(read, find, write atomically, report).

Stage results are materialised by a `Stages` recorder: in a job, written as Parquet to the
output's scratch folder and read back (cuts the lineage, survives lost executors, and gives
each stage a wall time); in a notebook, `Stages()` checkpoints locally instead.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from simhash_udf.core import bands, hot_runs, short_text_policy
from simhash_udf.core.config import DedupeConfig
from simhash_udf.files import inputs, outputs, warc
from simhash_udf.report import html_page
from simhash_udf.report import summary as report
from simhash_udf.run import progress
from simhash_udf.stages import clusters, documents, join, short_text_check
from simhash_udf.stages.components import connected_components

if TYPE_CHECKING:  # index_run builds on this module; only the type is needed here
    from simhash_udf.index.session import IndexSession

log = logging.getLogger("simhash_udf")

# Buckets of the band join with more members than this are reported as hot (each one costs
# size^2 / 2 candidate comparisons): the join's one hot threshold, not a second one.
HOT_BUCKET_SIZE = hot_runs.HOT_RUN_SIZE


class DuplicateIdsError(inputs.InputError):
    """The id column is not unique (no longer raised by `read_input`: all rows of a
    repeated id but one are rejected as `duplicate_id`)."""


class LostRowsError(RuntimeError):
    """The outputs do not account for every input row: a bug, never published."""


@dataclass
class Stages:
    """Materialises stage results and records each stage's wall time and row count.

    work: a scratch folder for Parquet copies of stage results; None checkpoints locally
    (fine for notebooks; a job passes its output's scratch folder).
    spark: the session whose progress is logged while a stage runs (learnt from the first
    materialised frame when not given). documents: the input's row count once known, for
    the progress lines' estimate of documents done. progress_interval: seconds between two
    progress lines of a running stage (0: none); see `progress.watch`.
    """

    work: str | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)
    spark: SparkSession | None = None
    documents: int | None = None
    progress_interval: float = progress.DEFAULT_INTERVAL
    _started: float = field(default_factory=time.perf_counter)
    _serial: int = 0

    def materialise(self, name: str, frame: DataFrame) -> DataFrame:
        """Compute `frame` now, store it, and return a frame that reads the stored copy."""
        self.spark = self.spark or frame.sparkSession
        start = time.perf_counter()
        with self._running(name):
            if self.work is None:
                stored = frame.localCheckpoint()
            else:
                self._serial += 1
                path = f"{self.work}/{self._serial:03d}-{name}"
                outputs.write_parquet(frame, path)
                stored = frame.sparkSession.read.parquet(path)
            # Cheap on a stored copy (Parquet footers or checkpointed blocks), and the log line
            # with counts is how a long run shows its progress.
            self.rows[name] = stored.count()
        self.record(name, start)
        return stored

    def record(self, name: str, start: float) -> None:
        """Add the time since `start` to stage `name` and log it."""
        self.seconds[name] = round(self.seconds.get(name, 0.0) + time.perf_counter() - start, 3)
        rows = f", {self.rows[name]:,} rows" if name in self.rows else ""
        log.info(
            "stage %s: %.1f s%s (%.1f s into the run)",
            name, self.seconds[name], rows, time.perf_counter() - self._started,
        )

    @contextmanager
    def timed(self, name: str) -> Iterator[None]:
        """Record the wall time of a block as stage `name`."""
        start = time.perf_counter()
        with self._running(name):
            yield
        self.record(name, start)

    @contextmanager
    def _running(self, name: str) -> Iterator[None]:
        """Log the stage's start, then its progress every few seconds until it ends."""
        log.info("stage %s: started (%.1f s into the run)", name, time.perf_counter() - self._started)
        # Only the normalise stage goes through the documents one by one in even partitions,
        # so that only there the share of tasks done says how many documents are done.
        per_document = self.documents if name == "normalise" else None
        sc = self.spark.sparkContext if self.spark is not None else None
        with progress.watch(sc, name, self._started, per_document, self.progress_interval):
            yield


@dataclass
class NearDuplicates:
    """What `find_near_duplicates` finds.

    clusters: `id`, `cluster_id`, `fingerprint`, `status`, `reason`, `distance` (every document).
    pairs: `id_a`, `id_b`, `distance` (every near-duplicate pair of distinct fingerprints).
    fingerprint_pairs: `fp_a`, `fp_b`, `distance` (the same pairs, by fingerprint).
    normalised: `id`, `text`, `exact_key`, `invalid_utf8`, `reason` (text input only).
    texts: `exact_key`, `fingerprint`, `n_features`, `n_documents` (text input only).
    plan: the band plan used; join_stats: counts and hot buckets of the join.
    """

    clusters: DataFrame
    pairs: DataFrame
    fingerprint_pairs: DataFrame
    normalised: DataFrame | None
    texts: DataFrame | None
    plan: bands.BandPlan
    join_stats: dict[str, Any]


def fingerprint_documents(
    docs: DataFrame, config: DedupeConfig, stages: Stages
) -> tuple[DataFrame, DataFrame | None, DataFrame | None]:
    """The stages up to every document's fingerprint (shared by runs with and without an index).

    Returns (fingerprinted, normalised, texts): see `documents.fingerprinted_documents`
    (or `documents.given_fingerprints`), and `NearDuplicates` for the other two (None when
    the input carries its own fingerprints).
    """
    if config.fingerprint_col:
        return stages.materialise("fingerprint", documents.given_fingerprints(docs, config)), None, None
    normalised = stages.materialise("normalise", documents.normalise_documents(docs, config))
    texts = stages.materialise(
        "fingerprint",
        documents.fingerprint_texts(documents.distinct_texts(normalised), config.fingerprint),
    )
    fingerprinted = stages.materialise("document_fingerprints", documents.fingerprinted_documents(normalised, texts))
    return fingerprinted, normalised, texts


def find_near_duplicates(docs: DataFrame, config: DedupeConfig, stages: Stages | None = None) -> NearDuplicates:
    """Every stage from checked input documents to clusters and pairs.

    docs: the input rows (ids unique and not null; see `documents.rejected_rows` and
    `documents.split_repeated_ids`), with the columns `config` names.
    """
    stages = stages or Stages()
    fingerprinted, normalised, texts = fingerprint_documents(docs, config, stages)
    distinct = stages.materialise(
        "distinct_fingerprints",
        fingerprinted.where(F.col("fingerprint").isNotNull()).select("fingerprint").distinct(),
    )
    n = stages.rows["distinct_fingerprints"]
    plan = bands.choose_plan(n, config.k, config.blocks)
    checking = normalised is not None and texts is not None and config.verify.threshold is not None
    if checking:
        # Which fingerprints' pairs the short-text check looks at: the join lists those
        # pairs even in hot runs, so no pair the check drops stands for others (short_text_check.py).
        distinct = short_text_check.checked_fingerprints(distinct, normalised, texts, config.verify)
    # One shuffle of the band rows: the join's output carries its own counts (join_stats).
    joined = stages.materialise("verify", join.band_join(distinct, plan, n))
    with stages.timed("candidates"):
        stats = join.join_stats(joined, plan, n)
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
        # (short_text_check.py); dropped pairs never reach the components nor pairs/.
        scored = stages.materialise("verify_texts", short_text_check.verify_pairs(fingerprint_pairs, normalised, texts, config.verify))
        stats["verify"] = short_text_check.counts(scored, config.verify)
        fingerprint_pairs = short_text_check.kept_pairs(scored)
    # Every round of the components is a stage result of its own; their times add up.
    components = stages.materialise(
        "components",
        connected_components(
            fingerprint_pairs.select(F.col("fp_a").alias("src"), F.col("fp_b").alias("dst")),
            materialise=lambda frame: stages.materialise("components", frame),
        ),
    )
    clustered = clusters.assign_clusters(fingerprinted, components, config.keep_order)
    pairs = clusters.pairs_by_id(fingerprint_pairs, fingerprinted)
    return NearDuplicates(clustered, pairs, fingerprint_pairs, normalised, texts, plan, stats)


def run(
    spark: SparkSession,
    config: DedupeConfig,
    input_path: str,
    output: str,
    fmt: str | None = None,
    overwrite: bool = False,
    index: IndexSession | None = None,
) -> dict[str, Any]:
    """Read `input_path`, find near duplicates, write everything under `output` atomically.

    Writes `clusters/`, `pairs/` (unless `config.write_pairs` is off), `deduped/`,
    `rejected/` (only when some input rows could not be documents), `report.json` and
    `report.html` (the same report as a page, with a sample of pairs side by side).
    Returns the report. Raises inputs.InputError / outputs.OutputError with a
    message for the user; on any failure nothing is left at `output`.

    index: a run against a fingerprint index (`index_run.IndexSession.open`): the batch is
    matched against it, and its new version is published before the output, so a run killed
    between the two is repaired by rerunning the same run id.
    """
    started = time.time()
    try:
        target = outputs.StagedOutput(spark, output, overwrite)
    except BaseException:
        # Refused before any work (say, the output exists): the index session still holds
        # its lease, which would keep `compact` out for as long as this process lives.
        if index is not None:
            index.abort()
        raise
    try:
        result, samples = _run_staged(spark, config, input_path, fmt, target, started, index)
        result["output"] = output
        target.write_text("report.json", outputs.report_json(result))
        target.write_text("report.html", html_page.render(result, samples))
        if index is not None:
            index.commit()
        target.publish()
    except BaseException:
        target.discard()
        if index is not None:
            index.abort()
        raise
    return result


@dataclass
class Input:
    """The input, read and checked.

    documents: rows with a usable, unique id (all input columns).
    rejected: rows that cannot be documents, with `reason` (see `documents.rejected_rows`;
    and `duplicate_id` for every row of a repeated id but one, `documents.split_repeated_ids`).
    format: the format read.
    rows: how many rows the input has, counted on the input itself.
    damaged: input files that are not whole (see `inputs.read_input_files`).
    records: WARC/WET input: the records by reason and the skipped files (`warc.Records`).
    """

    documents: DataFrame
    rejected: DataFrame
    format: str
    rows: int
    damaged: list[inputs.DamagedFile] = field(default_factory=list)
    records: warc.Records | None = None


def _first_of_an_id(config: DedupeConfig) -> list[Column]:
    """The order that picks which row of a repeated id stays a document: the --keep-by
    order, then the text (or the fingerprint)."""
    order = []
    if config.keep_by:
        by = F.col(config.keep_by)
        order.append(by.desc_nulls_last() if config.keep_order == "desc" else by.asc_nulls_last())
    order.append(F.col(config.fingerprint_col or config.text_col).asc_nulls_last())
    return order


def read_input(
    spark: SparkSession,
    config: DedupeConfig,
    input_path: str,
    fmt: str | None = None,
    stages: Stages | None = None,
) -> Input:
    """Read the input and check it: the columns `config` needs, and unique ids.

    JSON and CSV input is materialised once (see `inputs.needs_materialising`). Raises
    inputs.InputError only for what the command line names wrongly: a path that matches nothing,
    a format that cannot be inferred, a missing column or a column of the wrong type in an
    input that declares its types (Parquet). Problems of the data are rows of `rejected`
    (unparseable lines, null ids, repeated ids, damaged text files) and `damaged` files.
    """
    stages = stages or Stages()
    with stages.timed("read"):
        raw = inputs.read_input_files(spark, input_path, fmt, documents.keep_types(config))
        frame, fmt = documents.complete_columns(raw.frame, config), raw.format
        documents.check_columns(frame, config)
    records = None
    if fmt in warc.FORMATS:
        records = warc.split_records(stages.materialise("parse", frame))
        frame, rows = records.documents, records.counts.get("document", 0)
    elif inputs.needs_materialising(fmt):
        frame = stages.materialise("parse", frame)
        rows = stages.rows["parse"]
    else:
        with stages.timed("read"):
            rows = frame.count()
    with stages.timed("check_ids"):
        docs, rejected = documents.rejected_rows(frame, config.id_col)
        repeated = documents.repeated_ids(docs, config.id_col).persist()
        sample = repeated.orderBy(config.id_col).limit(5).collect()
        if sample:
            # Only when some id repeats: the split costs two joins over the documents.
            docs, duplicates = documents.split_repeated_ids(docs, config.id_col, repeated, _first_of_an_id(config))
            rejected = rejected.unionByName(duplicates, allowMissingColumns=True)
            log.warning(
                "the id column %r is not unique (repeated ids include %s): one row of each "
                "id is kept, the others are rejected as duplicate_id",
                config.id_col, ", ".join(repr(r[0]) for r in sample),
            )
        else:
            repeated.unpersist()
    damaged = raw.damaged
    if records is not None:
        damaged = damaged + [inputs.DamagedFile(path, reason) for path, reason, _ in records.damaged]
    return Input(docs, rejected, fmt, rows, damaged, records)


def _run_staged(
    spark: SparkSession,
    config: DedupeConfig,
    input_path: str,
    fmt: str | None,
    target: outputs.StagedOutput,
    started: float,
    index: IndexSession | None = None,
) -> tuple[dict[str, Any], list[html_page.PairSample]]:
    """The run inside the staging folder: the report and a few pairs for report.html."""
    stages = Stages(work=target.work, spark=spark)
    source = read_input(spark, config, input_path, fmt, stages)
    stages.documents = source.rows
    docs, fmt = source.documents, source.format
    config = warc.document_config(config, fmt)
    rejected_counts = {r["reason"]: r["count"] for r in source.rejected.groupBy("reason").count().collect()}
    if rejected_counts:
        outputs.write_parquet(source.rejected, target.path("rejected"))
        log.warning(
            "%d input rows could not be documents (%s); see rejected/",
            sum(rejected_counts.values()), rejected_counts,
        )
    found = find_near_duplicates(docs, config, stages) if index is None else index.find(docs, config, stages)
    with stages.timed("clusters"):
        outputs.write_parquet(_with_source(found.clusters, docs, config.id_col), target.path("clusters"))
    clusters_frame = spark.read.parquet(target.path("clusters"))
    if config.write_pairs:
        with stages.timed("pairs"):
            outputs.write_parquet(found.pairs, target.path("pairs"))
        with stages.timed("sample_pairs"):
            # A handful of rows for report.html, read from the pairs just written.
            text_col = config.text_col if config.text_col in docs.columns else None
            samples = html_page.sample_pairs(
                spark.read.parquet(target.path("pairs")), docs, config.id_col, text_col,
                extract=config.extract if config.html else None,
            )
    else:
        samples = []
    with stages.timed("deduped"):
        kept = clusters_frame.where(F.col("status") == clusters.KEPT)
        if config.keep_empty:
            kept = clusters_frame.where(
                (F.col("status") == clusters.KEPT) | (F.col("reason") == documents.EMPTY)
            )
        deduped = documents.input_columns(docs).join(
            kept.select(F.col("id").alias(config.id_col)), config.id_col, "left_semi"
        )
        outputs.write_parquet(deduped, target.path("deduped"))
    with stages.timed("report"):
        summary = report.summarise(clusters_frame, found.fingerprint_pairs)
        accounted = sum(summary["by_status"].values()) + sum(rejected_counts.values())
        if accounted != source.rows:
            raise LostRowsError(
                f"the input has {source.rows} rows but clusters/ and rejected/ hold {accounted}"
            )
        text_counts = report.text_counts(found.texts, found.normalised)
    result = report.build(
        config=config,
        input_path=input_path,
        fmt=fmt,
        started=started,
        input_rows=source.rows,
        rejected=rejected_counts,
        summary=summary,
        text_counts=text_counts,
        plan=found.plan,
        join_stats=found.join_stats,
        stages=stages,
    )
    # Files not read to their end (their rows before the damage are in the counts above).
    result["counts"]["damaged_files"] = len(source.damaged)
    result["damaged_files"] = [{"path": d.path, "reason": d.reason} for d in source.damaged]
    # The short-text policy's counts (short_text_check.counts); runs without texts, or against an
    # index, do not apply it.
    result["verify"] = found.join_stats.get("verify") or {**short_text_policy.describe(config.verify), "applied": False}
    if source.records is not None:
        result["records"] = {
            "by_reason": dict(sorted(source.records.counts.items())),
            "damaged_stretches": {path: n for path, _, n in source.records.damaged},
            "skipped_files": [{"path": p, "reason": r} for p, r in source.records.skipped_files],
        }
    if index is not None:
        result["index"] = index.report()
    return result, samples


# Input columns that say where a document came from, copied into clusters/ when present.
SOURCE_COLUMNS = ("url", "fetch_time")


def _with_source(clustered: DataFrame, docs: DataFrame, id_col: str) -> DataFrame:
    """clusters/ rows plus the input's `url` and `fetch_time` columns, when it has them."""
    extra = [c for c in SOURCE_COLUMNS if c in docs.columns and c not in clustered.columns and c != id_col]
    if not extra:
        return clustered
    return clustered.join(docs.select(F.col(id_col).alias("id"), *extra), "id", "left")
