"""Every read and write of the job: input formats, atomic output folders, the report.

Paths go through Hadoop's FileSystem API (via the JVM), so the same code works for local
paths, HDFS and object stores. Output is written to a staging folder beside the target and
renamed into place only when the whole run has succeeded: readers never see half an output.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField

FORMATS = ("parquet", "json", "csv", "text")
CORRUPT_COLUMN = "_corrupt_record"
_EXTENSIONS = {
    ".parquet": "parquet",
    ".json": "json",
    ".jsonl": "json",
    ".ndjson": "json",
    ".csv": "csv",
    ".txt": "text",
    ".text": "text",
}
_MAX_JSON_STRING = 2**31 - 1
_COMPRESSION_SUFFIXES = (".gz", ".bz2", ".zst", ".snappy", ".lz4", ".deflate", ".xz")


class InputError(ValueError):
    """The input cannot be read as asked; the message says what is wrong and where."""


class OutputError(ValueError):
    """The output folder cannot be written as asked."""


def _hadoop_path(spark: SparkSession, path: str) -> tuple[Any, Any]:
    jvm = spark.sparkContext._jvm
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    fs = hpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    return fs, hpath


def list_input_files(spark: SparkSession, path: str) -> list[str]:
    """Data files a path, folder or glob names (hidden `_`/`.` files left out), sorted."""
    fs, hpath = _hadoop_path(spark, path)
    statuses = fs.globStatus(hpath)
    if statuses is None or len(statuses) == 0:
        raise InputError(f"no input: nothing matches {path!r}")
    files: list[str] = []
    pending = list(statuses)
    while pending:
        status = pending.pop()
        name = status.getPath().getName()
        if name.startswith((".", "_")):
            continue
        if status.isDirectory():
            pending.extend(fs.listStatus(status.getPath()))
        else:
            files.append(status.getPath().toString())
    if not files:
        raise InputError(f"no input: {path!r} holds no data files")
    return sorted(files)


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


def read_documents(spark: SparkSession, path: str, fmt: str | None = None) -> tuple[DataFrame, str]:
    """Read the input as a DataFrame; returns it with the format used.

    json is JSON Lines and csv has a header row; for both, lines that do not parse are kept
    in a `_corrupt_record` column (the other columns null) so the job can report them.
    Whether a row parses can depend on which columns a query reads (Spark parses only
    those), so callers should materialise json and csv input once before classifying rows
    (`needs_materialising`).
    text reads one document per file: `id` is the file's path, `text` its content.
    """
    files = list_input_files(spark, path)
    fmt = fmt or infer_format(files)
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if fmt == "parquet":
        return spark.read.parquet(*files), fmt
    if fmt == "text":
        docs = spark.read.text(files, wholetext=True)
        return docs.select(F.col("_metadata.file_path").alias("id"), F.col("value").alias("text")), fmt
    reader = spark.read.option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", CORRUPT_COLUMN)
    # Jackson caps JSON strings at 20M characters by default; a larger page would otherwise
    # turn its whole row into a corrupt record.
    reader = reader.option("maxStringLen", _MAX_JSON_STRING)
    if fmt == "csv":
        reader = (
            reader.option("header", True)
            .option("multiLine", True)
            .option("escape", '"')
        )
        inferred = reader.option("inferSchema", True).csv(files).schema
    else:
        inferred = reader.json(files).schema
    if CORRUPT_COLUMN not in inferred.fieldNames():
        inferred = inferred.add(StructField(CORRUPT_COLUMN, StringType(), True))
    frame = reader.schema(inferred).csv(files) if fmt == "csv" else reader.schema(inferred).json(files)
    return frame, fmt


def needs_materialising(fmt: str) -> bool:
    """True for formats whose rows may parse differently depending on the columns read."""
    return fmt in ("json", "csv")


@dataclass
class StagedOutput:
    """An output folder written atomically.

    Everything is written under `staging` (a sibling of `target`); `publish()` renames it to
    `target` (replacing an old output only if `overwrite`), `discard()` removes it.
    `work` is a scratch folder inside staging for intermediate results, removed on publish.
    """

    spark: SparkSession
    target: str
    overwrite: bool

    def __post_init__(self) -> None:
        self._fs, self._target = _hadoop_path(self.spark, self.target)
        self._target = self._fs.makeQualified(self._target)
        if self._fs.exists(self._target) and not self.overwrite:
            raise OutputError(
                f"output {self.target!r} exists; pass --overwrite to replace it (nothing was touched)"
            )
        token = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
        parent, name = self._target.getParent(), self._target.getName()
        jvm = self.spark.sparkContext._jvm
        self._staging = jvm.org.apache.hadoop.fs.Path(parent, f".{name}.staging-{token}")
        self.staging = self._staging.toString()
        self.work = f"{self.staging}/_work"
        self._fs.mkdirs(self._staging)

    def path(self, name: str) -> str:
        """Where an output named `name` is written inside the staging folder."""
        return f"{self.staging}/{name}"

    def write_text(self, name: str, content: str) -> None:
        """Write a small text file (the report) into the staging folder."""
        jvm = self.spark.sparkContext._jvm
        stream = self._fs.create(jvm.org.apache.hadoop.fs.Path(self._staging, name), True)
        try:
            stream.write(bytearray(content.encode("utf-8")))
        finally:
            stream.close()

    def publish(self) -> None:
        """Make the staged output the target, all at once."""
        jvm = self.spark.sparkContext._jvm
        self._fs.delete(jvm.org.apache.hadoop.fs.Path(self.work), True)
        old = None
        if self._fs.exists(self._target):
            old = jvm.org.apache.hadoop.fs.Path(
                self._target.getParent(), f".{self._target.getName()}.replaced-{uuid.uuid4().hex[:8]}"
            )
            if not self._fs.rename(self._target, old):
                raise OutputError(f"could not move the old output {self.target!r} aside")
        if not self._fs.rename(self._staging, self._target):
            if old is not None:
                self._fs.rename(old, self._target)
            raise OutputError(f"could not rename {self.staging!r} to {self.target!r}")
        if old is not None:
            self._fs.delete(old, True)

    def discard(self) -> None:
        """Remove everything staged (after a failure)."""
        self._fs.delete(self._staging, True)


def write_parquet(frame: DataFrame, path: str) -> None:
    """Write a DataFrame as Parquet, replacing anything at `path`."""
    frame.write.mode("overwrite").parquet(path)


def report_json(report: dict[str, Any]) -> str:
    """The report as indented JSON text."""
    return json.dumps(report, indent=2, sort_keys=False, ensure_ascii=False) + "\n"
