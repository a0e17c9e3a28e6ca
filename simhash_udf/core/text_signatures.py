"""Everything the job keeps of a batch of normalised texts: exact key, length, fingerprint, sketch.

The one-pass stage (`stages/udfs.document_signatures`) normalises a batch of pages and hands the
texts here; what comes back is all that later stages need, so no stage after it carries the
texts. Pure Python and numpy: no Spark.

Texts repeated within the batch (exact copies that happen to be read together, a common case
when a crawl lists a site's mirrors side by side) are fingerprinted once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from simhash_udf.core.config import FingerprintConfig, SketchConfig
from simhash_udf.core.fingerprint import fingerprints, signatures
from simhash_udf.core.sketch import sketch_bytes


@dataclass(frozen=True)
class TextSignatures:
    """One entry per text of the batch, in its order.

    exact_key: SHA-256 of the text's UTF-8 (32 bytes), None for an empty text (None or "");
    texts with equal keys are exact copies. chars: the text's length in characters (code
    points, as Spark's `length`), None when empty. fingerprint: signed 64-bit simhash, None when
    empty or when the text has fewer than `min_features` distinct features. n_features: its
    distinct features (0 when empty). sketch: the MinHash sketch as bytes (`core.sketch.sketch_bytes`),
    None without a sketch config, with the route off, or for texts under its `min_chars`.
    """

    exact_key: list[bytes | None]
    chars: list[int | None]
    fingerprint: list[int | None]
    n_features: np.ndarray
    sketch: list[bytes | None]


def exact_key(text: str) -> bytes:
    """SHA-256 of the text's UTF-8: equal to Spark SQL's `unhex(sha2(text, 256))`."""
    return hashlib.sha256(text.encode("utf-8")).digest()


def text_signatures(
    texts: Sequence[str | None], config: FingerprintConfig, sketch_config: SketchConfig | None = None
) -> TextSignatures:
    """The signatures of every text of a batch (see `TextSignatures`), each distinct non-empty
    text tokenised once."""
    first_of: dict[str, int] = {}
    slot: list[int] = []
    for text in texts:
        if not text:
            slot.append(-1)
            continue
        slot.append(first_of.setdefault(text, len(first_of)))
    distinct = list(first_of)
    with_sketch = sketch_config is not None and sketch_config.jaccard is not None
    if with_sketch and distinct:
        found = signatures(distinct, config, sketch_config)
        values, ok, n_features = found.fingerprint, found.has_fingerprint, found.n_features
        blobs = [sketch_bytes(row) if has else None for row, has in zip(found.sketch, found.has_sketch)]
    elif distinct:
        values, ok, n_features = fingerprints(distinct, config)
        blobs = [None] * len(distinct)
    else:
        values, ok, n_features = np.zeros(0, np.int64), np.zeros(0, bool), np.zeros(0, np.int32)
        blobs = []
    keys = [exact_key(t) for t in distinct]
    lengths = [len(t) for t in distinct]
    prints = [int(v) if has else None for v, has in zip(values.tolist(), ok.tolist())]
    out_features = np.zeros(len(texts), dtype=np.int32)
    for i, s in enumerate(slot):
        if s >= 0:
            out_features[i] = n_features[s]
    return TextSignatures(
        exact_key=[keys[s] if s >= 0 else None for s in slot],
        chars=[lengths[s] if s >= 0 else None for s in slot],
        fingerprint=[prints[s] if s >= 0 else None for s in slot],
        n_features=out_features,
        sketch=[blobs[s] if s >= 0 else None for s in slot],
    )
