"""Weighted 64-bit simhash (Charikar 2002), vectorised over a batch of documents.

Features of a text are n-grams of its tokens, each hashed to 64 bits with xxh3 (stable
across processes and machines, unlike Python's `hash()`). Bit i of the fingerprint is set
when the weights of the features whose hash has bit i set outweigh those where it is clear.

A batch is fingerprinted without a Python loop over its features: its tokens come as one
Arrow list array (`tokens.batch_tokens`: texts without Han characters are split by numpy),
are numbered once (`pyarrow.compute.dictionary_encode`), counted per document by numpy,
and only the batch's distinct features are hashed and weighted in Python (a few per cent
of its tokens, cached per process). `weighted_features` is the same computation written
for one text, kept as the definition the batch path is tested against.

Fingerprints are returned as signed int64: Spark has no unsigned 64-bit type, so the same
64 bits are read as a signed long (bit 63 is the sign bit).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from simhash_udf.core import sketch
from simhash_udf.core.config import FingerprintConfig, SketchConfig
from simhash_udf.core.idf import idf, idfs
from simhash_udf.core.tokens import batch_tokens, ngrams, tokens

# A feature is the UTF-8 of its tokens joined by the unit separator, which normalised text
# never contains, so ("ab", "c") and ("a", "bc") cannot hash alike.
_JOIN = "\x1f"
# Features are summed this many at a time (a longer document alone), and documents at most
# _DOC_CHUNK at a time: ~3 MB of index arrays and histograms of 256 x 256 doubles (512 KB,
# within a core's cache) whatever the batch holds. 256 documents summed ~1.3x faster than
# 2,048 at a time (7.5 against 10.3 ms per 1,000 documents of 325 features).
_CHUNK = 1 << 17
_DOC_CHUNK = 1 << 8
# Weights are summed as integers in units of 1/1024: exact and independent of summation
# order, so a bit whose sum is a tie is clear under every weighting that scales alike
# (floating-point sums leave +-1e-13 noise there). A 1M-character text stays below 2^35.
_WEIGHT_SCALE = 1024
# Hash and IDF of features already seen by this process: a crawl's vocabulary repeats from
# batch to batch. Cleared before it would pass this many entries (~200 MB).
_FEATURE_CACHE_SIZE = 1 << 20
_feature_cache: dict[str, tuple[int, float]] = {}


def feature_hash(feature: str) -> int:
    """Stable 64-bit hash (xxh3_64, seed 0) of a feature's UTF-8 bytes, as an unsigned int."""
    return xxhash.xxh3_64_intdigest(feature.encode("utf-8"))


def weighted_features(text: str, config: FingerprintConfig) -> dict[str, float]:
    """The features of a normalised text and their weights.

    Features are token n-grams (see `FingerprintConfig.ngram`). Weights: `binary` 1 each;
    `tf` the feature's count; `tfidf` the count times the mean IDF of its tokens (see
    :mod:`idf`: jieba's table for Chinese, English word frequencies for the rest); `idf` that
    IDF alone; `logtfidf` (1 + ln count) times it.
    """
    toks = tokens(text[: config.max_chars], config.tokenizer, config.segmenter)
    counts = Counter(_JOIN.join(gram) for gram in ngrams(toks, config.ngram))
    if config.weighting == "binary":
        return {f: 1.0 for f in counts}
    if config.weighting == "tf":
        return {f: float(c) for f, c in counts.items()}
    weights = {}
    for feature, count in counts.items():
        parts = feature.split(_JOIN)
        feature_idf = math.fsum(idf(p) for p in parts) / len(parts)
        if config.weighting == "tfidf":
            weights[feature] = count * feature_idf
        elif config.weighting == "idf":
            weights[feature] = feature_idf
        else:  # logtfidf: repeats count, but a word said 50 times does not outvote the page
            weights[feature] = (1.0 + math.log(count)) * feature_idf
    return weights


