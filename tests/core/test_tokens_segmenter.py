"""The fast text path: rjieba against jieba token for token, the piecewise NFKC against
`unicodedata`, and the whitespace collapse against the regex it replaced (no Spark)."""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import peoples_daily
from simhash_udf.core.config import ConfigError, FingerprintConfig
from simhash_udf.core.fingerprint import fingerprints
from simhash_udf.core.normalise import nfkc, normalise
from simhash_udf.core.tokens import _segment, mixed_tokens, tokens

ROOT = Path(__file__).resolve().parents[2]


def _sample_chinese() -> list[str]:
    """The committed sample's documents that hold Chinese, normalised (Simplified and
    Traditional, full-width Latin, punctuation, digits: the mixed text of real pages)."""
    texts = []
    for line in (ROOT / "examples" / "sample.jsonl").read_text("utf-8").splitlines():
        text = json.loads(line).get("text") or ""
        if re.search(r"[\u4e00-\u9fff]", text):
            texts.append(normalise(text))
    return texts


# --- rjieba gives jieba's tokens ----------------------------------------------------------


def test_the_sample_has_enough_chinese() -> None:
    texts = _sample_chinese()
    assert len(texts) >= 20
    assert sum(len(t) for t in texts) > 10_000


@pytest.mark.parametrize("ordered", [True, False])
def test_rjieba_and_jieba_give_the_same_tokens_on_the_committed_sample(ordered: bool) -> None:
    for text in _sample_chinese():
        fast = mixed_tokens(text, "rjieba", ordered)
        slow = mixed_tokens(text, "jieba", ordered)
        assert fast == slow
        assert len(fast) > 20


def test_the_sample_is_segmented_not_cut_into_characters() -> None:
    """A guard on the test above: two engines that both failed (one token per character,
    or nothing) would also agree."""
    counts = Counter(t for text in _sample_chinese() for t in mixed_tokens(text, "rjieba"))
    multi = [t for t in counts if len(t) >= 2 and re.fullmatch(r"[\u4e00-\u9fff]+", t)]
    assert len(multi) > 100
    assert counts[normalise("服务器")] > 0 and counts["考研"] > 0  # 服务器 normalises to 伺服器


def test_fingerprints_do_not_depend_on_the_segmenter() -> None:
    texts = _sample_chinese()
    fast = fingerprints(texts, FingerprintConfig(segmenter="rjieba"))
    slow = fingerprints(texts, FingerprintConfig(segmenter="jieba"))
    for a, b in zip(fast, slow):
        assert a.tolist() == b.tolist()
    assert fast[1].all()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Extension A and U+9FD6..U+9FFF are outside jieba's range: one token each, where
        # jieba-rs left alone would keep 㐀㐁 and 鿖鿠 together.
        ("我们㐀㐁是中国人", ["我们", "㐀", "㐁", "是", "中国", "人"]),
        ("中国人民鿖鿠银行", ["中国", "人民", "鿖", "鿠", "银行"]),
        ("中华人民共和国abc龘龘1.3nm", ["中华人民共和国", "abc", "龘", "龘", "1", "3nm"]),
    ],
)
def test_han_outside_jiebas_range(text: str, expected: list[str]) -> None:
    for segmenter in ("rjieba", "jieba"):
        assert mixed_tokens(text, segmenter) == expected, segmenter
        assert sorted(mixed_tokens(text, segmenter, ordered=False)) == sorted(expected), segmenter


_MIXED = st.text(
    alphabet=st.sampled_from(
        list("我们是中国人民银行北京天安门的了在和大学生活") + ["㐀", "㐁", "鿖", "鿿", "龘"]
        + list("abc xyz 019._-,。，!é") + ["\u0301", "한", "국"]
    ),
    max_size=60,
)


@given(_MIXED)
@settings(max_examples=300, deadline=None)
def test_unordered_tokens_are_the_ordered_ones(text: str) -> None:
    """The one-call path for bags of words gives the same tokens, in another order."""
    for segmenter in ("rjieba", "jieba"):
        assert Counter(mixed_tokens(text, segmenter, ordered=False)) == Counter(mixed_tokens(text, segmenter))


def _segmented_run_by_run(text: str, segmenter: str) -> list[str]:
    """The definition of ordered tokens: each Han run segmented on its own, in text order,
    the other tokens between them."""
    found: list[str] = []
    position = 0
    for run in re.finditer(r"[\u4e00-\u9fd5]+", text):
        found += [t for t in re.findall(r"[\u3400-\u4dbf\u9fd6-\u9fff]|[^\W\u3400-\u4dbf\u4e00-\u9fff]+", text[position:run.start()])]
        found += _segment(run.group(), segmenter)
        position = run.end()
    found += re.findall(r"[\u3400-\u4dbf\u9fd6-\u9fff]|[^\W\u3400-\u4dbf\u4e00-\u9fff]+", text[position:])
    return found


