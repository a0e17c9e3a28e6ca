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

python=${PYTHON:-}
if [ -z "$python" ]; then
  for candidate in python3.11 python3.12 python3; do
    if command -v "$candidate" >/dev/null 2>&1; then python=$candidate; break; fi
  done
fi
[ -n "$python" ] || { echo "airflow_env: Python 3.11 is needed (none found on PATH)" >&2; exit 2; }
"$python" -c 'import sys; sys.exit(0 if sys.version_info[:2] >= (3, 11) else 1)' \
  || { echo "airflow_env: $python is older than Python 3.11" >&2; exit 2; }

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
