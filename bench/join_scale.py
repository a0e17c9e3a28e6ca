"""Benchmark: the near-duplicate join at 1M-64M fingerprints, ours against the plain band join.

    .venv/bin/python -m bench.join_scale [--sizes 1M,4M,16M,64M] [--quick] [--repeats 3]
                                         [--driver-memory 8g] [--json out.json]

Prints a JSON document on stdout (for bench/run_all.py) and a table on stderr.

Input: bench/synthetic.py's fingerprints (1% planted in clusters of 2-10 within k = 3 of a
seed; the rest uniformly random), one Parquet file per size, cached.

Methods, each size in a fresh Spark (local[2], its own process, so its memory is its own):
- ours: `join.near_duplicate_pairs(fingerprints, bands.choose_plan(n, 3))`, whatever the
  job's join is at this commit;
- baseline: the plain k+1-band self-join written inline in Spark SQL: four 16-bit bands,
  an equality join per band, `bit_count(a ^ b) <= 3`, then `DISTINCT`.
Each writes its pairs as Parquet (timed: wall seconds from the plan to the written
pairs), which are then checked against the generator's truth (and, up to
--brute-force-max, against a numpy brute force over four 16-bit bands).

Figures: wall time (median of --repeats below 4M, of at most two at 4M, one run at 16M and
above; each method first runs
untimed on 20k rows, so Python workers and generated code are warm); rows shuffled and
shuffle bytes (Spark's REST API: shuffle records written by the stages of the run's jobs;
broadcast joins are switched off so both methods shuffle as they would at scale);
candidate pairs (the pairs each method compares, counted in numpy on the same data: for
the baseline and a one-level join, pairs sharing a table's key; for the two-level join,
pairs sharing a table's key and one of its sub-blocks, `pair_kernel.KernelPlan`, summed
over sub-blocks; bucket pairs, the level-1 count, are kept in the JSON); verified pairs; candidates per verified pair; peak memory (sum of the
resident sets of the worker's process tree, sampled every 0.2 s: driver JVM and Python
workers; the JVM alone apart). The baseline is not run above --baseline-max (default 16M):
its candidates grow as N^2 (125 billion at 64M); its time there is extrapolated from its
measured candidates per second at the largest size it ran, and marked as such.
"""

from __future__ import annotations

import argparse
import inspect
import json
import statistics
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np

from bench import synthetic
from bench.machine import load_average
from bench.runners import CACHE, bench_session, module_command, run_bounded
from bench.tables import fmt_n, parse_size, seconds_list

K = 3
OUT = CACHE / "join-out"
SIZES = [1_000_000, 4_000_000, 16_000_000, 64_000_000]
QUICK_SIZES = [250_000, 1_000_000]
BASELINE_BLOCK_BITS = 16


