"""Pure tests of `simhash_udf.core.text`: bytes, HTML, normalisation and tokenisers (no Spark)."""

from __future__ import annotations

import html

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_udf.core.text import (
    char_tokens,
    decode_utf8,
    has_han,
    html_to_text,
    jieba_tokens,
    ngrams,
    normalise,
    tokens,
    word_tokens,
)

REPLACEMENT = "\ufffd"


# --- decode_utf8 -------------------------------------------------------------------------


def test_decode_valid_utf8_is_not_flagged() -> None:
    assert decode_utf8("naïve 中文 ✓".encode()) == ("naïve 中文 ✓", False)


def test_decode_none_is_none_and_not_flagged() -> None:
    assert decode_utf8(None) == (None, False)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"ab\xffcd", "ab\ufffdcd"),  # a byte that never occurs in UTF-8
        (b"x\xe4\xb8", "x\ufffd"),  # the first two bytes of a three-byte character (中)
        (b"\xc0\xafz", "\ufffd\ufffdz"),  # overlong encoding of '/'
        (b"\xed\xa0\x80", "\ufffd\ufffd\ufffd"),  # an encoded UTF-16 surrogate
    ],
)
def test_decode_invalid_bytes_become_replacement_and_are_flagged(raw: bytes, expected: str) -> None:
    assert decode_utf8(raw) == (expected, True)


@given(st.text())
@settings(max_examples=100)
def test_decode_round_trips_any_text(text: str) -> None:
    assert decode_utf8(text.encode("utf-8")) == (text, False)


@given(st.binary(max_size=64))
@settings(max_examples=200)
def test_decode_flag_means_the_bytes_did_not_round_trip(raw: bytes) -> None:
    text, flagged = decode_utf8(raw)
    assert isinstance(text, str)
    if flagged:
        assert REPLACEMENT in text
        assert text.encode("utf-8") != raw
    else:
        assert text.encode("utf-8") == raw


# --- html_to_text ------------------------------------------------------------------------


def test_html_drops_script_style_and_head() -> None:
    page = (
        "<html><head><title>Title words</title><style>p { color: red }</style>"
        "<script>var secret = 1;</script></head>"
        "<body><p>visible</p><script>alert('hidden')</script><style>.x{}</style>"
        "<noscript>enable javascript</noscript><template>tmpl</template>"
        "<svg><text>svgtext</text></svg><p>text</p></body></html>"
    )
    assert html_to_text(page).split() == ["visible", "text"]


@pytest.mark.parametrize(
    ("fragment", "expected"),
    [
        ("AT&amp;T", "AT&T"),
        ("&lt;b&gt;", "<b>"),
        ("&#x4e2d;&#x6587;", "中文"),
        ("&#20013;&#25991;", "中文"),
        ("caf&eacute;", "café"),
        ("&quot;q&quot;", '"q"'),
    ],
)
def test_html_decodes_entities(fragment: str, expected: str) -> None:
    assert html_to_text(fragment) == expected


@pytest.mark.parametrize(
    "page",
    [
        "<p>alpha</p><p>beta</p>",
        "<div>alpha</div><div>beta</div>",
        "<div>alpha<div>beta</div></div>",
        "<ul><li>alpha</li><li>beta</li></ul>",
        "<table><tr><td>alpha</td><td>beta</td></tr></table>",
        "<h1>alpha</h1>beta",
        "alpha<br>beta",
        "<p>alpha</p>\n\n<p>beta</p>",
    ],
)
def test_html_block_boundaries_separate_words(page: str) -> None:
    assert html_to_text(page).split() == ["alpha", "beta"]


def test_html_inline_tags_do_not_split_words() -> None:
    assert html_to_text("<p><b>T</b>his is <i>im</i>portant</p>").split() == [
        "This",
        "is",
        "important",
    ]


def test_html_noscript_in_head_is_dropped() -> None:
    page = (
        "<html><head><noscript>Enable JS</noscript></head>"
        "<body>Welcome</body></html>"
    )
    assert html_to_text(page).split() == ["Welcome"]


def test_html_title_stays_invisible_after_head_noscript_pixel() -> None:
    page = (
        "<html><head><noscript><img height=1 src=px.gif></noscript>"
        "<title>Site title</title></head><body><p>Body text</p></body></html>"
    )
    assert html_to_text(page).split() == ["Body", "text"]


def test_html_fragment_without_tags_is_its_text() -> None:
    assert html_to_text("just some words") == "just some words"


@pytest.mark.parametrize(
    "page",
    [
        "",
        "   ",
        "<html></html>",
        "<body></body>",
        "<script>only()</script>",
        "<!-- only a comment -->",
        "<html><head><title>only a title</title></head></html>",
        # A frameset document has no <body> at all.
        "<html><head><title>t</title></head><frameset><frame src=a></frameset></html>",
    ],
)
def test_html_without_visible_text_is_empty(page: str) -> None:
    assert html_to_text(page).strip() == ""


_PLAIN = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8", exclude_categories=("Cc", "Cs", "Co", "Cn")),
        st.sampled_from(" \t\n<>&\"'中文漢語"),
    ),
    max_size=40,
)


@given(_PLAIN)
@settings(max_examples=150, deadline=None)
def test_html_of_escaped_text_is_the_text(text: str) -> None:
    # The standard library's escaper is independent of the parser under test.
    assert normalise(html_to_text(html.escape(text))) == normalise(text)


# --- normalise ---------------------------------------------------------------------------


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


# --- tokenizers --------------------------------------------------------------------------


def test_has_han() -> None:
    assert has_han("abc 中 def")
    assert has_han("\u3400")  # CJK Extension A
    assert not has_han("abc")
    assert not has_han("ひらがな カタカナ")  # kana are not Han
    assert not has_han("한국어")
    assert not has_han("")


def test_jieba_segments_chinese_and_drops_punctuation_and_spaces() -> None:
    from simhash_udf.core.text import _jieba_tokenizer

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

    code = "from simhash_udf.core.text import jieba_tokens; print(jieba_tokens('我们在北京'))"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TMPDIR": str(tmp_path)}
    result = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['我们', '在', '北京']"
    assert result.stderr == ""
