"""The second level of the band join, in numpy: every pair within k inside one partition.

Pure numpy, no Spark (`stages/join.band_join` runs it over each partition with `mapInArrow`).

Level 1 (Spark) sends every fingerprint once per table of a `BandPlan` to the partition of its
(table, key); fingerprints of one bucket (equal table and key) therefore meet in one partition.
Two fingerprints of a bucket agree on the table's key bits, so their up to k differing bits
are all among the other bits. Level 2 cuts those other bits into k + 1 *sub-blocks*: by
pigeonhole a pair within k agrees on at least one of them. For each sub-block the partition's
rows are sorted by (key bits, sub-block bits); rows with equal values form a *run*, and only
pairs within a run are candidates, verified with `np.bitwise_count(a ^ b) <= k`.

Each pair is emitted once, with no `distinct`: by its canonical level-1 table (the first
table it agrees on, `BandPlan.canonical_table`) and, inside it, by its first agreeing
sub-block.

Skew: a run of more than `HOT_RUN_SIZE` members is not expanded into all its pairs; its edges
come from `core/hot_runs.hot_run_edges` (a summary whose components equal those of all its
pairs, plus every pair the short-text check will look at), flagged `summarised`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from simhash_udf.core.bands import BandPlan, sub_block_masks
from simhash_udf.core.hot_runs import HOT_RUN_SIZE, HotRun, hot_run_edges

_K1 = np.uint64(0)


@dataclass(frozen=True)
class KernelPlan:
    """What the kernel needs of a `BandPlan`, as plain ints (pickled to every Python worker).

    table_masks[t]: the bits table t's key keeps. skipped[t]: masks of the blocks that make
    table t non-canonical when the pair agrees on one of them (`BandPlan.skipped_block_masks`).
    sub_masks[t]: the k + 1 sub-block masks of the bits table t's key leaves out.
    """

    k: int
    table_masks: tuple[int, ...]
    skipped: tuple[tuple[int, ...], ...]
    sub_masks: tuple[tuple[int, ...], ...]

    @classmethod
    def of(cls, plan: BandPlan) -> KernelPlan:
        full = (1 << 64) - 1
        masks = tuple(plan.table_mask(t) for t in range(plan.n_tables))
        return cls(
            k=plan.k,
            table_masks=masks,
            skipped=tuple(tuple(plan.skipped_block_masks(t)) for t in range(plan.n_tables)),
            sub_masks=tuple(tuple(sub_block_masks(full ^ m, plan.sub_blocks)) for m in masks),
        )


@dataclass
class KernelOutput:
    """Pairs of one partition and its counts.

    fp_a < fp_b as signed 64-bit (int64 arrays), distance (int32, 1..k), summarised (bool:
    an edge of a hot run's summary, possibly repeated by other hot runs). candidates: pairs
    compared (run pairs, plus hot-run comparisons). largest_bucket: the largest level-1
    bucket (table, key). hot: the summarised runs.
    """

    fp_a: np.ndarray
    fp_b: np.ndarray
    distance: np.ndarray
    summarised: np.ndarray
    candidates: int = 0
    largest_bucket: int = 0
    hot: list[HotRun] = field(default_factory=list)


def _ordered(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(min, max) of two uint64 arrays read as signed longs, as int64."""
    sa, sb = a.view(np.int64), b.view(np.int64)
    return np.minimum(sa, sb), np.maximum(sa, sb)


def _run_pairs(
    values: np.ndarray,
    order: np.ndarray,
    runs: np.ndarray,
    active: np.ndarray,
    k: int,
    reject: list[np.uint64],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Every pair (i, i + d) of the sorted rows `values[order]` in one run that is within k, nonzero
    apart, and differs on every mask of `reject` (the canonical rule).

    runs: each row's run value (sorted, so a run is a stretch of equal values). active: the
    positions i with runs[i] == runs[i + 1]. Offsets d = 1, 2, ... keep the i whose run still
    holds i + d, so the work is the number of pairs, not the rows x the longest run.
    Returns (a, b, distance, candidates).
    """
    out_a, out_b, out_d = [], [], []
    candidates = 0
    d = 1
    kk = np.uint64(k)
    n = len(order)
    while active.size:
        if d > 1:
            active = active[active + d < n]
            active = active[runs[active + d] == runs[active]]
            if not active.size:
                break
        a, b = values[order[active]], values[order[active + d]]
        x = a ^ b
        dist = np.bitwise_count(x)
        ok = (dist <= kk) & (x != _K1)
        for m in reject:
            ok &= (x & m) != _K1
        candidates += active.size
        if ok.any():
            out_a.append(a[ok])
            out_b.append(b[ok])
            out_d.append(dist[ok])
        d += 1
    if not out_a:
        empty = np.empty(0, np.uint64)
        return empty, empty, np.empty(0, np.uint8), candidates
    return np.concatenate(out_a), np.concatenate(out_b), np.concatenate(out_d), candidates


def _mask_ranges(mask: int) -> list[tuple[int, int]]:
    """(lowest bit, width) of each run of consecutive set bits of `mask`, low to high."""
    ranges, bit = [], 0
    while bit < 64:
        if mask >> bit & 1:
            start = bit
            while bit < 64 and mask >> bit & 1:
                bit += 1
            ranges.append((start, bit - start))
        else:
            bit += 1
    return ranges


def _sorted_by(f: np.ndarray, mask: int, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(runs, order): the order of `f` by its bits under `mask` (f[order] is sorted by
    them), and for each sorted row a value that is equal for two rows exactly when their
    masked bits are. positions: np.arange(len(f), dtype=uint64), shared by the passes.
    Only the few rows in runs of 2+ are ever gathered (`f[order[i]]`), so the order is not
    applied to the whole array.

    The masked bits are packed (a pext by runs of set bits) above each row's index and the
    packed words sorted with `np.sort`, about 5x faster than `np.argsort` of the masked
    values (numpy's SIMD sort); when the bits do not fit beside the index, argsort it is.
    """
    width = mask.bit_count()
    index_bits = max(1, int(len(f) - 1).bit_length())
    if width + index_bits > 64:
        order = np.argsort(f & np.uint64(mask))
        return f[order] & np.uint64(mask), order
    packed = np.zeros(len(f), np.uint64)
    part = np.empty(len(f), np.uint64)
    pos = 0
    for lo, w in _mask_ranges(mask):
        np.right_shift(f, np.uint64(lo), out=part)
        np.bitwise_and(part, np.uint64((1 << w) - 1), out=part)
        if pos:
            np.left_shift(part, np.uint64(pos), out=part)
        np.bitwise_or(packed, part, out=packed)
        pos += w
    np.left_shift(packed, np.uint64(index_bits), out=packed)
    np.bitwise_or(packed, positions, out=packed)
    packed.sort()
    np.bitwise_and(packed, np.uint64((1 << index_bits) - 1), out=part)
    np.right_shift(packed, np.uint64(index_bits), out=packed)
    return packed, part.view(np.int64)


def join_partition(
    tables: np.ndarray,
    fingerprints: np.ndarray,
    plan: KernelPlan,
    hot_run_size: int | None = HOT_RUN_SIZE,
    checked: np.ndarray | None = None,
) -> KernelOutput:
    """Every pair within `plan.k` among one partition's band rows, each once.

    tables: the table of each row (ints); fingerprints: the rows' fingerprints (uint64 or
    int64, the same bits), distinct within a table. Rows of one (table, key) bucket must all
    be in this partition. hot_run_size: runs of more members than this are summarised
    (`hot_run_edges`); None expands every run (exact pairs, quadratic on skew). checked:
    bool per row, whether the short-text check looks at the fingerprint's pairs (None: no
    row's); a hot run lists every pair of its checked members instead of summarising them.
    """
    fps = np.ascontiguousarray(fingerprints).view(np.uint64) if fingerprints.dtype == np.int64 else np.asarray(fingerprints, np.uint64)
    tables = np.asarray(tables)
    order = np.argsort(tables, kind="stable")
    tables, fps = tables[order], fps[order]
    flags = None if checked is None else np.asarray(checked, bool)[order]
    bounds = np.flatnonzero(np.diff(tables)) + 1
    starts = np.concatenate([[0], bounds]) if len(tables) else np.empty(0, np.int64)
    ends = np.concatenate([bounds, [len(tables)]]) if len(tables) else np.empty(0, np.int64)

    out_a, out_b, out_d, out_s = [], [], [], []
    result = KernelOutput(np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int32), np.empty(0, bool))
    for lo, hi in zip(starts.tolist(), ends.tolist()):
        t = int(tables[lo])
        f = fps[lo:hi]
        c = None if flags is None else flags[lo:hi]
        table_mask = np.uint64(plan.table_masks[t])
        keys = np.sort(f & table_mask)
        key_runs = np.diff(np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1], [True]])))
        result.largest_bucket = max(result.largest_bucket, int(key_runs.max()))
        positions = np.arange(len(f), dtype=np.uint64)
        reject_table = [np.uint64(m) for m in plan.skipped[t]]
        subs = plan.sub_masks[t]
        for s, sub in enumerate(subs):
            runs, order = _sorted_by(f, plan.table_masks[t] | sub, positions)
            active = np.flatnonzero(runs[1:] == runs[:-1])
            # The canonical rule: table t only if the pair disagrees on every block an earlier
            # table keeps; sub-block s only if it disagrees on every earlier sub-block.
            reject = reject_table + [np.uint64(m) for m in subs[:s] if m]
            # A run of m members has m - 1 active positions: no run can be hot below that.
            if hot_run_size is not None and active.size >= hot_run_size:
                active = _summarise_hot_runs(f, c, order, active, hot_run_size, plan.k, reject, (t, s, table_mask), result, (out_a, out_b, out_d, out_s))
            a, b, d, candidates = _run_pairs(f, order, runs, active, plan.k, reject)
            result.candidates += candidates
            out_a.append(a)
            out_b.append(b)
            out_d.append(d)
            out_s.append(np.zeros(a.size, bool))
    if out_a:
        a, b = _ordered(np.concatenate(out_a), np.concatenate(out_b))
        result.fp_a, result.fp_b = a, b
        result.distance = np.concatenate(out_d).astype(np.int32)
        result.summarised = np.concatenate(out_s)
        if result.summarised.any():
            # Repeats among this partition's hot edges (several sub-blocks of one bucket).
            hot = result.summarised
            pairs = np.unique(np.stack([a[hot], b[hot], result.distance[hot].astype(np.int64)], 1), axis=0)
            keep = ~hot
            result.fp_a = np.concatenate([a[keep], pairs[:, 0]])
            result.fp_b = np.concatenate([b[keep], pairs[:, 1]])
            result.distance = np.concatenate([result.distance[keep], pairs[:, 2].astype(np.int32)])
            result.summarised = np.concatenate([np.zeros(int(keep.sum()), bool), np.ones(len(pairs), bool)])
    return result


