"""Every parameter of a run, as frozen dataclasses validated on construction.

`FingerprintConfig` is what the Python workers need (it is pickled into the UDFs);
`DedupeConfig` adds the join, the clustering and the columns of the input.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from simhash_udf.core.limits import MAX_EXPLICIT_TABLES, MAX_K

TOKENIZERS = ("auto", "jieba", "word", "char")
# The engines that give jieba's segmentation (see `core/tokens.jieba_tokens`).
SEGMENTERS = ("rjieba", "jieba")
# What of an HTML page is fingerprinted (`--extract`, see simhash_udf/core/extract.py):
# its main content, or all its visible text.
EXTRACT_MODES = ("main", "all")
WEIGHTINGS = ("binary", "tf", "tfidf", "idf", "logtfidf")
KEEP_ORDERS = ("asc", "desc")


class ConfigError(ValueError):
    """A parameter is out of range or inconsistent; the message names it."""


@dataclass(frozen=True)
class FingerprintConfig:
    """How a normalised text becomes a 64-bit simhash.

    tokenizer: `auto` (jieba on runs of Han characters, words everywhere else), `jieba`
        (jieba on the whole text), `word` (runs of Unicode word characters) or `char`.
    segmenter: the engine of jieba's segmentation: `rjieba` (jieba-rs: the same dictionary
        and HMM, ~15x faster; jieba's tokens on all of People's Daily and on all but one of
        181,740 test texts, see `tokens.jieba_tokens`) or `jieba` (the Python one).
    ngram: features are n-grams of consecutive tokens (characters for `char`).
    weighting: `binary` (each distinct feature once), `tf` (its count), `tfidf` (count x
        IDF), `idf` (IDF once per distinct feature) or `logtfidf` ((1 + ln count) x IDF); IDFs
        from :mod:`idf`.
    min_features: a text with fewer distinct features gets no fingerprint; it is matched
        only by exact (normalised) equality, never through a fingerprint.
    max_chars: only the first `max_chars` characters of a normalised text are fingerprinted
        (exact duplicates still compare the whole text).
    """

    tokenizer: str = "auto"
    segmenter: str = "rjieba"
    ngram: int = 1
    weighting: str = "logtfidf"
    min_features: int = 4
    max_chars: int = 1_000_000

    def __post_init__(self) -> None:
        if self.tokenizer not in TOKENIZERS:
            raise ConfigError(f"tokenizer must be one of {TOKENIZERS}, got {self.tokenizer!r}")
        if self.segmenter not in SEGMENTERS:
            raise ConfigError(f"segmenter must be one of {SEGMENTERS}, got {self.segmenter!r}")
        if self.weighting not in WEIGHTINGS:
            raise ConfigError(f"weighting must be one of {WEIGHTINGS}, got {self.weighting!r}")
        if not 1 <= self.ngram <= 16:
            raise ConfigError(f"ngram must be between 1 and 16, got {self.ngram}")
        if self.min_features < 1:
            raise ConfigError(f"min_features must be at least 1, got {self.min_features}")
        if self.max_chars < 1:
            raise ConfigError(f"max_chars must be at least 1, got {self.max_chars}")


@dataclass(frozen=True)
class VerifyConfig:
    """The second stage for short texts (`--verify`, see `simhash_udf.core.short_text_policy` and docs/short-texts.md).

    threshold: a candidate pair the policy checks is kept only when the Jaccard similarity
        of the two texts' shingle sets reaches it; None: no check (every pair within k kept).
    below_chars: check only pairs whose shorter normalised text has fewer characters than
        this (simhash is reliable on long texts); None: check every pair.
    shingle: shingle size (words; characters for Han text, see `short_text_policy.shingles`).
    """

    # The lowest threshold that keeps every sentence-pair dataset's non-duplicates merged under 1%
    # on its own, also at k + 1 (LCQMC: 0.5 merges 1.21%, 0.6 1.05% at k + 1, 0.65 0.63%; docs/quality.md).
    threshold: float | None = 0.65
    below_chars: int | None = 300
    shingle: int = 2

    def __post_init__(self) -> None:
        if self.threshold is not None and not 0.0 < self.threshold <= 1.0:
            raise ConfigError(f"the --verify threshold must be in (0, 1], got {self.threshold}")
        if self.below_chars is not None and self.below_chars < 1:
            raise ConfigError(f"--verify-below must be at least 1 character, got {self.below_chars}")
        if not 1 <= self.shingle <= 16:
            raise ConfigError(f"--verify-shingle must be between 1 and 16, got {self.shingle}")


@dataclass(frozen=True)
class SketchConfig:
    """The second candidate generator: a MinHash sketch beside every fingerprint
    (`--sketch`, see `simhash_udf.core.sketch` and docs/quality.md).

    Pages that differ by a paragraph, a caption or a footer land 4-12 bits apart, beyond
    the band join's k; their token-shingle sets still overlap by 75% and more. Each distinct
    text of at least `min_chars` characters gets a sketch of `size` 16-bit min-hashes of its
    `shingle`-token shingles; texts whose sketches agree on all `rows` values of one of
    `bands` bands are candidates, and a candidate is a near-duplicate pair when the
    sketches estimate a Jaccard similarity of at least `jaccard` and the fingerprints are
    at most `max_distance` bits apart (two signals must agree: boilerplate-heavy pages of
    one site share shingles, not their weighted words).

    jaccard: None turns the sketch route off (the band join at k alone, as before).
    min_chars: shorter texts get no sketch; they are the short-text policy's (`VerifyConfig`).
    """

    jaccard: float | None = 0.75
    max_distance: int = 12
    size: int = 128
    shingle: int = 3
    bands: int = 25
    rows: int = 5
    min_chars: int = 300

    def __post_init__(self) -> None:
        if self.jaccard is not None and not 0.0 < self.jaccard <= 1.0:
            raise ConfigError(f"the --sketch Jaccard threshold must be in (0, 1], got {self.jaccard}")
        if not 0 <= self.max_distance <= 64:
            raise ConfigError(f"--sketch-max-distance must be between 0 and 64 bits, got {self.max_distance}")
        if self.size not in (32, 64, 128, 256, 512):
            raise ConfigError(f"the sketch size must be a power of two from 32 to 512, got {self.size}")
        if not 1 <= self.shingle <= 16:
            raise ConfigError(f"--sketch-shingle must be between 1 and 16, got {self.shingle}")
        if self.bands < 1 or self.rows < 1 or self.bands * self.rows > self.size:
            raise ConfigError(
                f"{self.bands} bands of {self.rows} rows need {self.bands * self.rows} min-hashes; "
                f"the sketch has {self.size}"
            )
        if self.min_chars < 1:
            raise ConfigError(f"--sketch-min-chars must be at least 1, got {self.min_chars}")


@dataclass(frozen=True)
class DedupeConfig:
    """A whole run: columns, text handling, threshold, band plan and keep rule.

    k: two fingerprints at Hamming distance <= k are near duplicates.
    blocks: number of blocks the 64 bits are cut into for the band join; None lets the
        cost model in :mod:`bands` choose from the number of distinct fingerprints.
    keep_by / keep_order: the document kept for a cluster is the first by this column
        (ties, and the default, by smallest id).
    keep_empty: also write skipped (empty) documents to `deduped/`.
    write_pairs: write `pairs/` (one row per near-duplicate pair of fingerprints).
    extract: with `html`, what of a page is fingerprinted: `main` (its main content, falling
        back to all visible text when none is found) or `all` (all visible text); unused
        for plain text.
    verify: the short-text policy applied to the band join's pairs (text input only).
    sketch: the MinHash route beside the band join (text input only; see `SketchConfig`).
    """

    id_col: str = "id"
    text_col: str = "text"
    fingerprint_col: str | None = None
    html: bool = False
    extract: str = "main"
    k: int = 3
    blocks: int | None = None
    keep_by: str | None = None
    keep_order: str = "asc"
    keep_empty: bool = False
    write_pairs: bool = True
    fingerprint: FingerprintConfig = field(default_factory=FingerprintConfig)
    verify: VerifyConfig = field(default_factory=VerifyConfig)
    sketch: SketchConfig = field(default_factory=SketchConfig)

    def __post_init__(self) -> None:
        if not 0 <= self.k <= MAX_K:
            raise ConfigError(
                f"k must be between 0 and {MAX_K}, got {self.k}: above {MAX_K} the band join's "
                "runs of unrelated fingerprints would pass the hot-run threshold on large crawls "
                "(~10^9 pages), so pairs/ could no longer be complete"
            )
        if self.blocks is not None and not self.k < self.blocks <= 64:
            raise ConfigError(
                f"blocks must be greater than k ({self.k}) and at most 64, got {self.blocks}: "
                "two fingerprints within k bits are only guaranteed to share a block when "
                "there are more blocks than differing bits"
            )
        if self.blocks is not None and math.comb(self.blocks, self.k) > MAX_EXPLICIT_TABLES:
            raise ConfigError(
                f"blocks={self.blocks} with k={self.k} makes C({self.blocks}, {self.k}) = "
                f"{math.comb(self.blocks, self.k):,} band tables (at most {MAX_EXPLICIT_TABLES:,}); "
                "use fewer blocks, or leave --blocks out to let the cost model choose"
            )
        if self.keep_order not in KEEP_ORDERS:
            raise ConfigError(f"keep_order must be one of {KEEP_ORDERS}, got {self.keep_order!r}")
        if not self.id_col:
            raise ConfigError("id_col must not be empty")
        if self.fingerprint_col is None and not self.text_col:
            raise ConfigError("text_col must not be empty")
        if self.extract not in EXTRACT_MODES:
            raise ConfigError(f"extract must be one of {EXTRACT_MODES}, got {self.extract!r}")
        if self.keep_by is not None and self.keep_by == self.id_col:
            raise ConfigError("keep_by is the id column already: it is the default rule")


@dataclass(frozen=True)
class IndexOptions:
    """A run against a persistent fingerprint index (`--index`, see docs/index.md).

    path: the index folder (created by the first run).
    run_id: names the run; None derives it from the input's file listing. Rerunning a run
        id replaces that run's entries.
    expected_size: distinct fingerprints the index is planned for; fixes its band plan at
        creation (ignored afterwards).
    url_col / fetch_time_col: input columns kept in each entry as its source (null when the
        input has no such column).
    """

    path: str
    run_id: str | None = None
    expected_size: int = 1_000_000_000
    url_col: str = "url"
    fetch_time_col: str = "fetch_time"

    def __post_init__(self) -> None:
        if not self.path:
            raise ConfigError("the index path must not be empty")
        if self.run_id is not None and not self.run_id.strip():
            raise ConfigError("--run-id must not be empty")
        if self.expected_size < 2:
            raise ConfigError(f"expected_size must be at least 2, got {self.expected_size}")
