"""A run end to end: `read_input` (read and check the input), then `run` (read, find with
one `Finder`, write atomically, report).

The finder is the self-join (`simhash_udf.stages.self_join.SelfJoinFinder`, the default) or
the index's (`simhash_udf.index.finder.IndexFinder`); stage results are materialised by a
`Stages` recorder (`simhash_udf.stages.scratch`) writing to the output's scratch folder.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from simhash_udf.core import short_text_policy
from simhash_udf.core.config import DedupeConfig
from simhash_udf.files import inputs, outputs, warc
from simhash_udf.report import html_page, pair_samples
from simhash_udf.report import summary as report
from simhash_udf.run import session
from simhash_udf.stages import clusters, documents
from simhash_udf.stages.finder import SIGNATURES_STAGE, Finder
from simhash_udf.stages.scratch import Stages
from simhash_udf.stages.self_join import SelfJoinFinder

log = logging.getLogger("simhash_udf")

class LostRowsError(RuntimeError):
    """The outputs do not account for every input row: a bug, never published."""


def run(
    spark: SparkSession,
    config: DedupeConfig,
    input_path: str,
    output: str,
    fmt: str | None = None,
    overwrite: bool = False,
    finder: Finder | None = None,
) -> dict[str, Any]:
    """Read `input_path`, find near duplicates, write everything under `output` atomically.

    Writes `clusters/`, `pairs/` (unless `config.write_pairs` is off), `deduped/`,
    `rejected/` (only when some input rows could not be documents), `report.json` and
    `report.html` (the same report as a page, with a sample of pairs side by side).
    Returns the report. Raises inputs.InputError / outputs.OutputError with a
    message for the user; on any failure nothing is left at `output`.

    finder: what finds the pairs and clusters; by default the self-join (`SelfJoinFinder`).
    Against a fingerprint index (`IndexFinder` over `IndexSession.open`) the batch is matched
    against it, and its new version is published (`finder.commit`) before the output, so a
    run killed between the two is repaired by rerunning the same run id.
    """
    finder = finder or SelfJoinFinder()
    started = time.time()
    try:
        target = outputs.StagedOutput(spark, output, overwrite)
    except BaseException:
        # Refused before any work (say, the output exists): an index session still holds
        # its lease, which would keep `compact` out for as long as this process lives.
        finder.abort()
        raise
    try:
        with inputs.split_setting_restored(spark), session.settings_restored(spark, session.INTERPRETED_SETTINGS):
            result, samples = _run_staged(spark, config, input_path, fmt, target, started, finder)
        result["output"] = output
        target.write_text("report.json", outputs.report_json(result))
        target.write_text("report.html", html_page.render(result, samples))
        finder.commit()
        target.publish()
    except BaseException:
        target.discard()
        finder.abort()
        raise
    return result


@dataclass
class Input:
    """The input, read and checked.

    documents: rows with a usable, unique id (all input columns).
    rejected: rows that cannot be documents, with `reason` (see `documents.rejected_rows`;
    and `duplicate_id` for every row of a repeated id but one, `documents.split_repeated_ids`).
    rejected_counts: rejected's rows by reason (reasons with none left out).
    format: the format read.
    rows: how many rows the input has, counted on the input itself.
    damaged: input files that are not whole (see `inputs.read_input_files`).
    records: WARC/WET input: the records by reason and the skipped files (`warc.Records`).
    """

    documents: DataFrame
    rejected: DataFrame
    rejected_counts: dict[str, int]
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
    balance_splits: bool = False,
    interpret_small: bool = False,
) -> Input:
    """Read the input and check it: the columns `config` needs, and unique ids.

    balance_splits: cut the input into a multiple of the session's cores (`inputs.balance_splits`:
    sets a session setting, which the caller restores, as `run` does).
    interpret_small: interpret the queries of an input of few bytes (`session.interpret_small_run`:
    sets session settings, which the caller restores, as `_run_staged` does).

    JSON and CSV input is materialised once (see `inputs.needs_materialising`); the rows and
    the rejected rows by reason are counted in the same pass (`documents.row_counts`), those of
    other input by the aggregation that checks the ids (`documents.counts_by_id`). Raises
    inputs.InputError only for what the command line names wrongly: a path that matches nothing,
    a format that cannot be inferred, a missing column or a column of the wrong type in an
    input that declares its types (Parquet). Problems of the data are rows of `rejected`
    (unparseable lines, null ids, repeated ids, damaged text files) and `damaged` files.
    """
    stages = stages or Stages()
    with stages.timed("read"):
        files = inputs.input_files(spark, input_path)
        if balance_splits:
            inputs.balance_splits(spark, files)
        if interpret_small:
            session.interpret_small_run(spark, input_bytes=sum(file.size for file in files))
        raw = inputs.read_input_files(spark, input_path, fmt, documents.keep_types(config), files)
        frame, fmt = documents.complete_columns(raw.frame, config), raw.format
        documents.check_columns(frame, config)
    # The input's rows and its rejected rows by reason are counted in one pass: observed while
    # a parsed input is stored, else by the aggregation by id that checks the ids
    # (`documents.counts_by_id`), so that counting the rows is no pass of its own.
    records = None
    counted = None
    if fmt in warc.FORMATS:
        records = warc.split_records(stages.materialise("parse", frame))
        frame = records.documents
    elif inputs.needs_materialising(fmt):
        # Repaired on the way into the stored copy, so that no stage reading the documents
        # afterwards (the signatures, deduped/, the samples) checks their bytes again: the check
        # and the repair cost ~0.55 CPU-seconds per 200 MB of text each time they are read.
        frame = documents.valid_strings(frame)
        frame = stages.materialise("parse", frame, observe=documents.row_counts(frame, config.id_col))
        counted = stages.observed["parse"]
    if counted is None:
        # Not stored repaired: repaired where read (ids too: two that differ only in invalid
        # bytes are one id once repaired, as the documents carry it).
        frame = documents.valid_strings(frame)
    with stages.timed("check_ids"):
        docs, rejected = documents.rejected_rows(frame, config.id_col)
        if counted is None:
            counted = documents.counts_by_id(frame, config.id_col)
        rows = records.counts.get("document", 0) if records is not None else counted["rows"]
        rejected_counts = {r: counted[r] for r in documents.REJECTION_REASONS if counted[r]}
        # Not persisted: a cached aggregate keeps all spark.sql.shuffle.partitions (200 tasks,
        # 4 s of a small run), where adaptive execution coalesces the uncached one to a few;
        # the rare run with repeated ids computes it again.
        repeated = documents.repeated_ids(docs, config.id_col)
        # Input counted by id says whether some id repeats; a stored input's count does not,
        # and a few documents' ids are checked on the driver (the aggregation only when some repeat).
        some_id_repeats = counted.get(documents.REPEATED_IDS, 1) > 0
        if documents.REPEATED_IDS not in counted and rows <= documents.DRIVER_ID_CHECK_ROWS:
            some_id_repeats = documents.ids_repeat(docs, config.id_col)
        sample = repeated.orderBy(config.id_col).limit(5).collect() if some_id_repeats else []
        if sample:
            # Only when some id repeats: the split costs two joins over the documents.
            docs, duplicates = documents.split_repeated_ids(docs, config.id_col, repeated, _first_of_an_id(config))
            rejected = rejected.unionByName(duplicates, allowMissingColumns=True)
            # Every row of a repeated id but one (the ids are few: one small aggregate).
            rejected_counts[documents.DUPLICATE_ID] = repeated.agg(F.sum(F.col("count") - 1)).first()[0]
            log.warning(
                "the id column %r is not unique (repeated ids include %s): one row of each "
                "id is kept, the others are rejected as duplicate_id",
                config.id_col, ", ".join(repr(r[0]) for r in sample),
            )
    damaged = raw.damaged
    if records is not None:
        damaged = damaged + [inputs.DamagedFile(path, reason) for path, reason, _ in records.damaged]
    return Input(docs, rejected, rejected_counts, fmt, rows, damaged, records)


def _run_staged(
    spark: SparkSession,
    config: DedupeConfig,
    input_path: str,
    fmt: str | None,
    target: outputs.StagedOutput,
    started: float,
    finder: Finder,
) -> tuple[dict[str, Any], list[html_page.PairSample]]:
    """The run inside the staging folder: the report and a few pairs for report.html."""
    stages = Stages(work=target.work, spark=spark)
    stages.count_jobs(spark, f"simhash_udf-{target.work}")
    with session.settings_restored(spark, session.INTERPRETED_SETTINGS):
        source = read_input(spark, config, input_path, fmt, stages, balance_splits=True, interpret_small=True)
    stages.documents = source.rows
    # Interpreted by the documents now they are counted (a few bytes can hold many rows).
    session.interpret_small_run(spark, documents=source.rows)
    docs, fmt = source.documents, source.format
    config = warc.document_config(config, fmt)
    rejected_counts = source.rejected_counts
    with stages.timed("check_ids"):
        if rejected_counts:
            outputs.write_parquet(source.rejected, target.path("rejected"))
            log.warning(
                "%d input rows could not be documents (%s); see rejected/",
                sum(rejected_counts.values()), rejected_counts,
            )
    found = finder.find(docs, config, stages)
    kept = F.col("status") == clusters.KEPT
    if config.keep_empty:
        kept = kept | F.coalesce(F.col("reason") == documents.EMPTY, F.lit(False))  # reason may be null
    with stages.timed("clusters"):
        clusters_frame = _with_source(found.clusters, docs, config.id_col)
        # The documents deduped/ leaves out, counted by the write's own tasks.
        written = outputs.write_parquet(clusters_frame, target.path("clusters"), observe={"dropped": F.count(F.when(~kept, 1))})
    clusters_frame = outputs.read_back(clusters_frame, target.path("clusters"))
    if config.write_pairs:
        with stages.timed("pairs"):
            outputs.write_parquet(found.pairs, target.path("pairs"))
        with stages.timed("sample_pairs"):
            # A handful of rows for report.html, read from the pairs just written.
            text_col = config.text_col if config.text_col in docs.columns else None
            samples = pair_samples.sample_pairs(
                outputs.read_back(found.pairs, target.path("pairs")), docs, config.id_col, text_col,
                extract=config.extract if config.html else None,
            )
    else:
        samples = []
    with stages.timed("deduped"):
        # clusters/ holds every document once, so the kept ones are those not dropped.
        dropped = clusters_frame.where(~kept).select(F.col("id").alias(config.id_col))
        deduped = clusters.without_dropped(documents.input_columns(docs), dropped, config.id_col, written["dropped"])
        outputs.write_parquet(deduped, target.path("deduped"))
    with stages.timed("report"):
        summary = report.summarise(clusters_frame, found.fingerprint_pairs, found.cluster_sizes)
        accounted = sum(summary["by_status"].values()) + sum(rejected_counts.values())
        if accounted != source.rows:
            raise LostRowsError(
                f"the input has {source.rows} rows but clusters/ and rejected/ hold {accounted}"
            )
        text_counts = report.text_counts(found.signed, stages.rows.get(SIGNATURES_STAGE))
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
        self_join_plan=found.self_join_plan,
        stage_seconds=stages.seconds,
        stage_rows=stages.rows,
        stage_jobs=stages.jobs,
        spark_jobs=stages.spark_jobs(),
    )
    # Files not read to their end (their rows before the damage are in the counts above).
    result["counts"]["damaged_files"] = len(source.damaged)
    result["damaged_files"] = [{"path": d.path, "reason": d.reason} for d in source.damaged]
    # The short-text policy's counts (short_text_check.counts); runs without texts, or against an
    # index, do not apply it.
    result["verify"] = found.join_stats.get("verify") or {**short_text_policy.describe(config.verify), "applied": False}
    # The sketch route's counts (self_join._with_sketch_route, and against an index
    # index/sketch_lookup.py); runs without texts or with --sketch none do not take it.
    result["sketch"] = {
        **asdict(config.sketch),
        "applied": "sketch" in found.join_stats,
        **found.join_stats.get("sketch", {}),
    }
    if source.records is not None:
        result["records"] = {
            "by_reason": dict(sorted(source.records.counts.items())),
            "damaged_stretches": {path: n for path, _, n in source.records.damaged},
            "skipped_files": [{"path": p, "reason": r} for p, r in source.records.skipped_files],
        }
    result.update(finder.report_sections())
    return result, samples


# Input columns that say where a document came from, copied into clusters/ when present.
SOURCE_COLUMNS = ("url", "fetch_time")


def _with_source(clustered: DataFrame, docs: DataFrame, id_col: str) -> DataFrame:
    """clusters/ rows plus the input's `url` and `fetch_time` columns, when it has them."""
    extra = [c for c in SOURCE_COLUMNS if c in docs.columns and c not in clustered.columns and c != id_col]
    if not extra:
        return clustered
    return clustered.join(docs.select(F.col(id_col).alias("id"), *extra), "id", "left")
