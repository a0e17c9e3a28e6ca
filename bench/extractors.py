"""Benchmark: main-content extractors on real pages, for `--extract main` (issue 4).

    .venv/bin/python -m bench.extractors [--repeats 3] [--quick] [--out docs/extraction.md]

Writes docs/extraction.md (and prints it); about 10 minutes. Needs the real pages in
../shared/data/web and the bench extra (`pip install -e '.[bench]'`: readability-lxml;
trafilatura and resiliparse are dependencies of the job itself).

Pages (`load_pages`, from bench/datasets.py's loaders):
- aeb: 181 news and blog pages with their article text (`ground-truth.json`, `articleBody`).
- readability: Mozilla readability's test pages taken from real sites: `source.html` with
  the article's `expected.html` (its visible text is the ground truth). The tiny hand-made
  unit pages are left out by size: every folder whose `source.html` is under 20 kB (all of
  them hand-made, the largest 14 kB; the smallest real page is 24 kB).

Extractors, each a function HTML -> text, run on the same pages in the same process:
- all: every visible text node (`html_text.html_to_text`, the job before `--extract`): the floor.
- trafilatura: `trafilatura.extract` with the job's arguments (`extract.TRAFILATURA_ARGS`:
  comments out, tables in) but its own readability/jusText fallback extractors on (`fast=False`).
- trafilatura-fast: `TRAFILATURA_ARGS` as they are (`fast=True`), trafilatura's keyword call;
  `extract.main_content` gives the same text with a prebuilt `Extractor` (issue 14).
- trafilatura-fast, favor_precision / favor_recall: trafilatura's two other focus settings.
- pre-pass invisible / boilerplate + trafilatura-fast (issue 14): lexbor (selectolax) drops
  scripts, styles, svg, iframes, ... (and with `boilerplate` also nav, footer, aside, form,
  header) with their content and re-serialises the page before trafilatura parses it.
- resiliparse: `extract_plain_text(html, main_content=True)`; with its boilerplate rules:
  also no comments, post meta, bullets or alt texts, and h1, figures, captions, related and
  share blocks skipped (`RESILIPARSE_SKIP`).
- lexbor-readability (issue 14, written here to see how far a cheap extractor gets): Mozilla
  readability's paragraph scoring and top-candidate corrections on lexbor, then trafilatura's
  own discard patterns (its `xpaths` token lists) cut from the chosen nodes.
- readability-lxml: `Document(html).summary()`, then its visible text (`html_to_text`).
- job (main): `simhash_udf.core.extract.extract(html, "main")`, what the job runs: the chosen
  extractor with the size cap and the fallback to all visible text.

Figures:
- speed: pages per CPU-second of this single-threaded process (= per core), median of
  `--repeats` passes over all pages (extractors interleaved in each pass).
- distance to the article: Hamming distance between the fingerprint of the extracted text
  and that of the ground-truth article (both `normalise.normalise`d, default `FingerprintConfig`);
  mean, median, share within k = 3. A page whose extraction is empty or too short to
  fingerprint counts as 64 bits away (and is counted as `empty`).
- same site, different articles: every pair of pages of one site whose ground-truth articles
  are different texts (word 5-gram Jaccard of the articles < 0.5); the share of those pairs
  whose extracted texts' fingerprints fall within k (should be ~0: shared boilerplate must
  not merge them). Site = the host of the page's URL (aeb: ground truth's `url`;
  readability: `<link rel=canonical>` or `og:url`, else the folder name without a trailing
  `-N`), reduced to its registered domain (last two labels, three under `co.uk`-like
  second levels).
- job rule recall: the share of pages the job merges with their article at its defaults
  (exact, within k, or the sketch route; `job_rule_recall`), bench/quality.py's measure.
- fallbacks: pages on which the extractor finds no text (the job would keep all visible text
  instead); the job's row counts its actual fallbacks (`extract(...).fallback`).
- choice (`choose`): the issue-14 rule, see docs/extraction.md's last section.
- robustness: pathological inputs (empty, garbage bytes, 100k unclosed tags, a million `<`,
  a 10 MB page) run in a child process each with a 120 s limit (wall clock): seconds taken, or the error.
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from functools import lru_cache
from datetime import datetime, timezone
from itertools import combinations
from pathlib import Path
from urllib.parse import urlparse

from bench.datasets import Page, load_aeb, load_readability
from bench.machine import cpu_model
from simhash_udf.core import extract as job_extract
from simhash_udf.core.fingerprint import fingerprint, hamming
from simhash_udf.core.html_text import html_to_text
from simhash_udf.core.normalise import normalise

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "web"
K = 3
MIN_REAL_PAGE_BYTES = 20_000
ROBUSTNESS_TIMEOUT_S = 120.0


# ---------------------------------------------------------------- data

_CANONICAL = re.compile(
    r"""<link[^>]*rel=["']?canonical["']?[^>]*href=["']([^"']+)["']|"""
    r"""<link[^>]*href=["']([^"']+)["'][^>]*rel=["']?canonical|"""
    r"""<meta[^>]*property=["']og:url["'][^>]*content=["']([^"']+)["']""",
    re.IGNORECASE,
)
_SECOND_LEVELS = {"co", "com", "org", "net", "ac", "gov", "edu", "ne", "or"}


def registered_domain(url_or_host: str) -> str:
    """`news.yahoo.com` -> `yahoo.com`, `www.bbc.co.uk` -> `bbc.co.uk` (a heuristic, no PSL)."""
    host = urlparse(url_or_host if "//" in url_or_host else "//" + url_or_host).hostname or ""
    labels = host.lower().split(".")
    if len(labels) >= 3 and len(labels[-1]) == 2 and labels[-2] in _SECOND_LEVELS:
        return ".".join(labels[-3:])
    return ".".join(labels[-2:])


def readability_site(folder: str, html: str) -> str:
    """The page's registered domain from its canonical URL, else its folder name less `-N`."""
    found = _CANONICAL.search(html)
    if found:
        url = next(g for g in found.groups() if g)
        if url.startswith("//"):
            url = "https:" + url
        if urlparse(url).hostname:
            return registered_domain(url)
    return re.sub(r"-\d+$", "", folder)


def load_pages(data: Path = DATA) -> list[Page]:
    """The aeb pages and the real-site readability pages, each with its site by this
    benchmark's rule (`registered_domain`, `readability_site`)."""
    aeb = [replace(p, site=registered_domain(p.url or "")) for p in load_aeb(data / "aeb")]
    readability = load_readability(data / "readability" / "test-pages", min_bytes=MIN_REAL_PAGE_BYTES)
    return aeb + [replace(p, site=readability_site(p.name, p.html)) for p in readability]


# ---------------------------------------------------------------- extractors

def _trafilatura(html: str, **changes: object) -> str:
    """trafilatura.extract with the job's arguments (`extract.TRAFILATURA_ARGS`), changed by `changes`."""
    import trafilatura

    return trafilatura.extract(html, **{**job_extract.TRAFILATURA_ARGS, **changes}) or ""


# The pre-pass (issue 14): lexbor (selectolax, already the job's parser for `--extract all`)
# parses the page and drops whole elements before trafilatura's own lxml parse, so that
# trafilatura's XPath pruning and tree walks see fewer nodes. Two strengths: elements that
# are never visible text, and those plus the usual boilerplate containers.
PREPASS_INVISIBLE = ["script", "style", "noscript", "template", "svg", "iframe", "object", "embed",
                     "canvas", "video", "audio", "picture", "source", "link", "meta"]
PREPASS_BOILERPLATE = PREPASS_INVISIBLE + ["nav", "footer", "aside", "form", "header"]


def prepass(html: str, tags: list[str]) -> str:
    """The page less the elements named in `tags` (with their content), re-serialised."""
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(html)
    tree.strip_tags(tags)
    return tree.html or ""


def _resiliparse(html: str) -> str:
    from resiliparse.extract.html2text import extract_plain_text

    return extract_plain_text(html, main_content=True)


# resiliparse's boilerplate rules at their strictest: no comment sections, post meta, list
# bullets or alt texts, and the elements that the articles' ground truth never holds skipped.
RESILIPARSE_SKIP = ["h1", "figure", "figcaption", "picture", "[class*=caption]", "[class*=related]",
                    "[class*=newsletter]", "[class*=share]", "[class*=social]"]


def _resiliparse_rules(html: str) -> str:
    from resiliparse.extract.html2text import extract_plain_text

    return extract_plain_text(html, main_content=True, comments=False, post_meta=False,
                              list_bullets=False, alt_texts=False, skip_elements=RESILIPARSE_SKIP)


def _readability(html: str) -> str:
    from readability import Document

    return html_to_text(Document(html).summary(html_partial=True))


# ---------------------------------------------------------------- lexbor-readability

# A candidate written for issue 14 to see how far a cheap extractor gets: readability's
# paragraph scoring (Arc90/Mozilla: each paragraph scores its parent fully and its grandparent
# by half, candidates are scaled by 1 - link density, siblings above a fifth of the best join
# it), then trafilatura's own discard patterns (its `xpaths` token lists: share, related,
# nav, author, ad, ... classes and ids, hidden elements) cut from the chosen nodes unless
# that would leave under a seventh of their text (trafilatura's guard). All of it on lexbor.
_LR_DROP = ["script", "style", "noscript", "template", "svg", "iframe", "object", "embed", "canvas",
            "video", "audio", "head", "nav", "footer", "aside", "button", "input", "select",
            "textarea", "figure", "figcaption", "h1", "title", "meta", "link"]
_LR_NOSCRIPT = re.compile(r"<noscript\b.*?(?:</noscript\s*>|$)", re.IGNORECASE | re.DOTALL)
_LR_POSITIVE = re.compile(r"article|body|content|entry|hentry|h-entry|main|page|pagination|post|text|blog|story", re.I)
_LR_NEGATIVE = re.compile(
    r"-ad-|hidden|^hid$| hid$| hid |^hid |banner|combx|comment|com-|contact|foot|footer|footnote|gdpr|"
    r"masthead|media|meta|outbrain|promo|related|scroll|share|shoutbox|sidebar|skyscraper|sponsor|"
    r"shopping|tags|tool|widget", re.I)
_LR_TAG_SCORE = {"div": 5, "pre": 3, "td": 3, "blockquote": 3, "address": -3, "ol": -3, "ul": -3,
                 "dl": -3, "dd": -3, "dt": -3, "li": -3, "form": -3, "h2": -5, "h3": -5, "h4": -5,
                 "h5": -5, "h6": -5, "th": -5}
_LR_HIDDEN = "[aria-hidden=true], [style*='display:none'], [style*='display: none'], [id*=hidden], [style*=hidden]"
_LR_DISCARDABLE = ", ".join(f"{t}[class], {t}[id], {t}[role]" for t in ("div", "p", "section", "span", "ul", "ol", "li"))
_LR_BLOCKS = ("address, article, aside, blockquote, br, caption, dd, details, dialog, div, dl, dt, "
              "fieldset, figcaption, figure, footer, form, h1, h2, h3, h4, h5, h6, header, hr, li, "
              "main, nav, ol, option, p, pre, section, summary, table, td, th, tr, ul")


@lru_cache(maxsize=1)
def _lr_discard_patterns() -> tuple[re.Pattern, re.Pattern, re.Pattern]:
    from trafilatura import xpaths as x

    ids = x._CONSENT_ID_CLASS_TOKENS + x._OVERALL_DISCARD_BOTH_TOKENS + x._OVERALL_DISCARD_ID_TOKENS
    classes = x._CONSENT_ID_CLASS_TOKENS + x._OVERALL_DISCARD_BOTH_TOKENS + x._OVERALL_DISCARD_CLASS_TOKENS
    # captions, credits, galleries and datelines: the articles' ground truth never holds them
    classes += ("caption", "credit", "gallery", "slideshow", "carousel", "dateline", "timestamp", "byline", "date")
    hidden = (r"^hide-|comments-title|nocomments|-reply-|message|akismet|suggest-links|-hide-|"
              r"hide-print| hidden| hide|noprint|notloaded")
    return re.compile("|".join(ids)), re.compile("|".join(classes)), re.compile(hidden)


def _outermost(nodes: list) -> list:
    """The nodes none of whose ancestors is among them (decomposing one frees its descendants)."""
    ids = {n.mem_id for n in nodes}
    kept = []
    for node in nodes:
        parent = node.parent
        while parent is not None and parent.mem_id not in ids:
            parent = parent.parent
        if parent is None:
            kept.append(node)
    return kept


def _class_weight(node) -> int:
    weight = 0
    for key in ("class", "id"):
        value = node.attributes.get(key)
        if value:
            weight += 25 * bool(_LR_POSITIVE.search(value)) - 25 * bool(_LR_NEGATIVE.search(value))
    return weight


def _link_density(node, text_length: int) -> float:
    if not text_length:
        return 0.0
    return sum(len(a.text(deep=True, strip=True)) for a in node.css("a")) / text_length


def _lr_discard(node) -> None:
    ids, classes, hidden = _lr_discard_patterns()
    bad = list(node.css(_LR_HIDDEN))
    for element in node.css(_LR_DISCARDABLE):
        attrs = element.attributes
        id_, class_, role = attrs.get("id") or "", attrs.get("class") or "", (attrs.get("role") or "").lower()
        if (id_ and ids.search(id_)) or (class_ and (classes.search(class_) or hidden.search(class_))) or "nav" in role:
            bad.append(element)
    outer = _outermost(bad)
    total = len(node.text(deep=True))
    if total - sum(len(e.text(deep=True)) for e in outer) > total / 7:
        for element in outer:
            element.decompose()


def lexbor_readability(html: str, climb: bool = True) -> str:
    """The candidate described above: HTML -> main text ("" when no paragraph scores)."""
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(_LR_NOSCRIPT.sub(" ", html))
    tree.strip_tags(_LR_DROP)
    body = tree.body
    if body is None:
        return ""
    scores: dict[int, float] = {}
    nodes: dict[int, object] = {}
    for para in body.css("p, pre, td, div, span, section"):
        # a div's own text (text nodes and <br>s, no <p>) is a paragraph too, as in readability
        deep = para.tag not in ("div", "span", "section")
        text = para.text(deep=deep, strip=True)
        if len(text) < 25:
            continue
        score = 1 + text.count(",") + text.count("，") + text.count("、") + min(len(text) / 100, 3)
        parent = para.parent
        grandparent = parent.parent if parent is not None else None
        for share, ancestor in ((1.0, parent), (0.5, grandparent)):
            if ancestor is None or ancestor.tag in ("html", "body"):
                break
            key = ancestor.mem_id
            if key not in scores:
                nodes[key], scores[key] = ancestor, _LR_TAG_SCORE.get(ancestor.tag, 0) + _class_weight(ancestor)
            scores[key] += score * share
    if not scores:
        return ""
    final = {k: s * (1 - _link_density(nodes[k], len(nodes[k].text(deep=True, strip=True)))) for k, s in scores.items()}
    top_id = max(final, key=final.__getitem__)
    top, top_score = nodes[top_id], final[top_id]
    if climb:
        top_id = _lr_climb(top_id, nodes, final)
        top, top_score = nodes[top_id], final[top_id]
    picked = [top]
    if top.parent is not None and top.parent.tag != "html":
        picked, threshold = [], max(10.0, top_score * 0.2)
        top_class = top.attributes.get("class")
        for sibling in top.parent.iter(include_text=False):
            score = final.get(sibling.mem_id)
            bonus = top_score * 0.2 if top_class and sibling.attributes.get("class") == top_class else 0
            if sibling.mem_id == top_id or (score is not None and score + bonus >= threshold):
                picked.append(sibling)
            elif sibling.tag == "p":
                text = sibling.text(deep=True, strip=True)
                density = _link_density(sibling, len(text))
                if (len(text) > 80 and density < 0.25) or (0 < len(text) <= 80 and density == 0 and re.search(r"\.( |$)", text)):
                    picked.append(sibling)
    return _lr_text(picked)


_LR_MIN_ALTERNATIVES = 3  # Mozilla readability's MINIMUM_TOPCANDIDATES (of its 5 top candidates)


def _lr_climb(top_id: int, nodes: dict, final: dict) -> int:
    """Mozilla readability's two corrections of the top candidate: when at least three of the
    four next candidates score >= 3/4 of it and share an ancestor with it (an article split into blocks), that
    ancestor; else a parent that scores higher than its child on the way up (stopping at a
    third of the top's score)."""
    top_score = final[top_id]
    close = sorted((k for k in final if k != top_id and final[k] >= 0.75 * top_score), key=final.__getitem__, reverse=True)[:4]
    if len(close) >= _LR_MIN_ALTERNATIVES:
        lineages = []
        for k in close:
            ids, node = set(), nodes[k].parent
            while node is not None and node.tag not in ("body", "html"):
                ids.add(node.mem_id)
                node = node.parent
            lineages.append(ids)
        node = nodes[top_id].parent
        while node is not None and node.tag not in ("body", "html"):
            if sum(node.mem_id in ids for ids in lineages) >= _LR_MIN_ALTERNATIVES:
                nodes.setdefault(node.mem_id, node)
                final.setdefault(node.mem_id, top_score)
                return node.mem_id
            node = node.parent
    last, node, best = top_score, nodes[top_id].parent, top_id
    while node is not None and node.tag not in ("body", "html"):
        score = final.get(node.mem_id)
        if score is not None:
            if score < top_score / 3:
                break
            if score > last:
                return node.mem_id
            last = score
        node = node.parent
    return best


def _lr_text(picked: list) -> str:
    parts = []
    for node in picked:
        _lr_discard(node)
        for block in node.css(_LR_BLOCKS):
            block.insert_before(" ")
            block.insert_after(" ")
        parts.append(node.text(separator="", strip=False))
    return " ".join(parts)


EXTRACTORS: dict[str, Callable[[str], str]] = {
    "all (visible text)": html_to_text,
    "trafilatura": lambda html: _trafilatura(html, fast=False),
    "trafilatura-fast": lambda html: _trafilatura(html),
    "trafilatura-fast, favor_precision": lambda html: _trafilatura(html, favor_precision=True),
    "trafilatura-fast, favor_recall": lambda html: _trafilatura(html, favor_recall=True),
    "pre-pass invisible + trafilatura-fast": lambda html: _trafilatura(prepass(html, PREPASS_INVISIBLE)),
    "pre-pass boilerplate + trafilatura-fast": lambda html: _trafilatura(prepass(html, PREPASS_BOILERPLATE)),
    "resiliparse": _resiliparse,
    "resiliparse, boilerplate rules": _resiliparse_rules,
    "lexbor-readability": lexbor_readability,
    "readability-lxml": _readability,
    "job: extract(main)": job_extract.extract_text,
}
# The candidates the choice is made among (the job's row is the chosen one, wrapped).
CANDIDATES = tuple(n for n in EXTRACTORS if n not in ("all (visible text)", "job: extract(main)"))
# The issue-14 targets (`choose`): pages within k of their article no fewer than trafilatura's
# 66% of issue 4, and extraction alone at >= 400 pages/s per core (so that the whole job can
# reach 250 pages/s per core).
TARGET_WITHIN_K = 0.66
TARGET_PAGES_PER_S = 400.0
# Issue 13's page <-> article recall target for the whole job (bench/quality.py, docs/quality.md).
TARGET_JOB_RECALL = 0.92


def _safe(extractor: Callable[[str], str], html: str) -> tuple[str, str | None]:
    try:
        return extractor(html) or "", None
    except Exception as error:  # noqa: BLE001 - a crash is a figure here
        return "", f"{type(error).__name__}: {error}"[:200]


# ---------------------------------------------------------------- measures

def fp(text: str) -> int | None:
    """The job's fingerprint of a text (normalised, default settings)."""
    return fingerprint(normalise(text))


def distance(a: int | None, b: int | None) -> int:
    """Hamming distance; 64 when either side has no fingerprint."""
    return 64 if a is None or b is None else hamming(a, b)


def shingles(text: str, n: int = 5) -> set[tuple[str, ...]]:
    words = re.findall(r"\w+", normalise(text))
    return {tuple(words[i : i + n]) for i in range(max(1, len(words) - n + 1))}


def different_article_pairs(pages: list[Page]) -> list[tuple[int, int]]:
    """Index pairs of pages of one site whose ground-truth articles are different texts."""
    by_site: dict[str, list[int]] = {}
    for i, page in enumerate(pages):
        by_site.setdefault(page.site, []).append(i)
    pairs = []
    for members in by_site.values():
        for i, j in combinations(members, 2):
            a, b = shingles(pages[i].article), shingles(pages[j].article)
            if len(a & b) / max(1, len(a | b)) < 0.5:
                pairs.append((i, j))
    return pairs


def speed(pages: list[Page], repeats: int) -> dict[str, float]:
    """Pages per CPU-second per extractor, median of `repeats` interleaved passes."""
    runs: dict[str, list[float]] = {name: [] for name in EXTRACTORS}
    for _ in range(repeats):
        for name, extractor in EXTRACTORS.items():
            start = time.process_time()
            for page in pages:
                _safe(extractor, page.html)
            runs[name].append(len(pages) / max(time.process_time() - start, 1e-9))
    return {name: statistics.median(values) for name, values in runs.items()}


def job_rule_recall(texts: list[str], articles: list[str]) -> float:
    """Share of pages that the job merges with their article at its defaults: exact copies,
    fingerprints within k, or the sketch route (`bench.job_rule.sketch_route`, default
    `SketchConfig`), what bench/quality.py reports as page <-> article recall (issue 13's
    target: >= 92%; the short-text check, which only drops pairs under 300 characters, is
    left out)."""
    import numpy as np

    from bench.job_rule import sketch_route
    from simhash_udf.core.config import FingerprintConfig, SketchConfig
    from simhash_udf.core.fingerprint import signatures

    n, sketch_config = len(texts), SketchConfig()
    normalised = [normalise(t) for t in texts] + [normalise(t) for t in articles]
    signed = signatures(normalised, FingerprintConfig(), sketch_config)
    a, b = np.arange(n), np.arange(n, 2 * n)
    prints = signed.fingerprint.astype(np.uint64)
    dist = np.array([hamming(int(x), int(y)) for x, y in zip(prints[a], prints[b])])
    both = signed.has_fingerprint[a] & signed.has_fingerprint[b]
    lengths = np.array([len(t) for t in normalised])
    routed, _ = sketch_route(a, b, dist, both, lengths, signed.sketch, sketch_config)
    exact = np.array([normalised[i] == normalised[n + i] for i in range(n)])
    return float((exact | (both & (dist <= K)) | routed).mean())


def quality(pages: list[Page], pairs: list[tuple[int, int]]) -> dict[str, dict]:
    """Distances to the article, per corpus and overall, same-site false merges, and the
    job rule's page <-> article recall."""
    truth = [fp(page.article) for page in pages]
    result: dict[str, dict] = {}
    for name, extractor in EXTRACTORS.items():
        outputs = [_safe(extractor, page.html) for page in pages]
        prints = [fp(text) for text, _ in outputs]
        dists = [distance(p, t) for p, t in zip(prints, truth)]
        row: dict = {
            "errors": [f"{pages[i].name}: {e}" for i, (_, e) in enumerate(outputs) if e],
            "empty": sum(1 for p in prints if p is None),
            # pages where the job would fall back to all visible text: the extractor found no
            # text (the job's own row: `extract(html, "main").fallback`, which adds the size cap)
            "fallbacks": (sum(job_extract.extract(page.html, "main").fallback for page in pages)
                          if name == "job: extract(main)" else sum(1 for text, _ in outputs if not text.strip())),
            "distances": dists,
            "false_merges": sum(1 for i, j in pairs if distance(prints[i], prints[j]) <= K),
            "job_recall": job_rule_recall([text for text, _ in outputs], [page.article for page in pages]),
        }
        for corpus in ("aeb", "readability", "both"):
            d = [x for x, page in zip(dists, pages) if corpus in ("both", page.corpus)]
            row[corpus] = {
                "pages": len(d), "mean": statistics.fmean(d), "median": statistics.median(d),
                "within_k": sum(1 for x in d if x <= K) / len(d),
            }
        result[name] = row
    result["_truth_false_merges"] = {
        "count": sum(1 for i, j in pairs if distance(truth[i], truth[j]) <= K)
    }
    return result


# Where trafilatura-fast's time goes (`profile_job`): cProfile's cumulative seconds of these
# functions (module path suffix, function name), largest first; they overlap where one calls
# another (the XPath pruning runs inside the main extractor too).
PROFILE_PARTS = {
    "XPath pruning (htmlprocessing.prune_unwanted_nodes)": ("trafilatura/htmlprocessing.py", "prune_unwanted_nodes"),
    "main extractor (main_extractor.extract_content)": ("trafilatura/main_extractor.py", "extract_content"),
    "tree cleaning and tag conversion (core._prepare_tree)": ("trafilatura/core.py", "_prepare_tree"),
    "link density tests (htmlprocessing.delete_by_link_density)": ("trafilatura/htmlprocessing.py", "delete_by_link_density"),
    "HTML parse (utils.load_html: lxml, repair)": ("trafilatura/utils.py", "load_html"),
    "baseline and page measure (baseline.html2txt, baseline.baseline)": ("trafilatura/baseline.py", "html2txt"),
    "recovery of wild paragraphs (main_extractor.recover_wild_text)": ("trafilatura/main_extractor.py", "recover_wild_text"),
    "text output (core.determine_returnstring)": ("trafilatura/core.py", "determine_returnstring"),
    "tree copies (copy.copy, copy.deepcopy)": ("copy.py", "copy"),
}


def profile_job(pages: list[Page]) -> tuple[float, dict[str, float]]:
    """One cProfile'd pass of `extract.main_content` over the pages: total seconds and each
    PROFILE_PARTS entry's cumulative share of it."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    for page in pages:
        _safe(job_extract.main_content, page.html)
    profiler.disable()
    stats = pstats.Stats(profiler).stats  # (file, line, name) -> (cc, nc, tottime, cumtime, callers)
    total = max(cum for (_, _, name), (_, _, _, cum, _) in stats.items() if name == "main_content")
    shares = {}
    for label, (suffix, function) in PROFILE_PARTS.items():
        seconds = sum(cum for (path, _, name), (_, _, _, cum, _) in stats.items()
                      if name == function and path.endswith(suffix))
        if function == "copy":
            seconds += sum(cum for (path, _, name), (_, _, _, cum, _) in stats.items()
                           if name == "deepcopy" and path.endswith(suffix))
        if function == "html2txt":
            seconds += sum(cum for (path, _, name), (_, _, _, cum, _) in stats.items()
                           if name == "baseline" and path.endswith(suffix))
        shares[label] = seconds / total
    return total, shares


def pathological_inputs(pages: list[Page]) -> dict[str, str]:
    """Inputs an extractor must survive: the names say what they are."""
    rng = random.Random(4)
    largest = max(pages, key=lambda p: len(p.html)).html
    return {
        "empty": "",
        "whitespace": " \n\t " * 100,
        "garbage 200 kB": bytes(rng.randrange(256) for _ in range(200_000)).decode("latin-1"),
        "100k unclosed <div>": "<div>" * 100_000 + "text",
        "1M '<'": "<" * 1_000_000,
        "plain text 100 kB": "word " * 20_000,
        f"10 MB page ({len(largest) // 10**6} MB page x {10**7 // len(largest) + 1})":
            largest * (10**7 // len(largest) + 1),
    }


def _child(name: str, html: str, queue: multiprocessing.Queue) -> None:
    start = time.process_time()
    text, error = _safe(EXTRACTORS[name], html)
    queue.put((time.process_time() - start, len(text), error))


def robustness(pages: list[Page]) -> dict[str, dict[str, str]]:
    """Per input and extractor: 'X.XX s' (CPU), 'error: ...', or 'timeout'."""
    context = multiprocessing.get_context("fork")
    table: dict[str, dict[str, str]] = {}
    for label, html in pathological_inputs(pages).items():
        table[label] = {}
        for name in EXTRACTORS:
            queue = context.Queue()
            child = context.Process(target=_child, args=(name, html, queue))
            child.start()
            child.join(ROBUSTNESS_TIMEOUT_S)
            if child.is_alive():
                child.kill()
                child.join()
                table[label][name] = f"timeout > {ROBUSTNESS_TIMEOUT_S:.0f} s"
            elif child.exitcode != 0 or queue.empty():
                table[label][name] = f"crashed (exit {child.exitcode})"
            else:
                seconds, chars, error = queue.get()
                table[label][name] = f"error: {error}" if error else f"{seconds:.2f} s"
    return table


# ---------------------------------------------------------------- choice and report

def eligible(q: dict[str, dict], pages_per_s: dict[str, float]) -> list[str]:
    """Candidates that meet the quality bars: no same-site pair within k, no errors on the
    real pages, at least as many pages within k of their article as INCUMBENT in the same run
    (issue 14: "no lower than today's 66%") and a job rule recall of TARGET_JOB_RECALL or more
    (issue 13's page <-> article target)."""
    bar = q[INCUMBENT]["both"]["within_k"]
    return [n for n in CANDIDATES if q[n]["false_merges"] == 0 and not q[n]["errors"]
            and q[n]["both"]["within_k"] >= bar and q[n]["job_recall"] >= TARGET_JOB_RECALL]


# The extractor the job runs today (issue 4's choice), `simhash_udf.core.extract.main_content`.
INCUMBENT = "trafilatura-fast"


def choose(q: dict[str, dict], pages_per_s: dict[str, float]) -> str:
    """The job changes extractor only for one that meets both issue-14 targets (eligible and
    at least TARGET_PAGES_PER_S): the fastest such (within 10% of its speed, the first in
    EXTRACTORS' order). Otherwise it keeps INCUMBENT, if still eligible: a new extractor
    changes the fingerprint of every HTML page, an index's included, which a speed-up short
    of the target does not pay for. Without an eligible incumbent, issue 4's rule: the
    smallest mean distance (within 0.5 bits a tie), then speed."""
    good = eligible(q, pages_per_s)
    fast = [n for n in good if pages_per_s[n] >= TARGET_PAGES_PER_S]
    if fast:
        fastest = max(pages_per_s[n] for n in fast)
        return next(n for n in fast if pages_per_s[n] >= 0.9 * fastest)
    if INCUMBENT in good:
        return INCUMBENT
    safe = [n for n in CANDIDATES if q[n]["false_merges"] == 0 and not q[n]["errors"]] or list(CANDIDATES)
    best = min(q[n]["both"]["mean"] for n in safe)
    tied = [n for n in safe if q[n]["both"]["mean"] <= best + 0.5]
    return max(tied, key=lambda n: pages_per_s[n])


def _site_pairs(pages: list[Page], pairs: list[tuple[int, int]]) -> list[tuple[str, int]]:
    """(site, number of different-article pairs) per site, most pairs first."""
    counts: dict[str, int] = {}
    for i, _ in pairs:
        counts[pages[i].site] = counts.get(pages[i].site, 0) + 1
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def render(pages, pairs, q, pages_per_s, robust, repeats, seconds, profile) -> str:
    n_aeb = sum(p.corpus == "aeb" for p in pages)
    chosen = choose(q, pages_per_s)
    lines = [
        "# Main-text extraction: which extractor, measured",
        "",
        "Written by `.venv/bin/python -m bench.extractors` "
        f"({datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {seconds:.0f} s, {cpu_model()}, "
        f"one process; speed = median of {repeats} passes). Do not edit by hand.",
        "",
        f"Pages: {n_aeb} aeb pages and {len(pages) - n_aeb} readability test pages from real "
        f"sites (see the script's docstring for the selection rule). Distance = Hamming distance "
        f"between the fingerprint of the extracted text and that of the page's ground-truth "
        f"article (`normalise.normalise`, default fingerprint settings; no fingerprint = 64). "
        f"Same-site pairs: {len(pairs)} pairs of pages of one site whose articles differ; "
        f"the ground-truth articles themselves have {q['_truth_false_merges']['count']} of them within k. "
        f"Job rule recall: the share of pages the job merges with their article at its defaults "
        f"(exact, within k, or the sketch route: `job_rule_recall`), the page <-> article recall "
        f"of bench/quality.py, whose issue-13 target is 92%; an empty output merges nothing. "
        f"Fallbacks: pages on which the extractor finds no text (the job's row: its actual fallbacks).",
        "",
        "Same-site grouping rule: a page's site is the registered domain of its URL (aeb: the "
        "ground truth's `url`; readability: the page's `<link rel=canonical>` or `og:url`, else "
        "its folder name without a trailing `-N`); pages of one site form pairs when their "
        "ground-truth articles share under half their word 5-grams (different articles). "
        "Sites with pairs: " + ", ".join(f"{site} {n}" for site, n in _site_pairs(pages, pairs)) + ".",
        "",
        "Speed: one process on a 2-core machine shared with other jobs; the extractors are "
        "interleaved in every pass, so their ratios hold better than the absolute figures.",
        "",
        f"| extractor | pages/s per core | mean distance | median | within k={K} | aeb mean | aeb within k "
        f"| readability mean | readability within k | job rule recall | empty | fallbacks | errors | same-site pairs within k |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in EXTRACTORS:
        r = q[name]
        lines.append(
            f"| {name}{' (chosen)' if name == chosen else ''} | {pages_per_s[name]:,.1f} | "
            f"{r['both']['mean']:.1f} | {r['both']['median']:.0f} | {r['both']['within_k']:.1%} | "
            f"{r['aeb']['mean']:.1f} | {r['aeb']['within_k']:.0%} | {r['readability']['mean']:.1f} | "
            f"{r['readability']['within_k']:.0%} | {r['job_recall']:.1%} | {r['empty']} | {r['fallbacks']} | {len(r['errors'])} | "
            f"{r['false_merges']}/{len(pairs)} ({r['false_merges'] / max(1, len(pairs)):.1%}) |"
        )
    floor = q["all (visible text)"]["distances"]
    lines += ["", "Pages closer to their article than with all visible text (distance strictly smaller / not larger):", ""]
    for name in EXTRACTORS:
        if name == "all (visible text)":
            continue
        d = q[name]["distances"]
        closer = sum(a < b for a, b in zip(d, floor)) / len(d)
        not_worse = sum(a <= b for a, b in zip(d, floor)) / len(d)
        lines.append(f"- {name}: {closer:.0%} / {not_worse:.0%}")
    lines += ["", "Errors (exceptions raised on the real pages):", ""]
    for name in EXTRACTORS:
        errors = q[name]["errors"]
        lines.append(f"- {name}: {len(errors)}" + (f" (e.g. {errors[0]})" if errors else ""))
    total, shares = profile
    lines += [
        "",
        "## Where trafilatura-fast's time goes",
        "",
        f"One pass of `extract.main_content` over the {len(pages)} pages under cProfile "
        f"({total:.1f} s with the profiler's overhead; `profile_job`). Cumulative shares, which "
        "overlap where one part calls another:",
        "",
        "| part | share of the time |",
        "|---|---:|",
    ]
    lines += [f"| {label} | {share:.0%} |" for label, share in sorted(shares.items(), key=lambda x: -x[1])]
    lines += [
        "",
        f"## Robustness (CPU seconds per input, child process, {ROBUSTNESS_TIMEOUT_S:.0f} s limit)",
        "",
        "| input | " + " | ".join(EXTRACTORS) + " |",
        "|---|" + "---:|" * len(EXTRACTORS),
    ]
    for label, row in robust.items():
        lines.append(f"| {label} | " + " | ".join(row[n] for n in EXTRACTORS) + " |")
    lines += [
        "",
        "An error here is caught (`extract.extract` falls back to all visible text); a timeout "
        "would hold up a Spark task. Deeply nested markup is the slow case: lexbor's "
        "visible-text walk (`html_text.html_to_text`: the `all` mode, and `main`'s fallback) grows "
        "with depth squared, while trafilatura gives up on such a tree at once (lxml's depth "
        "limit) and the job falls back to all visible text.",
    ]
    job = INCUMBENT  # simhash_udf.core.extract.main_content: the same text (tests/core/test_extract_options.py)
    good = eligible(q, pages_per_s)
    fast_ok = [n for n in CANDIDATES if pages_per_s[n] >= TARGET_PAGES_PER_S]
    best_fast = max(fast_ok, key=lambda n: q[n]["both"]["within_k"]) if fast_ok else None
    allv, chosen_q = q["all (visible text)"]["both"], q[chosen]["both"]
    ratio = pages_per_s["job: extract(main)"] / pages_per_s["trafilatura-fast"]
    lines += [
        "",
        "## Choice",
        "",
        f"Rule (`choose`, issue 14): a candidate is eligible when no same-site pair falls within k, "
        f"it raises on no real page, at least as many pages fall within k = {K} of their article "
        f"as with {INCUMBENT} in the same run ({q[INCUMBENT]['both']['within_k']:.1%}; issue 14: "
        f"no lower than today's {TARGET_WITHIN_K:.0%}) and its job rule recall reaches "
        f"{TARGET_JOB_RECALL:.0%} (issue 13). The "
        f"job changes extractor only for an eligible one that also runs at {TARGET_PAGES_PER_S:.0f} "
        f"pages/s per core or more (the fastest such; within 10% of its speed, the first in the "
        f"table's order); otherwise it keeps {INCUMBENT}, since a new extractor changes the "
        f"fingerprint of every HTML page (an index's too) and a speed-up short of the target "
        f"does not pay for that. Eligible in this run: {'; '.join(good) or 'none'}. The rule picks **{chosen}**; "
        f"`simhash_udf/core/extract.py` runs **{job}** (`trafilatura.extract` with a prebuilt "
        f"`Extractor`, trafilatura pinned in pyproject.toml)"
        + ("." if chosen == job else ": THEY DIFFER, the job should follow the figures."),
        "",
        f"- Issue 14's speed target, extraction alone at {TARGET_PAGES_PER_S:.0f} pages/s per core "
        f"or more by an eligible extractor, is **"
        + ("met" if any(pages_per_s[n] >= TARGET_PAGES_PER_S for n in good) else "not met")
        + f"**: the eligible candidates run at "
        + "; ".join(f"{n} {pages_per_s[n]:,.0f}" for n in good)
        + " pages/s"
        + (f"; the best candidate at {TARGET_PAGES_PER_S:.0f} pages/s or more is {best_fast} "
           f"({pages_per_s[best_fast]:,.0f} pages/s) with {q[best_fast]['both']['within_k']:.1%} "
           f"within k (the bar: {q[INCUMBENT]['both']['within_k']:.1%}), a mean distance of "
           f"{q[best_fast]['both']['mean']:.1f} bits and a job rule recall of "
           f"{q[best_fast]['job_recall']:.1%} against the job's {q['job: extract(main)']['job_recall']:.1%}."
           if best_fast else "."),
        f"- The job's row (`extract(main)`: {job} with a prebuilt `Extractor`, the size cap and "
        f"the fallback) runs at {pages_per_s['job: extract(main)']:,.0f} pages/s, "
        f"{ratio:.2f}x the keyword call; its text is the same on every page.",
        f"- Main content against all visible text: the mean distance to the article falls from "
        f"{allv['mean']:.1f} to {chosen_q['mean']:.1f} bits and the pages within k = {K} of their "
        f"article rise from {allv['within_k']:.0%} to {chosen_q['within_k']:.0%}.",
        "- The pre-pass (lexbor drops elements before trafilatura parses the page): "
        + "; ".join(
            f"{n}: {pages_per_s[n] / pages_per_s['trafilatura-fast']:.2f}x trafilatura-fast's speed, "
            f"{q[n]['both']['within_k']:.1%} within k, mean {q[n]['both']['mean']:.2f} bits against "
            f"{q['trafilatura-fast']['both']['mean']:.2f}, job rule recall {q[n]['job_recall']:.1%} "
            f"against {q['trafilatura-fast']['job_recall']:.1%}, {q[n]['fallbacks']} pages without text"
            for n in ("pre-pass invisible + trafilatura-fast", "pre-pass boilerplate + trafilatura-fast"))
        + ". trafilatura's time goes to its XPath pruning (EXSLT regular expressions called back "
        "into Python for every element), its tree copies and its Python walk over the elements "
        "(cProfile, 272 pages), more than to lxml's parse, so halving the elements saves far "
        "less than half the time.",
        f"- Fast candidates: resiliparse {pages_per_s['resiliparse']:,.0f} pages/s at "
        f"{q['resiliparse']['both']['within_k']:.0%} within k, with its boilerplate rules "
        f"{pages_per_s['resiliparse, boilerplate rules']:,.0f} at "
        f"{q['resiliparse, boilerplate rules']['both']['within_k']:.0%}, lexbor-readability "
        f"{pages_per_s['lexbor-readability']:,.0f} at {q['lexbor-readability']['both']['within_k']:.0%}: "
        "they keep more boilerplate (captions, teasers, bylines) or pick a container that "
        "misses part of the article.",
        "- Same-site pairs: an extractor that puts two different articles of one site within k "
        "is not eligible, whatever its speed.",
        "",
        "The job adds a size cap (pages over `MAX_MAIN_HTML_CHARS`, 3 M characters, keep all "
        "their visible text) and the fallback to all visible text when no main content is "
        "found; both are counted in report.json as `extract_fallbacks` (the *fallbacks* column: "
        "pages on which a candidate finds no text, the job's row its actual fallbacks).",
        "",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="every 4th page, one pass, no robustness")
    parser.add_argument("--out", default=str(ROOT / "docs" / "extraction.md"))
    parser.add_argument("--data", default=str(DATA))
    args = parser.parse_args(argv)
    started = time.perf_counter()
    pages = load_pages(Path(args.data))
    if args.quick:
        pages, args.repeats = pages[::4], 1
    pairs = different_article_pairs(pages)
    print(f"{len(pages)} pages, {len(pairs)} same-site different-article pairs", file=sys.stderr)
    q = quality(pages, pairs)
    pages_per_s = speed(pages, args.repeats)
    profile = profile_job(pages)
    robust = {} if args.quick else robustness(pages)
    text = render(pages, pairs, q, pages_per_s, robust, args.repeats, time.perf_counter() - started, profile)
    if not args.quick:
        Path(args.out).write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
