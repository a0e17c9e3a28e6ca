"""Tokens of a normalised text: jieba's segmentation, words, characters, and their n-grams.

`tokens` takes one text; `batch_tokens` a batch, as one Arrow list array, splitting the texts
without Han characters into words in Arrow's C++ (the same tokens, tested code point by code
point). Pure functions, no Spark. jieba's prefix dictionary loads once per Python process (a
cached loader), so a UDF calling `tokens` pickles cheaply and pays the loading once per worker.
"""

from __future__ import annotations

import functools
import importlib.resources
import logging
import re
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from simhash_udf.core.normalise import HAN

# A token is kept as a feature only if it holds a letter or digit of some script:
# punctuation and spaces that the segmenters return as tokens carry no content.
_HAS_WORD_CHAR = re.compile(r"\w")
_WORDS = re.compile(r"\w+")
# jieba segments runs of U+4E00-U+9FD5 only (its `re_han_default`, less the Latin letters and
# digits our Han runs never hold) and yields every other Han character on its own; rjieba
# (jieba-rs) segments a wider range. Handing the segmenter these runs, and taking the other
# Han characters one by one ourselves, makes both engines see exactly what jieba would.
_SEGMENTED_RUN = re.compile(r"[\u4e00-\u9fd5]+")
_SPLIT_AT_RUNS = re.compile(r"([\u4e00-\u9fd5]+)")
# Everything the `auto` tokenizer takes without a segmenter: one Han character outside
# jieba's range, or a run of word characters that are not Han.
_UNSEGMENTED_TOKEN = re.compile(r"[\u3400-\u4dbf\u9fd6-\u9fff]|[^\W\u3400-\u4dbf\u4e00-\u9fff]+")


