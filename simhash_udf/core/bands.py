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

import dataclasses
import math
from dataclasses import dataclass, field
from functools import cached_property
from itertools import combinations

from simhash_udf.core.limits import MAX_LISTED_TABLES, MAX_TABLES

BITS = 64
_ALL = (1 << BITS) - 1

# The cost model of the two-level join (`join.band_join`), in microseconds on one core of
# this machine. A band row is exploded, shuffled as (table, fingerprint) and read into a
# Python worker as Arrow (~0.8 us, the Spark side of a 1M run); in the worker each row is
# packed and sorted once per sub-block (k + 1 passes, ~0.06 us each: 4M fingerprints x 4
# tables x 4 sub-blocks took 3.7 s in `pair_kernel.join_partition` alone); a candidate is a
# gathered pair checked by `np.bitwise_count` (~0.02 us). The old SQL join paid ~0.24 us per
# candidate, and its candidates were all pairs sharing a table's key.
COST_PER_ROW = 1.0
COST_PER_ROW_PASS = 0.06
COST_PER_CANDIDATE = 0.02
# Bytes a shuffled band row takes on disk: an 8-byte fingerprint and the table, as Spark
# writes them (UnsafeRow, lz4): 35.8 MB for 4.04M rows (1M fingerprints, 4 tables), 8.9 bytes.
SHUFFLE_BYTES_PER_ROW = 9
# Band rows per shuffle partition of the two-level join (`join.band_join`): a Python worker
# holds its partition in numpy, about 40 bytes a row while it works (80 MB at 2M rows).
ROWS_PER_PARTITION = 2_000_000


# How a plan was picked (`BandPlan.chosen_by`): the self-join's cost model for the run's distinct
# fingerprints, --blocks, the lookup's cost model for a new index (`choose_index_plan`), or the
# plan stored in an existing index's manifest.
CHOSEN_BY_MODEL = "cost model"
CHOSEN_BY_BLOCKS = "--blocks"
CHOSEN_BY_LOOKUP_MODEL = "lookup cost model"
CHOSEN_BY_MANIFEST = "index manifest"


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
    """The tables of a band-split join for threshold k with `blocks` blocks.

    chosen_by and planned_for say how the plan was picked (`CHOSEN_BY_*`, and the number
    of fingerprints the cost model was given, when it was); they are not part of the plan's
    identity (two plans with equal k and blocks are equal) and `reason` says them in words.
    """

    k: int
    blocks: int
    chosen_by: str = field(default="", compare=False)
    planned_for: int | None = field(default=None, compare=False)

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

    @property
    def sub_blocks(self) -> int:
        """Sub-blocks per table at level 2 of the join: k + 1, so that a pair within k
        agrees on at least one of them (pigeonhole)."""
        return self.k + 1

    @property
    def reason(self) -> str:
        """How the plan was picked, in words (what report.json's `band_plan.chosen_by` says)."""
        size = f" for {self.planned_for:,}" if self.planned_for is not None else ""
        if self.chosen_by == CHOSEN_BY_MODEL:
            return f"cost model{size} distinct fingerprints"
        if self.chosen_by == CHOSEN_BY_LOOKUP_MODEL:
            return f"lookup cost model{size} indexed fingerprints"
        if self.chosen_by == CHOSEN_BY_MANIFEST:
            return f"the index's manifest ({self.blocks} blocks, fixed when the index was created)"
        return self.chosen_by or "given"


@dataclass(frozen=True)
class PlanCost:
    """What a plan is expected to cost on n distinct, uniformly random fingerprints.

    rows_shuffled: band rows the join shuffles (n x tables).
    bucket_pairs: expected pairs that share a table's key by chance, summed over tables
        (each table: C(n, 2) / 2^key_bits): what a join verifying whole buckets compares
        (`join.candidate_pairs`, the SQL join).
    random_candidates: expected pairs the two-level join compares by chance: pairs that share
        a table's key and one of its k + 1 sub-blocks (each table and sub-block:
        C(n, 2) / 2^(key bits + sub-block bits)). Planted near duplicates add to it.
    shuffle_bytes: rows_shuffled x SHUFFLE_BYTES_PER_ROW.
    partitions: shuffle partitions of ROWS_PER_PARTITION rows.
    mean_bucket: fingerprints per (table, key) bucket, n / 2^min key bits (a bucket is
        handled by one Python worker, in numpy).
    """

    blocks: int
    tables: int
    min_key_bits: int
    max_key_bits: int
    rows_shuffled: float
    random_candidates: float
    shuffle_bytes: float
    bucket_pairs: float = 0.0
    partitions: int = 1
    mean_bucket: float = 0.0
    k: int = 3

    @property
    def cost(self) -> float:
        return (
            (COST_PER_ROW + COST_PER_ROW_PASS * self.sub_blocks) * self.rows_shuffled
            + COST_PER_CANDIDATE * self.random_candidates
        )

    @property
    def sub_blocks(self) -> int:
        """Sub-blocks per table at level 2 (`BandPlan.sub_blocks`)."""
        return BandPlan(self.k, self.blocks).sub_blocks


