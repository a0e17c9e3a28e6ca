"""Bytes -> str: UTF-8 input columns (`decode_utf8`), and a crawled page's character encoding.

The text column reaches Python as UTF-8 bytes (`stages/udfs.normalised_text`): `decode_utf8`
turns them to str and says whether any byte sequence was invalid. A WARC page's encoding is found
in a browser's order (WHATWG HTML, "determining the character encoding"): a byte-order
mark, then the HTTP `Content-Type` charset, then a `<meta charset>` or `<meta http-equiv=
"Content-Type" content="...; charset=...">` in the first bytes of the page, then detection
from the bytes themselves (uchardet, through resiliparse: chosen over charset-normalizer in
docs/input.md for being as accurate on the Chinese test pages and much faster).

Labels are mapped as the WHATWG Encoding standard maps them (`latin1` and `ascii` are
windows-1252, `gb2312` is GBK, ...), and GBK and Big5 are decoded with their supersets
(GB18030 and Big5-HKSCS), as browsers do: pages labelled GB2312 routinely use GBK-only
characters. Pure functions, no Spark.
"""

from __future__ import annotations

import codecs
import re
from typing import NamedTuple

from resiliparse.parse.encoding import bytes_to_str, detect_encoding, map_encoding_to_html5

# Where the encoding came from (the `encoding_source` of `decode_html`).
BOM = "bom"
HTTP = "http"
META = "meta"
DETECTED = "detected"

# Browsers look for <meta charset> in the first 1024 bytes; pages with a long <head> (inline
# scripts before the meta) are common enough in crawls that a few kB more is worth it.
_META_PRESCAN_BYTES = 4096
_META_CHARSET = re.compile(
    rb"""<meta\b[^>]*?\bcharset\s*=\s*["']?\s*([a-z0-9_:.+\-]+)""", re.IGNORECASE
)
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))
# The WHATWG decoders for these labels are the supersets.
_SUPERSETS = {"gbk": "gb18030", "gb2312": "gb18030", "big5": "big5hkscs"}
# Detection reads this many bytes (half from each end of the page).
_DETECT_BYTES = 64 * 1024


def decode_utf8(raw: bytes | None) -> tuple[str | None, bool]:
    """Decode bytes as UTF-8; invalid sequences become U+FFFD.

    Returns (text, had_invalid_bytes); (None, False) for None.
    """
    if raw is None:
        return None, False
    try:
        return raw.decode("utf-8"), False
    except UnicodeDecodeError:
        return raw.decode("utf-8", errors="replace"), True


def charset_label(label: str | bytes | None) -> str | None:
    """The Python codec for an encoding label as the web uses it (WHATWG names), or None
    for a label that names no encoding."""
    if label is None:
        return None
    if isinstance(label, bytes):
        label = label.decode("ascii", "replace")
    label = label.strip().strip("\"'").strip()
    if not label:
        return None
    mapped = map_encoding_to_html5(label, fallback_utf8=False)
    if mapped is None:
        return None
    mapped = _SUPERSETS.get(mapped.lower(), mapped)
    try:
        return codecs.lookup(mapped).name
    except LookupError:
        return None


def content_type_charset(content_type: str | None) -> str | None:
    """The `charset` parameter of an HTTP Content-Type value (as written), or None."""
    if not content_type:
        return None
    for part in content_type.split(";")[1:]:
        name, _, value = part.partition("=")
        if name.strip().lower() == "charset" and value.strip():
            return value.strip().strip("\"'")
    return None


def meta_charset(head: bytes) -> str | None:
    """The charset a `<meta>` tag in the first bytes of an HTML page declares (as written)."""
    found = _META_CHARSET.search(head[:_META_PRESCAN_BYTES])
    return found.group(1).decode("ascii") if found else None


def detect(body: bytes) -> str:
    """The encoding uchardet guesses for the bytes (a Python codec name, WHATWG-mapped)."""
    guess = detect_encoding(body, max_len=_DETECT_BYTES, html5_compatible=True, from_html_meta=False)
    return charset_label(guess) or "utf-8"


def declared_encoding(body: bytes, http_charset: str | None, html: bool = True) -> tuple[str, str] | None:
    """(codec, source) the page declares: a BOM, the HTTP charset, then (HTML only) a
    `<meta>` charset; None when it declares none that names an encoding."""
    for bom, codec in _BOMS:
        if body.startswith(bom):
            return codec, BOM
    codec = charset_label(http_charset)
    if codec:
        return codec, HTTP
    if html:
        codec = charset_label(meta_charset(body))
        # A meta tag that claims UTF-16 is read as ASCII bytes, so it cannot be right (WHATWG).
        if codec and not codec.startswith("utf-16"):
            return codec, META
    return None


def choose_encoding(body: bytes, http_charset: str | None, html: bool = True) -> tuple[str, str]:
    """(codec, source) for a page: BOM, then the HTTP charset, then (HTML only) `<meta>`,
    then detection. `source` is one of `bom`, `http`, `meta`, `detected`."""
    return decode_html(body, http_charset, html)[1:]


class Decoded(NamedTuple):
    """A page's bytes decoded: `text`, the `codec` and its `source` (see `choose_encoding`),
    and `valid`: False when some bytes were not valid in that codec (they were replaced or
    read with a fallback encoding; the job counts such documents as `invalid_utf8_documents`)."""

    text: str
    codec: str
    source: str
    valid: bool


def decode_html(body: bytes, http_charset: str | None = None, html: bool = True) -> tuple[str, str, str]:
    """(text, codec, source) of a page's bytes; see `decode_page`."""
    return decode_page(body, http_charset, html)[:3]


def decode_page(body: bytes, http_charset: str | None = None, html: bool = True) -> Decoded:
    """A page's bytes decoded (`Decoded`); see `choose_encoding` for the order.

    Undeclared pages that are valid UTF-8 are UTF-8 (most of the web is, and bytes that are
    valid UTF-8 almost never are anything else); the others go to uchardet. Bytes the
    chosen codec cannot decode are not fatal: resiliparse's `bytes_to_str` falls back to
    UTF-8, then windows-1252, and finally replaces what is left; a BOM is stripped.
    """
    declared = declared_encoding(body, http_charset, html)
    if declared is None:
        try:
            return Decoded(body.decode("utf-8"), "utf-8", DETECTED, True)
        except UnicodeDecodeError:
            codec, source = detect(body), DETECTED
    else:
        codec, source = declared
        if codec == "utf-8":
            # The common case in one pass (bytes_to_str validates, then decodes).
            try:
                return Decoded(body.removeprefix(codecs.BOM_UTF8).decode("utf-8"), codec, source, True)
            except UnicodeDecodeError:
                pass
    text = bytes_to_str(body, codec, errors="replace", fallback_encodings=("utf-8", "cp1252"), strip_bom=True)
    return Decoded(text, codec, source, codec != "utf-8" and _decodes(body, codec))


def _decodes(body: bytes, codec: str) -> bool:
    """True when every byte of `body` is valid in `codec` (a second, strict pass: only pages
    that are not UTF-8 pay for it)."""
    try:
        body.decode(codec)
    except (UnicodeDecodeError, LookupError):
        return False
    return True
