"""Baseline (a): the classic simhash recipe of the well-known blog post on text deduplication.

Implemented as the post gives it, not as this project would write it: jieba's full mode
(`cut_all=True`), the words joined by '|' and handed to `jieba.analyse.extract_tags` for the
top 100 keywords with their TF-IDF weights, each keyword hashed in Python character by
character (a 128-bit variant of CPython 2's string hash), and each of the 64 low bits adding
or subtracting the keyword's weight rounded up. Only the benchmarks use it.
"""

from __future__ import annotations

import logging
import math
import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # jieba 0.42 imports pkg_resources
    import jieba
    import jieba.analyse

jieba.setLogLevel(logging.WARNING)

_MASK_128 = (1 << 128) - 1
_MULTIPLIER = 1000003
_MASK_64 = (1 << 64) - 1


def string_hash(source: str) -> int:
    """The post's keyword hash: its low 64 bits, as an unsigned int."""
    if source == "":
        return 0
    x = ord(source[0]) << 7
    for c in source:
        x = ((x * _MULTIPLIER) ^ ord(c)) & _MASK_128
    x ^= len(source)
    if x == -1:  # kept from the post (CPython's hash never returns -1); never true here
        x = -2
    return x & _MASK_64


def recipe_simhash(text: str) -> int:
    """The post's 64-bit simhash of one text, as an unsigned int (0 for a text with no keywords)."""
    words = jieba.cut(text, cut_all=True)
    keywords = jieba.analyse.extract_tags("|".join(words), topK=100, withWeight=True)
    sums = [0] * 64
    for keyword, weight in keywords:
        h = string_hash(keyword)
        w = math.ceil(weight)
        # The post builds a 64-character bit string and walks it from the most significant bit.
        bits = bin(h).replace("0b", "").zfill(64)[-64:]
        for i, bit in enumerate(bits):
            sums[i] += w if bit == "1" else -w
    value = 0
    for total in sums:
        value = (value << 1) | (1 if total > 0 else 0)
    return value


def recipe_simhashes(texts: list[str]) -> list[int]:
    """`recipe_simhash` of each text, as signed 64-bit ints (the form a Spark long holds)."""
    out = []
    for text in texts:
        v = recipe_simhash(text)
        out.append(v - (1 << 64) if v >= 1 << 63 else v)
    return out
