"""The real sets in ../shared/data (see its README.md), loaded for the quality benchmarks.

- `web/readability/test-pages/<name>/`: mozilla/readability's test pages (`source.html`, the
  article as `expected.html`, `expected-metadata.json` with the site's name);
- `web/aeb/`: the article-extraction-benchmark pages (`html/<key>.html.gz`) and their
  article text and URL (`ground-truth.json`);
- `pairs/pairs.jsonl.gz`: labelled sentence pairs (`dataset`, `lang`, `text_a`, `text_b`,
  `dup` 0/1 or null for graded pairs, `raw_label`);
- `pan13/pairs.jsonl.gz`: PAN-13 (`suspicious_text`, `source_text`) pairs sharing one passage.

Relative paths (`resolve`) are taken from the repository root, whatever the working directory.
"""

from __future__ import annotations

import gzip
import json
import random
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from simhash_udf.core.html_text import html_to_text

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path("../shared/data")
SENTENCE_PAIRS = "pairs/pairs.jsonl.gz"
PAN13_PAIRS = "pan13/pairs.jsonl.gz"
READABILITY = "web/readability/test-pages"
AEB = "web/aeb"
NEEDED = (SENTENCE_PAIRS, PAN13_PAIRS, f"{AEB}/ground-truth.json", f"{AEB}/html", READABILITY)
AEB_LABEL_CHARS = 12  # aeb keys are 64 hex digits: tables show the first 12


def resolve(path: Path) -> Path:
    """Relative paths are taken from the repository root, whatever the working directory."""
    return path if path.is_absolute() else (ROOT / path).resolve()


def check_data(data: Path) -> str | None:
    """An error message when the shared data is missing or incomplete, else None."""
    if not data.is_dir():
        return (
            f"error: shared data not found at {data}\n"
            "This benchmark measures on real data kept beside the project (../shared/data, see "
            "its README.md); pass --data PATH if it lives elsewhere."
        )
    missing = [name for name in NEEDED if not (data / name).exists()]
    if missing:
        return f"error: shared data at {data} is incomplete, missing: " + ", ".join(missing)
    return None


def read_jsonl_gz(path: Path) -> list[dict]:
    """All objects of a gzipped JSON Lines file."""
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def count_lines_gz(path: Path) -> int:
    """Non-empty lines of a gzipped text file."""
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        return sum(1 for line in lines if line.strip())


def _sample(rows: list[dict], max_rows: int | None, seed: int) -> list[dict]:
    """All rows, or a seeded random sample of `max_rows` of them."""
    if max_rows is not None and max_rows < len(rows):
        return random.Random(seed).sample(rows, max_rows)
    return rows


def load_sentence_pairs(path: Path, max_pairs: int | None, seed: int) -> list[dict]:
    """The labelled sentence pairs, or a seeded random sample of `max_pairs` of them."""
    return _sample(read_jsonl_gz(path), max_pairs, seed)


def load_pan13(path: Path, max_pairs: int | None, seed: int) -> list[dict]:
    """PAN-13 (suspicious, source) pairs sharing one verbatim passage, optionally sampled."""
    return _sample(read_jsonl_gz(path), max_pairs, seed)


@dataclass(frozen=True)
class Page:
    """A real web page and the article it carries.

    name: the readability folder or the aeb key; corpus: `readability` or `aeb`; html: the
    page's HTML; text: the page's text as the loader's `page_text` made it; article: the
    ground-truth article as visible text; site: the recorded site name (readability's
    `siteName`) or the URL's host (aeb), None when unknown; url: aeb's URL (None for
    readability, whose URL is only in its HTML).
    """

    name: str
    corpus: str
    html: str
    text: str
    article: str
    site: str | None
    url: str | None = None

    @property
    def label(self) -> str:
        """The name tables show: the folder, or an aeb key's first 12 hex digits."""
        return self.name[:AEB_LABEL_CHARS] if self.corpus == "aeb" else self.name


def load_readability(root: Path, page_text: Callable[[str], str] = html_to_text,
                     min_bytes: int = 5_000) -> list[Page]:
    """The readability test pages whose `source.html` has at least `min_bytes` (smaller
    folders are hand-made unit pages), sorted by folder name.

    page_text: how a page's HTML becomes its `text` (all visible text by default; bench/quality.py
    passes the job's `--extract main`); the article is always all visible text of `expected.html`.
    """
    pages = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        source, expected = folder / "source.html", folder / "expected.html"
        if not source.is_file() or not expected.is_file():
            continue
        if source.stat().st_size < min_bytes:
            continue
        site = None
        metadata = folder / "expected-metadata.json"
        if metadata.is_file():
            site = json.loads(metadata.read_text(encoding="utf-8")).get("siteName")
        html = source.read_text(encoding="utf-8", errors="replace")
        article = html_to_text(expected.read_text(encoding="utf-8", errors="replace"))
        pages.append(Page(folder.name, "readability", html, page_text(html), article, site))
    return pages


def load_aeb(root: Path, page_text: Callable[[str], str] = html_to_text) -> list[Page]:
    """The article-extraction-benchmark pages, sorted by key; `site` is the URL's host name.

    page_text: how a page's HTML becomes its `text` (as for `load_readability`).
    """
    truth = json.loads((root / "ground-truth.json").read_text(encoding="utf-8"))
    pages = []
    for key in sorted(truth):
        path = root / "html" / f"{key}.html.gz"
        if not path.is_file():
            continue
        html = gzip.decompress(path.read_bytes()).decode("utf-8", errors="replace")
        url = truth[key].get("url") or ""
        pages.append(Page(key, "aeb", html, page_text(html), truth[key].get("articleBody") or "",
                          urllib.parse.urlparse(url).netloc or None, url or None))
    return pages
