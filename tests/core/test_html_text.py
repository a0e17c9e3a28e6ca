"""Pure tests of `simhash_udf.core.html_text`: HTML to the visible text a browser shows (no Spark)."""

from __future__ import annotations

import html

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_udf.core.html_text import html_to_text
from simhash_udf.core.normalise import normalise



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
