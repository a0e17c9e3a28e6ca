#!/usr/bin/env bash
# Set everything up and run the job on the sample corpus in examples/.
# Output: out/sample/ (clusters/, pairs/, deduped/, report.json).
set -euo pipefail
cd "$(dirname "$0")"
scripts/bootstrap.sh
./submit.sh --input examples/sample.jsonl --output out/sample --overwrite "$@"
