"""bench/edited_copies.py: each edit does what it says, with text of another document, seeded."""

from __future__ import annotations

import random

from bench.edited_copies import (
    EDITS,
    FOOTER_CHARS,
    add_sentence,
    append_footer,
    drop_paragraph,
    edited_frame,
    footer_of,
    paragraphs,
    sentences,
)
from bench.pair_sets import DistinctTexts

ARTICLES = [
    ("aeb", "one", "First paragraph of one. It has two sentences that are long enough here.\n\n"
                   "Second paragraph of one, also long enough to count as a sentence!\nThird."),
    ("aeb", "two", "Only paragraph of article two, which is a single long sentence of text."),
    ("readability", "three", "第一段的文字，足够长的一句话，用来测试中文的句子切分是否正确，再加上一些字让它超过四十个字符。\n"
                             "第二段的文字也足够长，可以作为被插入的一句话来使用吧。"),
]
PAGES = [("one", "menu " * 50 + "Copyright one"), ("two", "nav " * 200 + "© two 2024 all rights"),
         ("three", "短页脚")]


def test_paragraphs_and_sentences_of_real_shapes():
    assert paragraphs(" a \n\n b\n  \nc ") == ["a", "b", "c"]
    got = sentences(ARTICLES[0][2])
    # "First paragraph of one." and "Third." are under 40 characters.
    assert got == ["It has two sentences that are long enough here.",
                   "Second paragraph of one, also long enough to count as a sentence!"]
    assert sentences(ARTICLES[2][2])[0].endswith("字符。")


def test_drop_paragraph_removes_exactly_one_and_keeps_the_order():
    text = "p1\np2\np3\np4"
    for seed in range(20):
        dropped = drop_paragraph(text, random.Random(seed))
        kept = paragraphs(dropped)
        assert len(kept) == 3 and [p for p in paragraphs(text) if p in kept] == kept
    assert drop_paragraph("one paragraph only", random.Random(1)) is None


def test_add_sentence_adds_one_paragraph_at_a_boundary():
    text = "p1\np2\np3"
    places = set()
    for seed in range(30):
        added = paragraphs(add_sentence(text, "NEW SENTENCE.", random.Random(seed)))
        assert len(added) == 4 and [p for p in added if p != "NEW SENTENCE."] == ["p1", "p2", "p3"]
        places.add(added.index("NEW SENTENCE."))
    assert places == {0, 1, 2, 3}  # start and end included


def test_footer_is_the_tail_of_the_page_without_a_cut_word():
    page = "word " * 200
    footer = footer_of(page)
    assert len(footer) <= FOOTER_CHARS and page.rstrip().endswith(footer) and footer.startswith("word")
    assert append_footer("article", footer) == "article\n" + footer
    assert footer_of("short page") == "short page"


def test_edited_frame_uses_other_documents_and_is_seeded():
    corpus = DistinctTexts()
    frame = edited_frame(ARTICLES, PAGES, corpus, seed=5)
    again = edited_frame(ARTICLES, PAGES, DistinctTexts(), seed=5)
    assert frame[["edit", "name"]].equals(again[["edit", "name"]])
    assert [corpus.texts[b] for b in frame["b"]] != [] and set(frame["edit"]) == set(EDITS)
    # "two" has one paragraph: no paragraph dropped; every other article gets all three edits.
    assert sorted(frame.loc[frame["name"] == "two", "edit"]) == ["footer appended", "sentence added"]
    assert len(frame) == 3 * 3 - 1 and not frame["exact"].any()
    own_sentences = {name: set(sentences(text)) for _, name, text in ARTICLES}
    for row in frame.itertuples():
        original, copy = corpus.texts[row.a], corpus.texts[row.b]
        if row.edit == "footer appended":
            own = footer_of(dict(PAGES)[row.name])
            assert copy.startswith(original) and not copy.endswith(own)
        elif row.edit == "sentence added":
            assert not any(s in copy and s not in original for s in own_sentences[row.name])
            assert len(copy) > len(original)
        else:
            assert len(copy) < len(original)
