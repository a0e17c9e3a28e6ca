"""Inverse document frequencies of tokens: how much a token says about a text.

Han tokens take jieba's IDF table (the one `jieba.analyse.extract_tags` uses, with its median
for words it does not hold). Other tokens take -ln(frequency) from wordfreq's English list:
jieba's table holds no Latin-script words, and without it "the" and "of" would weigh as much
as any content word (they then decide most bits, and unrelated English pages collide; see
docs/defaults.md). Both scales are natural logs of an inverse frequency, so they mix.
Tables load once per process.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import warnings
from collections.abc import Iterable
from pathlib import Path

from simhash_udf.core.normalise import HAN, has_han

# wordfreq lists nothing rarer than ~1e-8; unknown words (names, typos, other languages'
# words) weigh as a word seen once in 10 million.
_RAREST_FREQUENCY = 1e-7


def _jieba_idf_file() -> Path:
    """jieba's IDF table, found without importing `jieba.analyse` (which loads jieba's POS
    tagger and its own copy of the table: ~2 s of every worker's start, for a file path)."""
    spec = importlib.util.find_spec("jieba")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("jieba is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "analyse" / "idf.txt"


def _parse_jieba_idf(path: Path) -> dict[str, float]:
    table: dict[str, float] = {}
    with path.open("r", encoding="utf-8") as lines:
        for line in lines:
            word, _, value = line.strip().partition(" ")
            if word and value:
                table[word] = float(value)
    return table


@functools.cache
def jieba_idf() -> tuple[dict[str, float], float]:
    """jieba's IDF table and its median, once per process (~0.6 s: parsing is about as fast
    as reading a stored copy, so the table cache does not keep it)."""
    table = _parse_jieba_idf(_jieba_idf_file())
    median = sorted(table.values())[len(table) // 2]
    return table, median


@functools.cache
def _english_frequencies() -> dict[str, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import wordfreq

        return wordfreq.get_frequency_dict("en", wordlist="best")


def idf(token: str) -> float:
    """The inverse document frequency of one normalised (case-folded) token."""
    if has_han(token):
        table, median = jieba_idf()
        return table.get(token, median)
    frequency = _english_frequencies().get(token, 0.0)
    return -math.log(max(frequency, _RAREST_FREQUENCY))


def idfs(tokens: Iterable[str]) -> list[float]:
    """`idf` of many tokens: the same values, without a function call per token (the batch
    path of `fingerprint.fingerprints` looks up every new feature of a batch)."""
    table, median = jieba_idf()
    frequencies = _english_frequencies()
    han = HAN.search
    rarest_idf = -math.log(_RAREST_FREQUENCY)
    out = []
    for token in tokens:
        if han(token):
            out.append(table.get(token, median))
        else:
            frequency = frequencies.get(token, 0.0)
            out.append(-math.log(frequency) if frequency > _RAREST_FREQUENCY else rarest_idf)
    return out
