"""Daily near-duplicate run of a crawl against a fingerprint index, with Airflow 3 and the
Apache Spark provider.

Each day `ds` (YYYY-MM-DD), in date order:

    dedupe          submit.sh jobs/dedupe.py --input INPUT_ROOT/ds/ --output OUTPUT_ROOT/ds
                        --index INDEX_PATH --run-id ds --overwrite
    check_report    jobs/check_report.py --output-root OUTPUT_ROOT --date ds
    compact_due     whether ds is a compaction day (Variable simhash_compact_weekdays)
    compact_index   submit.sh jobs/index.py compact --index INDEX_PATH --keep-last 1

The two Spark tasks are SparkSubmitOperators whose spark-submit is the project's submit.sh, so
their driver starts as a `./submit.sh` run's does (in local mode, memory sized from the
machine rather than Spark's 1 GB) and a cluster's executors get the packed environment.

`dedupe` finds the day's duplicates among its own pages *and* against every earlier day's
(the index, docs/index.md), then adds the day's pages to the index. The run id is the day:
a retry or a cleared `dedupe` replaces that day's run in the index and its output, as long
as no later day ran since (the job refuses otherwise; to redo an older day, remove the later
runs with `jobs/index.py remove-run`, newest first, then rerun the days in order). Days run
one at a time and in order (`max_active_runs=1`, `depends_on_past` on `dedupe`), so the
index sees them in date order, backfills included: a day whose `dedupe` failed holds up the
next days until it is fixed and cleared. `compact_index` merges the index's
segments (not the day's own, so the day stays rerunnable); it never overlaps a run: the next
day waits for this DAG run to finish, and the index's leases refuse a compact while any other
run holds the index (docs/index.md, "Runs that lose nothing").

`check_report` fails the run when the day's report.json shows something wrong (no input,
zero documents, lost rows, too many rejected or empty rows, a duplicate rate far from the
recent days' median: `simhash_udf/report/checks.py`).

Where things are (read when the DAG file is parsed, no database access):
    SIMHASH_PROJECT   the checkout (default: the folder above dags/)
    SIMHASH_VENV      the project's environment with PySpark (default: SIMHASH_PROJECT/.venv)
Where the data is (Airflow Variables, read when a task runs; also settable as
AIRFLOW_VAR_SIMHASH_INPUT_ROOT, ...):
    simhash_input_root    one folder per day under it (default: SIMHASH_PROJECT/data/crawl)
    simhash_output_root   one output folder per day under it (default: SIMHASH_PROJECT/out/crawl)
    simhash_index_path    the fingerprint index every day is checked against and added to
                          (default: SIMHASH_PROJECT/out/index)
    simhash_compact_weekdays  days that compact the index after their run: "Sun" (default),
                          "Sat,Sun", "daily" or "never"
    simhash_check_args    extra options for check_report.py, e.g. "--max-rate-deviation 0.1"
The Spark master is the `spark_default` connection: host `local[2]` (or `local[*]`) for local
mode, `spark://HOST` with port 7077 or `yarn` for a cluster (its executors then run the
environment submit.sh packs, unless the worker's environment says SIMHASH_PACK=0), e.g.
    AIRFLOW_CONN_SPARK_DEFAULT='{"conn_type": "spark", "host": "local[*]"}'
"""

from __future__ import annotations

import os
import shlex
from datetime import timedelta
from pathlib import Path

import pendulum
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.providers.standard.operators.bash import BashOperator
from airflow.providers.standard.operators.python import ShortCircuitOperator
from airflow.sdk import DAG

PROJECT = Path(os.environ.get("SIMHASH_PROJECT") or Path(__file__).resolve().parents[1])
VENV = Path(os.environ.get("SIMHASH_VENV") or PROJECT / ".venv")
PYTHON = VENV / "bin" / "python"


def spark_home(venv: Path) -> dict[str, str]:
    """SPARK_HOME of the project's PySpark (its jars and bin/spark-class), so that a worker's
    own SPARK_HOME, if any, is not used; empty when the environment is not there (yet)."""
    found = sorted(venv.glob("lib/python3*/site-packages/pyspark"))
    return {"SPARK_HOME": str(found[-1])} if found else {}


def variable(name: str, default: str) -> str:
    """A Jinja expression for an Airflow Variable with a default: rendered when the task runs,
    so parsing the DAG never touches the metadata database."""
    return "{{ var.value.get(%r, %r) }}" % (name, default)


INPUT_ROOT = variable("simhash_input_root", str(PROJECT / "data" / "crawl"))
OUTPUT_ROOT = variable("simhash_output_root", str(PROJECT / "out" / "crawl"))
INDEX_PATH = variable("simhash_index_path", str(PROJECT / "out" / "index"))
COMPACT_WEEKDAYS = variable("simhash_compact_weekdays", "Sun")
WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


