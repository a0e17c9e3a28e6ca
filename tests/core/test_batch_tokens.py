"""`core.tokens.batch_tokens` against `tokens` text by text (no Spark).

The batch path splits texts without Han characters in Arrow (RE2) with a character class
written out from Python's `\\w`; these tests hold it to Python's own tokens: the class code
point by code point, and whole batches of mixed scripts, empty texts and cut texts.
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_udf.core.tokens import _non_word_run_re2, batch_tokens, tokens


def test_the_non_word_class_is_pythons_on_every_code_point() -> None:
    """Every code point but the surrogates (which UTF-8 cannot hold), one string each:
    RE2 matches it exactly when Python's `\\w` does not."""
    code_points = np.arange(0x110000, dtype=np.int64)
    code_points = code_points[(code_points < 0xD800) | (code_points > 0xDFFF)]
    characters = [chr(c) for c in code_points.tolist()]
    python_word = np.array([re.fullmatch(r"\w", c) is not None for c in characters])
    re2_non_word = pc.match_substring_regex(pa.array(characters), f"^{_non_word_run_re2()}$")
    disagree = np.flatnonzero(python_word == re2_non_word.to_numpy(zero_copy_only=False))
    assert disagree.size == 0, [hex(int(code_points[i])) for i in disagree[:20]]


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