def simhash_from_hashes(
    hashes: np.ndarray, weights: np.ndarray, lengths: Sequence[int]
) -> np.ndarray:
    """Simhash of many documents from their features' hashes, in one vectorised pass.

    hashes: uint64, the features of all documents, document after document.
    weights: float64, one per feature (summed in fixed point, see `_WEIGHT_SCALE`).
    lengths: how many features each document has (they sum to len(hashes)).
    Returns int64, one fingerprint per document; a document with no features gets 0 here,
    callers never keep those (see `fingerprints`).

    Bit i is set when twice the weight of the features with bit i set exceeds the
    document's total weight (the same as the signed sum being positive). The weights with
    a bit set are summed a byte at a time: for each of the 8 byte positions, one histogram
    of weight over (document, byte value), then a product with the 256 x 8 table of each
    byte value's bits. A histogram per position (documents x 256) stays in the CPU's cache
    where one over all positions did not: 2.5-2.7x faster (20.4 -> 7.5 ms per 1,000
    documents of 325 features, 42.3 -> 17.1 ms per 800 of 1,000). Every weight is an
    integer (in units of 1/1024) held exactly in a double, and so is every sum (below
    2^53), so the order numpy and BLAS add in changes nothing.
    """
    n_docs = len(lengths)
    lengths = np.asarray(lengths, dtype=np.int64)
    offsets = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    hashes = np.ascontiguousarray(hashes, dtype="<u8")
    fixed = np.rint(np.asarray(weights, dtype=np.float64) * _WEIGHT_SCALE)
    # Byte j of a little-endian uint64 holds bits 8j .. 8j + 7.
    hash_bytes = hashes.view(np.uint8).reshape(-1, 8)
    byte_bits = np.unpackbits(
        np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little"
    ).astype(np.float64)
    out = np.zeros(n_docs, dtype="<u8")
    start = 0
    while start < n_docs:
        # Documents in chunks of at most _CHUNK features (a longer document alone) and
        # _DOC_CHUNK documents, which bounds the histograms and the index arrays.
        stop = int(np.searchsorted(offsets, offsets[start] + _CHUNK, side="right")) - 1
        stop = min(max(stop, start + 1), start + _DOC_CHUNK, n_docs)
        first, last = offsets[start], offsets[stop]
        docs = stop - start
        local = np.repeat(np.arange(docs, dtype=np.int64), lengths[start:stop])
        chunk_weights = fixed[first:last]
        total = np.bincount(local, weights=chunk_weights, minlength=docs)
        row = local * 256  # a document's first cell in a (document, byte value) histogram
        bits = np.empty((docs, 64), dtype=bool)
        for j in range(8):
            histogram = np.bincount(
                row + hash_bytes[first:last, j], weights=chunk_weights, minlength=docs * 256
            ).reshape(docs, 256)
            np.greater(2.0 * (histogram @ byte_bits), total[:, None], out=bits[:, 8 * j : 8 * j + 8])
        out[start:stop] = np.packbits(bits, axis=1, bitorder="little").view("<u8").reshape(docs)
        start = stop
    return out.view(np.int64)


def _ngram_features(text: str | None, config: FingerprintConfig) -> list[str]:
    """The n-gram features (n > 1) of one normalised text, with repeats."""
    if not text:
        return []
    toks = tokens(text[: config.max_chars], config.tokenizer, config.segmenter)
    return [_JOIN.join(gram) for gram in ngrams(toks, config.ngram)]


