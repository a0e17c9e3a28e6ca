"""bench/sketch_route.py: its nodes and its memory probe. No Spark (the timing is the bench's).

Oracles: the nodes are checked against what `sketch_join` requires of them (distinct
fingerprints) and against the near copies the generator plants (a copy's sketch agrees with
its source's on most values, its fingerprint one bit away); the probe runs the one-task code
itself and is checked against the core's own candidates on the same nodes.
"""

from __future__ import annotations

import numpy as np

from bench import sketch_route
from simhash_udf.core.config import SketchConfig
from simhash_udf.core.sketch_candidates import checked_candidates
from simhash_udf.stages.sketch_join import HOT_BUCKET_SIZE


def test_nodes_are_distinct_with_near_copies_one_bit_away():
    fingerprints, sketches = sketch_route.random_nodes(5_000, 128, seed=1)
    assert len(np.unique(fingerprints)) == len(fingerprints) > 4_900
    assert sketches.shape == (len(fingerprints), 128) and sketches.dtype == np.uint16
    # Every near copy has a source among the first 90% whose sketch agrees on most values.
    originals = sketches[: int(5_000 * (1 - sketch_route.NEAR_COPY_SHARE))]
    agree = (sketches[-100:, None, :] == originals[None, :, :]).mean(axis=2).max(axis=1)
    assert (agree > 0.8).all()
    distance = np.bitwise_count(
        fingerprints[-100:, None].view(np.uint64) ^ fingerprints[None, : len(originals)].view(np.uint64)
    ).min(axis=1)
    assert (distance == 1).all()


def test_the_memory_probe_runs_the_one_task_route_on_the_nodes():
    figures = sketch_route.memory_worker(3_000)
    fingerprints, sketches = sketch_route.random_nodes(3_000, SketchConfig().size, seed=3)
    order = np.argsort(fingerprints)
    c = SketchConfig()
    _, slices = checked_candidates(fingerprints[order], sketches[order], c.bands, c.rows, HOT_BUCKET_SIZE, c.jaccard, c.max_distance)
    assert figures["nodes"] == len(fingerprints)
    assert figures["candidates"] == sum(len(s.a) for s in slices) > 0
    assert figures["peak_mb"] > 0 and figures["bytes_per_node"] > 0
