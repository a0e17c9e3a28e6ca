#!/usr/bin/env bash
# Create (or refresh) the Airflow environment in build/airflow-venv (AIRFLOW_VENV overrides):
# Airflow 3 and the Apache Spark provider, pinned in dags/requirements-airflow.txt, kept apart
# from the project's .venv (the DAG runs the job with .venv's spark-submit, so this
# environment needs no PySpark). Idempotent: reinstalls only when the requirements change.
#   scripts/airflow_env.sh && build/airflow-venv/bin/airflow version
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${AIRFLOW_VENV:-build/airflow-venv}
requirements=dags/requirements-airflow.txt

# shellcheck source=scripts/find_python.sh
. scripts/find_python.sh
find_python airflow_env

if [ ! -x "$venv/bin/python" ]; then
  echo "airflow_env: creating $venv with $("$python" --version)"
  mkdir -p "$(dirname "$venv")"
  "$python" -m venv "$venv"
fi
stamp="$venv/.installed-$(sha256sum "$requirements" | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "airflow_env: installing Airflow and the Spark provider into $venv (about a minute the first time)"
  # pip's chatter goes to a log, shown only if the install fails.
  if ! "$venv/bin/python" -m pip install --disable-pip-version-check -r "$requirements" \
       >"$venv/install.log" 2>&1; then
    cat "$venv/install.log" >&2
    echo "airflow_env: installing failed (log above, also in $venv/install.log)" >&2
    exit 1
  fi
  rm -f "$venv"/.installed-*
  touch "$stamp"
fi
