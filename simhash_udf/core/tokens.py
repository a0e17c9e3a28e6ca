"""Tokens of a normalised text: jieba's segmentation, words, characters, and their n-grams.

`tokens` takes one text; `batch_tokens` a batch, as one Arrow list array, split by numpy over
its UTF-8 bytes with one segmenter call for all of its runs of Han characters (the same tokens,
tested code point by code point). Pure functions, no Spark. jieba's prefix dictionary loads once per Python
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
_SEGMENTED_CHAR = r"[\u4e00-\u9fd5]"
# Everything the `auto` tokenizer takes without a segmenter: one Han character outside
# jieba's range, or a run of word characters that are not Han.
_ALONE_CHAR = r"[\u3400-\u4dbf\u9fd6-\u9fff]"
_UNSEGMENTED_WORD_CHAR = r"[^\W\u3400-\u4dbf\u4e00-\u9fff]"
_SEGMENTED_RUN = re.compile(_SEGMENTED_CHAR + "+")
_SPLIT_AT_RUNS = re.compile(f"({_SEGMENTED_CHAR}+)")
_UNSEGMENTED_TOKEN = re.compile(f"{_ALONE_CHAR}|{_UNSEGMENTED_WORD_CHAR}+")

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
) -> pa.ListArray:
    """`tokens(text[:max_chars], tokenizer, segmenter)` of every text, in the batch's order and
    each text's in text order, as one list<string> array (an empty list for None or "").

    With the `word` and `auto` tokenizers the batch is split by numpy over its UTF-8, without
    a Python string per token: the texts without Han characters (all of them in most crawls)
    into words (`_utf8_word_tokens`; `re.findall` and handing its tokens to Arrow took a third
    of an English batch's time, Arrow's regex split still a quarter), the texts with Han
    characters as `mixed_tokens` splits them, their runs of Han characters segmented in one
    call for the whole batch (`_utf8_mixed_tokens`: 1.78 -> 1.50 s per 20 MB of Chinese).
    """
    cut = [text[:max_chars] if text else "" for text in texts]
    if tokenizer not in ("word", "auto"):
        return _tokens_in_python(cut, tokenizer, segmenter)
    try:
        array = pa.array(cut, type=pa.string())
    except UnicodeEncodeError:
        # A lone surrogate (a Python caller's string; decoded input never holds one) has no
        # UTF-8: Python splits such a batch (no token holds the surrogate).
        return _tokens_in_python(cut, tokenizer, segmenter)
    if tokenizer == "word":
        return _utf8_word_tokens(array)
    han = _has_han(array)
    if not han.any():
        return _utf8_word_tokens(array)
    with_han = np.flatnonzero(han)
    mixed = _utf8_mixed_tokens(array if han.all() else array.take(pa.array(with_han)), segmenter)
    if mixed is None:  # the segmenter's tokens did not tile its runs (never seen)
        mixed = _tokens_in_python([cut[i] for i in with_han.tolist()], tokenizer, segmenter)
    if han.all():
        return mixed
    without_han = np.flatnonzero(~han)
    words = _utf8_word_tokens(array.take(pa.array(without_han)))
    # The rows of `words`, then those of `mixed`: row i of the batch is row position[i].
    position = np.empty(len(cut), dtype=np.int64)
    position[without_han] = np.arange(len(without_han))
    position[with_han] = len(without_han) + np.arange(len(with_han))
    return pa.concat_arrays([words, mixed]).take(pa.array(position))


def _tokens_in_python(texts: list[str], tokenizer: str, segmenter: str) -> pa.ListArray:
    found = [tokens(text, tokenizer, segmenter) if text else [] for text in texts]
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
    # Between one non-empty string's first byte and the next one's lies exactly the first.
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


def _code_point_classes(patterns: dict[int, str]) -> np.ndarray:
    """uint8 per code point (0 to 0x10FFFF): the class whose pattern (one character's regex)
    matches it, `_SEPARATOR` where none does.

    Written out from this interpreter's `re` (each pattern runs over a string of every code
    point in order; ~30 ms a pattern, once per process), so the batch path splits exactly
    where the one-text functions do, whatever Unicode version the interpreter follows.
    """
    every = np.arange(0x110000, dtype="<u4").tobytes().decode("utf-32-le", "surrogatepass")
    table = np.full(0x110000, _SEPARATOR, dtype=np.uint8)
    for value, pattern in patterns.items():
        for match in re.finditer(f"(?:{pattern})+", every):
            table[match.start() : match.end()] = value
    return table


# What the batch path does with a character, by its class: a separator is in no token, a word
# character is in the run of them it lies in (`word_tokens`' \w runs), a character alone is a
# token by itself and a segmented character is in a run the segmenter cuts (`mixed_tokens`).
_SEPARATOR, _WORD, _ALONE, _SEGMENTED = 0, 1, 2, 3


@functools.cache
def _word_code_points() -> np.ndarray:
    """bool per code point: whether Python's `\\w` (`_WORDS`) matches it (~730 ranges)."""
    return _code_point_classes({_WORD: r"\w"}).astype(bool)


