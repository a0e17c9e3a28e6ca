"""The form two texts are compared in: NFKC, Chinese of every region in one script and one
vocabulary, case folded, whitespace collapsed (`normalise`); and which texts hold Han ideographs
(`has_han`, `HAN`; `utf8_may_hold_han` rules them out from a text's bytes).

Chinese is brought to Simplified characters with the mainland's vocabulary
(`to_canonical_chinese`): a mainland page and its Taiwan or Hong Kong reprint (軟體/软件,
程式/程序, 網路/网络) get one text. The price: a Taiwan word that means another thing on the
mainland is read as the mainland word (a Taiwan 文件 is a document, a mainland 文件 a file),
and mainland words Taiwan writes alike meet (资料 and 数据 are both 資料: both become 数据);
the whole chain runs 6-11x slower than characters alone (`t2s`), so only the clauses
holding a trigger (`regional_triggers`: 2.4% of People's Daily's characters) go through it:
Chinese `normalise` runs 1.4-1.6x slower than with `t2s` alone (bench/regional.py, two runs:
10.6 vs 15.0 and 14.0 vs 21.8 MB/s). Text without Han characters never reaches OpenCC.

Pure functions, no Spark. OpenCC's dictionaries load once per Python process (a cached
loader), so a UDF calling `normalise` pickles cheaply and pays the loading once per worker.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import numpy as np

from simhash_udf.core import regional_triggers as trigger_tables
from simhash_udf.core.opencc_loader import converter
from simhash_udf.core.regional_triggers import MARK, Triggers, TriggerStrings
from simhash_udf.core.table_cache import cached_json, table_key

# Han ideographs (CJK Unified Ideographs and Extension A): what jieba segments.
HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
# The least lead byte of a Han ideograph's UTF-8 (U+3400 is E3 90 80; U+9FFF is E9 BF BF).
HAN_UTF8_LEAD = 0xE3
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
# A run of the marks `regional_triggers` writes over a trigger.
_MARK_RUN = re.compile(re.escape(MARK) + "+")


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


def _fixed_point_by_units(
    units: list[str],
    chain: tuple[str, ...],
    split: Callable[[str], list[str]] = _units,
    settled: Callable[[str], bool] | None = None,
) -> list[str] | None:
    """`fixed_point` of each unit (a piece that OpenCC converts on its own; `split` cuts a text
    into them), converting after the first pass only the units that changed and are not
    `settled` (known to be a fixed point); None when a conversion moved a unit boundary."""
    units = list(units)
    pending = list(range(len(units)))
    for _ in range(_MAX_PASSES):
        before = [units[i] for i in pending]
        after = split(_convert("".join(before), chain))
        if len(after) != len(before):
            return None
        pending_next = []
        for i, old, new in zip(pending, before, after):
            if new != old:
                units[i] = new
                if settled is None or not settled(new):
                    pending_next.append(i)
        pending = pending_next
        if not pending:
            break
    return units


def to_canonical_chinese(text: str, chain: tuple[str, ...] = REGIONAL_CHAIN, fast: bool = True) -> str:
    """The OpenCC configurations of `chain` applied in turn, repeated until the text stops changing.

    One pass is not always a fixed point (乾清宮 -> 乾清宫 -> 干清宫: the phrase table fires on
    the first pass, the character table on the second), and a page must meet its copy
    whichever form each started in. OpenCC converts the pieces between line breaks and full
    stops independently (its phrases hold neither and it writes neither), so after the first
    pass only the pieces it changed are converted again: the result is `fixed_point`'s at
    about the cost of one pass, where `fixed_point` needs two for any text that changes.

    fast: for `REGIONAL_CHAIN`, a clause without a trigger (`regional_triggers`: a string of
    the chain's dictionaries that acts otherwise than `t2s`) is taken from `t2s` alone (over
    100 MB/s, against 1-3 MB/s for the chain); only the others go through the chain. False:
    every piece goes through the chain (what the triggers are computed with).
    """
    if fast and chain == REGIONAL_CHAIN:
        return _regional_fast(text)
    units = _fixed_point_by_units(_units(text), chain)
    return fixed_point(text, chain) if units is None else "".join(units)


@functools.cache
def regional_triggers() -> Triggers:
    """The triggers of `REGIONAL_CHAIN`, once per process: their strings are derived
    (`regional_triggers.trigger_strings`, 2-3 s) once per installation and kept in the table
    cache (`core/table_cache.py`), keyed by this module, that one and OpenCC's files and version."""
    import opencc

    key = table_key(
        "regional-triggers",
        [Path(__file__), *trigger_tables.source_files()],
        [f"opencc {opencc.__version__}", ",".join(REGIONAL_CHAIN)],
    )
    strings = cached_json("regional-triggers", key, lambda: asdict(derive_trigger_strings()))
    return TriggerStrings(**strings).triggers()


