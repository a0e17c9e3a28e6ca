"""The job's input: which files, in which format, which are damaged, read as one DataFrame.

Paths go through Hadoop's FileSystem API (via the JVM, `files/hadoop.py`), so the same code
works for local paths, HDFS and object stores. JSON and CSV are parsed by `files/json_csv.py`,
WARC and WET by `files/warc.py`; output is `files/outputs.py`'s.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, StringType, StructField, StructType

from simhash_udf.files import integrity, json_csv, warc
from simhash_udf.files.hadoop import hadoop_path

log = logging.getLogger("simhash_udf")

FORMATS = ("parquet", "json", "csv", "text", *warc.FORMATS)
# text format: why a damaged file could not be read (its row is rejected).
DAMAGE_COLUMN = "_damaged_file"
# True for a row whose bytes were not valid UTF-8 (WARC/WET: not valid in the page's charset);
# set by the reader where it repairs the bytes itself (JSON lines, WARC pages), and by
# `documents.rejected_rows` for every string column it repairs. Counted as
# `invalid_utf8_documents`; not an input column, so never written to deduped/.
INVALID_BYTES_COLUMN = warc.INVALID_BYTES_COLUMN
_EXTENSIONS = {
    ".parquet": "parquet",
    ".json": "json",
    ".jsonl": "json",
    ".ndjson": "json",
    ".csv": "csv",
    ".txt": "text",
    ".text": "text",
    **warc.EXTENSIONS,
}
# Compressed files larger than this are not checked for damage (the check holds the file in
# a task's memory, and Spark's binaryFile reader stops at 2 GiB).
_MAX_CHECKED_BYTES = 1 << 30
_COMPRESSION_SUFFIXES = (".gz", ".bz2", ".zst", ".snappy", ".lz4", ".deflate", ".xz")


# How many splits Spark cuts the input's files into (and so how many tasks read it, and how many
# files a parsed copy has, which its readers split no further). Spark's own count is
# ceil(bytes / spark.sql.files.maxPartitionBytes) above maxPartitionBytes x cores: 345 MB of
# HTML on 2 cores made 3 splits, and the one pass over the text ran 2 of them, then the third
# while the other core idled (the signatures stage 25 s where its tasks added up to 40 s of
# work). A run asks for a multiple of the cores instead (`balance_splits`), unless the session
# sets this itself, and gives the session its own setting back at its end
# (`split_setting_restored`: a notebook's session is the user's).
MIN_SPLITS_KEY = "spark.sql.files.minPartitionNum"


class InputError(ValueError):
    """The input cannot be read as asked; the message says what is wrong and where."""


@dataclass(frozen=True)
class InputFile:
    """One data file of the input: `path` as Hadoop lists it, `uri` as Spark's
    `_metadata.file_path` names it (URL-encoded), `size` in bytes."""

    path: str
    uri: str
    size: int


@dataclass(frozen=True)
class DamagedFile:
    """An input file that is not whole: `path` (as listed) and the `reason`."""

    path: str
    reason: str


@dataclass
class RawInput:
    """The input as read (`read_input_files`): `frame`, the `format` used, and the `damaged`
    files (whose rows before the damage are in `frame` for json and csv)."""

    frame: DataFrame
    format: str
    damaged: list[DamagedFile]


def input_files(spark: SparkSession, path: str) -> list[InputFile]:
    """Data files a path, folder or glob names (hidden `_`/`.` files left out), sorted by path."""
    fs, hpath = hadoop_path(spark, path)
    statuses = fs.globStatus(hpath)
    if statuses is None or len(statuses) == 0:
        raise InputError(f"no input: nothing matches {path!r}")
    files: list[InputFile] = []
    pending = list(statuses)
    while pending:
        status = pending.pop()
        name = status.getPath().getName()
        if name.startswith((".", "_")):
            continue
        if status.isDirectory():
            pending.extend(fs.listStatus(status.getPath()))
        else:
            listed = status.getPath().toString()
            # Spark's file_path is the URI of the path re-parsed from its string ("file:/a%20b",
            # where the listed path's own URI would be "file:///a%20b").
            uri = spark.sparkContext._jvm.org.apache.hadoop.fs.Path(listed).toUri().toString()
            files.append(InputFile(listed, uri, int(status.getLen())))
    if not files:
        raise InputError(f"no input: {path!r} holds no data files")
    return sorted(files, key=lambda f: f.path)


def list_input_files(spark: SparkSession, path: str) -> list[str]:
    """Paths of the data files a path, folder or glob names (see `input_files`), sorted."""
    return [f.path for f in input_files(spark, path)]


def infer_format(files: list[str]) -> str:
    """The input format from the files' extensions (compression suffixes ignored)."""
    found = set()
    for name in files:
        base = name.lower()
        for suffix in _COMPRESSION_SUFFIXES:
            if base.endswith(suffix):
                base = base[: -len(suffix)]
        found.add(_EXTENSIONS.get(os.path.splitext(base)[1]))
    if len(found) == 1 and None not in found:
        return found.pop()
    shown = ", ".join(sorted(str(f) for f in found))
    raise InputError(
        f"cannot infer the input format from the file names (found: {shown}); "
        f"pass --format with one of {', '.join(FORMATS)}"
    )


