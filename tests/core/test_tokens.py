"""Pure tests of `simhash_udf.core.tokens`: the tokenizers and n-grams (no Spark)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_udf.core.tokens import char_tokens, jieba_tokens, ngrams, tokens, word_tokens



def test_jieba_segments_chinese_and_drops_punctuation_and_spaces() -> None:
    from simhash_udf.core.tokens import _jieba_tokenizer

    text = "我爱北京天安门，天安门上太阳升。 今天 天气很好！"
    toks = jieba_tokens(text)
    # jieba's own segmentation, unfiltered, minus the punctuation and spaces named here.
    reference = _jieba_tokenizer().lcut(text, HMM=True)
    assert [t for t in reference if t not in {"，", "。", "！", " "}] == toks
    assert {"北京", "天安门", "天气"} <= set(toks)
    assert not {"，", "。", "！", " "} & set(toks)


def test_jieba_keeps_latin_words_and_numbers_inside_chinese() -> None:
    toks = jieba_tokens("我用python写代码, 版本 3.12 很好!  hello   world")
    assert "python" in toks
    assert "hello" in toks and "world" in toks
    assert "3.12" in toks
    assert "代码" in toks
    for tok in toks:
        assert tok.strip() == tok and tok, f"whitespace token {tok!r}"
        assert any(ch.isalnum() for ch in tok), f"punctuation-only token {tok!r}"


@given(
    st.text(
        alphabet=st.sampled_from(list("我爱北京天安门太阳升中文分词abc 12,.!?，。！、\n")),
        max_size=40,
    )
)
@settings(max_examples=100, deadline=None)
def test_jieba_tokens_are_in_order_non_overlapping_substrings(text: str) -> None:
    position = 0
    for tok in jieba_tokens(text):
        found = text.find(tok, position)
        assert found >= 0, f"{tok!r} not found after {position} in {text!r}"
        position = found + len(tok)
        assert any(ch.isalnum() for ch in tok)


def test_word_tokens() -> None:
    assert word_tokens("hello, world! it's 3.14 naïve café snake_case") == [
        "hello",
        "world",
        "it",
        "s",
        "3",
        "14",
        "naïve",
        "café",
        "snake_case",
    ]
    assert word_tokens("") == []
    assert word_tokens(" ,.;!? ") == []


def test_char_tokens_drop_whitespace_keep_punctuation() -> None:
    assert char_tokens("a b,\t中\n文 ") == ["a", "b", ",", "中", "文"]
    assert char_tokens("  \n") == []


@given(st.text(max_size=50))
@settings(max_examples=100)
def test_char_tokens_are_the_non_space_characters(text: str) -> None:
    assert "".join(char_tokens(text)) == "".join(text.split())


def test_auto_uses_jieba_on_han_runs_and_words_elsewhere() -> None:
    text = "你好世界 pi 3.14"
    # The two tokenizers disagree on this text, so the assertion tells them apart.
    assert word_tokens(text) == ["你好世界", "pi", "3", "14"]
    assert tokens(text, "jieba") == ["你好", "世界", "pi", "3.14"]
    assert tokens(text, "auto") == ["你好", "世界", "pi", "3", "14"]


def test_one_han_character_does_not_change_how_the_rest_is_split() -> None:
    """jieba cuts Hangul into syllables and accented words into pieces: `auto` keeps the
    words of a Korean or Portuguese page whole whatever Han character it quotes."""
    korean = "대한민국 정부는 오늘 새로운 경제 정책을 발표했다"
    portuguese = "a página inicial do jornal"
    for text in (korean, portuguese):
        assert tokens(text + " 美", "auto") == word_tokens(text) + ["美"]
        assert tokens(text + " 美", "jieba") != word_tokens(text) + ["美"]


def test_auto_uses_words_when_text_has_no_han() -> None:
    text = "pi is 3.14 ひらがな"
    assert jieba_tokens(text) != word_tokens(text)  # they differ here ("3.14")
    assert tokens(text, "auto") == ["pi", "is", "3", "14", "ひらがな"]
    assert tokens(text, "word") == ["pi", "is", "3", "14", "ひらがな"]


def test_char_tokenizer_by_name() -> None:
    assert tokens("ab 中", "char") == ["a", "b", "中"]


def test_unknown_tokenizer_is_rejected() -> None:
    with pytest.raises(ValueError, match="tokenizer"):
        tokens("abc", "whitespace")


# --- ngrams ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("items", "n", "expected"),
    [
        (["a", "b", "c"], 1, [("a",), ("b",), ("c",)]),
        (["a", "b", "c"], 2, [("a", "b"), ("b", "c")]),
        (["a", "b", "c"], 3, [("a", "b", "c")]),
        (["a", "b"], 3, [("a", "b")]),  # shorter than n: itself, once
        (["a"], 5, [("a",)]),
        ([], 1, []),
        ([], 3, []),
    ],
)
def test_ngrams(items: list[str], n: int, expected: list[tuple[str, ...]]) -> None:
    assert list(ngrams(items, n)) == expected


@given(st.lists(st.sampled_from("abcde"), max_size=12), st.integers(1, 6))
@settings(max_examples=150)
def test_ngrams_count_and_overlap(items: list[str], n: int) -> None:
    grams = list(ngrams(items, n))
    if not items:
        assert grams == []
    elif len(items) < n:
        assert grams == [tuple(items)]
    else:
        assert len(grams) == len(items) - n + 1
        assert all(len(g) == n for g in grams)
        # Each gram starts where its index says: rebuilding the sequence from the first
        # item of every gram plus the tail of the last gram gives the items back.
        assert [g[0] for g in grams] + list(grams[-1][1:]) == items


def test_jieba_loads_quietly_even_with_warnings_as_errors(tmp_path) -> None:
    """jieba 0.42 imports pkg_resources when it can (deprecated in recent setuptools) and logs
    its dictionary loading: neither may reach a user's console or break a strict run."""
    import subprocess
    import sys

    code = "from simhash_udf.core.tokens import jieba_tokens; print(jieba_tokens('我们在北京'))"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TMPDIR": str(tmp_path)}
    result = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['我们', '在', '北京']"
    assert result.stderr == ""
