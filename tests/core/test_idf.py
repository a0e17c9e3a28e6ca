"""The IDF tables (`core/idf.py`): looked up by hash in sorted arrays kept in the table cache,
they give every token the IDF that jieba's and wordfreq's own loaders give it."""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest

from simhash_udf.core import idf
from simhash_udf.core.normalise import has_han
from simhash_udf.core.table_cache import CACHE_DIR_VARIABLE


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """An empty table cache, and `idf.tables` read afresh from it (and afresh after the test)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(folder))
    idf.tables.cache_clear()
    yield folder
    idf.tables.cache_clear()


def test_every_word_of_jiebas_table_takes_its_idf_and_other_han_tokens_its_median() -> None:
    import jieba.analyse

    reference = jieba.analyse.default_tfidf  # jieba's own loader of the table
    han_words = [word for word in reference.idf_freq if has_han(word)]
    assert len(han_words) > 200_000
    assert idf.idfs(han_words) == [reference.idf_freq[word] for word in han_words]
    unknown = ["龘龘龘", "北京天安门量子", "鿏鿏"]
    assert all(word not in reference.idf_freq for word in unknown)
    assert idf.idfs(unknown) == [reference.median_idf] * len(unknown)
    assert idf.idf("北京") == reference.idf_freq["北京"]


def test_other_tokens_take_minus_ln_of_their_english_frequency() -> None:
    import wordfreq

    frequencies = wordfreq.get_frequency_dict("en", wordlist="best")
    words = [word for word in frequencies if not has_han(word)]
    expected = [-math.log(max(frequencies[word], 1e-7)) for word in words]
    assert idf.idfs(words) == expected
    rng = random.Random(7)
    unknown = ["".join(rng.choice("qxzjvk") for _ in range(12)) for _ in range(200)] + ["", "ŋŋŋ"]
    unknown = [word for word in unknown if word not in frequencies]
    assert idf.idfs(unknown) == [-math.log(1e-7)] * len(unknown)
    # Function words stay light, rare words heavy.
    assert idf.idf("the") < idf.idf("harbour") < idf.idf("qqzzxxunknown")


def test_a_mixed_batch_takes_each_tokens_table_in_its_order() -> None:
    tokens = ["the", "北京", "qqzzxxunknown", "龘龘龘", "harbour", "北京"]
    assert idf.idfs(tokens) == [idf.idf(token) for token in tokens]
    assert idf.idfs([]) == []


def test_the_tables_are_derived_once_then_read_from_the_cache(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    derived = idf.tables()
    stored = list(cache.glob("idf-*.npz"))
    assert len(stored) == 1
    fresh = idf.derive_tables()
    assert np.array_equal(derived.han_hashes, fresh["han_hashes"])
    assert np.array_equal(derived.en_values, fresh["en_values"])
    # Another process reads the stored tables: deriving them again would fail here.
    idf.tables.cache_clear()

    def refuse() -> dict:
        raise AssertionError("derived again")

    monkeypatch.setattr(idf, "derive_tables", refuse)
    read = idf.tables()
    for field in ("han_hashes", "han_values", "en_hashes", "en_values"):
        assert np.array_equal(getattr(read, field), getattr(derived, field))
        assert getattr(read, field).dtype == getattr(derived, field).dtype
    assert read.han_median == derived.han_median
    assert np.all(read.han_hashes[1:] > read.han_hashes[:-1])  # sorted, no hash twice


def test_two_words_with_one_hash_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(idf, "token_hash", lambda token: len(token))
    with pytest.raises(ValueError, match="share an xxh3 hash"):
        idf._by_hash({"ab": 1.0, "cd": 2.0})
    hashes, values = idf._by_hash({"abc": 3.0, "a": 1.0})
    assert hashes.tolist() == [1, 3] and values.tolist() == [1.0, 3.0]
