"""Benchmarks: each script measures one thing beside a baseline run in the same invocation and
writes one document (bench/RESULTS*.md, docs/*.md). Run from the repo root as `python -m bench.<script>`."""
