"""Benchmark: the whole job under two PySpark installs (issue 14, "Spark": 4.0.5 pinned, 4.3 current).

    .venv/bin/python -m bench.spark_versions --venv-a .venv --venv-b /work/venv43
                                              [--mb 20] [--repeats 3] [--rev HEAD] [--quick] [--json out.json]

Each virtualenv holds the project's pins with one PySpark (venv-a: the pinned one; venv-b:
the candidate, e.g. `pyspark==4.3.0`, installed from a clone whose pyproject.toml says so).
Both run the SAME code: `--rev` (default HEAD) checked out as a git worktree under
build/commit-cost/ (removed at the end; the working tree, where others edit, is never run), put
first on PYTHONPATH, cwd the worktree; a probe checks that each venv's driver and a Spark
Python worker import `simhash_udf` from the worktree and prints its PySpark version.

The job runs as a whole process, `<venv>/bin/python jobs/dedupe.py --input ... --format json
--output ... --master local[2]`, driver 4g (PYSPARK_SUBMIT_ARGS, which also carries a variant's
`--conf`), Python workers on the venv's interpreter. Inputs:
- sample: examples/sample.jsonl (49 pages; start-up dominates);
- zh: `--mb` MB of Chinese text built as bench/commit_cost.py builds its inputs (People's
  Daily paragraphs regrouped into distinct documents, a near-copy of every tenth), under
  build/bench-cache/spark-versions/.
Variants (every repeat runs each (input, variant) in turn, `runners.interleaved`, after one
warm-up run per venv on the sample): `a` and `b` with the job's settings; `b-uds`, venv-b
with `spark.python.unix.domain.socket.enabled=true` (4.1+: JVM <-> Python workers over a Unix
socket instead of TCP loopback). Arrow-optimised regular Python UDFs
(`spark.sql.execution.pythonUDF.arrow.enabled`, on by default since 4.1) are no variant: the
job has no regular Python UDF (its UDFs are pandas UDFs and mapInArrow, Arrow already), so
the setting changes no plan of the job.

Printed: per input and variant the median wall seconds and median CPU seconds of the job's
process tree (JVM and Python workers included), each variant's ratio to `a`, and whether
every variant's counts (documents, kept, exact and near duplicates, verified pairs) equal
`a`'s; with both inputs, each variant's wall and CPU seconds per extra MB (the big input's
median less the sample's, over the MB between them: start-up cancelled). --json keeps every
run (rewritten after each run).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from bench.commit_cost import (
    SEED,
    Input,
    Tree,
    add_worktree,
    distinct_documents,
    first_rows_of_mb,
    job_process,
    remove_worktree,
    text_mb,
    write_rows,
)
from bench.corpora import peoples_daily
from bench.machine import cpu_model, load_average
from bench.runners import CACHE as BENCH_CACHE
from bench.runners import ROOT, Runs, interleaved, log

CACHE = BENCH_CACHE / "spark-versions"
SAMPLE = ROOT / "examples" / "sample.jsonl"
MASTER = "local[2]"
DRIVER_MEMORY = "4g"
COUNT_KEYS = ("documents", "kept", "exact_duplicates", "near_duplicates")

# Run by each venv's interpreter in the worktree: its PySpark, and where the driver and a
# Spark Python worker import simhash_udf from.
PROBE = """
import json, sys, pyspark, pandas, pyarrow, simhash_udf
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
worker = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("simhash_udf").__file__).collect()[0]
spark.stop()
print(json.dumps({"pyspark": pyspark.__version__, "pandas": pandas.__version__, "pyarrow": pyarrow.__version__,
                  "python": sys.version.split()[0], "driver": simhash_udf.__file__, "worker": worker}))
