"""The band plan: which blocks of the 64 bits form the join keys, and what a plan costs.

Cut the 64 bits into B blocks. Two fingerprints that differ in at most k bits differ in at
most k blocks, so they agree exactly on at least B - k blocks (pigeonhole). Every choice of
B - k blocks out of B is one *table*: an equality join on the bits of those blocks finds every
pair within k, and there are C(B, k) tables. More blocks mean wider keys (fewer random
collisions) but more tables (more rows shuffled).

A pair may agree on several tables' keys; it is emitted only by its *canonical* table, the
combination of its first B - k agreeing blocks, so the join needs no `distinct`. Tables are
numbered in lexicographic order of their blocks, so the canonical table is also the first
one the pair agrees on.

Pure Python, no Spark; masks are unsigned Python ints (see `to_signed` for Spark literals).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from itertools import combinations

BITS = 64
_ALL = (1 << BITS) - 1

# Relative cost of one shuffled band-key row against one candidate pair produced and
# verified by the join. A row is written, shuffled, read and sorted (~16-24 bytes); a
# candidate is a generated row checked by `bit_count` in Spark's generated code.
# Measured on local[2] with 1M random fingerprints, k = 3: 4 blocks (4M rows, 31M
# candidates) 10.8 s, 5 blocks (10M rows, 0.1M candidates) 8.2 s, so a row costs ~0.8 us
# and a candidate ~0.24 us. The benchmarks of issue #3 refine this.
COST_PER_ROW = 1.0
COST_PER_CANDIDATE = 0.3
# Plans with more tables than this are never chosen automatically: at C(B, k) > 1000 the
# shuffle dwarfs anything wider keys can save on the data sizes this job handles.
MAX_TABLES = 1000


def to_signed(value: int) -> int:
    """The signed 64-bit reading of an unsigned 64-bit value (what Spark's LongType holds)."""
    value &= _ALL
    return value - (1 << BITS) if value >= 1 << (BITS - 1) else value


def block_bounds(blocks: int) -> list[tuple[int, int]]:
    """(first bit, width) of each block; widths differ by at most one bit, wider first."""
    base, extra = divmod(BITS, blocks)
    bounds, start = [], 0
    for i in range(blocks):
        width = base + (1 if i < extra else 0)
        bounds.append((start, width))
        start += width
    return bounds


@dataclass(frozen=True)
class BandPlan:
    """The tables of a band-split join for threshold k with `blocks` blocks."""

    k: int
    blocks: int

    def __post_init__(self) -> None:
        if not 0 <= self.k < self.blocks <= BITS:
            raise ValueError(f"need 0 <= k < blocks <= 64, got k={self.k}, blocks={self.blocks}")

    @cached_property
    def block_masks(self) -> tuple[int, ...]:
        """Unsigned mask of each block's bits."""
        return tuple(((1 << w) - 1) << s for s, w in block_bounds(self.blocks))

    @cached_property
    def tables(self) -> tuple[tuple[int, ...], ...]:
        """Each table's blocks, in lexicographic order: all (B - k)-subsets of the blocks."""
        return tuple(combinations(range(self.blocks), self.blocks - self.k))

    def table_mask(self, table: int) -> int:
        """Unsigned mask of the bits a table's key keeps."""
        mask = 0
        for block in self.tables[table]:
            mask |= self.block_masks[block]
        return mask

    def skipped_block_masks(self, table: int) -> list[int]:
        """Masks of the blocks before the table's last block that the table leaves out.

        A pair that agrees on a table's blocks is canonical for that table exactly when it
        disagrees on every one of these (otherwise an earlier table also has it).
        """
        chosen = self.tables[table]
        return [self.block_masks[b] for b in range(chosen[-1]) if b not in chosen]

    def key_bits(self, table: int) -> int:
        """How many bits a table's key has."""
        return self.table_mask(table).bit_count()

    def canonical_table(self, a: int, b: int) -> int | None:
        """The table that emits the pair (a, b), or None if no table's key has both."""
        differing = (a ^ b) & _ALL
        agreeing = [i for i, m in enumerate(self.block_masks) if differing & m == 0]
        if len(agreeing) < self.blocks - self.k:
            return None
        return self.tables.index(tuple(agreeing[: self.blocks - self.k]))

    @property
    def n_tables(self) -> int:
        return math.comb(self.blocks, self.k)


@dataclass(frozen=True)
class PlanCost:
    """What a plan is expected to cost on n distinct, uniformly random fingerprints.

    rows_shuffled: band-key rows the join shuffles (n x tables).
    random_candidates: expected pairs that share a key by chance, summed over tables
        (each table: C(n, 2) / 2^key_bits). Planted near duplicates add to it.
    shuffle_bytes: rows_shuffled x 24 bytes (table id, key, fingerprint) before compression.
    """

    blocks: int
    tables: int
    min_key_bits: int
    max_key_bits: int
    rows_shuffled: float
    random_candidates: float
    shuffle_bytes: float

    @property
    def cost(self) -> float:
        return COST_PER_ROW * self.rows_shuffled + COST_PER_CANDIDATE * self.random_candidates


def plan_cost(n: int, k: int, blocks: int) -> PlanCost:
    """The cost model of one plan (see `PlanCost`)."""
    plan = BandPlan(k, blocks)
    pairs = n * (n - 1) / 2
    key_bits = [plan.key_bits(t) for t in range(plan.n_tables)] if plan.n_tables <= 5000 else []
    if key_bits:
        candidates = math.fsum(pairs / 2.0**b for b in key_bits)
        lo, hi = min(key_bits), max(key_bits)
    else:  # too many tables to list; every key has about the same width
        lo = hi = round(BITS * (blocks - k) / blocks)
        candidates = plan.n_tables * pairs / 2.0**lo
    rows = float(n) * plan.n_tables
    return PlanCost(blocks, plan.n_tables, lo, hi, rows, candidates, rows * 24)


def plan_costs(n: int, k: int) -> list[PlanCost]:
    """The cost of every plan with at most MAX_TABLES tables, fewest blocks first."""
    costs = []
    for blocks in range(k + 1, BITS + 1):
        if math.comb(blocks, k) > MAX_TABLES:
            break
        costs.append(plan_cost(n, k, blocks))
    return costs


def choose_plan(n: int, k: int, blocks: int | None = None) -> BandPlan:
    """The plan for n distinct fingerprints: the given block count, or the cheapest one."""
    if blocks is not None:
        return BandPlan(k, blocks)
    best = min(plan_costs(max(n, 2), k), key=lambda c: (c.cost, c.blocks))
    return BandPlan(k, best.blocks)
