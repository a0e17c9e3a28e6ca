"""Benchmark: connected components in one task (local path) vs the distributed rounds.

    .venv/bin/python -m bench.components_bench [--edges 66000,2300000] [--repeats 3]
                                               [--driver-memory 4g]
    .venv/bin/python -m bench.components_bench --memory [--memory-edges 1000000,4000000,10000000]

Prints a JSON document on stdout and a summary on stderr; nothing is asserted.

Graph: like the join's pairs, many components of 2-10 nodes (a random tree on each, plus
0..size random extra edges inside it, self-loops and repeats among them), random int64 ids
over the whole long range, random orientation (`join_like_edges`). Written as Parquet
(4 files) under build/bench-cache/components/ and read back, so the edges come from a
parallel source as they do from a materialised stage.

Timing: `stages.components.connected_components` with edge_count given, once with the
local path (LOCAL_MAX_EDGES) and once forced to the rounds (local_max_edges=-1), in turn per
repeat (runners.interleaved), each run to the end (`write.format("noop")`), local[2].
Medians and the ratio distributed / local, and the peak RSS of the largest Python
process under the benchmark's (sampled every 0.2 s; Python workers are reused across runs). Before timing, the two paths' outputs are checked
equal (exceptAll both ways).

--memory: peak RSS of the local path's worker code (`_label_batches` over Arrow batches of
10,000 edges, as mapInArrow feeds it) in a fresh process per size, above the RSS of that
process with numpy, pyarrow and scipy loaded and warmed: what one Python worker needs,
which sets LOCAL_MAX_EDGES.

Measured (2 shared cores at load average ~19, local[2], 3 repeats; 40 edges: 5):
    edges       local (median)   distributed (median)   ratio   largest Python worker
    40          0.71 s           2.87 s                 4.0x
    66,000      1.41 s           33.06 s                23.5x   185 MB (181 MB idle)
    2,300,000   7.47 s           290.21 s               38.9x   346 MB
    --memory: 115 MB at 1M edges, 354 MB at 4M, 764 MB at 10M above the worker's own.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from pathlib import Path

import numpy as np

from bench.runners import CACHE, TreeMemory, bench_session, interleaved, log, memory_probes, reset_peak_rss, rss_kb

COMPONENTS_CACHE = CACHE / "components"
FORMAT = 1
BATCH_ROWS = 10_000


def join_like_edges(n_edges: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """`n_edges` edges (src, dst: int64) of many components of 2-10 nodes: a random tree on
    each plus 0..size random edges inside it (self-loops and repeats possible), shuffled,
    random orientation. The last component may be cut short by the truncation."""
    rng = np.random.default_rng(seed)
    srcs, dsts, total = [], [], 0
    while total < n_edges:
        count = max(1000, (n_edges - total) // 7)
        sizes = rng.integers(2, 11, count)
        offsets = np.cumsum(sizes) - sizes
        n = int(sizes.sum())
        ids = rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64, endpoint=True)
        component = np.repeat(np.arange(count), sizes)
        position = np.arange(n) - offsets[component]
        child = np.flatnonzero(position > 0)
        parent = offsets[component[child]] + (rng.random(len(child)) * position[child]).astype(np.int64)
        extra = np.repeat(np.arange(count), rng.integers(0, sizes + 1))
        a = offsets[extra] + (rng.random(len(extra)) * sizes[extra]).astype(np.int64)
        b = offsets[extra] + (rng.random(len(extra)) * sizes[extra]).astype(np.int64)
        src, dst = ids[np.concatenate([child, a])], ids[np.concatenate([parent, b])]
        order = rng.permutation(len(src))
        src, dst = src[order], dst[order]
        flip = rng.random(len(src)) < 0.5
        src, dst = np.where(flip, dst, src), np.where(flip, src, dst)
        srcs.append(src)
        dsts.append(dst)
        total += len(src)
    return np.concatenate(srcs)[:n_edges], np.concatenate(dsts)[:n_edges]


def edges_folder(n_edges: int, seed: int = 1) -> Path:
    """The Parquet edges of `join_like_edges(n_edges, seed)`, written once."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = COMPONENTS_CACHE / f"edges-v{FORMAT}-{n_edges}-{seed}"
    if (folder / "_DONE").exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    src, dst = join_like_edges(n_edges, seed)
    for part, (s, d) in enumerate(zip(np.array_split(src, 4), np.array_split(dst, 4))):
        pq.write_table(pa.table({"src": s, "dst": d}), folder / f"part-{part}.parquet")
    (folder / "_DONE").write_text("")
    return folder


# ---------------------------------------------------------------- memory of the local path


