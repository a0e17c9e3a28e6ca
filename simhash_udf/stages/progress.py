"""Progress of a running stage, logged every few seconds from a background thread.

While a stage of the job runs, `watch` polls Spark's status tracker (the same source as the
web UI and the console progress bar) and logs a line such as

    stage normalise: running 20 s; Spark stages 4, 5: 6/8 tasks done, 2 running (~37 of 49 documents); 31.0 s into the run

so a long run shows where it is even where no console or UI is at hand (a log file, a
scheduler's task log). The thread only reads; any error while polling is logged once at debug
level and polling goes on, so progress reporting can never fail a job. The thread stops when
the stage ends, however it ends.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from pyspark import SparkContext

log = logging.getLogger("simhash_udf")

# Seconds between two progress lines of one stage: a stage shorter than this logs none.
DEFAULT_INTERVAL = 10.0


@dataclass(frozen=True)
class TaskCounts:
    """Tasks of the Spark stages active at one moment (ids: their Spark stage ids)."""

    ids: tuple[int, ...]
    total: int
    done: int
    running: int
    failed: int

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 0.0


def active_tasks(sc: SparkContext) -> TaskCounts:
    """Task counts summed over the Spark stages running now."""
    tracker = sc.statusTracker()
    ids, total, done, running, failed = [], 0, 0, 0, 0
    for stage_id in sorted(tracker.getActiveStageIds()):
        info = tracker.getStageInfo(stage_id)
        if info is None:  # finished between the two calls
            continue
        ids.append(stage_id)
        total += info.numTasks
        done += info.numCompletedTasks
        running += info.numActiveTasks
        failed += info.numFailedTasks
    return TaskCounts(tuple(ids), total, done, running, failed)


def progress_line(
    stage: str,
    elapsed: float,
    tasks: TaskCounts,
    since_start: float,
    documents: int | None = None,
) -> str:
    """One progress line (pure). documents: how many documents the stage goes through, when
    it goes through them row by row; the line then estimates how many are done from the
    share of tasks done (tasks are partitions of about equal size)."""
    if tasks.ids:
        ids = ", ".join(str(i) for i in tasks.ids)
        word = "stage" if len(tasks.ids) == 1 else "stages"
        state = f"Spark {word} {ids}: {tasks.done:,}/{tasks.total:,} tasks done, {tasks.running:,} running"
        if tasks.failed:
            state += f", {tasks.failed:,} failed"
        if documents is not None and tasks.total:
            state += f" (~{round(documents * tasks.fraction):,} of {documents:,} documents)"
    else:
        state = "no Spark stage active (between jobs, or work on the driver)"
    return f"stage {stage}: running {elapsed:.0f} s; {state}; {since_start:.1f} s into the run"


@contextmanager
def watch(
    sc: SparkContext | None,
    stage: str,
    run_started: float,
    documents: int | None = None,
    interval: float = DEFAULT_INTERVAL,
    poll: Callable[[SparkContext], TaskCounts] = active_tasks,
) -> Iterator[None]:
    """Log `progress_line` for `stage` every `interval` seconds while the block runs.

    sc: the SparkContext to poll (None: nothing is logged). run_started: the run's start,
    on the `time.perf_counter` clock. The thread is a daemon and is joined when the block
    ends, whether it ends normally or by an exception.
    """
    if sc is None or interval <= 0:
        yield
        return
    stop = threading.Event()
    started = time.perf_counter()

    def loop() -> None:
        warned = False
        while not stop.wait(interval):
            try:
                tasks = poll(sc)
            except Exception as error:  # noqa: BLE001 - progress must never fail the job
                if not warned:
                    log.debug("progress of stage %s unavailable: %s", stage, error)
                    warned = True
                continue
            if stop.is_set():  # the stage ended while polling: its end line says the rest
                break
            now = time.perf_counter()
            log.info("%s", progress_line(stage, now - started, tasks, now - run_started, documents))

    thread = threading.Thread(target=loop, name=f"simhash-progress-{stage}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        # A poll in flight is one short call to the driver's status store; do not wait long
        # for it if the JVM is going away (the thread is a daemon either way).
        thread.join(timeout=5.0)
