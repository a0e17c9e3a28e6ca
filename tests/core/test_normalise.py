"""Pure tests of `simhash_udf.core.normalise`: the compared form of a text, and Han detection (no Spark)."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from helpers import peoples_daily
from simhash_udf.core.html_text import html_to_text
from simhash_udf.core.normalise import (
    REGIONAL_CHAIN,
    converter,
    fixed_point,
    has_han,
    normalise,
    regional_triggers,
    to_canonical_chinese,
    utf8_may_hold_han,
)
from simhash_udf.core.regional_triggers import MARK, marking_converter


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


def test_every_han_ideographs_utf8_may_hold_han_and_text_without_a_high_byte_does_not() -> None:
    """Every code point `HAN` matches (all of them, not a sample) against the byte test."""
    han = [chr(c) for c in range(0x3000, 0xA000) if has_han(chr(c))]
    assert len(han) == (0x4DBF - 0x3400 + 1) + (0x9FFF - 0x4E00 + 1)
    assert all(utf8_may_hold_han(c.encode("utf-8")) for c in han)
    assert not utf8_may_hold_han("Café — naïve “quotes” ½ ⼀ Ω ひ".encode()[:-3])  # all below 0xE3
    assert not utf8_may_hold_han(b"")


_BYTES_NEAR_HAN = st.lists(
    st.one_of(st.binary(max_size=6), st.sampled_from([c.encode() for c in "中㐀鿿䶿ひ⼀豈한\ufffd"])), max_size=8
).map(b"".join)


@given(_NORMALISE_INPUT, _BYTES_NEAR_HAN)
@settings(max_examples=300, deadline=None)
def test_bytes_that_cannot_hold_han_never_decode_to_han(text: str, raw: bytes) -> None:
    for data in (text.encode("utf-8"), raw, raw + text.encode("utf-8")):
        decoded = data.decode("utf-8", errors="replace")
        assert utf8_may_hold_han(data) or not has_han(decoded)


@given(st.text(alphabet=st.one_of(st.characters(exclude_categories=("Cs",)), st.sampled_from("⼀⼈豈﨎中ＡＢß \n")), max_size=30))
@example("⾺ é")  # 馬 after NFKC, 马 after the chain
@settings(max_examples=300, deadline=None)
def test_normalise_told_its_bytes_hold_no_han_is_normalise(text: str) -> None:
    """Kangxi radicals (U+2F00, UTF-8 from 0xE2) become Han ideographs under NFKC: the search
    after NFKC still runs when the bytes ruled Han out."""
    assert normalise(text, may_hold_han=utf8_may_hold_han(text.encode("utf-8"))) == normalise(text)


# One word as the mainland, Taiwan and Hong Kong write it, from general knowledge (dictionaries
# and usage, not OpenCC's output): (meaning, mainland, Taiwan, Hong Kong).
REGIONAL_WORDS = [
    ("software", "软件", "軟體", "軟件"),
    ("program", "程序", "程式", "程式"),
    ("network", "网络", "網路", "網絡"),
    ("information", "信息", "資訊", "資訊"),
    ("file", "文件", "檔案", "檔案"),
    ("mouse", "鼠标", "滑鼠", "滑鼠"),
    ("printer", "打印机", "印表機", "打印機"),
    ("video", "视频", "影片", "視頻"),
    ("taxi", "出租车", "計程車", "的士"),
    ("memory", "内存", "記憶體", "記憶體"),
    ("hard disk", "硬盘", "硬碟", "硬碟"),
    ("database", "数据库", "資料庫", "數據庫"),
    ("server", "服务器", "伺服器", "伺服器"),
    ("laser", "激光", "雷射", "激光"),
    ("optical disc", "光盘", "光碟", "光碟"),
    ("internet", "互联网", "網際網路", "互聯網"),
    ("blog", "博客", "部落格", "博客"),
    ("default", "默认", "預設", "預設"),
    ("menu", "菜单", "選單", "選單"),
    ("screen", "屏幕", "螢幕", "屏幕"),
    ("interface", "接口", "介面", "介面"),
    ("object", "对象", "物件", "物件"),
    ("source code", "源代码", "原始碼", "源代碼"),
    ("New Zealand", "新西兰", "紐西蘭", "新西蘭"),
    ("Italy", "意大利", "義大利", "意大利"),
]


# Words OpenCC 1.4.2's Taiwan phrase table does not hold: misses, kept in view.
OPENCC_GAPS = [
    ("pineapple", "菠萝", "鳳梨", "菠蘿"),
]


@pytest.mark.parametrize(
    ("meaning", "mainland", "taiwan", "hong_kong"),
    REGIONAL_WORDS + [pytest.param(*w, marks=pytest.mark.xfail(strict=True, reason="not in OpenCC's tables")) for w in OPENCC_GAPS],
)
def test_regional_spellings_of_one_word_normalise_to_one_string(meaning: str, mainland: str, taiwan: str, hong_kong: str) -> None:
    assert normalise(mainland) == normalise(taiwan) == normalise(hong_kong), meaning


@pytest.mark.parametrize(("meaning", "mainland", "taiwan", "hong_kong"), REGIONAL_WORDS)
def test_regional_words_stay_regional_words_inside_a_sentence(meaning: str, mainland: str, taiwan: str, hong_kong: str) -> None:
    # The same word between other words: the phrase tables must still find it.
    frame = "我们昨天说到{}的问题。", "我們昨天說到{}的問題。"
    assert normalise(frame[0].format(mainland)) == normalise(frame[1].format(taiwan)) == normalise(frame[1].format(hong_kong)), meaning


@pytest.mark.parametrize(
    ("words", "mainland", "taiwan"),
    [
        ("software / hardware", ("软件", "硬件"), ("軟體", "硬體")),
        ("network / information", ("网络", "信息"), ("網路", "資訊")),
        ("mouse / keyboard", ("鼠标", "键盘"), ("滑鼠", "鍵盤")),
        ("video / audio", ("视频", "音频"), ("影片", "音訊")),
        ("taxi / bus", ("出租车", "公交车"), ("計程車", "公車")),
        ("printer / scanner", ("打印机", "扫描仪"), ("印表機", "掃描器")),
        ("server / client", ("服务器", "客户端"), ("伺服器", "用戶端")),
    ],
)
def test_different_words_stay_different(words: str, mainland: tuple[str, str], taiwan: tuple[str, str]) -> None:
    assert normalise(mainland[0]) != normalise(mainland[1]), words
    assert normalise(taiwan[0]) != normalise(taiwan[1]), words


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("文档", "文件"),  # document / file; Taiwan writes 文件 / 檔案
        ("进程", "程序"),  # process / program; Taiwan writes 程序 / 程式
    ],
)
def test_mainland_words_taiwan_writes_as_each_other_stay_apart(one: str, other: str) -> None:
    # Taiwan's word for the first is the mainland's word for the second: a form that read
    # every text as Taiwan's would merge them.
    assert normalise(one) != normalise(other)


def _readability_article(shared_data: Path, folder: str) -> str:
    expected = shared_data / "web" / "readability" / "test-pages" / folder / "expected.html"
    return html_to_text(expected.read_text(encoding="utf-8"))


@pytest.mark.parametrize("folder", ["qq", "pixnet"])
def test_normalise_is_idempotent_on_a_real_page(shared_data: Path, folder: str) -> None:
    once = normalise(_readability_article(shared_data, folder))
    assert has_han(once)
    assert normalise(once) == once


@pytest.mark.parametrize("folder", ["qq", "gmw", "pixnet"])
def test_fast_and_piecewise_conversions_equal_the_whole_text_fixed_point_on_real_pages(shared_data: Path, folder: str) -> None:
    page = shared_data / "web" / "readability" / "test-pages" / folder / "source.html"
    for text in (_readability_article(shared_data, folder), html_to_text(page.read_text(encoding="utf-8"))):
        for config in (None, "s2twp", "s2hk", "s2tw"):
            reprint = converter(config).convert(text) if config else text
            expected = fixed_point(reprint, REGIONAL_CHAIN)
            assert to_canonical_chinese(reprint, fast=False) == expected
            assert to_canonical_chinese(reprint) == expected, config


# Words the fast path must see: regional words, words the chain rewrites (建立, 执行), a Taiwan
# word that meets its neighbour on the way back (电视 + 信号), 着 before a phrase (着书), clause
# ends, the mark itself, Latin text.
_CHAIN_WORDS = ["软件", "軟體", "程序", "程式", "文件", "檔案", "进程", "資料", "乾清宮", "。", "\n", "的", " ", "網路",
                "电视", "信号", "視訊", "着", "书", "盯", "建立", "执行", ",", "、", "“", MARK, "abc", "衞", "想象",
                "位于", "坦帕"]  # t2s's own phrase 於坦 keeps the 於 the chain writes for 于


@given(st.lists(st.sampled_from(_CHAIN_WORDS), max_size=20))
@example(["总部", "位于", "坦帕", "的"])  # a miss of the first trigger rule, found on the sentence pairs
@example(["盯", "着", "书", "架"])
@example(["电视", "信号"])
@settings(max_examples=300, deadline=None)
def test_fast_and_piecewise_conversions_equal_the_whole_text_fixed_point(words: list[str]) -> None:
    text = "".join(words)
    expected = fixed_point(text, REGIONAL_CHAIN)
    assert to_canonical_chinese(text, fast=False) == expected
    assert to_canonical_chinese(text) == expected


@pytest.mark.slow
def test_fast_conversion_equals_the_chain_on_every_clause_of_peoples_daily_and_its_reprints() -> None:
    # The fast path's claim on real text: a clause without a trigger ends where t2s puts it.
    # Oracle: every piece through the whole chain (fast=False, itself equal to fixed_point above).
    articles = peoples_daily()
    assert len(articles) > 800
    differing = []
    for article in articles:
        for config in (None, "s2twp", "s2hk", "s2tw"):
            text = converter(config).convert(article) if config else article
            fast, full = to_canonical_chinese(text), to_canonical_chinese(text, fast=False)
            if fast != full:
                differing.append((config, fast, full))
    assert differing == []


@pytest.mark.slow
def test_fast_conversion_equals_the_chain_on_every_chinese_sentence_pair_text(shared_data: Path) -> None:
    # Other Chinese than 1998 news: questions, bank and payment chats, product reviews (LCQMC,
    # BQ, ATEC, AFQMC, PAWS-X, STS-B, SOHU), as written and reprinted for Taiwan and Hong Kong.
    # One line a text; OpenCC converts the lines independently.
    texts = set()
    with gzip.open(shared_data / "pairs" / "pairs.jsonl.gz", "rt", encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            if row["lang"] == "zh":
                texts.update((row["text_a"].replace("\n", " "), row["text_b"].replace("\n", " ")))
    assert len(texts) > 100_000
    text = "\n".join(sorted(texts))
    for config in (None, "s2twp", "s2hk"):
        reprint = converter(config).convert(text) if config else text
        fast, full = to_canonical_chinese(reprint).split("\n"), to_canonical_chinese(reprint, fast=False).split("\n")
        assert [(a, b) for a, b in zip(fast, full) if a != b] == [], config


def test_marking_converter_marks_each_word_in_place_after_t2s() -> None:
    marking = marking_converter({"软件", "电视信号", "视讯"})
    text = "軟件和電視信號,视讯。軟"
    # t2s first (軟件 -> 软件), then each word (longest first) covered by one mark a character.
    assert marking.convert(text) == MARK * 2 + "和" + MARK * 4 + "," + MARK * 2 + "。软"


def test_text_without_han_never_reaches_opencc(monkeypatch) -> None:
    import simhash_udf.core.normalise as module

    def refuse(config: str) -> None:
        raise AssertionError(f"OpenCC {config} called")

    monkeypatch.setattr(module, "converter", refuse)
    monkeypatch.setattr(module, "regional_triggers", refuse)
    assert normalise("The Quick  brown FOX, ﬁne.") == "the quick brown fox, fine."


@pytest.mark.parametrize("folder", ["qq", "gmw"])
@pytest.mark.parametrize("config", ["s2twp", "s2hk", "s2tw"])
def test_sentences_and_their_regional_reprints_get_one_exact_key(shared_data: Path, folder: str, config: str) -> None:
    # A mainland article's sentences reprinted for Taiwan (script and phrases) or Hong Kong:
    # the reprint's normal form must equal the original's for nearly all of them (OpenCC's
    # tables are not symmetric everywhere, so not all).
    sentences = [s for s in re.split(r"(?<=[。！？])", _readability_article(shared_data, folder)) if has_han(s)]
    assert len(sentences) >= 10
    same = sum(normalise(s) == normalise(converter(config).convert(s)) for s in sentences)
    assert same >= 0.95 * len(sentences), f"{same} of {len(sentences)}"
    # ... where characters alone (today's t2s) fall short for the Taiwan phrases:
    if config == "s2twp":
        characters_only = sum(normalise(s, ("t2s",)) == normalise(converter(config).convert(s), ("t2s",)) for s in sentences)
        assert characters_only < same


def test_piecewise_conversion_falls_back_to_the_whole_text_when_a_piece_boundary_moves(monkeypatch) -> None:
    # A conversion that removed a full stop would join two pieces: the pieces no longer line
    # up, so the whole text is converted instead.
    import simhash_udf.core.normalise as module

    regional_triggers()  # computed with the real conversions, before they are replaced

    def drop_full_stop_before_two(text: str, chain: tuple[str, ...]) -> str:
        return text.replace("一。二", "一二")

    monkeypatch.setattr(module, "_convert", drop_full_stop_before_two)
    assert to_canonical_chinese("零。一。二。三", REGIONAL_CHAIN, fast=False) == "零。一二。三"
    # The fast path too: its clauses with a trigger (建立, 执行) go through the chain joined,
    # and one conversion of them no longer cuts into two.
    def drop_comma_before_execute(text: str, chain: tuple[str, ...]) -> str:
        return text.replace(",执行", "执行")

    monkeypatch.setattr(module, "_convert", drop_comma_before_execute)
    assert to_canonical_chinese("零,建立,执行。三", REGIONAL_CHAIN) == "零,建立执行。三"