"""


@dataclass(frozen=True)
class Variant:
    """One way of running the job: a name for the tables, a venv and extra Spark settings."""

    name: str
    venv: Path
    conf: dict[str, str] = field(default_factory=dict)

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"


def variant_env(variant: Variant, tree: Tree) -> dict[str, str]:
    """The environment of a job of `variant` in `tree`: the tree's code first on the path
    (before the venv's editable install), Python workers on the venv's interpreter, driver
    4g and the variant's settings through PYSPARK_SUBMIT_ARGS."""
    confs = " ".join(f"--conf {key}={value}" for key, value in variant.conf.items())
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME")}
    return {**env, "PYTHONPATH": str(tree.path), "PYSPARK_PYTHON": str(variant.python),
            "PATH": f"{variant.venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
            "PYSPARK_SUBMIT_ARGS": f"--driver-memory {DRIVER_MEMORY} {confs} pyspark-shell".replace("  ", " ")}


def probe(variant: Variant, tree: Tree) -> dict[str, str]:
    """`PROBE` under `variant`; raises unless the driver and a worker import simhash_udf from the tree."""
    result = subprocess.run([str(variant.python), "-c", PROBE], cwd=tree.path, env=variant_env(variant, tree),
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"the probe failed under {variant.venv}:\n{result.stderr[-2000:]}")
    found = json.loads(result.stdout.strip().splitlines()[-1])
    for side in ("driver", "worker"):
        if not Path(found[side]).resolve().is_relative_to(tree.path.resolve()):
            raise RuntimeError(f"{variant.name}: the {side} imports simhash_udf from {found[side]}, not {tree.path}")
    return found


def run_job(variant: Variant, tree: Tree, item: Input, output: Path) -> dict:
    """`variant`'s job on one input as a whole process: CPU seconds of its process tree and
    the counts of its report.json. Raises (with the log's tail) when the job fails."""
    command = [str(variant.python), "jobs/dedupe.py", "--input", str(item.path), "--format", "json",
               "--output", str(output), "--overwrite", "--master", MASTER, "--log-level", "WARNING"]
    cpu_s, report = job_process(command, tree.path, variant_env(variant, tree), output)
    counts = report["counts"]
    return {
        "cpu_s": cpu_s,
        "stage_seconds": report.get("stage_seconds", {}),
        "counts": {k: counts[k] for k in COUNT_KEYS if k in counts},
        "verified_pairs": report.get("join", {}).get("verified_pairs"),
    }


def build_inputs(mb: float) -> list[Input]:
    """The sample and `mb` MB of distinct Chinese documents with near-copies (commit_cost's way)."""
    sample_rows = [json.loads(line) for line in SAMPLE.read_text("utf-8").splitlines() if line.strip()]
    inputs = [Input("sample", "sample", SAMPLE, False, len(sample_rows),
                    text_mb([str(r.get("text") or "") for r in sample_rows]))]
    paragraphs = [p for document in peoples_daily().texts for p in document.split("\n")]
    rows = first_rows_of_mb(distinct_documents(paragraphs, mb), "zh", mb)
    path = CACHE / f"zh-{mb:g}mb-seed{SEED}.jsonl"
    write_rows(rows, path)  # rewritten every run (seconds): never a stale input
    inputs.append(Input("zh", f"{mb:g}MB", path, False, len(rows), text_mb([r["text"] for r in rows])))
    return inputs


# ---------------------------------------------------------------- figures

def summary(runs: list[dict], inputs: list[Input], variants: list[Variant]) -> list[dict]:
    """Per (input, variant): repeats, median wall and CPU seconds, ratios to the first variant,
    and whether its counts equal the first variant's in every run."""
    rows = []
    for item in inputs:
        base = None
        for variant in variants:
            mine = next(r for r in runs if r["input"] == item.language and r["variant"] == variant.name)
            if not mine["wall_s"]:
                rows.append({"input": item.language, "variant": variant.name, "runs": 0, "failures": mine["failures"]})
                continue
            wall = statistics.median(mine["wall_s"])
            cpu = statistics.median([r["cpu_s"] for r in mine["reports"]])
            outcome = {json.dumps([r["counts"], r["verified_pairs"]], sort_keys=True) for r in mine["reports"]}
            row = {"input": item.language, "variant": variant.name, "runs": len(mine["wall_s"]),
                   "wall_median_s": round(wall, 2), "cpu_median_s": round(cpu, 2), "outcomes": sorted(outcome),
                   "failures": mine["failures"]}
            if base is None:
                base = row
            else:
                row["wall_ratio"] = round(wall / base["wall_median_s"], 3)
                row["cpu_ratio"] = round(cpu / base["cpu_median_s"], 3)
                row["same_counts"] = row["outcomes"] == base["outcomes"]
            rows.append(row)
    return rows


def per_extra_mb(rows: list[dict], inputs: list[dict]) -> dict[str, dict[str, float]]:
    """Per variant, when both inputs ran: median wall and CPU seconds per extra MB of text,
    (big - sample) / (MB_big - MB_sample), which cancels the fixed cost (JVM, imports, stages)."""
    mb = {i["input"]: i["mb"] for i in inputs}
    if not {"sample", "zh"} <= mb.keys():
        return {}
    found: dict[str, dict[str, float]] = {}
    for variant in {r["variant"] for r in rows}:
        mine = {r["input"]: r for r in rows if r["variant"] == variant and r["runs"]}
        if {"sample", "zh"} <= mine.keys():
            extra = mb["zh"] - mb["sample"]
            found[variant] = {f"{what}_s_per_mb": round((mine["zh"][f"{what}_median_s"]
                                                         - mine["sample"][f"{what}_median_s"]) / extra, 2)
                              for what in ("wall", "cpu")}
    return found


def table(rows: list[dict]) -> str:
    lines = ["| input | variant | runs | wall median s | ratio | CPU median s | ratio | same counts |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        if not r["runs"]:
            lines.append(f"| {r['input']} | {r['variant']} | 0 | failed: {r['failures'][:1]} | | | | |")
            continue
        lines.append(f"| {r['input']} | {r['variant']} | {r['runs']} | {r['wall_median_s']:.1f} | "
                     f"{r.get('wall_ratio', 1.0):.3f} | {r['cpu_median_s']:.1f} | {r.get('cpu_ratio', 1.0):.3f} | "
                     f"{r.get('same_counts', '-')} |")
    return "\n".join(lines)


# ---------------------------------------------------------------- the measurement

def measure(args: argparse.Namespace, command: str) -> dict:
    started = time.perf_counter()
    wanted = {"sample"} if args.quick else set(args.inputs.split(","))
    inputs = [i for i in build_inputs(args.mb) if i.language in wanted]
    for item in inputs:
        log(f"spark_versions: input {item.language}: {item.documents:,} documents, {item.mb:.2f} MB")
    variants = [Variant("a", args.venv_a.resolve()), Variant("b", args.venv_b.resolve())]
    if not args.no_uds:
        variants.append(Variant("b-uds", args.venv_b.resolve(), {"spark.python.unix.domain.socket.enabled": "true"}))
    tree = add_worktree("spark-versions", args.rev)
    report: dict = {
        "when": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "cpu": cpu_model(), "command": command,
        "master": MASTER, "driver_memory": DRIVER_MEMORY, "repeats": args.repeats, "commit": tree.commit,
        "load_start": load_average(),
        "inputs": [{"input": i.language, "documents": i.documents, "mb": round(i.mb, 3), "file": i.path.name}
                   for i in inputs],
        "variants": [{"name": v.name, "venv": str(v.venv), "conf": v.conf} for v in variants],
    }
    try:
        for variant, entry in zip(variants, report["variants"]):
            entry["probe"] = probe(variant, tree)
            log(f"spark_versions: {variant.name}: pyspark {entry['probe']['pyspark']}, pandas "
                f"{entry['probe']['pandas']}, pyarrow {entry['probe']['pyarrow']} ({variant.venv})")
        out = CACHE / "out"
        if not (args.quick or args.no_warm_up):  # jars, dictionaries and modules of both venvs in the page cache
            for variant in variants[:2]:
                run_job(variant, tree, build_inputs(args.mb)[0], out / "warm")
        outcomes: dict[tuple[str, str], list[dict]] = {}

        def method(variant: Variant, item: Input):
            def run() -> dict:
                result = run_job(variant, tree, item, out / f"{variant.name}-{item.language}")
                outcomes.setdefault((item.language, variant.name), []).append(result)
                return result
            return run

        methods = {(item.language, v.name): method(v, item) for item in inputs for v in variants}
        seen: dict[tuple[str, str], Runs] = {}

        def runs_json() -> list[dict]:
            return [{"input": key[0], "variant": key[1], "wall_s": [round(s, 2) for s in runs.wall_s],
                     "failures": runs.failures, "reports": outcomes.get(key, [])} for key, runs in seen.items()]

        def progress(name: tuple[str, str], repeat: int, runs: Runs, failed: bool) -> None:
            told = f"failed: {runs.failures[-1]}" if failed else f"{runs.wall_s[-1]:.1f} s"
            log(f"spark_versions: run {repeat} {name[0]} {name[1]}: {told} (load {load_average()})")
            seen[name] = runs
            if args.json is not None:  # the runs so far survive an interrupted benchmark
                args.json.write_text(json.dumps({**report, "runs": runs_json()}, indent=1))

        interleaved(methods, args.repeats, catch=True, log=progress)
        report["runs"] = runs_json()
    finally:
        remove_worktree(tree.path)
    report["summary"] = summary(report["runs"], inputs, variants)
    report["per_extra_mb"] = per_extra_mb(report["summary"], report["inputs"])
    report["load_end"] = load_average()
    report["seconds"] = round(time.perf_counter() - started, 1)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv-a", type=Path, default=ROOT / ".venv", help="the baseline venv (the pinned PySpark)")
    parser.add_argument("--venv-b", type=Path, required=True, help="the candidate venv (e.g. pyspark 4.3)")
    parser.add_argument("--mb", type=float, default=20.0, help="MB of Chinese text of the big input")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rev", default="HEAD", help="the commit both venvs run")
    parser.add_argument("--no-uds", action="store_true", help="leave out venv-b with Unix-socket workers")
    parser.add_argument("--inputs", default="sample,zh", help="which inputs, of sample and zh (comma-separated)")
    parser.add_argument("--no-warm-up", action="store_true", help="skip the warm-up runs (page cache already warm)")
    parser.add_argument("--quick", action="store_true", help="the sample only, no warm-up (for a smoke test)")
    parser.add_argument("--json", type=Path, default=None, help="write every run here (after each run)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the `finally` removes the worktree
    report = measure(args, " ".join(["python -m bench.spark_versions", *(argv if argv is not None else sys.argv[1:])]))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    print(f"commit {report['commit'][:10]}, {report['cpu']}, load {report['load_start']} -> {report['load_end']}, "
          f"{report['seconds']:.0f} s")
    for v in report["variants"]:
        p = v["probe"]
        print(f"{v['name']}: pyspark {p['pyspark']}, pandas {p['pandas']}, pyarrow {p['pyarrow']}, conf {v['conf']}")
    print(table(report["summary"]))
    for name, figures in sorted(report["per_extra_mb"].items()):
        print(f"{name}: per extra MB {figures['wall_s_per_mb']} wall s, {figures['cpu_s_per_mb']} CPU s")
    return 0 if all(r["runs"] for r in report["summary"]) else 1


if __name__ == "__main__":
    sys.exit(main())