def derive_trigger_strings() -> TriggerStrings:
    """The trigger strings of `REGIONAL_CHAIN`, derived now (what the table cache keeps)."""
    return trigger_tables.trigger_strings(REGIONAL_CHAIN, lambda text: to_canonical_chinese(text, REGIONAL_CHAIN, fast=False))


def _regional_fast(text: str) -> str:
    """`to_canonical_chinese(text)` with the chain run only on the clauses holding a trigger.

    The marking converter (`t2s`, then `MARK` over each trigger) keeps every character in
    place (its entries are as long as their values), so a trigger it marks lies in the same
    clause of the text as written; the clauses without one are its output.
    """
    triggers = regional_triggers()
    marked = triggers.marking.convert(text)
    raw_found = [match.start() for match in triggers.raw.finditer(text)]
    if MARK not in marked and not raw_found:
        return marked
    if len(marked) != len(text):  # characters moved: the whole chain instead
        return to_canonical_chinese(text, REGIONAL_CHAIN, fast=False)
    marks = [match.start() for match in _MARK_RUN.finditer(marked)]
    spans = _clauses_at(text, sorted(raw_found + marks), triggers.clause_end)

    def split(piece: str) -> list[str]:
        return [clause for clause in triggers.clause_split.split(piece) if clause]

    def settled(clause: str) -> bool:
        # No trigger and nothing for t2s: the chain leaves the clause as it is (the fast
        # path's own rule), so a second pass is not needed to see it.
        return triggers.marking.convert(clause) == clause and not triggers.raw.search(clause)

    converted = _fixed_point_by_units([text[start:end] for start, end in spans], REGIONAL_CHAIN, split, settled)
    if converted is None:
        return to_canonical_chinese(text, REGIONAL_CHAIN, fast=False)
    pieces, last = [], 0
    for (start, end), clause in zip(spans, converted):
        pieces += [marked[last:start], clause]
        last = end
    pieces.append(marked[last:])
    return "".join(pieces)


def _clauses_at(text: str, positions: list[int], clause_end: re.Pattern[str]) -> list[tuple[int, int]]:
    """(start, end) of the clauses of `text` holding `positions` (sorted), each once, in order:
    a clause runs to its clause-ending character included, or to the end of the text."""
    reversed_text = text[::-1]
    spans: list[tuple[int, int]] = []
    for position in positions:
        if spans and position < spans[-1][1]:
            continue
        before = clause_end.search(reversed_text, len(text) - position)
        after = clause_end.search(text, position)
        spans.append((len(text) - before.start() if before else 0, after.end() if after else len(text)))
    return spans


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


def normalise(
    text: str, chain: tuple[str, ...] = REGIONAL_CHAIN, fast: bool = True, may_hold_han: bool = True
) -> str:
    """The form two texts are compared in.

    NFKC (full-width forms, ligatures and compatibility characters fold to their plain
    form), Chinese to its regional canonical form (`to_canonical_chinese` with `chain`: one
    page matches in both scripts and in the mainland's, Taiwan's and Hong Kong's words),
    case folding, and every run of whitespace collapsed to one space.

    chain: the OpenCC configurations `to_canonical_chinese` applies; bench/regional.py passes
    others to compare them (`("t2s",)` is the characters-only form before issue 13).
    fast: `to_canonical_chinese`'s fast path (same result; False prices the chain without it).
    may_hold_han: False when the caller knows the text holds no Han ideograph (its UTF-8 had
    no byte a Han character starts with: `utf8_may_hold_han`), which spares the search for
    one; a tenth of normalising and fingerprinting English text.
    """
    if may_hold_han and HAN.search(text):
        text = to_canonical_chinese(nfkc(text), chain, fast)
    else:
        # Mostly-ASCII text: CPython's own NFKC is faster than cutting it into pieces. NFKC
        # can make Han characters (compatibility ideographs, radicals), hence the second look.
        normalised = unicodedata.normalize("NFKC", text)
        if normalised is not text and HAN.search(normalised):
            normalised = to_canonical_chinese(normalised, chain, fast)
        text = normalised
    # str.split() splits on exactly the characters `\s` matches in a str pattern
    # (Py_UNICODE_ISSPACE), about three times faster than re.sub.
    return " ".join(text.casefold().split())


def utf8_may_hold_han(raw: bytes) -> bool:
    """False when these bytes, decoded as UTF-8 (invalid sequences replaced by U+FFFD), cannot
    hold a Han ideograph: none of them is a byte the UTF-8 of one starts with (0xE3 to 0xE9)
    or above. One numpy pass over the bytes, ~8x faster than searching the decoded text."""
    return int(np.frombuffer(raw, dtype=np.uint8).max(initial=0)) >= HAN_UTF8_LEAD


def has_han(text: str) -> bool:
    """True when the text holds at least one Han ideograph."""
    return HAN.search(text) is not None
