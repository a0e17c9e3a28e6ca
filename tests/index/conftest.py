"""Fixtures of the index tests: two planted days, the first run into an index kept as a template."""

from __future__ import annotations

import shutil

import pytest
from generators import planted_rows, write_days
from helpers import run_job


@pytest.fixture(scope="session")
def two_days(spark, dedupe_main, tmp_path_factory) -> dict:
    """Day 1 run into an index (kept as a template), day 2 run uninterrupted as a reference.

    Session-scoped: test_index, test_index_crash, test_index_concurrency and test_kill all start
    from it, and none writes into it (each copies "template" or "reference_index" first).
    Keys: folder, day1, day2 (Parquet day files: id, fp, url), template (the index after day 1),
    reference_index (after day 1 and day 2), reference_out (day 2's output folder)."""
    folder = tmp_path_factory.mktemp("two_days")
    rows = planted_rows(seed=3, groups=60, singletons=200)
    day1, day2 = write_days(folder, rows, days=2, seed=5)
    template = folder / "index-day1"
    assert run_job(dedupe_main, spark, day1, folder / "out1", template, "--run-id", "d1") == 0
    reference_index = folder / "index-ref"
    shutil.copytree(template, reference_index)
    assert run_job(dedupe_main, spark, day2, folder / "out2", reference_index, "--run-id", "d2") == 0
    return {
        "folder": folder, "day1": day1, "day2": day2, "template": template,
        "reference_index": reference_index, "reference_out": folder / "out2",
    }
