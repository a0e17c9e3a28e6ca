#!/usr/bin/env bash
# Set everything up and run the test suite (pytest arguments pass through, e.g. -m "not slow").
#
# The suite runs in two pytest processes (pytest-xdist), each taking whole test files
# (--dist loadfile, so a module's fixtures, such as a run of the job that several tests read,
# are made once). One process left a third of a 2-core machine idle: a test's own Spark jobs
# leave gaps (planning, a JVM starting, Python between jobs) that the other process fills.
# SIMHASH_TEST_WORKERS sets how many; `-n ...` among the arguments wins, and `-n 0` runs in
# this process (for `-s` or `--pdb`).
set -euo pipefail
cd "$(dirname "$0")"
scripts/bootstrap.sh
workers=(-n "${SIMHASH_TEST_WORKERS:-2}" --dist loadfile)
for arg in "$@"; do
  case $arg in -n|-n[0-9]*|--numprocesses|--numprocesses=*) workers=() ;; esac
done
exec .venv/bin/python -m pytest "${workers[@]}" "$@"
