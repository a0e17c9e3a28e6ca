"""HTML to the visible text a browser shows: lexbor's HTML5 parse, invisible elements dropped.

Pure function, no Spark (`core/extract.py` uses it for `--extract all` and as the fallback of
`main`).
"""

from __future__ import annotations

import re

# Elements whose content is never visible text. `title` and `meta` are listed because a
# parser may move them into the body when the head closes early (a stray element in it).
_INVISIBLE_TAGS = "script, style, noscript, template, head, title, meta, link, svg, iframe, object"
# Elements that start a new line of text in a browser: their boundaries separate words,
# while inline elements (b, i, span, a, ...) do not (`<b>T</b>his` reads "This").
_BLOCK_TAGS = (
    "address, article, aside, blockquote, br, caption, dd, details, dialog, div, dl, dt, "
    "fieldset, figcaption, figure, footer, form, h1, h2, h3, h4, h5, h6, header, hr, li, "
    "main, nav, ol, option, p, pre, section, summary, table, td, th, tr, ul"
)
# Browsers run with scripting on, where <noscript> content is raw text that is never shown;
# lexbor parses as if scripting were off, which can spill that content into the page (and
# close <head> early). Removing the elements before parsing reproduces what a browser shows.
_NOSCRIPT = re.compile(r"<noscript\b.*?(?:</noscript\s*>|$)", re.IGNORECASE | re.DOTALL)


def html_to_text(html: str) -> str:
    """Visible text of an HTML document or fragment, parsed with lexbor (HTML5).

    Scripts, styles and other invisible elements are dropped, entities are decoded, and block
    boundaries become spaces (so words on either side of a paragraph break do not run
    together) while inline tags join their text as a browser shows it.
    """
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(_NOSCRIPT.sub(" ", html))
    for node in tree.css(_INVISIBLE_TAGS):
        node.decompose()
    root = tree.body if tree.body is not None else tree.root
    if root is None:
        return ""
    for node in root.css(_BLOCK_TAGS):
        node.insert_before(" ")
        node.insert_after(" ")
    return root.text(separator="", strip=False)