@given(_MIXED)
@settings(max_examples=300, deadline=None)
def test_ordered_tokens_are_each_run_segmented_on_its_own(text: str) -> None:
    """mixed_tokens segments all runs in one call and cuts the result back at the spaces
    between them: the same tokens as one call per run, in text order."""
    for segmenter in ("rjieba", "jieba"):
        assert mixed_tokens(text, segmenter) == _segmented_run_by_run(text, segmenter)


@given(_MIXED)
@settings(max_examples=300, deadline=None)
def test_segmenters_agree_on_mixed_text(text: str) -> None:
    assert mixed_tokens(text, "rjieba") == mixed_tokens(text, "jieba")


def test_jieba_tokenizer_on_whole_text_uses_the_chosen_segmenter() -> None:
    """`--tokenizer jieba` hands the whole text over; there jieba-rs groups `1.3nm`."""
    assert tokens("芯片1.3nm工艺", "jieba", "jieba") == ["芯片", "1.3", "nm", "工艺"]
    assert tokens("芯片1.3nm工艺", "jieba", "rjieba") == ["芯片", "1.3nm", "工艺"]


def test_unknown_segmenter_is_refused() -> None:
    with pytest.raises(ConfigError, match="segmenter"):
        FingerprintConfig(segmenter="hanlp")


@pytest.mark.slow
def test_rjieba_gives_jiebas_tokens_on_peoples_daily() -> None:
    """Issue 3: a faster engine counts if it gives jieba's tokens on the corpus."""
    documents = [normalise(t) for t in peoples_daily()]
    assert len(documents) > 800
    total = 0
    for text in documents:
        fast = mixed_tokens(text, "rjieba")
        assert fast == mixed_tokens(text, "jieba")
        total += len(fast)
    assert total > 800_000


# --- normalisation: the faster forms equal the ones they replaced -------------------------

_UNICODE = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8", exclude_categories=("Cs",)),
        st.sampled_from(list("eaoAＡｅ１，。　\u0301\u0308\u0323\u1100\u1161\u11a8가각ﬁ①㍿Å中文龘")),
    ),
    max_size=40,
)


@given(_UNICODE)
@settings(max_examples=1000, deadline=None)
def test_piecewise_nfkc_equals_unicodedata(text: str) -> None:
    assert nfkc(text) == unicodedata.normalize("NFKC", text)


@pytest.mark.parametrize(
    "text",
    [
        "e\u0301",  # composes with the ASCII letter before it
        "中e\u0301\u0323x",  # marks reordered and composed after a Han character
        "ｅ\u0301，中",  # full-width letter: NFKC makes it ASCII, then it composes
        "\u1100\u1161\u11a8中",  # conjoining jamo compose into one Hangul syllable
        "中\u0301",  # a mark after Han stays
        "ﬁ㍿①Å",
    ],
)
def test_piecewise_nfkc_on_composition_cases(text: str) -> None:
    assert nfkc(text) == unicodedata.normalize("NFKC", text)


@given(st.text(alphabet=st.sampled_from(list("ab 中\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u2000\u2028\u3000")), max_size=30))
@settings(max_examples=500, deadline=None)
def test_whitespace_collapse_equals_the_regex(text: str) -> None:
    expected = re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text).casefold()).strip()
    assert normalise(text) == expected


# --- an index made before the segmenter setting -------------------------------------------


def _normalise_as_before(text: str) -> str:
    """normalise as it was written before the fast paths: NFKC, the Chinese conversion when Han, casefold, regex."""
    from simhash_udf.core.normalise import to_canonical_chinese

    text = unicodedata.normalize("NFKC", text)
    if re.search(r"[\u3400-\u4dbf\u4e00-\u9fff]", text):
        text = to_canonical_chinese(text)
    return re.sub(r"\s+", " ", text.casefold()).strip()


@pytest.mark.parametrize(
    "text",
    [
        "⼀個 radical",  # U+2F00 KANGXI RADICAL ONE: Han only after NFKC, then t2s (個 -> 个)
        "\uf900 compatibility ideograph 乾清宮",
        "Ｄｏｃｋｅｒ 部署　服務器",
        "plain ascii text … with an ellipsis",
        "",
    ],
)
def test_normalise_equals_its_definition(text: str) -> None:
    assert normalise(text) == _normalise_as_before(text)


@given(st.text(alphabet=st.sampled_from(list("ab 個體⼀⼆\uf900\uf901乾宮中，Ｄ\u0301\t\u3000…")), max_size=30))
@settings(max_examples=300, deadline=None)
def test_normalise_equals_its_definition_on_mixed_text(text: str) -> None:
    assert normalise(text) == _normalise_as_before(text)
