"""Text before fingerprints: bytes to str, HTML to visible text, normalisation, tokens.

Pure functions, no Spark. Heavy resources (OpenCC's dictionaries, jieba's prefix dictionary)
are loaded once per Python process by cached loaders, so a UDF that calls these functions
pickles cheaply and pays the loading cost once per worker, not per row.
"""

from __future__ import annotations

import functools
import importlib.resources
import logging
import re
import unicodedata
import warnings
from collections.abc import Iterable
from typing import Any

# A token is kept as a feature only if it holds a letter or digit of some script:
# punctuation and spaces that the segmenters return as tokens carry no content.
_HAS_WORD_CHAR = re.compile(r"\w")
_WORDS = re.compile(r"\w+")
# Han ideographs (CJK Unified Ideographs and Extension A): what jieba segments.
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_HAN_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]+")
# jieba segments runs of U+4E00-U+9FD5 only (its `re_han_default`, less the Latin letters and
# digits our Han runs never hold) and yields every other Han character on its own; rjieba
# (jieba-rs) segments a wider range. Handing the segmenter these runs, and taking the other
# Han characters one by one ourselves, makes both engines see exactly what jieba would.
_SEGMENTED_RUN = re.compile(r"[\u4e00-\u9fd5]+")
# Everything the `auto` tokenizer takes without a segmenter: one Han character outside
# jieba's range, or a run of word characters that are not Han.
_UNSEGMENTED_TOKEN = re.compile(r"[\u3400-\u4dbf\u9fd6-\u9fff]|[^\W\u3400-\u4dbf\u4e00-\u9fff]+")
# Characters NFKC leaves alone and that never compose with a character before them (ASCII,
# CJK unified ideographs): a string can be cut before any of them and normalised piece by
# piece. Cut after a Han character too (nothing composes with one); keep one ASCII
# character before a run of others, since `e` + U+0301 composes to `é`.
_NFKC_UNSAFE = re.compile(r"[\x00-\x7f]?[^\x00-\x7f\u4e00-\u9fff]+")
# Elements whose content is never visible text. `title` and `meta` are listed because a
# parser may move them into the body when the head closes early (a stray element in it).
_INVISIBLE_TAGS = "script, style, noscript, template, head, title, meta, link, svg, iframe, object"
# Elements that start a new line of text in a browser: their boundaries separate words,
# while inline elements (b, i, span, a, ...) do not (`<b>T</b>his` reads "This").
_BLOCK_TAGS = (
    "address, article, aside, blockquote, br, caption, dd, details, dialog, div, dl, dt, "
    "fieldset, figcaption, figure, footer, form, h1, h2, h3, h4, h5, h6, header, hr, li, "
    "main, nav, ol, option, p, pre, section, summary, table, td, th, tr, ul"
)
# Browsers run with scripting on, where <noscript> content is raw text that is never shown;
# lexbor parses as if scripting were off, which can spill that content into the page (and
# close <head> early). Removing the elements before parsing reproduces what a browser shows.
_NOSCRIPT = re.compile(r"<noscript\b.*?(?:</noscript\s*>|$)", re.IGNORECASE | re.DOTALL)


def decode_utf8(raw: bytes | None) -> tuple[str | None, bool]:
    """Decode bytes as UTF-8; invalid sequences become U+FFFD.

    Returns (text, had_invalid_bytes); (None, False) for None.
    """
    if raw is None:
        return None, False
    try:
        return raw.decode("utf-8"), False
    except UnicodeDecodeError:
        return raw.decode("utf-8", errors="replace"), True


def html_to_text(html: str) -> str:
    """Visible text of an HTML document or fragment, parsed with lexbor (HTML5).

    Scripts, styles and other invisible elements are dropped, entities are decoded, and block
    boundaries become spaces (so words on either side of a paragraph break do not run
    together) while inline tags join their text as a browser shows it.
    """
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(_NOSCRIPT.sub(" ", html))
    for node in tree.css(_INVISIBLE_TAGS):
        node.decompose()
    root = tree.body if tree.body is not None else tree.root
    if root is None:
        return ""
    for node in root.css(_BLOCK_TAGS):
        node.insert_before(" ")
        node.insert_after(" ")
    return root.text(separator="", strip=False)


@functools.cache
def _opencc_t2s() -> Any:
    import opencc

    return opencc.OpenCC("t2s")


def _to_simplified(text: str) -> str:
    """OpenCC t2s until the text stops changing.

    One pass is not always a fixed point (乾清宮 -> 乾清宫 -> 干清宫: the phrase table fires on
    the first pass, the character table on the second), and a Simplified page must meet its
    Traditional copy whichever form each started in.
    """
    converter = _opencc_t2s()
    for _ in range(4):
        converted = converter.convert(text)
        if converted == text:
            break
        text = converted
    return text


def _nfkc_piece(match: re.Match[str]) -> str:
    return unicodedata.normalize("NFKC", match.group())


def nfkc(text: str) -> str:
    """`unicodedata.normalize("NFKC", text)`, faster on Chinese text.

    CPython decomposes and recomposes every character of a string that is not already
    normalised (one full-width comma is enough), ~80 ns a character. ASCII and Han
    characters are left as they are and cut the string into pieces that normalise
    independently (see `_NFKC_UNSAFE`), so only the other runs go through `normalize`.
    """
    if unicodedata.is_normalized("NFKC", text):
        return text
    return _NFKC_UNSAFE.sub(_nfkc_piece, text)


def normalise(text: str) -> str:
    """The form two texts are compared in.

    NFKC (full-width forms, ligatures and compatibility characters fold to their plain
    form), Traditional to Simplified Chinese (OpenCC `t2s`, so one page in both scripts
    matches), case folding, and every run of whitespace collapsed to one space.
    """
    if _HAN.search(text):
        text = _to_simplified(nfkc(text))
    else:
        # Mostly-ASCII text: CPython's own NFKC is faster than cutting it into pieces. NFKC
        # can make Han characters (compatibility ideographs, radicals), hence the second look.
        normalised = unicodedata.normalize("NFKC", text)
        if normalised is not text and _HAN.search(normalised):
            normalised = _to_simplified(normalised)
        text = normalised
    # str.split() splits on exactly the characters `\s` matches in a str pattern
    # (Py_UNICODE_ISSPACE), about three times faster than re.sub.
    return " ".join(text.casefold().split())


def has_han(text: str) -> bool:
    """True when the text holds at least one Han ideograph."""
    return _HAN.search(text) is not None


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


SEGMENTERS = ("rjieba", "jieba")


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
    if not _HAN.search(text):  # the common case outside Chinese: one simpler regex
        return word_tokens(text)
    if not ordered:
        runs = _SEGMENTED_RUN.findall(text)
        found = _UNSEGMENTED_TOKEN.findall(text)
        if runs:
            # A space between runs: both segmenters cut at whitespace and yield it as a
            # token of its own, so this is one call giving every run's tokens.
            found += [t for t in _segment(" ".join(runs), segmenter) if t != " "]
        return found
    found = []
    position = 0
    for run in _SEGMENTED_RUN.finditer(text):
        found.extend(_UNSEGMENTED_TOKEN.findall(text, position, run.start()))
        found.extend(_segment(run.group(), segmenter))
        position = run.end()
    found.extend(_UNSEGMENTED_TOKEN.findall(text, position))
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
