"""Document-level stages: check the input, normalise, exact keys, distinct texts, fingerprints.

Each function is a DataFrame transform; column names are listed in its docstring. Internal
frames use fixed names (`id`, `exact_key`, `fingerprint`, ...) so later stages never need to
know what the input called its columns.
"""

from __future__ import annotations

import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, BooleanType, DataType, IntegralType, LongType, StringType

from simhash_udf.core import cluster_rules
from simhash_udf.core.config import DedupeConfig
from simhash_udf.core.short_text_policy import carried_below
from simhash_udf.files.inputs import DAMAGE_COLUMN, INVALID_BYTES_COLUMN, InputError
from simhash_udf.files.json_csv import CORRUPT_COLUMN
from simhash_udf.stages import udfs

# Reasons a document is skipped (status `skipped`) or matched only exactly.
EMPTY = "empty"
NULL_FINGERPRINT = "null_fingerprint"
TOO_SHORT = cluster_rules.TOO_SHORT
# Reasons an input row cannot be a document at all (written to `rejected/`).
UNPARSEABLE = "unparseable"
NULL_ID = "null_id"
DAMAGED_FILE = "damaged_file"
DUPLICATE_ID = "duplicate_id"
# rejected/: the exact bytes of an unparseable line that was not valid UTF-8 (its
# `_corrupt_record` holds the line with each invalid sequence replaced by U+FFFD).
CORRUPT_BYTES_COLUMN = "_corrupt_bytes"


def needed_columns(config: DedupeConfig) -> list[str]:
    """The input columns a run reads: the id, the text (or the fingerprint) and `--keep-by`."""
    needed = [config.id_col, config.fingerprint_col or config.text_col]
    if config.keep_by:
        needed.append(config.keep_by)
    return needed


def keep_types(config: DedupeConfig) -> dict[str, tuple[type[DataType], ...]]:
    """The types a reader that infers its schema from the data should keep for the id and
    text columns; any other type is read as strings (`files/inputs.read_input_files`): a JSON
    id that is an object in one row, or a text that is a number, stays a row of the run."""
    types: dict[str, tuple[type[DataType], ...]] = {config.id_col: (IntegralType, StringType)}
    if not config.fingerprint_col:
        types[config.text_col] = (StringType,)
    return types


def complete_columns(frame: DataFrame, config: DedupeConfig) -> DataFrame:
    """`frame`, or, when the input has no data column at all (every file empty, damaged or
    nothing but unparseable lines), `frame` with the columns the run needs added as nulls:
    its rows (if any) are then rejected with their reason instead of the run stopping on a
    missing column. An input with columns but not the ones asked for is left to
    `check_columns` (most likely a wrong --id-col or --text-col)."""
    helpers = {CORRUPT_COLUMN, DAMAGE_COLUMN, INVALID_BYTES_COLUMN}
    if any(name not in helpers for name in frame.columns):
        return frame
    for name in needed_columns(config):
        frame = frame.withColumn(name, F.lit(None).cast(StringType()))
    return frame


def check_columns(frame: DataFrame, config: DedupeConfig) -> None:
    """Raise InputError naming any column the run needs that is missing or of the wrong type."""
    fields = {f.name: f.dataType for f in frame.schema.fields}
    available = ", ".join(n for n in fields if n not in (CORRUPT_COLUMN, DAMAGE_COLUMN, INVALID_BYTES_COLUMN)) or "(none)"
    missing = [c for c in needed_columns(config) if c not in fields]
    if missing:
        raise InputError(f"missing column(s) {', '.join(map(repr, missing))}; the input has: {available}")
    if not isinstance(fields[config.id_col], (IntegralType, StringType)):
        raise InputError(
            f"id column {config.id_col!r} is {fields[config.id_col].simpleString()}; "
            "ids must be integers or strings"
        )
    if config.fingerprint_col:
        if not isinstance(fields[config.fingerprint_col], IntegralType):
            raise InputError(
                f"fingerprint column {config.fingerprint_col!r} is "
                f"{fields[config.fingerprint_col].simpleString()}; expected signed 64-bit integers"
            )
    elif not isinstance(fields[config.text_col], (StringType, BinaryType)):
        raise InputError(
            f"text column {config.text_col!r} is {fields[config.text_col].simpleString()}; "
            "expected strings"
        )


