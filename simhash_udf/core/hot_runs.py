"""Hot runs of the band join: edges of a run too large to expand into all its pairs.

Pure numpy, no Spark (`core/pair_kernel.join_partition` calls `hot_run_edges` for every run of
more than `HOT_RUN_SIZE` members; `index/lookup.py` summarises hot keys with `summarise_run`).

Skew: a run of more than `HOT_RUN_SIZE` members (a template's pages, all within a few bits)
is never expanded into all its pairs. `summarise_run` finds a few anchors, links every member
to the first anchor within k of it, links two anchor groups by one pair within k when any
exists, and searches the members no anchor covers by splitting the run again on the bits
that vary in it (pigeonhole, recursively), never all pairs: the edges it returns are true
pairs (distance <= k) whose connected components equal those of all the run's pairs, which is
what the clusters need. Such runs are reported as hot, and their edges flagged `summarised`:
the same edge can come from the hot runs of several tables, so only those need a `distinct`.
A run is hot by its member count alone, and its summary is a function of its members (they
are sorted by value first), so the edges do not depend on the row order or on what else
shares the partition.

Members the short-text check will look at (`checked`, see
`stages/short_text_check.checked_fingerprints`): a summary is only right when every pair it
stands for is kept, and the check may drop pairs. So a hot run summarises only its unchecked
members (pairs among them are never checked, so always kept), and lists every pair within k
that has a checked member, as ordinary pairs (by the canonical rule, once each), for the check
to see before the components. The cost of that part is bounded by (checked members x members)
comparisons per hot run, and the pairs listed by the pairs within k that have a short text:
the same pairs the policy must check.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

# The job's one hot threshold: runs of more members than this are summarised, not expanded,
# and band buckets of more are reported as hot (pipeline's index counts use it too). A run of
# 2,000 members is 2M candidate pairs (a few milliseconds of numpy, 32 MB of pair arrays at
# most). Random fingerprints stay far below it for every k the job accepts (config.MAX_K):
# the chosen plan's mean random run, n / 2^(key + sub-block bits), is at most ~120 members
# at 10^6..10^10 fingerprints (tests/core/test_pair_kernel.py checks it), so only real skew
# (templates, boilerplate) crosses it.
HOT_RUN_SIZE = 2000
# Anchors tried per hot run before the uncovered rest is compared pairwise. Each anchor costs
# one pass over the members still uncovered; a template of near-identical pages needs a few
# (the first is the member nearest the run's bitwise majority, its likely centre).
MAX_ANCHORS = 256
# Rows x columns of one block of pairwise distances in a hot run (8 bytes each: 32 MB).
PAIRWISE_BLOCK = 4_000_000
# Groups of a hot run at most this big are compared pairwise (`_SplitSearch`): below
# it, splitting further costs more Python than the 32k comparisons it would save.
SPLIT_BELOW = 256
# Pairs a hot run's search hands over at once (`_SplitSearch`): 2^20 index pairs are
# 16 MB, and the union-find drops most of each chunk in numpy.
PAIR_CHUNK = 1 << 20

_K1 = np.uint64(0)


@dataclass
class HotRun:
    """A summarised run: its table, the table's key (unsigned), the sub-block, its size
    (members), the summary edges written for it, the pairwise comparisons made, and the
    pairs listed because they have a checked member (`hot_run_edges`)."""

    table: int
    key: int
    sub_block: int
    size: int
    edges: int
    comparisons: int
    listed: int = 0


def summarise_run(
    members: np.ndarray, k: int, max_anchors: int = MAX_ANCHORS
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Edges within k among distinct uint64 `members` whose components equal those of every
    pair within k, without listing all pairs.

    The edges are a function of the set of members (they are sorted first).
    Greedy anchors: the first uncovered member is the next anchor; every uncovered member
    within k of it joins its group with an edge to it. Two groups hold a pair within k only
    if their anchors are within 3k (triangle inequality), and only members within 2k of the
    other anchor can be in it; one such pair per pair of groups (not already connected) is
    enough. When `max_anchors` anchors leave members uncovered (a run spread out rather than
    around a centre), the run's pairs within k are found by `_SplitSearch`, and those
    joining two sets are edges.
    Returns (a, b, distance, comparisons): a, b uint64 arrays, distance uint8.
    """
    # Sorted first: anchors and unions then depend on the members only, not on their order
    # (the same edges whatever the row order or partitioning).
    members = np.sort(np.asarray(members, np.uint64))
    n = len(members)
    kk = np.uint64(k)
    group = np.full(n, -1, np.int64)
    anchors: list[int] = []
    ea, eb, ed = [], [], []
    comparisons = 0
    uncovered = np.ones(n, bool)
    # The first anchor: the member nearest the bitwise majority of the run (a template's
    # pages scatter around it), so one anchor covers most of a tight cluster.
    ones = np.zeros(64, np.int64)
    for bit in range(64):
        ones[bit] = np.count_nonzero(members & np.uint64(1 << bit))
    majority = np.uint64(sum(1 << bit for bit in range(64) if ones[bit] * 2 > n))
    first = int(np.argmin(np.bitwise_count(members ^ majority)))
    comparisons += n
    while len(anchors) < max_anchors:
        left = np.flatnonzero(uncovered)
        if not left.size:
            break
        i = first if not anchors else int(left[0])
        dist = np.bitwise_count(members[left] ^ members[i])
        comparisons += left.size
        near = left[dist <= kk]
        group[near] = len(anchors)
        uncovered[near] = False
        others = near[near != i]
        ea.append(np.full(others.size, members[i], np.uint64))
        eb.append(members[others])
        ed.append(np.bitwise_count(members[others] ^ members[i]))
        anchors.append(i)

    # Connectivity beyond the anchor edges: a union-find over members whose sets start as
    # the anchor groups; an edge is written only when it joins two sets (a spanning forest,
    # so the edges stay fewer than the members).
    parent = np.arange(n)
    grouped = np.flatnonzero(group >= 0)
    parent[grouped] = np.array(anchors, np.int64)[group[grouped]]
    parent_list = parent.tolist()

    def root(v: int) -> int:
        while parent_list[v] != v:
            parent_list[v] = parent_list[parent_list[v]]
            v = parent_list[v]
        return v

    def link(i_idx: np.ndarray, j_idx: np.ndarray) -> None:
        keep_i, keep_j = [], []
        for i, j in zip(i_idx.tolist(), j_idx.tolist()):
            ri, rj = root(i), root(j)
            if ri != rj:
                parent_list[max(ri, rj)] = min(ri, rj)
                keep_i.append(i)
                keep_j.append(j)
        if keep_i:
            ea.append(members[keep_i])
            eb.append(members[keep_j])
            ed.append(np.bitwise_count(members[keep_i] ^ members[keep_j]))

    anchor_fps = members[anchors] if anchors else np.empty(0, np.uint64)
    if len(anchors) > 1:
        between = np.bitwise_count(anchor_fps[:, None] ^ anchor_fps[None, :])
        comparisons += len(anchors) ** 2
        members_of = [np.flatnonzero(group == g) for g in range(len(anchors))]
        for gi in range(len(anchors)):
            for gj in range(gi + 1, len(anchors)):
                if between[gi, gj] > 3 * k or root(anchors[gi]) == root(anchors[gj]):
                    continue
                side_i = members_of[gi][np.bitwise_count(members[members_of[gi]] ^ anchor_fps[gj]) <= 2 * k]
                side_j = members_of[gj][np.bitwise_count(members[members_of[gj]] ^ anchor_fps[gi]) <= 2 * k]
                comparisons += members_of[gi].size + members_of[gj].size
                found, compared = _first_pair_within(members, side_i, side_j, k)
                comparisons += compared
                if found is not None:
                    link(np.array([found[0]]), np.array([found[1]]))

    if np.any(uncovered):
        # Members no anchor covers (a run whose members are spread out rather than around a
        # centre): every pair within k of the run, found by splitting it on the bits that
        # vary in it (`_SplitSearch`, never all pairs); of those, only the ones
        # joining two sets are written.
        # The pairs come in chunks of at most PAIR_CHUNK (a 100k-member hot key has ~6.4M
        # pairs within k, each found several times: held at once they took 1.5 GB of one
        # Python worker); a pair whose ends the union-find already connects is dropped in
        # numpy, so only pairs that may join two sets reach the Python loop of `link`.
        splitting = _SplitSearch(members, k)
        for i_idx, j_idx in splitting.chunks():
            parents = np.asarray(parent_list, np.int64)
            while True:  # pointer jumping: every member's root, vectorised
                jumped = parents[parents]
                if np.array_equal(jumped, parents):
                    break
                parents = jumped
            apart = parents[i_idx] != parents[j_idx]
            link(*_distinct_pairs(i_idx[apart], j_idx[apart], n))
        comparisons += splitting.comparisons
    if not ea:
        empty = np.empty(0, np.uint64)
        return empty, empty, np.empty(0, np.uint8), comparisons
    return (
        np.concatenate(ea),
        np.concatenate(eb),
        np.concatenate(ed).astype(np.uint8),
        comparisons,
    )


