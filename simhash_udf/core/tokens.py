"""Tokens of a normalised text: jieba's segmentation, words, characters, and their n-grams.

`tokens` takes one text; `batch_tokens` a batch, as one Arrow list array, splitting the texts
without Han characters into words by numpy over their UTF-8 bytes (the same tokens, tested code
point by code point). Pure functions, no Spark. jieba's prefix dictionary loads once per Python
process (a cached loader), so a UDF calling `tokens` pickles cheaply and pays the loading once
per worker.
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

from simhash_udf.core.normalise import HAN, HAN_UTF8_LEAD

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
    most crawls) are split into words by numpy over the batch's UTF-8 (`_utf8_word_tokens`),
    without a Python string per token: `re.findall` and handing its tokens to Arrow took a
    third of an English batch's time, Arrow's regex split still a quarter. Texts with Han
    characters take `mixed_tokens`.
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
        return _utf8_word_tokens(array)
    han = _has_han(array)
    if not han.any():
        return _utf8_word_tokens(array)
    with_han = np.flatnonzero(han)
    mixed = pa.array(
        [mixed_tokens(cut[i], segmenter, ordered) for i in with_han.tolist()], type=pa.list_(pa.string())
    )
    if han.all():
        return mixed
    without_han = np.flatnonzero(~han)
    words = _utf8_word_tokens(array.take(pa.array(without_han)))
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


def _has_han(array: pa.StringArray) -> np.ndarray:
    """bool per string of a string array without nulls: whether it holds a Han character.

    Arrow's RE2 search (`HAN`) runs only on the strings with a byte from `HAN_UTF8_LEAD` up,
    where every Han character's UTF-8 starts: in an English batch one or two texts, and
    ~3% of its time saved (the search over all of its 2 MB took 3 ms, the bytes' maxima
    take 0.04).
    """
    offsets, data = _utf8_of(array)
    found = np.zeros(len(array), dtype=bool)
    non_empty = np.flatnonzero(offsets[1:] > offsets[:-1])
    if not non_empty.size:
        return found
    # From one non-empty string's first byte to the next one's lie exactly its own bytes (the
    # empty strings between hold none), so each of reduceat's segments is one string's.
    candidates = non_empty[np.maximum.reduceat(data, offsets[:-1][non_empty]) >= HAN_UTF8_LEAD]
    if candidates.size:
        searched = array if candidates.size == len(array) else array.take(pa.array(candidates))
        found[candidates] = pc.match_substring_regex(searched, _HAN_RE2).to_numpy(zero_copy_only=False)
    return found


def _utf8_of(array: pa.StringArray) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, data) of a string array without nulls: string i's UTF-8 is
    data[offsets[i]:offsets[i + 1]] (int64 offsets from 0, uint8 data, no copy; a slice's
    own bytes, though it shares the whole array's buffers)."""
    texts = len(array)
    if not texts:
        return np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.uint8)
    buffers = array.buffers()
    value_offsets = np.frombuffer(buffers[1], dtype=np.int32, count=texts + 1, offset=array.offset * 4)
    first = int(value_offsets[0])  # a slice's bytes start there in the whole array's data
    offsets = value_offsets.astype(np.int64) - first
    size = int(offsets[-1])
    data = np.frombuffer(buffers[2], dtype=np.uint8, count=size, offset=first) if size else np.zeros(0, np.uint8)
    return offsets, data


@functools.cache
def _word_code_points() -> np.ndarray:
    """bool per code point (0 to 0x10FFFF): whether Python's `\\w` (`_WORDS`) matches it.

    Written out from this interpreter's `re` (its `\\w` runs over a string of every code point
    in order, ~730 ranges; ~30 ms, once per process), so the batch path splits exactly where
    `word_tokens` does, whatever Unicode version the interpreter follows.
    """
    every = np.arange(0x110000, dtype="<u4").tobytes().decode("utf-32-le", "surrogatepass")
    table = np.zeros(0x110000, dtype=bool)
    for match in _WORDS.finditer(every):
        table[match.start() : match.end()] = True
    return table


# A UTF-8 character of 2, 3 or 4 bytes: its lead byte's range and the lead's payload bits.
_MULTI_BYTE = ((2, 0xC0, 0xE0, 0x1F), (3, 0xE0, 0xF0, 0x0F), (4, 0xF0, 0x100, 0x07))


def _word_bytes(data: np.ndarray) -> np.ndarray:
    """bool per byte of valid UTF-8: whether the character it belongs to is a word character."""
    table = _word_code_points()
    # ASCII bytes by the table; bytes of multi-byte characters are set below.
    word = np.take(np.append(table[:0x80], np.zeros(0x80, dtype=bool)), data)
    leads = np.flatnonzero(data >= 0xC0)
    if not leads.size:
        return word
    lead_bytes = data[leads].astype(np.int32)
    for length, low, high, payload in _MULTI_BYTE:
        chosen = (lead_bytes >= low) & (lead_bytes < high)
        at = leads[chosen]
        if not at.size:
            continue
        # Valid UTF-8: a lead byte is followed by its continuation bytes (6 bits each).
        code_points = lead_bytes[chosen] & payload
        for k in range(1, length):
            code_points = (code_points << 6) | (data[at + k] & 0x3F)
        is_word = np.take(table, code_points)
        for k in range(length):
            word[at + k] = is_word
    return word


def _utf8_word_tokens(array: pa.StringArray) -> pa.ListArray:
    """`word_tokens` of every string of a string array without nulls, as a list<string> array.

    numpy over the array's UTF-8 bytes: each byte marked by whether its character is a word
    character (`_word_bytes`), tokens are the runs of marked bytes within a text, and their
    bytes, kept in order, are the tokens' string data. No Python string per token or text;
    ~5x faster than Arrow's regex split on English (a quarter of a batch's time before).
    """
    if not len(array):
        return pa.array([], type=pa.list_(pa.string()))
    offsets, data = _utf8_of(array)
    size = data.size
    word = _word_bytes(data)
    # A token starts at a word byte after a non-word byte or at a text's first byte, and
    # ends at a word byte before a non-word byte or at a text's last byte.
    text_starts = offsets[:-1][offsets[:-1] < size]
    text_lasts = offsets[1:][offsets[1:] > 0] - 1
    starts_here = word.copy()
    starts_here[1:] &= ~word[:-1]
    starts_here[text_starts] = word[text_starts]
    ends_here = word.copy()
    ends_here[:-1] &= ~word[1:]
    ends_here[text_lasts] = word[text_lasts]
    starts = np.flatnonzero(starts_here)
    token_offsets = np.zeros(starts.size + 1, dtype=np.int32)
    np.cumsum(np.flatnonzero(ends_here) + 1 - starts, out=token_offsets[1:])
    flat = pa.StringArray.from_buffers(
        starts.size, pa.py_buffer(token_offsets), pa.py_buffer(np.compress(word, data))
    )
    # Text i's tokens are those starting in [offsets[i], offsets[i + 1]).
    return pa.ListArray.from_arrays(pa.array(np.searchsorted(starts, offsets).astype(np.int32)), flat)