def valid_strings(frame: DataFrame) -> DataFrame:
    """`frame` with every string column valid UTF-8, and `_invalid_bytes` (bool) true on the
    rows where some string was not (or where the reader already said so).

    Each invalid sequence becomes U+FFFD (Spark's `make_valid_utf8`, which replaces as
    Python's decoder does), so every output can be read by Arrow, pandas and DuckDB, which
    refuse invalid UTF-8 in a string column. The raw bytes of an invalid `_corrupt_record`
    are kept as `_corrupt_bytes` (binary). Only top-level string columns are repaired:
    strings nested in structs, arrays or maps (Parquet input only; JSON lines are repaired
    whole by the reader) are left as they are.
    """
    strings = [f.name for f in frame.schema.fields if isinstance(f.dataType, StringType)]
    invalid = [F.coalesce(~F.is_valid_utf8(F.col(name)), F.lit(False)) for name in strings]
    if INVALID_BYTES_COLUMN in frame.columns:
        invalid.append(F.coalesce(F.col(INVALID_BYTES_COLUMN), F.lit(False)))
    flag = F.lit(False)
    for column in invalid:
        flag = flag | column
    extra = []
    if CORRUPT_COLUMN in strings:
        raw = F.col(CORRUPT_COLUMN)
        extra.append(F.when(~F.is_valid_utf8(raw), raw.cast(BinaryType())).alias(CORRUPT_BYTES_COLUMN))
    repaired = [
        F.make_valid_utf8(F.col(name)).alias(name) if name in strings else F.col(name)
        for name in frame.columns if name != INVALID_BYTES_COLUMN
    ]
    return frame.select(*repaired, *extra, flag.cast(BooleanType()).alias(INVALID_BYTES_COLUMN))


def input_columns(documents: DataFrame) -> DataFrame:
    """Documents with their input columns only (`_invalid_bytes` dropped): what deduped/ holds."""
    return documents.drop(INVALID_BYTES_COLUMN)


# The reasons `rejection_reason` gives, in the order it checks them.
REJECTION_REASONS = (DAMAGED_FILE, UNPARSEABLE, NULL_ID)


def rejection_reason(frame: DataFrame, id_col: str) -> Column:
    """Why a row of `frame` (input rows, repaired by `valid_strings` or not: only nulls count)
    cannot be a document: `damaged_file` (`_damaged_file` set), `unparseable`
    (`_corrupt_record` set), `null_id`, or null for a row that can."""

    def flag(name: str) -> Column:
        return F.col(name).isNotNull() if name in frame.columns else F.lit(False)

    return (
        F.when(flag(DAMAGE_COLUMN), F.lit(DAMAGED_FILE))
        .when(flag(CORRUPT_COLUMN), F.lit(UNPARSEABLE))
        .when(F.col(id_col).isNull(), F.lit(NULL_ID))
    )


def row_counts(frame: DataFrame, id_col: str) -> dict[str, Column]:
    """Aggregates over input rows: `rows` (all of them) and, for each of REJECTION_REASONS,
    the rows `rejected_rows` rejects for it. For `Stages.materialise`'s observe (no Spark job
    of their own) or one `agg` over the input: the input's size and what rejected/ will hold
    in one pass, where counting each costs a pass of its own."""
    reason = rejection_reason(frame, id_col)
    return {"rows": F.count(F.lit(1)), **{r: F.count(F.when(reason == r, 1)) for r in REJECTION_REASONS}}


# `counts_by_id`'s count of the ids that more than one document carries.
REPEATED_IDS = "repeated_ids"


def counts_by_id(frame: DataFrame, id_col: str) -> dict[str, int]:
    """`row_counts` of input rows and, as REPEATED_IDS, how many ids more than one of its
    documents (rows `rejected_rows` keeps) carry: one aggregation by id, in one pass.

    For input that is not stored on its way in (Parquet, text, WARC): counting its rows was a
    pass of its own before the ids' check, which groups every row by id anyway; the counts are
    sums over those groups. The groups are (id, rejection reason), with one count each: a
    row's reason rides in the key rather than as an aggregate per reason, so the shuffle moves
    one count a row, as the ids' check alone did (rows without an id are null_id or rejected
    otherwise, never a document)."""
    reason = rejection_reason(frame, id_col)
    per_id = frame.select(F.col(id_col).alias("id"), reason.alias("reason")).groupBy("id", "reason").count()
    of_reason = {r: F.when(F.col("reason") == r, F.col("count")) for r in REJECTION_REASONS}
    totals = per_id.agg(
        F.coalesce(F.sum("count"), F.lit(0)).alias("rows"),
        *[F.coalesce(F.sum(count), F.lit(0)).alias(r) for r, count in of_reason.items()],
        F.count(F.when(F.col("reason").isNull() & (F.col("count") > 1), 1)).alias(REPEATED_IDS),
    ).first()
    return {name: int(value) for name, value in totals.asDict().items()}