@functools.cache
def _jieba_tokenizer() -> Any:
    """jieba's default dictionary, loaded once per process, quietly.

    jieba 0.42 imports `pkg_resources` when it can (recent setuptools warn about that on
    import) and logs its dictionary loading at DEBUG to stderr. We silence the import warning
    and point jieba at its dictionary by file path, so driver and executors behave alike.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import jieba

    jieba.setLogLevel(logging.WARNING)
    dictionary = importlib.resources.files("jieba").joinpath("dict.txt")
    tokenizer = jieba.Tokenizer(dictionary=str(dictionary))
    tokenizer.initialize()
    return tokenizer

def _segment(text: str, segmenter: str) -> list[str]:
    """The segmenter's tokens of a text (precise mode, HMM on), whitespace and punctuation
    included."""
    if segmenter == "rjieba":
        import rjieba

        return rjieba.cut(text, hmm=True)
    if segmenter == "jieba":
        return list(_jieba_tokenizer().cut(text, HMM=True))
    raise ValueError(f"unknown segmenter {segmenter!r}")


def jieba_tokens(text: str, segmenter: str = "rjieba") -> list[str]:
    """jieba's segmentation of a whole text (precise mode, HMM on), content tokens only.

    segmenter: `rjieba` (jieba-rs, the same dictionary and HMM, ~15x faster) or `jieba`.
    On the runs of Han characters the `auto` tokenizer hands them they agree on all 888
    People's Daily documents of the benchmarks, and on 181,739 of the 181,740 distinct texts
    of bench/tune_defaults.py's data: in the other, jieba-rs's HMM joins an unknown 常在 that
    jieba's leaves as 常 / 在 (one token of one text; its fingerprint moves).
    They agree on Chinese; on the Latin letters, digits and dots jieba-rs groups more
    (`1.3nm` is one token to it, three to jieba), which is why the `auto` tokenizer hands
    a segmenter only the runs of Han characters.
    """
    return [t for t in _segment(text, segmenter) if _HAS_WORD_CHAR.search(t)]


def word_tokens(text: str) -> list[str]:
    """Runs of Unicode word characters: words for space-delimited scripts."""
    return _WORDS.findall(text)


def char_tokens(text: str) -> list[str]:
    """Every character that is not whitespace (n-grams of these are character shingles)."""
    return [c for c in text if not c.isspace()]


def mixed_tokens(text: str, segmenter: str = "rjieba", ordered: bool = True) -> list[str]:
    """jieba's segmentation of every run of Han characters, words everywhere else.

    Only the Chinese runs go to the segmenter, so one Han character in a Korean or
    Portuguese page does not change how the rest of it is split (jieba cuts Hangul into
    syllables and accented words into pieces), and a page tokenises alike whatever else it
    quotes. Han characters outside jieba's range (CJK Extension A, U+9FD6-U+9FFF) are
    tokens of their own, as jieba yields them; see `_SEGMENTED_RUN`.

    ordered: tokens in text order (what n-grams need). With False the same tokens come in
    another order (the segmented runs' tokens after the others), from one segmenter call
    for the whole text instead of one per run: what a bag of words (n-grams of 1) needs.
    """
    if not HAN.search(text):  # the common case outside Chinese: one simpler regex
        return word_tokens(text)
    if not ordered:
        runs = _SEGMENTED_RUN.findall(text)
        found = _UNSEGMENTED_TOKEN.findall(text)
        if runs:
            # A space between runs: both segmenters cut at whitespace and yield it as a
            # token of its own, so this is one call giving every run's tokens.
            found += [t for t in _segment(" ".join(runs), segmenter) if t != " "]
        return found
    # split() with a capturing group alternates the text between runs and the runs, in C:
    # [gap, run, gap, run, ..., gap].
    pieces = _SPLIT_AT_RUNS.split(text)
    gaps, runs = pieces[0::2], pieces[1::2]
    # One segmenter call for all the runs, as above (a call per run cost ~200 calls per
    # article); the space tokens between runs cut its tokens back into one slice per run,
    # found with list.index so that no Python loop walks the tokens one by one.
    segmented = _segment(" ".join(runs), segmenter) if runs else []
    found: list[str] = []
    start = 0
    for gap in gaps[:-1]:
        if gap:
            found.extend(_UNSEGMENTED_TOKEN.findall(gap))
        try:
            stop = segmented.index(" ", start)
        except ValueError:  # the last run
            stop = len(segmented)
        found.extend(segmented[start:stop])
        start = stop + 1
    if gaps[-1]:
        found.extend(_UNSEGMENTED_TOKEN.findall(gaps[-1]))
    return found


def tokens(text: str, tokenizer: str, segmenter: str = "rjieba", ordered: bool = True) -> list[str]:
    """Tokens of a normalised text with the named tokenizer and segmenter (see
    `FingerprintConfig`); ordered=False allows `auto` to return them out of text order."""
    if tokenizer == "auto":
        return mixed_tokens(text, segmenter, ordered)
    if tokenizer == "jieba":
        return jieba_tokens(text, segmenter)
    if tokenizer == "word":
        return word_tokens(text)
    if tokenizer == "char":
        return char_tokens(text)
    raise ValueError(f"unknown tokenizer {tokenizer!r}")


def ngrams(items: list[str], n: int) -> Iterable[tuple[str, ...]]:
    """Consecutive n-grams; a sequence shorter than n yields itself as one gram (if any)."""
    if len(items) < n:
        return [tuple(items)] if items else []
    return zip(*(items[i:] for i in range(n)))


def batch_tokens(
    texts: Sequence[str | None],
    tokenizer: str,
    segmenter: str = "rjieba",
    max_chars: int | None = None,
    ordered: bool = True,
) -> pa.ListArray:
    """`tokens(text[:max_chars], tokenizer, segmenter, ordered)` of every text, in the batch's
    order, as one list<string> array (an empty list for None or "").

    With the `word` and `auto` tokenizers the texts without Han characters (all of them in
    most crawls) are split into words by Arrow (RE2, in C++), without a Python string per
    token: a third of an English batch's time went to `re.findall` and to handing its
    tokens to Arrow. Texts with Han characters take `mixed_tokens`.
    """
    cut = [text[:max_chars] if text else "" for text in texts]
    if tokenizer not in ("word", "auto"):
        return _tokens_in_python(cut, tokenizer, segmenter, ordered)
    try:
        array = pa.array(cut, type=pa.string())
    except UnicodeEncodeError:
        # A lone surrogate (a Python caller's string; decoded input never holds one) has no
        # UTF-8: Python splits such a batch (no token holds the surrogate).
        return _tokens_in_python(cut, tokenizer, segmenter, ordered)
    if tokenizer == "word":
        return _arrow_word_tokens(array)
    han = pc.match_substring_regex(array, _HAN_RE2).to_numpy(zero_copy_only=False)
    if not han.any():
        return _arrow_word_tokens(array)
    with_han = np.flatnonzero(han)
    mixed = pa.array(
        [mixed_tokens(cut[i], segmenter, ordered) for i in with_han.tolist()], type=pa.list_(pa.string())
    )
    if han.all():
        return mixed
    without_han = np.flatnonzero(~han)
    words = _arrow_word_tokens(array.take(pa.array(without_han)))
    # The rows of `words`, then those of `mixed`: row i of the batch is row position[i].
    position = np.empty(len(cut), dtype=np.int64)
    position[without_han] = np.arange(len(without_han))
    position[with_han] = len(without_han) + np.arange(len(with_han))
    return pa.concat_arrays([words, mixed]).take(pa.array(position))


def _tokens_in_python(texts: list[str], tokenizer: str, segmenter: str, ordered: bool) -> pa.ListArray:
    found = [tokens(text, tokenizer, segmenter, ordered) if text else [] for text in texts]
    return pa.array(found, type=pa.list_(pa.string()))


# `HAN` in RE2's syntax (`\x{4e00}` where Python writes `\u4e00`).
_HAN_RE2 = re.sub(r"\\u([0-9a-fA-F]{4})", r"\\x{\1}", HAN.pattern)


@functools.cache
def _non_word_run_re2() -> str:
    """An RE2 pattern matching a run of the characters Python's `\\w` does not match (`_WORDS`).

    RE2's `\\w` is ASCII only and its Unicode classes follow its own Unicode version, so the
    class is written out from this interpreter's `re`: its `\\w` runs over a string of every
    code point in order are the ranges (~730; ~20 ms, once per process).
    """
    every = np.arange(0x110000, dtype="<u4").tobytes().decode("utf-32-le", "surrogatepass")
    ranges = "".join(
        rf"\x{{{match.start():x}}}-\x{{{match.end() - 1:x}}}" for match in _WORDS.finditer(every)
    )
    return f"[^{ranges}]+"


def _arrow_word_tokens(array: pa.StringArray) -> pa.ListArray:
    """`word_tokens` of every string of a string array without nulls, as a list<string> array."""
    pieces = pc.split_pattern_regex(array, pattern=_non_word_run_re2())
    # Splitting at the runs of other characters leaves an empty piece where a text starts or
    # ends with one (and for an empty text): the words are the non-empty pieces.
    flat = pieces.flatten()
    kept = pc.greater(pc.binary_length(flat), 0).to_numpy(zero_copy_only=False)
    kept_before = np.concatenate(([0], np.cumsum(kept, dtype=np.int64)))
    offsets = kept_before[pieces.offsets.to_numpy() - pieces.offsets[0].as_py()]
    return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), flat.filter(pa.array(kept)))
