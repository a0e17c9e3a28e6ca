#!/usr/bin/env bash
# Run jobs/dedupe.py with spark-submit from the project's environment.
#   ./submit.sh --input PATH --output DIR [job options]      (./submit.sh --help lists them)
# Local mode on all cores unless SPARK_MASTER is set; further spark-submit options go in
# SPARK_SUBMIT_ARGS, e.g. SPARK_SUBMIT_ARGS="--driver-memory 8g --conf spark.sql.shuffle.partitions=64".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv=${SIMHASH_VENV:-$here/.venv}
if [ ! -x "$venv/bin/spark-submit" ]; then
  echo "submit.sh: no project environment at $venv; run scripts/bootstrap.sh (or ./quickstart.sh) first" >&2
  exit 2
fi
export PYSPARK_PYTHON=${PYSPARK_PYTHON:-$venv/bin/python}
# shellcheck disable=SC2086  # SPARK_SUBMIT_ARGS is a list of options, split on purpose
exec "$venv/bin/spark-submit" --master "${SPARK_MASTER:-local[*]}" \
  --driver-java-options "-Dlog4j.configurationFile=file:$here/conf/log4j2.properties" \
  --conf spark.ui.showConsoleProgress=true \
  ${SPARK_SUBMIT_ARGS:-} \
  "$here/jobs/dedupe.py" "$@"
