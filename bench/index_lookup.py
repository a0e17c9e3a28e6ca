"""Benchmark: a daily batch against a persistent index versus the self-join of everything.

    .venv/bin/python bench/index_lookup.py                              # 100k against 2M (minutes)
    .venv/bin/python bench/index_lookup.py --index-rows 10000000 --repeats 1   # 100k against 10M

Builds an index of N random fingerprints (written with the job's own `index.write_segment`,
band plan chosen by the cost model for N unless --plan-size says otherwise), makes a batch of
M fingerprints (half near copies of indexed ones at 1..k bits, half new), then times, in the
same session and with the same plan:

- lookup: what a run with --index does with the fingerprints: the batch's self-join, the
  lookup of its band keys in the index's stored keys (batch side broadcast), and the scan of
  the index entries' id column for repeated ids;
- self-join: `join.near_duplicate_pairs` over all N + M fingerprints (what a run without an
  index over the whole history does).

Each is forced with Spark's `noop` writer; the table shows the median of --repeats runs,
the ratio, and how many bytes of the index the lookup reads. Writes bench/RESULTS-index.md
(or --results PATH). A benchmark, not a test: minutes, not seconds.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simhash_udf import bands, index_match, join  # noqa: E402
from simhash_udf.index import IndexStore, Manifest, RunInfo, Segment, now_iso, write_segment  # noqa: E402


def session(master: str, memory: str) -> SparkSession:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master(master)
        .appName("bench-index-lookup")
        .config("spark.driver.memory", memory)
        .config("spark.sql.shuffle.partitions", "16")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.autoBroadcastJoinThreshold", "-1")  # only the broadcasts we ask for
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


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


def timed(action, repeats: int) -> list[float]:
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        seconds.append(time.perf_counter() - start)
    return seconds


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*.parquet"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # 2M by default: building a 10M index and self-joining 10.1M fingerprints takes over half
    # an hour on a shared 2-core machine (bench/RESULTS-index.md has both).
    parser.add_argument("--index-rows", type=int, default=2_000_000)
    parser.add_argument("--batch-rows", type=int, default=100_000)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--plan-size", type=int, default=None, help="size the band plan for this many fingerprints (default: index rows + batch rows)")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each side; the table shows the median")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--memory", default="3g")
    parser.add_argument("--results", default=str(ROOT / "bench" / "RESULTS-index.md"))
    args = parser.parse_args(argv)

    spark = session(args.master, args.memory)
    n, m = args.index_rows, args.batch_rows
    plan = bands.choose_plan(args.plan_size or n + m, args.k)
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

        def lookup() -> None:
            matches = index_match.lookup(batch, keys, plan)
            matches.write.format("noop").mode("overwrite").save()
            join.near_duplicate_pairs(batch, plan).write.format("noop").mode("overwrite").save()
            # The repeated-id check of the job, on m ids of which half are indexed.
            docs = random_fingerprints(spark, m, seed=3, start=n - m // 2).select(
                "id", F.lit(None).cast("string").alias("reason")
            )
            marked = index_match.mark_repeated_ids(docs, entries, m)
            marked.write.format("noop").mode("overwrite").save()

        everything = entries.select("fingerprint").unionByName(batch).distinct()

        def self_join() -> None:
            join.near_duplicate_pairs(everything, plan).write.format("noop").mode("overwrite").save()

        lookup_s = timed(lookup, args.repeats)
        self_s = timed(self_join, args.repeats)
        found = index_match.lookup(batch, keys, plan).where("distance > 0").count()
        key_bytes, entry_bytes = folder_bytes(root / manifest.segments[0].folder / "keys"), folder_bytes(
            root / manifest.segments[0].folder / "entries"
        )
    lookup_med, self_med = statistics.median(lookup_s), statistics.median(self_s)
    table = "\n".join(
        [
            f"# Index lookup vs full self-join ({time.strftime('%Y-%m-%d')})",
            "",
            f"`{' '.join(['bench/index_lookup.py', *(argv if argv is not None else sys.argv[1:])])}` "
            f"on {args.master}, {os.cpu_count()} CPUs seen, driver memory {args.memory}; "
            f"k = {plan.k}, {plan.blocks} blocks, {plan.n_tables} tables for both.",
            "",
            "| | rows | median s | runs (s) |",
            "|---|---:|---:|---|",
            f"| lookup: batch self-join + batch keys against the index's keys + id check | "
            f"{m_distinct:,} against {n:,} | {lookup_med:.1f} | {', '.join(f'{s:.1f}' for s in lookup_s)} |",
            f"| full self-join of batch + index | {n + m_distinct:,} | {self_med:.1f} | "
            f"{', '.join(f'{s:.1f}' for s in self_s)} |",
            "",
            f"Self-join / lookup: **{self_med / lookup_med:.1f}x**. Near pairs found with the index: {found:,}.",
            "",
            f"What the lookup reads of the index: its key files ({n * plan.n_tables:,} rows, "
            f"{key_bytes / 1e6:.0f} MB of Parquet, all of it: random batch keys touch every file) "
            f"and the id column of its entries ({entry_bytes / 1e6:.0f} MB of entry files, of which "
            "only the id column chunks are read). Nothing of the index is exploded, shuffled or "
            f"sorted; the batch's {m_distinct * plan.n_tables:,} key rows are broadcast. The "
            f"self-join explodes, shuffles and sorts {(n + m_distinct) * plan.n_tables:,} key rows.",
            f"Building the index ({n:,} entries and their keys) took {build_seconds:.0f} s (not in either figure).",
            "",
        ]
    )
    print(table)
    Path(args.results).write_text(table)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