def _check_compressed(row: Any) -> tuple[str, str | None]:
    """(path, damage or None) of one binaryFile row; runs in a Spark task."""
    return row["path"], integrity.compression_damage(integrity.codec_of(row["path"]), bytes(row["content"]))


def _read_int(stream: Any, position: int) -> bytes:
    """The 4 bytes at `position` of a Hadoop input stream (one call through py4j)."""
    stream.seek(position)
    return int(stream.readInt()).to_bytes(4, "big", signed=True)


def _parquet_damage(spark: SparkSession, file: InputFile) -> str | None:
    """Check a Parquet file's framing: two small reads on the driver (the PAR1 magics)."""
    if file.size < 12:
        return integrity.parquet_damage(file.size, b"", b"")
    fs, hpath = hadoop_path(spark, file.path)
    stream = fs.open(hpath)
    try:
        head, tail = _read_int(stream, 0), _read_int(stream, file.size - 4)
    finally:
        stream.close()
    return integrity.parquet_damage(file.size, head, tail)


def damaged_files(spark: SparkSession, files: list[InputFile], fmt: str) -> list[DamagedFile]:
    """The input files that are not whole, each with its reason.

    Compressed files (.gz, .bz2, .deflate) are decompressed to their end in one Spark job
    (one task per file, in constant memory besides the compressed bytes; files over 1 GiB
    compressed are not checked and are read strictly). Parquet files are checked for their
    framing on the driver. Other files cannot be damaged in a way the reader notices.
    """
    damaged: list[DamagedFile] = []
    if fmt == "parquet":
        for file in files:
            reason = _parquet_damage(spark, file)
            if reason:
                damaged.append(DamagedFile(file.path, reason))
    compressed = [f for f in files if f.size > 0 and integrity.codec_of(f.path)]
    unchecked = [f.path for f in compressed if f.size > _MAX_CHECKED_BYTES]
    if unchecked:
        log.warning("%d compressed files over %d bytes are not checked for damage: %s",
                    len(unchecked), _MAX_CHECKED_BYTES, ", ".join(unchecked[:5]))
    compressed = [f for f in compressed if f.size <= _MAX_CHECKED_BYTES]
    if compressed:
        by_uri = {f.uri: f for f in compressed} | {f.path: f for f in compressed}
        raw = spark.read.format("binaryFile").load([f.path for f in compressed])
        # One file per partition: the check of a large file should not wait behind others.
        checked = raw.select("path", "content").repartition(len(compressed)).rdd.map(_check_compressed).collect()
        for path, reason in sorted(checked):
            if reason:
                damaged.append(DamagedFile(by_uri[path].path if path in by_uri else path, reason))
    for file in damaged:
        log.warning("damaged input file %s: %s", file.path, file.reason)
    return damaged


def _read_text(spark: SparkSession, files: list[InputFile], damaged: dict[str, str]) -> DataFrame:
    """text: one row per file, `id` (its URI), `text`, and `_damaged_file` (the reason, for a
    damaged file, whose row has no text). Spark reads no row from an empty file: those are
    added as empty documents, and damaged files as rows to reject, so that no file is lost."""
    schema = StructType(
        [StructField("id", StringType(), False), StructField("text", StringType(), True),
         StructField(DAMAGE_COLUMN, StringType(), True)]
    )
    readable = [f.path for f in files if f.size > 0 and f.path not in damaged]
    unread = [(f.uri, "", None) for f in files if f.size == 0 and f.path not in damaged]
    unread += [(f.uri, None, damaged[f.path]) for f in files if f.path in damaged]
    frame = spark.createDataFrame(unread, schema)
    if readable:
        read = spark.read.text(readable, wholetext=True).select(
            F.col("_metadata.file_path").alias("id"),
            F.col("value").alias("text"),
            F.lit(None).cast(StringType()).alias(DAMAGE_COLUMN),
        )
        frame = read.unionByName(frame)
    return frame


