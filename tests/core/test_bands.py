"""Pure tests of `simhash_udf.core.bands`: blocks, tables, canonical tables and the cost model."""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_udf.core.bands import (
    MAX_TABLES,
    SHUFFLE_BYTES_PER_ROW,
    BandPlan,
    block_bounds,
    choose_plan,
    plan_cost,
    plan_costs,
    to_signed,
)

MASK64 = (1 << 64) - 1


@functools.cache
def plan(k: int, blocks: int) -> BandPlan:
    return BandPlan(k, blocks)


def bits_mask(start: int, width: int) -> int:
    return sum(1 << i for i in range(start, start + width))


# --- blocks ------------------------------------------------------------------------------


@pytest.mark.parametrize("blocks", list(range(1, 65)))
def test_block_bounds_cover_64_bits_exactly_once(blocks: int) -> None:
    bounds = block_bounds(blocks)
    assert len(bounds) == blocks
    covered = [0] * 64
    for start, width in bounds:
        assert width >= 1
        for bit in range(start, start + width):
            covered[bit] += 1
    assert covered == [1] * 64
    widths = [w for _, w in bounds]
    assert max(widths) - min(widths) <= 1
    assert widths == sorted(widths, reverse=True)  # wider first, as documented
    assert [s for s, _ in bounds] == sorted(s for s, _ in bounds)


@pytest.mark.parametrize(("k", "blocks"), [(0, 1), (3, 4), (3, 6), (5, 7), (3, 64), (2, 10)])
def test_block_masks_are_disjoint_and_cover_everything(k: int, blocks: int) -> None:
    p = plan(k, blocks)
    assert len(p.block_masks) == blocks
    union = 0
    for mask, (start, width) in zip(p.block_masks, block_bounds(blocks)):
        assert mask == bits_mask(start, width)
        assert union & mask == 0
        union |= mask
    assert union == MASK64


# --- tables ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("k", "blocks", "n_tables"),
    [(3, 6, 20), (3, 4, 4), (3, 5, 10), (0, 1, 1), (0, 5, 1), (1, 2, 2), (2, 10, 45), (5, 7, 21)],
)
def test_number_of_tables_is_combinations_not_permutations(k: int, blocks: int, n_tables: int) -> None:
    p = plan(k, blocks)
    assert p.n_tables == n_tables
    assert len(p.tables) == n_tables
    assert len(set(p.tables)) == n_tables  # no table twice, in any order
    assert len({frozenset(t) for t in p.tables}) == n_tables


@pytest.mark.parametrize(("k", "blocks"), [(3, 6), (2, 5), (1, 4), (4, 9)])
def test_tables_are_sorted_subsets_of_size_b_minus_k(k: int, blocks: int) -> None:
    p = plan(k, blocks)
    assert list(p.tables) == sorted(p.tables)
    for t, chosen in enumerate(p.tables):
        assert len(chosen) == blocks - k
        assert list(chosen) == sorted(set(chosen))
        assert all(0 <= b < blocks for b in chosen)
        expected_mask = 0
        for b in chosen:
            expected_mask |= bits_mask(*block_bounds(blocks)[b])
        assert p.table_mask(t) == expected_mask
        assert p.key_bits(t) == sum(block_bounds(blocks)[b][1] for b in chosen)


def test_key_bits_for_google_plan() -> None:
    # Manku et al.: B = 6, k = 3 on 64 bits -> 20 tables with 31-33 bit keys.
    p = plan(3, 6)
    assert sorted({p.key_bits(t) for t in range(p.n_tables)}) == [31, 32, 33]


@pytest.mark.parametrize(("k", "blocks"), [(3, 3), (3, 2), (-1, 4), (0, 0), (3, 65)])
def test_invalid_band_plan(k: int, blocks: int) -> None:
    with pytest.raises(ValueError):
        BandPlan(k, blocks)


# --- canonical tables --------------------------------------------------------------------

# Plans small enough to enumerate every table in a property test.
_PLANS = [
    (k, b)
    for k in range(0, 7)
    for b in range(k + 1, 65)
    if math.comb(b, k) <= 400
]


def _agreeing_tables(p: BandPlan, a: int, b: int) -> list[int]:
    return [t for t in range(p.n_tables) if (a ^ b) & p.table_mask(t) == 0]


