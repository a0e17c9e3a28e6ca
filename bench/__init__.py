"""Benchmarks: each script measures one thing beside a baseline run in the same invocation and
writes one document (bench/RESULTS*.md, docs/*.md). Run from the repo root as `python -m bench.<script>`."""

import os

# Python code measured in one process runs as Spark runs it in a Python worker: Spark sets
# OMP_NUM_THREADS to spark.task.cpus (1) for its workers, and OpenBLAS reads it when numpy loads,
# so set before any benchmark imports numpy. Without it, the fingerprint function's matrix
# product (core/fingerprint.py) gets a second OpenBLAS thread that spins on the other core:
# measured on 5 MB of the English job input, the same wall time (0.27-0.28 s) for twice the CPU
# seconds (0.53-0.59 against 0.26-0.29), so "MB per CPU-second" read half of what the job's
# workers get; Chinese texts, fewer documents a batch, stayed on one thread either way.
os.environ.setdefault("OMP_NUM_THREADS", "1")
