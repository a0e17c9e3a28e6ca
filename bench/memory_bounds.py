"""Benchmark: memory that could grow with the data, at two input sizes, beside a plain Spark job.

    .venv/bin/python -m bench.memory_bounds [--sizes 500000,2000000] [--driver-memory 4g]
                                            [--timeout 900] [--quick]

Prints a JSON document on stdout (for bench/run_all.py) and a table on stderr.

The places where one process could hold data proportional to the input (issue 11, item 9), and
what this input makes of each:

- **a giant cluster**: a quarter of the documents are exact copies of one page (one
  fingerprint, one cluster of N / 4 documents). `clusters.cluster_assignment` picks the kept
  document by partial aggregates, so no task gathers the cluster.
- **a hot bucket in one Python worker**: N / 20 distinct fingerprints share their 44 high
  bits and vary in the low 20 (`bench/skew.py`'s hot key): each band table whose key lies in
  the high bits puts all of them in one (table, key) bucket, and the numpy kernel holds a
  bucket in one Python worker (about 40 bytes a member, plus the summary's arrays). This one
  *does* grow with the bucket; the table shows by how much.
- **summary edges and matched fingerprints**: the hot run's summary is a spanning forest
  (fewer edges than members) joined to the pairs; a broadcast of it would put O(members) on
  the driver. The join lets Spark's adaptive execution choose (a broadcast only under its
  size threshold).

Each size runs the job (`jobs/dedupe.py` main through `python -m bench.skew --worker`,
`--fingerprint-col`, local[2], `--no-pairs` off) and, in the same invocation, a baseline: a
plain Spark job that reads the same Parquet, counts documents per fingerprint and writes that
as Parquet (no Python worker). Both in fresh processes; peak resident set of the driver JVM,
of the largest single Python worker, and of the whole process tree, sampled every 0.2 s.
What to read: the JVM's peak is bounded by `--driver-memory` in both (the heap is a cap,
not a measure), so compare the job's JVM with the baseline's; the largest Python worker is
the job's own, and its growth from the small to the large size is the hot bucket's.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from bench.runners import (
    CACHE,
    cached_input,
    module_command,
    read_meta,
    run_bounded,
    write_documents,
)
from bench.skew import job_command, worker_session

MEMORY_CACHE = CACHE / "memory"
HOT_KEY_FREE_BITS = 20
FORMAT = 1
MB = 1 << 20


def make_input(n: int, seed: int = 11) -> Path:
    """documents.parquet of `n` rows (cached): N/4 copies of one page, N/20 hot-key pages, the
    rest random. ids: copies 0.., hot-key pages next, then the rest."""

    def build(folder: Path) -> dict:
        rng = np.random.default_rng([seed, n])
        copies, hot = n // 4, n // 20
        copy, template = rng.integers(0, 2**64, size=2, dtype=np.uint64)
        low = np.uint64((1 << HOT_KEY_FREE_BITS) - 1)
        free = rng.choice(1 << HOT_KEY_FREE_BITS, size=hot, replace=False).astype(np.uint64)
        hot_pages = (template & ~low) | free
        rest = rng.integers(0, 2**64, size=n - copies - hot, dtype=np.uint64)
        fingerprints = np.concatenate([np.full(copies, copy, dtype=np.uint64), hot_pages, rest]).view(np.int64)
        # The rows in a random order: the giant cluster and the hot key spread over all partitions.
        write_documents(folder / "documents.parquet", fingerprints, rng)
        return {"n": n, "copies": copies, "hot_key_pages": hot}

    return cached_input(MEMORY_CACHE / f"n{n}-seed{seed}-v{FORMAT}", build)


def baseline_worker(args: argparse.Namespace) -> int:
    """The plain Spark job: read, count documents per fingerprint, write Parquet."""
    spark = worker_session("bench-memory-baseline", args.driver_memory)
    try:
        source, target = args.job_args
        spark.read.parquet(source).groupBy("fingerprint").count().write.mode("overwrite").parquet(target)
    finally:
        spark.stop()
    return 0


def run_job(folder: Path, memory: str, timeout: float) -> dict:
    output = folder / "out-job"
    shutil.rmtree(output, ignore_errors=True)
    result, _ = run_bounded(job_command(folder, output, memory), timeout)
    if "status" not in result:
        report = json.loads((output / "report.json").read_text())
        meta = read_meta(folder)
        clusters = pq.read_table(output / "clusters", columns=["id", "cluster_id"]).to_pandas()
        copies = clusters[clusters["id"] < meta["copies"]]
        result.update(
            status="ok",
            rows=len(clusters),
            giant_cluster_is_one=bool(copies["cluster_id"].nunique() == 1 and len(copies) == meta["copies"]),
            largest_hot_bucket=max((b["size"] for b in report["join"].get("hot_buckets", [])), default=0),
            summary_edges=report["join"].get("summary_edges", 0),
        )
    shutil.rmtree(output, ignore_errors=True)
    return result


def run_baseline(folder: Path, memory: str, timeout: float) -> dict:
    output = folder / "out-baseline"
    shutil.rmtree(output, ignore_errors=True)
    command = module_command("memory_bounds", "--baseline-worker", "--driver-memory", memory, "--",
                             str(folder / "documents.parquet"), str(output))
    result, _ = run_bounded(command, timeout)
    result.setdefault("status", "ok")
    shutil.rmtree(output, ignore_errors=True)
    return result


def _mb(value: int | None) -> str:
    return f"{value / MB:,.0f}" if value else "-"


def table(report: dict) -> list[str]:
    lines = [
        "| documents | run | wall (s) | driver JVM peak (MB) | largest Python worker (MB) | process tree (MB) | hot bucket | summary edges |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for size in report["sizes"]:
        for name in ("baseline", "job"):
            r = size[name]
            if r.get("status") != "ok":
                lines.append(f"| {size['n']:,} | {name} | {r.get('wall_s', 0):.0f} | {r['status']} | | | | |")
                continue
            lines.append(
                f"| {size['n']:,} | {name} | {r['wall_s']:.0f} | {_mb(r['peak_jvm_rss'])} | "
                f"{_mb(r['peak_python_worker_rss'])} | {_mb(r['peak_rss'])} | "
                f"{r.get('largest_hot_bucket', '') and format(r['largest_hot_bucket'], ',')} | "
                f"{r.get('summary_edges', '') if name == 'job' else ''} |"
            )
    small, large = report["sizes"][0], report["sizes"][-1]
    if small["job"].get("status") == large["job"].get("status") == "ok" and len(report["sizes"]) > 1:
        growth = large["n"] / small["n"]
        for key, label in (("peak_jvm_rss", "driver JVM"), ("peak_python_worker_rss", "largest Python worker")):
            job = large["job"][key] / max(1, small["job"][key])
            base = large["baseline"][key] / max(1, small["baseline"][key]) if large["baseline"].get(key) else None
            lines.append(
                f"\n{label}: x{job:.2f} from {small['n']:,} to {large['n']:,} documents (x{growth:.0f} the input)"
                + (f"; the baseline's x{base:.2f}" if base else "")
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="500000,2000000", help="documents per run, comma-separated")
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per run before it is killed")
    parser.add_argument("--quick", action="store_true", help="one small size (a smoke run)")
    parser.add_argument("--baseline-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("job_args", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.baseline_worker:
        return baseline_worker(args)
    sizes = [100_000] if args.quick else [int(s) for s in args.sizes.split(",")]
    report = {"driver_memory": args.driver_memory, "sizes": []}
    for n in sizes:
        folder = make_input(n)
        # Baseline first, then the job, at each size: the same machine state for both.
        entry = {"n": n, "baseline": run_baseline(folder, args.driver_memory, args.timeout),
                 "job": run_job(folder, args.driver_memory, args.timeout)}
        report["sizes"].append(entry)
        print(f"{n:,}: baseline {entry['baseline'].get('status')}, job {entry['job'].get('status')}", file=sys.stderr)
    report["table"] = table(report)
    print("\n".join(report["table"]), file=sys.stderr)
    print(json.dumps(report, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
