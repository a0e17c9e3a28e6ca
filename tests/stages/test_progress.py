"""Progress while a stage runs: the lines (pure), the polling thread on a real Spark job, the
stage start/end lines of `Stages`, and Spark's console progress bar under spark-submit."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers import ROOT

from simhash_udf.stages import progress
from simhash_udf.stages.progress import TaskCounts, progress_line
from simhash_udf.stages.scratch import Stages

LINE = re.compile(r"stage (\w+): running (\d+) s; Spark stages? [\d, ]+: (\d+)/(\d+) tasks done, (\d+) running")


def _slow(seconds: float):
    def f(x):
        import time as t

        t.sleep(seconds)
        return x

    return f


def _progress_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("simhash-progress-")]


def test_progress_line_counts_tasks_and_estimates_documents():
    tasks = TaskCounts(ids=(4, 5), total=8, done=6, running=2, failed=1)
    line = progress_line("normalise", 20.4, tasks, 31.04, documents=49)
    assert line == (
        "stage normalise: running 20 s; Spark stages 4, 5: 6/8 tasks done, 2 running, 1 failed "
        "(~37 of 49 documents); 31.0 s into the run"
    )
    one = progress_line("verify", 3, TaskCounts((7,), 4, 0, 4, 0), 9)
    assert "Spark stage 7: 0/4 tasks done, 4 running;" in one and "documents" not in one
    idle = progress_line("candidates", 12, TaskCounts((), 0, 0, 0, 0), 40, documents=10)
    assert "no Spark stage active" in idle and "documents" not in idle


@pytest.mark.spark
def test_watch_logs_task_progress_of_a_running_job_and_stops(spark, caplog):
    caplog.set_level(logging.INFO, logger="simhash_udf")
    sc = spark.sparkContext
    started = time.perf_counter()
    with progress.watch(sc, "slow", started, interval=0.3):
        # 6 tasks of 0.8 s on 2 cores: about 2.4 s, so several polls see it half done.
        assert sc.parallelize(range(6), 6).map(_slow(0.8)).count() == 6
    assert not _progress_threads(), "the polling thread outlived its stage"
    seen = [LINE.search(r.getMessage()) for r in caplog.records]
    seen = [m for m in seen if m]
    assert len(seen) >= 2, [r.getMessage() for r in caplog.records]
    done = [int(m.group(3)) for m in seen]
    assert all(m.group(1) == "slow" and int(m.group(4)) == 6 for m in seen)
    assert done == sorted(done) and max(done) <= 6
    assert any(0 < d < 6 for d in done), done  # seen half done, not only before or after
    # Nothing more is logged once the stage is over.
    count = len(caplog.records)
    time.sleep(0.8)
    assert len(caplog.records) == count


@pytest.mark.spark
def test_a_failing_poll_never_reaches_the_job(spark, caplog):
    caplog.set_level(logging.DEBUG, logger="simhash_udf")
    calls = []

    def broken(sc):
        calls.append(1)
        raise RuntimeError("status store gone")

    with progress.watch(spark.sparkContext, "x", time.perf_counter(), interval=0.05, poll=broken):
        assert spark.sparkContext.parallelize(range(2), 2).map(_slow(0.3)).count() == 2
    assert len(calls) >= 2 and not _progress_threads()
    warnings = [r for r in caplog.records if "progress of stage x unavailable" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].levelno == logging.DEBUG


@pytest.mark.spark
def test_a_failing_stage_stops_the_thread_and_keeps_its_error(spark):
    with pytest.raises(ZeroDivisionError):
        with progress.watch(spark.sparkContext, "boom", time.perf_counter(), interval=0.05):
            time.sleep(0.2)
            1 / 0
    assert not _progress_threads()


@pytest.mark.spark
def test_stages_log_start_progress_and_end(spark, caplog):
    caplog.set_level(logging.INFO, logger="simhash_udf")
    stages = Stages(progress_interval=0.3, documents=8)
    frame = spark.createDataFrame(
        spark.sparkContext.parallelize([(i,) for i in range(8)], 4).map(_slow(0.4)), "n long"
    )
    stored = stages.materialise("normalise", frame)
    assert stored.count() == 8 and stages.rows["normalise"] == 8
    messages = [r.getMessage() for r in caplog.records]
    start = next(i for i, m in enumerate(messages) if m.startswith("stage normalise: started"))
    end = next(i for i, m in enumerate(messages) if re.match(r"stage normalise: [\d.]+ s, 8 rows", m))
    running = [m for m in messages[start:end] if m.startswith("stage normalise: running")]
    assert start < end and running, messages
    # The documents estimate follows the share of tasks done.
    for m in running:
        found = re.search(r"(\d+)/(\d+) tasks done.*\(~(\d+) of 8 documents\)", m)
        if found:
            done, total, docs = map(int, found.groups())
            assert docs == round(8 * done / total)
    assert not _progress_threads()


@pytest.mark.slow
def test_spark_submit_shows_the_console_progress_bar_and_the_stage_lines(tmp_path):
    """As submit.sh runs the job: conf/log4j2.properties (warnings only) with
    spark.ui.showConsoleProgress, Spark's bar on stderr beside the job's own lines."""
    script = tmp_path / "slow_stage.py"
    script.write_text(
        "import logging, time\n"
        "from pyspark.sql import SparkSession\n"
        "from simhash_udf.stages.scratch import Stages\n"
        "logging.basicConfig(level='INFO', format='%(levelname)s %(name)s: %(message)s')\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        "def slow(x):\n"
        "    time.sleep(0.5)\n"
        "    return (x,)\n"
        "frame = spark.createDataFrame(spark.sparkContext.parallelize(range(8), 4).map(slow), 'n long')\n"
        "Stages(progress_interval=0.5).materialise('slow', frame)\n"
        "spark.stop()\n"
    )
    venv = Path(sys.executable).parent
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYTHONPATH=str(ROOT))
    # The same options submit.sh passes (its log configuration and the progress bar).
    submit = (ROOT / "submit.sh").read_text()
    assert "log4j2.properties" in submit and "spark.ui.showConsoleProgress=true" in submit
    result = subprocess.run(
        [
            str(venv / "spark-submit"), "--master", "local[2]",
            "--driver-java-options", f"-Dlog4j.configurationFile=file:{ROOT / 'conf' / 'log4j2.properties'}",
            "--conf", "spark.ui.showConsoleProgress=true", str(script),
        ],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert re.search(r"\[Stage \d+:[=> ]*\(\d+ \+ \d+\) / 4\]", result.stderr), result.stdout[-3000:] + result.stderr[-3000:]
    # spark-submit runs the Python driver with its stderr merged into its stdout.
    assert "stage slow: started" in result.stdout, result.stdout[-3000:]
    assert re.search(r"stage slow: running \d+ s; Spark stage", result.stdout), result.stdout[-3000:]
    assert re.search(r"stage slow: [\d.]+ s, 8 rows", result.stdout)
    assert " INFO org.apache.spark" not in result.stdout + result.stderr  # Spark itself stays quiet
