"""Benchmark: the whole job on precomputed fingerprints against the plain band join alone
(issue 14, target 3).

    .venv/bin/python -m bench.job_vs_join [--sizes 4M,16M] [--quick] [--repeats 1]
                                          [--rev HEAD] [--driver-memory 8g] [--json out.json]

Prints a JSON document on stdout (bench/run_all.py renders it with `section_lines`).

Input per size: bench/synthetic.py's N distinct fingerprints (1% planted in clusters within
k = 3), written once with ids as documents.parquet (`id` = the fingerprint's row in
synthetic's file, `fingerprint`; rows in a seeded order) under build/bench-cache/job-vs-join/.
Methods, alternating in every repeat, each a whole process (start-up, reading, writing):
- job: `python jobs/dedupe.py --input documents.parquet --format parquet --id-col id
  --fingerprint-col fingerprint` (local[2], its defaults: clusters/, pairs/, deduped/, report);
- plain join: bench/join_scale.py's baseline, the k+1-band self-join in Spark SQL (four 16-bit
  bands, an equality join per band, `bit_count <= 3`, `DISTINCT`) over the documents'
  fingerprints, writing its pairs as Parquet, in a fresh local[2] Spark with join_scale's
  settings (its shuffle partitions, broadcast joins off).
Figures: each method's process wall seconds (median), their ratio job / plain join; the job's
report.json total_seconds and stage_seconds beside the plain join's seconds from reading to
written pairs; exactness: the job's pairs/ (ids mapped back to fingerprints) equal the plain
join's pairs, distances included. Peak RSS of each process tree.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from bench import synthetic
from bench.job_runs import (
    JobTree,
    bench_command,
    bench_env,
    emit_report,
    job_tree,
    last_json_line,
    measured_process,
    run_job,
    working_tree_commit,
)
from bench.job_throughput import verdict
from bench.join_scale import BASELINE_SQL, partitions_for
from bench.machine import load_average
from bench.runners import CACHE as BENCH_CACHE
from bench.runners import ROOT, bench_session, cached_input, log, write_documents
from bench.tables import fmt_n, load_text, parse_size, seconds_list

CACHE = BENCH_CACHE / "job-vs-join"
K = 3
SEED = 1
SIZES = [4_000_000, 16_000_000]
QUICK_SIZES = [250_000]
TARGETS = {4_000_000: 1.0, 16_000_000: 0.5}  # job / plain join, at most


# ---------------------------------------------------------------- inputs and pairs

def documents_input(n: int) -> tuple[Path, Path]:
    """(documents folder, synthetic's fingerprints file) for n: documents.parquet written once."""
    data = synthetic.generate(n, SEED, K)

    def build(folder: Path) -> dict:
        fps = synthetic.read_fingerprints(data)
        write_documents(folder / "documents.parquet", fps, np.random.default_rng([SEED, n]))
        return {"n": n, "planted": data.planted, "truth_pairs": data.truth_pairs}

    return cached_input(CACHE / f"n{n}-seed{SEED}-k{K}", build), data.fingerprints


def read_fingerprints(path: Path) -> np.ndarray:
    """synthetic's fingerprints.parquet as an int64 array (row i: the document of id i)."""
    import pyarrow.parquet as pq

    return pq.read_table(path, columns=["fingerprint"])["fingerprint"].to_numpy()


def pair_keys(fp_a: np.ndarray, fp_b: np.ndarray, distance: np.ndarray) -> np.ndarray:
    """Each pair as one sortable row (smaller fingerprint, larger, distance), sorted; the
    fingerprints in Spark's signed order, whichever order the pair came in."""
    a, b = np.minimum(fp_a, fp_b), np.maximum(fp_a, fp_b)
    rows = np.stack([a.astype(np.int64), b.astype(np.int64), distance.astype(np.int64)], axis=1)
    return rows[np.lexsort(rows.T[::-1])] if len(rows) else rows.reshape(0, 3)


def job_pairs(pairs_dir: Path, fingerprints: np.ndarray) -> np.ndarray:
    """The job's pairs/ (`id_a`, `id_b`, `distance`) as `pair_keys`: id i is fingerprints[i]."""
    import pyarrow.parquet as pq

    table = pq.read_table(pairs_dir, columns=["id_a", "id_b", "distance"])
    return pair_keys(fingerprints[table["id_a"].to_numpy()], fingerprints[table["id_b"].to_numpy()],
                     table["distance"].to_numpy())


def join_pairs(pairs_dir: Path) -> np.ndarray:
    """The plain join's pairs (`fp_a`, `fp_b`, `distance`) as `pair_keys`."""
    import pyarrow.parquet as pq

    table = pq.read_table(pairs_dir, columns=["fp_a", "fp_b", "distance"])
    return pair_keys(table["fp_a"].to_numpy(), table["fp_b"].to_numpy(), table["distance"].to_numpy())


def compare_pairs(job: np.ndarray, plain: np.ndarray) -> dict:
    """Equal sets? With the counts of pairs only one side has (duplicates count as extra)."""
    job_set = set(map(tuple, job.tolist()))
    plain_set = set(map(tuple, plain.tolist()))
    return {"job_pairs": len(job), "plain_pairs": len(plain), "equal": len(job) == len(job_set) and job_set == plain_set,
            "only_job": len(job_set - plain_set), "only_plain": len(plain_set - job_set),
            "job_repeated": len(job) - len(job_set)}


# ---------------------------------------------------------------- the plain join's worker

def join_worker(args: argparse.Namespace) -> int:
    """The plain band join over documents.parquet's fingerprints, pairs written; a JSON line."""
    n = args.n
    spark = bench_session("bench-job-vs-join-plain", args.driver_memory, conf={
        "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": str(partitions_for(n)),
        "spark.sql.autoBroadcastJoinThreshold": "-1"}, job_settings=False)
    try:
        started = time.perf_counter()
        spark.read.parquet(args.input).select("fingerprint").createOrReplaceTempView("fps")
        spark.sql(BASELINE_SQL.format(k=K)).write.mode("overwrite").parquet(args.output)
        print(json.dumps({"session_s": time.perf_counter() - started}))
    finally:
        spark.stop()
    return 0


def run_plain_join(documents: Path, n: int, output: Path, memory: str, timeout: float) -> dict:
    command = bench_command("job_vs_join", "--join-worker", "--input", str(documents), "--output", str(output),
                            "--n", str(n), "--driver-memory", memory)
    result = measured_process(command, ROOT, bench_env(memory), timeout)
    if result["returncode"] != 0:
        told = "timed out" if result["returncode"] is None else f"exit {result['returncode']}"
        raise RuntimeError(f"the plain join {told}: {result['stderr'][-1500:]}")
    return {k: v for k, v in result.items() if k not in ("stdout", "stderr", "returncode")} | last_json_line(
        result["stdout"])


# ---------------------------------------------------------------- the measurement

def measure_size(tree: JobTree, n: int, args: argparse.Namespace) -> dict:
    folder, fingerprints_file = documents_input(n)
    documents = folder / "documents.parquet"
    out = CACHE / "out"
    runs: dict[str, list[dict]] = {"job": [], "plain join": []}
    pairs: dict[str, np.ndarray] = {}
    for repeat in range(1, args.repeats + 1):
        for method in runs:
            target = out / f"{method.replace(' ', '-')}-{n}"
            shutil.rmtree(target, ignore_errors=True)
            try:
                if method == "job":
                    result = run_job(tree, ["--input", str(documents), "--format", "parquet", "--id-col", "id",
                                            "--fingerprint-col", "fingerprint"], target, args.driver_memory,
                                     args.timeout, keep_output=True)
                    pairs[method] = job_pairs(target / "pairs", read_fingerprints(fingerprints_file))
                else:
                    result = run_plain_join(documents, n, target, args.driver_memory, args.timeout)
                    pairs[method] = join_pairs(target)
            except RuntimeError as error:
                result = {"failed": str(error)[-600:]}
            finally:
                shutil.rmtree(target, ignore_errors=True)
            runs[method].append(result)
            told = result.get("failed") or f"{result['wall_s']:.1f} s wall"
            log(f"job_vs_join: {fmt_n(n)} run {repeat} {method}: {told}")
    ok = {m: [r for r in rs if "failed" not in r] for m, rs in runs.items()}
    wall = {m: statistics.median([r["wall_s"] for r in rs]) if rs else None for m, rs in ok.items()}
    entry: dict = {"n": n, "runs": runs, "wall_s": wall,
                   "ratio": wall["job"] / wall["plain join"] if wall["job"] and wall["plain join"] else None}
    if ok["job"]:
        entry["job_total_seconds"] = statistics.median([r["total_seconds"] for r in ok["job"]])
        entry["job_stage_seconds"] = ok["job"][-1]["stage_seconds"]
        entry["spark_jobs"] = ok["job"][-1].get("spark_jobs")
    if ok["plain join"]:
        entry["plain_session_s"] = statistics.median([r["session_s"] for r in ok["plain join"]])
    if len(pairs) == 2:
        entry["exactness"] = compare_pairs(pairs["job"], pairs["plain join"])
    return entry


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=None, help="comma-separated sizes (default 4M,16M; --quick 250k)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each method per size (median)")
    parser.add_argument("--rev", default=None, help="measure this commit's job (a git worktree)")
    parser.add_argument("--driver-memory", default="8g")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--join-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--input", help=argparse.SUPPRESS)
    parser.add_argument("--output", help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.join_worker:
        return join_worker(args)
    sizes = [parse_size(s) for s in args.sizes.split(",")] if args.sizes else (QUICK_SIZES if args.quick else SIZES)
    started = time.perf_counter()
    report: dict = {"k": K, "repeats": args.repeats, "driver_memory": args.driver_memory,
                    "load_start": load_average(), "results": []}
    with job_tree(args.rev) as tree:
        report["job_commit"] = (tree.commit or "")[:10] or working_tree_commit()
        for n in sizes:
            report["results"].append(measure_size(tree, n, args))
    return emit_report(report, started, args.json)


# ---------------------------------------------------------------- the document

SECTION_TITLE = "## 8. The job on precomputed fingerprints against the plain band join (issue 14)"


def section_lines(report: dict, command: str) -> list[str]:
    lines = [
        SECTION_TITLE,
        "",
        f"`{command}` (job at {report['job_commit']}; {report['repeats']} run(s) of each method per size, "
        f"alternating; medians; {report['seconds']:.0f} s in all; load average {load_text(report['load_start'])} at "
        f"its start, {load_text(report['load_end'])} at its end; driver memory {report['driver_memory']}).",
        "",
        "Input: `bench/synthetic.py`'s N distinct fingerprints (1% planted in clusters within 3 bits) as Parquet "
        "with ids. **job** = `python jobs/dedupe.py --format parquet --id-col id --fingerprint-col fingerprint` "
        "as a process (local[2], its defaults: clusters/, pairs/, deduped/, report); **plain join** = "
        "bench/join_scale.py's baseline (four 16-bit bands, an equality join per band, `bit_count <= 3`, "
        "`DISTINCT`) writing its pairs, in a fresh local[2] process. Both timed as whole processes (start-up, "
        "reading, writing); the job's report total_seconds and the plain join's seconds from reading to written "
        "pairs are shown beside. Exact = the job's pairs/ (ids mapped back to fingerprints) equal the plain join's "
        "pairs, distances included.",
        "",
        "| N | job wall s (runs) | plain join wall s (runs) | job / plain join | job total_seconds | plain join "
        "in-session s | peak RSS MB job / plain | pairs job / plain | exact |",
        "|---:|---|---|---:|---:|---:|---|---|---|",
    ]
    for e in report["results"]:
        runs = e["runs"]

        def walls(method: str, runs: dict = runs) -> str:
            ok = [r["wall_s"] for r in runs[method] if "failed" not in r]
            failed = len(runs[method]) - len(ok)
            return seconds_list(ok, 1) + (f" ({failed} failed)" if failed else "")

        def peak(method: str, runs: dict = runs) -> str:
            ok = [r["peak_rss"] for r in runs[method] if "failed" not in r]
            return f"{max(ok) / 2**20:,.0f}" if ok else "-"

        x = e.get("exactness")
        exact = ("-" if x is None else "yes" if x["equal"] else
                 f"NO ({x['only_job']:,} only in the job's, {x['only_plain']:,} only in the plain join's)")
        ratio = "-" if e["ratio"] is None else f"{e['ratio']:.2f}x"
        counts = "-" if x is None else f"{x['job_pairs']:,} / {x['plain_pairs']:,}"
        total = e.get("job_total_seconds")
        lines.append(
            f"| {fmt_n(e['n'])} | {walls('job')} | {walls('plain join')} | {ratio} | "
            f"{'-' if total is None else f'{total:.1f}'} | {e.get('plain_session_s', float('nan')):.1f} | "
            f"{peak('job')} / {peak('plain join')} | {counts} | {exact} |")
    lines.append("")
    for e in report["results"]:
        stages = e.get("job_stage_seconds")
        if stages:
            top = sorted(stages.items(), key=lambda kv: -kv[1])
            lines.append(f"- {fmt_n(e['n'])}: the job's stages (report.json `stage_seconds`): "
                         + ", ".join(f"{k} {v:.1f}" for k, v in top)
                         + (f"; Spark jobs {e['spark_jobs']}" if e.get("spark_jobs") is not None else "") + ".")
    lines += ["", "### Targets", "", "| target | measured | verdict |", "|---|---|---|"]
    for n, limit in TARGETS.items():
        e = next((e for e in report["results"] if e["n"] == n), None)
        r = e["ratio"] if e else None
        lines.append(f"| job / plain join at most {limit:.1f}x at {fmt_n(n)} (process wall) | "
                     f"{'not measured' if r is None else f'{r:.2f}x'} | "
                     f"{'not measured' if r is None else verdict(r, limit, at_least=False)} |")
    exact = [e for e in report["results"] if e.get("exactness")]
    lines.append(f"| the job's pairs equal the plain join's | "
                 f"{sum(e['exactness']['equal'] for e in exact)} of {len(report['results'])} sizes equal | "
                 f"{'met' if exact and len(exact) == len(report['results']) and all(e['exactness']['equal'] for e in exact) else 'not met'} |")
    lines.append("")
    return lines


if __name__ == "__main__":
    sys.exit(main())
