"""Benchmark: the whole job's cost per extra MB at two commits, the one before issue 13 and HEAD.

    .venv/bin/python -m bench.commit_cost [--base 341938e] [--head HEAD] [--repeats 3] [--quick]
                                          [--write docs/cost.md] [--json out.json]

Issue 13's cost target: "the whole job's cost per extra MB (two input sizes, start-up
cancelled) at most 1.3x the commit before this issue, measured in one bench/ run on both
commits". Each commit is checked out as a git worktree under build/commit-cost/ (removed at
the end; the main working tree is never touched) and its job runs as a whole process,
`python jobs/dedupe.py ...` with the worktree as cwd and PYTHONPATH (one venv serves both; a
probe checks that the driver and a Spark Python worker import `simhash_udf` from that tree),
local[2], driver 4g, the job's defaults otherwise. A whole process includes start-up (JVM,
imports, dictionaries); the cost per extra MB, (t_big - t_small) / (MB_big - MB_small),
cancels it.

Inputs, JSON Lines (`id`, `text`) under build/bench-cache/commit-cost/, built from
bench/corpora.py's registry sources with a near-copy of every tenth document (one sentence
cut, `pipeline_throughput.near_copy`), sizes in MB of text (UTF-8, copies included):
- Chinese plain text: People's Daily 1998-01 (5.5 MB). Bigger inputs repeat its paragraphs,
  each repetition after the first in its own seeded order, grouped into 2,000-4,000-character
  documents again, so every document is a distinct text (issue 14: "distinct texts, 10% near
  copies"); the small input is the first documents of the big one.
- English HTML (`--html`, the default `--extract main`): the Python manual's pages in a
  seeded order (47 MB; no repetition needed).
Runs: every repeat runs each (language, size) with base then head, one after another
(`runners.interleaved`), after one warm-up run of each commit on the smallest input's first 20
documents. Figures (bench/cost_document.py renders them): medians of the repeats of the wall
seconds and of the CPU seconds of the job's process tree, each run's report.json
`stage_seconds` and the head's `sketch`; then the Chinese text steps alone (`TEXT_STAGES`:
normalise, fingerprints, signatures) in one process per commit. The JSON (--json) is rewritten
after every run, so a stopped benchmark keeps its runs (`--from-json` renders them).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from bench.cost_document import document
from bench.corpora import group_paragraphs, peoples_daily, python_doc_html
from bench.machine import cpu_model, load_average
from bench.pipeline_throughput import COPY_EVERY, near_copy
from bench.runners import CACHE as BENCH_CACHE
from bench.runners import PROCESS_KINDS, ROOT, Runs, interleaved, languages_arg, log, process_kind
from bench.runners import _children_map as children_map

CACHE = BENCH_CACHE / "commit-cost"
TREES = ROOT / "build" / "commit-cost"
BASE = "341938e"  # the commit before issue 13
SEED = 13
DRIVER_MEMORY = "4g"
MASTER = "local[2]"
# MB of text of the two inputs per language: (small, big).
# The big inputs are large enough that the extra MB cost clearly more than the runs' noise:
# the job's fixed cost (start-up, ~16 materialised stages) is ~50 CPU-seconds, the old
# job's Chinese text steps ~0.1 CPU-second per MB.
SIZES_MB = {"zh": (3.0, 60.0), "en": (3.0, 40.0)}
QUICK_SIZES_MB = {"zh": (0.2, 0.6), "en": (0.5, 1.5)}

# Run in each tree by the probe: where the driver and a Spark Python worker import simhash_udf from.
PROBE = """
import json, simhash_udf
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
worker = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("simhash_udf").__file__).collect()[0]
spark.stop()
print(json.dumps({"driver": simhash_udf.__file__, "worker": worker}))
"""

# Run in each tree on the Chinese small input: median CPU seconds (of 3, after a warm-up) of the
# text steps the job's fingerprint stage runs in its Python workers, one process, no Spark.
TEXT_STAGES = """
import json, statistics, sys, time
from simhash_udf.core import fingerprint as fp
from simhash_udf.core.config import FingerprintConfig
from simhash_udf.core.normalise import normalise
texts = [json.loads(line)["text"] for line in open(sys.argv[1], encoding="utf-8")]
def cpu(step):
    step()
    seconds = []
    for _ in range(3):
        started = time.process_time(); step(); seconds.append(time.process_time() - started)
    return statistics.median(seconds)
