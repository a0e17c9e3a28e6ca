"""The join's numpy level (`core/pair_kernel.py` and `core/hot_runs.py`) against an all-pairs
brute force, without Spark.

The expected pairs come from XOR + popcount over every pair of the input, and the expected
components from a plain union-find over those pairs: neither uses band plans, sub-blocks or
anchors, so a pair the kernel misses, repeats or invents shows up.
"""

from __future__ import annotations

import numpy as np
import pytest
from generators import near_centre
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_udf.core import bands, config, hot_runs, limits
from simhash_udf.core.bands import BandPlan
from simhash_udf.core.hot_runs import summarise_run
from simhash_udf.core.pair_kernel import KernelPlan, join_partition


def brute_force(values: np.ndarray, k: int) -> set[tuple[int, int, int]]:
    """(a, b, distance) for every pair at 1..k bits, a < b as signed longs."""
    signed = values.view(np.int64)
    found = set()
    for i in range(0, len(values), 1024):
        dist = np.bitwise_count(values[i : i + 1024, None] ^ values[None, :])
        rows, cols = np.nonzero((dist >= 1) & (dist <= k))
        for r, c in zip(rows.tolist(), cols.tolist()):
            if c > r + i:
                a, b = int(signed[r + i]), int(signed[c])
                found.add((min(a, b), max(a, b), int(dist[r, c])))
    return found


def components(nodes: list[int], edges) -> dict[int, int]:
    """node -> smallest node of its component, by union-find."""
    parent = {v: v for v in nodes}

    def root(v: int) -> int:
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    for a, b, *_ in edges:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return {v: root(v) for v in nodes}


def planted(seed: int, n_random: int, clusters: int, max_flip: int) -> np.ndarray:
    """Distinct uint64: random ones, clusters of members 1..max_flip bits from a seed, and
    the signed edge values (0, -1, -2^63, 2^63 - 1) with neighbours."""
    rng = np.random.default_rng(seed)
    values = [rng.integers(0, 2**64, size=n_random, dtype=np.uint64, endpoint=False)]
    edge = np.array([0, 2**64 - 1, 2**63, 2**63 - 1], np.uint64)
    values += [edge, edge ^ np.uint64(1), edge ^ np.uint64(1 << 63), edge ^ np.uint64(3 << 31)]
    seeds = rng.integers(0, 2**64, size=clusters, dtype=np.uint64, endpoint=False)
    for _ in range(4):
        flipped = seeds.copy()
        for _ in range(int(rng.integers(1, max_flip + 1))):
            flipped ^= np.left_shift(np.uint64(1), rng.integers(0, 64, clusters).astype(np.uint64))
        values.append(flipped)
    values.append(seeds)
    return rng.permutation(np.unique(np.concatenate(values)))


def kernel_pairs(values: np.ndarray, plan: BandPlan, partitions: int = 1, hot: int | None = None):
    """The kernel over `partitions` partitions, rows routed by (table, key) as Spark does."""
    kernel_plan = KernelPlan.of(plan)
    tables = np.repeat(np.arange(plan.n_tables), len(values))
    fps = np.tile(values, plan.n_tables)
    keys = fps & np.array(kernel_plan.table_masks, np.uint64)[tables]
    part = (keys * np.uint64(0x9E3779B97F4A7C15) + tables.astype(np.uint64)) % np.uint64(partitions)
    got, outputs = [], []
    for p in range(partitions):
        rows = part == np.uint64(p)
        out = join_partition(tables[rows], fps[rows].view(np.int64), kernel_plan, hot)
        outputs.append(out)
        got += list(zip(out.fp_a.tolist(), out.fp_b.tolist(), out.distance.tolist()))
    return got, outputs


