"""Inverse document frequencies of tokens: how much a token says about a text.

Han tokens take jieba's IDF table (the one `jieba.analyse.extract_tags` uses, with its median
for words it does not hold). Other tokens take -ln(frequency) from wordfreq's English list:
jieba's table holds no Latin-script words, and without it "the" and "of" would weigh as much
as any content word (they then decide most bits, and unrelated English pages collide; see
docs/defaults.md). Both scales are natural logs of an inverse frequency, so they mix.

Why arrays, not dicts: parsing jieba's 6 MB text table and importing wordfreq's list took
~0.7 s of every Python worker's first batch (most of the signatures stage of a small run, and
once per executor core on a cluster). The tables are derived once per installation, kept in
the table cache (`core/table_cache.py`) as words' xxh3 hashes, sorted, with their IDFs, and a
process reads them in milliseconds; a batch's new tokens are looked up by binary search. A
token that is in neither table takes the default only if no word's 64-bit hash equals its own
(a chance of about 1 in 5e13 per lookup against 350,000 words).
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xxhash

from simhash_udf.core.normalise import HAN
from simhash_udf.core.table_cache import cached_arrays, table_key

# wordfreq lists nothing rarer than ~1e-8; unknown words (names, typos, other languages'
# words) weigh as a word seen once in 10 million.
_RAREST_FREQUENCY = 1e-7
_RAREST_IDF = -math.log(_RAREST_FREQUENCY)


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


@dataclass(frozen=True)
class IdfTables:
    """The two IDF tables as sorted arrays (see the module docstring).

    han_hashes, han_values: jieba's words' xxh3 hashes (uint64, ascending) and IDFs (float64);
    han_median: its median IDF, the IDF of a Han token it does not hold. en_hashes, en_values:
    the same for wordfreq's English words more frequent than the rarest (others take its IDF).
    """

    han_hashes: np.ndarray
    han_values: np.ndarray
    han_median: float
    en_hashes: np.ndarray
    en_values: np.ndarray


def token_hash(token: str) -> int:
    """The key a token is looked up by: xxh3_64 (seed 0) of its UTF-8 bytes."""
    return xxhash.xxh3_64_intdigest(token.encode("utf-8"))


def _by_hash(table: dict[str, float]) -> tuple[np.ndarray, np.ndarray]:
    """(hashes ascending, values) of a word -> value table; raises ValueError if two words
    share a hash (the lookup could not tell them apart)."""
    hashes = np.fromiter((token_hash(word) for word in table), dtype=np.uint64, count=len(table))
    values = np.fromiter(table.values(), dtype=np.float64, count=len(table))
    order = np.argsort(hashes, kind="stable")
    hashes, values = hashes[order], values[order]
    if hashes.size and not np.all(hashes[1:] != hashes[:-1]):
        raise ValueError("two words of an IDF table share an xxh3 hash")
    return hashes, values


def derive_tables() -> dict[str, np.ndarray]:
    """The tables parsed from jieba's and wordfreq's files now (what the table cache keeps),
    as `IdfTables`' fields (han_median a one-element array)."""
    jieba = _parse_jieba_idf(_jieba_idf_file())
    median = sorted(jieba.values())[len(jieba) // 2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import wordfreq

        frequencies = wordfreq.get_frequency_dict("en", wordlist="best")
    english = {word: -math.log(f) for word, f in frequencies.items() if f > _RAREST_FREQUENCY}
    han_hashes, han_values = _by_hash(jieba)
    en_hashes, en_values = _by_hash(english)
    return {
        "han_hashes": han_hashes,
        "han_values": han_values,
        "han_median": np.array([median], dtype=np.float64),
        "en_hashes": en_hashes,
        "en_values": en_values,
    }


@functools.cache
def tables() -> IdfTables:
    """The IDF tables, once per process: read from the table cache, keyed by this module,
    jieba's table and the versions of wordfreq (whose lists ship in the package) and xxhash;
    derived (`derive_tables`) and stored when it has none."""
    versions = [f"{name} {importlib.metadata.version(name)}" for name in ("wordfreq", "xxhash", "numpy")]
    key = table_key("idf", [Path(__file__), _jieba_idf_file()], versions)
    arrays = cached_arrays("idf", key, derive_tables)
    return IdfTables(
        han_hashes=arrays["han_hashes"],
        han_values=arrays["han_values"],
        han_median=float(arrays["han_median"][0]),
        en_hashes=arrays["en_hashes"],
        en_values=arrays["en_values"],
    )


def _looked_up(hashes: np.ndarray, keys: np.ndarray, values: np.ndarray, default: float) -> np.ndarray:
    """values of hashes found among keys (sorted), default for the others."""
    if keys.size == 0:
        return np.full(hashes.size, default, dtype=np.float64)
    at = np.minimum(np.searchsorted(keys, hashes), keys.size - 1)
    return np.where(keys[at] == hashes, values[at], default)


def idf(token: str) -> float:
    """The inverse document frequency of one normalised (case-folded) token."""
    return idfs([token])[0]


def idfs(tokens: Sequence[str]) -> list[float]:
    """`idf` of many tokens at once (the batch path of `fingerprint.fingerprints` looks up
    every new feature of a batch): Han tokens in jieba's table, the others in the English one."""
    t = tables()
    count = len(tokens)
    hashes = np.fromiter((token_hash(token) for token in tokens), dtype=np.uint64, count=count)
    # An ASCII token holds no Han character: str.isascii is a flag read, the regex a scan (a
    # tenth of an English batch's time on its first pass, when most of its tokens are new).
    han = np.fromiter(
        (not token.isascii() and HAN.search(token) is not None for token in tokens), dtype=bool, count=count
    )
    out = np.empty(count, dtype=np.float64)
    out[han] = _looked_up(hashes[han], t.han_hashes, t.han_values, t.han_median)
    out[~han] = _looked_up(hashes[~han], t.en_hashes, t.en_values, _RAREST_IDF)
    return out.tolist()