def _hash_and_idf(features: Sequence[str], with_idf: bool) -> tuple[np.ndarray, np.ndarray]:
    """xxh3 hashes (uint64) and mean token IDFs (float64) of distinct features."""
    if len(_feature_cache) + len(features) > _FEATURE_CACHE_SIZE:
        _feature_cache.clear()  # so it holds at most the limit or one batch's features
    cache_get = _feature_cache.get
    known = [cache_get(f) for f in features]
    new = [f for f, k in zip(features, known) if k is None]
    if new:
        hashes = [xxhash.xxh3_64_intdigest(f.encode("utf-8")) for f in new]
        if not with_idf:
            values = [0.0] * len(new)
        elif all(_JOIN not in f for f in new):  # single tokens (always, with n-grams of 1)
            values = idfs(new)
        else:
            values = []
            for feature in new:
                parts = feature.split(_JOIN)
                values.append(math.fsum(idfs(parts)) / len(parts))
        entries = dict(zip(new, zip(hashes, values)))
        if with_idf:  # an entry without its IDF would be wrong for a later IDF weighting
            _feature_cache.update(entries)
        known = [k if k is not None else entries[f] for f, k in zip(features, known)]
    hashes_u64 = np.fromiter((k[0] for k in known), dtype=np.uint64, count=len(known))
    idf_values = np.fromiter((k[1] for k in known), dtype=np.float64, count=len(known))
    return hashes_u64, idf_values


def _log_table(largest: int) -> np.ndarray:
    """math.log(c) for c in 0..largest (index 0 unused): the same doubles as the one-text path."""
    return np.array([0.0] + [math.log(c) for c in range(1, largest + 1)], dtype=np.float64)