@pytest.mark.parametrize("k", range(7))
def test_kernel_equals_brute_force_for_every_k(k):
    values = planted(k, 3000, 300, max(k, 1) + 1)
    expected = brute_force(values, k)
    for blocks in sorted({k + 1, k + 2, k + 4}):
        got, _ = kernel_pairs(values, BandPlan(k, blocks), partitions=3)
        assert len(got) == len(set(got)), "a pair was emitted twice"
        assert set(got) == expected, (k, blocks)
        assert all(a < b for a, b, _ in got)
    if k:
        assert len(expected) > 300  # the planted clusters really are within k


@given(st.integers(0, 2**32), st.integers(1, 5), st.integers(0, 3), st.integers(1, 4))
@settings(max_examples=25, deadline=None)
def test_kernel_equals_brute_force_property(seed, k, extra_blocks, partitions):
    values = planted(seed, 400, 60, k + 1)
    got, _ = kernel_pairs(values, BandPlan(k, k + 1 + extra_blocks), partitions)
    assert sorted(got) == sorted(brute_force(values, k))


def test_candidates_on_random_fingerprints_match_the_cost_model():
    """Random fingerprints: the pairs the kernel compares are the model's random candidates."""
    n = 300_000
    values = np.unique(np.random.default_rng(7).integers(0, 2**64, size=n, dtype=np.uint64))
    plan = BandPlan(3, 4)
    _, outputs = kernel_pairs(values, plan)
    expected = bands.plan_cost(len(values), 3, 4).random_candidates
    assert expected > 1000
    assert outputs[0].candidates == pytest.approx(expected, rel=0.2)
    # ... and far fewer than a join verifying whole buckets would compare.
    assert outputs[0].candidates * 50 < bands.plan_cost(len(values), 3, 4).bucket_pairs


def hot_cluster(seed: int, size: int, k: int) -> np.ndarray:
    """`size` members 1..3 bits from a centre (the centre included), all flips in the low 32
    bits, so every member shares the high 32 bits: with 4 blocks, tables 2 and 3 put them all
    in one bucket, and a sub-block in the high bits in one run. Plus a chain of members
    k + 1 bits from the centre and 1 bit from each other, and random fingerprints."""
    centre, members = near_centre(seed, size)
    rng = np.random.default_rng([seed, 1])
    chain, value = [], centre
    for bit in range(k + 1):
        value ^= 1 << (60 - bit)
    for step in range(5):
        chain.append(value)
        value ^= 1 << (40 + step)
    noise = rng.integers(0, 2**64, size=300, dtype=np.uint64, endpoint=False)
    return np.unique(np.concatenate([np.array(sorted(members), np.uint64), np.array(chain, np.uint64), noise]))


