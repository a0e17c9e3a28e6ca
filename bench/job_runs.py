"""The whole job as a process, for issue 14's benchmarks: `python jobs/dedupe.py ...` with its
wall time, the CPU seconds and peak resident memory of its process tree (the job's Python, its
JVM, the JVM's Python workers), and the parts of its report.json the benchmarks show.

The job measured is the one of the working tree (the default), or of a commit checked out as a
git worktree (`job_tree(rev)`: for a smoke run while the working tree is half edited), as
bench/commit_cost.py does it. Nothing here judges a time.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bench.commit_cost import TreeCpu, add_worktree, remove_worktree
from bench.machine import load_average
from bench.runners import ROOT, TreeMemory

MASTER = "local[2]"
CORES = 2


@dataclass(frozen=True)
class JobTree:
    """Where the job's code comes from: `path` (the repository root or a worktree) and the
    commit it holds (`None`: the working tree as it is, edits included)."""

    path: Path
    commit: str | None


def working_tree_commit() -> str:
    """HEAD's short hash, with `+edits` when tracked files differ from it."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True).stdout.strip()
    dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", "simhash_udf", "jobs"], cwd=ROOT).returncode
    return head + ("+edits" if dirty else "")


@contextlib.contextmanager
def job_tree(rev: str | None) -> Iterator[JobTree]:
    """The repository root (rev None) or `rev` checked out as a worktree under
    build/commit-cost/ (one per process; removed on exit)."""
    if rev is None:
        yield JobTree(ROOT, None)
        return
    tree = add_worktree(f"bench-job-{os.getpid()}", rev)  # per process: two benchmarks may run at once
    try:
        yield JobTree(tree.path, tree.commit)
    finally:
        remove_worktree(tree.path)


def job_env(tree: JobTree, driver_memory: str) -> dict[str, str]:
    """The environment of a job process: the tree's code first on the path, Python workers
    on this interpreter, the driver's memory (local mode: all of Spark's)."""
    return {**os.environ, "PYTHONPATH": str(tree.path), "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_SUBMIT_ARGS": f"--driver-memory {driver_memory} pyspark-shell"}


def measured_process(command: list[str], cwd: Path, env: dict[str, str], timeout: float) -> dict:
    """Run a command with its tree's CPU and memory sampled (every 0.2 s). Returns wall_s,
    cpu_s, cpu_s_by_kind (`TreeCpu.seconds_by_kind`: root, jvm, python, other), peak_rss,
    peak_jvm_rss, peak_python_workers_rss (bytes), returncode (None when killed after
    `timeout` seconds), and the tails of its stdout and stderr."""
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    with TreeCpu(process.pid) as cpu, TreeMemory(process.pid) as memory:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
            code: int | None = process.returncode
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            stdout, stderr = process.communicate()
            code = None
    return {"wall_s": time.perf_counter() - started, "cpu_s": cpu.seconds(),
            "cpu_s_by_kind": cpu.seconds_by_kind(), "peak_rss": memory.peak_total,
            "peak_jvm_rss": memory.peak_jvm, "peak_python_workers_rss": memory.peak_python,
            "returncode": code, "stdout": (stdout or "")[-3000:], "stderr": (stderr or "")[-3000:]}


def report_fields(report: dict) -> dict:
    """What the benchmarks keep of a report.json: total_seconds, stage_seconds, spark_jobs
    (None when the report has none) and stage_jobs (each stage's Spark jobs; empty when
    none), the counts and the join's pairs."""
    counts = report.get("counts", {})
    return {
        "total_seconds": report.get("total_seconds"),
        "stage_seconds": report.get("stage_seconds", {}),
        "spark_jobs": report.get("spark_jobs"),
        "stage_jobs": report.get("stage_jobs", {}),
        "counts": {k: v for k, v in counts.items() if isinstance(v, int)},
        "verified_pairs": report.get("join", {}).get("verified_pairs"),
    }


def run_job(tree: JobTree, job_args: list[str], output: Path, driver_memory: str = "4g",
            timeout: float = 3600, keep_output: bool = False, env: dict[str, str] | None = None) -> dict:
    """`python jobs/dedupe.py <job_args> --output <output> --overwrite --master local[2]` in
    the tree, measured (`measured_process`) and with `report_fields` of its report.json.
    Raises RuntimeError (with the log's tail) when it fails or times out. The output is removed
    afterwards unless keep_output. env: variables set for this run on top of `job_env`'s."""
    command = [sys.executable, "jobs/dedupe.py", *job_args, "--output", str(output), "--overwrite",
               "--master", MASTER, "--log-level", "WARNING"]
    result = measured_process(command, tree.path, {**job_env(tree, driver_memory), **(env or {})}, timeout)
    try:
        if result["returncode"] != 0:
            told = "timed out" if result["returncode"] is None else f"exit {result['returncode']}"
            raise RuntimeError(f"the job {told}: {(result['stderr'] or result['stdout'])[-1500:]}")
        fields = report_fields(json.loads((output / "report.json").read_text()))
    finally:
        if not keep_output:
            shutil.rmtree(output, ignore_errors=True)
    return {k: v for k, v in result.items() if k not in ("stdout", "stderr", "returncode")} | fields


def bench_command(module: str, *args: str) -> list[str]:
    """`python -m bench.<module> <args>`, run from the repository root (a worker of a benchmark:
    bench/'s code, the working tree's simhash_udf)."""
    return [sys.executable, "-m", f"bench.{module}", *args]


def bench_env(driver_memory: str) -> dict[str, str]:
    """The environment of a benchmark's own Spark worker process (the baselines)."""
    return {**os.environ, "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_SUBMIT_ARGS": f"--driver-memory {driver_memory} pyspark-shell"}


def last_json_line(stdout: str) -> dict:
    """The JSON object a worker printed on its last line."""
    return json.loads(stdout.strip().splitlines()[-1])


def emit_report(report: dict, started: float, json_path: Path | None) -> int:
    """End a benchmark's run: its report gets load_end and seconds (since `started`, a
    perf_counter), is written to `json_path` when given and printed; the exit code."""
    report["load_end"] = load_average()
    report["seconds"] = time.perf_counter() - started
    text = json.dumps(report, indent=1)
    if json_path:
        json_path.write_text(text)
    print(text)
    return 0
