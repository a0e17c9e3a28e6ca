"""All-pairs helpers of bench/recall_routes.py (pure numpy / Python, no Spark).

Each one answers, over a whole (small) corpus, a question the job answers with a join: which
pairs of fingerprints are within k bits, which pairs of sketches are MinHash-LSH candidates,
which texts end up in one connected component, and how far apart the members of a component
are. The benchmark runs them on a few thousand long texts, where brute force is exact and cheap.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import xxhash
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from simhash_udf.core.config import FingerprintConfig
from simhash_udf.core.fingerprint import simhash_from_hashes, weighted_features

_ROW_CHUNK = 256  # rows of the all-pairs distance matrix computed at once (256 x n int64)


def pairs_within(fingerprints: np.ndarray, max_distance: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair (i < j) of 64-bit fingerprints at most `max_distance` bits apart.

    Returns (i int64, j int64, distance int64), ordered by i then j.
    """
    values = np.asarray(fingerprints).astype(np.int64).view(np.uint64)
    firsts, seconds, dists = [], [], []
    for start in range(0, len(values), _ROW_CHUNK):
        block = np.bitwise_count(values[start:start + _ROW_CHUNK, None] ^ values[None, :]).astype(np.int64)
        rows, cols = np.nonzero(block <= max_distance)
        rows_global = rows + start
        upper = cols > rows_global
        firsts.append(rows_global[upper])
        seconds.append(cols[upper])
        dists.append(block[rows[upper], cols[upper]])
    if not firsts:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    return np.concatenate(firsts), np.concatenate(seconds), np.concatenate(dists)


def lsh_pairs(sketches: np.ndarray, bands: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Every pair (i < j) of sketch rows that agree on all `rows` values of at least one of
    `bands` bands (band b is values b*rows .. b*rows+rows-1): the pairs a MinHash-LSH join
    keyed by (band, band values) emits, each once.

    sketches: uint16 (n, size). Returns (i int64, j int64), sorted by i then j.
    """
    n = len(sketches)
    codes = []
    for band in range(bands):
        values = np.ascontiguousarray(sketches[:, band * rows:(band + 1) * rows])
        keys = values.view(np.dtype((np.void, values.dtype.itemsize * rows))).ravel()
        _, bucket = np.unique(keys, return_inverse=True)
        order = np.argsort(bucket, kind="stable")
        bounds = np.flatnonzero(np.diff(bucket[order])) + 1
        for members in np.split(order, bounds):
            if len(members) > 1:
                members = np.sort(members)
                codes.extend(i * n + j for i, j in itertools.combinations(members.tolist(), 2))
    unique = np.unique(np.asarray(codes, dtype=np.int64))
    return unique // max(n, 1), unique % max(n, 1)


def components(n: int, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Connected-component label (int64) of each of n nodes joined by the edges (first, second)."""
    graph = coo_matrix((np.ones(len(first)), (np.asarray(first), np.asarray(second))), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    return labels.astype(np.int64)


def shingle_set(tokens: Sequence[str], n: int) -> set[tuple[str, ...]]:
    """The distinct n-token shingles of a token list (a shorter non-empty list is one shingle)."""
    if len(tokens) < n:
        return {tuple(tokens)} if tokens else set()
    return set(zip(*(tokens[i:] for i in range(n))))


def jaccard(a: set, b: set) -> float:
    """|a & b| / |a | b| (1.0 for two empty sets)."""
    union = len(a | b)
    return len(a & b) / union if union else 1.0


def seeded_fingerprints(texts: Sequence[str], config: FingerprintConfig, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The simhash of each text with its features hashed by xxh3_64 under another `seed`
    (seed 0 is `fingerprint.fingerprints`' own hash): an independent second fingerprint of
    the same weighted features.

    Returns (fingerprint int64, distinct features int64) per text; a text without features
    gets fingerprint 0 and 0 features.
    """
    hashes: list[int] = []
    weights: list[float] = []
    lengths = []
    for text in texts:
        features = weighted_features(text, config) if text else {}
        hashes.extend(xxhash.xxh3_64_intdigest(f.encode("utf-8"), seed) for f in features)
        weights.extend(features.values())
        lengths.append(len(features))
    values = simhash_from_hashes(np.array(hashes, dtype=np.uint64), np.array(weights, dtype=np.float64), lengths)
    return values, np.array(lengths, dtype=np.int64)


def anchor_guard(labels: np.ndarray, reaches_anchor: np.ndarray) -> np.ndarray:
    """Cluster labels after the anchor guard: a member stays in its component only when it
    reaches the component's anchor (its smallest index) by itself; any other member becomes
    a cluster of its own (labelled n + its index, so labels stay distinct).

    labels: component label per node; reaches_anchor: bool per node (an anchor reaches itself).
    """
    n = len(labels)
    return np.where(reaches_anchor, labels, n + np.arange(n))


def anchors_of(labels: np.ndarray) -> np.ndarray:
    """The anchor (smallest node index) of each node's component."""
    smallest = np.full(labels.max() + 1 if len(labels) else 0, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(smallest, labels, np.arange(len(labels)))
    return smallest[labels]
