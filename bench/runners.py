"""How bench/'s scripts run what they measure: timed repeats interleaved beside a baseline,
a worker in a fresh process bounded in time with its memory peaks sampled, inputs cached
under build/bench-cache/, and the Spark session of a benchmark.

The figures are for reading, not asserting: nothing here judges a time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from pyspark.sql import SparkSession

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "build" / "bench-cache"  # inputs and outputs of the benchmarks; never committed


# ---------------------------------------------------------------- timed repeats

@dataclass
class Runs:
    """The runs of one method: wall and CPU seconds of each, and the messages of failed ones."""

    wall_s: list[float] = field(default_factory=list)
    cpu_s: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    outcome: object = None  # what the last successful run returned


def interleaved(
    methods: Mapping[str, Callable[[], object]],
    repeats: int,
    catch: bool = False,
    log: Callable[[str, int, Runs, bool], None] | None = None,
) -> dict[str, Runs]:
    """Run every method once per repeat, in turn (so a change in the machine's load falls on
    all of them alike), timing each run's wall and CPU (this process) seconds.

    catch: a method that raises records its first line of error (300 characters) as a
    failed run and the others go on; otherwise the error propagates. log(name, repeat, runs,
    failed) is called after each run (repeat counted from 1).
    """
    runs = {name: Runs() for name in methods}
    for repeat in range(1, repeats + 1):
        for name, action in methods.items():
            wall, cpu = time.perf_counter(), time.process_time()
            failed = False
            try:
                outcome = action()
            except Exception as error:  # with catch, a failed run is a result too
                if not catch:
                    raise
                runs[name].failures.append(str(error).strip().splitlines()[0][:300])
                failed = True
            else:
                runs[name].wall_s.append(time.perf_counter() - wall)
                runs[name].cpu_s.append(time.process_time() - cpu)
                runs[name].outcome = outcome
            if log is not None:
                log(name, repeat, runs[name], failed)
    return runs


def timed_runs(action: Callable[[], object], repeats: int) -> list[float]:
    """Wall seconds of `repeats` runs of one action."""
    return interleaved({"": action}, repeats)[""].wall_s


# ---------------------------------------------------------------- a worker in its own process

def module_command(module: str, *args: str) -> list[str]:
    """The command that runs bench/<module>.py as `python -m bench.<module>` with this Python
    (from the repository root: every runner here starts it there)."""
    return [sys.executable, "-m", f"bench.{module}", *args]


def languages_arg(text: str) -> tuple[str, ...]:
    """A `--languages` value: comma-separated, each of `zh` (Chinese) and `en` (English)."""
    languages = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    unknown = [language for language in languages if language not in ("zh", "en")]
    if unknown or not languages:
        raise argparse.ArgumentTypeError(f"languages are zh and en, comma-separated (got {text!r})")
    return languages


def command_text(module: str, script_args: list[str]) -> str:
    """The command as results show it: `python -m bench.<module> <args>`."""
    return " ".join([f"python -m bench.{module}", *script_args])


def run_module_json(module: str, script_args: list[str]) -> dict | None:
    """Run a bench script as a module from the repository root (its stderr passes through);
    its JSON stdout, or None if it failed. The JSON is kept as
    build/bench-cache/<module>.last.json, so a section can be rendered again without
    rerunning its benchmark."""
    print(f"run_all: {command_text(module, script_args)}", file=sys.stderr)
    result = subprocess.run(module_command(module, *script_args), cwd=ROOT, stdout=subprocess.PIPE, text=True)
    if result.returncode != 0:
        print(f"run_all: bench/{module}.py failed (exit {result.returncode}; its messages are above)", file=sys.stderr)
        return None
    CACHE.mkdir(parents=True, exist_ok=True)
    (CACHE / f"{module}.last.json").write_text(result.stdout)
    return json.loads(result.stdout)


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    return children


# The kinds of process a job's tree holds, as `TreeMemory` and `commit_cost.TreeCpu` tell them
# apart: the process started (`root`: the job's own Python, the driver), JVMs (`jvm`: in local
# mode Spark's driver and every task's JVM side: reading, Arrow, shuffles, writing), the other
# Python processes (`python`: the JVM's Python daemon and workers, which run the UDFs) and the
# rest (`other`: shells, helpers the JVM starts).
PROCESS_KINDS = ("root", "jvm", "python", "other")


def process_kind(name: str, is_root: bool) -> str:
    """The kind (PROCESS_KINDS) of a process of the tree from its name in /proc (`comm`)."""
    if is_root:
        return "root"
    if name == "java":
        return "jvm"
    return "python" if name.startswith("python") else "other"


def _rss_and_name(pid: int) -> tuple[int, str]:
    rss, name = 0, ""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Name:"):
                    name = line.split()[1]
                elif line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) * 1024
    except OSError:
        pass
    return rss, name


class TreeMemory:
    """Peak of the summed resident set of a process and its descendants (sampled, Linux).

    Only the process itself, JVMs (`java`) and Python processes are counted. A process that
    the JVM is starting (Hadoop runs `chmod` and `ls` for the local file system) shares all of
    the JVM's pages until it execs, and its resident set then reads as the JVM's own, under
    the name of the JVM thread that started it: counted, it doubled a run's peak (16M
    fingerprints: 9.4 GB for a 4.4 GB JVM). The processes left out (shells, helpers) hold a
    few MB of their own.
    """

    def __init__(self, pid: int, interval: float = 0.2):
        self.pid, self.interval = pid, interval
        self.peak_total = self.peak_jvm = self.peak_python = 0
        # The largest single Python worker: what one task's numpy holds (a hot bucket).
        self.peak_python_one = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> TreeMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            children = _children_map()
            todo, total, jvm, python = [self.pid], 0, 0, 0
            while todo:
                pid = todo.pop()
                rss, name = _rss_and_name(pid)
                kind = process_kind(name, pid == self.pid)
                if kind != "other":
                    total += rss
                if kind == "jvm":
                    jvm += rss
                elif kind == "python":
                    python += rss
                    self.peak_python_one = max(self.peak_python_one, rss)
                todo.extend(children.get(pid, []))
            self.peak_total = max(self.peak_total, total)
            self.peak_jvm = max(self.peak_jvm, jvm)
            self.peak_python = max(self.peak_python, python)
            self._stop.wait(self.interval)


def run_bounded(command: list[str], timeout: float) -> tuple[dict, str | None]:
    """Run a worker from the repository root in a fresh process group, killed after
    `timeout` seconds.

    Returns (wall time and peak memory of the process tree, with a `status` when it was
    killed or failed; none when it ran to its end) and its stdout (None when killed).
    """
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True, start_new_session=True)
    with TreeMemory(process.pid) as peak:
        try:
            stdout, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.communicate()
            stdout = None
    result = {"wall_s": time.perf_counter() - started, "peak_rss": peak.peak_total, "peak_jvm_rss": peak.peak_jvm,
              "peak_python_workers_rss": peak.peak_python, "peak_python_worker_rss": peak.peak_python_one}
    if stdout is None:
        result["status"] = f"killed after the {timeout:.0f} s timeout"
    elif process.returncode != 0:
        result["status"] = f"failed (exit {process.returncode})"
    return result, stdout


# ---------------------------------------------------------------- cached inputs

def cached_input(folder: Path, build: Callable[[Path], dict]) -> Path:
    """A generated input folder, built once: `build(folder)` writes the data files and returns
    the metadata, written last as meta.json, whose presence marks the folder complete (an
    interrupted build is redone). Name the folder after everything that shapes the data
    (size, seed, a format version) so a change makes a new one."""
    if (folder / "meta.json").exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    meta = build(folder)
    (folder / "meta.json").write_text(json.dumps(meta, indent=1))
    return folder


def read_meta(folder: Path) -> dict:
    """The meta.json of a folder `cached_input` built."""
    return json.loads((folder / "meta.json").read_text())


def write_documents(path: Path, fingerprints: np.ndarray, rng: np.random.Generator) -> None:
    """documents.parquet: `id` (long, 0..n-1 in the order given) and `fingerprint` (long),
    rows in an order drawn from rng, so that the hot rows spread over the input's partitions."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = len(fingerprints)
    ids = np.arange(n, dtype=np.int64)
    order = rng.permutation(n)
    pq.write_table(pa.table({"id": ids[order], "fingerprint": fingerprints[order]}), path, row_group_size=1 << 20)


