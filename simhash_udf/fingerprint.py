"""Weighted 64-bit simhash (Charikar 2002), vectorised over a batch of documents.

Features of a text are n-grams of its tokens, each hashed to 64 bits with xxh3 (stable
across processes and machines, unlike Python's `hash()`). Bit i of the fingerprint is set
when the weights of the features whose hash has bit i set outweigh those where it is clear.

Fingerprints are returned as signed int64: Spark has no unsigned 64-bit type, so the same
64 bits are read as a signed long (bit 63 is the sign bit).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np
import xxhash

from simhash_udf.config import FingerprintConfig
from simhash_udf.idf import idf
from simhash_udf.text import ngrams, tokens

# A feature is the UTF-8 of its tokens joined by the unit separator, which normalised text
# never contains, so ("ab", "c") and ("a", "bc") cannot hash alike.
_JOIN = "\x1f"
# Features are expanded to a (features x 64) sign matrix this many at a time, bounding memory
# to ~64 MB per chunk whatever the batch holds.
_CHUNK = 1 << 17
# Weights are summed as integers in units of 1/1024: exact and independent of summation
# order, so a bit whose sum is a tie is clear under every weighting that scales alike
# (floating-point sums leave +-1e-13 noise there). A 1M-character text stays below 2^35.
_WEIGHT_SCALE = 1024


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
    toks = tokens(text[: config.max_chars], config.tokenizer)
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
    """
    n_docs = len(lengths)
    doc_of_feature = np.repeat(np.arange(n_docs), lengths)
    sums = np.zeros((n_docs, 64), dtype=np.int64)
    hashes = np.ascontiguousarray(hashes, dtype="<u8")
    fixed = np.rint(np.asarray(weights, dtype=np.float64) * _WEIGHT_SCALE).astype(np.int64)
    for start in range(0, len(hashes), _CHUNK):
        chunk = hashes[start : start + _CHUNK]
        # bits[f, i] is bit i of feature f's hash (bit 0 the least significant).
        bits = np.unpackbits(chunk.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
        signed = bits.astype(np.int64) * 2 - 1
        signed *= fixed[start : start + _CHUNK, None]
        np.add.at(sums, doc_of_feature[start : start + _CHUNK], signed)
    packed = np.packbits(sums > 0, axis=1, bitorder="little")
    return packed.view("<u8").reshape(n_docs).view(np.int64)


def fingerprints(
    texts: Sequence[str | None], config: FingerprintConfig
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fingerprint a batch of normalised texts.

    Returns (fingerprint int64, has_fingerprint bool, n_features int32), one per text.
    A text with fewer than `config.min_features` distinct features (or None) has no
    fingerprint: its has_fingerprint is False and its fingerprint value is meaningless.
    """
    hashes: list[int] = []
    weights: list[float] = []
    lengths: list[int] = []
    for text in texts:
        features = weighted_features(text, config) if text else {}
        lengths.append(len(features))
        for feature, weight in features.items():
            hashes.append(feature_hash(feature))
            weights.append(weight)
    n_features = np.asarray(lengths, dtype=np.int32)
    values = simhash_from_hashes(
        np.asarray(hashes, dtype=np.uint64), np.asarray(weights, dtype=np.float64), lengths
    )
    return values, n_features >= config.min_features, n_features


def fingerprint(text: str, config: FingerprintConfig | None = None) -> int | None:
    """Signed 64-bit simhash of one normalised text, or None when it is too short."""
    values, ok, _ = fingerprints([text], config or FingerprintConfig())
    return int(values[0]) if ok[0] else None


def hamming(a: int, b: int) -> int:
    """Hamming distance of two 64-bit fingerprints given as signed or unsigned ints."""
    return ((a ^ b) & 0xFFFF_FFFF_FFFF_FFFF).bit_count()
