"""HTML to the text that gets fingerprinted: a page's main content, or all its visible text.

Pure functions, no Spark. Two modes:

- ``main``: the page's main content (the article), without navigation, headers, footers,
  link lists and comments, by trafilatura's fast mode (a maintained extractor made for
  this; chosen against resiliparse, readability-lxml and trafilatura's default mode on 272
  real pages, see docs/extraction.md and ``bench/extractors.py``). Two pages of one site share their boilerplate; fingerprinting
  it would pull different articles of one site towards each other.
- ``all``: every visible text node (:func:`simhash_udf.core.html_text.html_to_text`), what the job
  did before ``--extract`` existed.

Nothing is lost: when the main-content extractor finds nothing (or fails) on a page that
has visible text, :func:`extract` falls back to all of it and says so, so that the job can
count the fallbacks instead of fingerprinting an empty document.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import NamedTuple

from simhash_udf.core.config import EXTRACT_MODES
from simhash_udf.core.html_text import html_to_text

# Pages larger than this are not given to the main-content extractor: its tree walk in
# Python grows with the page, and a multi-megabyte page (a data dump, a generated list) is
# rarely an article. Such pages get all their visible text (counted as a fallback).
# Real article pages are far below it (the largest of the 300 measured pages is 1.3 MB).
MAX_MAIN_HTML_CHARS = 3_000_000

_LOG = logging.getLogger(__name__)


class Extraction(NamedTuple):
    """The extracted text, and whether ``main`` fell back to all visible text."""

    text: str
    fallback: bool


# trafilatura's keyword arguments for `main_content`: comments out (they differ between two
# crawls of one article), tables in (content on many pages), `fast=True` (no readability and
# jusText fallbacks: measured on 272 real pages they changed the mean distance to the article
# by under 0.1 bit and cost a third more time, docs/extraction.md).
TRAFILATURA_ARGS: dict[str, object] = {
    "fast": True,
    "include_comments": False,
    "include_tables": True,
    "include_images": False,
    "include_links": False,
    "deduplicate": False,
    "output_format": "txt",
}


@lru_cache(maxsize=1)
def _trafilatura_options():  # -> trafilatura.settings.Extractor
    """TRAFILATURA_ARGS as one `Extractor`, built once per process.

    `trafilatura.extract(html, **kwargs)` builds an `Extractor` on every call, reading its
    configparser settings each time; passing a prebuilt one gives the same text (checked on
    the 272 real pages of bench/extractors.py and in tests/core/test_extract_options.py) about
    3% faster (issue 14). trafilatura copies it before changing anything (its recall retry).
    """
    from trafilatura.settings import Extractor

    a = TRAFILATURA_ARGS
    return Extractor(
        output_format=a["output_format"], fast=a["fast"], comments=a["include_comments"],
        tables=a["include_tables"], images=a["include_images"], links=a["include_links"],
        dedup=a["deduplicate"],
    )


def main_content(html: str) -> str:
    """The main content of a page as plain text, by trafilatura ("" when it finds none),
    with the settings of TRAFILATURA_ARGS."""
    import trafilatura

    return trafilatura.extract(html, options=_trafilatura_options()) or ""


def extract(html: str, mode: str = "main") -> Extraction:
    """Text of an HTML page in the given mode (``main`` or ``all``), with the fallback flag.

    ``main`` falls back to all visible text (``fallback=True``) when the page is larger than
    ``MAX_MAIN_HTML_CHARS``, when the extractor raises, or when it returns only whitespace
    while the page has visible text. A page without visible text gives ``""`` in either
    mode, without a fallback.
    """
    if mode == "all":
        return Extraction(html_to_text(html), False)
    if mode != "main":
        raise ValueError(f"extract mode must be one of {EXTRACT_MODES}, got {mode!r}")
    if not html.strip():
        return Extraction("", False)
    text = ""
    if len(html) <= MAX_MAIN_HTML_CHARS:
        try:
            text = main_content(html)
        except Exception as error:  # a third-party parser on arbitrary bytes: never fatal
            _LOG.debug("main-content extraction failed (%s); using all visible text", error)
            text = ""
    if text.strip():
        return Extraction(text, False)
    visible = html_to_text(html)
    return Extraction(visible, bool(visible.strip()))


def extract_text(html: str, mode: str = "main") -> str:
    """Text of an HTML page: ``main`` content (falling back to all visible text) or ``all``."""
    return extract(html, mode).text
