"""The documents stage's pandas UDFs: normalised text, and the fingerprint.

Both run on Arrow batches and only adapt pure functions to pandas Series: bytes to str
(`files/encoding.decode_utf8`), HTML to text (`core/extract.extract`), normalisation
(`core/normalise.normalise`) and the batch fingerprint (`core/fingerprint.fingerprints`). The
configuration is a small frozen dataclass, so a UDF pickles cheaply and heavy resources
(OpenCC and jieba dictionaries, IDF tables) load once per worker.

They are not the only Python that runs on the executors: the band join's second level
(`stages/join.band_join`, `mapInArrow` over `core/pair_kernel`), the index lookup's hot-key
summaries (`index/lookup.py`, `mapInArrow`), the short-text check's Jaccard UDF
(`stages/short_text_check.py`), and reading WARC files and checking compressed input
(`files/warc.py`, `files/inputs.py`, on RDDs) run Python per batch or per file too.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pyspark.sql import Column
from pyspark.sql.functions import pandas_udf
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from simhash_udf.core import sketch as sketches
from simhash_udf.core.config import FingerprintConfig, SketchConfig
from simhash_udf.core.extract import extract as extract_html
from simhash_udf.core.fingerprint import fingerprints, signatures
from simhash_udf.core.normalise import normalise, utf8_may_hold_han
from simhash_udf.core.text_signatures import text_signatures
from simhash_udf.files.encoding import decode_utf8

NORMALISED_TYPE = StructType(
    [
        StructField("text", StringType(), True),
        StructField("invalid_utf8", BooleanType(), True),
        StructField("extract_fallback", BooleanType(), True),
    ]
)

SIGNATURES_TYPE = StructType(
    [
        StructField("exact_key", BinaryType(), True),
        StructField("chars", IntegerType(), True),
        StructField("fingerprint", LongType(), True),
        StructField("n_features", IntegerType(), True),
        StructField("sketch", BinaryType(), True),
        StructField("invalid_utf8", BooleanType(), True),
        StructField("extract_fallback", BooleanType(), True),
        StructField("short_text", StringType(), True),
    ]
)

FINGERPRINT_TYPE = StructType(
    [
        StructField("fingerprint", LongType(), True),
        StructField("n_features", IntegerType(), True),
        StructField("sketch", BinaryType(), True),
    ]
)


def _normalise_values(raw: pd.Series, html: bool, extract: str) -> tuple[list[str | None], list[bool], list[bool]]:
    """Each raw value (UTF-8 bytes) decoded, extracted when `html`, and normalised: the texts
    (None for a null value), whether its bytes were invalid UTF-8, whether `main` fell back."""
    texts: list[str | None] = []
    invalid: list[bool] = []
    fallbacks: list[bool] = []
    for value in raw:
        text, bad = decode_utf8(value)
        fallback = False
        if text is not None and html:
            text, fallback = extract_html(text, extract)
        if text is not None:
            # Markup may spell a Han character as an entity (`&#x4e2d;`), so only plain
            # text's bytes can rule one out.
            text = normalise(text, may_hold_han=html or utf8_may_hold_han(value))
        texts.append(text)
        invalid.append(bad)
        fallbacks.append(fallback)
    return texts, invalid, fallbacks


def document_signatures(
    raw_text: Column,
    html: bool,
    extract: str,
    config: FingerprintConfig,
    sketch: SketchConfig | None,
    carry_below: int | None = None,
) -> Column:
    """The one pass over the text: struct<exact_key: binary, chars: int, fingerprint: long,
    n_features: int, sketch: binary, invalid_utf8: boolean, extract_fallback: boolean,
    short_text: string> of a binary (UTF-8 bytes) column.

    Decode, extract (HTML), normalise, then `core/text_signatures.text_signatures`: the exact
    key (SHA-256 of the normalised text), its length in characters, fingerprint and sketch,
    all null for an empty text. invalid_utf8 and extract_fallback as in `normalised_text`.
    short_text: the normalised text when it has fewer than `carry_below` characters
    (`core/short_text_policy.carried_below`), else null: only the short-text check reads a
    text after this pass, and only short ones (`short_text_check.texts_by_fingerprint`).
    """

    @pandas_udf(SIGNATURES_TYPE)  # type: ignore[call-overload]
    def signatures_batch(raw: pd.Series) -> pd.DataFrame:
        texts, invalid, fallbacks = _normalise_values(raw, html, extract)
        found = text_signatures(texts, config, sketch)
        short = [
            text if carry_below is not None and n is not None and n < carry_below else None
            for text, n in zip(texts, found.chars)
        ]
        return pd.DataFrame(
            {
                "exact_key": found.exact_key,
                "chars": pd.array(found.chars, dtype="Int32"),
                "fingerprint": pd.array(found.fingerprint, dtype="Int64"),
                "n_features": found.n_features,
                "sketch": found.sketch,
                "invalid_utf8": invalid,
                "extract_fallback": fallbacks,
                "short_text": short,
            }
        )

    return signatures_batch(raw_text)


def normalised_text(raw_text: Column, html: bool, extract: str = "main") -> Column:
    """struct<text: string, invalid_utf8: boolean, extract_fallback: boolean> of a binary
    (UTF-8 bytes) column.

    text: the normalised text (see `core/normalise.normalise`), after HTML extraction when
    `html` (`core/extract.extract` in mode `extract`: `main` content or `all` visible text); null when
    the input is null. invalid_utf8: the bytes were not valid UTF-8 (the bad sequences
    became U+FFFD). extract_fallback: `main` found no main content in a page with visible
    text, so all its visible text was kept. Taking bytes rather than strings keeps invalid
    UTF-8 in Parquet input from failing inside Arrow.
    """

    @pandas_udf(NORMALISED_TYPE)  # type: ignore[call-overload]
    def normalise_batch(raw: pd.Series) -> pd.DataFrame:
        texts, invalid, fallbacks = _normalise_values(raw, html, extract)
        return pd.DataFrame({"text": texts, "invalid_utf8": invalid, "extract_fallback": fallbacks})

    return normalise_batch(raw_text)


def simhash(text: Column, config: FingerprintConfig, sketch: SketchConfig | None = None) -> Column:
    """struct<fingerprint: long, n_features: int, sketch: binary> of a normalised-text column.

    fingerprint: signed 64-bit simhash, null when the text has fewer than
    `config.min_features` distinct features. n_features: how many distinct features it has.
    sketch: the text's MinHash sketch (`core.sketch`: `sketch.size` little-endian uint16),
    null without a `sketch` config (or with its route off) and for texts shorter than
    `sketch.min_chars`; both come from one tokenisation (`fingerprint.signatures`).
    """
    with_sketch = sketch is not None and sketch.jaccard is not None

    @pandas_udf(FINGERPRINT_TYPE)  # type: ignore[call-overload]
    def fingerprint_batch(texts: pd.Series) -> pd.DataFrame:
        if with_sketch:
            found = signatures(texts.tolist(), config, sketch)
            values, ok, n_features = found.fingerprint, found.has_fingerprint, found.n_features
            blobs = [sketches.sketch_bytes(row) if has else None for row, has in zip(found.sketch, found.has_sketch)]
        else:
            values, ok, n_features = fingerprints(texts.tolist(), config)
            blobs = [None] * len(values)
        column = pd.array(values, dtype="Int64")
        column[~ok] = pd.NA
        return pd.DataFrame({"fingerprint": column, "n_features": n_features.astype(np.int32), "sketch": blobs})

    return fingerprint_batch(text)


def sketch_jaccard(sketch_a: Column, sketch_b: Column) -> Column:
    """double: the Jaccard similarity two binary sketch columns estimate
    (`core.sketch.estimated_jaccard`); null when either is null."""

    @pandas_udf(DoubleType())  # type: ignore[call-overload]
    def jaccard_batch(a: pd.Series, b: pd.Series) -> pd.Series:
        both = (a.notna() & b.notna()).to_numpy()
        out = np.full(len(a), np.nan)
        if both.any():
            out[both] = sketches.estimated_jaccard(
                sketches.from_bytes(a[both].tolist()), sketches.from_bytes(b[both].tolist())
            )
        return pd.Series(out).where(both, None)

    return jaccard_batch(sketch_a, sketch_b)