def _check_canonical(p: BandPlan, a: int, b: int) -> int | None:
    agreeing = _agreeing_tables(p, a, b)
    canonical = p.canonical_table(a, b)
    assert canonical == (agreeing[0] if agreeing else None)
    assert p.canonical_table(b, a) == canonical  # symmetric
    for t in agreeing:
        skipped = p.skipped_block_masks(t)
        disagrees_on_all_skipped = all((a ^ b) & m != 0 for m in skipped)
        # The per-pair SQL check: true for the canonical table and no other agreeing one.
        assert disagrees_on_all_skipped == (t == canonical), (t, canonical)
    return canonical


@given(
    st.sampled_from(_PLANS),
    st.integers(0, MASK64),
    st.data(),
)
@settings(max_examples=200, deadline=None)
def test_pairs_within_k_have_a_canonical_table(
    plan_kb: tuple[int, int], a: int, data: st.DataObject
) -> None:
    k, blocks = plan_kb
    p = plan(k, blocks)
    flips = data.draw(st.sets(st.integers(0, 63), max_size=k))
    b = a
    for bit in flips:
        b ^= 1 << bit
    canonical = _check_canonical(p, a, b)
    assert canonical is not None  # pigeonhole: never missed
    # Signed inputs (what Spark holds) give the same answer.
    assert p.canonical_table(to_signed(a), to_signed(b)) == canonical


@given(st.sampled_from(_PLANS), st.integers(0, MASK64), st.integers(0, MASK64))
@settings(max_examples=100, deadline=None)
def test_canonical_table_of_any_pair_is_the_first_agreeing_table(
    plan_kb: tuple[int, int], a: int, b: int
) -> None:
    # Pairs farther than k may still collide in a table (verification filters them by
    # distance); the canonical table is then still the first table they agree on.
    _check_canonical(plan(*plan_kb), a, b)


@given(st.sampled_from(_PLANS), st.integers(0, MASK64), st.data())
@settings(max_examples=150, deadline=None)
def test_pairs_differing_only_in_few_blocks(plan_kb: tuple[int, int], a: int, data: st.DataObject) -> None:
    # Random pairs rarely agree on any block; build pairs that differ in a chosen set of
    # blocks (possibly more than k) so agreeing tables beyond the first are exercised.
    k, blocks = plan_kb
    p = plan(k, blocks)
    differing = data.draw(st.sets(st.integers(0, blocks - 1), max_size=min(blocks, k + 2)))
    b = a
    for block in differing:
        start, width = block_bounds(blocks)[block]
        b ^= 1 << data.draw(st.integers(start, start + width - 1))
    canonical = _check_canonical(p, a, b)
    assert (canonical is None) == (len(differing) > k)


def test_canonical_table_examples() -> None:
    p = plan(3, 6)  # blocks of 11, 11, 11, 11, 10, 10 bits
    assert p.canonical_table(0, 0) == 0  # identical: blocks (0, 1, 2)
    assert p.tables[p.canonical_table(0, 1)] == (1, 2, 3)  # differs in block 0
    assert p.tables[p.canonical_table(0, (1 << 11) | (1 << 63))] == (0, 2, 3)
    assert p.canonical_table(0, 1 | (1 << 11) | (1 << 22) | (1 << 33)) is None  # 4 blocks
    assert p.skipped_block_masks(0) == []
    assert p.skipped_block_masks(p.tables.index((1, 3, 5))) == [
        p.block_masks[0],
        p.block_masks[2],
        p.block_masks[4],
    ]


# --- to_signed ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("unsigned", "signed"),
    [
        (0, 0),
        (1, 1),
        ((1 << 63) - 1, (1 << 63) - 1),
        (1 << 63, -(1 << 63)),
        (MASK64, -1),
        ((1 << 64) + 5, 5),  # higher bits are dropped
    ],
)
def test_to_signed_examples(unsigned: int, signed: int) -> None:
    assert to_signed(unsigned) == signed


@given(st.integers(0, MASK64))
@settings(max_examples=200)
def test_to_signed_matches_numpy_and_round_trips(value: int) -> None:
    signed = to_signed(value)
    assert signed == int(np.array([value], dtype=np.uint64).view(np.int64)[0])
    assert -(1 << 63) <= signed < (1 << 63)
    assert signed & MASK64 == value
    assert (signed < 0) == bool(value >> 63)
    assert to_signed(signed) == signed


# --- cost model --------------------------------------------------------------------------


def _tables_by_key_bits(k: int, blocks: int) -> list[tuple[int, int]]:
    """(tables, key bits) for every key width: a table keeps blocks - k of the blocks, and
    its key is wider by one bit per wide block it holds (counted, not listed)."""
    base, wide = divmod(64, blocks)
    narrow = blocks - wide
    kept = blocks - k
    return [
        (math.comb(wide, j) * math.comb(narrow, kept - j), kept * base + j)
        for j in range(0, min(wide, kept) + 1)
    ]


