"""Pure tests of `simhash_udf.files.encoding.decode_utf8`: UTF-8 bytes to text, invalid bytes flagged (no Spark)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_udf.files.encoding import decode_utf8


REPLACEMENT = "\ufffd"


def test_decode_valid_utf8_is_not_flagged() -> None:
    assert decode_utf8("naïve 中文 ✓".encode()) == ("naïve 中文 ✓", False)


def test_decode_none_is_none_and_not_flagged() -> None:
    assert decode_utf8(None) == (None, False)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"ab\xffcd", "ab\ufffdcd"),  # a byte that never occurs in UTF-8
        (b"x\xe4\xb8", "x\ufffd"),  # the first two bytes of a three-byte character (中)
        (b"\xc0\xafz", "\ufffd\ufffdz"),  # overlong encoding of '/'
        (b"\xed\xa0\x80", "\ufffd\ufffd\ufffd"),  # an encoded UTF-16 surrogate
    ],
)
def test_decode_invalid_bytes_become_replacement_and_are_flagged(raw: bytes, expected: str) -> None:
    assert decode_utf8(raw) == (expected, True)


@given(st.text())
@settings(max_examples=100)
def test_decode_round_trips_any_text(text: str) -> None:
    assert decode_utf8(text.encode("utf-8")) == (text, False)


@given(st.binary(max_size=64))
@settings(max_examples=200)
def test_decode_flag_means_the_bytes_did_not_round_trip(raw: bytes) -> None:
    text, flagged = decode_utf8(raw)
    assert isinstance(text, str)
    if flagged:
        assert REPLACEMENT in text
        assert text.encode("utf-8") != raw
    else:
        assert text.encode("utf-8") == raw
