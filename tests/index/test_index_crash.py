"""The index's crash windows (issue 11, item 8), each forced at its exact point in a real run
(a real index on disk, the job's `main` on the test session's Spark):

- `compact` run between a run's segment write and its publish (the segment aged past
  compact's one-hour guard, as a long run's is): the index must stay whole;
- a file of the new version deleted before the publish: nothing may be published;
- an interrupt after the manifest is linked but before the run marks itself committed: the
  published segment must survive `abort`;
- the manifest, its folder and the segment's files are fsynced before the link;
- leases: a run is refused while compact goes, and a killed holder's lease blocks nothing.

"Whole" is checked on disk, independently of the index code: every file the newest manifest
lists exists with its recorded size.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
from helpers import clusters_of, entries_of, entry_key, missing_or_resized, newest_manifest, run_job

from simhash_udf.index import lease as index_lease
from simhash_udf.index.session import IndexSession
from simhash_udf.index.store import IndexStore

pytestmark = pytest.mark.spark


def age(folder: Path, seconds: float) -> None:
    """Set a folder's modification time `seconds` back (what a long run's segment looks like)."""
    then = time.time() - seconds
    os.utime(folder, (then, then))


@pytest.mark.slow  # a run forced to a crash point, like the kill tests
def test_compact_between_segment_write_and_publish_leaves_the_index_whole(
    spark, dedupe_main, index_main, two_days, tmp_path, monkeypatch, capsys
):
    index = tmp_path / "index"
    shutil.copytree(two_days["template"], index)
    compact_codes = []
    original_commit = IndexSession.commit

    def compact_then_commit(self):
        # The run's segment is written and more than an hour old: a long run about to publish.
        age(index / self.segment, 2 * 3600)
        compact_codes.append(index_main(["compact", "--index", str(index)], spark=spark))
        return original_commit(self)

    monkeypatch.setattr(IndexSession, "commit", compact_then_commit)
    code = run_job(dedupe_main, spark, two_days["day2"], tmp_path / "out", index, "--run-id", "d2")
    monkeypatch.undo()
    err = capsys.readouterr().err

    assert compact_codes, "the hook ran"
    assert missing_or_resized(index) == [], "the newest manifest lists files that are gone"
    # Either compact was refused while the run held its lease (and the run published), or
    # the run was refused at its publish (and published nothing): never a broken version.
    if code == 0:
        assert compact_codes == [2] and "run(s) are going on the index" in err, err
        assert entry_key(entries_of(spark, index)) == entry_key(entries_of(spark, two_days["reference_index"]))
        assert clusters_of(spark, tmp_path / "out") == clusters_of(spark, two_days["reference_out"])
    else:
        assert code == 2 and "not publishing version 2" in err, err
        assert [r["run_id"] for r in newest_manifest(index)["runs"]] == ["d1"]


@pytest.mark.slow  # a run forced to a crash point, like the kill tests
def test_publish_refuses_a_version_whose_files_are_gone(
    spark, dedupe_main, two_days, tmp_path, monkeypatch, capsys
):
    """Whatever deleted it (a compact that broke the lease, an operator), a version that lists
    a missing file is not published: exit code 2, a message naming the file, no output."""
    index = tmp_path / "index"
    shutil.copytree(two_days["template"], index)
    removed = []
    original_commit = IndexSession.commit

    def delete_a_file_then_commit(self):
        victim = sorted((index / self.segment / "entries").glob("part-*.parquet"))[0]
        victim.unlink()
        removed.append(victim)
        return original_commit(self)

    monkeypatch.setattr(IndexSession, "commit", delete_a_file_then_commit)
    code = run_job(dedupe_main, spark, two_days["day2"], tmp_path / "out", index, "--run-id", "d2")
    monkeypatch.undo()
    err = capsys.readouterr().err

    assert code == 2, err
    assert "not publishing version 2" in err and removed[0].name in err, err
    assert sorted(p.name for p in (index / "manifests").glob("*.json")) == ["00000001.json"]
    assert missing_or_resized(index) == []
    assert not (tmp_path / "out").exists()
    assert not list((index / "leases").glob("run-*.json")), "the refused run released its lease"
    # And the run goes through when run again.
    assert run_job(dedupe_main, spark, two_days["day2"], tmp_path / "out", index, "--run-id", "d2") == 0
    assert entry_key(entries_of(spark, index)) == entry_key(entries_of(spark, two_days["reference_index"]))


@pytest.mark.slow  # a run forced to a crash point, like the kill tests
def test_an_interrupt_right_after_the_manifest_is_linked_keeps_the_published_segment(
    spark, dedupe_main, two_days, tmp_path, monkeypatch
):
    index = tmp_path / "index"
    shutil.copytree(two_days["template"], index)
    original_publish = IndexStore.publish

    def publish_then_interrupt(self, *args, **kwargs):
        original_publish(self, *args, **kwargs)
        raise KeyboardInterrupt  # Ctrl-C (or SIGTERM's handler) before `committed = True`

    monkeypatch.setattr(IndexStore, "publish", publish_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        run_job(dedupe_main, spark, two_days["day2"], tmp_path / "out", index, "--run-id", "d2")
    monkeypatch.undo()

    # The version is published: it lists run d2 and every file it lists is on disk.
    manifest = newest_manifest(index)
    assert manifest["version"] == 2 and [r["run_id"] for r in manifest["runs"]] == ["d1", "d2"]
    assert missing_or_resized(index) == [], "abort deleted the segment the published version lists"
    assert not (tmp_path / "out").exists(), "the output is published only after a clean commit"
    assert entry_key(entries_of(spark, index)) == entry_key(entries_of(spark, two_days["reference_index"]))
    # Rerunning the run id writes the output and gives the uninterrupted run's results.
    assert run_job(dedupe_main, spark, two_days["day2"], tmp_path / "out", index, "--run-id", "d2") == 0
    assert entry_key(entries_of(spark, index)) == entry_key(entries_of(spark, two_days["reference_index"]))
    assert clusters_of(spark, tmp_path / "out") == clusters_of(spark, two_days["reference_out"])


@pytest.mark.slow  # a run forced to a crash point, like the kill tests
def test_the_segment_and_manifest_are_fsynced_before_the_manifest_is_linked(
    spark, dedupe_main, two_days, tmp_path, monkeypatch
):
    """A power loss cannot be staged here; what is checked is the order of the system calls
    that make it harmless (the calls are observed and passed through, not replaced)."""
    index = tmp_path / "index"
    shutil.copytree(two_days["template"], index)
    calls: list[tuple[str, str]] = []
    real_fsync, real_link = os.fsync, os.link

    def fsync(fd):
        calls.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        return real_fsync(fd)

    def link(src, dst, *args, **kwargs):
        calls.append(("link", str(dst)))
        return real_link(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "link", link)
    assert run_job(dedupe_main, spark, two_days["day2"], tmp_path / "out", index, "--run-id", "d2") == 0
    monkeypatch.undo()

    manifests = (index / "manifests").resolve()
    final = str(manifests / "00000002.json")
    links = [i for i, (kind, path) in enumerate(calls) if kind == "link" and path == final]
    assert len(links) == 1, calls
    before = {path for kind, path in calls[: links[0]] if kind == "fsync"}
    after = {path for kind, path in calls[links[0] + 1 :] if kind == "fsync"}
    tmp_manifests = {p for p in before if p.startswith(str(manifests / "_tmp-"))}
    assert tmp_manifests, f"the manifest's content was not fsynced before the link: {calls}"
    segment = index / newest_manifest(index)["segments"][-1]["folder"]
    files = {str(p.resolve()) for p in segment.rglob("*") if p.is_file()}
    assert files and files <= before, sorted(files - before)
    assert str(segment.resolve()) in before and str(segment.resolve().parent) in before
    assert str(manifests) in after, "the manifests folder was not fsynced after the link"


def test_a_run_is_refused_while_compact_holds_its_lease(spark, dedupe_main, two_days, tmp_path, capsys):
    index = tmp_path / "index"
    shutil.copytree(two_days["template"], index)
    store = IndexStore(spark, str(index))
    lease = index_lease.take_compact_lease(store)
    try:
        code = run_job(dedupe_main, spark, two_days["day2"], tmp_path / "out", index, "--run-id", "d2")
    finally:
        lease.release()
    err = capsys.readouterr().err
    assert code == 2 and "`compact` is running on the index" in err, err
    assert not (tmp_path / "out").exists()
    assert sorted(p.name for p in (index / "segments").iterdir()) == [
        s["folder"].split("/")[-1] for s in newest_manifest(index)["segments"]
    ], "the refused run wrote nothing"
    assert not list((index / "leases").glob("*.json"))


def _exited_pid() -> int:
    """The pid of a process that has exited (as a killed run's has)."""
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def write_lease(index: Path, name: str, host: str, pid: int, age_seconds: float) -> Path:
    path = index / "leases" / f"run-{name}.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps({"kind": "run", "name": name, "host": host, "pid": pid, "started_at": "x"}))
    then = time.time() - age_seconds
    os.utime(path, (then, then))
    return path


def test_leases_of_killed_runs_do_not_block_compact_and_live_ones_do(
    spark, index_main, two_days, tmp_path, capsys
):
    index = tmp_path / "index"
    shutil.copytree(two_days["template"], index)
    here = socket.gethostname()
    dead_here = write_lease(index, "dead-here", here, _exited_pid(), age_seconds=5)
    silent_elsewhere = write_lease(index, "silent", "another-host", 1, age_seconds=index_lease.LEASE_TTL_SECONDS + 60)
    assert index_main(["compact", "--index", str(index), "--min-age", "0"], spark=spark) == 0
    capsys.readouterr()
    assert not dead_here.exists() and not silent_elsewhere.exists(), "stale leases are cleaned up"

    fresh_elsewhere = write_lease(index, "busy", "another-host", 1, age_seconds=5)
    assert index_main(["compact", "--index", str(index), "--min-age", "0"], spark=spark) == 2
    err = capsys.readouterr().err
    assert "1 run(s) are going on the index" in err and "'busy'" in err and "another-host" in err, err
    assert fresh_elsewhere.exists() and not (index / "leases" / "compact.json").exists()
    assert missing_or_resized(index) == []


@pytest.mark.slow  # a run forced to a crash point, like the kill tests
def test_compact_keep_last_merges_the_older_runs_and_leaves_the_newest_rerunnable(
    spark, dedupe_main, index_main, two_days, tmp_path, capsys
):
    """What the daily DAG runs on compaction days: `compact --keep-last 1` merges every run
    but the newest into one segment; the newest can still be rerun with its run id."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    index = tmp_path / "index"
    shutil.copytree(two_days["reference_index"], index)  # runs d1, d2
    day3 = tmp_path / "day3.parquet"
    pq.write_table(pa.table({"id": pa.array([700_001, 700_002], pa.int64()), "fp": pa.array([99, 98], pa.int64())}), day3)
    assert run_job(dedupe_main, spark, day3, tmp_path / "out3", index, "--run-id", "d3") == 0
    before = entry_key(entries_of(spark, index))

    assert index_main(["compact", "--index", str(index), "--min-age", "0", "--keep-last", "1"], spark=spark) == 0
    capsys.readouterr()
    manifest = newest_manifest(index)
    assert sorted(tuple(s["runs"]) for s in manifest["segments"]) == [("d1", "d2"), ("d3",)]
    assert {p.name for p in (index / "segments").iterdir()} == {s["folder"].split("/")[-1] for s in manifest["segments"]}
    assert missing_or_resized(index) == []
    assert entry_key(entries_of(spark, index)) == before

    assert run_job(dedupe_main, spark, day3, tmp_path / "out3", index, "--run-id", "d3", "--overwrite") == 0
    assert entry_key(entries_of(spark, index)) == before
    # A run merged with others is not rerunnable (remove-run first), as before.
    assert run_job(dedupe_main, spark, two_days["day2"], tmp_path / "out2", index, "--run-id", "d2") == 2


def test_a_run_refused_for_its_output_leaves_no_lease_behind(spark, dedupe_main, two_days, tmp_path, capsys):
    """A run against the index whose --output already exists (no --overwrite) is refused
    before any work; its lease must go with it, or compact in the same process (a notebook,
    a scheduler's worker) is refused although no run is going on."""
    index = tmp_path / "index"
    shutil.copytree(two_days["template"], index)
    out = tmp_path / "out"
    out.mkdir()
    code = run_job(dedupe_main, spark, two_days["day2"], out, index, "--run-id", "d2")
    assert code == 2, capsys.readouterr().err
    capsys.readouterr()
    assert not list((index / "leases").glob("run-*.json")), "the refused run still holds its lease"
    assert missing_or_resized(index) == []