# ---------------------------------------------------------------- Spark

def bench_session(
    app_name: str,
    driver_memory: str,
    master: str = "local[2]",
    conf: Mapping[str, str] | None = None,
    job_settings: bool = True,
) -> SparkSession:
    """The Spark session of a benchmark: `master`, the driver memory given, no console
    progress bar, log level ERROR, Python workers on this interpreter; `conf` adds settings.

    job_settings: start it through the job's own `run.session.get_session` (its Arrow and
    reader batch sizes, what a run of the job gets); False for a plain session.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    settings = {"spark.driver.memory": driver_memory, "spark.ui.showConsoleProgress": "false", **(conf or {})}
    if job_settings:
        from simhash_udf.run.session import get_session

        spark = get_session(app_name, master=master, conf=settings)
    else:
        from pyspark.sql import SparkSession

        builder = SparkSession.builder.master(master).appName(app_name)
        for key, value in settings.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


# ---------------------------------------------------------------- one worker's memory

def rss_kb(field: str) -> int:
    """`field` (VmRSS, VmHWM, ...) of /proc/self/status, in kB (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def reset_peak_rss() -> None:
    """Make VmHWM this process's RSS now (Linux: 5 written to clear_refs), so that a peak
    read afterwards is that of what runs after. Where that is not allowed, VmHWM stays the
    peak since the process started: an upper bound."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def memory_probes(module: str, sizes: list[int]) -> list[dict]:
    """`python -m <module> --memory-worker <n>` for each size, each in a fresh process (so no
    size inherits another's peak): the JSON document each prints."""
    figures = []
    for n in sizes:
        out = subprocess.run(
            [sys.executable, "-m", module, "--memory-worker", str(n)],
            cwd=ROOT, stdout=subprocess.PIPE, text=True, check=True,
        ).stdout
        figures.append(json.loads(out))
        log(f"memory: {figures[-1]}")
    return figures


# ---------------------------------------------------------------- progress

def log(message: str) -> None:
    """Progress on stderr, with the time of day (a benchmark's document goes to its file)."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)
