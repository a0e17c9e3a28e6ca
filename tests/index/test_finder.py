"""The two finders of `simhash_udf.stages.finder`: the self-join (`SelfJoinFinder`) and the
index's (`IndexFinder` over an `IndexSession`), called directly as `pipeline.run` calls them.

On one batch into an empty index both must find what brute force finds: every pair within k
(`generators.brute_force_pairs`) and, as clusters, the connected components of those pairs
plus exact copies (a union-find written here). Each plan must say how it was chosen; the
index's plan is the one its manifest then stores (read from disk, not through the library).
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from generators import brute_force_pairs, planted_rows, popcount64

from simhash_udf.core import bands
from simhash_udf.core.config import DedupeConfig, IndexOptions
from simhash_udf.files import outputs
from simhash_udf.index.finder import IndexFinder
from simhash_udf.index.session import IndexSession
from simhash_udf.stages.scratch import Stages
from simhash_udf.stages.self_join import SelfJoinFinder

pytestmark = pytest.mark.spark

K = 3
CONFIG = DedupeConfig(fingerprint_col="fp", k=K)


@pytest.fixture(scope="module")
def batch(tmp_path_factory) -> tuple[Path, list[tuple[int, int]]]:
    """A Parquet batch of planted fingerprints (groups within K of a centre, exact repeats,
    random singletons): (path, [(id, fingerprint)])."""
    rows = [(i + 1, fp) for i, fp in planted_rows(seed=12, groups=25, singletons=60)]
    path = tmp_path_factory.mktemp("finder") / "batch.parquet"
    write_batch(path, rows)
    return path, rows


def write_batch(path: Path, rows: list[tuple[int, int]]) -> None:
    pq.write_table(pa.table({"id": pa.array([r[0] for r in rows], pa.int64()),
                             "fp": pa.array([r[1] for r in rows], pa.int64())}), path)


def find_and_commit(finder: IndexFinder, docs, config: DedupeConfig, stages: Stages):
    """As `pipeline.run` drives a finder: find, then commit, or abort on any failure (the
    segment is written by `find`, the version published by `commit`)."""
    try:
        found = finder.find(docs, config, stages)
        finder.commit()
    except BaseException:
        finder.abort()
        raise
    return found


def components(rows: list[tuple[int, int]], k: int) -> set[frozenset[int]]:
    """Ids grouped by union-find over every pair of fingerprints within k (0 = exact copies)."""
    parent = {doc_id: doc_id for doc_id, _ in rows}

    def root(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, (ia, fa) in enumerate(rows):
        for ib, fb in rows[i + 1:]:
            if popcount64(fa ^ fb) <= k:
                parent[root(ia)] = root(ib)
    groups: dict[int, set[int]] = {}
    for doc_id, _ in rows:
        groups.setdefault(root(doc_id), set()).add(doc_id)
    return {frozenset(g) for g in groups.values()}


def found_clusters(found) -> set[frozenset[int]]:
    by_cluster: dict[object, set[int]] = {}
    for r in found.clusters.select("id", "cluster_id").collect():
        by_cluster.setdefault(r["cluster_id"], set()).add(r["id"])
    return {frozenset(g) for g in by_cluster.values()}


def found_pairs(found) -> set[tuple[int, int, int]]:
    return {(r["id_a"], r["id_b"], r["distance"]) for r in found.pairs.collect()}


@pytest.mark.slow
def test_both_finders_find_what_brute_force_finds_on_one_batch_into_an_empty_index(spark, batch, tmp_path):
    path, rows = batch
    docs = spark.read.parquet(str(path))
    expected_pairs = brute_force_pairs(rows, K)
    expected_clusters = components(rows, K)
    assert len(expected_pairs) > 20 and any(len(c) > 2 for c in expected_clusters)  # the data plants some

    self_join = SelfJoinFinder().find(docs, CONFIG, Stages())
    session = IndexSession.open(spark, IndexOptions(str(tmp_path / "index"), "day1"), CONFIG, str(path))
    finder = IndexFinder(session)
    against_index = find_and_commit(finder, docs, CONFIG, Stages(work=str(tmp_path / "scratch")))
    for found in (self_join, against_index):
        assert found_pairs(found) == expected_pairs
        assert found_clusters(found) == expected_clusters
    # Same documents kept, same exact and near duplicates.
    status = {r["id"]: r["status"] for r in self_join.clusters.select("id", "status").collect()}
    assert {r["id"]: r["status"] for r in against_index.clusters.select("id", "status").collect()} == status

    distinct = len({fp for _, fp in rows})
    # The self-join's plan: the cost model's, for the batch's distinct fingerprints.
    assert self_join.plan.chosen_by == bands.CHOSEN_BY_MODEL and self_join.plan.planned_for == distinct
    assert self_join.join_stats["distinct_fingerprints"] == distinct
    # A new index's plan: the lookup model's for --index-size, then stored in its manifest.
    assert against_index.plan.chosen_by == bands.CHOSEN_BY_LOOKUP_MODEL
    assert against_index.plan.planned_for == IndexOptions.expected_size
    manifest = json.loads(sorted((tmp_path / "index" / "manifests").glob("*.json"))[-1].read_text())
    assert (manifest["k"], manifest["blocks"]) == (K, against_index.plan.blocks)
    assert finder.report_sections()["index"]["band_plan"]["blocks"] == manifest["blocks"]
    assert SelfJoinFinder().report_sections() == {}


@pytest.mark.slow
def test_the_index_finder_of_a_second_batch_uses_the_manifests_plan_and_finds_pairs_across(spark, batch, tmp_path):
    """Day 2 into the index of day 1: its plan is the manifest's, whatever --blocks the
    first run was given, and the pairs it reports are those with a fingerprint new to the
    index, against brute force over both days."""
    path, rows = batch
    half = len(rows) // 2
    day1, day2 = rows[:half], rows[half:]
    paths = []
    for name, part in (("day1", day1), ("day2", day2)):
        paths.append(tmp_path / f"{name}.parquet")
        write_batch(paths[-1], part)
    index = str(tmp_path / "index")
    seven = DedupeConfig(fingerprint_col="fp", k=K, blocks=7)
    first = IndexFinder(IndexSession.open(spark, IndexOptions(index, "day1"), seven, str(paths[0])))
    made = find_and_commit(first, spark.read.parquet(str(paths[0])), seven, Stages(work=str(tmp_path / "scratch1")))
    assert made.plan.chosen_by == bands.CHOSEN_BY_BLOCKS

    second = IndexFinder(IndexSession.open(spark, IndexOptions(index, "day2"), CONFIG, str(paths[1])))
    found = find_and_commit(second, spark.read.parquet(str(paths[1])), CONFIG, Stages(work=str(tmp_path / "scratch2")))
    assert found.plan == bands.BandPlan(K, 7) and found.plan.chosen_by == bands.CHOSEN_BY_MANIFEST
    assert second.report_sections()["index"]["band_plan"]["chosen_by"] == found.plan.reason

    old = {fp for _, fp in day1}
    new_fps = {fp for _, fp in day2} - old
    # Every pair within K that has a fingerprint day 1 did not have, each fingerprint named by
    # the first id that carried it (ids grow with the day).
    expected = {
        p for p in brute_force_pairs(rows, K)
        if {fp for doc_id, fp in rows if doc_id in (p[0], p[1])} & new_fps
    }
    assert found_pairs(found) == expected


def stored_plans(monkeypatch) -> list[tuple[str, str]]:
    """(path, physical plan as `DataFrame.explain` prints it) of every frame a stage stores
    from now on (`Stages.materialise` writes through `files.outputs.write_parquet`); the
    frames are then written as before."""
    plans = []
    write = outputs.write_parquet

    def recording(frame, path, *args, **kwargs):
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            frame.explain()
        plans.append((path, printed.getvalue()))
        return write(frame, path, *args, **kwargs)

    monkeypatch.setattr(outputs, "write_parquet", recording)
    return plans


@pytest.mark.slow
def test_no_stage_of_either_finder_joins_by_a_nested_loop(spark, batch, tmp_path, monkeypatch):
    """A join with no key to hash on (a condition like `a = x OR b = x`) runs as a nested loop
    over both sides: quadratic, and at a crawl's size it never ends (the index's pairs stage
    joined the batch's pairs to its new fingerprints so: 4M new fingerprints and 67k pairs
    were still running after 6 minutes). No stage of the self-join, of a first batch into an
    empty index or of a second batch into it plans one."""
    path, rows = batch
    half = len(rows) // 2
    paths = []
    for name, part in (("day1", rows[:half]), ("day2", rows[half:])):
        paths.append(tmp_path / f"{name}.parquet")
        write_batch(paths[-1], part)
    plans = stored_plans(monkeypatch)
    SelfJoinFinder().find(spark.read.parquet(str(path)), CONFIG, Stages(work=str(tmp_path / "scratch0")))
    index = str(tmp_path / "index")
    for day, day_path in enumerate(paths, start=1):
        finder = IndexFinder(IndexSession.open(spark, IndexOptions(index, f"day{day}"), CONFIG, str(day_path)))
        find_and_commit(finder, spark.read.parquet(str(day_path)), CONFIG, Stages(work=str(tmp_path / f"scratch{day}")))
    stages = {Path(stored).name.split("-", 1)[-1] for stored, _ in plans}
    assert {"distinct_fingerprints", "verify", "clusters", "index_pairs"} <= stages, stages
    looped = [(stored, plan) for stored, plan in plans if "NestedLoopJoin" in plan or "CartesianProduct" in plan]
    assert not looped, looped[0]
