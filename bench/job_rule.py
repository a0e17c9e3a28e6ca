"""The job's sketch route as a function of pair indices: what bench/quality.py scores.

A pair of texts is merged through the sketch route (`SketchConfig`, issue 13) when both texts
have sketches (at least `min_chars` characters), the sketches agree on every row of one band
(`core.sketch.bands_agree`, the MinHash-LSH join's candidate test), their estimated Jaccard
similarity reaches `jaccard` and both fingerprints are at most `max_distance` bits apart. The
join finds every pair that passes the band test, so the test stands for the join here as the
Hamming distance stands for the band join at k.

Sketches are made once per shingle size for every non-empty text (`fingerprinting.sketch_config`,
min_chars=1); whether a text has one under another min_chars is `length >= min_chars`, as
`core.fingerprint.signatures` decides it.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from simhash_udf.core.config import SketchConfig
from simhash_udf.core.sketch import bands_agree, estimated_jaccard

CHUNK_PAIRS = 50_000  # pairs compared at once (bounds the (pairs, size) arrays)
# One step looser, the sketch route's safety margin (bench/tune_defaults.py): rails must also
# hold with the Jaccard threshold this much lower and the Hamming limit this much higher.
JACCARD_STEP = 0.05
DISTANCE_STEP = 2


def pair_jaccard(a: np.ndarray, b: np.ndarray, sketches: np.ndarray) -> np.ndarray:
    """Estimated Jaccard similarity of texts a[i] and b[i] from their sketches (float64)."""
    out = np.zeros(len(a), dtype=np.float64)
    for start in range(0, len(a), CHUNK_PAIRS):
        stop = start + CHUNK_PAIRS
        out[start:stop] = estimated_jaccard(sketches[a[start:stop]], sketches[b[start:stop]])
    return out


def candidates(a: np.ndarray, b: np.ndarray, sketches: np.ndarray, config: SketchConfig) -> np.ndarray:
    """Whether texts a[i] and b[i] agree on all rows of one of the config's bands."""
    out = np.zeros(len(a), dtype=bool)
    for start in range(0, len(a), CHUNK_PAIRS):
        stop = start + CHUNK_PAIRS
        out[start:stop] = bands_agree(sketches[a[start:stop]], sketches[b[start:stop]], config)
    return out


def sketch_route(
    a: np.ndarray,
    b: np.ndarray,
    dist: np.ndarray,
    fingerprinted: np.ndarray,
    lengths: np.ndarray,
    sketches: np.ndarray,
    config: SketchConfig,
) -> tuple[np.ndarray, np.ndarray]:
    """Which pairs the sketch route merges, and their estimated Jaccard similarity.

    a, b: corpus indices of each pair's texts; dist: the pair's Hamming distance;
    fingerprinted: both texts have a fingerprint; lengths: characters of every corpus text;
    sketches: uint16 (texts, size), every text's sketch at `config.shingle`.
    Returns (merged bool, jaccard float64: NaN where a text has no sketch). With
    `config.jaccard` None the route is off and merges nothing.
    """
    sketched = np.minimum(lengths[a], lengths[b]) >= config.min_chars
    jaccard = np.full(len(a), np.nan)
    jaccard[sketched] = pair_jaccard(a[sketched], b[sketched], sketches)
    if config.jaccard is None:
        return np.zeros(len(a), dtype=bool), jaccard
    merged = sketched & fingerprinted & (dist <= config.max_distance)
    merged &= np.nan_to_num(jaccard, nan=0.0) >= config.jaccard
    merged[merged] = candidates(a[merged], b[merged], sketches, config)
    return merged, jaccard


def looser(config: SketchConfig) -> SketchConfig:
    """The sketch route one step looser (the safety margin): Jaccard threshold JACCARD_STEP
    lower, Hamming limit DISTANCE_STEP higher (at most 64)."""
    if config.jaccard is None:
        return config
    return replace(config, jaccard=round(max(config.jaccard - JACCARD_STEP, 0.01), 4),
                   max_distance=min(config.max_distance + DISTANCE_STEP, 64))