def memory_worker(n_edges: int) -> dict:
    """In this process: peak RSS of `_label_batches` over `n_edges` edges in Arrow batches,
    above the RSS before them (libraries loaded and warmed)."""
    import pyarrow as pa

    from simhash_udf.stages.components import _label_batches, component_labels

    component_labels(np.array([1, 2, 2, 3], dtype=np.int64))  # loads scipy
    src, dst = join_like_edges(n_edges, seed=2)
    # The edges are what the worker reads from Spark: count them in, not in the baseline.
    chunks = [(src[i : i + BATCH_ROWS].copy(), dst[i : i + BATCH_ROWS].copy()) for i in range(0, n_edges, BATCH_ROWS)]
    del src, dst
    edges_mb = 16 * n_edges / 1e6

    def batches():
        while chunks:
            s, d = chunks.pop(0)
            yield pa.RecordBatch.from_arrays([pa.array(s), pa.array(d)], names=["src", "dst"])

    reset_peak_rss()
    base_kb = rss_kb("VmRSS")
    rows = 0
    for batch in _label_batches(batches()):
        rows += batch.num_rows
    peak_kb = rss_kb("VmHWM")
    # The chunks were in the baseline; moving into the worker's own arrays they count again,
    # so the figure is peak - base + the edges themselves (which Spark's batches would be).
    extra_mb = (peak_kb - base_kb) / 1e3 + edges_mb
    return {"edges": n_edges, "nodes": rows, "peak_mb": round(extra_mb, 1), "bytes_per_edge": round(extra_mb * 1e6 / n_edges, 1)}


# ---------------------------------------------------------------- timing


def time_paths(sizes: list[int], repeats: int, driver_memory: str) -> list[dict]:
    from simhash_udf.stages.components import LOCAL_MAX_EDGES, connected_components

    spark = bench_session(
        "components-bench", driver_memory, conf={"spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "4"}
    )
    results = []
    for n in sizes:
        edges = spark.read.parquet(str(edges_folder(n)))
        local = connected_components(edges, edge_count=n, local_max_edges=max(LOCAL_MAX_EDGES, n))
        distributed = connected_components(edges, edge_count=n, local_max_edges=-1)
        diff = local.exceptAll(distributed).count() + distributed.exceptAll(local).count()
        nodes = local.count()
        log(f"{n} edges: {nodes} nodes; local and distributed outputs differ in {diff} rows")

        worker_peak: dict[int, int] = {}

        def run(limit: int):
            def action():
                # The largest Python process under this one: the worker that labels the edges.
                with TreeMemory(os.getpid()) as memory:
                    connected_components(edges, edge_count=n, local_max_edges=limit).write.format("noop").mode("overwrite").save()
                worker_peak[limit] = max(worker_peak.get(limit, 0), memory.peak_python_one)
            return action

        runs = interleaved(
            {"local": run(max(LOCAL_MAX_EDGES, n)), "distributed": run(-1)},
            repeats,
            log=lambda name, repeat, r, failed: log(f"{n} edges, {name} #{repeat}: {r.wall_s[-1]:.2f} s"),
        )
        medians = {name: statistics.median(r.wall_s) for name, r in runs.items()}
        results.append({
            "edges": n,
            "nodes": nodes,
            "outputs_differ_rows": diff,
            "wall_s": {name: [round(x, 2) for x in r.wall_s] for name, r in runs.items()},
            "median_s": {name: round(m, 2) for name, m in medians.items()},
            "ratio_distributed_over_local": round(medians["distributed"] / medians["local"], 1),
            "peak_python_worker_mb": {
                "local": round(worker_peak[max(LOCAL_MAX_EDGES, n)] / 1e6),
                "distributed": round(worker_peak[-1] / 1e6),
            },
        })
        log(f"{n} edges: median local {medians['local']:.2f} s, distributed {medians['distributed']:.2f} s, "
            f"ratio {medians['distributed'] / medians['local']:.1f}x")
    spark.stop()
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edges", default="66000,2300000", help="edge counts to time, comma-separated")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--memory", action="store_true", help="measure the local path's worker memory instead")
    parser.add_argument("--memory-edges", default="1000000,4000000,10000000")
    parser.add_argument("--memory-worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory_worker is not None:
        print(json.dumps(memory_worker(args.memory_worker)))
        return
    if args.memory:
        document = {"memory": memory_probes("bench.components_bench", [int(x) for x in args.memory_edges.split(",")])}
    else:
        document = {"timing": time_paths([int(x) for x in args.edges.split(",")], args.repeats, args.driver_memory)}
    print(json.dumps(document, indent=2))


if __name__ == "__main__":
    main()
