"""Pure tests of `simhash_udf.core.normalise`: the compared form of a text, and Han detection (no Spark)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_udf.core.normalise import has_han, normalise



@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ＡＢＣ１２３", "abc123"),  # full-width letters and digits (NFKC)
        ("ＨＥＬＬＯ，ｗｏｒｌｄ！", "hello,world!"),  # full-width punctuation too
        ("ﬁne", "fine"),  # ligature
        ("e\u0301", "\u00e9"),  # combining accent composes
        ("①Ⅻ", "1xii"),  # compatibility characters
        ("Hello WORLD", "hello world"),
        ("Straße", "strasse"),  # case folding, not just lower()
        ("ΣΊΣΥΦΟΣ", "σίσυφοσ"),  # final sigma folds to σ
        ("  a \t\n b\u3000c\u2028d  ", "a b c d"),  # all whitespace, incl. ideographic space
        ("", ""),
    ],
)
def test_normalise_folds_forms_case_and_whitespace(text: str, expected: str) -> None:
    assert normalise(text) == expected


@pytest.mark.parametrize(
    ("traditional", "simplified"),
    [
        ("漢語", "汉语"),
        ("臺灣", "台湾"),
        ("我愛北京天安門", "我爱北京天安门"),
        ("這是一個測試", "这是一个测试"),
        ("頭髮", "头发"),
    ],
)
def test_normalise_traditional_to_simplified(traditional: str, simplified: str) -> None:
    assert normalise(traditional) == simplified
    assert normalise(simplified) == simplified


def test_normalised_text_never_holds_the_feature_separator() -> None:
    # fingerprint.py joins n-gram tokens with U+001F, relying on normalise removing it.
    assert normalise("a\x1fb\x1f \x1e") == "a b"
    assert "\x1f" not in normalise("\x1f".join(["北京", "天安门", "x"]))


def test_normalise_chinese_with_latin_and_full_width() -> None:
    assert normalise("ＨＴＭＬ５ 網頁\u3000標準") == "html5 网页 标准"


# Characters whose normal form is already known to be stable, mixed with arbitrary text.
_NORMALISE_INPUT = st.text(
    alphabet=st.one_of(
        st.characters(exclude_categories=("Cs",)),
        st.sampled_from("漢語臺灣愛國東體學門開ＡＢＣ１２ﬁßΣς \t\n\u3000\u00a0"),
    ),
    max_size=30,
)


@given(_NORMALISE_INPUT)
@settings(max_examples=300, deadline=None)
def test_normalise_is_idempotent(text: str) -> None:
    once = normalise(text)
    assert normalise(once) == once


@pytest.mark.parametrize("text", ["薴", "乾清宮", "幺麼"])
def test_normalise_is_idempotent_on_opencc_chains(text: str) -> None:
    once = normalise(text)
    assert normalise(once) == once


def test_normalise_traditional_and_simplified_spellings_agree_on_phrase_chains() -> None:
    assert normalise("參觀乾清宮") == normalise("参观乾清宫")


def test_has_han() -> None:
    assert has_han("abc 中 def")
    assert has_han("\u3400")  # CJK Extension A
    assert not has_han("abc")
    assert not has_han("ひらがな カタカナ")  # kana are not Han
    assert not has_han("한국어")
    assert not has_han("")
