"""Frames of pairs the quality benchmarks score: each row a pair of texts by their index in
one `DistinctTexts`, `a` and `b` (ints), with `exact` (bool: equal normalised texts) and the
columns that label the pair (see each function).

bench/quality.py and bench/tune_defaults.py fingerprint every distinct text once per setting
and read each pair's distance off the two indices. Near-copies are bench/near_copies.py's.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd

from bench.datasets import Page
from simhash_udf.core.normalise import has_han, normalise

_SITE_PAGE = re.compile(r"^(?P<site>.+)-(?P<n>\d+)$")
# PAWS-X non-duplicates are word-order permutations of one bag of words, built to fool
# bag-of-words models: every simhash setting (and MinHash of unigrams) puts them near 0 by
# construction. Pooled into a language's rail they would measure PAWS-X's share of the pool,
# not the setting; the benchmarks report them on their own instead.
RAIL_EXCLUDED_DATASET_PREFIX = "PAWS"


@dataclass
class DistinctTexts:
    """Every distinct normalised text the pair frames need, each fingerprinted once per setting."""

    texts: list[str] = field(default_factory=list)
    _index: dict[str, int] = field(default_factory=dict)

    def add(self, raw: str) -> int:
        """Normalise a text and return its index (equal normalised texts share one)."""
        text = normalise(raw)
        if text not in self._index:
            self._index[text] = len(self.texts)
            self.texts.append(text)
        return self._index[text]

    @property
    def n_chars(self) -> int:
        """Characters over all distinct texts."""
        return sum(map(len, self.texts))


def text_group(text: str) -> str:
    """`han` for text the auto tokenizer sends to jieba (Chinese, Japanese), else `other`."""
    return "han" if has_han(text) else "other"


def sentence_pair_frame(rows: Sequence[dict], texts: DistinctTexts) -> pd.DataFrame:
    """One row per sentence pair: indices of both texts, labels, exact equality."""
    records = []
    for row in rows:
        a, b = texts.add(row["text_a"] or ""), texts.add(row["text_b"] or "")
        try:
            score = float(row["raw_label"]) if row["dup"] is None else None
        except (TypeError, ValueError):
            score = None
        records.append(
            {
                "dataset": row["dataset"],
                "lang": row["lang"],
                "dup": row["dup"],
                "score": score,
                "a": a,
                "b": b,
                "exact": a == b,
            }
        )
    return pd.DataFrame.from_records(records)


def sts_bucket(score: float) -> str:
    """STS-B's 0-5 score cut into [0,1) ... [3,4) and [4,5]."""
    low = min(int(score), 4)
    return f"[{low},{low + 1}{']' if low == 4 else ')'}"


def same_site_frame(
    readability: Sequence[Page], aeb: Sequence[Page], texts: DistinctTexts
) -> pd.DataFrame:
    """Pairs of different articles of one site, as full visible page text.

    readability: folders `<site>-N` sharing a prefix (plus a bare `<site>` folder), unless their
    recorded site names differ (lazy-image-1/2 and videos-1/2 are different sites);
    aeb: pages whose URLs share a host name.
    """
    records = []
    groups: dict[str, list[Page]] = {}
    for page in readability:
        match = _SITE_PAGE.match(page.name)
        groups.setdefault(match["site"] if match else page.name, []).append(page)
    for site, pages in groups.items():
        if not any(_SITE_PAGE.match(p.name) for p in pages):
            continue
        for x, y in itertools.combinations(pages, 2):
            if x.site and y.site and x.site != y.site:
                continue
            records.append(_doc_pair("readability", site, x, y, texts))
    by_host: dict[str, list[Page]] = {}
    for page in aeb:
        if page.site:
            by_host.setdefault(page.site, []).append(page)
    for host, pages in sorted(by_host.items()):
        for x, y in itertools.combinations(pages, 2):
            records.append(_doc_pair("aeb", host, x, y, texts))
    return pd.DataFrame.from_records(records)


def _doc_pair(source: str, site: str, x: Page, y: Page, texts: DistinctTexts) -> dict:
    """A same-site record: the two pages' full text."""
    a, b = texts.add(x.text), texts.add(y.text)
    pair = f"{x.label} / {y.label}"
    return {"source": source, "site": site, "pair": pair, "a": a, "b": b, "exact": a == b}


def page_article_frame(pages: Sequence[Page], source: str, texts: DistinctTexts) -> pd.DataFrame:
    """Each page's full visible text against its article text."""
    records = []
    for page in pages:
        if not page.article.strip():
            continue
        a, b = texts.add(page.text), texts.add(page.article)
        group = text_group(page.article)
        records.append(
            {"source": source, "name": page.label, "group": group, "a": a, "b": b, "exact": a == b}
        )
    return pd.DataFrame.from_records(records)


def pan13_frame(rows: Sequence[dict], texts: DistinctTexts) -> pd.DataFrame:
    """Suspicious vs source document (they share one verbatim passage)."""
    records = []
    for row in rows:
        a, b = texts.add(row["suspicious_text"]), texts.add(row["source_text"])
        records.append({"a": a, "b": b, "exact": a == b})
    return pd.DataFrame.from_records(records)


def unrelated_frame(docs: Sequence[tuple[int, str]], related: set[tuple[int, int]]) -> pd.DataFrame:
    """Every pair of distinct long documents of one script group not known to share text.

    docs: (corpus index, group). `related` holds (a, b) pairs, either order, to leave out (the
    PAN-13 pairs that share a passage). Pairs across groups (Chinese vs English) are left out:
    they are trivially far apart and would only dilute the rate.
    """
    unique = sorted(set(docs))
    records = []
    for (a, ga), (b, gb) in itertools.combinations(unique, 2):
        if a == b or ga != gb or (a, b) in related or (b, a) in related:
            continue
        records.append((a, b, ga))
    frame = pd.DataFrame.from_records(records, columns=["a", "b", "group"])
    frame["exact"] = False
    return frame


def other_site_frame(pages: pd.DataFrame, same_site: pd.DataFrame) -> pd.DataFrame:
    """Every pair of pages (one extraction mode) of one script group that is not a same-site pair.

    pages: a page <-> article frame (`a` is the page text, `group` its article's script group);
    same_site: that mode's same-site frame, whose pairs are left out. Pages of different sites
    share no article, so none of these pairs may merge; with all visible text they still share
    common boilerplate (menus, cookie notices) that main-content extraction drops.
    """
    docs = list(zip(pages["a"].tolist(), pages["group"].tolist()))
    return unrelated_frame(docs, set(zip(same_site["a"].tolist(), same_site["b"].tolist())))
