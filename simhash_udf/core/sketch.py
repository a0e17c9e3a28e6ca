"""MinHash sketches of token shingles, vectorised over a batch of documents.

A sketch is what the second candidate generator (`SketchConfig`) compares: `size` 16-bit
values per text, from which the Jaccard similarity of two texts' shingle sets is estimated
without the texts, and whose bands are the MinHash-LSH join keys.

How a sketch is made, all in numpy, linear in the number of shingles:
- shingles are `shingle` consecutive tokens (the fingerprint's tokenizer, in text order);
  a shingle's hash mixes its tokens' xxh3 hashes (`shingle_hashes`), so no shingle string
  is ever built; a text with fewer tokens than `shingle` is one shingle of all of them;
- one-permutation hashing (Li, Owen, Zhang, NIPS 2012): the top bits of a shingle's hash
  pick one of `size` bins, the other bits are its value, and each bin keeps its smallest
  value, one pass instead of `size` hash functions;
- empty bins (texts with few shingles) are densified by rotation (Shrivastava & Li, ICML
  2014): an empty bin takes the value of the next non-empty bin to its right, circularly,
  plus `_ROTATION` times the distance, which keeps the estimate unbiased and the sketch
  an LSH;
- b-bit minwise hashing (Li & König, WWW 2010): only the low 16 bits of each bin's
  minimum are kept (256 bytes a sketch at 128 bins); two different minima agree on them
  with probability 2^-16, which `estimated_jaccard` corrects for.

Pure numpy, no Spark: the job's UDF (`simhash_udf.stages.udfs`) and the benchmarks call the
same functions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from simhash_udf.core.config import SketchConfig

# A shingle's hash: each token hash is folded in with a multiply by the 64-bit golden ratio
# (an odd constant, so no information is lost), then splitmix64's finaliser spreads every
# input bit over the whole word, since the top bits choose the bin.
_FOLD = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
# Added per step of rotation to a borrowed value (any odd constant; Shrivastava & Li's C).
_ROTATION = 0x2F1B
_EMPTY = np.uint64(0xFFFF_FFFF_FFFF_FFFF)
_VALUE_BITS = 16
_VALUE_MASK = (1 << _VALUE_BITS) - 1
# Chance that two different minima agree on their low 16 bits.
_CHANCE = 2.0**-_VALUE_BITS


def _splitmix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, elementwise on uint64 (wraps, as the C does)."""
    x = x ^ (x >> np.uint64(30))
    x = x * _MIX1
    x = x ^ (x >> np.uint64(27))
    x = x * _MIX2
    return x ^ (x >> np.uint64(31))


def shingle_hashes(token_hashes: np.ndarray, lengths: Sequence[int], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Hashes of every n-token shingle of every document.

    token_hashes: uint64, the tokens of all documents in text order, document after document.
    lengths: tokens per document (they sum to len(token_hashes)).
    Returns (hashes uint64, shingles per document int64). A document with 1..n-1 tokens has
    one shingle (all its tokens), an empty one none, as `tokens.ngrams` does.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    total = int(lengths.sum())
    ends = np.cumsum(lengths)
    starts = ends - lengths
    counts = np.where(lengths >= n, lengths - n + 1, np.minimum(lengths, 1))
    if total == 0:
        return np.zeros(0, dtype=np.uint64), counts
    hashes = np.asarray(token_hashes, dtype=np.uint64)
    first = np.repeat(starts, counts) + (np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts))
    last = np.repeat(ends, counts)  # one past the document's last token
    acc = np.zeros(len(first), dtype=np.uint64)
    for j in range(n):
        position = first + j
        inside = position < last
        token = np.where(inside, hashes[np.minimum(position, total - 1)], np.uint64(0))
        acc = acc * _FOLD + token + np.uint64(inside)  # +1 marks a token present (vs a short text's padding)
    return _splitmix(acc), counts


def sketches_from_shingles(shingles: np.ndarray, counts: Sequence[int], size: int) -> tuple[np.ndarray, np.ndarray]:
    """One-permutation b-bit sketches of many documents.

    shingles: uint64 shingle hashes of all documents, document after document (repeats allowed).
    counts: shingles per document.
    Returns (sketches uint16 of shape (documents, size), has_sketch bool): a document
    without shingles has no sketch (its row is zeros).
    """
    counts = np.asarray(counts, dtype=np.int64)
    n_docs = len(counts)
    bin_bits = size.bit_length() - 1
    shingles = np.asarray(shingles, dtype=np.uint64)
    doc = np.repeat(np.arange(n_docs, dtype=np.int64), counts)
    bins = (shingles >> np.uint64(64 - bin_bits)).astype(np.int64)
    values = shingles & np.uint64((1 << (64 - bin_bits)) - 1)
    table = np.full(n_docs * size, _EMPTY, dtype=np.uint64)
    np.minimum.at(table, doc * size + bins, values)
    table = table.reshape(n_docs, size)
    has = counts > 0
    filled = table != _EMPTY
    # Rotation: the next non-empty bin at or after each bin, on the row laid out twice.
    positions = np.where(np.concatenate([filled, filled], axis=1), np.arange(2 * size), 2 * size)
    next_filled = np.minimum.accumulate(positions[:, ::-1], axis=1)[:, ::-1][:, :size]
    distance = next_filled - np.arange(size)
    source = np.where(has[:, None], next_filled % size, 0)
    low = (table & np.uint64(_VALUE_MASK)).astype(np.int64)
    borrowed = np.take_along_axis(low, source, axis=1)
    out = ((borrowed + _ROTATION * distance) & _VALUE_MASK).astype(np.uint16)
    out[~has] = 0
    return out, has


def sketch_bytes(sketch: np.ndarray) -> bytes:
    """A sketch row as the bytes the job stores (`size` little-endian uint16)."""
    return np.ascontiguousarray(sketch, dtype="<u2").tobytes()


def from_bytes(values: Sequence[bytes]) -> np.ndarray:
    """Stored sketches (all of one size) back as a uint16 array of shape (n, size)."""
    if not values:
        return np.zeros((0, 0), dtype=np.uint16)
    return np.frombuffer(b"".join(values), dtype="<u2").reshape(len(values), -1)


def estimated_jaccard(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The Jaccard similarity of the shingle sets behind each row of `a` and of `b`.

    a, b: uint16 sketches of shape (n, size). The share of agreeing values, less the chance
    that two different 16-bit minima agree, clipped to [0, 1].
    """
    if a.shape[0] == 0:
        return np.zeros(0, dtype=np.float64)
    agree = (a == b).mean(axis=1)
    return np.clip((agree - _CHANCE) / (1.0 - _CHANCE), 0.0, 1.0)


def bands_agree(a: np.ndarray, b: np.ndarray, config: SketchConfig) -> np.ndarray:
    """True for each row pair whose sketches agree on every value of at least one band:
    the pairs the MinHash-LSH join makes candidates (band i is values i*rows .. i*rows+rows-1)."""
    used = config.bands * config.rows
    equal = (a[:, :used] == b[:, :used]).reshape(len(a), config.bands, config.rows)
    return equal.all(axis=2).any(axis=1)


def candidate_probability(jaccard: float, bands: int, rows: int) -> float:
    """The chance that two texts of this Jaccard similarity share at least one of `bands`
    bands of `rows` min-hashes, i.e. are candidates (the LSH S-curve): 1 - (1 - J^rows)^bands."""
    return 1.0 - (1.0 - jaccard**rows) ** bands