normalised = [normalise(t) for t in texts]
result = {"normalise": cpu(lambda: [normalise(t) for t in texts]),
          "fingerprints": cpu(lambda: fp.fingerprints(normalised, FingerprintConfig()))}
if hasattr(fp, "signatures"):
    from simhash_udf.core.config import SketchConfig
    result["signatures"] = cpu(lambda: fp.signatures(normalised, FingerprintConfig(), SketchConfig()))
print(json.dumps(result))
"""


# ---------------------------------------------------------------- pure helpers

def text_mb(texts: list[str]) -> float:
    """MB (10^6 bytes) of the texts in UTF-8."""
    return sum(len(t.encode("utf-8")) for t in texts) / 1e6


def with_near_copies(texts: list[str], name: str) -> list[dict[str, str]]:
    """Rows (`id`, `text`): every text, then a near-copy of every COPY_EVERY-th one."""
    rows = [{"id": f"{name}-{i}", "text": t} for i, t in enumerate(texts)]
    rows += [{"id": f"{name}-{i}-copy", "text": near_copy(t)} for i, t in enumerate(texts) if i % COPY_EVERY == 0]
    return rows


def first_rows_of_mb(texts: list[str], name: str, mb: float) -> list[dict[str, str]]:
    """The rows (`with_near_copies`) of the shortest prefix of texts whose rows hold at least
    `mb` MB of text; all of them when the texts are too few."""
    total, n = 0.0, len(texts)
    for i, text in enumerate(texts):
        total += text_mb([text]) + (text_mb([near_copy(text)]) if i % COPY_EVERY == 0 else 0.0)
        if total >= mb:
            n = i + 1
            break
    return with_near_copies(texts[:n], name)


def distinct_documents(paragraphs: list[str], mb: float, seed: int = SEED) -> list[str]:
    """Documents (`corpora.group_paragraphs`) of at least `mb` MB of text: the paragraphs in
    their order, then again in a new seeded order per repetition until the size is reached.
    A paragraph recurs once per repetition, each time among other paragraphs, so the
    documents are distinct texts."""
    documents = group_paragraphs(paragraphs)
    repetition = 0
    while text_mb(documents) < mb:
        repetition += 1
        shuffled = list(paragraphs)
        random.Random(seed + repetition).shuffle(shuffled)
        documents += group_paragraphs(shuffled)
    return documents


# ---------------------------------------------------------------- inputs

@dataclass(frozen=True)
class Input:
    """One input file of the benchmark: its language, size label, path and what it holds."""

    language: str
    size: str  # "small" or "big"
    path: Path
    html: bool
    documents: int
    mb: float  # MB of text, copies included


def write_rows(rows: list[dict[str, str]], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")


def build_inputs(quick: bool, languages: tuple[str, ...] = tuple(SIZES_MB)) -> list[Input]:
    """The inputs (small and big of each language: Chinese and English by default), written
    under CACHE."""
    sizes = {language: mb for language, mb in (QUICK_SIZES_MB if quick else SIZES_MB).items() if language in languages}
    zh = peoples_daily()
    zh_paragraphs = [p for document in zh.texts for p in document.split("\n")]
    en_pages = list(python_doc_html().texts)
    random.Random(SEED).shuffle(en_pages)
    texts = {"zh": distinct_documents(zh_paragraphs, sizes["zh"][1]), "en": en_pages}
    inputs = []
    for language, (small_mb, big_mb) in sizes.items():
        for size, mb in (("small", small_mb), ("big", big_mb)):
            rows = first_rows_of_mb(texts[language], language, mb)
            path = CACHE / f"{language}-{size}-{mb:g}mb-seed{SEED}.jsonl"
            write_rows(rows, path)  # rewritten every run (seconds): never a stale input
            inputs.append(Input(language, size, path, language == "en", len(rows), text_mb([r["text"] for r in rows])))
    return inputs


# ---------------------------------------------------------------- commits and their jobs

@dataclass(frozen=True)
class Tree:
    """A commit checked out as a worktree: the name the tables use, the revision asked for,
    its commit hash and the worktree's path."""

    name: str
    rev: str
    commit: str
    path: Path