def rejected_rows(frame: DataFrame, id_col: str) -> tuple[DataFrame, DataFrame]:
    """Split input rows, every string made valid UTF-8 (`valid_strings`), into (documents,
    rejected).

    Rejected rows are those of a damaged file (`_damaged_file` set: text input), those that
    did not parse (`_corrupt_record` set) and those with a null id; they keep all their input
    columns plus `reason` (`damaged_file`, `unparseable` or `null_id`), `_invalid_bytes` and,
    for an unparseable line that was not valid UTF-8, its bytes in `_corrupt_bytes` (see
    `valid_strings`). Documents are the other rows, without the helper columns but
    `_invalid_bytes` (counted as `invalid_utf8_documents` by `signed_documents`; drop it
    with `input_columns`).
    """
    flagged = frame.withColumn("reason", rejection_reason(frame, id_col))
    documents = flagged.where(F.col("reason").isNull()).drop("reason")
    documents = documents.drop(*[c for c in (CORRUPT_COLUMN, DAMAGE_COLUMN, CORRUPT_BYTES_COLUMN) if c in documents.columns])
    return documents, flagged.where(F.col("reason").isNotNull())


def repeated_ids(documents: DataFrame, id_col: str) -> DataFrame:
    """The ids that occur more than once: `id_col`, `count`."""
    return documents.groupBy(id_col).count().where(F.col("count") > 1)


# Up to this many documents, `ids_repeat` decides on the driver whether some id repeats: the
# ids are collected (a few MB at the limit), one Spark job where the aggregation by id is a
# shuffle and two.
DRIVER_ID_CHECK_ROWS = 200_000


def ids_repeat(documents: DataFrame, id_col: str) -> bool:
    """Whether some id occurs more than once among `documents` (rows `rejected_rows` keeps: no
    null id), from one collect of the ids. The same test as `repeated_ids` being non-empty:
    Arrow and Spark both compare ids by value (strings and binaries by their bytes)."""
    ids = documents.select(id_col).toArrow().column(0)
    return len(pc.unique(ids)) < len(ids)


def split_repeated_ids(
    documents: DataFrame, id_col: str, repeated: DataFrame, order: list[Column]
) -> tuple[DataFrame, DataFrame]:
    """(documents with unique ids, the other rows of a repeated id with `reason` `duplicate_id`).

    repeated: `id_col` of the ids that occur more than once (`repeated_ids`). Of the rows of
    a repeated id, the first by `order`, then by the whole row (as JSON), stays a document:
    the choice depends on the rows only, never on their order in the input.
    """
    tie_break = F.to_json(F.struct(*[F.col(c) for c in documents.columns]))
    rank = F.row_number().over(Window.partitionBy(id_col).orderBy(*order, tie_break))
    ranked = documents.join(repeated.select(id_col), id_col, "left_semi").withColumn("_rank", rank)
    unique = documents.join(repeated.select(id_col), id_col, "left_anti")
    kept = ranked.where(F.col("_rank") == 1).drop("_rank")
    dropped = ranked.where(F.col("_rank") > 1).drop("_rank").withColumn("reason", F.lit(DUPLICATE_ID))
    return unique.unionByName(kept), dropped


def _keep_by(config: DedupeConfig) -> list[Column]:
    return [F.col(config.keep_by).alias("keep_by")] if config.keep_by else []


