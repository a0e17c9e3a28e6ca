"""`core.tokens.batch_tokens` against `tokens` text by text (no Spark).

The batch path splits texts without Han characters by numpy over their UTF-8 bytes, with a table
of the code points Python's `\\w` matches; these tests hold it to Python's own tokens: every
code point (1 to 4 UTF-8 bytes) on its own, and whole batches of mixed scripts, empty texts,
texts whose words touch across the batch and cut texts.
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_udf.core.normalise import HAN
from simhash_udf.core.tokens import _has_han, _utf8_word_tokens, batch_tokens, tokens


def test_every_code_point_is_a_token_exactly_when_pythons_word_class_holds_it() -> None:
    """Every code point but the surrogates (which UTF-8 cannot hold), one text each: its UTF-8
    decoded by the batch path and looked up gives one token exactly when Python's `\\w`
    matches it, and none otherwise."""
    code_points = np.arange(0x110000, dtype=np.int64)
    code_points = code_points[(code_points < 0xD800) | (code_points > 0xDFFF)]
    characters = [chr(c) for c in code_points.tolist()]
    python_word = np.array([re.fullmatch(r"\w", c) is not None for c in characters])
    found = _utf8_word_tokens(pa.array(characters))
    counts = np.diff(found.offsets.to_numpy())
    assert set(counts.tolist()) <= {0, 1}
    disagree = np.flatnonzero(python_word != (counts == 1))
    assert disagree.size == 0, [hex(int(code_points[i])) for i in disagree[:20]]
    assert found.flatten().to_pylist() == [c for c, w in zip(characters, python_word) if w]


def test_words_touching_across_texts_stay_in_their_own_texts() -> None:
    """The batch's texts lie end to end in one buffer: a word ending one text and a word
    starting the next are two tokens, and an empty text between them has none."""
    texts = ["ab", "cd", "", "é", "ü x", "-", "yz", "中文"]
    assert batch_tokens(texts, "word").to_pylist() == [["ab"], ["cd"], [], ["é"], ["ü", "x"], [], ["yz"], ["中文"]]


def test_a_slice_of_a_string_array_is_split_from_its_own_first_byte() -> None:
    """Arrow slices share the whole array's buffers; the split starts at the slice's offset."""
    whole = pa.array(["skip me", "one two", "", "three", "last words"])
    assert _utf8_word_tokens(whole.slice(1, 3)).to_pylist() == [["one", "two"], [], ["three"]]
    assert _utf8_word_tokens(whole.slice(5, 0)).to_pylist() == []


_SCRIPTS = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8", exclude_categories=("Cs",)),
        st.sampled_from(
            list("我们是中国人民银行北京天安门的了在和大学生活") + ["㐀", "鿖", "龘"]
            + list("abc xyz 019._-,。，!éÅ_") + ["\u0301", "한", "ﬁ", "①", "٣", "\u200d", "\n"]
        ),
    ),
    max_size=50,
)
_BATCHES = st.lists(st.one_of(st.none(), _SCRIPTS), max_size=8)


@pytest.mark.parametrize("ordered", [True, False])
@pytest.mark.parametrize("tokenizer", ["auto", "word", "char", "jieba"])
@given(texts=_BATCHES, max_chars=st.sampled_from([None, 1, 7, 1000]))
@settings(max_examples=150, deadline=None)
def test_batch_tokens_are_each_texts_tokens_in_order(
    texts: list[str | None], max_chars: int | None, tokenizer: str, ordered: bool
) -> None:
    expected = [tokens(t[:max_chars], tokenizer, ordered=ordered) if t else [] for t in texts]
    found = batch_tokens(texts, tokenizer, max_chars=max_chars, ordered=ordered)
    assert found.type == pa.list_(pa.string())
    assert found.to_pylist() == expected


def test_a_batch_mixing_han_and_other_texts_keeps_its_order() -> None:
    texts = ["hello, world!", "我们是中国人", None, "", "  café_au-lait 42 ", "北京 abc 天安门", "①②"]
    found = batch_tokens(texts, "auto").to_pylist()
    assert found == [tokens(t, "auto") if t else [] for t in texts]
    assert found[0] == ["hello", "world"] and found[4] == ["café_au", "lait", "42"]


def test_a_lone_surrogate_is_split_as_python_splits_it() -> None:
    """Arrow cannot hold a lone surrogate; the batch goes through Python instead."""
    texts = ["ab\ud800cd ef", "plain words"]
    assert batch_tokens(texts, "auto").to_pylist() == [["ab", "cd", "ef"], ["plain", "words"]]


@given(texts=st.lists(_SCRIPTS, max_size=8), start=st.integers(0, 3))
@settings(max_examples=200, deadline=None)
def test_the_han_check_on_bytes_agrees_with_the_han_pattern(texts: list[str], start: int) -> None:
    """`_has_han` searches only the strings with a byte a Han character's UTF-8 starts with;
    it finds what `HAN` finds in every string, a slice's included."""
    array = pa.array(texts, type=pa.string()).slice(min(start, len(texts)))
    expected = [HAN.search(t) is not None for t in texts[min(start, len(texts)):]]
    assert _has_han(array).tolist() == expected


def test_the_han_check_finds_the_first_and_last_han_characters_among_empty_texts() -> None:
    texts = ["", "\u3400", "", "", "a\u9fff", "\u33ff é 한", "", "\u4e00"]
    assert _has_han(pa.array(texts)).tolist() == [False, True, False, False, True, False, False, True]
