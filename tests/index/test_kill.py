"""SIGKILL the job's driver at several points of a run against an index, then check that the
index still reads as its previous (or fully published) version, that the output is absent or
complete, and that rerunning the same run id gives what an uninterrupted run gives.

The killed run is a real `jobs/dedupe.py` process (its own JVM) in its own process group;
its log lines (each stage's start and end, "published version" after the index's new
manifest) say where it is.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time

import pytest
from helpers import (
    clusters_of, entries_of, entry_key, missing_or_resized, newest_manifest, pairs_of, run_job, start_job,
)

pytestmark = [pytest.mark.spark, pytest.mark.slow]

# (log line pattern that triggers the kill, whether the index's new version is published by
# then). Stages log "stage NAME: started ..." when they start and "stage NAME: 1.2 s ..." when
# they end.
KILL_POINTS = [
    (r"stage index_ids: started", False),     # at the start: the first stage (given fingerprints have none of their own)
    (r"stage verify: \d", False),             # right after the batch's self-join
    (r"stage index_write: started", False),   # while the segment is being written
    (r"stage report: \d", False),             # segment written, right before the index publish
    (r"published version", True),             # right after the index publish
]


def kill_when(process: subprocess.Popen, pattern: str, timeout: float = 600) -> list[str]:
    """Read the job's log until a line matches `pattern`, then SIGKILL its process group."""
    seen, deadline = [], time.time() + timeout
    for line in process.stdout:
        seen.append(line)
        if re.search(pattern, line):
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return seen
        if time.time() > deadline:
            break
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    raise AssertionError(f"the job never logged {pattern!r}; its output:\n{''.join(seen[-40:])}")


@pytest.mark.parametrize("point,published", KILL_POINTS, ids=["first_stage", "after_join", "index_write", "before_publish", "after_publish"])
def test_killed_run_leaves_the_index_whole_and_a_rerun_repairs_it(
    spark, dedupe_main, index_main, two_days, tmp_path, point, published
):
    index = tmp_path / "index"
    shutil.copytree(two_days["template"], index)
    before = entry_key(entries_of(spark, index))
    out = tmp_path / "out"

    kill_when(start_job(two_days["day2"], out, index, "d2"), point)

    # The index reads, at the version it had or the one the run published, never in between.
    versions = sorted(p.name for p in (index / "manifests").glob("*.json"))
    assert versions == (["00000001.json", "00000002.json"] if published else ["00000001.json"])
    after_kill = entry_key(entries_of(spark, index))
    reference = entry_key(entries_of(spark, two_days["reference_index"]))
    assert after_kill == (reference if published else before)
    # No output, or a whole one: after the index publish the output's rename follows within
    # milliseconds, and the kill may land on either side of it.
    if out.exists():
        assert published
        assert clusters_of(spark, out) == clusters_of(spark, two_days["reference_out"])
    assert not list(tmp_path.glob(".out.replaced-*"))

    # The killed run's lease (its process is gone) does not hold up compact, which removes
    # it and the killed run's unpublished folder; --keep-last 1 keeps a published d2 rerunnable.
    assert list((index / "leases").glob("run-d2-*.json")), "the killed run held a lease"
    assert index_main(["compact", "--index", str(index), "--min-age", "0", "--keep-last", "1"], spark=spark) == 0
    assert not list((index / "leases").glob("*.json"))
    assert missing_or_resized(index) == []
    listed = {s["folder"].split("/")[-1] for s in newest_manifest(index)["segments"]}
    assert {p.name for p in (index / "segments").iterdir()} == listed

    # The same run id again: the outputs and the index of an uninterrupted run.
    again = ["--overwrite"] if out.exists() else []
    assert run_job(dedupe_main, spark, two_days["day2"], out, index, "--run-id", "d2", *again) == 0
    assert entry_key(entries_of(spark, index)) == reference
    assert clusters_of(spark, out) == clusters_of(spark, two_days["reference_out"])
    assert pairs_of(spark, out) == pairs_of(spark, two_days["reference_out"])