def _summarise_hot_runs(
    f: np.ndarray,
    checked: np.ndarray | None,
    order: np.ndarray,
    active: np.ndarray,
    hot_run_size: int,
    k: int,
    reject: list[np.uint64],
    where: tuple[int, int, np.uint64],
    result: KernelOutput,
    out: tuple[list, list, list, list],
) -> np.ndarray:
    """Replace the hot runs among one sub-block's runs by their edges (`hot_run_edges`).

    f: the table's fingerprints; order, active: see `_run_pairs`; where: (table, sub-block,
    table mask). A run is hot when it has more than `hot_run_size` members, counted on the
    run itself (a stretch of consecutive active positions plus one). Appends the edges to
    `out` and the runs to `result.hot`; returns the active positions of the other runs.
    """
    t, s, table_mask = where
    breaks = np.flatnonzero(np.diff(active) != 1) + 1
    seg_start = np.concatenate([[0], breaks])
    seg_len = np.diff(np.concatenate([seg_start, [active.size]]))
    hot = np.flatnonzero(seg_len + 1 > hot_run_size)
    if not hot.size:
        return active
    cold = np.ones(active.size, bool)
    for h in hot.tolist():
        lo_seg, ln = int(seg_start[h]), int(seg_len[h])
        start, length = int(active[lo_seg]), ln + 1
        cold[lo_seg : lo_seg + ln] = False
        rows = order[start : start + length]
        a, b, d, summarised, edges, compared = hot_run_edges(
            f[rows], None if checked is None else checked[rows], k, reject
        )
        out[0].append(a)
        out[1].append(b)
        out[2].append(d)
        out[3].append(summarised)
        result.candidates += compared
        key = int(f[rows[0]] & table_mask)
        result.hot.append(HotRun(t, key, s, length, edges, compared, int(a.size) - edges))
    return active[cold]
