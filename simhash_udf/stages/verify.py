"""The second stage for short texts: shingle Jaccard similarity of candidate pairs.

Simhash says little about short texts (posts, comments, titles of ~140 characters): a few
changed words move a short text's fingerprint by many bits, and two unrelated short texts
with a handful of features each can land within k bits of each other. So a pair of
fingerprints found by the band join can be checked again on the texts themselves: the
exact Jaccard similarity of their shingle sets, computed only for the candidate pairs.

Shingles (decided here, used by the job and by the benchmarks):
- a text holding Han ideographs is cut into character n-grams of its word characters
  (letters, digits, ideographs; spaces and punctuation dropped): Chinese has no spaces, and
  character shingles do not depend on jieba's segmentation, which can cut one phrase
  differently in two contexts;
- any other text is cut into word n-grams of `text.word_tokens` (runs of Unicode word
  characters), joined by one space;
- a text with fewer than n tokens is one shingle (itself), as `text.ngrams` does; an empty
  text has no shingles.
Texts are normalised first (`text.normalise`: NFKC, Traditional to Simplified, case folded),
unless the caller says they already are.

The policy (`config.VerifyConfig`, `--verify jaccard:T --verify-below L --verify-shingle N`):
a candidate pair whose shorter normalised text has fewer than L characters is kept only when
the Jaccard similarity of the two texts' N-gram shingle sets is at least T; longer pairs are
kept unchecked (simhash is reliable there, and the check would ship long texts through a
Python UDF). `keeps` is the rule in plain Python; `verify_pairs` applies it in Spark to the
band join's pairs, before the connected components. Because the check may drop a pair, the
band join never summarises pairs the check looks at (`checked_fingerprints`): a hot run's
pairs with a short text are all listed and checked, so the clusters are the components of
every pair within k that the policy keeps, whatever the row order. Exact copies are never separated: they
share one text and so one fingerprint, and the job clusters them without any pair. Distinct
texts that share a fingerprint are not checked either (no pair joins them). The defaults were
measured by bench/short_texts.py (docs/short-texts.md).
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.functions import pandas_udf
from pyspark.sql.types import DoubleType

from simhash_udf.core.config import ConfigError, VerifyConfig
from simhash_udf.core.normalise import has_han, normalise
from simhash_udf.core.tokens import ngrams, word_tokens

# Word characters only: punctuation (，。！) and spaces are not content.
_WORD_CHAR = re.compile(r"\w")


def shingle_tokens(text: str) -> tuple[list[str], str]:
    """The tokens a normalised text is shingled over, and the separator of a shingle.

    Characters (word characters only) for a text holding Han ideographs, words otherwise.
    """
    if has_han(text):
        return _WORD_CHAR.findall(text), ""
    return word_tokens(text), " "


def shingles(text: str, n: int, *, normalised: bool = False) -> set[str]:
    """The set of n-gram shingles of `text` (see the module docstring for which n-grams).

    normalised: the text is already `text.normalise`d (the job's texts are), so skip it.
    """
    if n < 1:
        raise ValueError(f"shingle size must be at least 1, got {n}")
    if not normalised:
        text = normalise(text)
    items, separator = shingle_tokens(text)
    return {separator.join(gram) for gram in ngrams(items, n)}


def jaccard(a: set, b: set) -> float:
    """|a & b| / |a | b|; two empty sets are identical (1.0)."""
    if not a and not b:
        return 1.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


# --- the policy ---------------------------------------------------------------------------


def parse_spec(spec: str) -> float | None:
    """The Jaccard threshold of a `--verify` value: `jaccard:T` (0 < T <= 1) or `none`/`off`.

    Raises ConfigError with a message for the command line.
    """
    value = spec.strip().lower()
    if value in ("none", "off"):
        return None
    method, _, threshold = value.partition(":")
    if method != "jaccard" or not threshold:
        raise ConfigError(f"--verify must be jaccard:T (0 < T <= 1) or none, got {spec!r}")
    try:
        parsed = float(threshold)
    except ValueError:
        raise ConfigError(f"--verify jaccard:T needs a number T, got {threshold!r}") from None
    if not 0.0 < parsed <= 1.0:
        raise ConfigError(f"--verify jaccard:T needs 0 < T <= 1, got {parsed}")
    return parsed


def is_checked(length_a: int, length_b: int, policy: VerifyConfig) -> bool:
    """Whether a candidate pair of texts of these lengths (characters, normalised) is checked."""
    if policy.threshold is None:
        return False
    return policy.below_chars is None or min(length_a, length_b) < policy.below_chars


def similarity(text_a: str, text_b: str, policy: VerifyConfig) -> float:
    """Jaccard similarity of two normalised texts' shingle sets (`policy.shingle`-grams)."""
    return jaccard(
        shingles(text_a, policy.shingle, normalised=True),
        shingles(text_b, policy.shingle, normalised=True),
    )


def keeps(text_a: str, text_b: str, policy: VerifyConfig) -> bool:
    """The rule for one candidate pair of normalised texts, in plain Python: a pair that is
    not checked is kept; a checked one is kept when its similarity reaches the threshold."""
    if not is_checked(len(text_a), len(text_b), policy):
        return True
    assert policy.threshold is not None
    return similarity(text_a, text_b, policy) >= policy.threshold


# --- in Spark -----------------------------------------------------------------------------


def texts_by_fingerprint(normalised: DataFrame, texts: DataFrame, pairs: DataFrame) -> DataFrame:
    """The distinct normalised texts of the fingerprints in `pairs`: `fingerprint` (long), `text`.

    normalised: `exact_key`, `text` (one row per document); texts: `exact_key`,
    `fingerprint` (one row per distinct text); pairs: `fp_a`, `fp_b`. Only the texts of
    paired fingerprints are joined and shuffled, not the whole crawl's. A fingerprint usually
    has one text; texts that collide on all 64 bits give it several.
    """
    paired = pairs.select(F.col("fp_a").alias("fingerprint")).union(pairs.select(F.col("fp_b").alias("fingerprint")))
    keys = (
        texts.where(F.col("fingerprint").isNotNull())
        .select("exact_key", "fingerprint")
        .join(paired.distinct(), "fingerprint", "left_semi")
    )
    return (
        normalised.where(F.col("exact_key").isNotNull())
        .select("exact_key", "text")
        .join(keys, "exact_key")
        .dropDuplicates(["exact_key"])
        .select("fingerprint", "text")
    )


def checked_fingerprints(
    fingerprints: DataFrame, normalised: DataFrame, texts: DataFrame, policy: VerifyConfig
) -> DataFrame:
    """`fingerprints` (`fingerprint`, distinct) with `checked` (bool): whether the policy
    checks every pair the fingerprint is in, so that the band join must list those pairs
    rather than summarise them (`join_kernel.hot_run_edges`).

    normalised: `exact_key`, `text`; texts: `exact_key`, `fingerprint` (see
    `texts_by_fingerprint`). A pair's text pairs are checked when the shorter text has fewer
    than `policy.below_chars` characters (`is_checked`), and the pair is kept when any text
    pair is unchecked or passes (`scored_pairs`). So a pair of two fingerprints that each
    have a text of at least below_chars characters is always kept: such a fingerprint is
    unchecked. Any other fingerprint is checked: all when below_chars is None, none when the
    policy is off. A fingerprint with no known text counts as checked (listing is always
    safe). The lengths are those `scored_pairs` compares (Spark's `length` of the text).
    """
    if policy.threshold is None:
        return fingerprints.select("fingerprint", F.lit(False).alias("checked"))
    if policy.below_chars is None:
        return fingerprints.select("fingerprint", F.lit(True).alias("checked"))
    longest = (
        normalised.where(F.col("exact_key").isNotNull())
        .groupBy("exact_key")
        .agg(F.max(F.length("text")).alias("chars"))
        .join(texts.where(F.col("fingerprint").isNotNull()).select("exact_key", "fingerprint"), "exact_key")
        .groupBy("fingerprint")
        .agg(F.max("chars").alias("chars"))
    )
    return fingerprints.select("fingerprint").join(longest, "fingerprint", "left").select(
        "fingerprint",
        F.coalesce(F.col("chars") < F.lit(policy.below_chars), F.lit(True)).alias("checked"),
    )


def _similarity_udf(policy: VerifyConfig) -> Any:
    @pandas_udf(DoubleType())  # type: ignore[call-overload]
    def similarity_batch(a: pd.Series, b: pd.Series) -> pd.Series:
        return pd.Series([similarity(x, y, policy) for x, y in zip(a, b)], dtype="float64")

    return similarity_batch


def scored_pairs(pairs: DataFrame, fingerprint_texts: DataFrame, policy: VerifyConfig) -> DataFrame:
    """Each candidate pair with its check: `fp_a`, `fp_b`, `distance`, `checked` (bool),
    `similarity` (double, the largest over the pair's texts; null when not checked), `kept`.

    pairs: `fp_a`, `fp_b`, `distance` (the verified band-join pairs). fingerprint_texts:
    `fingerprint`, `text` (`texts_by_fingerprint`). The Jaccard UDF runs only on the text
    pairs the policy checks (a pandas UDF inside `when` would run on every row, so the rows
    are split first). A pair is kept when any of its text pairs is unchecked or reaches the
    threshold.
    """
    a = fingerprint_texts.select(F.col("fingerprint").alias("fp_a"), F.col("text").alias("text_a"))
    b = fingerprint_texts.select(F.col("fingerprint").alias("fp_b"), F.col("text").alias("text_b"))
    joined = pairs.join(a, "fp_a").join(b, "fp_b")
    if policy.threshold is None:
        checked = F.lit(False)
    elif policy.below_chars is None:
        checked = F.lit(True)
    else:
        checked = F.least(F.length("text_a"), F.length("text_b")) < F.lit(policy.below_chars)
    marked = joined.withColumn("checked", checked)
    keys = ["fp_a", "fp_b", "distance"]
    scored = marked.where("checked").select(
        *keys, "checked", _similarity_udf(policy)(F.col("text_a"), F.col("text_b")).alias("similarity")
    ).unionByName(
        marked.where(~F.col("checked")).select(*keys, "checked", F.lit(None).cast("double").alias("similarity"))
    )
    passes = ~F.col("checked") | (F.col("similarity") >= F.lit(policy.threshold or 0.0))
    return scored.groupBy(*keys).agg(
        F.bool_or("checked").alias("checked"),
        F.max("similarity").alias("similarity"),
        F.bool_or(passes).alias("kept"),
    )


def kept_pairs(scored: DataFrame) -> DataFrame:
    """The pairs the policy keeps: `fp_a`, `fp_b`, `distance` (from `scored_pairs`)."""
    return scored.where("kept").select("fp_a", "fp_b", "distance")


def verify_pairs(
    pairs: DataFrame, normalised: DataFrame, texts: DataFrame, policy: VerifyConfig
) -> DataFrame:
    """`scored_pairs` of the band join's pairs against the run's texts (see `NearDuplicates`)."""
    return scored_pairs(pairs, texts_by_fingerprint(normalised, texts, pairs), policy)


def describe(policy: VerifyConfig) -> dict[str, Any]:
    """The policy as report.json shows it (`spec` is the --verify value)."""
    return {
        "spec": "none" if policy.threshold is None else f"jaccard:{policy.threshold:g}",
        "below_chars": policy.below_chars,
        "shingle": policy.shingle,
    }


def counts(scored: DataFrame, policy: VerifyConfig) -> dict[str, Any]:
    """report.json's `verify`: the policy, and the candidate pairs it checked and dropped."""
    row = scored.agg(
        F.count(F.lit(1)).alias("pairs"),
        F.sum(F.col("checked").cast("long")).alias("checked"),
        F.sum((~F.col("kept")).cast("long")).alias("dropped"),
    ).first()
    return {
        **describe(policy),
        "applied": True,
        "pairs_within_k": int(row["pairs"] or 0),
        "checked_pairs": int(row["checked"] or 0),
        "dropped_pairs": int(row["dropped"] or 0),
    }