def read_input_files(
    spark: SparkSession,
    path: str,
    fmt: str | None = None,
    keep_types: Mapping[str, tuple[type[DataType], ...]] | None = None,
    files: list[InputFile] | None = None,
) -> RawInput:
    """Read the input, damaged files included, as a DataFrame of its own columns plus:

    - json (JSON Lines) and csv (a header row): lines that do not parse are kept in a
      `_corrupt_record` column, the other columns null, so the job can report them. Whether a
      row parses can depend on which columns a query reads, so callers materialise them once
      before classifying rows (`needs_materialising`). Strings are the file's bytes (invalid
      UTF-8 included) except json lines with invalid UTF-8, read repaired and marked in
      `_invalid_bytes`; `documents.rejected_rows` repairs the rest.
    - text: one document per file, `id` the file's URI, `text` its content, `_damaged_file`
      the reason a compressed file could not be read (its text is then null).

    keep_types: for json and csv, whose schema is inferred from the data, a column named here
    whose inferred type is not one of the given types is read as strings instead (so that
    an id or a text of another type in some rows does not stop the run; see
    `json_csv.as_strings`).
    Damaged files (`damaged_files`) never fail the read: json and csv keep the rows before
    the damage (none for csv, whose records may span lines), text gives the file one row with
    `_damaged_file` set, Parquet leaves the file out.
    files: the input's files when the caller has listed them (`input_files(spark, path)`).
    """
    files = files if files is not None else input_files(spark, path)
    fmt = fmt or infer_format([f.path for f in files])
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if fmt in warc.FORMATS:
        # Read record by record, one task per file: damage is found (and survived) by the
        # reader itself, and reported once the records are counted (`warc.split_records`).
        return RawInput(warc.read_records(spark, [f.path for f in files], fmt), fmt, [])
    damaged = damaged_files(spark, files, fmt)
    broken = {d.path: d.reason for d in damaged}
    whole = [f.path for f in files if f.path not in broken]
    if fmt == "text":
        frame = _read_text(spark, files, broken)
    elif fmt == "parquet":
        # No whole file at all: no columns either (the caller decides what that means).
        frame = spark.read.parquet(*whole) if whole else spark.createDataFrame([], StructType([]))
    else:
        frame = json_csv.read_parsed(spark, fmt, whole, [f.path for f in files if f.path in broken], keep_types or {})
    return RawInput(frame, fmt, damaged)


def balanced_split_count(total_bytes: int, cores: int, max_split_bytes: int) -> int:
    """The fewest splits of at most `max_split_bytes` that a multiple of `cores` can be: every
    wave of tasks then keeps every core busy. Up to max_split_bytes x cores this is `cores`,
    Spark's own minimum, and above many waves the splits are max_split_bytes as before."""
    waves = max(1, math.ceil(total_bytes / (max_split_bytes * max(cores, 1))))
    return max(cores, 1) * waves


def balance_splits(spark: SparkSession, files: list[InputFile]) -> None:
    """Set MIN_SPLITS_KEY to `balanced_split_count` of the files' bytes on the session's cores
    (its default parallelism), unless the session already sets it."""
    if spark.conf.get(MIN_SPLITS_KEY, None) is not None:
        return
    jvm = spark.sparkContext._jvm
    max_split = jvm.org.apache.spark.network.util.JavaUtils.byteStringAsBytes(
        spark.conf.get("spark.sql.files.maxPartitionBytes")
    )
    count = balanced_split_count(sum(f.size for f in files), spark.sparkContext.defaultParallelism, max_split)
    spark.conf.set(MIN_SPLITS_KEY, str(count))


@contextmanager
def split_setting_restored(spark: SparkSession) -> Iterator[None]:
    """Give the session back its own MIN_SPLITS_KEY (or none) when the block ends, whatever
    `balance_splits` set inside it."""
    before = spark.conf.get(MIN_SPLITS_KEY, None)
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(MIN_SPLITS_KEY)
        else:
            spark.conf.set(MIN_SPLITS_KEY, before)


def needs_materialising(fmt: str) -> bool:
    """True for formats whose rows may parse differently depending on the columns read."""
    return fmt in ("json", "csv", *warc.FORMATS)