def add_worktree(name: str, rev: str) -> Tree:
    commit = subprocess.run(["git", "rev-parse", "--verify", f"{rev}^{{commit}}"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout.strip()
    path = TREES / f"{name}-{commit[:10]}"
    if path.exists():  # left by an interrupted run
        remove_worktree(path)
    TREES.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "worktree", "add", "--detach", str(path), commit], cwd=ROOT, check=True,
                   capture_output=True, text=True)
    return Tree(name, rev, commit, path)


def remove_worktree(path: Path) -> None:
    subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=ROOT, capture_output=True, text=True)
    shutil.rmtree(path, ignore_errors=True)
    subprocess.run(["git", "worktree", "prune"], cwd=ROOT, capture_output=True, text=True)


def tree_env(tree: Tree) -> dict[str, str]:
    """The environment of a job in `tree`: its code first on the path (before the venv's
    editable install of the main tree), Python workers on this interpreter, driver 4g."""
    return {**os.environ, "PYTHONPATH": str(tree.path), "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_SUBMIT_ARGS": f"--driver-memory {DRIVER_MEMORY} pyspark-shell"}


def check_imports(tree: Tree) -> dict[str, str]:
    """Where the driver and a Python worker import simhash_udf from in `tree`'s environment;
    raises unless both are inside the tree."""
    result = subprocess.run([sys.executable, "-c", PROBE], cwd=tree.path, env=tree_env(tree),
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"the import probe failed in {tree.path}:\n{result.stderr[-2000:]}")
    found = json.loads(result.stdout.strip().splitlines()[-1])
    for side, file in found.items():
        if not Path(file).resolve().is_relative_to(tree.path.resolve()):
            raise RuntimeError(f"the {side} imports simhash_udf from {file}, not from {tree.path}")
    return found