def sub_block_bits(remaining: int, parts: int) -> list[int]:
    """Widths of `parts` near-equal sub-blocks of `remaining` bits, larger first (the
    widths of `sub_block_masks`)."""
    base, extra = divmod(remaining, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def sub_block_masks(remaining: int, parts: int) -> list[int]:
    """`remaining`'s set bits (low to high) cut into `parts` masks of near-equal size,
    larger first; a mask is 0 when there are fewer bits than parts (an empty sub-block
    always agrees, which keeps the pigeonhole argument true)."""
    bits = [b for b in range(BITS) if remaining >> b & 1]
    masks, start = [], 0
    for width in sub_block_bits(len(bits), parts):
        mask = 0
        for b in bits[start : start + width]:
            mask |= 1 << b
        masks.append(mask)
        start += width
    return masks


def plan_cost(n: int, k: int, blocks: int) -> PlanCost:
    """The cost model of one plan (see `PlanCost`)."""
    plan = BandPlan(k, blocks)
    pairs = n * (n - 1) / 2
    key_bits = [plan.key_bits(t) for t in range(plan.n_tables)] if plan.n_tables <= MAX_LISTED_TABLES else []
    if key_bits:
        bucket_pairs = math.fsum(pairs / 2.0**b for b in key_bits)
        candidates = math.fsum(
            pairs / 2.0 ** (b + w) for b in key_bits for w in sub_block_bits(BITS - b, plan.sub_blocks)
        )
        lo, hi = min(key_bits), max(key_bits)
    else:  # too many tables to list; every key has about the same width
        lo = hi = round(BITS * (blocks - k) / blocks)
        bucket_pairs = plan.n_tables * pairs / 2.0**lo
        candidates = plan.n_tables * math.fsum(pairs / 2.0 ** (lo + w) for w in sub_block_bits(BITS - lo, plan.sub_blocks))
    rows = float(n) * plan.n_tables
    return PlanCost(
        blocks,
        plan.n_tables,
        lo,
        hi,
        rows,
        candidates,
        rows * SHUFFLE_BYTES_PER_ROW,
        bucket_pairs=bucket_pairs,
        partitions=max(1, math.ceil(rows / ROWS_PER_PARTITION)),
        mean_bucket=n / 2.0**lo,
        k=k,
    )


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
        return BandPlan(k, blocks, chosen_by=CHOSEN_BY_BLOCKS)
    costs = plan_costs(max(n, 2), k)
    # A bucket is handled in one Python worker: plans whose buckets would not fit one
    # partition are left out (only at n far beyond 10^11 for k = 3).
    fitting = [c for c in costs if c.mean_bucket <= ROWS_PER_PARTITION] or costs
    best = min(fitting, key=lambda c: (c.cost, c.blocks))
    return BandPlan(k, best.blocks, chosen_by=CHOSEN_BY_MODEL, planned_for=n)


# The cost model of a lookup against an index (`simhash_udf.index.lookup.lookup`), in microseconds of one
# core. The lookup is not the two-level self-join: the batch's M distinct fingerprints become
# M x tables key rows, broadcast, and the index's N x tables stored key rows are read from
# Parquet and probed against them (a plain equi-join on (table, key), no sub-blocks). Every
# stored row that shares a batch row's key is a joined row that Spark checks with bit_count and
# the canonical rule; those are the term that grows with N x M, so a plan whose keys are too
# short for the index (a self-join plan for 10^9 has 16-bit keys: ~61,000 joined rows per batch
# fingerprint) is far costlier here than its scan. Scanned and joined rows are priced from the
# 10M lookup of bench/RESULTS-index.md (a stored row read and probed ~0.5 us; a joined row,
# built and checked by Spark expressions, about twice that).
COST_PER_STORED_ROW = 0.5
COST_PER_MATCH = 1.0
COST_PER_BATCH_KEY_ROW = 1.0
# A new index's plan is fixed for its life, before any batch is seen: it is priced for daily
# batches of this share of the planned size (10^7 new pages a day into an index of 10^9).
LOOKUP_BATCH_SHARE = 0.01
# Plans whose batch key rows would each meet more than this many stored rows by chance (on
# average over tables, at the planned index size) are never chosen for an index: the joined
# rows then outgrow the batch's own key rows, and they grow further as the index fills.
MAX_MATCHES_PER_KEY_ROW = 1.0


@dataclass(frozen=True)
class LookupCost:
    """What one lookup of a batch of m distinct fingerprints against an index of n costs.

    batch_key_rows: m x tables (built and broadcast). stored_rows_scanned: n x tables (every
    stored key row is read: random batch keys touch every key file).
    matches_per_batch_row: stored rows expected to share a table's key with one random batch
    fingerprint, summed over tables: n x sum over tables of 2^-key_bits.
    joined_rows: m x matches_per_batch_row (what the equi-join hands to the distance check).
    self_join_cost: the batch's own two-level self-join, on its own plan (`choose_plan(m)`: the
    same for every lookup plan, so it never decides between them).
    """

    blocks: int
    tables: int
    min_key_bits: int
    max_key_bits: int
    index_size: int
    batch_size: int
    batch_key_rows: float
    stored_rows_scanned: float
    matches_per_batch_row: float
    joined_rows: float
    self_join_cost: float

    @property
    def matches_per_key_row(self) -> float:
        """Stored rows one batch key row meets by chance, on average over tables."""
        return self.matches_per_batch_row / self.tables

    @property
    def cost(self) -> float:
        return (
            COST_PER_BATCH_KEY_ROW * self.batch_key_rows
            + COST_PER_STORED_ROW * self.stored_rows_scanned
            + COST_PER_MATCH * self.joined_rows
            + self.self_join_cost
        )


def lookup_batch_size(n: int) -> int:
    """The batch size a new index of n fingerprints is priced for (LOOKUP_BATCH_SHARE)."""
    return max(2, round(n * LOOKUP_BATCH_SHARE))


def lookup_cost(n: int, m: int, k: int, blocks: int) -> LookupCost:
    """The cost model of one lookup (see `LookupCost`): index of n, batch of m."""
    plan = BandPlan(k, blocks)
    if plan.n_tables <= MAX_LISTED_TABLES:
        key_bits = [plan.key_bits(t) for t in range(plan.n_tables)]
    else:  # too many tables to list; every key has about the same width
        key_bits = [round(BITS * (blocks - k) / blocks)] * plan.n_tables
    per_row = n * math.fsum(2.0**-b for b in key_bits)
    return LookupCost(
        blocks=blocks,
        tables=plan.n_tables,
        min_key_bits=min(key_bits),
        max_key_bits=max(key_bits),
        index_size=n,
        batch_size=m,
        batch_key_rows=float(m) * plan.n_tables,
        stored_rows_scanned=float(n) * plan.n_tables,
        matches_per_batch_row=per_row,
        joined_rows=m * per_row,
        self_join_cost=plan_cost(max(m, 2), k, choose_plan(m, k).blocks).cost,
    )


def lookup_costs(n: int, m: int, k: int) -> list[LookupCost]:
    """The lookup cost of every plan with at most MAX_TABLES tables, fewest blocks first."""
    costs = []
    for blocks in range(k + 1, BITS + 1):
        if math.comb(blocks, k) > MAX_TABLES:
            break
        costs.append(lookup_cost(n, m, k, blocks))
    return costs


def choose_index_plan(n: int, k: int, blocks: int | None = None, batch: int | None = None) -> BandPlan:
    """The plan of a new index planned for n fingerprints: the given block count, or the
    cheapest lookup (batches of `batch`, default `lookup_batch_size(n)`) among plans whose
    batch key rows meet at most MAX_MATCHES_PER_KEY_ROW stored rows by chance."""
    if blocks is not None:
        return BandPlan(k, blocks, chosen_by=CHOSEN_BY_BLOCKS)
    n = max(n, 2)
    costs = lookup_costs(n, batch or lookup_batch_size(n), k)
    fitting = [c for c in costs if c.matches_per_key_row <= MAX_MATCHES_PER_KEY_ROW] or costs
    best = min(fitting, key=lambda c: (c.cost, c.blocks))
    return BandPlan(k, best.blocks, chosen_by=CHOSEN_BY_LOOKUP_MODEL, planned_for=n)


def index_plan(stored: BandPlan | None, expected_size: int, k: int, blocks: int | None = None) -> BandPlan:
    """The plan of a run against an index, saying how it was chosen: the plan its newest
    manifest stores (fixed for the index's life), or, when the run creates the index, the
    lookup cost model's for `expected_size` fingerprints (or --blocks, `choose_index_plan`)."""
    if stored is not None:
        return dataclasses.replace(stored, chosen_by=CHOSEN_BY_MANIFEST)
    return choose_index_plan(expected_size, k, blocks)
