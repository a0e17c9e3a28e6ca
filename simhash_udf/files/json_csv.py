"""JSON and CSV input read into one frame: the schema inferred over all files, whole files read
strictly, damaged files up to their damage, invalid UTF-8 kept (and flagged) rather than a
reason to drop a row.

Rows that do not parse keep their text in `CORRUPT_COLUMN` (Spark's PERMISSIVE mode), for
`stages/documents.rejected_rows` to count and write to rejected/. Which files are damaged, and
the other formats, are `files/inputs.py`'s.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import Column, DataFrame, DataFrameReader, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, StringType, StructField, StructType

from simhash_udf.files.warc import INVALID_BYTES_COLUMN

CORRUPT_COLUMN = "_corrupt_record"
# CSV is read as ISO-8859-1, whose decoder maps every byte to one character: the fields'
# bytes come back exactly (`_raw_strings`), so invalid UTF-8 can be repaired and counted
# like any other input's (Spark's UTF-8 decoder would replace it silently).
_BYTE_CHARSET = "ISO-8859-1"
_BOM = "\ufeff"
_MAX_JSON_STRING = 2**31 - 1


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


def as_strings(schema: StructType, keep_types: Mapping[str, tuple[type[DataType], ...]]) -> StructType:
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


def read_parsed(
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
    schema = _with_columns(as_strings(inferred, keep_types), keep_types)
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
        schema = as_strings(repaired, keep_types)
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
