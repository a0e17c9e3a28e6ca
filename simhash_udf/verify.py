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
"""

from __future__ import annotations

import re

from simhash_udf.text import has_han, ngrams, normalise, word_tokens

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
