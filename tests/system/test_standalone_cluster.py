"""`./submit.sh --master spark://...` on a real Spark standalone cluster on loopback.

A master and two one-core workers are started from the pyspark package (`spark-class`), as a
small cluster is started by hand. The job is submitted through submit.sh, which packs the
executors' environment (scripts/pack_env.sh) and ships it with --archives. One run (a cluster
run costs a minute or two): its executors' Python is the shipped environment's, one worker
is killed while the job runs, Spark reruns the lost work on the other, and the outputs
equal local mode's on the same input.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tarfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from helpers import ROOT

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SAMPLE = ROOT / "examples" / "sample.jsonl"
VENV = Path(sys.executable).parent.parent
OUTPUTS = ("clusters", "pairs", "deduped")
# Enough documents that every stage has real tasks on both executors; the run is dominated by
# Spark's per-stage overhead, so more would only make the test slower.
DOCUMENTS = 1500
# The longest a cluster run may take (seconds); a few minutes even on a loaded machine.
JOB_TIMEOUT = 600


# --- processes ---------------------------------------------------------------------------

def children(pid: int) -> list[int]:
    """Every descendant of `pid` (from /proc), deepest last."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            parents.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def kill_tree(process: subprocess.Popen) -> None:
    """SIGKILL a process started in its own session, its group and anything it started
    (pyspark's Python daemon moves to a process group of its own)."""
    for pid in [*children(process.pid), process.pid]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(timeout=30)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without anything that points Spark's Python at this
    machine's environments: the executors must find everything in the shipped archive."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH", "VIRTUAL_ENV", "SPARK_HOME")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(str(VENV)))
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    env.update(extra)
    return env


# --- the cluster -------------------------------------------------------------------------

@dataclass
class Worker:
    process: subprocess.Popen
    work_dir: Path


@dataclass
class Cluster:
    master_url: str
    ui_url: str
    master: subprocess.Popen
    logs: Path
    workers: list[Worker] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    ready: bool = False

    def state(self) -> dict:
        with urllib.request.urlopen(f"{self.ui_url}/json/", timeout=10) as response:
            return json.load(response)


