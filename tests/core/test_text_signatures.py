"""The one pass's pure part: every text's exact key, length, fingerprint and sketch, with the
batch's repeated texts tokenised once, equal to computing each text on its own."""

from __future__ import annotations

import hashlib

from simhash_udf.core.config import FingerprintConfig, SketchConfig
from simhash_udf.core.fingerprint import fingerprint, signatures
from simhash_udf.core.sketch import sketch_bytes
from simhash_udf.core.text_signatures import text_signatures

LONG = " ".join(f"word{i} follows word{i + 1} in a sentence that goes on" for i in range(40))
TEXTS = [
    "the harbour reopens on tuesday and ships queue outside the gate",
    None,
    "",
    LONG,
    "the harbour reopens on tuesday and ships queue outside the gate",  # repeated in the batch
    "港口周二重新开放，船只在外面排队。",
    "a b",  # too few features
    LONG,
]


def test_each_text_gets_what_it_gets_alone():
    config = FingerprintConfig(min_features=4)
    sketch = SketchConfig()
    got = text_signatures(TEXTS, config, sketch)
    for i, text in enumerate(TEXTS):
        if not text:
            assert (got.exact_key[i], got.chars[i], got.fingerprint[i], got.sketch[i], got.n_features[i]) == (None, None, None, None, 0)
            continue
        assert got.exact_key[i] == hashlib.sha256(text.encode("utf-8")).digest()
        assert got.chars[i] == len(text)
        assert got.fingerprint[i] == fingerprint(text, config)
        alone = signatures([text], config, sketch)
        assert got.n_features[i] == alone.n_features[0]
        expected_sketch = sketch_bytes(alone.sketch[0]) if alone.has_sketch[0] else None
        assert got.sketch[i] == expected_sketch
    assert got.fingerprint[6] is None  # "a b": fewer than 4 features
    assert got.sketch[3] is not None and got.sketch[0] is None  # only the long text has 300+ characters


def test_without_the_sketch_route_there_are_no_sketches():
    config = FingerprintConfig()
    for sketch in (None, SketchConfig(jaccard=None)):
        got = text_signatures(TEXTS, config, sketch)
        assert got.sketch == [None] * len(TEXTS)
        assert got.fingerprint[3] == fingerprint(LONG, config)


def test_an_empty_batch():
    got = text_signatures([], FingerprintConfig(), SketchConfig())
    assert got.exact_key == [] and len(got.n_features) == 0
