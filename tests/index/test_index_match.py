"""`assign.indexed_clusters` on hand-made frames: which indexed cluster a component joins.

The expected rows are worked out by hand from the rules in its docstring (earliest run, then
smallest cluster id; a run the index does not list comes last), not by running the code.
"""

from __future__ import annotations

import pytest

from simhash_udf.index import assign

pytestmark = pytest.mark.spark

ENTRIES = "fingerprint long, cluster_id string, cluster_fingerprint long, cluster_exact_key binary, cluster_run_id string"
# Indexed nodes: (fingerprint, cluster id, run).
INDEXED = [
    (10, "a", "r2"),
    (11, "b", "r1"),
    (12, "a0", "r-unknown"),  # smallest id, but its run is not in run_seq: last
    (20, "c", "r1"),
    (21, "bb", "r1"),  # same run as "c": the smaller id wins
    (30, "d", "r2"),  # matched at distance 0: its own node
    (40, "e", "r1"),  # never matched
]
# Batch fingerprint -> indexed fingerprint it is near.
MATCHES = [(100, 10, 1), (101, 11, 2), (101, 12, 3), (200, 20, 1), (201, 21, 1), (30, 30, 0)]
# Components of the batch's graph with the indexed nodes it touches.
COMPONENTS = [(100, 10), (101, 10), (10, 10), (11, 10), (12, 10), (200, 20), (201, 20), (20, 20), (21, 20)]
RUN_SEQ = {"r1": 1, "r2": 2}


def _settings_off(spark, keys):
    before = {key: spark.conf.get(key, None) for key in keys}
    for key in keys:
        spark.conf.set(key, "-1")
    return before


def _restore(spark, before):
    for key, value in before.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)


def test_each_component_joins_its_earliest_indexed_cluster_without_a_broadcast_or_a_window(spark):
    entries = spark.createDataFrame(
        [(fp, cid, fp * 1000, bytes([fp]), run) for fp, cid, run in INDEXED], ENTRIES
    )
    matches = spark.createDataFrame(MATCHES, "fp_new long, fp_old long, distance int")
    components = spark.createDataFrame(COMPONENTS, "node long, component long")
    before = _settings_off(spark, ("spark.sql.autoBroadcastJoinThreshold", "spark.sql.adaptive.autoBroadcastJoinThreshold"))
    try:
        by_component = assign.indexed_clusters(matches, components, entries, RUN_SEQ)
        rows = sorted(tuple(r) for r in by_component.collect())
        counts = by_component.agg(*[c.alias(n) for n, c in assign.bridges().items()]).first().asDict()
        plan = by_component._jdf.queryExecution().executedPlan().toString()
    finally:
        _restore(spark, before)
    assert by_component.columns == [
        "component", "cluster_id", "cluster_fingerprint", "cluster_exact_key", "cluster_run_id", "clusters"
    ]
    # The last column: how many indexed clusters the component touches (more than one: a bridge).
    assert rows == [
        (10, "b", 11_000, bytes([11]), "r1", 3),  # b (r1) before a (r2) and a0 (unknown run)
        (20, "bb", 21_000, bytes([21]), "r1", 2),  # bb < c, both r1
        (30, "d", 30_000, bytes([30]), "r2", 1),  # distance 0: its own node
    ]
    assert counts == {"bridged_components": 2, "bridged_clusters": 5}
    # Neither a broadcast of the touched fingerprints (as many as the batch's matches) nor a
    # window that gathers all the indexed nodes a component touches in one task.
    assert "Broadcast" not in plan and "Window" not in plan, plan
