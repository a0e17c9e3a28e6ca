"""The form two texts are compared in: NFKC, Chinese of every region in one script and one
vocabulary, case folded, whitespace collapsed (`normalise`); and which texts hold Han ideographs
(`has_han`, `HAN`).

Chinese is brought to Simplified characters with the mainland's vocabulary
(`to_canonical_chinese`): a mainland page and its Taiwan or Hong Kong reprint (軟體/软件,
程式/程序, 網路/网络) get one text. The price: a Taiwan word that means another thing on the
mainland is read as the mainland word (a Taiwan 文件 is a document, a mainland 文件 a file),
and mainland words Taiwan writes alike meet (资料 and 数据 are both 資料: both become 数据);
Chinese normalises about 11x slower than with characters alone (bench/regional.py). Text
without Han characters never reaches OpenCC.

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


# The regional canonical form: Simplified characters, mainland vocabulary, reached from every
# region. `tw2sp` alone does not do it: it rewrites mainland words that Taiwan uses otherwise
# (程序 -> 进程, 文件 -> 文档). So every text first goes to Taiwan's words and then back:
# `hk2s` (Hong Kong variant characters such as 衞, and Traditional, to Simplified: `s2twp`'s
# phrase table only matches Simplified input), `s2twp` (mainland phrases to Taiwan's; a Taiwan
# word has no entry and stays), `tw2sp` (Taiwan's phrases to the mainland's, in Simplified).
# Chosen by bench/regional.py: of its Taiwan and Hong Kong reprints 95.6% are exact copies and
# 99.9% within k = 3 (`t2s` alone: 45.5%, 85.0%); ending with `t2s` instead (Taiwan's words in
# Simplified) makes 99.5% exact but feeds jieba words its mainland dictionary and IDF table know
# less (LCQMC's non-duplicates merged 1.19% -> 1.24%; near copies in examples/ moved apart).
REGIONAL_CHAIN: tuple[str, ...] = ("hk2s", "s2twp", "tw2sp")
# Passes of the chain before giving up on a fixed point (a piece the first pass leaves alone
# needs one, a piece it changes two or more).
_MAX_PASSES = 6
# Where `to_canonical_chinese` cuts a text into pieces OpenCC converts independently.
_UNIT_END = re.compile(r"(?<=[\n。])")


@functools.cache
def converter(config: str) -> Any:
    """OpenCC's converter for one of its configurations (`t2s`, `s2twp`, ...), loaded once per process."""
    import opencc

    return opencc.OpenCC(config)


def _convert(text: str, chain: tuple[str, ...]) -> str:
    """One pass: the OpenCC configurations of `chain` applied in turn."""
    for config in chain:
        text = converter(config).convert(text)
    return text


def fixed_point(text: str, chain: tuple[str, ...]) -> str:
    """`chain` applied to the whole text until it stops changing (what `to_canonical_chinese`
    computes faster)."""
    for _ in range(_MAX_PASSES):
        converted = _convert(text, chain)
        if converted == text:
            break
        text = converted
    return text


def _units(text: str) -> list[str]:
    """The text cut after every line break and ideographic full stop (no empty pieces)."""
    return [unit for unit in _UNIT_END.split(text) if unit]


def to_canonical_chinese(text: str, chain: tuple[str, ...] = REGIONAL_CHAIN) -> str:
    """The OpenCC configurations of `chain` applied in turn, repeated until the text stops changing.

    One pass is not always a fixed point (乾清宮 -> 乾清宫 -> 干清宫: the phrase table fires on
    the first pass, the character table on the second), and a page must meet its copy
    whichever form each started in. OpenCC converts the pieces between line breaks and full
    stops independently (its phrases hold neither and it writes neither), so after the first
    pass only the pieces it changed are converted again: the result is `fixed_point`'s at
    about the cost of one pass, where `fixed_point` needs two for any text that changes.
    """
    units = _units(text)
    pending = list(range(len(units)))
    for _ in range(_MAX_PASSES):
        before = [units[i] for i in pending]
        after = _units(_convert("".join(before), chain))
        if len(after) != len(before):  # a piece boundary moved: convert the whole text instead
            return fixed_point(text, chain)
        pending_next = []
        for i, old, new in zip(pending, before, after):
            if new != old:
                units[i] = new
                pending_next.append(i)
        pending = pending_next
        if not pending:
            break
    return "".join(units)


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


def normalise(text: str, chain: tuple[str, ...] = REGIONAL_CHAIN) -> str:
    """The form two texts are compared in.

    NFKC (full-width forms, ligatures and compatibility characters fold to their plain
    form), Chinese to its regional canonical form (`to_canonical_chinese` with `chain`: one
    page matches in both scripts and in the mainland's, Taiwan's and Hong Kong's words),
    case folding, and every run of whitespace collapsed to one space.

    chain: the OpenCC configurations `to_canonical_chinese` applies; bench/regional.py passes
    others to compare them (`("t2s",)` is the characters-only form before issue 13).
    """
    if HAN.search(text):
        text = to_canonical_chinese(nfkc(text), chain)
    else:
        # Mostly-ASCII text: CPython's own NFKC is faster than cutting it into pieces. NFKC
        # can make Han characters (compatibility ideographs, radicals), hence the second look.
        normalised = unicodedata.normalize("NFKC", text)
        if normalised is not text and HAN.search(normalised):
            normalised = to_canonical_chinese(normalised, chain)
        text = normalised
    # str.split() splits on exactly the characters `\s` matches in a str pattern
    # (Py_UNICODE_ISSPACE), about three times faster than re.sub.
    return " ".join(text.casefold().split())


def has_han(text: str) -> bool:
    """True when the text holds at least one Han ideograph."""
    return HAN.search(text) is not None