def signed_documents(documents: DataFrame, config: DedupeConfig, carry_short_texts: bool = False) -> DataFrame:
    """The one pass over the text: one small row per document, the text itself left behind.

    Returns `id`, [`keep_by`], `exact_key` (binary: SHA-256 of the normalised text's UTF-8,
    null when empty), `chars` (int: the normalised text's length in characters), `fingerprint`
    (long, null when empty or too short), `n_features` (int), `sketch` (binary, null without
    the sketch route or under its `min_chars`), `invalid_utf8` (bool, also true when the input
    row's `_invalid_bytes` is: its bytes were repaired by `rejected_rows`), `extract_fallback`
    (bool: `--extract main` kept all visible text of an HTML page in which it found no main
    content), `reason` (`empty`: null, empty or whitespace only after normalisation;
    `too_short`: fewer than min_features features, matched only exactly; else null),
    `short_text` (string: the normalised text when `carry_short_texts` and it is shorter than
    the short-text policy's `carried_below`, the only texts a later stage reads; else null).

    Decoding, extraction, normalisation, the exact key, the fingerprint and the sketch are one
    Arrow UDF per batch (`udfs.document_signatures`): no stage after this one reads or shuffles
    the texts. Exact copies are fingerprinted once per batch they share, not once per crawl:
    grouping them first would shuffle every text, which costs more than the repeats.
    """
    repaired = (
        F.coalesce(F.col(INVALID_BYTES_COLUMN), F.lit(False))
        if INVALID_BYTES_COLUMN in documents.columns else F.lit(False)
    )
    raw = F.col(config.text_col).cast("binary")
    signed = documents.select(
        F.col(config.id_col).alias("id"),
        *_keep_by(config),
        udfs.document_signatures(
            raw, config.html, config.extract, config.fingerprint, config.sketch,
            carried_below(config.verify) if carry_short_texts else None,
        ).alias("s"),
        repaired.alias("repaired"),
    )
    empty = F.col("s.exact_key").isNull()
    return signed.select(
        "id",
        *(["keep_by"] if config.keep_by else []),
        F.col("s.exact_key").alias("exact_key"),
        F.col("s.chars").alias("chars"),
        F.col("s.fingerprint").alias("fingerprint"),
        F.col("s.n_features").alias("n_features"),
        F.col("s.sketch").alias("sketch"),
        (F.col("s.invalid_utf8") | F.col("repaired")).alias("invalid_utf8"),
        F.col("s.extract_fallback").alias("extract_fallback"),
        F.when(empty, F.lit(EMPTY)).when(F.col("s.fingerprint").isNull(), F.lit(TOO_SHORT)).alias("reason"),
        F.col("s.short_text").alias("short_text"),
    )


def fingerprinted_documents(signed: DataFrame) -> DataFrame:
    """Documents with their text's fingerprint: `id`, [`keep_by`], `exact_key`,
    `fingerprint` (null when skipped or too short), `reason` (`empty`, `too_short` or null).

    signed: `signed_documents`'s rows."""
    return signed.select(
        "id", *(["keep_by"] if "keep_by" in signed.columns else []), "exact_key", "fingerprint", "reason"
    )


def distinct_fingerprints(fingerprinted: DataFrame, signed: DataFrame | None) -> DataFrame:
    """One row per distinct fingerprint: `fingerprint`, `id` (the smallest id carrying it:
    the name pairs/ gives it), `chars` (int: the longest normalised text carrying it, what the
    short-text check asks; null for given fingerprints), `members` (long: the documents
    carrying it, from which `clusters.cluster_assignment` reads the clusters of one fingerprint),
    `text_carried` (bool: every text carrying it is in `signed`'s `short_text`, so the
    short-text check finds its texts there rather than in the input).

    fingerprinted: `id`, `fingerprint` (`fingerprinted_documents` or `given_fingerprints`);
    signed: `signed_documents`'s rows, or None when the input carried its fingerprints. One
    aggregation of the documents by fingerprint, stored once and read by the band join, the
    short-text check, pairs/ and the clusters (each aggregated the documents again before).
    Every document with a fingerprint is active (only a text without one has a `reason`), so
    `members` counts documents the clusters hold.
    """
    source = signed if signed is not None else fingerprinted
    chars = F.max("chars") if signed is not None else F.lit(None).cast("int")
    carried = (
        F.bool_and(F.col("short_text").isNotNull())
        if signed is not None and "short_text" in signed.columns else F.lit(False)
    )
    return source.where(F.col("fingerprint").isNotNull()).groupBy("fingerprint").agg(
        F.min("id").alias("id"), chars.alias("chars"), F.count(F.lit(1)).alias("members"),
        carried.alias("text_carried"),
    )


def given_fingerprints(documents: DataFrame, config: DedupeConfig) -> DataFrame:
    """Documents whose input already carries fingerprints (`--fingerprint-col`):
    `id`, [`keep_by`], `exact_key` (null: there is no text), `fingerprint`, `reason`
    (`null_fingerprint` or null)."""
    fp = F.col(config.fingerprint_col).cast(LongType())
    return documents.select(
        F.col(config.id_col).alias("id"),
        *_keep_by(config),
        F.lit(None).cast("binary").alias("exact_key"),
        fp.alias("fingerprint"),
        F.when(fp.isNull(), F.lit(NULL_FINGERPRINT)).alias("reason"),
    )
