"""What differs between two texts, as HTML for a person to look at (pure, no Spark).

Used by the notebooks and `report.html` to show a near-duplicate pair side by side. Chinese
is compared character by character (it has no spaces), everything else word by word.
"""

from __future__ import annotations

import difflib
import html
import re

# Single Han characters, words, whitespace runs and single punctuation marks: joined back in
# order they give the text exactly, so the highlighted HTML shows the whole text.
_TOKEN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]|[^\W\u3400-\u9fff\uf900-\ufaff]+|\s+|[^\w\s]|_")

REMOVED_STYLE = "background:#fcc"
ADDED_STYLE = "background:#cfc"


def diff_tokens(text: str) -> list[str]:
    """The units two texts are compared in; `"".join(diff_tokens(t)) == t`."""
    return _TOKEN.findall(text)


def highlight(a: str, b: str) -> tuple[str, str]:
    """HTML of `a` and of `b`, escaped, with what only one of them has wrapped in `<mark>`
    (red in `a`: removed; green in `b`: added)."""
    ta, tb = diff_tokens(a), diff_tokens(b)
    left: list[str] = []
    right: list[str] = []
    matcher = difflib.SequenceMatcher(None, ta, tb, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        old, new = html.escape("".join(ta[i1:i2])), html.escape("".join(tb[j1:j2]))
        if op == "equal":
            left.append(old)
            right.append(new)
            continue
        if old:
            left.append(f'<mark style="{REMOVED_STYLE}">{old}</mark>')
        if new:
            right.append(f'<mark style="{ADDED_STYLE}">{new}</mark>')
    return "".join(left), "".join(right)


def side_by_side(a: str, b: str, title_a: str = "a", title_b: str = "b", caption: str = "") -> str:
    """A two-column HTML table of `a` and `b` with their differences highlighted."""
    left, right = highlight(a, b)
    cell = '<td style="white-space:pre-wrap;vertical-align:top;text-align:left;width:50%">{}</td>'
    head = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return (
        f'<table class="pair">{head}'
        f"<tr><th>{html.escape(title_a)}</th><th>{html.escape(title_b)}</th></tr>"
        f"<tr>{cell.format(left)}{cell.format(right)}</tr></table>"
    )
