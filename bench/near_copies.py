"""Synthetic near-copies of real long texts: the recall the quality benchmarks measure.

A copy has a share of its words edited (each edited word deleted, replaced by a real word of
the sources, or followed by an inserted one, at random); words are jieba's in text with Han
characters and runs of non-space characters elsewhere, so "1 % of the words" means words in
every language. Every copy has its own seeded RNG.
"""

from __future__ import annotations

import functools
import logging
import random
import re
import warnings
from collections.abc import Callable, Sequence

import pandas as pd

from bench.datasets import Page
from bench.pair_sets import DistinctTexts, text_group
from simhash_udf.core.normalise import has_han, normalise

EDIT_RATES = (0.01, 0.03, 0.05, 0.10)  # share of words edited in the near-copies made
SYNTHETIC_MIN_CHARS = 300  # shorter articles are not copied

_SPACE_OR_WORD = re.compile(r"\s+|\S+")
_WORD_CHAR = re.compile(r"\w")
_KANA = re.compile(r"[\u3040-\u30ff]")


@functools.cache
def _jieba_cut() -> Callable[[str], list[str]]:
    """jieba's default segmenter (same dictionary as the library), loaded once, quietly."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import jieba

    jieba.setLogLevel(logging.WARNING)
    return jieba.lcut


def edit_units(text: str) -> list[str]:
    """The text cut into pieces whose concatenation is the text; words are the pieces to edit.

    Text with Han characters is segmented by jieba (Chinese has no spaces; one word is about
    1.5 characters), other text into runs of non-space characters, so "5 % of the words" means
    words in every language.
    """
    if has_han(text):
        return _jieba_cut()(text)
    return _SPACE_OR_WORD.findall(text)


def is_word(piece: str) -> bool:
    """A piece that edits may delete, replace or insert next to (it holds a letter or digit)."""
    return _WORD_CHAR.search(piece) is not None


def edit_words(text: str, rate: float, rng: random.Random, pools: dict[str, list[str]]) -> str:
    """A near-copy: `rate` of the words deleted, replaced or inserted after (one of the three
    at random per edited word).

    Replacements and insertions are real words drawn from `pools` (all words of the source
    texts, by kind: `han` words are joined without a space, others with one).
    """
    pieces = edit_units(text)
    words = [i for i, p in enumerate(pieces) if is_word(p)]
    if not words:
        return text
    n_edits = max(1, round(rate * len(words)))
    for i in rng.sample(words, min(n_edits, len(words))):
        kind = word_kind(pieces[i])
        operation = rng.choice(("delete", "replace", "insert"))
        if operation == "delete":
            pieces[i] = ""
        elif operation == "replace":
            pieces[i] = rng.choice(pools[kind])
        else:
            pieces[i] += ("" if kind == "han" else " ") + rng.choice(pools[kind])
    return "".join(pieces)


def word_kind(word: str) -> str:
    """`han` for a word of an unspaced script, else `word`."""
    return "han" if has_han(word) or _KANA.search(word) else "word"


def synthetic_frame(
    sources: Sequence[tuple[str, str, str]], texts: DistinctTexts, copies: int, seed: int,
    rates: Sequence[float] = EDIT_RATES,
) -> pd.DataFrame:
    """Original vs edited copy for every (source text, edit rate, copy): a pair frame with
    `origin`, `name`, `group` (`text_group` of the original), `rate` (float), `a`, `b`, `exact`.

    sources: (origin, name, text). Each copy has its own seeded RNG, so adding sources or rates
    leaves the other copies unchanged.
    """
    pools: dict[str, list[str]] = {"han": [], "word": []}
    for _, _, text in sources:
        for piece in edit_units(text):
            if is_word(piece):
                pools[word_kind(piece)].append(piece)
    pools = {kind: words or ["x"] for kind, words in pools.items()}
    records = []
    for origin, name, text in sources:
        a, group = texts.add(text), text_group(text)
        for rate in rates:
            for copy in range(copies):
                rng = random.Random(f"{seed}:{origin}:{name}:{rate}:{copy}")
                b = texts.add(edit_words(text, rate, rng, pools))
                records.append(
                    {"origin": origin, "name": name, "group": group, "rate": rate,
                     "a": a, "b": b, "exact": a == b}
                )
    return pd.DataFrame.from_records(records)


def synthetic_sources(
    readability: Sequence[Page],
    aeb: Sequence[Page],
    peoples_daily: Sequence[str],
    limit: int | None,
    seed: int,
) -> list[tuple[str, str, str]]:
    """Long real article texts to copy: aeb bodies, readability articles, People's Daily
    (a seeded sample of `limit` of them when given)."""
    sources = [("aeb", p.label, p.article) for p in aeb]
    sources += [("readability", p.label, p.article) for p in readability]
    sources += [("peoples-daily", f"pd{i:04d}", t) for i, t in enumerate(peoples_daily)]
    sources = [s for s in sources if len(normalise(s[2])) >= SYNTHETIC_MIN_CHARS]
    if limit is not None and limit < len(sources):
        sources = random.Random(seed).sample(sources, limit)
    return sources
