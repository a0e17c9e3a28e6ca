"""bench/datasets.py, bench/pair_sets.py and bench/near_copies.py: the loaders on small folders
laid out like ../shared/data, the pair frames against hand-made expectations and brute force,
and the near-copy edits against a word-level diff."""

from __future__ import annotations

import difflib
import gzip
import itertools
import json
import random

import pandas as pd
import pytest

from bench.datasets import Page, load_aeb, load_readability
from bench.near_copies import edit_words, synthetic_frame
from bench.pair_sets import DistinctTexts, same_site_frame, unrelated_frame

KEY = "0123456789abcdef" * 4  # aeb keys are 64 hex digits


def _page(name: str, corpus: str, site: str | None, text: str = "") -> Page:
    return Page(name, corpus, "<p></p>", text or f"text of {name}", "", site)


def test_loaders_read_the_shared_layout(tmp_path):
    pages = tmp_path / "test-pages"
    for name, size, site in (("nytimes-1", 6_000, "NYT"), ("tiny", 100, None)):
        folder = pages / name
        folder.mkdir(parents=True)
        (folder / "source.html").write_text("<p>" + "x" * size + "</p>")
        (folder / "expected.html").write_text("<p>The article.</p>")
        if site:
            (folder / "expected-metadata.json").write_text(json.dumps({"siteName": site}))
    got = load_readability(pages, page_text=str.upper)
    assert [(p.name, p.site, p.article.strip(), p.label) for p in got] == [("nytimes-1", "NYT", "The article.", "nytimes-1")]
    assert got[0].text == got[0].html.upper()
    assert load_readability(pages, min_bytes=10_000) == []

    aeb = tmp_path / "aeb"
    (aeb / "html").mkdir(parents=True)
    (aeb / "ground-truth.json").write_text(json.dumps({
        KEY: {"url": "https://news.example.com/a", "articleBody": "Body."},
        "f" * 64: {"url": "https://gone.example/", "articleBody": "No page."},  # no HTML: left out
    }))
    (aeb / "html" / f"{KEY}.html.gz").write_bytes(gzip.compress("<p>caf\xe9</p>".encode() + b"\xff"))
    [page] = load_aeb(aeb)
    assert (page.site, page.url, page.article, page.label) == (
        "news.example.com", "https://news.example.com/a", "Body.", KEY[:12])
    assert page.html == "<p>caf\xe9</p>\ufffd"  # invalid UTF-8 replaced, not fatal


def test_distinct_texts_share_an_index():
    texts = DistinctTexts()
    first, again, other = texts.add("One text."), texts.add("One text."), texts.add("Another one.")
    assert first == again != other and len(texts.texts) == 2
    assert texts.n_chars == sum(len(t) for t in texts.texts)


def test_same_site_pairs_follow_the_folder_and_host_rules():
    readability = [_page(n, "readability", s) for n, s in (
        ("nytimes", None), ("nytimes-1", "NYT"), ("nytimes-2", "NYT"), ("lazy-image-1", "A"),
        ("lazy-image-2", "B"), ("solo", None))]
    aeb = [_page(f"{c}" * 64, "aeb", host) for c, host in (("a", "x.com"), ("b", "x.com"), ("c", "y.com"), ("d", None))]
    texts = DistinctTexts()
    frame = same_site_frame(readability, aeb, texts)
    assert sorted(frame["pair"]) == sorted([
        "nytimes / nytimes-1", "nytimes / nytimes-2", "nytimes-1 / nytimes-2",  # a bare folder joins its site
        "a" * 12 + " / " + "b" * 12])  # lazy-image-1/2 name different sites; y.com has one page
    assert set(frame["source"]) == {"readability", "aeb"} and not frame["exact"].any()


@pytest.mark.parametrize("seed", range(5))
def test_unrelated_pairs_equal_brute_force(seed):
    rng = random.Random(seed)
    group = [rng.choice(["han", "other"]) for _ in range(30)]  # a text has one script group
    docs = [(i, group[i]) for i in (rng.randrange(30) for _ in range(40))]  # some listed twice
    related = {(rng.randrange(30), rng.randrange(30)) for _ in range(20)}
    frame = unrelated_frame(docs, related)
    unique = sorted(set(docs))
    expected = {(a, b) for (a, ga), (b, gb) in itertools.product(unique, unique)
                if a < b and ga == gb and (a, b) not in related and (b, a) not in related}
    got = list(zip(frame["a"], frame["b"]))
    assert len(got) == len(set(got)) and set(got) == expected
    assert not frame["exact"].any()


@pytest.mark.parametrize("rate", [0.01, 0.05, 0.2])
def test_a_near_copy_edits_about_rate_of_the_words(rate):
    words = [f"w{i}" for i in range(400)]
    rng = random.Random(1)
    text = " ".join(rng.choice(words) for _ in range(500))
    copy = edit_words(text, rate, random.Random(2), {"word": ["zz"], "han": ["字"]})
    a, b = text.split(), copy.split()
    changed = sum(max(i2 - i1, j2 - j1) for op, i1, i2, j1, j2 in
                  difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes() if op != "equal")
    assert 1 <= changed <= round(rate * len(a))  # one word per edit at most


def test_synthetic_frame_copies_each_source_at_each_rate():
    sources = [("aeb", "doc", " ".join(f"word{i}" for i in range(200)))]
    texts = DistinctTexts()
    frame = synthetic_frame(sources, texts, copies=2, seed=7, rates=(0.01, 0.1))
    assert len(frame) == 4 and sorted(set(frame["rate"])) == [0.01, 0.1]
    assert frame["a"].nunique() == 1 and not frame["exact"].any()
    assert isinstance(frame, pd.DataFrame) and set(frame["group"]) == {"other"}