def _expected_random_candidates(n: int, k: int, blocks: int) -> float:
    """Sum over tables of C(n, 2) / 2^key_bits."""
    pairs = n * (n - 1) / 2
    return sum(count * pairs / 2.0**key for count, key in _tables_by_key_bits(k, blocks))


def _expected_level_two(n: int, k: int, blocks: int) -> float:
    """Sum over tables and their k + 1 sub-blocks of C(n, 2) / 2^(key bits + sub-block bits):
    the sub-blocks split the 64 - key bits a table leaves out as evenly as possible."""
    pairs = n * (n - 1) / 2
    total = 0.0
    for count, key in _tables_by_key_bits(k, blocks):
        sub_base, sub_wide = divmod(64 - key, k + 1)
        for s in range(k + 1):
            total += count * pairs / 2.0 ** (key + sub_base + (1 if s < sub_wide else 0))
    return total


@pytest.mark.parametrize(
    ("n", "k", "blocks"),
    [(10**6, 3, 4), (10**6, 3, 6), (2**30, 3, 6), (12345, 5, 7), (10**9, 8, 12), (1000, 0, 1)],
)
def test_plan_cost_matches_independent_computation(n: int, k: int, blocks: int) -> None:
    cost = plan_cost(n, k, blocks)
    assert cost.blocks == blocks
    assert cost.tables == math.comb(blocks, k)
    assert cost.rows_shuffled == n * math.comb(blocks, k)
    assert cost.shuffle_bytes == cost.rows_shuffled * SHUFFLE_BYTES_PER_ROW
    assert cost.bucket_pairs == pytest.approx(_expected_random_candidates(n, k, blocks), rel=1e-9)
    assert cost.random_candidates == pytest.approx(_expected_level_two(n, k, blocks), rel=1e-9)
    assert cost.random_candidates <= cost.bucket_pairs
    base, wide = divmod(64, blocks)
    kept = blocks - k
    assert cost.min_key_bits == kept * base + max(0, kept - (blocks - wide))
    assert cost.max_key_bits == kept * base + min(wide, kept)
    assert cost.cost > 0


def test_plan_cost_for_google_plan_at_a_billion() -> None:
    cost = plan_cost(2**30, 3, 6)
    assert cost.tables == 20
    assert (cost.min_key_bits, cost.max_key_bits) == (31, 33)
    # 20 tables, keys of 31-33 bits: a few billion chance collisions at 2^30 fingerprints.
    assert 1e9 < cost.bucket_pairs < 1e10


def test_plan_cost_approximation_for_too_many_tables_is_close() -> None:
    # C(33, 3) = 5456 tables: the model stops listing them and uses the mean key width.
    cost = plan_cost(10**6, 3, 33)
    assert cost.tables == 5456
    assert cost.bucket_pairs == pytest.approx(
        _expected_random_candidates(10**6, 3, 33), rel=0.15
    )
    assert cost.random_candidates == pytest.approx(_expected_level_two(10**6, 3, 33), rel=0.15)


def test_plan_costs_stop_at_max_tables() -> None:
    costs = plan_costs(10**6, 3)
    assert [c.blocks for c in costs] == list(range(4, 4 + len(costs)))
    assert all(c.tables <= MAX_TABLES for c in costs)
    assert math.comb(costs[-1].blocks + 1, 3) > MAX_TABLES


def test_choose_plan_respects_explicit_blocks() -> None:
    assert choose_plan(10**9, 3, blocks=4) == BandPlan(3, 4)
    assert choose_plan(10, 3, blocks=12) == BandPlan(3, 12)
    with pytest.raises(ValueError):
        choose_plan(10**6, 3, blocks=3)


@pytest.mark.parametrize("k", [0, 1, 3, 5, 8, 16])
def test_choose_plan_is_valid_and_grows_with_n(k: int) -> None:
    sizes = [0, 1, 100] + [10**e for e in range(3, 11)] + [2**e for e in range(12, 34, 7)]
    chosen = {n: choose_plan(n, k) for n in sizes}
    for n, p in chosen.items():
        assert p.k == k
        assert p.blocks > k
        assert p.n_tables <= MAX_TABLES
        # It is the cheapest of the candidates the model lists.
        costs = {c.blocks: c.cost for c in plan_costs(max(n, 2), k)}
        assert costs[p.blocks] == min(costs.values())
    ordered = [chosen[n].blocks for n in sorted(chosen)]
    assert ordered == sorted(ordered), ordered