class TreeCpu:
    """CPU seconds (user + system) of a process and its descendants (the job's Python, its JVM,
    the JVM's Python workers), sampled from /proc (Linux) every `interval` seconds: per process
    the last value seen, summed. The JVM is never reaped by the job's Python, so the rusage of
    children does not see it; what a process spends in its last interval is missed alike on
    both commits. `seconds_by_kind` splits the sum by process (see `PROCESS_KINDS`)."""

    def __init__(self, pid: int, interval: float = 0.2):
        self.pid, self.interval = pid, interval
        self.ticks: dict[int, int] = {}
        self.kinds: dict[int, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> TreeCpu:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def seconds(self) -> float:
        return sum(self.ticks.values()) / os.sysconf("SC_CLK_TCK")

    def seconds_by_kind(self) -> dict[str, float]:
        """`seconds` split by `process_kind`: every kind of PROCESS_KINDS, 0 when none ran."""
        by_kind = dict.fromkeys(PROCESS_KINDS, 0.0)
        for pid, ticks in self.ticks.items():
            by_kind[self.kinds[pid]] += ticks / os.sysconf("SC_CLK_TCK")
        return by_kind

    def _run(self) -> None:
        while not self._stop.is_set():
            children, todo = children_map(), [self.pid]
            while todo:
                pid = todo.pop()
                try:
                    with open(f"/proc/{pid}/stat") as f:
                        head, tail = f.read().rsplit(")", 1)
                except OSError:
                    continue
                fields = tail.split()
                # utime and stime: fields 14 and 15 of stat, 11 and 12 after the command's `)`.
                self.ticks[pid] = max(self.ticks.get(pid, 0), int(fields[11]) + int(fields[12]))
                # The name is read again each time: a forked process execs into another one.
                self.kinds[pid] = process_kind(head.split("(", 1)[1], pid == self.pid)
                todo.extend(children.get(pid, []))
            self._stop.wait(self.interval)


def text_stage_seconds(tree: Tree, item: Input) -> dict[str, float]:
    """`TEXT_STAGES` in `tree` on one input: CPU seconds of normalise, fingerprints and (where
    the commit has it) signatures."""
    result = subprocess.run([sys.executable, "-c", TEXT_STAGES, str(item.path)], cwd=tree.path, env=tree_env(tree),
                            capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def job_process(command: list[str], cwd: Path, env: dict[str, str], output: Path) -> tuple[float, dict]:
    """Run a job command (writing `output`) as a process: the CPU seconds of its process tree
    and its report.json; `output` is removed afterwards. Raises (with the log's tail) when the
    job fails."""
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with TreeCpu(process.pid) as cpu:
        stdout, stderr = process.communicate()
    try:
        if process.returncode != 0:
            raise RuntimeError(f"exit {process.returncode}: {(stderr or stdout)[-1500:]}")
        return cpu.seconds(), json.loads((output / "report.json").read_text())
    finally:
        shutil.rmtree(output, ignore_errors=True)


def run_job(tree: Tree, item: Input, output: Path) -> dict:
    """Run `tree`'s job on one input as a whole process; the parts of its report.json the
    benchmark shows. Raises (with the log's tail) when the job fails."""
    command = [sys.executable, "jobs/dedupe.py", "--input", str(item.path), "--format", "json",
               "--output", str(output), "--overwrite", "--master", MASTER, "--log-level", "WARNING",
               *(["--html"] if item.html else [])]
    cpu_s, report = job_process(command, tree.path, tree_env(tree), output)
    counts = report["counts"]
    return {
        "cpu_s": cpu_s,
        "stage_seconds": report.get("stage_seconds", {}),
        "total_seconds": report.get("total_seconds"),
        "counts": {k: counts[k] for k in ("documents", "kept", "exact_duplicates", "near_duplicates") if k in counts},
        "verified_pairs": report.get("join", {}).get("verified_pairs"),
        "sketch": report.get("sketch"),
    }


# ---------------------------------------------------------------- the measurement

def runs_json(timed: dict[tuple[str, str, str], Runs], outcomes: dict[tuple[str, str, str], list[dict]]) -> list[dict]:
    """The runs of every (language, size, commit) as the JSON report holds them."""
    return [
        {"language": lang, "size": size, "commit": commit, "wall_s": [round(s, 2) for s in runs.wall_s],
         "failures": runs.failures, "reports": outcomes[(lang, size, commit)]}
        for (lang, size, commit), runs in timed.items()
    ]


def measure(args: argparse.Namespace, command: str, snapshot: Path | None = None) -> dict:
    """Build the inputs and the worktrees, run both jobs on every input, remove the worktrees;
    the JSON report (`command`: how the document names this run), also written to `snapshot`
    after every run."""
    started = time.perf_counter()
    inputs = build_inputs(args.quick, args.languages)
    for item in inputs:
        log(f"commit_cost: input {item.language} {item.size}: {item.documents:,} documents, {item.mb:.2f} MB")
    trees = [add_worktree("base", args.base), add_worktree("head", args.head)]
    report: dict = {
        "when": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "cpu": cpu_model(),
        "command": command, "master": MASTER, "cores": int(MASTER.split("[")[1].rstrip("]")),
        "driver_memory": DRIVER_MEMORY,
        "repeats": args.repeats, "quick": args.quick, "load_start": load_average(),
        "commits": {t.name: {"rev": t.rev, "commit": t.commit} for t in trees},
        "inputs": [{"language": i.language, "size": i.size, "documents": i.documents, "mb": i.mb,
                    "file": i.path.name} for i in inputs],
    }
    try:
        for tree in trees:
            report["commits"][tree.name]["imports"] = check_imports(tree)
            log(f"commit_cost: {tree.name} = {tree.commit[:10]}, simhash_udf from {tree.path}")
        out = CACHE / "out"
        if not (args.quick or args.no_warm_up):  # JVM jars, dictionaries and Python modules in the page cache for everyone
            smallest = min(inputs, key=lambda i: i.mb)
            warm = CACHE / "warm.jsonl"
            warm.write_text("".join(smallest.path.read_text("utf-8").splitlines(keepends=True)[:20]), "utf-8")
            for tree in trees:
                run_job(tree, Input(smallest.language, "warm", warm, smallest.html, 20, 0.0), out / "warm")
        methods = {(item.language, item.size, tree.name): (lambda tree=tree, item=item: run_job(
            tree, item, out / f"{tree.name}-{item.language}-{item.size}")) for item in inputs for tree in trees}
        outcomes: dict[tuple[str, str, str], list[dict]] = {key: [] for key in methods}

        def record(key: tuple[str, str, str], action):  # keeps every run's report, not only the last
            def run() -> dict:
                outcomes[key].append(action())
                return outcomes[key][-1]
            return run

        seen: dict[tuple[str, str, str], Runs] = {}

        def progress(name: tuple[str, str, str], repeat: int, runs: Runs, failed: bool) -> None:
            told = f"failed: {runs.failures[-1]}" if failed else f"{runs.wall_s[-1]:.1f} s"
            log(f"commit_cost: run {repeat} {' '.join(name)}: {told}")
            seen[name] = runs
            report["runs"] = runs_json(seen, outcomes)
            if snapshot is not None:  # the runs so far survive an interrupted benchmark
                snapshot.write_text(json.dumps({**report, "seconds": time.perf_counter() - started,
                                                "load_end": load_average()}, indent=1))

        timed = interleaved({key: record(key, action) for key, action in methods.items()}, args.repeats,
                            catch=True, log=progress)
        report["runs"] = runs_json(timed, outcomes)
        text_input = next(i for i in inputs if i.language == "zh" and i.size == "small")
        report["text_stages"] = {"input": text_input.path.name, "mb": text_input.mb,
                                 **{tree.name: text_stage_seconds(tree, text_input) for tree in trees}}
    finally:
        for tree in trees:
            remove_worktree(tree.path)
    report["load_end"] = load_average()
    report["seconds"] = time.perf_counter() - started
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default=BASE, help="the commit to compare against (default: before issue 13)")
    parser.add_argument("--head", default="HEAD", help="the commit measured (default: HEAD)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="tiny inputs (for tests)")
    parser.add_argument("--languages", type=languages_arg, default=tuple(SIZES_MB),
                        help="comma-separated, of zh,en (default both; the tests' quick run takes zh alone)")
    parser.add_argument("--no-warm-up", action="store_true",
                        help="skip the warm-up runs (when the page cache is already warm)")
    parser.add_argument("--write", type=Path, default=None, help="write the markdown document here (docs/cost.md)")
    parser.add_argument("--json", type=Path, default=None, help="also write the JSON here")
    parser.add_argument("--from-json", type=Path, default=None,
                        help="render the document from a JSON this script wrote instead of measuring")
    args = parser.parse_args(argv)
    # A benchmark stopped by `kill` still removes its worktrees (the `finally` in measure).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.from_json:
        report = json.loads(args.from_json.read_text())
    else:
        report = measure(args, " ".join(["python -m bench.commit_cost", *(argv if argv is not None else sys.argv[1:])]),
                         args.json)
    if args.json and not args.from_json:
        args.json.write_text(json.dumps(report, indent=1))
    if any(not r["wall_s"] for r in report["runs"]):
        print(json.dumps(report["runs"], indent=1)[:5000], file=sys.stderr)
        print("commit_cost: some input has no successful run of a commit; no document", file=sys.stderr)
        return 1
    text = document(report)
    if args.write:
        args.write.write_text(text)
        log(f"commit_cost: wrote {args.write}")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
