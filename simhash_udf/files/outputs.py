"""Atomic output: every output folder is staged beside its target and renamed into place
only when the whole run has succeeded, so readers never see half an output."""

from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any

from pyspark.sql import Column, DataFrame, Observation, SparkSession

from simhash_udf.files.hadoop import hadoop_path

log = logging.getLogger("simhash_udf")


class OutputError(ValueError):
    """The output folder cannot be written as asked."""



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
        self._fs, self._target = hadoop_path(self.spark, self.target)
        self._target = self._fs.makeQualified(self._target)
        self._restore_replaced()
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

    def _restore_replaced(self) -> None:
        """Undo a replace that was killed half-way.

        `publish` moves an old output aside (`.NAME.replaced-*`) before renaming the new one
        into place; a process killed between the two renames leaves no output at all. The
        next run on the same target puts the old output back first, so the target is always
        either the old output or the new one.
        """
        if self._fs.exists(self._target):
            return
        parent, name = self._target.getParent(), self._target.getName()
        if not self._fs.exists(parent):
            return
        # A glob, filtered in the JVM: listing the parent costs a round trip per sibling, and
        # an output's parent may hold many (2,600 calls for /tmp's).
        jvm = self.spark.sparkContext._jvm
        pattern = jvm.org.apache.hadoop.fs.Path(parent, f".{glob_escaped(name)}.replaced-*")
        moved = sorted(self._fs.globStatus(pattern) or [], key=lambda s: s.getModificationTime())
        if moved and self._fs.rename(moved[-1].getPath(), self._target):
            log.warning("restored %s: a run replacing it was stopped half-way", self.target)

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


def glob_escaped(name: str) -> str:
    """`name` matched literally by a Hadoop glob (`FileSystem.globStatus`): its special
    characters escaped with a backslash."""
    return "".join(f"\\{c}" if c in "\\{}[]*?" else c for c in name)


def write_parquet(
    frame: DataFrame, path: str, observe: Mapping[str, Column] | None = None, mode: str = "overwrite"
) -> dict[str, Any]:
    """Write a DataFrame as Parquet, replacing anything at `path` (`mode` "errorifexists": fail
    if something is there).

    observe: aggregates over the written rows (name -> aggregate column), returned by name
    ({} without): Spark's observed metrics, computed by the write's own tasks, so a count of
    what was written costs no Spark job of its own. Exact: the write's result stage counts
    each task once (a retried or speculative task adds nothing)."""
    aggregates = [column.alias(name) for name, column in (observe or {}).items()]
    if not aggregates:
        frame.write.mode(mode).parquet(path)
        return {}
    observation = Observation(f"write-{uuid.uuid4().hex}")
    frame.observe(observation, *aggregates).write.mode(mode).parquet(path)
    return dict(observation.get)


def read_back(frame: DataFrame, path: str) -> DataFrame:
    """The Parquet folder `write_parquet(frame, path)` wrote, read with `frame`'s schema (every
    column nullable, as Spark reads any Parquet).

    Given the schema, Spark reads no footer to learn it: a read without one runs a Spark job of
    its own (a parallel footer read, even of one file), which was 16 of a small run's 57 jobs."""
    return frame.sparkSession.read.schema(frame.schema).parquet(path)


# Up to this many files, `parquet_rows` reads their footers on the driver; beyond, a Spark job
# reads them in parallel (one footer is a round trip to an object store).
FOOTER_COUNT_MAX_FILES = 64


def parquet_rows(spark: SparkSession, path: str) -> int:
    """How many rows the Parquet folder `path` (as `write_parquet` left it) holds.

    Summed from the files' footers on the driver when there are at most
    `FOOTER_COUNT_MAX_FILES` of them: a count on the read-back folder is a Spark job or two
    (adaptive execution runs its shuffle as a job of its own), which on a small run cost more
    than the stage itself. More files: that count."""
    fs, folder = hadoop_path(spark, path)
    parts = [status for status in fs.listStatus(folder)
             if status.isFile() and not status.getPath().getName().startswith(("_", "."))]
    if len(parts) > FOOTER_COUNT_MAX_FILES:
        return spark.read.parquet(path).count()
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    rows = 0
    for status in parts:
        reader = jvm.org.apache.parquet.hadoop.ParquetFileReader.open(
            jvm.org.apache.parquet.hadoop.util.HadoopInputFile.fromStatus(status, conf)
        )
        try:
            rows += reader.getRecordCount()
        finally:
            reader.close()
    return rows


def report_json(report: dict[str, Any]) -> str:
    """The report as indented JSON text."""
    return json.dumps(report, indent=2, sort_keys=False, ensure_ascii=False) + "\n"
