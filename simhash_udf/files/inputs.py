"""The job's input: which files, in which format, which are damaged, read as one DataFrame.

Paths go through Hadoop's FileSystem API (via the JVM, :mod:`hadoop`), so the same code
works for local paths, HDFS and object stores. Output is :mod:`outputs`'s.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, DataFrameReader, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, StringType, StructField, StructType

from simhash_udf.files import integrity, warc
from simhash_udf.files.hadoop import hadoop_path

log = logging.getLogger("simhash_udf")

FORMATS = ("parquet", "json", "csv", "text", *warc.FORMATS)
CORRUPT_COLUMN = "_corrupt_record"
# text format: why a damaged file could not be read (its row is rejected).
DAMAGE_COLUMN = "_damaged_file"
# True for a row whose bytes were not valid UTF-8 (WARC/WET: not valid in the page's charset);
# set by the reader where it repairs the bytes itself (JSON lines, WARC pages), and by
# `documents.rejected_rows` for every string column it repairs. Counted as
# `invalid_utf8_documents`; not an input column, so never written to deduped/.
INVALID_BYTES_COLUMN = warc.INVALID_BYTES_COLUMN
# CSV is read as ISO-8859-1, whose decoder maps every byte to one character: the fields'
# bytes come back exactly (`_raw_strings`), so invalid UTF-8 can be repaired and counted
# like any other input's (Spark's UTF-8 decoder would replace it silently).
_BYTE_CHARSET = "ISO-8859-1"
_BOM = "\ufeff"
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
_MAX_JSON_STRING = 2**31 - 1
# Compressed files larger than this are not checked for damage (the check holds the file in
# a task's memory, and Spark's binaryFile reader stops at 2 GiB).
_MAX_CHECKED_BYTES = 1 << 30
_COMPRESSION_SUFFIXES = (".gz", ".bz2", ".zst", ".snappy", ".lz4", ".deflate", ".xz")


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


def _parsing_reader(spark: SparkSession, fmt: str, lenient: bool) -> DataFrameReader:
    reader = (
        spark.read.option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", CORRUPT_COLUMN)
        # Damaged files (and only those: transient read errors must still fail the job) are
        # read up to their damage.
        .option("ignoreCorruptFiles", lenient)
    )
    if fmt == "csv":
        return (
            reader.option("header", True).option("multiLine", True).option("escape", '"')
            .option("encoding", _BYTE_CHARSET)
        )
    # Jackson caps JSON strings at 20M characters by default; a larger page would otherwise
    # turn its whole row into a corrupt record.
    return reader.option("maxStringLen", _MAX_JSON_STRING)


def _load(reader: DataFrameReader, fmt: str, files: list[str]) -> DataFrame:
    return reader.csv(files) if fmt == "csv" else reader.json(files)


def _as_strings(schema: StructType, keep_types: Mapping[str, tuple[type[DataType], ...]]) -> StructType:
    """`schema` with the columns named in `keep_types` whose inferred type is not one of the
    given ones read as strings (a JSON number, object or array as its JSON text, a CSV field
    as written)."""
    fields = [
        StructField(f.name, StringType(), True)
        if f.name in keep_types and not isinstance(f.dataType, keep_types[f.name])
        else f
        for f in schema.fields
    ]
    return StructType(fields)


def _utf8_name(name: str) -> str:
    """A CSV header name read as ISO-8859-1, as the UTF-8 it was written in (a BOM dropped,
    as Spark's UTF-8 reader drops it)."""
    return name.encode(_BYTE_CHARSET).decode("utf-8", "replace").removeprefix(_BOM)


def _raw_strings(frame: DataFrame) -> DataFrame:
    """A CSV frame read as ISO-8859-1 with its string columns as the bytes of the file (as
    UTF-8 strings that may be invalid: `documents.rejected_rows` repairs and counts them)."""
    return frame.select(*[
        F.encode(F.col(f.name), _BYTE_CHARSET).cast(StringType()).alias(f.name)
        if isinstance(f.dataType, StringType) else F.col(f.name)
        for f in frame.schema.fields
    ])


def _json_lines(spark: SparkSession, lines: DataFrame, schema: StructType | None) -> DataFrame:
    """JSON lines held in a frame's `value` column read by Spark's JSON reader (the same
    parsing as a file's lines: arrays of objects give a row each), with `schema` or, when
    None, inferring one. The reader takes a Dataset[String]; PySpark offers it only from an
    RDD, which would send every line through Python."""
    reader = _parsing_reader(spark, "json", lenient=False)
    # Inferring: a column null on every repaired line says nothing about its type (Spark
    # would call it a string, which would then turn a typed column into strings).
    reader = reader.schema(schema) if schema is not None else reader.option("dropFieldIfAllNull", True)
    jvm = spark.sparkContext._jvm
    strings = getattr(lines.select("value")._jdf, "as")(jvm.org.apache.spark.sql.Encoders.STRING())
    return reader._df(reader._jreader.json(strings))


def _merged(schema: StructType, other: StructType) -> StructType:
    """`schema` with the fields of `other` it lacks added, and those whose types differ read
    as strings (as Spark's inference merges a long and a string)."""
    types = {f.name: f.dataType for f in other.fields}
    fields = [
        StructField(f.name, StringType(), True) if f.name in types and types[f.name] != f.dataType else f
        for f in schema.fields
    ]
    known = set(schema.fieldNames())
    return StructType(fields + [f for f in other.fields if f.name not in known and f.name != CORRUPT_COLUMN])


def _broken_lines(frame: DataFrame, schema: StructType) -> tuple[Column, DataFrame]:
    """(which rows are lines with invalid UTF-8, those lines repaired as `value`).

    Jackson rejects a line with invalid UTF-8 as a whole, so those are in `_corrupt_record`
    with every other column null; repaired by `_repaired_line`."""
    raw = F.col(CORRUPT_COLUMN)
    # Whether a line parses depends on the columns a scan reads, and on the filters pushed
    # into the JSON parser (it stops at a row that fails one before parsing the rest, so
    # never sees bad bytes after it): the condition reads every column, and no part of it
    # can be pushed down. The other columns are null on every corrupt row anyway.
    others = [F.col(n).cast(StringType()) for n in schema.fieldNames() if n != CORRUPT_COLUMN]
    unparsed = F.coalesce(*others).isNull() if others else F.lit(True)
    broken = F.coalesce(~F.is_valid_utf8(raw), F.lit(False)) & unparsed
    return broken, frame.where(broken).select(_repaired_line(raw).alias("value"))


def _repaired_line(raw: Column) -> Column:
    """A JSON line made valid UTF-8: each invalid sequence U+FFFD (as Python's decoder
    replaces), a leading BOM dropped (Jackson skips it in bytes, not in a string)."""
    return F.regexp_replace(F.make_valid_utf8(raw), f"^{_BOM}", "")


def _read_parsed(
    spark: SparkSession,
    fmt: str,
    whole: list[str],
    damaged: list[str],
    keep_types: Mapping[str, tuple[type[DataType], ...]],
) -> DataFrame:
    """json or csv: the schema inferred over all files, whole files read strictly, damaged
    files up to their damage.

    Invalid UTF-8 is kept, never a reason to reject a row: csv is read byte for byte
    (`_raw_strings`), and a json line with invalid UTF-8, which the reader rejects whole,
    is read again repaired (`_broken_lines`; its row has `_invalid_bytes` set, and its
    columns count in the schema); a json line that does not parse even then stays
    unparseable."""
    inferring = _parsing_reader(spark, fmt, lenient=True)
    if fmt == "csv":
        inferred = inferring.option("inferSchema", True).csv(whole + damaged).schema
        inferred = StructType([StructField(_utf8_name(f.name), f.dataType, f.nullable) for f in inferred.fields])
    else:
        inferred = inferring.json(whole + damaged).schema
    schema = _with_columns(_as_strings(inferred, keep_types), keep_types)
    frame = _read_with(spark, fmt, whole, damaged, schema)
    if fmt == "csv":
        return _raw_strings(frame)
    if CORRUPT_COLUMN not in inferred.fieldNames():
        # Spark adds the column to an inferred schema only when some line did not parse.
        return frame.withColumn(INVALID_BYTES_COLUMN, F.lit(False))
    # Two more passes, only for input with lines that do not parse: infer the repaired
    # lines' columns, then read them.
    _, lines = _broken_lines(frame, schema)
    repaired = _merged(schema, _json_lines(spark, lines, None).schema)
    if repaired != schema:
        schema = _as_strings(repaired, keep_types)
        frame = _read_with(spark, fmt, whole, damaged, schema)
    broken, lines = _broken_lines(frame, schema)
    reread = _json_lines(spark, lines, schema)
    # A repaired line that still does not parse stays as it was read (its exact bytes go to
    # rejected/): whether a line parses depends on its repaired text only, so the lines
    # whose repaired text is among those that failed are exactly the ones that failed.
    failed = reread.where(F.col(CORRUPT_COLUMN).isNotNull()).select(F.col(CORRUPT_COLUMN).alias("value")).distinct()
    unparsed = frame.where(broken).withColumn("value", _repaired_line(F.col(CORRUPT_COLUMN)))
    unparsed = unparsed.join(failed, "value", "left_semi").drop("value")
    return (
        frame.where(~broken).withColumn(INVALID_BYTES_COLUMN, F.lit(False))
        .unionByName(reread.where(F.col(CORRUPT_COLUMN).isNull()).withColumn(INVALID_BYTES_COLUMN, F.lit(True)))
        .unionByName(unparsed.withColumn(INVALID_BYTES_COLUMN, F.lit(True)))
    )


def _with_columns(schema: StructType, keep_types: Mapping[str, tuple[type[DataType], ...]]) -> StructType:
    """The reading schema: `schema`, the columns asked for added when nothing parsed, and
    the corrupt-record column."""
    if not [n for n in schema.fieldNames() if n != CORRUPT_COLUMN]:
        # Nothing parsed (empty, damaged or garbage files): the columns asked for, all null.
        # Spark refuses a scan that reads nothing but the corrupt-record column.
        for name in keep_types:
            schema = schema.add(StructField(name, StringType(), True))
    if CORRUPT_COLUMN not in schema.fieldNames():
        schema = schema.add(StructField(CORRUPT_COLUMN, StringType(), True))
    return schema


def _read_with(spark: SparkSession, fmt: str, whole: list[str], damaged: list[str], schema: StructType) -> DataFrame:
    """json or csv files read with `schema`: whole files strictly, damaged ones leniently."""
    frames = [
        _load(_parsing_reader(spark, fmt, lenient).schema(schema), fmt, files)
        for files, lenient in ((whole, False), (damaged, True))
        if files
    ]
    return frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1])


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
) -> RawInput:
    """Read the input, damaged files included; see `read_documents` for the columns.

    keep_types: for json and csv, whose schema is inferred from the data, a column named here
    whose inferred type is not one of the given types is read as strings instead (so that
    an id or a text of another type in some rows does not stop the run; see `_as_strings`).
    Damaged files (`damaged_files`) never fail the read: json and csv keep the rows before
    the damage (none for csv, whose records may span lines), text gives the file one row with
    `_damaged_file` set, Parquet leaves the file out.
    """
    files = input_files(spark, path)
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
        frame = _read_parsed(spark, fmt, whole, [f.path for f in files if f.path in broken], keep_types or {})
    return RawInput(frame, fmt, damaged)


def needs_materialising(fmt: str) -> bool:
    """True for formats whose rows may parse differently depending on the columns read."""
    return fmt in ("json", "csv", *warc.FORMATS)
