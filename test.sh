#!/usr/bin/env bash
# Set everything up and run the test suite (pytest arguments pass through, e.g. -m "not slow").
set -euo pipefail
cd "$(dirname "$0")"
scripts/bootstrap.sh
exec .venv/bin/python -m pytest "$@"
