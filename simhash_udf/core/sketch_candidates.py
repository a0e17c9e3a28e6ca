"""The sketch route's candidates and their check in numpy, for a node set small enough for one
task: the pairs `stages/sketch_join.py` finds with two shuffles of every node's band rows.

Nodes are numbered 0..n-1 in ascending order of their (signed) fingerprint, so a pair (a, b)
with a < b is the pair (fp_a, fp_b) with fp_a < fp_b that Spark reports, and a bucket's
smallest fingerprint is its smallest number.

A bucket is the nodes whose sketches agree on all `rows` values of one band (Spark keys it by
the xxhash64 of those values' bytes: the same buckets but for a 2^-64 chance of two keys
colliding). A bucket of at most `hot_size` nodes makes all its pairs candidates; a larger one
pairs each member with its smallest node only (`sketch_join`'s module docstring says why).
A pair that shares buckets in several bands is a candidate once: it is yielded by the first
band whose bucket makes it one, and the later bands leave it out.

Memory: the sketches, plus per band a bucket number per node (int32) and the members of the
shared buckets; candidates are made and checked a slice of at most `CHUNK_PAIRS` at a time,
so a band full of large buckets does not hold all its pairs at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from simhash_udf.core.sketch import estimated_jaccard

# Candidate pairs made and checked at once: 2^22 pairs are ~100 MB of temporaries (two int64
# node numbers, their fingerprints, and two rows of sketch values per pair checked).
CHUNK_PAIRS = 1 << 22


@dataclass(frozen=True)
class BandBuckets:
    """One band's buckets of more than one node.

    of_node: int32 (int64 past 2^31 nodes), per node, its bucket's number, -1 when it shares
    this band with no other node; members: int64, the nodes of bucket 0, then bucket 1, ..., ascending within each;
    starts, sizes: int64, per bucket, where its members start and how many there are.
    """

    of_node: np.ndarray
    members: np.ndarray
    starts: np.ndarray
    sizes: np.ndarray

    def makes_candidates(self, a: np.ndarray, b: np.ndarray, hot_size: int) -> np.ndarray:
        """bool per pair (a < b): whether this band's buckets make (a, b) a candidate: both in
        one bucket, which is either at most hot_size nodes or has a as its smallest node."""
        bucket = self.of_node[a]
        same = (bucket >= 0) & (bucket == self.of_node[b])
        if len(self.sizes) == 0:
            return same
        safe = np.where(same, bucket, 0)  # any valid index where they do not share one
        ordinary = self.sizes[safe] <= hot_size
        anchor = self.members[self.starts[safe]] == a
        return same & (ordinary | anchor)


def band_buckets(sketches: np.ndarray, band: int, rows: int) -> BandBuckets:
    """`BandBuckets` of band `band` (values band*rows .. band*rows + rows - 1) of `sketches`
    (uint16, shape (n, size), one row per node in node order)."""
    n = len(sketches)
    values = np.ascontiguousarray(sketches[:, band * rows:(band + 1) * rows])
    # Each row's values as one opaque key, so that np.unique groups equal bands in one sort.
    keys = values.view(np.dtype((np.void, values.dtype.itemsize * rows))).ravel()
    _, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    inverse = inverse.ravel()
    shared = counts[inverse] > 1
    nodes = np.flatnonzero(shared)
    # A stable sort by key keeps each bucket's members ascending (nodes is ascending).
    members = nodes[np.argsort(inverse[nodes], kind="stable")]
    key_of_member = inverse[members]
    first = np.ones(len(members), dtype=bool)
    first[1:] = key_of_member[1:] != key_of_member[:-1]
    starts = np.flatnonzero(first)
    sizes = np.diff(np.append(starts, len(members)))
    # int32 bucket numbers: one array per band stays alive while the later bands are checked.
    of_node = np.full(n, -1, dtype=np.int32 if n < 2**31 else np.int64)
    of_node[members] = np.cumsum(first) - 1
    return BandBuckets(of_node, members, starts.astype(np.int64), sizes.astype(np.int64))


def _bucket_pairs(buckets: BandBuckets, hot_size: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The pairs (a, b), a < b, that one band's buckets make candidates, in slices of at most
    ~CHUNK_PAIRS (a bucket's pairs are never split)."""
    hot = buckets.sizes > hot_size
    for start, size in zip(buckets.starts[hot], buckets.sizes[hot]):
        # A hot bucket: every member with the smallest (members ascend within a bucket).
        others = buckets.members[start + 1:start + size]
        for at in range(0, len(others), CHUNK_PAIRS):
            part = others[at:at + CHUNK_PAIRS]
            yield np.full(len(part), buckets.members[start], dtype=np.int64), part
    ordinary = ~hot
    for size in np.unique(buckets.sizes[ordinary]):
        size = int(size)
        starts = buckets.starts[ordinary & (buckets.sizes == size)]
        i, j = np.triu_indices(size, k=1)
        per_slice = max(1, CHUNK_PAIRS // len(i))
        for at in range(0, len(starts), per_slice):
            members = buckets.members[starts[at:at + per_slice, None] + np.arange(size)]
            yield members[:, i].ravel(), members[:, j].ravel()


@dataclass(frozen=True)
class CheckedCandidates:
    """A slice of the candidates (each pair once over all slices), checked.

    a, b: int64 node numbers, a < b; distance: int32, the Hamming distance of their
    fingerprints; jaccard: float64, the Jaccard similarity their sketches estimate
    (`sketch.estimated_jaccard`); kept: bool, jaccard >= the threshold and distance <= the
    largest distance (what `sketch_join.sketch_pairs` keeps).
    """

    a: np.ndarray
    b: np.ndarray
    distance: np.ndarray
    jaccard: np.ndarray
    kept: np.ndarray


def checked_candidates(
    fingerprints: np.ndarray,
    sketches: np.ndarray,
    bands: int,
    rows: int,
    hot_size: int,
    jaccard: float,
    max_distance: int,
) -> tuple[int, Iterator[CheckedCandidates]]:
    """(hot buckets, the candidates in checked slices) of the nodes.

    fingerprints: int64, distinct, ascending (the node order); sketches: uint16, shape
    (n, size), row i the sketch of node i. The slices are produced lazily; the hot buckets
    are counted before the first is.
    """
    if len(fingerprints) > 1 and not bool(np.all(fingerprints[1:] > fingerprints[:-1])):
        raise ValueError("fingerprints must be distinct and ascending")
    per_band = [band_buckets(sketches, band, rows) for band in range(bands)]
    hot = sum(int((buckets.sizes > hot_size).sum()) for buckets in per_band)

    def slices() -> Iterator[CheckedCandidates]:
        unsigned = fingerprints.view(np.uint64)
        for band, buckets in enumerate(per_band):
            for a, b in _bucket_pairs(buckets, hot_size):
                new = np.ones(len(a), dtype=bool)
                for earlier in per_band[:band]:
                    new &= ~earlier.makes_candidates(a, b, hot_size)
                a, b = a[new], b[new]
                if len(a) == 0:
                    continue
                distance = np.bitwise_count(unsigned[a] ^ unsigned[b]).astype(np.int32)
                estimate = estimated_jaccard(sketches[a], sketches[b])
                kept = (estimate >= jaccard) & (distance <= max_distance)
                yield CheckedCandidates(a, b, distance, estimate, kept)

    return hot, slices()


def node_numbers(fingerprints: np.ndarray, values: np.ndarray) -> np.ndarray:
    """int64 per value: its number among the nodes `fingerprints` (int64, ascending), -1 when
    it is not one of them."""
    if len(fingerprints) == 0:
        return np.full(len(values), -1, dtype=np.int64)
    at = np.minimum(np.searchsorted(fingerprints, values), len(fingerprints) - 1)
    return np.where(fingerprints[at] == values, at, -1).astype(np.int64)


class BandPairs:
    """The band join's pairs beside the candidates, and which of them the candidates have
    covered (`mark`): a pair that is both is one row, and the others get their estimate apart.

    fp_a, fp_b: int64 (fp_a < fp_b); distance: int32; a_node, b_node: int64 numbers of their
    ends among the nodes (-1: not a node, i.e. no sketch); marked: bool, per pair, whether a
    candidate was it.
    """

    def __init__(self, fp_a: np.ndarray, fp_b: np.ndarray, distance: np.ndarray, nodes: np.ndarray) -> None:
        """nodes: int64, the nodes' fingerprints, ascending (their numbers are their places)."""
        self.fp_a, self.fp_b, self.distance = fp_a, fp_b, distance
        self.a_node, self.b_node = node_numbers(nodes, fp_a), node_numbers(nodes, fp_b)
        self.marked = np.zeros(len(fp_a), dtype=bool)
        # A pair of two nodes as one sortable number: a * n + b (n nodes, a one task holds: far
        # from overflowing an int64).
        self._nodes = max(len(nodes), 1)
        both = np.flatnonzero((self.a_node >= 0) & (self.b_node >= 0))
        keys = self.a_node[both] * self._nodes + self.b_node[both]
        order = np.argsort(keys)
        self._keys, self._index = keys[order], both[order]

    def mark(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """bool per candidate (node numbers a < b): whether it is a band pair; those are marked."""
        if len(self._keys) == 0:
            return np.zeros(len(a), dtype=bool)
        keys = a * self._nodes + b
        at = np.minimum(np.searchsorted(self._keys, keys), len(self._keys) - 1)
        found = self._keys[at] == keys
        self.marked[self._index[at[found]]] = True
        return found

    def unmarked(self, sketches: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The pairs no candidate was: fp_a, fp_b, distance, and their Jaccard estimate
        (float64) with where it exists (bool: both ends have a sketch). sketches: the nodes'."""
        rest = ~self.marked
        a, b = self.a_node[rest], self.b_node[rest]
        both = (a >= 0) & (b >= 0)
        estimate = np.full(len(a), np.nan)
        estimate[both] = estimated_jaccard(sketches[a[both]], sketches[b[both]])
        return self.fp_a[rest], self.fp_b[rest], self.distance[rest], estimate, both
