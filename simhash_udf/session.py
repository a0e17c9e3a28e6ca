"""The Spark session the job runs in, with the settings its stages rely on."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

# Arrow batches of at most this many rows go to the Python workers: with web pages of up to
# a few hundred kB, Spark's default of 10,000 rows can hold gigabytes in one batch.
ARROW_BATCH_ROWS = 1000


def get_session(
    app_name: str = "simhash-dedupe",
    master: str | None = None,
    conf: dict[str, str] | None = None,
) -> SparkSession:
    """The active session, or a new one (local mode on all cores unless a master is set).

    conf: further Spark settings for a new session (e.g. {"spark.driver.memory": "4g"});
    settings fixed at start-up have no effect on a session that is already running.

    Python workers run the interpreter that runs the driver unless PYSPARK_PYTHON says
    otherwise, so a virtual environment's packages are found in local mode.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(ARROW_BATCH_ROWS))
    return spark