def _empty_edges() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    empty = np.empty(0, np.uint64)
    return empty, empty, np.empty(0, np.uint8)


def pairs_with_checked(
    members: np.ndarray, checked: np.ndarray, k: int, reject: list[np.uint64]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Every pair within k of distinct uint64 `members` that has a checked member and
    differs on every mask of `reject` (the canonical rule, as `pair_kernel._run_pairs` applies it).

    checked: bool per member. Each checked member is compared with every member, in blocks
    of PAIRWISE_BLOCK distances; a pair of two checked members is taken once (j > i).
    Returns (a, b, distance, comparisons): a, b uint64, distance uint8.
    """
    rows = np.flatnonzero(checked)
    if not rows.size or len(members) < 2:
        return (*_empty_edges(), 0)
    kk = np.uint64(k)
    cols = np.arange(len(members))
    step = max(1, PAIRWISE_BLOCK // len(members))
    out_a, out_b, out_d = [], [], []
    comparisons = 0
    for start in range(0, rows.size, step):
        block = rows[start : start + step]
        x = members[block][:, None] ^ members[None, :]
        dist = np.bitwise_count(x)
        comparisons += dist.size
        ok = (dist <= kk) & ((cols[None, :] > block[:, None]) | ~checked[None, :])
        for m in reject:
            ok &= (x & m) != _K1
        r, c = np.nonzero(ok)
        out_a.append(members[block[r]])
        out_b.append(members[c])
        out_d.append(dist[r, c].astype(np.uint8))
    return np.concatenate(out_a), np.concatenate(out_b), np.concatenate(out_d), comparisons


def hot_run_edges(
    members: np.ndarray, checked: np.ndarray | None, k: int, reject: list[np.uint64]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, int]:
    """The edges of one hot run: a summary of its unchecked members, and every pair within
    k (canonical by `reject`) that has a checked member.

    members: the run's distinct uint64 fingerprints, in any order; checked: whether the
    short-text check looks at each one's pairs (None: none). Pairs of two unchecked members
    are always kept by the check, so a summary of them (`summarise_run`) keeps their
    components; a pair with a checked member may be dropped, so it is listed for the check.
    Returns (a, b, distance, summarised, summary_edges, comparisons), a function of the
    members and their flags (sorted by value first), not of their order.
    """
    order = np.argsort(members, kind="stable")
    members = np.asarray(members, np.uint64)[order]
    flags = np.zeros(len(members), bool) if checked is None else np.asarray(checked, bool)[order]
    free = members[~flags]
    if free.size > 1:
        sa, sb, sd, comparisons = summarise_run(free, k)
    else:
        (sa, sb, sd), comparisons = _empty_edges(), 0
    la, lb, ld, compared = pairs_with_checked(members, flags, k, reject)
    summarised = np.concatenate([np.ones(sa.size, bool), np.zeros(la.size, bool)])
    return (
        np.concatenate([sa, la]),
        np.concatenate([sb, lb]),
        np.concatenate([sd, ld]),
        summarised,
        int(sa.size),
        comparisons + compared,
    )


def _split_masks(varying: int, parts: int) -> list[int]:
    """The set bits of `varying` cut into `parts` masks of consecutive set bits, as equal
    in size as they can be (empty masks left out)."""
    bits = [bit for bit in range(64) if varying >> bit & 1]
    masks = []
    for chunk in np.array_split(np.asarray(bits, dtype=np.int64), parts):
        if chunk.size:
            masks.append(sum(1 << int(bit) for bit in chunk))
    return masks


def _distinct_pairs(i_idx: np.ndarray, j_idx: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs with repeats (in either order) dropped, as (low, high), sorted; n: members."""
    if not i_idx.size:
        return i_idx, j_idx
    lo, hi = np.minimum(i_idx, j_idx), np.maximum(i_idx, j_idx)
    codes = np.sort(lo * n + hi)  # a sort, then neighbours: faster than np.unique here
    unique = codes[np.r_[True, codes[1:] != codes[:-1]]]
    return unique // n, unique % n


@dataclass
class _SplitSearch:
    """Index pairs (i, j) of distinct uint64 `members` whose components equal those of all
    pairs within k, found without comparing all pairs, in chunks (`chunks()`); then
    `comparisons`, the pairwise comparisons made.

    Pigeonhole once more: two members of a set within k differ only in bits that vary in the
    set; cut those bits into k + 1 masks and the two agree on one of them. So each group of
    members equal on one mask is searched again, on the bits that still vary in it (fewer:
    the mask's bits are now equal), until a group is small enough to compare pairwise
    (`SPLIT_BELOW`) or varies in k bits or fewer (then all its pairs are within k, and a star
    from its first member connects it). Every pair within k is found in some group; a pair
    may be found more than once, in the same chunk or in several (the caller drops repeats).
    A chunk holds at most about `PAIR_CHUNK` pairs, so memory does not grow with the pairs
    of the run; the chunks depend only on the members' order.
    """

    members: np.ndarray
    k: int
    comparisons: int = 0

    def chunks(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        members, k = self.members, self.k
        kk = np.uint64(k)
        found_i: list[np.ndarray] = []
        found_j: list[np.ndarray] = []
        held = 0
        stack = [np.arange(len(members))]
        while stack:
            idx = stack.pop()
            if idx.size < 2:
                continue
            fps = members[idx]
            varying = int(np.bitwise_or.reduce(fps ^ fps[0]))
            if varying.bit_count() <= k:
                found_i.append(np.full(idx.size - 1, idx[0]))
                found_j.append(idx[1:])
            elif idx.size <= SPLIT_BELOW:
                dist = np.bitwise_count(fps[:, None] ^ fps[None, :])
                self.comparisons += idx.size * (idx.size - 1) // 2
                rows, cols = np.nonzero(np.triu(dist <= kk, 1))
                found_i.append(idx[rows])
                found_j.append(idx[cols])
            else:
                for mask in _split_masks(varying, k + 1):
                    keys = fps & np.uint64(mask)
                    order = np.argsort(keys, kind="stable")
                    ordered = keys[order]
                    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
                    ends = np.r_[starts[1:], ordered.size]
                    for start, end in zip(starts[ends - starts > 1].tolist(), ends[ends - starts > 1].tolist()):
                        stack.append(idx[order[start:end]])
                continue
            held += found_i[-1].size
            if held >= PAIR_CHUNK:
                yield np.concatenate(found_i).astype(np.int64), np.concatenate(found_j).astype(np.int64)
                found_i, found_j, held = [], [], 0
        # The last chunk; none when no pair was found (a spread-out run with nothing within k).
        if held:
            yield np.concatenate(found_i).astype(np.int64), np.concatenate(found_j).astype(np.int64)


def _first_pair_within(
    members: np.ndarray, side_i: np.ndarray, side_j: np.ndarray, k: int
) -> tuple[tuple[int, int] | None, int]:
    """The first (i, j) of side_i x side_j within k bits, in blocks; and the comparisons made."""
    if not side_i.size or not side_j.size:
        return None, 0
    step = max(1, PAIRWISE_BLOCK // side_j.size)
    right = members[side_j]
    done = 0
    for start in range(0, side_i.size, step):
        block = side_i[start : start + step]
        dist = np.bitwise_count(members[block][:, None] ^ right[None, :])
        done += dist.size
        hits = np.argwhere(dist <= np.uint64(k))
        if hits.size:
            r, c = hits[0]
            return (int(block[r]), int(side_j[c])), done
    return None, done
