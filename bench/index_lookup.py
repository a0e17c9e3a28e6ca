"""Benchmark: a daily batch against a persistent index versus the self-join of everything.

    .venv/bin/python -m bench.index_lookup                              # 100k against 1M (minutes)
    .venv/bin/python -m bench.index_lookup --index-rows 10000000 --repeats 1   # 100k against 10M

Builds an index of N random fingerprints (written with the job's own `index.write_segment`)
with the plan a new index gets from the job: `bands.choose_index_plan` for --index-size (the
job's default, 10^9, unless given), makes a batch of M fingerprints (half near copies of
indexed ones at 1..k bits, half new), then times, in the same session:

- lookup: what a run with --index does with the fingerprints, with the index's plan: the
  batch's self-join (`join.band_join`, hot runs summarised), the lookup of its band keys in
  the index's stored keys (`lookup.lookup`: batch side broadcast, hot buckets
  summarised), and the scan of the index entries' id column for repeated ids;
- self-join: the job's join without an index (`join.band_join` and `join.join_pairs`) over
  all N + M fingerprints, with the plan `bands.choose_plan` picks for N + M (what a run
  without an index over the whole history does).

Each is forced with Spark's `noop` writer; the table shows the median of --repeats runs,
the ratio, the lookup's counts (stored rows met, comparisons) beside the cost model's
expectation, and how many bytes of the index the lookup reads. Writes bench/RESULTS-index.md
(or --results PATH; --append adds a section instead). A benchmark, not a test: minutes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from bench.machine import load_average
from bench.runners import ROOT, bench_session, timed_runs
from bench.tables import seconds_list
from simhash_udf.core import bands
from simhash_udf.index import lookup
from simhash_udf.index.manifest import Manifest, RunInfo, Segment, now_iso
from simhash_udf.index.store import IndexStore, write_segment
from simhash_udf.stages import join


def session(master: str, memory: str) -> SparkSession:
    """A plain Spark session (not the job's `get_session`), broadcasting only what is asked for."""
    return bench_session(
        "bench-index-lookup", memory, master=master, job_settings=False,
        conf={
            "spark.sql.shuffle.partitions": "16",
            "spark.ui.enabled": "false",
            "spark.sql.autoBroadcastJoinThreshold": "-1",  # only the broadcasts we ask for
        },
    )


def random_fingerprints(spark: SparkSession, n: int, seed: int, start: int = 0):
    """`id`, `fingerprint`: n pseudo-random 64-bit fingerprints (xxhash64 of the id)."""
    return spark.range(start, start + n).select(
        F.col("id"), F.xxhash64(F.col("id"), F.lit(seed)).alias("fingerprint")
    )


def build_index(spark: SparkSession, root: str, n: int, plan: bands.BandPlan) -> IndexStore:
    store = IndexStore(spark, root)
    folder = store.new_segment("bench")
    fps = random_fingerprints(spark, n, seed=1)
    entries = fps.select(
        "id", "fingerprint",
        F.lit(None).cast("binary").alias("exact_key"),
        F.concat(F.lit("https://example.com/"), F.col("id").cast("string")).alias("url"),
        F.lit(None).cast("string").alias("fetch_time"),
        F.lit("bench").alias("run_id"),
        F.lit("kept").alias("status"),
        F.col("id").alias("cluster_id"),
        F.col("fingerprint").alias("cluster_fingerprint"),
        F.lit(None).cast("binary").alias("cluster_exact_key"),
        F.lit("bench").alias("cluster_run_id"),
    )
    written, keys = write_segment(store, folder, entries, plan)
    manifest = Manifest(
        version=1, k=plan.k, blocks=plan.blocks, fingerprint={}, id_type="bigint",
        runs=(RunInfo("bench", 1, folder, "", 0, now_iso(), written, keys),),
        segments=(Segment(folder, ("bench",), store.data_files(folder)),),
        next_seq=2, created_at=now_iso(),
    )
    store.publish(manifest)
    return store


def batch_fingerprints(spark: SparkSession, n_index: int, m: int, k: int):
    """M fingerprints: half are indexed ones with 1 or 2 bits flipped, half new."""
    near = random_fingerprints(spark, m // 2, seed=1).select(
        F.expr(
            "fingerprint ^ (shiftleft(1L, cast(id % 64 as int)) | shiftleft(1L, cast((id * 7 + 3) % 64 as int)))"
        ).alias("fingerprint")
    )
    new = random_fingerprints(spark, m - m // 2, seed=2, start=n_index).select("fingerprint")
    return near.unionByName(new).distinct()


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*.parquet"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # 1M by default: building a 10M index and self-joining 10.1M fingerprints takes over half
    # an hour on a shared 2-core machine (bench/RESULTS-index.md has both).
    parser.add_argument("--index-rows", type=int, default=1_000_000)
    parser.add_argument("--batch-rows", type=int, default=100_000)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument(
        "--index-size", type=int, default=1_000_000_000,
        help="what the index's plan is chosen for (the job's --index-size; default its default, 10^9)",
    )
    parser.add_argument("--repeats", type=int, default=2, help="runs of each side; the table shows the median")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--memory", default="3g")
    parser.add_argument("--results", default=str(ROOT / "bench" / "RESULTS-index.md"))
    parser.add_argument("--append", action="store_true", help="add a section to --results instead of replacing it")
    args = parser.parse_args(argv)

    spark = session(args.master, args.memory)
    n, m = args.index_rows, args.batch_rows
    plan = bands.choose_index_plan(args.index_size, args.k)
    self_plan = bands.choose_plan(n + m, args.k)
    with tempfile.TemporaryDirectory(prefix="bench-index-") as tmp:
        root = Path(tmp) / "index"
        start = time.perf_counter()
        store = build_index(spark, str(root), n, plan)
        build_seconds = time.perf_counter() - start
        manifest = store.latest()
        keys = store.read(manifest, "keys")
        entries = store.read(manifest, "entries")
        batch = batch_fingerprints(spark, n, m, args.k).localCheckpoint()
        m_distinct = batch.count()
        counts: dict = {}

        def run_lookup() -> None:
            found = lookup.lookup(batch, keys, plan, m_distinct)
            found.matches.write.format("noop").mode("overwrite").save()
            counts.update(found.stats)
            joined = join.band_join(batch, plan, m_distinct).localCheckpoint()
            stats = join.join_stats(joined, plan, m_distinct)
            counts["self_join_candidate_pairs"] = stats["candidate_pairs"]
            join.join_pairs(joined, stats["summarised_runs"] > 0).write.format("noop").mode("overwrite").save()
            # The repeated-id check of the job, on m ids of which half are indexed.
            docs = random_fingerprints(spark, m, seed=3, start=n - m // 2).select(
                "id", F.lit(None).cast("string").alias("reason")
            )
            marked = lookup.mark_repeated_ids(docs, entries, m)
            marked.write.format("noop").mode("overwrite").save()

        everything = entries.select("fingerprint").unionByName(batch).distinct().localCheckpoint()
        n_all = everything.count()

        def self_join() -> None:
            joined = join.band_join(everything, self_plan, n_all).localCheckpoint()
            stats = join.join_stats(joined, self_plan, n_all)
            join.join_pairs(joined, stats["summarised_runs"] > 0).write.format("noop").mode("overwrite").save()

        lookup_s = timed_runs(run_lookup, args.repeats)
        self_s = timed_runs(self_join, args.repeats)
        found = lookup.lookup(batch, keys, plan, m_distinct).matches.where("distance > 0").count()
        key_bytes, entry_bytes = folder_bytes(root / manifest.segments[0].folder / "keys"), folder_bytes(
            root / manifest.segments[0].folder / "entries"
        )
    model = bands.lookup_cost(n, m_distinct, plan.k, plan.blocks)
    # What the self-join's plan for --index-size (the plan indexes got before the lookup had its
    # own cost model) would have met, by the same model.
    old_plan = bands.choose_plan(args.index_size, args.k)
    old_model = bands.lookup_cost(n, m_distinct, old_plan.k, old_plan.blocks)
    lookup_med, self_med = statistics.median(lookup_s), statistics.median(self_s)
    command = " ".join(["python -m bench.index_lookup", *(argv if argv is not None else sys.argv[1:])])
    section = "\n".join(
        [
            f"## {m_distinct:,} against {n:,} ({time.strftime('%Y-%m-%d')})",
            "",
            f"`{command}` on {args.master}, {os.cpu_count()} CPUs seen, driver memory {args.memory}, "
            f"load average {load_average()[0]:.1f} at the end. k = {plan.k}. Lookup: the index's plan, "
            f"{plan.blocks} blocks, {plan.n_tables} tables ({plan.reason}). Self-join: "
            f"{self_plan.blocks} blocks, {self_plan.n_tables} tables ({self_plan.reason}).",
            "",
            "| | rows | median s | runs (s) |",
            "|---|---:|---:|---|",
            f"| lookup: batch self-join + batch keys against the index's keys + id check | "
            f"{m_distinct:,} against {n:,} | {lookup_med:.1f} | {seconds_list(lookup_s, 1)} |",
            f"| full self-join of batch + index | {n_all:,} | {self_med:.1f} | "
            f"{seconds_list(self_s, 1)} |",
            "",
            f"Self-join / lookup: **{self_med / lookup_med:.1f}x**. Near pairs found with the index: {found:,}.",
            "",
            f"The lookup's counts: stored key rows met (sharing a key with a batch row) "
            f"{counts.get('stored_rows_met', 0):,}, the cost model's expectation "
            f"{model.joined_rows:,.0f} by chance plus the planted near copies' own keys; lookup "
            f"comparisons {counts.get('lookup_candidate_pairs', 0):,}; hot lookup buckets "
            f"{counts.get('hot_lookup_buckets', 0)}; the batch's self-join compared "
            f"{counts.get('self_join_candidate_pairs', 0):,} pairs. With the self-join's plan for "
            f"{args.index_size:,} ({old_plan.blocks} blocks, {old_plan.n_tables} tables), the model "
            f"expects {old_model.joined_rows:,.0f} joined rows here, {old_model.matches_per_batch_row:,.1f} "
            f"per batch fingerprint (at {args.index_size:,}: "
            f"{bands.lookup_cost(args.index_size, 1, old_plan.k, old_plan.blocks).matches_per_batch_row:,.0f}, "
            f"against {bands.lookup_cost(args.index_size, 1, plan.k, plan.blocks).matches_per_batch_row:,.1f} "
            "with the index's plan).",
            "",
            f"What the lookup reads of the index: its key files ({n * plan.n_tables:,} rows, "
            f"{key_bytes / 1e6:.0f} MB of Parquet, all of it: random batch keys touch every file) "
            f"and the id column of its entries ({entry_bytes / 1e6:.0f} MB of entry files, of which "
            "only the id column chunks are read). Nothing of the index is exploded, shuffled or "
            f"sorted; the batch's {m_distinct * plan.n_tables:,} key rows are broadcast. The "
            f"self-join explodes and shuffles {n_all * self_plan.n_tables:,} band rows.",
            f"Building the index ({n:,} entries and their keys) took {build_seconds:.0f} s (not in either figure).",
            "",
        ]
    )
    print(section)
    results = Path(args.results)
    if args.append and results.exists():
        results.write_text(results.read_text().rstrip("\n") + "\n\n" + section)
    else:
        results.write_text("# Index lookup vs full self-join\n\n" + section)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
