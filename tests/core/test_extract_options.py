"""`extract.main_content` passes trafilatura one prebuilt `Extractor` (issue 14) instead of
keyword arguments: the text must be what trafilatura's own keyword call gives, on every page
and in any order of calls (a shared options object must not carry state from one page to the
next). The reference is `trafilatura.extract(html, **TRAFILATURA_ARGS)`, trafilatura's public
keyword interface, called fresh each time.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import trafilatura

from simhash_udf.core import extract as extract_module
from simhash_udf.core.extract import TRAFILATURA_ARGS, main_content


def keyword_call(html: str) -> str:
    return trafilatura.extract(html, **TRAFILATURA_ARGS) or ""


def aeb_pages(shared_data: Path, every: int = 6) -> list[str]:
    root = shared_data / "web" / "aeb"
    truth = json.loads((root / "ground-truth.json").read_text(encoding="utf-8"))
    return [gzip.decompress((root / "html" / f"{name}.html.gz").read_bytes()).decode("utf-8", "replace")
            for name in sorted(truth)[::every]]


def readability_pages(shared_data: Path) -> list[str]:
    root = shared_data / "web" / "readability" / "test-pages"
    folders = ["nytimes-1", "yahoo-2", "wikipedia", "medium-1", "bbc-1", "royal-road", "ietf-1", "qq"]
    return [(root / f / "source.html").read_text(encoding="utf-8", errors="replace")
            for f in folders if (root / f / "source.html").exists()]


SMALL_PAGES = [
    "<html><body><article><p>" + "One sentence of an article, long enough to count. " * 12
    + "</p></article><footer>Copyright footer</footer></body></html>",
    "<html><body><nav><a href='/'>Home</a></nav><div class='post-content'>"
    + "<p>A paragraph with a comma, and some words in it to be kept.</p>" * 10 + "</div></body></html>",
    "<p>unclosed <div><b>bold",
    "plain text without any tag " * 50,
    "",
]


def test_the_prebuilt_options_give_the_keyword_calls_text_on_small_pages() -> None:
    for html in SMALL_PAGES:
        assert main_content(html) == keyword_call(html)


def test_the_prebuilt_options_give_the_keyword_calls_text_on_real_pages(shared_data: Path) -> None:
    pages = aeb_pages(shared_data) + readability_pages(shared_data)
    assert len(pages) >= 30
    # forwards, then backwards: the options object is shared by every call of the process
    ours = [main_content(html) for html in pages] + [main_content(html) for html in reversed(pages)]
    reference = [keyword_call(html) for html in pages]
    assert ours[: len(pages)] == reference
    assert ours[len(pages):] == list(reversed(reference))
    assert sum(1 for text in reference if text.strip()) >= len(pages) - 2  # a real comparison


def test_the_options_are_built_once_per_process() -> None:
    first = extract_module._trafilatura_options()
    main_content(SMALL_PAGES[0])
    assert extract_module._trafilatura_options() is first
    # and they say what TRAFILATURA_ARGS says
    assert first.fast is True and first.comments is False and first.tables is True
    assert first.images is False and first.links is False and not first.dedup
    assert first.format == "txt"
