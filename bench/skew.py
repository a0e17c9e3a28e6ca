"""Benchmark: the whole job on skewed input (a template's pages, exact copies, a hot key).

    .venv/bin/python -m bench.skew [--quick] [--n 1000000] [--timeout 600] [--driver-memory 4g]
                                   [--runs template:no-pairs,template:pairs,hot-key:no-pairs]

Prints a JSON document on stdout (for bench/run_all.py) and a summary on stderr.

Input: documents as Parquet, `id` (long) and `fingerprint` (long), run through the job's own
entry point (`jobs/dedupe.py` main with `--fingerprint-col fingerprint`, local[2]), so the
copies are documents with ids and every stage after fingerprinting runs as in production:

- `template`: of N documents, 100k are one template's pages: the template's fingerprint
  with 1 or 2 random bits flipped (within 2 bits of the template, so within k = 3 of it and
  within 4 of each other). 64-bit words within 2 bits of one word number only 2,081, so
  these 100k pages share 2,081 distinct fingerprints; 10k further documents are exact
  copies of one page (one fingerprint); the rest are random.
- `hot-key`: the same, but the 100k template pages have distinct fingerprints that agree on
  the template's 44 high bits and vary at random in the low 20: every band table whose key
  lies in the high bits puts all 100k in one bucket (5 billion candidate pairs per such
  table in a join that expands buckets). At 1M documents they are one component: each has
  ~130 neighbours within 3 bits among the others (fewer at smaller --n, where they split).

The template runs with `--no-pairs` and without, the hot key with `--no-pairs` (--runs),
each in a fresh process bounded by --timeout (a run that exceeds it is killed and reported as such); wall time and peak memory
(the summed resident set of the process tree: driver JVM and Python workers). Checks, on the
job's clusters/: the template's pages are clustered exactly as their connected components
under "within 3 bits", computed here apart from the job (`template_components`: one
component for the template; for the hot key, scipy on the graph of all pairs within 3 bits),
and the copies are one cluster; the report's hot buckets are printed. For comparison, each scenario's distinct fingerprints also
go through the one-level Spark SQL join alone (`bench/sql_join.py`'s `sql_near_duplicate_pairs`, the join
before the two-level kernel; a self-join per table that expands every bucket into all its
pairs), bounded by --sql-timeout.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bench.machine import load_average
from bench.runners import (
    CACHE,
    bench_session,
    cached_input,
    module_command,
    read_meta,
    run_bounded,
    write_documents,
)

SKEW_CACHE = CACHE / "skew"
TEMPLATE_PAGES = 100_000
COPIES = 10_000
HOT_KEY_FREE_BITS = 20
FORMAT = 2
DEFAULT_RUNS = "template:no-pairs,template:pairs,hot-key:no-pairs"


def template_components(pages: np.ndarray, scenario: str, k: int = 3) -> np.ndarray:
    """The connected components of the template's pages under "within k bits", computed
    here apart from the job: a label per page (0..components - 1).

    template: every page is within 2 bits of the template, which is itself a page, so one
    component. hot-key: pages differ only in the low HOT_KEY_FREE_BITS bits; every page's
    neighbours are found by XOR with each mask of 1..k of those bits, looked up in a table
    of the 2^20 values, and scipy labels the components of that graph.
    """
    if scenario == "template":
        return np.zeros(len(pages), dtype=np.int64)
    from itertools import combinations

    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    size = 1 << HOT_KEY_FREE_BITS
    free = (pages & np.uint64(size - 1)).astype(np.int64)
    index_of = np.full(size, -1, dtype=np.int64)
    index_of[free] = np.arange(len(free))
    masks = np.array([sum(1 << b for b in bits) for d in range(1, k + 1)
                      for bits in combinations(range(HOT_KEY_FREE_BITS), d)], dtype=np.int64)
    rows, cols = [], []
    for start in range(0, len(masks), 64):
        neighbour = index_of[free[:, None] ^ masks[None, start:start + 64]]
        i, j = np.nonzero(neighbour >= 0)
        rows.append(i)
        cols.append(neighbour[i, j])
    rows_a, cols_a = np.concatenate(rows), np.concatenate(cols)
    graph = coo_matrix((np.ones(len(rows_a), dtype=np.int8), (rows_a, cols_a)), shape=(len(free), len(free)))
    _, labels = connected_components(graph, directed=False)
    return labels.astype(np.int64)


def make_input(scenario: str, n: int, seed: int = 7) -> Path:
    """documents.parquet for a scenario (cached); ids: template pages 0..99,999, copies next."""
    template_pages = min(TEMPLATE_PAGES, n // 10)
    copies = min(COPIES, n // 100)

    def build(folder: Path) -> dict:
        rng = np.random.default_rng([seed, n])
        template, copy = rng.integers(0, 2**64, size=2, dtype=np.uint64)
        if scenario == "template":
            one = np.uint64(1)
            first = rng.integers(0, 64, size=template_pages).astype(np.uint64)
            second = rng.integers(0, 64, size=template_pages).astype(np.uint64)
            two = rng.random(template_pages) < 0.5
            flips = (one << first) | np.where(two, one << second, np.uint64(0))
            flips[0] = 0  # the template itself is one of its pages
            pages = template ^ flips
        else:
            low = np.uint64((1 << HOT_KEY_FREE_BITS) - 1)
            free = rng.choice(1 << HOT_KEY_FREE_BITS, size=template_pages, replace=False).astype(np.uint64)
            pages = (template & ~low) | free
        rest = rng.integers(0, 2**64, size=n - template_pages - copies, dtype=np.uint64)
        fingerprints = np.concatenate([pages, np.full(copies, copy, dtype=np.uint64), rest]).view(np.int64)
        write_documents(folder / "documents.parquet", fingerprints, rng)
        labels = template_components(pages, scenario)
        pq.write_table(pa.table({"id": np.arange(template_pages, dtype=np.int64), "label": labels}),
                       folder / "template_truth.parquet")
        return {"scenario": scenario, "n": n, "template_pages": template_pages, "copies": copies,
                "template_truth_components": int(labels.max() + 1),
                "template_ids": [0, template_pages - 1], "copy_ids": [template_pages, template_pages + copies - 1],
                "distinct_template_fingerprints": int(len(np.unique(pages)))}

    return cached_input(SKEW_CACHE / f"{scenario}-n{n}-seed{seed}-v{FORMAT}", build)


def worker_session(name: str, driver_memory: str):
    """The local[2] Spark session of a worker process (the job's, the SQL join's, and
    bench/memory_bounds.py's baseline): the job's settings, 16 shuffle partitions."""
    return bench_session(name, driver_memory, conf={"spark.sql.shuffle.partitions": "16"})


def worker(args: argparse.Namespace) -> int:
    """Run jobs/dedupe.py's main in this process's Spark (local[2], bounded memory)."""
    from jobs.dedupe import main as dedupe_main

    spark = worker_session("bench-skew", args.driver_memory)
    try:
        return dedupe_main(args.job_args, spark)
    finally:
        spark.stop()


def join_worker(args: argparse.Namespace) -> int:
    """Today's one-level SQL join alone on a scenario's distinct fingerprints; print a JSON line."""
    from pyspark.sql import functions as F

    from bench.sql_join import sql_near_duplicate_pairs
    from simhash_udf.core import bands

    spark = worker_session("bench-skew-join", args.driver_memory)
    try:
        fps = spark.read.parquet(args.job_args[0]).select("fingerprint").distinct().cache()
        n = fps.count()
        plan = bands.choose_plan(n, 3)
        start = time.perf_counter()
        pairs = sql_near_duplicate_pairs(fps, plan).agg(F.count(F.lit(1)).alias("pairs")).first()["pairs"]
        print(json.dumps({"distinct": n, "blocks": plan.blocks, "pairs": pairs, "join_s": time.perf_counter() - start,
                          "join": sql_near_duplicate_pairs.__name__}))
    finally:
        spark.stop()
    return 0


def run_sql_join(folder: Path, memory: str, timeout: float) -> dict:
    """`join_worker` in a fresh process, bounded by the timeout."""
    command = module_command("skew", "--join-worker", "--driver-memory", memory, "--",
                             str(folder / "documents.parquet"))
    result, stdout = run_bounded(command, timeout)
    if "status" in result:
        return result
    result.update(json.loads(stdout.strip().splitlines()[-1]), status="ok")
    return result


def job_command(folder: Path, output: Path, memory: str, *options: str) -> list[str]:
    """The command of a worker process that runs the job (`worker`) on the folder's
    documents.parquet (`id`, `fingerprint`), writing to output; options go to the job."""
    return module_command(
        "skew", "--worker", "--driver-memory", memory, "--",
        "--input", str(folder / "documents.parquet"), "--format", "parquet", "--id-col", "id",
        "--fingerprint-col", "fingerprint", "--output", str(output), "--log-level", "WARNING", *options)


def run_job(folder: Path, pairs: bool, memory: str, timeout: float) -> dict:
    output = folder / ("out-pairs" if pairs else "out-no-pairs")
    shutil.rmtree(output, ignore_errors=True)
    command = job_command(folder, output, memory, *([] if pairs else ["--no-pairs"]))
    result, stdout = run_bounded(command, timeout)
    if "status" in result:
        return result
    result.update(job_summary=stdout.strip(), status="ok")
    result.update(check(folder, output))
    return result


def check(folder: Path, output: Path) -> dict:
    """The template's pages and the copies, each in one cluster? What the report says."""
    meta = read_meta(folder)
    clusters = pq.read_table(output / "clusters", columns=["id", "cluster_id"]).to_pandas()
    lo, hi = meta["template_ids"]
    template = clusters[(clusters["id"] >= lo) & (clusters["id"] <= hi)]
    lo, hi = meta["copy_ids"]
    copies = clusters[(clusters["id"] >= lo) & (clusters["id"] <= hi)]
    report = json.loads((output / "report.json").read_text())
    join = report.get("join", {})
    truth = pq.read_table(folder / "template_truth.parquet").to_pandas().merge(template, on="id")
    combined = truth.groupby(["label", "cluster_id"], dropna=False).ngroups
    matches = combined == truth["label"].nunique() == truth["cluster_id"].nunique(dropna=False)
    return {
        "template_truth_components": meta["template_truth_components"],
        "template_clusters_match_truth": bool(matches and len(truth) == meta["template_pages"]),
        "template_clusters": int(template["cluster_id"].nunique(dropna=False)),
        "template_rows": int(len(template)),
        "copy_clusters": int(copies["cluster_id"].nunique(dropna=False)),
        "copy_rows": int(len(copies)),
        "candidate_pairs": join.get("candidate_pairs"),
        "verified_pairs": join.get("verified_pairs"),
        "largest_bucket": join.get("largest_bucket"),
        "hot_buckets": join.get("hot_buckets", []),
        "band_plan": {k: report.get("band_plan", {}).get(k) for k in ("blocks", "tables", "key_bits")},
        "report_join": {k: v for k, v in join.items() if k != "hot_buckets"},
        "pairs_written": (output / "pairs").exists(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="100k documents (10k template pages, 1k copies)")
    parser.add_argument("--n", type=int, default=None, help="documents (default 1,000,000; --quick 100,000)")
    parser.add_argument("--runs", default=DEFAULT_RUNS,
                        help="scenario:pairs|no-pairs runs, comma-separated (the hot key's pairs/ run is left "
                        "out by default: it only adds the writing of its summary edges, for minutes)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds one job may run before it is killed")
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--no-sql-join", action="store_true", help="skip today's one-level SQL join on each scenario")
    parser.add_argument("--sql-timeout", type=float, default=300,
                        help="seconds the one-level SQL join may run before it is killed (at 1M the hot key "
                        "is 10 billion candidate pairs for it)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--join-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("job_args", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args)
    if args.join_worker:
        return join_worker(args)
    n = args.n or (100_000 if args.quick else 1_000_000)
    report: dict = {"n": n, "timeout_s": args.timeout, "sql_timeout_s": args.sql_timeout, "driver_memory": args.driver_memory,
                    "load_start": load_average(), "runs": []}
    started = time.perf_counter()
    runs: dict[str, list[bool]] = {}
    for item in args.runs.split(","):
        scenario, _, mode = item.strip().partition(":")
        if scenario not in ("template", "hot-key") or mode not in ("pairs", "no-pairs"):
            parser.error(f"--runs: {item!r} is not template|hot-key:pairs|no-pairs")
        runs.setdefault(scenario, []).append(mode == "pairs")
    for scenario, modes in runs.items():
        folder = make_input(scenario, n)
        meta = read_meta(folder)
        for pairs in modes:
            result = run_job(folder, pairs, args.driver_memory, args.timeout)
            result.update(scenario=scenario, pairs=pairs, input=meta)
            report["runs"].append(result)
            print(f"skew: {scenario} {'with pairs' if pairs else '--no-pairs'}: {result['status']}, "
                  f"{result['wall_s']:.0f} s, peak RSS {result['peak_rss'] / 2**20:,.0f} MB; template in "
                  f"{result.get('template_clusters')} cluster(s) (truth {result.get('template_truth_components')}, "
                  f"partition equal: {result.get('template_clusters_match_truth')}), copies in {result.get('copy_clusters')}; "
                  f"hot buckets {result.get('hot_buckets')}", file=sys.stderr)
        if not args.no_sql_join:
            result = run_sql_join(folder, args.driver_memory, args.sql_timeout)
            result.update(scenario=scenario, input=meta)
            report.setdefault("sql_join", []).append(result)
            print(f"skew: {scenario}, today's SQL join alone: {result['status']}, {result['wall_s']:.0f} s "
                  f"(join {result.get('join_s', float('nan')):.0f} s), {result.get('pairs')} pairs", file=sys.stderr)
    report["seconds"] = time.perf_counter() - started
    report["load_end"] = load_average()
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
