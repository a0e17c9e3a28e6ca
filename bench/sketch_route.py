"""Benchmark: the sketch route in one task against the route by shuffles (`ONE_TASK_NODES`).

    .venv/bin/python -m bench.sketch_route [--nodes 300000,440000] [--repeats 2]
                                           [--driver-memory 6g]
    .venv/bin/python -m bench.sketch_route --memory [--memory-nodes 200000,300000,1000000]

Prints a JSON document on stdout and a summary on stderr; nothing is asserted.

Nodes: `random_nodes`, N distinct fingerprints with random sketches of `SketchConfig().size`
16-bit values, the last tenth near copies of others (each value redrawn with probability
0.08, the fingerprint one bit away): what `sketch_join.sketch_nodes` stores for distinct texts
with some near copies. Written as Parquet under build/bench-cache/sketch-route/ and read back.

Timing: `self_join.sketch_route` (stages sketch_nodes, then sketch_candidates, sketch_verify
and jaccard) with `sketch_join.ONE_TASK_NODES` set above N (one task) and to 0 (the
shuffles), in turn per repeat (runners.interleaved), each with its stages written to a
scratch folder as a job writes them, local[2], no band join pairs, after one untimed run of
each. Medians, the ratio shuffles / one task, and whether both paths counted the same
candidates and pairs.

--memory: peak RSS of the one-task worker code (`sketch_join._route_batches` over Arrow
batches of 10,000 nodes, as mapInArrow feeds it) in a fresh process per size, above the RSS of
that process with its libraries loaded, plus the nodes' Arrow bytes (the worker's input):
what one Python worker needs, which sets ONE_TASK_NODES beside `components.LOCAL_MAX_EDGES`.

Measured (2 shared cores, local[2], warm session, 3 alternating repeats; 2026-12-07):
    nodes      one task (s)        shuffles (s)          ratio   --memory
    200,000                                                      210 MB (1,051 bytes a node)
    300,000    5.67, 4.45, 5.23    14.53, 14.11, 12.84   2.7x    313 MB (1,043)
    440,000    6.61, 5.95, 7.70    18.63, 17.83, 21.88   2.8x    470 MB (1,068)
    1,000,000                                                    1,071 MB (1,071)
Both paths counted the same candidates and pairs at both sizes.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa

from bench.runners import CACHE, bench_session, interleaved, log, memory_probes, reset_peak_rss, rss_kb

SKETCH_CACHE = CACHE / "sketch-route"
FORMAT = 1
BATCH_ROWS = 10_000
NEAR_COPY_SHARE = 0.1
REDRAWN = 0.08  # the share of a near copy's sketch values drawn again


def random_nodes(n: int, size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(fingerprints: int64, distinct, in no order; sketches: uint16 (rows, size)): about `n`
    nodes (near copies whose fingerprint meets another's are dropped), the last
    NEAR_COPY_SHARE of them near copies of earlier ones."""
    rng = np.random.default_rng(seed)
    sketches = rng.integers(0, 1 << 16, size=(n, size), dtype=np.uint16)
    fingerprints = rng.integers(-(2**63), 2**63 - 1, size=n, dtype=np.int64)
    copies = int(n * NEAR_COPY_SHARE)
    sources = rng.integers(0, n - copies, size=copies)
    copied = sketches[sources]
    redrawn = rng.random(copied.shape) < REDRAWN
    copied[redrawn] = rng.integers(0, 1 << 16, size=int(redrawn.sum()), dtype=np.uint16)
    sketches[n - copies:] = copied
    bits = rng.integers(0, 64, size=copies).astype(np.uint64)
    fingerprints[n - copies:] = (fingerprints[sources].view(np.uint64) ^ (np.uint64(1) << bits)).view(np.int64)
    _, first = np.unique(fingerprints, return_index=True)
    keep = np.sort(first)
    return fingerprints[keep], sketches[keep]


def sketch_column(sketches: np.ndarray) -> pa.Array:
    """uint16 sketches (rows, size) as the binary column `sketch_join` reads (each row's values
    little-endian, as `core.sketch` writes them), from the array's buffer in one piece."""
    values = np.ascontiguousarray(sketches, dtype="<u2")
    width = values.shape[1] * 2
    fixed = pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), len(values), [None, pa.py_buffer(values.tobytes())])
    return fixed.cast(pa.binary())