def start_cluster(base: Path) -> Cluster:
    import pyspark

    spark_home = Path(pyspark.__file__).parent
    spark_class = str(spark_home / "bin" / "spark-class")
    logs = base / "logs"
    logs.mkdir(parents=True)
    env = clean_env(
        SPARK_HOME=str(spark_home), SPARK_LOG_DIR=str(logs), SPARK_WORKER_DIR=str(base / "work"),
        SPARK_DAEMON_MEMORY="256m",
    )
    port, ui_port = free_port(), free_port()

    def launch(name: str, *args: str) -> subprocess.Popen:
        with open(logs / f"{name}.log", "wb") as log:
            return subprocess.Popen([spark_class, *args], stdout=log, stderr=subprocess.STDOUT,
                                    env=env, cwd=base, start_new_session=True)

    master = launch("master", "org.apache.spark.deploy.master.Master",
                    "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui_port))
    cluster = Cluster(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui_port}", master, logs)
    try:
        for i in range(2):
            work_dir = base / f"worker{i}"
            work_dir.mkdir()
            process = launch(f"worker{i}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                             "--cores", "1", "--memory", "1g", "--work-dir", str(work_dir),
                             "--webui-port", "0", cluster.master_url)
            cluster.workers.append(Worker(process, work_dir))
    except BaseException:
        stop_cluster(cluster)
        raise
    return cluster


def stop_cluster(cluster: Cluster) -> None:
    for worker in cluster.workers:
        kill_tree(worker.process)
    kill_tree(cluster.master)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    """A master and two one-core workers, stopped (killed) at the end whatever happened. The
    JVMs start in the background; `wait_ready` waits for both workers."""
    cluster = start_cluster(tmp_path_factory.mktemp("cluster"))
    try:
        yield cluster
    finally:
        stop_cluster(cluster)


def wait_ready(cluster: Cluster, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if sum(w["state"] == "ALIVE" for w in cluster.state()["workers"]) == 2:
                if not cluster.ready:
                    cluster.ready = True
                    print(f"\ncluster ready {time.monotonic() - cluster.started:.1f} s after its start")
                return
        except OSError:  # the web UI is not up yet
            pass
        if time.monotonic() > deadline:
            logs = "".join(f"\n--- {p.name}\n{p.read_text()[-3000:]}" for p in sorted(cluster.logs.glob("*.log")))
            raise AssertionError(f"the cluster did not start in {timeout} s{logs}")
        time.sleep(0.5)


# --- the job's input and outputs ---------------------------------------------------------

def make_crawl(folder: Path, n: int, files: int = 4, seed: int = 5) -> None:
    """n documents made from the sample's texts, in `files` JSON Lines files (so every stage
    has a task for each executor): exact copies, one word replaced, a sentence of sample words
    appended, or a new text of sample words (a page of its own)."""
    texts = [json.loads(line)["text"] for line in SAMPLE.read_text().splitlines()]
    words = sorted({w for t in texts if t for w in t.split()})
    rng = random.Random(seed)
    outs = [(folder / f"part-{f}.jsonl").open("w") for f in range(files)]
    with contextlib.ExitStack() as stack:
        for out in outs:
            stack.enter_context(out)
        for i in range(n):
            text = texts[i % len(texts)] or ""
            edit = rng.randrange(4)
            if edit == 1 and text.split():
                tokens = text.split()
                tokens[rng.randrange(len(tokens))] = rng.choice(words)
                text = " ".join(tokens)
            elif edit == 2:
                text = f"{text} {' '.join(rng.choices(words, k=12))}."
            elif edit == 3:
                text = " ".join(rng.choices(words, k=60))
            outs[i % files].write(json.dumps({"id": i, "text": text}, ensure_ascii=False) + "\n")


def read_outputs(out: Path) -> dict:
    """Each Parquet output as a set of rows, and the report's counts and join figures."""
    found = {name: {tuple(row.values()) for row in pq.read_table(out / name).to_pylist()} for name in OUTPUTS}
    report = json.loads((out / "report.json").read_text())
    found["counts"] = report["counts"]
    found["join"] = {k: report["join"][k] for k in ("candidate_pairs", "verified_pairs")}
    return found


@pytest.fixture(scope="module")
def crawl(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("crawl")
    make_crawl(folder, DOCUMENTS)
    return folder


@pytest.fixture(scope="module")
def local_outputs(spark, dedupe_main, crawl, tmp_path_factory) -> dict:
    """The job in local mode (the test session's local[2]) on the same input."""
    out = tmp_path_factory.mktemp("local") / "out"
    started = time.monotonic()
    assert dedupe_main(["--input", str(crawl), "--output", str(out)], spark=spark) == 0
    print(f"\nlocal mode run: {time.monotonic() - started:.1f} s")
    found = read_outputs(out)
    # The input is a real test: many near duplicates found, and pages of their own.
    assert found["counts"]["documents"] == DOCUMENTS
    assert found["counts"]["near_duplicates"] > 100 and found["counts"]["kept"] > 300
    return found


def submit(cluster: Cluster, crawl: Path, out: Path, *spark_options: str) -> subprocess.Popen:
    """./submit.sh on the cluster, as a user types it; output to files beside `out`."""
    args = [str(ROOT / "submit.sh"), "--master", cluster.master_url,
            "--conf", "spark.sql.shuffle.partitions=4", "--total-executor-cores", "2", *spark_options,
            "--input", str(crawl), "--output", str(out)]
    with open(f"{out}.stdout", "wb") as stdout, open(f"{out}.stderr", "wb") as stderr:
        return subprocess.Popen(args, stdout=stdout, stderr=stderr, env=clean_env(SIMHASH_VENV=str(VENV)),
                                start_new_session=True)


def finish(job: subprocess.Popen, out: Path, timeout: float = JOB_TIMEOUT) -> str:
    """Wait for the job; its stdout and stderr (the driver's Python logs to stdout)."""
    try:
        job.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_tree(job)
    log = Path(f"{out}.stdout").read_text(errors="replace") + Path(f"{out}.stderr").read_text(errors="replace")
    assert job.returncode == 0, log[-5000:]
    return log


def executor_pythons(work_dirs: list[Path]) -> dict[int, tuple[str, set[str]]]:
    """Python processes running in a worker's directories (the executors' Python workers):
    pid -> (the program they were started as, the shared libraries they have loaded)."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
            argv0 = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")[0].decode()
            if "python" not in Path(argv0).name or not any(cwd.startswith(str(d)) for d in work_dirs):
                continue
            maps = {line.split()[-1] for line in Path(f"/proc/{entry}/maps").read_text().splitlines()
                    if ".so" in line and "/" in line}
        except (OSError, IndexError):
            continue
        found[int(entry)] = (argv0, maps)
    return found


# --- tests -------------------------------------------------------------------------------

def test_pack_env_ships_the_project_without_pyspark():
    """The archive holds the project as installed files (not an editable link to this
    checkout) and the native dependencies, and leaves pyspark to the cluster's Spark."""
    started = time.monotonic()
    result = subprocess.run([str(ROOT / "scripts" / "pack_env.sh")], capture_output=True, text=True,
                            env=clean_env(SIMHASH_VENV=str(VENV)), timeout=600)
    assert result.returncode == 0, result.stderr
    archive = Path(result.stdout.strip().splitlines()[-1])
    print(f"\npack_env.sh: {time.monotonic() - started:.1f} s, {archive.stat().st_size / 1e6:.0f} MB; {result.stderr.strip()}")
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
    site = "lib/python3.11/site-packages"
    for needed in ("bin/python", f"{site}/simhash_udf/stages/udfs.py", f"{site}/simhash_udf/core/fingerprint.py",
                   f"{site}/numpy/__init__.py", f"{site}/pyarrow/__init__.py", f"{site}/jieba/dict.txt"):
        assert needed in names, needed
    assert not any(n.startswith((f"{site}/pyspark/", f"{site}/py4j/")) for n in names)
    assert not any("__editable__" in n or n.endswith(".egg-link") for n in names)

    # A second call finds the archive up to date and does not pack again.
    again = subprocess.run([str(ROOT / "scripts" / "pack_env.sh")], capture_output=True, text=True,
                           env=clean_env(SIMHASH_VENV=str(VENV)), timeout=600)
    assert again.returncode == 0 and again.stdout == result.stdout and "packing" not in again.stderr


def test_a_cluster_run_in_the_shipped_environment_survives_losing_a_worker_and_equals_local_mode(
    cluster, crawl, local_outputs, tmp_path
):
    """One cluster run (each costs a minute or two): both executors run the environment
    submit.sh ships, a worker is killed mid-run, and the outputs still equal local mode's."""
    out = tmp_path / "killed"
    work_dirs = [w.work_dir for w in cluster.workers]
    wait_ready(cluster)
    alive = [w for w in cluster.workers if w.process.poll() is None]
    assert len(alive) == 2
    victim = alive[0]
    ui_port = free_port()
    events = tmp_path / "events"
    events.mkdir()
    started = time.monotonic()
    # The driver's UI on a port of its own: its REST API says which executor runs a task (the
    # tests' drivers start without a UI unless told, see tests/conftest.py).
    job = submit(cluster, crawl, out, "--conf", "spark.ui.enabled=true", "--conf", f"spark.ui.port={ui_port}",
                 "--conf", "spark.eventLog.enabled=true",
                 "--conf", f"spark.eventLog.dir={events}", "--conf", "spark.eventLog.compress=false")

    # Kill the worker (its JVM, its executor and the executor's Python) once the one pass over
    # the text (stage signatures: decode, normalise, fingerprint, sketch) has started (two long
    # tasks, one per executor) and the driver's REST API has shown the
    # victim's executor running a task for half a second: normally a task is lost mid-way.
    # Meanwhile, note the executors' Python processes and what they have loaded.
    pythons: dict[int, tuple[str, set[str]]] = {}

    def note_pythons() -> None:
        for pid, (argv0, maps) in executor_pythons(work_dirs).items():
            pythons.setdefault(pid, (argv0, set()))[1].update(maps)

    deadline = time.monotonic() + 400
    while "stage signatures: started" not in Path(f"{out}.stdout").read_text(errors="replace"):
        assert job.poll() is None, "the job ended before the worker could be killed"
        assert time.monotonic() < deadline, "the job never reached the signatures stage"
        note_pythons()
        time.sleep(0.2)
    apps = cluster.state()["activeapps"]
    assert [a["state"] for a in apps] == ["RUNNING"]
    app = apps[0]["id"]
    executors = [d.name for d in (victim.work_dir / app).glob("*")]
    assert len(executors) == 1, "the victim worker runs no executor of the job"
    api = f"http://127.0.0.1:{ui_port}/api/v1/applications/{app}/executors"
    busy_since = None
    while True:  # until the victim has been running a task for half a second (a long one)
        assert job.poll() is None, "the job ended before the victim's executor ran a task"
        assert time.monotonic() < deadline, "the victim's executor never ran a task for half a second"
        with urllib.request.urlopen(api, timeout=10) as response:
            active = {e["id"]: e["activeTasks"] for e in json.load(response)}
        if active.get(executors[0], 0) == 0:
            busy_since = None
        elif busy_since is None:
            busy_since = time.monotonic()
        elif time.monotonic() - busy_since >= 0.5:
            break
        note_pythons()
        time.sleep(0.1)
    kill_tree(victim.process)
    killed_at = time.monotonic()
    before_kill = Path(f"{out}.stdout").read_text(errors="replace")
    print(f"\nkilled {victim.work_dir.name} (executor {executors[0]} of {app}, {active[executors[0]]} task(s) "
          f"running) {killed_at - started:.1f} s into the run")

    # The surviving executor runs the rest of the run's Python tasks: watch them to the end.
    deadline = killed_at + JOB_TIMEOUT
    while job.poll() is None and time.monotonic() < deadline:
        note_pythons()
        time.sleep(0.5)
    log = finish(job, out, timeout=max(1.0, deadline - time.monotonic()))
    print(f"run with a worker killed: {time.monotonic() - started:.1f} s "
          f"({time.monotonic() - killed_at:.1f} s after the kill)")
    # The loss happened mid-run and Spark noticed it: the outputs were written after the
    # kill, the driver lost the executor (its work is rerun on the other one), and the master
    # counts one worker dead.
    assert "stage clusters: started" not in before_kill and "stage clusters: started" in log
    assert f"Lost executor {executors[0]} on 127.0.0.1: worker lost" in log, log[-5000:]
    # Spark's event log: tasks that ended because the victim's executor was lost. Usually one
    # (the task it was running), but the REST API's view of running tasks lags the executor
    # (seen on a loaded machine: the task had just finished when the kill landed), so a lost
    # task is reported rather than required; any there is must be the victim's.
    task_ends = [json.loads(line) for path in events.rglob("events_*") for line in path.read_text().splitlines()
                 if '"SparkListenerTaskEnd"' in line]
    assert task_ends, "no task events in Spark's event log"
    lost = [e for e in task_ends if e["Task End Reason"]["Reason"] == "ExecutorLostFailure"]
    assert {e["Task Info"]["Executor ID"] for e in lost} <= {executors[0]}, task_ends[-3:]
    print(f"tasks lost with the executor: {len(lost)}; tasks that ended in all: {len(task_ends)}")
    workers = cluster.state()["workers"]
    assert sorted(w["state"] for w in workers) == ["ALIVE", "DEAD"]
    assert read_outputs(out) == local_outputs

    # Both executors ran, each in the environment unpacked from the archive...
    for work_dir in work_dirs:
        env_dirs = list(work_dir.glob("app-*/*/environment"))
        assert env_dirs and (env_dirs[0] / "lib/python3.11/site-packages/simhash_udf/stages/udfs.py").is_file(), work_dir
    # ...and their Python workers are the archive's Python, with pyarrow and numpy loaded
    # from the unpacked archive and nothing from this machine's environment.
    assert pythons, "no Python worker seen on the executors"
    assert {argv0 for argv0, _ in pythons.values()} == {"./environment/bin/python"}
    loaded = set().union(*(maps for _, maps in pythons.values()))
    assert any("/environment/lib/python3.11/site-packages/pyarrow/" in p for p in loaded)
    assert any("/environment/lib/python3.11/site-packages/numpy" in p for p in loaded)
    assert not [p for p in loaded if p.startswith((str(VENV), str(ROOT)))]
