"""Daily near-duplicate run of a crawl, with Airflow 3 and the Apache Spark provider.

Each day `ds` (YYYY-MM-DD):

    dedupe        spark-submit jobs/dedupe.py --input INPUT_ROOT/ds/ --output OUTPUT_ROOT/ds --overwrite
    check_report  jobs/check_report.py --output-root OUTPUT_ROOT --date ds

`check_report` fails the run when the day's report.json shows something wrong (no input,
zero documents, lost rows, too many rejected or empty rows, a duplicate rate far from the
recent days' median: `simhash_udf/checks.py`).

Where things are (read when the DAG file is parsed, no database access):
    SIMHASH_PROJECT   the checkout (default: the folder above dags/)
    SIMHASH_VENV      the project's environment with PySpark (default: SIMHASH_PROJECT/.venv)
Where the data is (Airflow Variables, read when a task runs; also settable as
AIRFLOW_VAR_SIMHASH_INPUT_ROOT, ...):
    simhash_input_root    one folder per day under it (default: SIMHASH_PROJECT/data/crawl)
    simhash_output_root   one output folder per day under it (default: SIMHASH_PROJECT/out/crawl)
    simhash_check_args    extra options for check_report.py, e.g. "--max-rate-deviation 0.1"
The Spark master is the `spark_default` connection: host `local[2]` (or `local[*]`) for local
mode, `spark://HOST` with port 7077 or `yarn` for a cluster, e.g.
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

with DAG(
    dag_id="simhash_daily",
    description="Near-duplicate pages of the day's crawl partition, then a check of its report",
    schedule="@daily",
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    # Missed days are run on demand (airflow backfill create), not all at once on unpausing.
    catchup=False,
    # One Spark job at a time on the machine or cluster queue.
    max_active_runs=1,
    default_args={"owner": "simhash-udf"},
    tags=["simhash", "spark"],
    doc_md=__doc__,
) as dag:
    dedupe = SparkSubmitOperator(
        task_id="dedupe",
        conn_id="spark_default",
        application=str(PROJECT / "jobs" / "dedupe.py"),
        # --overwrite makes the task idempotent: a retry, a cleared task or a backfill of a day
        # replaces that day's output with the new one, and only once the new one is complete
        # (the job stages it and renames it into place). A failed attempt leaves no output, so
        # retries would work without it; re-running a day that succeeded would not.
        application_args=[
            "--input", f"{INPUT_ROOT}/{{{{ ds }}}}/",
            "--output", f"{OUTPUT_ROOT}/{{{{ ds }}}}",
            "--overwrite",
        ],
        name="simhash-dedupe-{{ ds }}",
        # The project's spark-submit, Spark and Python for the driver and the executors, not
        # Airflow's environment (which has no PySpark).
        spark_binary=str(VENV / "bin" / "spark-submit"),
        env_vars={
            "PYSPARK_PYTHON": str(PYTHON),
            "PYSPARK_DRIVER_PYTHON": str(PYTHON),
            **spark_home(VENV),
        },
        conf={
            "spark.driver.extraJavaOptions": f"-Dlog4j.configurationFile=file:{PROJECT / 'conf' / 'log4j2.properties'}",
            "spark.ui.showConsoleProgress": "false",
        },
        # Transient failures (a lost executor, a full disk cleaned up meanwhile) get two more
        # tries; bad input (exit code 2, e.g. an empty or missing partition) fails all three.
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

    dedupe >> check
