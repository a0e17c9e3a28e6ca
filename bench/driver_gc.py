"""Benchmark: the driver JVM's garbage collector, the job's (parallel) against the JDK's default (G1).

    .venv/bin/python -m bench.driver_gc [--inputs sample,en,fingerprints] [--repeats 3]
                                        [--driver-memory 8g] [--write bench/RESULTS-gc.md] [--quick]

The job as a process (`bench.job_runs.run_job`: `python jobs/dedupe.py ... --master local[2]`,
the working tree's code), once per collector in every repeat, taking turns
(`runners.interleaved`), so a change in the machine's load falls on both alike:
- parallel: the job as shipped (`run.session.DRIVER_GC`, `-XX:+UseParallelGC`);
- g1: the same job with `--conf spark.driver.extraJavaOptions=-XX:+UseG1GC` in
  PYSPARK_SUBMIT_ARGS, the way a user picks another collector (the job then adds none);
- serial (only when named in --collectors): `-XX:+UseSerialGC` the same way.
Inputs: sample = examples/sample.jsonl (49 documents: start-up); en = bench/job_throughput.py's
big input, 200 MB of English text (distinct texts, a near copy of every tenth); zh = the first
50 MB of its Chinese one; fingerprints = bench/job_vs_join.py's 4M precomputed
fingerprints (`--fingerprint-col`). Reported per input and collector: median wall seconds of the
process, report.json's total_seconds, CPU seconds and peak resident memory of the process tree
(driver JVM and Python workers), and each collector's ratio to g1; the job's counts must be the
same under every collector (a collector changes no result). Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from bench import job_throughput, job_vs_join
from bench.job_runs import job_tree, run_job, working_tree_commit
from bench.machine import cpu_model, load_average
from bench.runners import CACHE, ROOT, interleaved, log
from bench.tables import load_text, table_lines

COLLECTORS = {
    "parallel": None,  # the job's own choice
    "g1": "-XX:+UseG1GC",
    "serial": "-XX:+UseSerialGC",
}
INPUTS = ("sample", "en", "zh", "fingerprints")
FINGERPRINTS = 4_000_000
QUICK_FINGERPRINTS = 200_000


def input_args(name: str, quick: bool) -> tuple[list[str], str]:
    """(the job's input arguments, a description) of one input, built once under the cache."""
    if name == "sample":
        return ["--input", str(ROOT / "examples" / "sample.jsonl")], "examples/sample.jsonl, 49 documents"
    if name in ("en", "zh"):
        mb = 2.0 if quick else (200.0 if name == "en" else 50.0)
        item = next(i for i in job_throughput.build_inputs({name: (mb, mb)}) if i["size"] == "big")
        return (["--input", item["path"], "--format", "json"],
                f"{item['mb']:.0f} MB of {'English' if name == 'en' else 'Chinese'} text, {item['documents']:,} documents")
    n = QUICK_FINGERPRINTS if quick else FINGERPRINTS
    folder, _ = job_vs_join.documents_input(n)
    return (["--input", str(folder / "documents.parquet"), "--format", "parquet", "--id-col", "id",
             "--fingerprint-col", "fingerprint"], f"{n:,} precomputed fingerprints (`--fingerprint-col`)")


def collector_env(option: str | None, driver_memory: str) -> dict[str, str]:
    """The run's PYSPARK_SUBMIT_ARGS: the driver memory, and the collector when not the job's."""
    chosen = f" --conf spark.driver.extraJavaOptions={option}" if option else ""
    return {"PYSPARK_SUBMIT_ARGS": f"--driver-memory {driver_memory}{chosen} pyspark-shell"}


def summarise(runs: list[dict]) -> dict:
    """Medians of a collector's runs on one input."""
    return {
        "wall_s": statistics.median(r["wall_s"] for r in runs),
        "total_seconds": statistics.median(r["total_seconds"] for r in runs),
        "cpu_s": statistics.median(r["cpu_s"] for r in runs),
        "peak_rss": max(r["peak_rss"] for r in runs),
        "walls": [r["wall_s"] for r in runs],
    }


def measure(args: argparse.Namespace) -> dict:
    """Every (input, collector) run, `args.repeats` times each, collectors taking turns."""
    report: dict = {"commit": working_tree_commit(), "cpu": cpu_model(), "load_start": load_average(),
                    "repeats": args.repeats, "driver_memory": args.driver_memory, "inputs": {}}
    with job_tree(None) as tree:
        for name in args.inputs:
            job_args, description = input_args(name, args.quick)
            output = CACHE / "driver-gc" / "out"
            results: dict[str, list[dict]] = {c: [] for c in args.collectors}

            def one_run(collector: str, name: str = name, job_args: list[str] = job_args):
                def run() -> None:
                    env = collector_env(COLLECTORS[collector], args.driver_memory)
                    results[collector].append(run_job(tree, job_args, output, args.driver_memory, env=env))
                    log(f"driver_gc: {name} {collector}: {results[collector][-1]['wall_s']:.1f} s wall")
                return run

            interleaved({c: one_run(c) for c in args.collectors}, args.repeats)
            counts = {c: [r["counts"] for r in runs] for c, runs in results.items()}
            first = counts[args.collectors[0]][0]
            report["inputs"][name] = {
                "description": description,
                "collectors": {c: summarise(runs) for c, runs in results.items()},
                "same_counts": all(c == first for runs in counts.values() for c in runs),
            }
    report["load_end"] = load_average()
    return report


def lines(report: dict, command: str) -> list[str]:
    """The markdown of a run: one table, a row per (input, collector)."""
    rows = []
    for name, entry in report["inputs"].items():
        collectors = entry["collectors"]
        base = collectors.get("g1")
        for collector, s in collectors.items():
            ratio = f"{s['wall_s'] / base['wall_s']:.2f}x" if base and collector != "g1" else ""
            rows.append([entry["description"], collector + (" (the job's)" if collector == "parallel" else ""),
                         f"{s['wall_s']:.1f}", ", ".join(f"{w:.1f}" for w in s["walls"]),
                         f"{s['total_seconds']:.1f}", f"{s['cpu_s']:.0f}", f"{s['peak_rss'] / 2**20:,.0f}",
                         ratio, "yes" if entry["same_counts"] else "NO"])
    return [
        "# The driver JVM's garbage collector",
        "",
        f"Written by `{command}` (commit {report['commit']}, {report['cpu']}; load average "
        f"{load_text(report['load_start'])} at its start, {load_text(report['load_end'])} at its end). "
        f"The job as a process, local[2], driver memory {report['driver_memory']}, {report['repeats']} runs "
        "of each collector taking turns; medians. Do not edit by hand.",
        "",
        *table_lines(["input", "collector", "wall s (median)", "runs (s)", "report total_seconds",
                      "CPU s", "peak RSS MB", "wall / g1's", "same counts"], rows, right="..rrrrrr."),
        "",
        "parallel = `-XX:+UseParallelGC`, what `run.session.get_session` and submit.sh give the driver "
        "JVM they start; g1 = the JDK's default collector, chosen with `--conf "
        "spark.driver.extraJavaOptions=-XX:+UseG1GC` (the job then adds no collector of its own). "
        "Peak RSS: the process tree (driver JVM and Python workers), sampled every 0.2 s, the largest "
        "of the runs.",
        "",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", default="sample,en,fingerprints", help=f"some of {','.join(INPUTS)}")
    parser.add_argument("--collectors", default="parallel,g1", help=f"some of {','.join(COLLECTORS)}")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--driver-memory", default="8g")
    parser.add_argument("--quick", action="store_true", help="2 MB of text and 200k fingerprints")
    parser.add_argument("--write", type=Path, default=None, help="write the table here (e.g. bench/RESULTS-gc.md)")
    args = parser.parse_args(argv)
    args.inputs = [i for i in args.inputs.split(",") if i]
    args.collectors = [c for c in args.collectors.split(",") if c]
    unknown = [i for i in args.inputs if i not in INPUTS] + [c for c in args.collectors if c not in COLLECTORS]
    if unknown:
        parser.error(f"unknown input or collector: {', '.join(unknown)}")
    started = time.perf_counter()
    report = measure(args)
    report["seconds"] = time.perf_counter() - started
    command = "python -m bench.driver_gc " + " ".join(argv if argv is not None else sys.argv[1:])
    text = "\n".join(lines(report, command.strip()))
    if args.write:
        args.write.write_text(text)
    print(json.dumps(report, indent=1))
    print(text, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
