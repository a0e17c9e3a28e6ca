"""The short-text policy, in plain Python: shingles, Jaccard similarity, and which pairs it keeps.

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
- any other text is cut into word n-grams of `tokens.word_tokens` (runs of Unicode word
  characters), joined by one space;
- a text with fewer than n tokens is one shingle (itself), as `tokens.ngrams` does; an empty
  text has no shingles.
Texts are normalised first (`normalise.normalise`: NFKC, Traditional to Simplified, case folded),
unless the caller says they already are.

The policy (`config.VerifyConfig`, `--verify jaccard:T --verify-below L --verify-shingle N`):
a candidate pair whose shorter normalised text has fewer than L characters is kept only when
the Jaccard similarity of the two texts' N-gram shingle sets is at least T; longer pairs are
kept unchecked (simhash is reliable there, and the check would ship long texts through a
Python UDF). `keeps` is the rule for one pair; `stages/short_text_check.py` applies the
same functions in Spark to the band join's pairs, before the connected components. Exact
copies are never separated: they share one text and so one fingerprint, and the job clusters
them without any pair. Distinct texts that share a fingerprint are not checked either (no pair
joins them). The defaults were measured by bench/short_texts.py (docs/short-texts.md).

Pure Python, no Spark: the benchmarks use these functions as the job does.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

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

    normalised: the text is already `normalise.normalise`d (the job's texts are), so skip it.
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


def parse_spec(spec: str, flag: str = "--verify") -> float | None:
    """The Jaccard threshold of a `--verify` (or `--sketch`, named by `flag`) value:
    `jaccard:T` (0 < T <= 1) or `none`/`off`.

    Raises ConfigError with a message for the command line.
    """
    value = spec.strip().lower()
    if value in ("none", "off"):
        return None
    method, _, threshold = value.partition(":")
    if method != "jaccard" or not threshold:
        raise ConfigError(f"{flag} must be jaccard:T (0 < T <= 1) or none, got {spec!r}")
    try:
        parsed = float(threshold)
    except ValueError:
        raise ConfigError(f"{flag} jaccard:T needs a number T, got {threshold!r}") from None
    if not 0.0 < parsed <= 1.0:
        raise ConfigError(f"{flag} jaccard:T needs 0 < T <= 1, got {parsed}")
    return parsed


def is_checked(length_a: int, length_b: int, policy: VerifyConfig) -> bool:
    """Whether a candidate pair of texts of these lengths (characters, normalised) is checked."""
    if policy.threshold is None:
        return False
    return policy.below_chars is None or min(length_a, length_b) < policy.below_chars


def carried_below(policy: VerifyConfig) -> int | None:
    """The length (characters, normalised) under which the job's one pass over the text keeps
    a text for the check, or None: keep none.

    Every pair the policy checks has a text under `below_chars` (L), and a text that short is
    cheap to carry, so those texts ride along with the signatures and the check does not go
    back to the input for them. The other text of a checked pair is often a little longer (a
    near copy with a sentence more, across L): texts up to L / T characters ride along too,
    T the threshold, since a text of fewer than L shingles reaches Jaccard T only with a text
    of at most L / T distinct shingles. Longer partners are rare within k bits and are read
    again from the input. The limit is at most 2L, so a low threshold does not carry a
    crawl's texts. None when the policy is off (no text is needed) or checks every pair
    (`below_chars` None: carrying would keep the whole crawl; the few texts the check needs
    are read again from the input instead).
    """
    if policy.threshold is None or policy.below_chars is None:
        return None
    return min(math.ceil(policy.below_chars / policy.threshold), 2 * policy.below_chars)


def fingerprint_checked(chars: int | None, policy: VerifyConfig) -> bool:
    """Whether the policy checks every pair a fingerprint is in, its longest text having
    `chars` characters (None: not known, counted as checked, which is always safe): a pair is
    checked when its shorter text is under `below_chars`, so only a fingerprint whose texts are
    all that long is unchecked. `short_text_check.checked_fingerprints` is the same rule in Spark."""
    if policy.threshold is None:
        return False
    return policy.below_chars is None or chars is None or chars < policy.below_chars


def similarity(text_a: str, text_b: str, policy: VerifyConfig) -> float:
    """Jaccard similarity of two normalised texts' shingle sets (`policy.shingle`-grams)."""
    return jaccard(
        shingles(text_a, policy.shingle, normalised=True),
        shingles(text_b, policy.shingle, normalised=True),
    )


def pair_verdict(
    texts_a: Sequence[str], texts_b: Sequence[str], policy: VerifyConfig
) -> tuple[bool, float | None, bool] | None:
    """The check of one pair of fingerprints over their normalised texts (a fingerprint usually
    has one text; texts colliding on all 64 bits give it several): (checked: some text pair is
    checked, similarity: the largest of the checked text pairs' or None, kept: some text pair
    is unchecked or reaches the threshold). None when a side has no text (the pair has no
    text pair to judge it by). `short_text_check.scored_pairs` is the same rule in Spark."""
    if not texts_a or not texts_b:
        return None
    checked, best, kept = False, None, False
    for a in texts_a:
        for b in texts_b:
            if not is_checked(len(a), len(b), policy):
                kept = True
                continue
            assert policy.threshold is not None
            value = similarity(a, b, policy)
            checked, best = True, value if best is None else max(best, value)
            kept = kept or value >= policy.threshold
    return checked, best, kept


def keeps(text_a: str, text_b: str, policy: VerifyConfig) -> bool:
    """The rule for one candidate pair of normalised texts, in plain Python: a pair that is
    not checked is kept; a checked one is kept when its similarity reaches the threshold."""
    if not is_checked(len(text_a), len(text_b), policy):
        return True
    assert policy.threshold is not None
    return similarity(text_a, text_b, policy) >= policy.threshold


def describe(policy: VerifyConfig) -> dict[str, Any]:
    """The policy as report.json shows it (`spec` is the --verify value)."""
    return {
        "spec": "none" if policy.threshold is None else f"jaccard:{policy.threshold:g}",
        "below_chars": policy.below_chars,
        "shingle": policy.shingle,
    }