def nodes_folder(n: int) -> Path:
    """The Parquet of `random_nodes(n)` (`fingerprint`, `sketch`), written once."""
    import pyarrow.parquet as pq

    from simhash_udf.core.config import SketchConfig

    folder = SKETCH_CACHE / f"n{n}-v{FORMAT}"
    if not folder.exists():
        fingerprints, sketches = random_nodes(n, SketchConfig().size, seed=3)
        part = folder.with_name(folder.name + ".part")
        shutil.rmtree(part, ignore_errors=True)
        part.mkdir(parents=True)
        table = pa.table({"fingerprint": fingerprints, "sketch": sketch_column(sketches)})
        for i, at in enumerate(range(0, len(fingerprints), len(fingerprints) // 4 + 1)):
            pq.write_table(table.slice(at, len(fingerprints) // 4 + 1), part / f"part-{i}.parquet")
        part.rename(folder)
    return folder


# ---------------------------------------------------------------- memory of the one-task path


def memory_worker(n: int) -> dict:
    """In this process: peak RSS of `_route_batches` over `n` nodes in Arrow batches, above
    the RSS before them, plus the nodes' Arrow bytes (what Spark's batches would be)."""
    from simhash_udf.core.config import SketchConfig
    from simhash_udf.stages import sketch_join

    config = SketchConfig()
    fingerprints, sketches = random_nodes(n, config.size, seed=3)
    batches = [
        pa.RecordBatch.from_arrays(
            [pa.array(fingerprints[at:at + BATCH_ROWS]),
             sketch_column(sketches[at:at + BATCH_ROWS]),
             pa.nulls(len(fingerprints[at:at + BATCH_ROWS]), pa.int64()),
             pa.nulls(len(fingerprints[at:at + BATCH_ROWS]), pa.int32())],
            names=["fingerprint", "sketch", "fp_b", "distance"],
        )
        for at in range(0, len(fingerprints), BATCH_ROWS)
    ]
    input_mb = sum(batch.nbytes for batch in batches) / 1e6
    del sketches
    reset_peak_rss()
    base_kb = rss_kb("VmRSS")
    rows = 0
    for batch in sketch_join._route_batches(
        iter(batches), config.bands, config.rows, sketch_join.HOT_BUCKET_SIZE, config.jaccard, config.max_distance
    ):
        rows += batch.num_rows
    peak_mb = (rss_kb("VmHWM") - base_kb) / 1e3 + input_mb
    return {"nodes": len(fingerprints), "candidates": rows, "peak_mb": round(peak_mb, 1),
            "bytes_per_node": round(peak_mb * 1e6 / len(fingerprints))}


# ---------------------------------------------------------------- timing


def time_paths(sizes: list[int], repeats: int, driver_memory: str) -> list[dict]:
    from simhash_udf.core.config import SketchConfig
    from simhash_udf.stages import self_join, sketch_join
    from simhash_udf.stages.scratch import Stages

    spark = bench_session("sketch-route-bench", driver_memory)
    no_pairs = spark.createDataFrame([], "fp_a long, fp_b long, distance int")
    limit = sketch_join.ONE_TASK_NODES
    results = []
    try:
        for n in sizes:
            nodes = spark.read.parquet(str(nodes_folder(n)))
            counts: dict[str, dict] = {}
            stage_seconds: dict[str, list[dict]] = {"one task": [], "shuffles": []}

            def run(name: str, one_task_nodes: int):
                def action():
                    sketch_join.ONE_TASK_NODES = one_task_nodes
                    with tempfile.TemporaryDirectory(dir=SKETCH_CACHE) as work:
                        stages = Stages(work=work, spark=spark, progress_interval=0)
                        route = self_join.sketch_route(no_pairs, nodes, SketchConfig(), 3, stages)
                    counts[name] = route.counts
                    stage_seconds[name].append({k: round(v, 2) for k, v in stages.seconds.items()})
                return action

            methods = {"one task": run("one task", 1 << 62), "shuffles": run("shuffles", 0)}
            try:
                if not results:
                    # Untimed, once: the Python workers start and the JVM warms up on neither path's clock.
                    for action in methods.values():
                        action()
                    for seconds in stage_seconds.values():
                        seconds.clear()
                runs = interleaved(
                    methods,
                    repeats,
                    log=lambda name, repeat, r, failed: log(f"{n} nodes, {name} #{repeat}: {r.wall_s[-1]:.2f} s"),
                )
            finally:
                sketch_join.ONE_TASK_NODES = limit
            medians = {name: statistics.median(r.wall_s) for name, r in runs.items()}
            results.append({
                "nodes": counts["one task"]["nodes"],
                "same_counts": counts["one task"] == counts["shuffles"],
                "counts": counts["one task"],
                "wall_s": {name: [round(x, 2) for x in r.wall_s] for name, r in runs.items()},
                "median_s": {name: round(m, 2) for name, m in medians.items()},
                "ratio_shuffles_over_one_task": round(medians["shuffles"] / medians["one task"], 1),
                "stage_seconds": stage_seconds,
            })
            log(f"{n} nodes: median one task {medians['one task']:.2f} s, shuffles {medians['shuffles']:.2f} s, "
                f"same counts {results[-1]['same_counts']}")
    finally:
        spark.stop()
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="300000,440000", help="node counts to time, comma-separated")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--driver-memory", default="6g")
    parser.add_argument("--memory", action="store_true", help="measure the one-task path's worker memory instead")
    parser.add_argument("--memory-nodes", default="200000,300000,1000000")
    parser.add_argument("--memory-worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory_worker is not None:
        print(json.dumps(memory_worker(args.memory_worker)))
        return
    SKETCH_CACHE.mkdir(parents=True, exist_ok=True)
    if args.memory:
        document = {"memory": memory_probes("bench.sketch_route", [int(x) for x in args.memory_nodes.split(",")])}
    else:
        document = {"timing": time_paths([int(x) for x in args.nodes.split(",")], args.repeats, args.driver_memory)}
    print(json.dumps(document, indent=2))


if __name__ == "__main__":
    main()