def test_choose_plan_more_blocks_for_huge_crawls_at_k3() -> None:
    small = choose_plan(10**3, 3).blocks
    # Level 2 keeps 4 blocks' candidates small far beyond a billion: wider keys pay off
    # only when the candidates of 16-bit keys + 12-bit sub-blocks outgrow the shuffle.
    assert choose_plan(10**9, 3).blocks == 4
    huge = choose_plan(10**11, 3).blocks
    assert small == 4  # few wide tables for small inputs
    assert huge > small


# --- the model against a Monte-Carlo count -----------------------------------------------


@pytest.mark.parametrize(("k", "blocks"), [(5, 7), (6, 8), (10, 14)])
def test_random_candidates_match_monte_carlo(k: int, blocks: int) -> None:
    n = 20_000
    rng = np.random.default_rng(1234 + blocks)
    fps = rng.integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False)
    p = plan(k, blocks)
    colliding = 0
    for t in range(p.n_tables):
        keys = fps & np.uint64(p.table_mask(t))
        _, counts = np.unique(keys, return_counts=True)
        colliding += int((counts * (counts - 1) // 2).sum())
    expected = plan_cost(n, k, blocks).bucket_pairs
    assert expected > 1000  # enough collisions for the comparison to mean something
    assert colliding == pytest.approx(expected, rel=0.2)


# -- the index's plan: priced for its lookup ---------------------------------------------
def _stored_rows_met(n: int, k: int, blocks: int) -> float:
    """Stored rows expected to share a table's key with one random batch fingerprint, summed
    over tables, for an index of n random fingerprints: computed from the block widths
    alone (64 bits cut into `blocks` near-equal blocks, wider first; a table keeps
    blocks - k of them), independently of bands.py's masks."""
    base, extra = divmod(64, blocks)
    widths = [base + (1 if i < extra else 0) for i in range(blocks)]
    return sum(n / 2.0 ** sum(widths[i] for i in kept) for kept in itertools.combinations(range(blocks), blocks - k))


@pytest.mark.parametrize("n", [10**6, 10**9, 10**10])
def test_index_plan_keeps_stored_rows_met_per_batch_fingerprint_small(n: int) -> None:
    from simhash_udf.core.bands import choose_index_plan

    plan = choose_index_plan(n, 3)
    met = _stored_rows_met(n, 3, plan.blocks)
    # At most one stored row per batch key row by chance: the lookup's joined rows stay below
    # its batch key rows. The self-join's plan at 10^9 (4 blocks, 16-bit keys) meets ~61,000.
    assert met <= plan.n_tables, (plan, met)
    assert met <= 10, (plan, met)
    assert _stored_rows_met(10**9, 3, choose_plan(10**9, 3).blocks) > 60_000
    # A batch of 100k against the index: joined rows by chance, well under a million.
    assert 100_000 * met < 1_000_000
    # And the cheapest that does so: one block fewer would break the bound (or not exist).
    fewer = plan.blocks - 1
    if fewer > 3:
        assert _stored_rows_met(n, 3, fewer) > math.comb(fewer, 3)


@pytest.mark.parametrize(("n", "blocks"), [(10**6, 5), (10**9, 6), (10**10, 7), (10**9, 4)])
def test_lookup_cost_matches_independent_computation(n: int, blocks: int) -> None:
    from simhash_udf.core.bands import lookup_cost

    cost = lookup_cost(n, 100_000, 3, blocks)
    tables = math.comb(blocks, 3)
    assert cost.stored_rows_scanned == n * tables and cost.batch_key_rows == 100_000 * tables
    assert cost.matches_per_batch_row == pytest.approx(_stored_rows_met(n, 3, blocks), rel=1e-9)
    assert cost.joined_rows == pytest.approx(100_000 * _stored_rows_met(n, 3, blocks), rel=1e-9)


def test_index_plan_says_how_it_was_chosen() -> None:
    from simhash_udf.core.bands import choose_index_plan

    assert choose_index_plan(10**9, 3, blocks=5) == BandPlan(3, 5)
    assert choose_index_plan(10**9, 3, blocks=5).reason == "--blocks"
    assert choose_index_plan(10**9, 3).reason == "lookup cost model for 1,000,000,000 indexed fingerprints"
    assert choose_plan(12_345, 3).reason == "cost model for 12,345 distinct fingerprints"