def component_labels(values: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """For each value (sorted uint64), the smallest index of its component (scipy)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    ia, ib = np.searchsorted(values, a), np.searchsorted(values, b)
    assert np.all(values[ia] == a) and np.all(values[ib] == b)
    graph = coo_matrix((np.ones(len(ia)), (ia, ib)), shape=(len(values), len(values)))
    _, labels = connected_components(graph, directed=False)
    smallest = np.full(labels.max() + 1, len(values))
    np.minimum.at(smallest, labels, np.arange(len(values)))
    return smallest[labels]


def all_pairs(values: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Every pair at 1..k bits, as two uint64 arrays (numpy brute force)."""
    out_a, out_b = [], []
    for i in range(0, len(values), 1024):
        dist = np.bitwise_count(values[i : i + 1024, None] ^ values[None, :])
        rows, cols = np.nonzero((dist >= 1) & (dist <= k))
        keep = cols > rows + i
        out_a.append(values[rows[keep] + i])
        out_b.append(values[cols[keep]])
    return np.concatenate(out_a), np.concatenate(out_b)


def test_hot_run_is_summarised_with_exact_components():
    k = 3
    values = hot_cluster(11, 5000, k)
    true_a, true_b = all_pairs(values, k)
    plan = BandPlan(k, k + 1)
    got, outputs = kernel_pairs(values, plan, partitions=2, hot=hot_runs.HOT_RUN_SIZE)
    hot = [h for out in outputs for h in out.hot]
    assert hot and all(h.size > hot_runs.HOT_RUN_SIZE for h in hot)
    assert {h.table for h in hot} == {2, 3}  # the tables keeping the shared high bits
    got_a = np.array([a for a, _, _ in got], np.int64).view(np.uint64)
    got_b = np.array([b for _, b, _ in got], np.int64).view(np.uint64)
    # Every edge written is a true pair at its distance ...
    assert np.all(np.bitwise_count(got_a ^ got_b) == np.array([d for *_, d in got]))
    assert np.all(np.array([d for *_, d in got]) <= k)
    # ... the clusters are exactly brute force's ...
    expected = component_labels(values, true_a, true_b)
    assert np.array_equal(component_labels(values, got_a, got_b), expected)
    assert len(np.unique(expected)) > 1 and np.bincount(expected).max() >= 5000
    # ... a hot run's summary is a spanning forest (fewer edges than members) ...
    assert all(h.edges < h.size for h in hot)
    # ... and the edges written are far fewer than the bucket's pairs, and fewer than the
    # true pairs (runs under the threshold, from tables 0 and 1, are still expanded).
    largest = max(h.size for h in hot)
    assert len(set(got)) < largest * (largest - 1) // 2 / 20
    assert len(set(got)) < len(true_a)


def test_summarise_run_links_groups_and_falls_back_to_pairwise():
    """Few anchors allowed: groups are linked through cross pairs and the rest compared
    pairwise, and the components still equal brute force's."""
    k = 2
    rng = np.random.default_rng(3)
    # Three tight groups: A and B overlap (a pair within k across them), C is apart; plus
    # loose members the anchor cap leaves to the pairwise fallback.
    base = int(rng.integers(0, 2**64, dtype=np.uint64, endpoint=False))
    group_a = [base ^ (1 << b) for b in range(10)] + [base]
    b_centre = base ^ 0b111 << 20  # 3 bits from A's centre: anchors within 3k
    group_b = [b_centre ^ (1 << b) for b in range(30, 40)] + [b_centre, base ^ 0b11 << 20]
    c_centre = base ^ (0xFFFF << 40)
    group_c = [c_centre ^ (1 << b) for b in range(10)] + [c_centre]
    loose = rng.integers(0, 2**64, size=50, dtype=np.uint64, endpoint=False).tolist()
    loose += [v ^ 1 for v in loose[:10]]
    members = np.unique(np.array(group_a + group_b + group_c + loose, np.uint64))
    expected = brute_force(members, k)
    for max_anchors in (1, 2, 3, 1000):
        a, b, d, comparisons = summarise_run(members, k, max_anchors=max_anchors)
        assert np.all(np.bitwise_count(a ^ b) == d) and np.all(d <= k) and np.all(a != b)
        signed = [(min(x, y), max(x, y), int(z)) for x, y, z in zip(a.view(np.int64).tolist(), b.view(np.int64).tolist(), d)]
        assert set(signed) <= expected
        nodes = members.view(np.int64).tolist()
        assert components(nodes, signed) == components(nodes, expected), max_anchors
        assert comparisons > 0


def assert_exact_summary(members: np.ndarray, k: int) -> tuple[set, int]:
    """summarise_run's edges are true pairs (distance <= k, as stated) whose components
    equal brute force's; returns (the edges as signed (a, b, distance), comparisons)."""
    expected = brute_force(members, k)
    a, b, d, comparisons = summarise_run(members, k)
    assert np.all(np.bitwise_count(a ^ b) == d) and np.all(d <= k) and np.all(a != b)
    signed = {(min(x, y), max(x, y), int(z)) for x, y, z in zip(a.view(np.int64).tolist(), b.view(np.int64).tolist(), d)}
    assert signed <= expected
    nodes = members.view(np.int64).tolist()
    assert components(nodes, signed) == components(nodes, expected)
    return signed, comparisons


@pytest.mark.parametrize("k, free_bits, n", [(3, 20, 6000), (2, 17, 4000), (4, 22, 5000)])
def test_a_spread_out_hot_run_is_searched_without_comparing_all_pairs(k, free_bits, n):
    """A hot key: members equal in their high bits and random in the low `free_bits` (no
    centre, so anchors cover little). The components still equal brute force's, every edge
    is a true pair, and the comparisons stay far below all pairs (they were above it when
    the uncovered rest was compared with every member)."""
    rng = np.random.default_rng(k * 100 + free_bits)
    high = np.uint64(int(rng.integers(0, 2**63)) << free_bits & (2**64 - 1))
    low = rng.choice(1 << free_bits, size=n, replace=False).astype(np.uint64)
    members = high | low
    _, comparisons = assert_exact_summary(members, k)
    assert comparisons < n * (n - 1) // 2 / 4


def test_empty_and_single_partitions():
    plan = KernelPlan.of(BandPlan(3, 4))
    out = join_partition(np.empty(0, np.int32), np.empty(0, np.int64), plan)
    assert len(out.fp_a) == 0 and out.candidates == 0
    out = join_partition(np.array([2]), np.array([-5], np.int64), plan)
    assert len(out.fp_a) == 0 and out.largest_bucket == 1


def _edges(values: np.ndarray, plan: BandPlan, partitions: int) -> set[tuple[int, int, int]]:
    got, outputs = kernel_pairs(values, plan, partitions=partitions, hot=hot_runs.HOT_RUN_SIZE)
    assert any(out.hot for out in outputs), "the run was not hot"
    return set(got)


def _spread_run(seed: int, size: int, flips: int) -> np.ndarray:
    """`size` members 1..`flips` bits from a centre, all flips in the low 24 bits: one hot
    run of BandPlan(3, 4), too spread out for one anchor to cover it."""
    rng = np.random.default_rng(seed)
    centre = int(rng.integers(0, 2**64, dtype=np.uint64, endpoint=False))
    members = {centre}
    while len(members) < size:
        value = centre
        for bit in rng.choice(24, int(rng.integers(1, flips + 1)), replace=False):
            value ^= 1 << int(bit)
        members.add(value)
    return np.array(sorted(members), np.uint64)


def test_hot_run_edges_do_not_depend_on_the_row_order():
    """A 3,000-member hot run: the edges written (pairs and summary edges, as pairs/ gets
    them after their distinct) are the same for three row orders, and all true pairs."""
    k = 3
    values = _spread_run(5, 3000, 6)
    plan = BandPlan(k, k + 1)
    rng = np.random.default_rng(0)
    orders = [values, values[::-1].copy(), rng.permutation(values)]
    edges = [_edges(v, plan, partitions=2) for v in orders]
    assert edges[0] == edges[1] == edges[2], [len(e) for e in edges]
    assert all(d == bin((a ^ b) & (2**64 - 1)).count("1") <= k for a, b, d in edges[0])


def _one_run(size: int, neighbours: int, seed: int) -> np.ndarray:
    """`size` members sharing table 3's key (bits 48..63) and its last sub-block (bits
    36..47) of BandPlan(3, 4): one run of exactly `size` members there; the low 36 bits are
    random, so its other sub-blocks hold only small runs. Plus `neighbours` members of
    another key (their own run of that size in the same partition)."""
    rng = np.random.default_rng(seed)
    low = np.unique(rng.integers(0, 1 << 36, size=size * 2, dtype=np.uint64))[:size]
    rng.shuffle(low)
    run = np.uint64(0xABCD012 << 36) | low
    other = np.uint64(0x1234045 << 36) | rng.integers(0, 1 << 36, size=neighbours, dtype=np.uint64)
    values = np.concatenate([run, other])
    assert len(np.unique(values)) == size + neighbours
    return values


@pytest.mark.parametrize("neighbours", [0, 300])
def test_a_run_is_hot_by_its_own_member_count(neighbours):
    """HOT_RUN_SIZE + 1 members: summarised, alone or beside another run in the partition;
    exactly HOT_RUN_SIZE: expanded, alone or not."""
    hot = hot_runs.HOT_RUN_SIZE
    plan = KernelPlan.of(BandPlan(3, 4))
    for size, expect_hot in ((hot + 1, True), (hot, False)):
        values = _one_run(size, neighbours, seed=size)
        out = join_partition(np.full(len(values), 3), values.view(np.int64), plan, hot)
        sizes = [h.size for h in out.hot]
        assert sizes == ([size] if expect_hot else []), (size, neighbours, sizes)


def test_one_hot_threshold():
    """The job has one hot threshold: the kernel's, which the band join and its counts (also
    those of runs against an index) default to."""
    import inspect

    from simhash_udf.stages import join

    for step in (join.band_join, join.join_stats):
        assert inspect.signature(step).parameters["hot_run_size"].default == hot_runs.HOT_RUN_SIZE


def _random_run(n: int, k: int, blocks: int) -> float:
    """Expected members of the fullest run of random fingerprints under a plan, from the
    block widths alone: the narrowest table key (its B - k narrowest blocks) plus the
    narrowest of k + 1 near-equal sub-blocks of the bits it leaves."""
    base, extra = divmod(64, blocks)
    widths = sorted([base + 1] * extra + [base] * (blocks - extra))
    key = sum(widths[: blocks - k])
    sub = (64 - key) // (k + 1)
    return n / 2.0 ** (key + sub)


@pytest.mark.parametrize("k", range(1, limits.MAX_K + 1))
def test_random_runs_stay_well_under_the_hot_threshold_for_every_allowed_k(k):
    """For every k the job accepts, the chosen plan keeps random runs at a tenth of the
    hot threshold or less, from 10^6 to 10^10 fingerprints: random data is never summarised
    and pairs/ is complete. k beyond the bound is refused."""
    for n in (10**6, 10**9, 10**10):
        plan = bands.choose_plan(n, k)
        assert _random_run(n, k, plan.blocks) <= hot_runs.HOT_RUN_SIZE / 10, (k, n, plan.blocks)
    with pytest.raises(config.ConfigError, match="hot"):
        config.DedupeConfig(k=limits.MAX_K + 1)


def test_a_spread_out_run_with_no_pair_within_k_has_no_edges():
    """A hot key whose members are all far apart (random low bits): no edges, no crash
    (the pair search used to index an empty array)."""
    values = _one_run(3000, 0, seed=9)
    assert not brute_force(values, 3)
    a, b, d, comparisons = summarise_run(values, 3)
    assert a.size == b.size == d.size == 0 and comparisons > 0


@pytest.mark.parametrize("chunk", [1, 64, 10_000])
def test_a_hot_run_searched_in_small_chunks_keeps_exact_components(monkeypatch, chunk):
    """The spread-out search hands its pairs over in chunks; whatever their size, every edge
    is a true pair and the components equal brute force's."""
    monkeypatch.setattr(hot_runs, "PAIR_CHUNK", chunk)
    rng = np.random.default_rng(chunk)
    k, free_bits, n = 3, 18, 3000
    high = np.uint64(int(rng.integers(0, 2**63)) << free_bits & (2**64 - 1))
    members = high | rng.choice(1 << free_bits, size=n, replace=False).astype(np.uint64)
    edges, _ = assert_exact_summary(members, k)
    assert len(edges) < n  # a spanning forest


def test_a_hot_keys_memory_does_not_grow_with_its_pairs():
    """A 60k-member hot key (44 shared bits, 20 random) has ~2.3M pairs within 3 bits, each
    found several times by the search: its summary must not hold them all at once (it took
    ~1.5 GB of one Python worker at 100k members). numpy's allocations are traced."""
    import tracemalloc

    rng = np.random.default_rng(60)
    members = np.uint64(0xABCDE << 20) | rng.choice(1 << 20, size=60_000, replace=False).astype(np.uint64)
    tracemalloc.start()
    try:
        a, _, _, _ = summarise_run(members, 3)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(a) == len(members) - 1  # one component here: a spanning tree
    assert peak < 96 * 2**20, f"peak {peak / 2**20:.0f} MB"