def compact_due(ds: str, weekdays: str) -> bool:
    """Whether the day `ds` (YYYY-MM-DD) compacts the index: `weekdays` is "daily", "never" or
    day names ("Sun", "Sat,Sun"); an unknown name fails the task rather than never compacting."""
    wanted = {w.strip().lower()[:3] for w in weekdays.split(",") if w.strip()}
    if wanted <= {"dai"}:
        return bool(wanted)
    if wanted == {"nev"}:
        return False
    unknown = sorted(wanted - set(WEEKDAYS))
    if unknown:
        raise ValueError(f"simhash_compact_weekdays {weekdays!r}: not day names: {unknown} (Mon..Sun, daily, never)")
    return WEEKDAYS[pendulum.parse(ds).weekday()] in wanted


def spark_submit(task_id: str, application: Path, args: list[str], **kwargs) -> SparkSubmitOperator:
    """A spark-submit of a project script with the project's Spark and Python, through the
    project's submit.sh: the driver starts as `./submit.sh` starts it (in local mode its memory
    sized from the machine, not Spark's 1 GB; its collector, compilers, class archive, log
    configuration and out-of-memory hint), and a cluster's executors get the packed environment
    (SIMHASH_PACK=0 in the worker's environment: they have one)."""
    return SparkSubmitOperator(
        task_id=task_id,
        conn_id="spark_default",
        application=str(application),
        application_args=args,
        name=f"simhash-{task_id}-{{{{ ds }}}}",
        # submit.sh takes spark-submit's arguments and runs the project's spark-submit, Spark
        # and Python, not Airflow's environment (which has no PySpark).
        spark_binary=str(PROJECT / "submit.sh"),
        env_vars={
            "SIMHASH_VENV": str(VENV),
            "PYSPARK_PYTHON": str(PYTHON),
            "PYSPARK_DRIVER_PYTHON": str(PYTHON),
            **spark_home(VENV),
        },
        conf={"spark.ui.showConsoleProgress": "false"},
        **kwargs,
    )


with DAG(
    dag_id="simhash_daily",
    description="Near-duplicate pages of the day's crawl partition against the index, a check of its report",
    schedule="@daily",
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    # Missed days are run on demand, in date order (airflow backfill create), not all at once
    # on unpausing.
    catchup=False,
    # One day at a time: the index must see the days in order, and one Spark job at a time
    # on the machine or cluster queue. Also keeps compact_index apart from the next dedupe.
    max_active_runs=1,
    default_args={"owner": "simhash-udf"},
    tags=["simhash", "spark"],
    doc_md=__doc__,
) as dag:
    dedupe = spark_submit(
        "dedupe",
        PROJECT / "jobs" / "dedupe.py",
        # --run-id {{ ds }}: a retry, a cleared task or a rerun of the day replaces the day's
        # run in the index (instead of adding its pages twice). --overwrite: and its output,
        # only once the new one is complete (the job stages it and renames it into place). A
        # failed attempt leaves neither a version of the index nor an output.
        [
            "--input", f"{INPUT_ROOT}/{{{{ ds }}}}/",
            "--output", f"{OUTPUT_ROOT}/{{{{ ds }}}}",
            "--index", INDEX_PATH,
            "--run-id", "{{ ds }}",
            "--overwrite",
        ],
        # The day before must have added its pages to the index first.
        depends_on_past=True,
        # Transient failures (a lost executor, a full disk cleaned up meanwhile, a compact of
        # the index started by hand) get two more tries; bad input (exit code 2, e.g. an
        # empty or missing partition) fails all three.
        retries=2,
        retry_delay=timedelta(minutes=10),
        execution_timeout=timedelta(hours=6),
    )

    check = BashOperator(
        task_id="check_report",
        bash_command=(
            f"{shlex.quote(str(PYTHON))} {shlex.quote(str(PROJECT / 'jobs' / 'check_report.py'))}"
            ' --output-root "$SIMHASH_OUTPUT_ROOT" --date "$SIMHASH_DAY" '
            + variable("simhash_check_args", "")
        ),
        env={"SIMHASH_OUTPUT_ROOT": OUTPUT_ROOT, "SIMHASH_DAY": "{{ ds }}"},
        append_env=True,
        # A failed check is a verdict on the day's data: trying again changes nothing.
        retries=0,
    )

    due = ShortCircuitOperator(
        task_id="compact_due",
        python_callable=compact_due,
        op_kwargs={"ds": "{{ ds }}", "weekdays": COMPACT_WEEKDAYS},
    )

    compact = spark_submit(
        "compact_index",
        PROJECT / "jobs" / "index.py",
        # --keep-last 1: the day's own segment stays unmerged, so the day can still be rerun
        # with its run id (a merged run must be removed first). Unreferenced folders of
        # killed runs go at once: no run holds the index now (the leases make sure).
        ["compact", "--index", INDEX_PATH, "--keep-last", "1", "--min-age", "0"],
        # No depends_on_past: a failed compaction must not hold up the next days (the next
        # compaction day tries again); max_active_runs=1 already keeps it before the next day.
        retries=1,
        retry_delay=timedelta(minutes=10),
        execution_timeout=timedelta(hours=6),
    )

    dedupe >> check
    dedupe >> due >> compact