def partitions_for(n: int) -> int:
    """Shuffle partitions: 8 up to 4M, then one per 500k fingerprints (128 at 64M)."""
    return max(8, n // 500_000)


# ---------------------------------------------------------------- the plans' keys, in numpy

def ours_table_masks(n: int, blocks: int | None = None) -> list[int]:
    """Unsigned masks of the key bits of every table of the plan `choose_plan(n, K, blocks)`."""
    from simhash_udf.core import bands

    plan = bands.choose_plan(n, K, blocks)
    return [plan.table_mask(t) for t in range(plan.n_tables)]


def ours_compared_masks(n: int, blocks: int | None = None) -> list[int] | None:
    """Masks whose shared values are the pairs the two-level join compares (table key plus
    one of its sub-blocks, `pair_kernel.KernelPlan`), or None when the join has one level.
    blocks: the plan's block count (default: the one `choose_plan(n, K)` picks)."""
    try:
        from simhash_udf.core import bands, pair_kernel
    except ImportError:
        return None
    kernel_plan = getattr(pair_kernel, "KernelPlan", None)
    if kernel_plan is None:
        return None
    kp = kernel_plan.of(bands.choose_plan(n, K, blocks))
    return [table | sub for table, subs in zip(kp.table_masks, kp.sub_masks) for sub in subs if sub]


def baseline_table_masks() -> list[int]:
    width = BASELINE_BLOCK_BITS
    return [((1 << width) - 1) << (i * width) for i in range(64 // width)]


def _pairs_sharing(fps: np.ndarray, mask: int) -> int:
    """Pairs of fps whose bits under `mask` are equal: a count per value for keys of up to
    24 bits, else a sort and its run lengths."""
    if mask.bit_count() <= 24 and mask % (mask & -mask) == 0 and ((mask // (mask & -mask)) + 1) & (mask // (mask & -mask)) == 0:
        low = (mask & -mask).bit_length() - 1  # a contiguous mask: shift it down and count
        counts = np.bincount(((fps >> np.uint64(low)) & np.uint64(mask >> low)).astype(np.int64),
                             minlength=1).astype(np.int64)
        return int(np.sum(counts * (counts - 1) // 2))
    keys = np.sort(fps & np.uint64(mask))
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    runs = np.diff(np.r_[starts, len(keys)]).astype(np.int64)
    return int(np.sum(runs * (runs - 1) // 2))


def shared_key_pairs(fingerprints: np.ndarray, masks: list[int], threads: int = 2) -> int:
    """Pairs of fingerprints sharing a key, summed over the masks (numpy's sort releases the
    GIL, so two masks are counted at once)."""
    from concurrent.futures import ThreadPoolExecutor

    fps = fingerprints.view(np.uint64)
    with ThreadPoolExecutor(threads) as pool:
        return sum(pool.map(lambda m: _pairs_sharing(fps, m), masks))


def plan_summary(n: int, blocks: int | None = None) -> dict:
    """The plan ours used for n (`blocks`, default the model's choice), and the model's
    prediction for it."""
    from simhash_udf.core import bands

    plan = bands.choose_plan(n, K, blocks)
    summary = {"blocks": plan.blocks, "tables": plan.n_tables}
    cost = getattr(bands, "plan_cost", None)
    if cost is not None:
        try:
            c = cost(n, K, plan.blocks)
            summary["predicted_random_candidates"] = float(c.random_candidates)
            summary["predicted_rows_shuffled"] = float(c.rows_shuffled)
        except Exception as error:  # the model's signature may change under it: say so
            summary["model_error"] = repr(error)
    return summary


# ---------------------------------------------------------------- the worker (one Spark)

BASELINE_SQL = """
WITH keys AS (
  SELECT fingerprint, band, key
  FROM fps LATERAL VIEW posexplode(array(
    fingerprint & 65535,
    shiftright(fingerprint, 16) & 65535,
    shiftright(fingerprint, 32) & 65535,
    shiftrightunsigned(fingerprint, 48))) t AS band, key
)
SELECT DISTINCT fp_a, fp_b, distance FROM (
  SELECT a.fingerprint AS fp_a, b.fingerprint AS fp_b,
         CAST(bit_count(a.fingerprint ^ b.fingerprint) AS INT) AS distance
  FROM keys a JOIN keys b
    ON a.band = b.band AND a.key = b.key AND a.fingerprint < b.fingerprint
) WHERE distance <= {k}
"""


SETTLED_STAGES = frozenset({"COMPLETE", "SKIPPED", "FAILED"})  # the REST API's final stage statuses


def shuffle_written_if_settled(stage_ids: set[int], stages: list[dict]) -> tuple[int, int] | None:
    """(records, bytes) of shuffle written by the stages `stage_ids`, from the REST API's
    `stages` list (every status), once each of them is settled there; None while one is not.

    A stage a job reused from an earlier one (a cached shuffle) never runs: the REST view
    lists it as SKIPPED, with nothing written. Waiting for it to complete instead cost each
    timed run ~10 s of polling, outside the timing but inside run_all's 30 minutes."""
    seen = {s["stageId"]: s for s in stages if s["stageId"] in stage_ids}
    if set(seen) != stage_ids or any(s["status"] not in SETTLED_STAGES for s in seen.values()):
        return None
    return _completed_shuffle(stage_ids, stages)


def _completed_shuffle(stage_ids: set[int], stages: list[dict]) -> tuple[int, int]:
    """(records, bytes) of shuffle written by those of `stage_ids` the REST view shows COMPLETE."""
    done = [s for s in stages if s["stageId"] in stage_ids and s["status"] == "COMPLETE"]
    return (sum(s.get("shuffleWriteRecords", 0) for s in done),
            sum(s.get("shuffleWriteBytes", 0) for s in done))


def _shuffle_written(spark: object, group: str) -> tuple[int, int]:
    """(records, bytes) of shuffle written by the stages of the jobs in a job group."""
    sc = spark.sparkContext  # type: ignore[attr-defined]
    tracker = sc.statusTracker()
    stage_ids: set[int] = set()
    for job in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job)
        if info is not None:
            stage_ids.update(info.stageIds)
    url = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/stages"
    for _ in range(20):  # the REST view lags the listener by a moment
        with urllib.request.urlopen(url, timeout=30) as response:
            stages = json.load(response)
        figures = shuffle_written_if_settled(stage_ids, stages)
        if figures is not None:
            return figures
        time.sleep(0.5)
    # Still unsettled after 10 s: count the stages that completed, and say so.
    print(f"join_scale: not every stage of {group} settled in the REST view; its shuffle figures "
          "count the completed ones", file=sys.stderr)
    return _completed_shuffle(stage_ids, stages)


def worker(args: argparse.Namespace) -> int:
    """Run one method at one size in this process's Spark; print a JSON line."""
    from simhash_udf.core import bands
    from simhash_udf.stages import join

    spark = bench_session(
        f"bench-join-{args.method}",
        args.driver_memory,
        conf={
            "spark.ui.enabled": "true",  # the shuffle figures come from its REST API
            "spark.sql.shuffle.partitions": str(args.partitions),
            "spark.local.dir": str(OUT / "spark-local"),
            # Shuffle both methods' joins as they would be at scale: at 1M the fingerprints'
            # file is under the 10 MB default and Spark would broadcast the band rows instead.
            "spark.sql.autoBroadcastJoinThreshold": "-1",
        },
    )
    try:
        fps = spark.read.parquet(args.input).repartition(args.partitions).cache()
        n = fps.count()
        runs, shuffled, shuffle_bytes = [], [], []
        out = str(OUT / f"{args.method}-{n}")

        def pairs_of(frame: object, size: int) -> object:
            if args.method == "ours":
                plan = bands.choose_plan(size, K)
                takes_n = "n" in inspect.signature(join.near_duplicate_pairs).parameters
                return join.near_duplicate_pairs(frame, plan, size) if takes_n else join.near_duplicate_pairs(frame, plan)
            frame.createOrReplaceTempView("fps")  # type: ignore[attr-defined]
            return spark.sql(BASELINE_SQL.format(k=K))

        # Untimed warm-up on 20k rows: Python workers started, numpy imported, code generated.
        warm = fps.limit(20_000).cache()
        pairs_of(warm, warm.count()).write.format("noop").mode("overwrite").save()
        warm.unpersist()
        for repeat in range(args.repeats):
            group = f"{args.method}-{repeat}"
            spark.sparkContext.setJobGroup(group, group)
            start = time.perf_counter()
            pairs_of(fps, n).write.mode("overwrite").parquet(out)
            runs.append(time.perf_counter() - start)
            records, written = _shuffle_written(spark, group)
            shuffled.append(records)
            shuffle_bytes.append(written)
            print(f"join_scale: {args.method} {fmt_n(n)} run {repeat + 1}: {runs[-1]:.1f} s, "
                  f"{records:,} rows shuffled", file=sys.stderr)
        blocks = bands.choose_plan(n, K).blocks if args.method == "ours" else None
        print(json.dumps({"n": n, "blocks": blocks, "wall_s": runs, "rows_shuffled": shuffled, "shuffle_bytes": shuffle_bytes,
                          "pairs": out}))
    finally:
        spark.stop()
    return 0


# ---------------------------------------------------------------- the parent

def run_method(method: str, data: synthetic.Synthetic, repeats: int, memory: str, timeout: float) -> dict:
    """One method at one size in a fresh process; its figures and its memory peaks."""
    command = module_command("join_scale", "--worker", method, "--input", str(data.fingerprints),
                             "--repeats", str(repeats), "--driver-memory", memory,
                             "--partitions", str(partitions_for(data.n)))
    bounded, stdout = run_bounded(command, timeout)
    if stdout is None:
        return {"status": f"timed out after {timeout:.0f} s", "seconds": bounded["wall_s"]}
    if "status" in bounded:
        return {"status": bounded["status"], "seconds": bounded["wall_s"]}
    result = json.loads(stdout.strip().splitlines()[-1])
    result.update(status="ok", peak_rss=bounded["peak_rss"], peak_jvm_rss=bounded["peak_jvm_rss"],
                  peak_python_workers_rss=bounded["peak_python_workers_rss"])
    return result


def check_output(result: dict, data: synthetic.Synthetic, brute: set | None) -> synthetic.Exactness:
    import pyarrow.parquet as pq

    table = pq.read_table(result["pairs"])
    return synthetic.check_pairs(table["fp_a"].to_numpy(), table["fp_b"].to_numpy(),
                                 table["distance"].to_numpy(), data, brute)


def growth_exponent(sizes: list[int], seconds: list[float]) -> float | None:
    """Least-squares slope of log(time) on log(N)."""
    if len(sizes) < 2:
        return None
    x, y = np.log(np.asarray(sizes, dtype=float)), np.log(np.asarray(seconds, dtype=float))
    return float(np.polyfit(x, y, 1)[0])


def measure(args: argparse.Namespace) -> dict:
    sizes = [parse_size(s) for s in args.sizes.split(",")] if args.sizes else (QUICK_SIZES if args.quick else SIZES)
    report: dict = {"k": K, "sizes": sizes, "driver_memory": args.driver_memory, "load_start": load_average(),
                    "results": []}
    started = time.perf_counter()
    for n in sizes:
        data = synthetic.generate(n, args.seed, K)
        fps = synthetic.read_fingerprints(data)
        entry: dict = {"n": n, "planted": data.planted, "truth_pairs": data.truth_pairs,
                       "expected_chance_pairs": synthetic.expected_random_pairs(n, K),
                       "partitions": partitions_for(n)}
        brute = None
        if n <= args.brute_force_max:
            t0 = time.perf_counter()
            brute = synthetic.band_truth(fps, K)
            entry["brute_force_seconds"] = time.perf_counter() - t0
        del fps
        # The 30-minute budget of bench/run_all.py: all repeats below 4M, two at 4M, one above.
        repeats = args.repeats if n < 4_000_000 else (min(args.repeats, 2) if n < 16_000_000 else 1)
        for method in ("ours", "baseline"):
            if method == "baseline" and n > args.baseline_max:
                entry[method] = {"status": "not run (extrapolated)"}
                continue
            result = run_method(method, data, repeats, args.driver_memory, args.timeout)
            if result["status"] == "ok":
                exact = check_output(result, data, brute)
                result["verified_pairs"] = exact.found
                result["exactness"] = exact.summary()
                result["exact"] = exact.exact
                result["median_s"] = statistics.median(result["wall_s"])
            entry[method] = result
            print(f"join_scale: {fmt_n(n)} {method}: {result['status']} "
                  f"{result.get('median_s', 0):.1f} s; {result.get('exactness', '')}", file=sys.stderr)
        # Candidates, counted after the runs with the plan the run reported (the model may
        # be edited while a long benchmark runs; the count must be of the plan measured).
        blocks = entry["ours"].get("blocks")
        entry["plan"] = plan_summary(n, blocks)
        fps = synthetic.read_fingerprints(data)
        t0 = time.perf_counter()
        # Level 1: pairs sharing a table's key (what a one-level join verifies); a two-level
        # join compares only those that also share a sub-block (its candidates).
        entry["bucket_pairs_ours"] = shared_key_pairs(fps, ours_table_masks(n, blocks))
        compared = ours_compared_masks(n, blocks)
        if compared is None:
            entry["candidates_ours"] = entry["bucket_pairs_ours"]
        elif n <= args.count_max:
            entry["candidates_ours"] = shared_key_pairs(fps, compared)
        else:  # one sort per table and sub-block
            entry["candidates_ours"] = None
        entry["candidates_baseline"] = shared_key_pairs(fps, baseline_table_masks())
        entry["count_seconds"] = time.perf_counter() - t0
        del fps
        report["results"].append(entry)
    extrapolate(report)
    measured = [(e["n"], e["ours"]["median_s"]) for e in report["results"]
                if e["n"] >= 4_000_000 and e["ours"].get("status") == "ok"]
    report["growth_ours_4m_up"] = growth_exponent([m[0] for m in measured], [m[1] for m in measured])
    base = [(e["n"], e["baseline"]["median_s"]) for e in report["results"]
            if e["n"] >= 4_000_000 and e["baseline"].get("status") == "ok"]
    report["growth_baseline_4m_up"] = growth_exponent([m[0] for m in base], [m[1] for m in base])
    report["seconds"] = time.perf_counter() - started
    report["load_end"] = load_average()
    return report


def extrapolate(report: dict) -> None:
    """The baseline's time where it did not run: its candidates / its measured candidates per second."""
    ran = [e for e in report["results"] if e["baseline"].get("status") == "ok"]
    if not ran:
        return
    last = max(ran, key=lambda e: e["n"])
    rate = last["candidates_baseline"] / last["baseline"]["median_s"]
    for e in report["results"]:
        if e["baseline"].get("status") != "ok":
            e["baseline"]["extrapolated_s"] = e["candidates_baseline"] / rate
            e["baseline"]["extrapolated_from"] = last["n"]


def table(report: dict) -> list[str]:
    """Markdown: one row per size and method."""
    lines = [
        "| N | method | wall s (median) | runs (s) | rows shuffled | shuffle MB | candidate pairs | verified pairs "
        "| candidates / verified | peak RSS MB (JVM) | exact | baseline / ours (time) |",
        "|---:|---|---:|---|---:|---:|---:|---:|---:|---|---|---:|",
    ]
    for e in report["results"]:
        ours_s = e["ours"].get("median_s")
        for method in ("ours", "baseline"):
            r = e[method]
            cands = e[f"candidates_{method}"]
            cands_text = "not counted" if cands is None else f"{cands:,}"
            if r.get("status") != "ok":
                extra = r.get("extrapolated_s")
                when = (f"~{extra:,.0f} (extrapolated from {fmt_n(r['extrapolated_from'])})"
                        if extra else r.get("status", ""))
                ratio = f"~{extra / ours_s:.1f}x (extrapolated)" if extra and ours_s else ""
                lines.append(f"| {fmt_n(e['n'])} | {method} | {when} | {r.get('status', '')} | | | {cands_text} "
                             f"(counted) | | | | | {ratio} |")
                continue
            verified = r["verified_pairs"]
            ratio = "" if method == "ours" or not ours_s else f"{r['median_s'] / ours_s:.2f}x"
            lines.append(
                f"| {fmt_n(e['n'])} | {method} | {r['median_s']:.1f} | {seconds_list(r['wall_s'], 1)} "
                f"| {statistics.median(r['rows_shuffled']):,.0f} | {statistics.median(r['shuffle_bytes']) / 1e6:,.0f} "
                f"| {cands_text} | {verified:,} | "
                f"{'' if cands is None else f'{cands / max(verified, 1):,.1f}'} "
                f"| {r['peak_rss'] / 2**20:,.0f} ({r['peak_jvm_rss'] / 2**20:,.0f}) "
                f"| {'yes' if r['exact'] else 'NO'} ({r['exactness'].split(': ', 1)[1]}) | {ratio} |"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", help="comma-separated sizes, e.g. 1M,4M,16M,64M (default those; --quick 250k,1M)")
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs below 4M (median reported); at most 2 at 4M, 1 at 16M and above")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--driver-memory", default="8g", help="Spark driver memory (local mode: all of Spark)")
    parser.add_argument("--baseline-max", type=parse_size, default=16_000_000,
                        help="largest size the baseline runs at; above it its time is extrapolated")
    parser.add_argument("--brute-force-max", type=parse_size, default=4_000_000,
                        help="largest size checked against the numpy brute force too")
    parser.add_argument("--count-max", type=parse_size, default=64_000_000,
                        help="largest size at which the two-level join's candidates are counted (one sort "
                        "per table and sub-block)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds one method at one size may take")
    parser.add_argument("--json", type=Path, help="also write the JSON report here")
    # internal: one method at one size in this process
    parser.add_argument("--worker", choices=("ours", "baseline"), help=argparse.SUPPRESS)
    parser.add_argument("--input", help=argparse.SUPPRESS)
    parser.add_argument("--partitions", type=int, default=8, help=argparse.SUPPRESS)
    parser.add_argument("--method", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        args.method = args.worker
        return worker(args)
    report = measure(args)
    print("\n".join(table(report)), file=sys.stderr)
    text = json.dumps(report, indent=1)
    if args.json:
        args.json.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
