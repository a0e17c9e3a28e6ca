"""The form two texts are compared in: NFKC, Traditional to Simplified Chinese, case folded,
whitespace collapsed (`normalise`); and which texts hold Han ideographs (`has_han`, `HAN`).

Pure functions, no Spark. OpenCC's dictionaries load once per Python process (a cached
loader), so a UDF calling `normalise` pickles cheaply and pays the loading once per worker.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import Any

# Han ideographs (CJK Unified Ideographs and Extension A): what jieba segments.
HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
# Characters NFKC leaves alone and that never compose with a character before them (ASCII,
# CJK unified ideographs): a string can be cut before any of them and normalised piece by
# piece. Cut after a Han character too (nothing composes with one); keep one ASCII
# character before a run of others, since `e` + U+0301 composes to `é`.
_NFKC_UNSAFE = re.compile(r"[\x00-\x7f]?[^\x00-\x7f\u4e00-\u9fff]+")


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
    if HAN.search(text):
        text = _to_simplified(nfkc(text))
    else:
        # Mostly-ASCII text: CPython's own NFKC is faster than cutting it into pieces. NFKC
        # can make Han characters (compatibility ideographs, radicals), hence the second look.
        normalised = unicodedata.normalize("NFKC", text)
        if normalised is not text and HAN.search(normalised):
            normalised = _to_simplified(normalised)
        text = normalised
    # str.split() splits on exactly the characters `\s` matches in a str pattern
    # (Py_UNICODE_ISSPACE), about three times faster than re.sub.
    return " ".join(text.casefold().split())


def has_han(text: str) -> bool:
    """True when the text holds at least one Han ideograph."""
    return HAN.search(text) is not None
