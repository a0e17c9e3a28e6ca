"""`extract(html, "main")` on real pages (../shared/data/web, skipped when absent): the
article's text is in the output and the page's navigation and footer are not.

The article is the ground truth of the aeb pages (`articleBody`); the navigation and footer
texts are read from the page itself with lexbor, independently of the extractor: every text
run of at least 20 characters inside a <nav> or <footer> element (or an element whose role
is navigation or contentinfo) that the article does not contain.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser

from simhash_udf.core.extract import extract

BOILERPLATE = "nav, footer, [role=navigation], [role=contentinfo]"


def squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def aeb_pages(shared_data: Path, every: int = 4) -> list[tuple[str, str, str]]:
    root = shared_data / "web" / "aeb"
    truth = json.loads((root / "ground-truth.json").read_text(encoding="utf-8"))
    return [(name, gzip.decompress((root / "html" / f"{name}.html.gz").read_bytes()).decode("utf-8", "replace"),
             truth[name]["articleBody"]) for name in sorted(truth)[::every]]


def boilerplate_runs(html: str, article: str) -> set[str]:
    """Text runs of 20+ characters under nav/footer elements that the article lacks."""
    tree = LexborHTMLParser(html)
    for node in tree.css("script, style, noscript, template"):
        node.decompose()
    article = squash(article)
    runs = set()
    for node in tree.css(BOILERPLATE):
        for piece in node.text(deep=True, separator="\n").split("\n"):
            piece = squash(piece)
            if len(piece) >= 20 and piece not in article:
                runs.add(piece)
    return runs


def article_sentences(article: str) -> list[str]:
    return [s for s in (squash(x) for x in re.split(r"(?<=[.!?])\s+|\n+", article)) if len(s) >= 60]


def test_the_articles_sentences_are_in_the_main_text(shared_data: Path) -> None:
    pages = aeb_pages(shared_data)
    shares = []
    for name, html, article in pages:
        text = squash(extract(html, "main").text)
        sentences = article_sentences(article)
        if sentences:
            shares.append(sum(s in text for s in sentences) / len(sentences))
    assert len(shares) >= 40
    # most pages keep (nearly) all of their article: the median page all of it, 9 in 10 pages
    # at least 80% of its sentences (measured: trafilatura-fast loses whole articles on none)
    shares.sort()
    assert shares[len(shares) // 2] == 1.0
    assert sum(share >= 0.8 for share in shares) >= 0.9 * len(shares)


def test_navigation_and_footer_text_is_left_out(shared_data: Path) -> None:
    pages = aeb_pages(shared_data, every=2)
    checked = kept = 0
    with_boilerplate = 0
    for name, html, article in pages:
        runs = boilerplate_runs(html, article)
        if not runs:
            continue
        with_boilerplate += 1
        text = squash(extract(html, "main").text)
        checked += len(runs)
        kept += sum(run in text for run in runs)
    assert with_boilerplate >= 20 and checked >= 200  # the check has something to find
    assert kept <= 0.02 * checked, f"{kept} of {checked} nav/footer text runs kept"


def test_all_visible_text_keeps_the_navigation_the_main_text_drops(shared_data: Path) -> None:
    """The same runs are in `--extract all`'s text: what the test above finds missing from
    the main text was there to find."""
    name, html, article = next((p for p in aeb_pages(shared_data, every=2) if len(boilerplate_runs(p[1], p[2])) >= 10))
    runs = boilerplate_runs(html, article)
    everything = squash(extract(html, "all").text)
    main = squash(extract(html, "main").text)
    assert sum(run in everything for run in runs) >= 0.8 * len(runs)
    assert sum(run in main for run in runs) < 0.2 * len(runs)
