#!/usr/bin/env bash
# Create (or refresh) the project's virtual environment in .venv with everything the job and
# the tests need. Idempotent: reinstalls only when pyproject.toml changed.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/find_python.sh
. scripts/find_python.sh
find_python bootstrap
command -v java >/dev/null 2>&1 \
  || { echo "bootstrap: Java 17 is needed for Spark (no 'java' on PATH)" >&2; exit 2; }

if [ ! -x .venv/bin/python ]; then
  echo "bootstrap: creating .venv with $("$python" --version)"
  "$python" -m venv .venv
fi
stamp=".venv/.installed-$(cat pyproject.toml | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "bootstrap: installing the project and its pinned dependencies into .venv (a few minutes the first time)"
  # pip's and the build backend's chatter goes to a log, shown only if the install fails.
  if ! { .venv/bin/python -m pip install --disable-pip-version-check --upgrade pip \
         && .venv/bin/python -m pip install --disable-pip-version-check -e '.[test]'; } \
       >.venv/install.log 2>&1; then
    cat .venv/install.log >&2
    echo "bootstrap: installing failed (log above, also in .venv/install.log)" >&2
    exit 1
  fi
  rm -f .venv/.installed-*
  # The driver's class archive (./quickstart.sh) holds the jars it was recorded with: the JVM
  # would ignore it after an upgrade, so it goes, to be recorded again.
  rm -f .venv/driver-classes.jsa
  touch "$stamp"
fi
