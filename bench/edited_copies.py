"""Real articles with one structural edit each: the recall sets "a sentence added", "a footer
appended" and "a paragraph dropped" of bench/quality.py (issue 13).

The sources are ground-truth article texts (aeb, readability), which keep their paragraphs as
newlines until `normalise` joins them; every edit uses real text of *another* document:
- sentence added: a sentence (40-300 characters) of another article, inserted as a paragraph
  of its own at a random paragraph boundary (start and end included);
- footer appended: the boilerplate tail of another page, the last ~400 characters of its
  all-visible text (`extract_text(html, "all")`: menus, copyright, links), after the article;
- paragraph dropped: one paragraph removed, only from articles of two paragraphs or more.
One copy per article and edit, each with its own seeded RNG, so adding sources leaves the
other copies unchanged.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

import pandas as pd

from bench.pair_sets import DistinctTexts, text_group

EDITS = ("sentence added", "footer appended", "paragraph dropped")
FOOTER_CHARS = 400
SENTENCE_CHARS = (40, 300)  # shortest and longest sentence inserted
# A sentence ends at ., !, ? or their full-width forms; the split keeps the mark.
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s*")
_SPACE = re.compile(r"\s")


def paragraphs(text: str) -> list[str]:
    """The non-blank lines of an article, stripped: its paragraphs."""
    return [line.strip() for line in text.split("\n") if line.strip()]


def sentences(text: str) -> list[str]:
    """Sentences of a text of SENTENCE_CHARS characters, cut at sentence-ending marks."""
    low, high = SENTENCE_CHARS
    found = (s.strip() for paragraph in paragraphs(text) for s in _SENTENCE_END.split(paragraph))
    return [s for s in found if low <= len(s) <= high]


def footer_of(page_text: str, chars: int = FOOTER_CHARS) -> str:
    """The last `chars` characters of a page's text, starting after a whitespace when one is
    near the cut (within 40 characters) so that no word is cut in half."""
    tail = page_text[-chars:].strip()
    space = _SPACE.search(tail[:40])
    return tail[space.end():].strip() if space and len(page_text) > chars else tail


def add_sentence(text: str, sentence: str, rng: random.Random) -> str:
    """The article with `sentence` as a new paragraph at a random paragraph boundary."""
    parts = paragraphs(text)
    at = rng.randrange(len(parts) + 1)
    return "\n".join(parts[:at] + [sentence] + parts[at:])


def append_footer(text: str, footer: str) -> str:
    """The article followed by a page's footer."""
    return text.rstrip() + "\n" + footer


def drop_paragraph(text: str, rng: random.Random) -> str | None:
    """The article without one of its paragraphs, chosen at random; None with fewer than two."""
    parts = paragraphs(text)
    if len(parts) < 2:
        return None
    at = rng.randrange(len(parts))
    return "\n".join(parts[:at] + parts[at + 1:])


def _other(pool: Sequence[tuple[str, str]], name: str, rng: random.Random) -> str | None:
    """A random text of `pool` ((owner, text) pairs) whose owner is not `name`."""
    others = [text for owner, text in pool if owner != name]
    return rng.choice(others) if others else None


def edited_frame(
    sources: Sequence[tuple[str, str, str]],
    pages: Sequence[tuple[str, str]],
    texts: DistinctTexts,
    seed: int,
) -> pd.DataFrame:
    """Original vs edited copy, one per (article, edit): a pair frame with `origin`, `name`,
    `group` (`text_group` of the original), `edit` (one of EDITS), `a`, `b`, `exact`.

    sources: (origin, name, article text with paragraphs as lines), as
    `near_copies.synthetic_sources` gives them. pages: (name, all visible text of a page),
    the donors of footers; an article never gets its own page's footer or its own sentence.
    """
    sentence_pool = [(name, s) for _, name, text in sources for s in sentences(text)]
    footer_pool = [(name, footer_of(text)) for name, text in pages if text.strip()]
    records = []
    for origin, name, text in sources:
        a, group = texts.add(text), text_group(text)
        for edit in EDITS:
            rng = random.Random(f"{seed}:{edit}:{origin}:{name}")
            copy: str | None
            if edit == "sentence added":
                sentence = _other(sentence_pool, name, rng)
                copy = None if sentence is None else add_sentence(text, sentence, rng)
            elif edit == "footer appended":
                footer = _other(footer_pool, name, rng)
                copy = None if footer is None else append_footer(text, footer)
            else:
                copy = drop_paragraph(text, rng)
            if copy is not None:
                b = texts.add(copy)
                records.append({"origin": origin, "name": name, "group": group, "edit": edit,
                                "a": a, "b": b, "exact": a == b})
    return pd.DataFrame.from_records(
        records, columns=["origin", "name", "group", "edit", "a", "b", "exact"])
