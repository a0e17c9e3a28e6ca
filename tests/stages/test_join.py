"""The band-split self-join against an all-pairs brute force in numpy.

About 20,000 distinct fingerprints: uniformly random ones (practically never within 6 bits of
each other), planted clusters and chains of near duplicates, and the edge values of a signed
64-bit reading (0, -1, -2**63, 2**63 - 1 and their neighbours, so pairs across the sign bit
exist). The expected pairs come from XOR + `np.bitwise_count` over every pair, not from the
band plan, so a pair the plan misses or reports twice shows up.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from generators import near_centre
from pyspark.sql import functions as F

from simhash_udf.core import bands, hot_runs
from simhash_udf.run.session import settings_restored
from simhash_udf.stages import join
from simhash_udf.stages.scratch import Stages

pytestmark = pytest.mark.spark

MAX_K = 6
N_TARGET = 20_000
ALL = (1 << 64) - 1
SIGN = 1 << 63


def _signed(value: int) -> int:
    value &= ALL
    return value - (1 << 64) if value & SIGN else value


def _flip(value: int, n_bits: int, rng: np.random.Generator, must: tuple[int, ...] = ()) -> int:
    """`value` (unsigned) with n_bits distinct bits flipped, including the positions in `must`."""
    others = [b for b in range(64) if b not in must]
    chosen = list(must) + [int(b) for b in rng.choice(others, size=n_bits - len(must), replace=False)]
    for bit in chosen:
        value ^= 1 << bit
    return value


def _make_fingerprints() -> np.ndarray:
    """Distinct fingerprints as uint64 (the same bits Spark reads as signed longs)."""
    rng = np.random.default_rng(20_250_611)
    planted: list[int] = []

    # Edge values and every one-bit neighbour of 0 and of -1: a 65-clique at distance <= 2
    # around each, and -2**63 / 2**63 - 1 among the neighbours (0 ^ bit 63, -1 ^ bit 63).
    edges = [0, ALL, SIGN, SIGN - 1]
    planted += edges
    for bit in range(64):
        planted += [1 << bit, ALL ^ (1 << bit)]
    # 1..6 bits away from each edge value, with and without the sign bit among the flips.
    for value in edges:
        for d in range(1, MAX_K + 1):
            for _ in range(3):
                planted.append(_flip(value, d, rng))
            planted.append(_flip(value, d, rng, must=(63,)))
            planted.append(_flip(value, d, rng, must=(0,)))

    # Clusters: members 1..6 bits from a random seed (so members are up to 12 bits apart).
    for _ in range(400):
        seed = int(rng.integers(0, 1 << 64, dtype=np.uint64))
        planted.append(seed)
        for _ in range(int(rng.integers(1, 8))):
            planted.append(_flip(seed, int(rng.integers(1, MAX_K + 1)), rng))
    # Chains: each step 1..3 bits from the previous member.
    for _ in range(150):
        value = int(rng.integers(0, 1 << 64, dtype=np.uint64))
        planted.append(value)
        for _ in range(int(rng.integers(2, 7))):
            value = _flip(value, int(rng.integers(1, 4)), rng)
            planted.append(value)

    values = np.unique(np.array(planted, dtype=np.uint64))
    while len(values) < N_TARGET:
        extra = rng.integers(0, np.iinfo(np.uint64).max, size=N_TARGET - len(values), dtype=np.uint64, endpoint=True)
        values = np.unique(np.concatenate([values, extra]))
    return rng.permutation(values)


def _brute_force_pairs(values: np.ndarray, max_k: int, chunk: int = 512) -> list[tuple[int, int, int]]:
    """Every unordered pair within 1..max_k bits: (a, b, distance), a < b as signed longs."""
    signed = values.view(np.int64)
    found: list[tuple[int, int, int]] = []
    n = len(values)
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        distance = np.bitwise_count(values[start:stop, None] ^ values[None, start:])
        rows, cols = np.nonzero((distance >= 1) & (distance <= max_k))
        cols = cols + start
        keep = cols > rows + start  # upper triangle: each unordered pair once
        for i, j, d in zip(rows[keep] + start, cols[keep], distance[rows[keep], cols[keep] - start]):
            a, b = int(signed[i]), int(signed[j])
            found.append((min(a, b), max(a, b), int(d)))
    return found


@pytest.fixture(scope="module")
def data(spark):
    values = _make_fingerprints()
    assert len(np.unique(values)) == len(values)
    expected = _brute_force_pairs(values, MAX_K)
    frame = spark.createDataFrame([(int(v),) for v in values.view(np.int64)], "fingerprint long").cache()
    assert frame.count() == len(values)
    yield values, expected, frame
    frame.unpersist()


def test_fixture_covers_the_edge_cases(data):
    """The data really has what the join tests rely on (else they prove little)."""
    values, expected, _ = data
    signed = set(values.view(np.int64).tolist())
    assert {0, -1, -(2**63), 2**63 - 1} <= signed
    assert 19_000 <= len(values) <= 22_000
    by_distance = Counter(d for _, _, d in expected)
    assert all(by_distance[d] >= 50 for d in range(1, MAX_K + 1)), by_distance
    # Pairs across the sign bit: one negative and one non-negative member.
    across = [p for p in expected if p[0] < 0 <= p[1]]
    assert len(across) >= 100
    assert (-(2**63), 0, 1) in expected and (-1, 2**63 - 1, 1) in expected
    # Pairs that differ in bit 63 and in bit 0 (the ends of the first and last blocks).
    assert sum(1 for a, b, d in expected if (a ^ b) & SIGN and d >= 3) >= 10
    assert sum(1 for a, b, d in expected if (a ^ b) & 1 and d >= 3) >= 10


def _assert_same_pairs(got: list[tuple[int, int, int]], expected: list[tuple[int, int, int]]) -> None:
    got_counts, expected_counts = Counter(got), Counter(expected)
    repeated = [p for p, c in got_counts.items() if c > 1]
    missing = sorted(set(expected_counts) - set(got_counts))
    extra = sorted(set(got_counts) - set(expected_counts))
    assert not repeated, f"{len(repeated)} pairs reported more than once, e.g. {repeated[:5]}"
    assert not missing, f"{len(missing)} pairs within k missed, e.g. {missing[:5]}"
    assert not extra, f"{len(extra)} pairs reported that brute force does not have, e.g. {extra[:5]}"
    assert len(got) == len(expected)


def _run(frame, plan: bands.BandPlan) -> list[tuple[int, int, int]]:
    result = join.near_duplicate_pairs(frame, plan)
    assert [(f.name, f.dataType.simpleString()) for f in result.schema.fields] == [
        ("fp_a", "bigint"),
        ("fp_b", "bigint"),
        ("distance", "int"),
    ]
    return [(r.fp_a, r.fp_b, r.distance) for r in result.collect()]


@pytest.mark.parametrize("k", range(MAX_K + 1))
def test_chosen_plan_finds_exactly_the_brute_force_pairs(data, k):
    values, expected_all, frame = data
    expected = [p for p in expected_all if p[2] <= k]
    plan = bands.choose_plan(len(values), k)
    got = _run(frame, plan)
    assert all(a < b for a, b, _ in got)
    _assert_same_pairs(got, expected)
    if k > 0:
        assert expected, "the data must have pairs within k for this to test anything"


@pytest.mark.parametrize(
    ("k", "blocks"),
    [
        (3, 4),
        (3, 5),
        (3, 6),
        (3, 8),
        (2, 3),
        (5, 6),
        # Many tables (64, 21 and 84): seconds each, so only in the slow run.
        pytest.param(1, 64, marks=pytest.mark.slow),
        pytest.param(2, 7, marks=pytest.mark.slow),
        pytest.param(6, 9, marks=pytest.mark.slow),
    ],
)
def test_explicit_block_counts_find_exactly_the_brute_force_pairs(data, k, blocks):
    """Plans the cost model would not choose: uneven block widths, 1-bit blocks, many tables."""
    _, expected_all, frame = data
    expected = [p for p in expected_all if p[2] <= k]
    got = _run(frame, bands.choose_plan(N_TARGET, k, blocks))
    assert all(a < b for a, b, _ in got)
    _assert_same_pairs(got, expected)


def test_pairs_across_the_sign_bit_on_a_tiny_frame(spark):
    """The four edge values alone: -2**63 < 0 and -1 < 2**63 - 1 as signed longs."""
    frame = spark.createDataFrame([(0,), (-1,), (-(2**63),), (2**63 - 1,), (1,)], "fingerprint long")
    got = _run(frame, bands.choose_plan(5, 2))
    _assert_same_pairs(got, [(-(2**63), 0, 1), (-1, 2**63 - 1, 1), (0, 1, 1), (-(2**63), 1, 2)])


def _expected_buckets(values: np.ndarray, plan: bands.BandPlan) -> dict[tuple[int, int], int]:
    """(table, key) -> size for every bucket with more than one member, by numpy."""
    buckets: dict[tuple[int, int], int] = {}
    for table in range(plan.n_tables):
        keys = values & np.uint64(plan.table_mask(table))
        uniq, counts = np.unique(keys, return_counts=True)
        for key, count in zip(uniq[counts > 1].view(np.int64), counts[counts > 1]):
            buckets[(table, int(key))] = int(count)
    return buckets


@pytest.mark.parametrize(("k", "blocks"), [(3, 4), (2, 3), pytest.param(4, 5, marks=pytest.mark.slow)])
def test_bucket_sizes_match_numpy_and_count_the_candidate_rows(data, k, blocks):
    values, _, frame = data
    plan = bands.choose_plan(len(values), k, blocks)
    sizes = join.bucket_sizes(frame, plan)
    got = {(r.table, r.key): r.size for r in sizes.collect()}
    expected = _expected_buckets(values, plan)
    assert got == expected
    assert expected, "no bucket with two members: the test would prove nothing"

    candidates = join.candidate_pairs(frame, plan)
    per_table = {r.table: r["count"] for r in candidates.groupBy("table").count().collect()}
    expected_per_table: Counter[int] = Counter()
    for (table, _), size in expected.items():
        expected_per_table[table] += size * (size - 1) // 2
    assert per_table == dict(expected_per_table)
    total = sizes.agg(F.sum(F.col("size") * (F.col("size") - 1) / 2).cast("long")).first()[0]
    assert total == candidates.count() == sum(expected_per_table.values())


def test_candidate_pairs_are_the_pairs_sharing_a_key(data):
    """Each candidate row is a distinct pair fp_a < fp_b with equal keys in its table."""
    values, _, frame = data
    plan = bands.choose_plan(len(values), 3, 4)
    rows = [(r.table, r.fp_a, r.fp_b) for r in join.candidate_pairs(frame, plan).collect()]
    assert len(rows) == len(set(rows))
    expected = set()
    for table in range(plan.n_tables):
        mask = plan.table_mask(table)
        groups: dict[int, list[int]] = {}
        for v in values.tolist():
            groups.setdefault(v & mask, []).append(_signed(v))
        for members in groups.values():
            members.sort()
            expected.update((table, a, b) for i, a in enumerate(members) for b in members[i + 1 :])
    assert set(rows) == expected


def _expected_candidates(values: np.ndarray, plan: bands.BandPlan) -> tuple[int, int]:
    """(pairs sharing a table's key and one of its sub-blocks, largest (table, key) bucket),
    counted with np.unique over the masked values: what the two-level join compares."""
    candidates, largest = 0, 0
    for t in range(plan.n_tables):
        mask = plan.table_mask(t)
        _, counts = np.unique(values & np.uint64(mask), return_counts=True)
        largest = max(largest, int(counts.max()))
        for sub in bands.sub_block_masks(ALL ^ mask, plan.k + 1):
            _, counts = np.unique(values & np.uint64(mask | sub), return_counts=True)
            candidates += int((counts * (counts - 1) // 2).sum())
    return candidates, largest


@pytest.mark.parametrize("on_driver", [True, False], ids=["driver", "spark"])
@pytest.mark.parametrize(("k", "blocks"), [(1, None), (3, None), (3, 5), (5, None)])
def test_band_join_pairs_and_its_own_counts(data, k, blocks, on_driver, monkeypatch):
    """The job's path: pairs equal brute force, and the counts the join returns beside them
    (candidates, band rows, largest bucket) equal numpy's, with no hot run in this data;
    whether the kernel runs on the driver (a small join) or in Spark's partitions."""
    values, expected_all, frame = data
    monkeypatch.setattr(join, "DRIVER_BAND_ROWS", 10**9 if on_driver else 0)
    plan = bands.choose_plan(len(values), k, blocks)
    joined = join.band_join(frame, plan, len(values)).localCheckpoint()
    stats = join.join_stats(joined, plan, len(values))
    got = [(r.fp_a, r.fp_b, r.distance) for r in join.join_pairs(joined, stats["summarised_runs"] > 0).collect()]
    _assert_same_pairs(got, [p for p in expected_all if p[2] <= k])
    assert stats["summarised_runs"] == 0 and stats["hot_buckets"] == []
    assert stats["band_rows"] == len(values) * plan.n_tables
    candidates, largest = _expected_candidates(values, plan)
    assert stats["candidate_pairs"] == candidates
    assert stats["largest_bucket"] == largest


def _hot_members(seed: int, size: int) -> np.ndarray:
    """`size` fingerprints near one centre (`generators.near_centre`), sorted: one run of all
    of them in the tables of BandPlan(3, 4) that keep the high blocks."""
    return np.array(sorted(near_centre(seed, size)[1]), np.uint64)


def test_join_stats_report_the_hot_threshold_used(spark):
    """join_stats says which threshold the join ran with: the one passed to band_join, the
    default otherwise, None when nothing is summarised."""
    values = _hot_members(4, 800)
    frame = spark.createDataFrame([(int(v),) for v in values.view(np.int64)], "fingerprint long")
    plan = bands.BandPlan(3, 4)
    for given, expected in ((500, 500), (None, None)):
        joined = join.band_join(frame, plan, len(values), hot_run_size=given).localCheckpoint()
        stats = join.join_stats(joined, plan, len(values))
        assert stats["hot_run_size"] == expected
        if given is not None:
            assert stats["summarised_runs"] > 0 and all(b["size"] > given for b in stats["hot_buckets"])
        else:
            assert stats["summarised_runs"] == 0
    joined = join.band_join(frame, plan, len(values)).localCheckpoint()
    stats = join.join_stats(joined, plan, len(values))
    assert stats["hot_run_size"] == hot_runs.HOT_RUN_SIZE and stats["summarised_runs"] == 0


ON_DRIVER_OR_NOT = pytest.mark.parametrize("on_driver", [True, False], ids=["driver", "spark"])


@ON_DRIVER_OR_NOT
@pytest.mark.parametrize("hot_run_size", [500, None], ids=["hot_runs_summarised", "none"])
def test_join_stats_observed_while_the_join_is_stored_equal_those_read_after(spark, tmp_path, hot_run_size, on_driver, monkeypatch):
    """What a run does (`stats_aggregates` observed by `Stages.materialise`) against the
    aggregation join_stats runs itself, with hot runs (listed from the stored rows) and without;
    the kernel on the driver or in Spark's partitions."""
    monkeypatch.setattr(join, "DRIVER_BAND_ROWS", 10**9 if on_driver else 0)
    values = _hot_members(4, 800)
    frame = spark.createDataFrame([(int(v),) for v in values.view(np.int64)], "fingerprint long")
    plan = bands.BandPlan(3, 4)
    stages = Stages(work=str(tmp_path / "work"), spark=spark)
    joined = stages.materialise(
        "verify", join.band_join(frame, plan, len(values), hot_run_size=hot_run_size),
        observe=join.stats_aggregates(),
    )
    observed = join.join_stats(joined, plan, len(values), totals=stages.observed["verify"])
    assert observed == join.join_stats(joined, plan, len(values))
    assert (observed["summarised_runs"] > 0) == (hot_run_size is not None)
    assert observed["candidate_pairs"] > 0 and observed["band_rows"] == len(values) * plan.n_tables


@pytest.mark.parametrize("checked", [False, True], ids=["unchecked", "half_checked"])
def test_a_band_join_kept_on_the_driver_has_the_rows_and_counts_spark_gives(spark, tmp_path, checked, monkeypatch):
    """`finder.band_join_stage` keeps a small join on the driver, unstored: its pairs and hot
    runs are those of the join run in Spark's partitions, its row count is its frame's, and its
    totals (`join.stats_totals`, in Arrow) are what Spark's `stats_aggregates` compute over the
    same rows, with hot runs summarised and without. A collect of the kept frame runs no Spark
    job."""
    from simhash_udf.stages.finder import BAND_JOIN_STAGE, band_join_stage

    values = _hot_members(4, 800)
    rows = [(int(v), i % 2 == 0) for i, v in enumerate(values.view(np.int64))]
    frame = spark.createDataFrame(rows, "fingerprint long, checked boolean")
    if not checked:
        frame = frame.select("fingerprint")
    plan = bands.BandPlan(3, 4)
    n = len(values)
    aggregates = [c.alias(k) for k, c in join.stats_aggregates().items()]

    stages = Stages(work=str(tmp_path / "work"), spark=spark)
    stages.count_jobs(spark, f"test-kept-{tmp_path.name}")
    assert join.joins_on_driver(n, plan)
    kept = band_join_stage(stages, frame, plan, n)
    before = stages.spark_jobs()
    kept_rows = kept.collect()
    assert stages.spark_jobs() == before
    assert stages.rows[BAND_JOIN_STAGE] == len(kept_rows)
    assert stages.observed[BAND_JOIN_STAGE] == kept.agg(*aggregates).first().asDict()

    def pairs_and_hot_runs(rows):
        # Pairs, and which hot runs were found; a hot run's summary edges, and a partition's
        # own counts, depend on what else its partition holds (one partition against several).
        return (
            sorted(tuple(r) for r in rows if r["kind"] == join.PAIR),
            sorted((r["table"], r["key"], r["sub_block"], r["size"]) for r in rows if r["kind"] == join.HOT_RUN),
        )

    for hot_run_size in (500, None):
        local, local_rows, totals = join.local_band_join(frame, plan, hot_run_size=hot_run_size)
        monkeypatch.setattr(join, "DRIVER_BAND_ROWS", 0)
        in_spark = join.band_join(frame, plan, n, hot_run_size=hot_run_size)
        monkeypatch.undo()
        assert pairs_and_hot_runs(local.collect()) == pairs_and_hot_runs(in_spark.collect())
        assert local_rows == local.count()
        assert totals == local.agg(*aggregates).first().asDict()
        spark_totals = in_spark.agg(*aggregates).first().asDict()
        for name in ("band_rows", "comparisons", "hot_runs", "hot_listed", "largest_bucket", "hot_run_size"):
            assert totals[name] == spark_totals[name], name
        assert (totals["hot_runs"] > 0) == (hot_run_size is not None)


@ON_DRIVER_OR_NOT
def test_checked_members_of_a_hot_run_are_listed_not_summarised(spark, on_driver, monkeypatch):
    """Fingerprints the short-text check looks at (`checked`): a hot run lists all their
    pairs within k as pairs, so with every member checked the join's pairs are exactly
    brute force's although the run is hot; with half checked, every pair with a checked
    member is there, and the rest is a summary of the unchecked ones. The kernel on the
    driver or in Spark's partitions."""
    monkeypatch.setattr(join, "DRIVER_BAND_ROWS", 10**9 if on_driver else 0)
    values = _hot_members(6, 900)
    expected = _brute_force_pairs(values, 3)
    signed = values.view(np.int64)
    plan = bands.BandPlan(3, 4)
    for share in (1.0, 0.5):
        flags = np.random.default_rng(1).random(len(values)) < share
        frame = spark.createDataFrame(
            [(int(v), bool(c)) for v, c in zip(signed, flags)], "fingerprint long, checked boolean"
        )
        joined = join.band_join(frame, plan, len(values), hot_run_size=500).localCheckpoint()
        stats = join.join_stats(joined, plan, len(values))
        assert stats["summarised_runs"] > 0, "the run was not hot"
        got = [(r.fp_a, r.fp_b, r.distance) for r in join.join_pairs(joined, True).collect()]
        assert len(got) == len(set(got))
        checked = {int(v) for v, c in zip(signed, flags) if c}
        with_checked = {p for p in expected if p[0] in checked or p[1] in checked}
        assert set(got) <= set(expected)
        assert with_checked <= set(got), f"{len(with_checked - set(got))} pairs with a checked member missing"
        if share == 1.0:
            assert set(got) == set(expected)
        assert stats["listed_pairs"] > 0


def test_summary_edges_are_broadcast_only_under_sparks_threshold(spark):
    """A hot run's summary can hold as many edges as the run has members (a template that is a
    large share of a crawl): join_pairs must leave the choice of a broadcast to Spark's size
    threshold. With the threshold off, no broadcast; the pairs are unchanged."""
    values = _hot_members(9, 900)
    frame = spark.createDataFrame([(int(v),) for v in values.view(np.int64)], "fingerprint long")
    plan = bands.BandPlan(3, 4)
    joined = join.band_join(frame, plan, len(values), hot_run_size=500).localCheckpoint()
    assert join.join_stats(joined, plan, len(values))["summarised_runs"] > 0
    settings = ("spark.sql.autoBroadcastJoinThreshold", "spark.sql.adaptive.autoBroadcastJoinThreshold")
    with settings_restored(spark, settings):
        for key in settings:
            spark.conf.set(key, "-1")
        pairs = join.join_pairs(joined, summarised=True)
        got = pairs.collect()
        plan_text = pairs._jdf.queryExecution().executedPlan().toString()
    assert "Broadcast" not in plan_text, plan_text
    expected = set(_brute_force_pairs(values, 3))
    assert {(r.fp_a, r.fp_b, r.distance) for r in got} <= expected
    assert len(got) == len({(r.fp_a, r.fp_b) for r in got})