@functools.cache
def _mixed_code_points() -> np.ndarray:
    """uint8 per code point, its class under the `auto` tokenizer (`mixed_tokens`): Han
    characters in jieba's range segmented, the other Han characters alone, the other `\\w`
    characters word characters."""
    return _code_point_classes({_WORD: _UNSEGMENTED_WORD_CHAR, _ALONE: _ALONE_CHAR, _SEGMENTED: _SEGMENTED_CHAR})


# A UTF-8 character of 2, 3 or 4 bytes: its lead byte's range and the lead's payload bits.
_MULTI_BYTE = ((2, 0xC0, 0xE0, 0x1F), (3, 0xE0, 0xF0, 0x0F), (4, 0xF0, 0x100, 0x07))
# Every character alone or segmented (U+3400-U+9FFF) is three bytes of UTF-8.
_HAN_CHAR_BYTES = 3


def _byte_classes(data: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Per byte of valid UTF-8, the entry of `table` (one per code point) for the character the
    byte belongs to."""
    # ASCII bytes by the table; bytes of multi-byte characters are set below.
    classes = np.take(np.append(table[:0x80], np.zeros(0x80, dtype=table.dtype)), data)
    leads = np.flatnonzero(data >= 0xC0)
    if not leads.size:
        return classes
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
        found = np.take(table, code_points)
        for k in range(length):
            classes[at + k] = found
    return classes


def _runs(marked: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first byte, end byte) of each run of marked bytes; a text's bounds (`offsets`) end a run."""
    size = marked.size
    text_starts = offsets[:-1][offsets[:-1] < size]
    text_lasts = offsets[1:][offsets[1:] > 0] - 1
    # A run starts at a marked byte after an unmarked one or at a text's first byte, and
    # ends at a marked byte before an unmarked one or at a text's last byte.
    starts_here = marked.copy()
    starts_here[1:] &= ~marked[:-1]
    starts_here[text_starts] = marked[text_starts]
    ends_here = marked.copy()
    ends_here[:-1] &= ~marked[1:]
    ends_here[text_lasts] = marked[text_lasts]
    return np.flatnonzero(starts_here), np.flatnonzero(ends_here) + 1


def _token_lists(data: np.ndarray, offsets: np.ndarray, starts: np.ndarray, lengths: np.ndarray, in_token: np.ndarray) -> pa.ListArray:
    """The list<string> array of tokens given by their first bytes `starts` (increasing) and
    byte `lengths`, `in_token` marking exactly the bytes of some token."""
    token_offsets = np.zeros(starts.size + 1, dtype=np.int32)
    np.cumsum(lengths, out=token_offsets[1:])
    flat = pa.StringArray.from_buffers(starts.size, pa.py_buffer(token_offsets), pa.py_buffer(np.compress(in_token, data)))
    # Text i's tokens are those starting in [offsets[i], offsets[i + 1]).
    return pa.ListArray.from_arrays(pa.array(np.searchsorted(starts, offsets).astype(np.int32)), flat)


def _utf8_word_tokens(array: pa.StringArray) -> pa.ListArray:
    """`word_tokens` of every string of a string array without nulls, as a list<string> array.

    numpy over the array's UTF-8 bytes: each byte marked by whether its character is a word
    character (`_word_code_points`), tokens are the runs of marked bytes within a text, and
    their bytes, kept in order, are the tokens' string data. No Python string per token or
    text; ~5x faster than Arrow's regex split on English (a quarter of a batch's time before).
    """
    if not len(array):
        return pa.array([], type=pa.list_(pa.string()))
    offsets, data = _utf8_of(array)
    word = _byte_classes(data, _word_code_points())
    starts, ends = _runs(word, offsets)
    return _token_lists(data, offsets, starts, ends - starts, word)


def _utf8_mixed_tokens(array: pa.StringArray, segmenter: str) -> pa.ListArray | None:
    """`mixed_tokens` of every string of a string array without nulls, as a list<string> array;
    None when the segmenter's tokens did not tile the runs it was given (never seen).

    Each byte gets its character's class (`_mixed_code_points`); a token is a run of word
    bytes within a text, a character alone, or a piece the segmenter cut a run of segmented
    bytes into (`_segmented_tokens`). Each token's length is written at its first byte, so
    the three kinds come out in text order together, without a sort. Only the segmenter's
    tokens are Python strings, and only their lengths are read.
    """
    offsets, data = _utf8_of(array)
    classes = _byte_classes(data, _mixed_code_points())
    token_length = np.zeros(data.size, dtype=np.int32)
    starts, ends = _runs(classes == _WORD, offsets)
    token_length[starts] = ends - starts
    token_length[np.flatnonzero((classes == _ALONE) & (data >= 0xC0))] = _HAN_CHAR_BYTES
    segmented = classes == _SEGMENTED
    if segmented.any():
        pieces = _segmented_tokens(data, segmented, offsets, segmenter)
        if pieces is None:
            return None
        token_length[pieces[0]] = pieces[1]
    starts = np.flatnonzero(token_length)
    # Every byte of a class other than `_SEPARATOR` lies in exactly one token.
    return _token_lists(data, offsets, starts, token_length[starts], classes != _SEPARATOR)


def _segmented_tokens(
    data: np.ndarray, segmented: np.ndarray, offsets: np.ndarray, segmenter: str
) -> tuple[np.ndarray, np.ndarray] | None:
    """(first byte, length in bytes) of each token the segmenter cuts the runs of segmented
    bytes into, in order; None when its tokens do not tile the runs.

    The runs of the whole batch go to the segmenter in one call, joined by spaces (both
    segmenters cut at whitespace and yield it as a token of its own), as `mixed_tokens`
    hands it one text's runs.
    """
    run_starts, run_ends = _runs(segmented, offsets)
    run_chars = (run_ends - run_starts) // _HAN_CHAR_BYTES
    ends_in_runs = np.cumsum(run_chars)  # in characters of the runs, spaces not counted
    joined = np.insert(np.compress(segmented, data), ends_in_runs[:-1] * _HAN_CHAR_BYTES, ord(" "))
    pieces = _segment(joined.tobytes().decode("utf-8"), segmenter)
    # The joined text's characters: each run's, a space after each run but the last. The
    # pieces tile the runs when their lengths add up to the text's and every space is a piece
    # of its own (a piece starts at it and another right after it).
    characters = int(ends_in_runs[-1]) + run_starts.size - 1
    piece_chars = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
    piece_starts = np.zeros(len(pieces) + 1, dtype=np.int64)
    np.cumsum(piece_chars, out=piece_starts[1:])
    if piece_starts[-1] != characters or not piece_chars.all():
        return None
    spaces = ends_in_runs[:-1] + np.arange(run_starts.size - 1)
    starts_a_piece = np.zeros(characters + 1, dtype=bool)
    starts_a_piece[piece_starts] = True
    if not (starts_a_piece[spaces].all() and starts_a_piece[spaces + 1].all()):
        return None
    is_han = np.ones(characters, dtype=bool)
    is_han[spaces] = False
    kept = is_han[piece_starts[:-1]]
    # The k-th Han character of the joined text is the k-th segmented character of the batch.
    han_before = np.cumsum(is_han) - is_han
    first_char = han_before[piece_starts[:-1][kept]]
    return np.flatnonzero(segmented)[first_char * _HAN_CHAR_BYTES], piece_chars[kept] * _HAN_CHAR_BYTES
