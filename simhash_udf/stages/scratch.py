"""`Stages`: materialises stage results and records each stage's wall time and row count.

In a job, a stage result is written as Parquet to the output's scratch folder and read back
(cuts the lineage, survives lost executors, and gives each stage a wall time); in a notebook,
`Stages()` checkpoints locally instead. A result the driver built from rows it holds (a small
band join) is recorded as it is, unstored (`keep_local`). The finders (`simhash_udf.stages.self_join`,
`simhash_udf.index.finder`) and `simhash_udf.run.pipeline` all record their stages here; the
report takes the recorded times and rows as plain dicts (`Stages.seconds`, `Stages.rows`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession

from simhash_udf.files import outputs
from simhash_udf.stages import progress

log = logging.getLogger("simhash_udf")


@dataclass
class Stages:
    """Materialises stage results and records each stage's wall time and row count.

    work: a scratch folder for Parquet copies of stage results; None checkpoints locally
    (fine for notebooks; a job passes its output's scratch folder).
    spark: the session whose progress is logged while a stage runs (learnt from the first
    materialised frame when not given). documents: the input's row count once known, for
    the progress lines' estimate of documents done. progress_interval: seconds between two
    progress lines of a running stage (0: none); see `progress.watch`.
    seconds, rows: each stage's wall time and the row count of its (last) stored result.
    observed: the aggregates a `materialise(..., observe=...)` computed over its stage's (last)
    stored result, by name.
    jobs: how many Spark jobs each stage ran, counted in the job group `job_group` (set by
    `count_jobs`; empty when no group is set): each job costs a scheduling round trip and
    at least one task per partition, which is most of a small run's time.
    """

    work: str | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)
    spark: SparkSession | None = None
    documents: int | None = None
    progress_interval: float = progress.DEFAULT_INTERVAL
    jobs: dict[str, int] = field(default_factory=dict)
    observed: dict[str, dict[str, int]] = field(default_factory=dict)
    job_group: str | None = None
    _started: float = field(default_factory=time.perf_counter)
    _serial: int = 0
    _open: set[str] = field(default_factory=set)

    def materialise(
        self, name: str, frame: DataFrame | Callable[[], DataFrame], observe: Mapping[str, Column] | None = None
    ) -> DataFrame:
        """Compute `frame` now, store it, and return a frame that reads the stored copy.

        frame: the frame, or a function returning it, called inside the stage: for a frame
        whose building already runs Spark jobs (a small band join's kernel on the driver), so
        that they are counted and timed as the stage's.

        observe: aggregates over the stored rows to keep in `observed[name]` (name -> aggregate
        column, e.g. `F.count(F.when(condition, 1))`). In a job they are Spark's observed
        metrics, computed by the write's own tasks: a count the run needs of a stage result costs
        no Spark job of its own (a count of the read-back copy costs one or two).
        """
        if not callable(frame):
            self.spark = self.spark or frame.sparkSession
        start = time.perf_counter()
        aggregates = [column.alias(key) for key, column in (observe or {}).items()]
        self.observed.pop(name, None)  # a stage stored again: its aggregates, if any, are new
        with self._running(name):
            if callable(frame):
                frame = frame()
                self.spark = self.spark or frame.sparkSession
            if self.work is None:
                stored = frame.localCheckpoint()
                if aggregates:
                    self.observed[name] = stored.agg(*aggregates).first().asDict()
            else:
                self._serial += 1
                path = f"{self.work}/{self._serial:03d}-{name}"
                observed = outputs.write_parquet(frame, path, observe)
                stored = outputs.read_back(frame, path)
                if observed:
                    self.observed[name] = observed
            # Cheap on a stored copy (Parquet footers or checkpointed blocks), and the log line
            # with counts is how a long run shows its progress.
            self.rows[name] = stored.count() if self.work is None else outputs.parquet_rows(stored.sparkSession, path)
        self.record(name, start)
        return stored

    def keep_local(self, name: str, build: Callable[[], tuple[DataFrame, int, Mapping[str, Any]]]) -> DataFrame:
        """Record stage `name` whose result the driver built, and return it as built.

        build: called inside the stage; returns (a local frame of the driver's rows, their
        number, the aggregates `materialise(..., observe=...)` would have observed). Nothing is
        stored: the rows are in hand, a collect of the local frame runs no Spark job, and a
        stored copy would cost a job to write and one to read back."""
        start = time.perf_counter()
        self.observed.pop(name, None)
        with self._running(name):
            frame, rows, observed = build()
        self.spark = self.spark or frame.sparkSession
        self.rows[name] = rows
        self.observed[name] = dict(observed)
        self.record(name, start)
        return frame

    def count_jobs(self, spark: SparkSession, group: str) -> None:
        """Put every Spark job this thread submits from now on in job group `group`, so that
        `spark_jobs` and each stage's `jobs` can be counted."""
        self.spark = self.spark or spark
        spark.sparkContext.setJobGroup(group, "simhash_udf run")
        self.job_group = group

    def spark_jobs(self) -> int:
        """The Spark jobs run so far in the job group (0 without one)."""
        if self.job_group is None or self.spark is None:
            return 0
        # The JVM's array, measured by one call: `StatusTracker.getJobIdsForGroup` copies it
        # into a list element by element, a round trip each (1,100 of a small run's calls).
        return len(self.spark.sparkContext._jsc.statusTracker().getJobIdsForGroup(self.job_group))

    def record(self, name: str, start: float) -> None:
        """Add the time since `start` to stage `name` and log it (not inside a block of the
        same stage, whose end records it: `_running`)."""
        if name in self._open:
            return
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
        """Log the stage's start, then its progress every few seconds until it ends; count its
        Spark jobs. Inside a block of the same stage (`timed` around work that materialises
        parts of it, such as the components' rounds), the outer block counts the jobs and the
        time, once."""
        if name in self._open:
            yield
            return
        self._open.add(name)
        try:
            jobs_before = self.spark_jobs()
            with self._watched(name):
                yield
            self.jobs[name] = self.jobs.get(name, 0) + self.spark_jobs() - jobs_before
        finally:
            self._open.discard(name)

    @contextmanager
    def _watched(self, name: str) -> Iterator[None]:
        """Log the stage's start, then its progress every few seconds until it ends."""
        log.info("stage %s: started (%.1f s into the run)", name, time.perf_counter() - self._started)
        # Only the signatures stage goes through the documents one by one in even partitions,
        # so that only there the share of tasks done says how many documents are done.
        per_document = self.documents if name == "signatures" else None
        sc = self.spark.sparkContext if self.spark is not None else None
        with progress.watch(sc, name, self._started, per_document, self.progress_interval):
            yield
