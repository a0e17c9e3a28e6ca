"""Pure tests of the side-by-side difference highlighting."""

from __future__ import annotations

import html
import re

from hypothesis import given
from hypothesis import strategies as st

from simhash_udf.report.textdiff import diff_tokens, highlight, side_by_side

MARK = re.compile(r"<mark[^>]*>(.*?)</mark>", re.S)


def _unmarked(fragment: str) -> str:
    return html.unescape(MARK.sub(r"\1", fragment))


@given(st.text())
def test_tokens_join_back_to_the_text(text):
    assert "".join(diff_tokens(text)) == text


@given(st.text(), st.text())
def test_highlighting_keeps_each_whole_text(a, b):
    left, right = highlight(a, b)
    assert _unmarked(left) == a
    assert _unmarked(right) == b


def test_only_the_changed_words_are_marked():
    left, right = highlight("the price is 10 dollars", "the price is 12 dollars")
    assert MARK.findall(left) == ["10"]
    assert MARK.findall(right) == ["12"]


def test_chinese_is_compared_by_character():
    left, right = highlight("今天天气很好", "今天天气不好")
    assert MARK.findall(left) == ["很"]
    assert MARK.findall(right) == ["不"]


def test_identical_texts_have_nothing_marked():
    assert "<mark" not in "".join(highlight("same text 同样", "same text 同样"))


def test_markup_in_texts_is_escaped():
    table = side_by_side("<script>x</script>", "<b>y</b>", "id <1>", "id 2")
    assert "<script>" not in table and "<b>" not in table
    assert "id &lt;1&gt;" in table
