"""Pure tests of `simhash_udf.core.config`: validation, and messages that name the parameter."""

from __future__ import annotations

import dataclasses

import pytest

from simhash_udf.core.config import ConfigError, DedupeConfig, FingerprintConfig
from simhash_udf.core.limits import MAX_K


def test_defaults_are_valid() -> None:
    config = DedupeConfig()
    assert config.k == 3
    assert config.blocks is None
    assert isinstance(config.fingerprint, FingerprintConfig)
    assert config.fingerprint.min_features >= 1


def test_config_error_is_a_value_error() -> None:
    assert issubclass(ConfigError, ValueError)


def test_configs_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        DedupeConfig().k = 5  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        FingerprintConfig().ngram = 2  # type: ignore[misc]


# --- DedupeConfig ------------------------------------------------------------------------


@pytest.mark.parametrize("k", [-1, MAX_K + 1, 64, 100])
def test_k_out_of_range(k: int) -> None:
    with pytest.raises(ConfigError, match=r"^k must") as info:
        DedupeConfig(k=k)
    assert str(k) in str(info.value)


@pytest.mark.parametrize("k", [0, 1, 3, MAX_K])
def test_k_in_range(k: int) -> None:
    DedupeConfig(k=k)  # accepted: no ConfigError (the refused neighbours are above)


@pytest.mark.parametrize(("k", "blocks"), [(3, 3), (3, 2), (0, 0), (5, 1), (3, 65), (3, -4)])
def test_blocks_must_exceed_k_and_fit_in_64_bits(k: int, blocks: int) -> None:
    with pytest.raises(ConfigError, match=r"^blocks must") as info:
        DedupeConfig(k=k, blocks=blocks)
    assert str(blocks) in str(info.value)


@pytest.mark.parametrize(("k", "blocks"), [(3, 4), (3, 31), (1, 64), (0, 64), (0, 1), (MAX_K, MAX_K + 1)])
def test_valid_blocks(k: int, blocks: int) -> None:
    DedupeConfig(k=k, blocks=blocks)  # accepted: no ConfigError


@pytest.mark.parametrize(("k", "blocks"), [(3, 64), (3, 33), (6, 40), (MAX_K, 64)])
def test_blocks_that_make_too_many_tables_are_refused(k: int, blocks: int) -> None:
    """C(blocks, k) tables are listed one by one: an explicit plan must stay listable."""
    with pytest.raises(ConfigError, match=r"^blocks=.*band tables"):
        DedupeConfig(k=k, blocks=blocks)


def test_keep_order_is_validated() -> None:
    with pytest.raises(ConfigError, match=r"^keep_order must"):
        DedupeConfig(keep_order="ascending")
    DedupeConfig(keep_order="desc")  # the other documented order is accepted


def test_keep_by_must_not_be_the_id_column() -> None:
    with pytest.raises(ConfigError, match=r"^keep_by"):
        DedupeConfig(id_col="url", keep_by="url")
    # Any other column is fine, including the default id name when the id is elsewhere.
    DedupeConfig(id_col="url", keep_by="id")
    DedupeConfig(keep_by="crawl_time")


def test_id_col_must_not_be_empty() -> None:
    with pytest.raises(ConfigError, match=r"^id_col"):
        DedupeConfig(id_col="")


def test_text_col_may_be_empty_only_with_precomputed_fingerprints() -> None:
    with pytest.raises(ConfigError, match=r"^text_col"):
        DedupeConfig(text_col="")
    DedupeConfig(text_col="", fingerprint_col="fp")  # accepted: no ConfigError


def test_invalid_fingerprint_config_fails_before_the_dedupe_config() -> None:
    with pytest.raises(ConfigError, match=r"^tokenizer must"):
        DedupeConfig(fingerprint=FingerprintConfig(tokenizer="spaces"))


# --- FingerprintConfig -------------------------------------------------------------------


@pytest.mark.parametrize("tokenizer", ["", "Jieba", "words", "whitespace"])
def test_bad_tokenizer(tokenizer: str) -> None:
    with pytest.raises(ConfigError, match=r"^tokenizer must") as info:
        FingerprintConfig(tokenizer=tokenizer)
    assert repr(tokenizer) in str(info.value)


@pytest.mark.parametrize("tokenizer", ["auto", "jieba", "word", "char"])
def test_good_tokenizers(tokenizer: str) -> None:
    FingerprintConfig(tokenizer=tokenizer)  # accepted: no ConfigError


@pytest.mark.parametrize("weighting", ["", "idf2", "TFIDF", "bm25"])
def test_bad_weighting(weighting: str) -> None:
    with pytest.raises(ConfigError, match=r"^weighting must"):
        FingerprintConfig(weighting=weighting)


@pytest.mark.parametrize("weighting", ["tfidf", "tf", "binary", "idf", "logtfidf"])
def test_good_weightings(weighting: str) -> None:
    FingerprintConfig(weighting=weighting)  # accepted: no ConfigError


@pytest.mark.parametrize("ngram", [0, -1, 17])
def test_bad_ngram(ngram: int) -> None:
    with pytest.raises(ConfigError, match=r"^ngram must") as info:
        FingerprintConfig(ngram=ngram)
    assert str(ngram) in str(info.value)


@pytest.mark.parametrize("ngram", [1, 2, 16])
def test_good_ngram(ngram: int) -> None:
    FingerprintConfig(ngram=ngram)  # accepted: no ConfigError (0 and 17 are refused above)


@pytest.mark.parametrize(
    ("field", "value"), [("min_features", 0), ("min_features", -3), ("max_chars", 0)]
)
def test_bad_sizes(field: str, value: int) -> None:
    with pytest.raises(ConfigError, match=rf"^{field} must"):
        FingerprintConfig(**{field: value})


def test_smallest_sizes_are_valid() -> None:
    FingerprintConfig(min_features=1, max_chars=1)  # accepted: no ConfigError (0 is refused above)