def fingerprints(
    texts: Sequence[str | None], config: FingerprintConfig
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fingerprint a batch of normalised texts.

    Returns (fingerprint int64, has_fingerprint bool, n_features int32), one per text.
    A text with fewer than `config.min_features` distinct features (or None) has no
    fingerprint: its has_fingerprint is False and its fingerprint value is meaningless.
    Equal to `weighted_features` + `feature_hash` + `simhash_from_hashes` text by text.
    """
    if config.ngram == 1:
        # A bag of single tokens does not depend on their order: the `auto` tokenizer may then
        # segment all of a text's Han runs in one call.
        per_text = batch_tokens(texts, config.tokenizer, config.segmenter, config.max_chars, ordered=False)
    else:
        per_text = pa.array([_ngram_features(text, config) for text in texts], type=pa.list_(pa.string()))
    return _fingerprints_of_features(_numbered(per_text, _with_idf(config)), config)


@dataclass(frozen=True)
class Signatures:
    """A batch's fingerprints and sketches, one row per text (see `signatures`).

    fingerprint int64, has_fingerprint bool, n_features int32: as `fingerprints` returns them.
    sketch uint16 of shape (texts, sketch size), has_sketch bool: `core.sketch`'s sketch of
    the text's token shingles; texts shorter than `SketchConfig.min_chars` have none.
    """

    fingerprint: np.ndarray
    has_fingerprint: np.ndarray
    n_features: np.ndarray
    sketch: np.ndarray
    has_sketch: np.ndarray


def signatures(texts: Sequence[str | None], config: FingerprintConfig, sketch_config: SketchConfig) -> Signatures:
    """Fingerprints and MinHash sketches of a batch of normalised texts, tokenised once.

    The fingerprint is the one `fingerprints` gives (a bag of n-grams does not depend on the
    order the tokens came in); the sketch needs the tokens in text order.
    """
    token_array = batch_tokens(texts, config.tokenizer, config.segmenter, config.max_chars)
    # The tokens numbered and hashed once: with n-grams of 1 they are the fingerprint's
    # features as well as the sketch's shingles' parts.
    numbered = _numbered(token_array, _with_idf(config))
    if config.ngram == 1:
        features = numbered
    else:
        grams = [[_JOIN.join(g) for g in ngrams(toks, config.ngram)] for toks in token_array.to_pylist()]
        features = _numbered(pa.array(grams, type=pa.list_(pa.string())), _with_idf(config))
    values, ok, n_features = _fingerprints_of_features(features, config)
    lengths, codes, vocab_hash = numbered.lengths, numbered.codes, numbered.hashes
    long_enough = np.array([bool(t) and len(t) >= sketch_config.min_chars for t in texts], dtype=bool)
    # Texts too short for a sketch contribute no shingles (their tokens are skipped).
    lengths_kept = np.where(long_enough, lengths, 0)
    keep_token = np.repeat(long_enough, lengths)
    shingles, counts = sketch.shingle_hashes(vocab_hash[codes][keep_token], lengths_kept, sketch_config.shingle)
    sketches, has_sketch = sketch.sketches_from_shingles(shingles, counts, sketch_config.size)
    return Signatures(values, ok, n_features, sketches, has_sketch)


@dataclass(frozen=True)
class _Numbered:
    """A batch's lists of strings (tokens or features), each distinct string numbered once.

    lengths: int64, strings per text; codes: int64, one per string, text after text, indexing
    the vocabulary; hashes: uint64 xxh3 and idfs: float64 mean token IDF (zeros without
    `with_idf`) of each distinct string, in vocabulary order.
    """

    lengths: np.ndarray
    codes: np.ndarray
    hashes: np.ndarray
    idfs: np.ndarray


def _numbered(per_text: pa.ListArray, with_idf: bool) -> _Numbered:
    """`_Numbered` of a list-of-strings array. Arrow numbers the distinct strings (hashing
    their UTF-8 in C++), so only those are hashed and weighted in Python."""
    encoded = pc.dictionary_encode(per_text.flatten())
    hashes, idfs = _hash_and_idf(encoded.dictionary.to_pylist(), with_idf)
    return _Numbered(
        lengths=np.diff(per_text.offsets.to_numpy()),
        codes=encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64),
        hashes=hashes,
        idfs=idfs,
    )


def _unique_counts(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`np.unique(keys, return_counts=True)` of int64 keys that come document after document
    (document-major, so the array is a run of increasing blocks): a stable sort (timsort)
    merges those runs in about half the time of `np.unique`'s quicksort."""
    ordered = np.sort(keys, kind="stable")
    first = np.empty(len(ordered), dtype=bool)
    first[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    return ordered[starts], np.diff(np.append(starts, len(ordered)))


def _with_idf(config: FingerprintConfig) -> bool:
    return config.weighting in ("tfidf", "idf", "logtfidf")


def _fingerprints_of_features(
    features: _Numbered, config: FingerprintConfig
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`fingerprints` of the batch's numbered features (`_numbered`)."""
    n_docs = len(features.lengths)
    # numpy counts each (document, feature) pair, which come out document after document.
    width = max(len(features.hashes), 1)
    doc_of_token = np.repeat(np.arange(n_docs, dtype=np.int64), features.lengths)
    pairs, counts = _unique_counts(doc_of_token * width + features.codes)
    pair_doc = pairs // width
    pair_feature = pairs % width
    n_features = np.bincount(pair_doc, minlength=n_docs).astype(np.int32)

    vocab_hash, vocab_idf = features.hashes, features.idfs
    feature_idf = vocab_idf[pair_feature]
    if config.weighting == "binary":
        weights = np.ones(len(pairs), dtype=np.float64)
    elif config.weighting == "tf":
        weights = counts.astype(np.float64)
    elif config.weighting == "tfidf":
        weights = counts * feature_idf
    elif config.weighting == "idf":
        weights = feature_idf
    else:  # logtfidf: see weighted_features
        logs = _log_table(int(counts.max()) if len(counts) else 0)
        weights = (1.0 + logs[counts]) * feature_idf
    values = simhash_from_hashes(vocab_hash[pair_feature], weights, n_features)
    return values, n_features >= config.min_features, n_features


def fingerprint(text: str, config: FingerprintConfig | None = None) -> int | None:
    """Signed 64-bit simhash of one normalised text, or None when it is too short."""
    values, ok, _ = fingerprints([text], config or FingerprintConfig())
    return int(values[0]) if ok[0] else None


def hamming(a: int, b: int) -> int:
    """Hamming distance of two 64-bit fingerprints given as signed or unsigned ints."""
    return ((a ^ b) & 0xFFFF_FFFF_FFFF_FFFF).bit_count()
