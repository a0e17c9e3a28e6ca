"""simhash_udf.stages.udfs: the Arrow UDFs give the pure functions' results row for row.

The frame mixes valid and invalid UTF-8, null, empty, HTML pages (with and without main
content), Chinese and English; Arrow batches are cut to 3 rows so that batch boundaries fall
between rows. The expectation of each row is computed here one text at a time: Python's own
UTF-8 decoding, then `core.extract.extract`, `core.normalise.normalise`, and
`core.fingerprint.fingerprints` of that text alone.
"""

from __future__ import annotations

import pytest
from generators import PARAGRAPH

from simhash_udf.core.config import FingerprintConfig, SketchConfig
from simhash_udf.core.extract import extract
from simhash_udf.core.fingerprint import fingerprints, signatures
from simhash_udf.core.normalise import normalise
from simhash_udf.core.sketch import sketch_bytes
from simhash_udf.stages import udfs

pytestmark = pytest.mark.spark

ARTICLE = (
    "<html><head><title>Port</title></head><body><nav><a href='/'>Home</a> <a href='/news'>News</a></nav>"
    f"<article><h1>New terminal</h1><p>{PARAGRAPH}</p><p>{PARAGRAPH[::-1]}</p></article>"
    "<footer>Copyright the harbour board</footer></body></html>"
)
MENU_ONLY = "<html><body><nav><a href='/a'>Alpha</a> <a href='/b'>Beta</a></nav></body></html>"

RAW: list[bytes | None] = [
    PARAGRAPH.encode(),
    "我爱北京天安门，天安门上太阳升。今天天气很好，我们一起去公园散步。".encode(),
    "參觀乾清宮 ＦＵＬＬＷＩＤＴＨ Ｔｅｘｔ".encode(),
    b"caf\xe9 au lait \xff\xfe broken " + PARAGRAPH.encode(),  # invalid UTF-8
    None,
    b"",
    b"   \n\t  ",
    ARTICLE.encode(),
    MENU_ONLY.encode(),
    b"<p>tiny</p>",
    ("<html><body><p>" + "重复的中文段落。" * 40 + "</p></body></html>").encode(),
    # No byte of a Han character's UTF-8, yet Han once decoded: Kangxi radicals (NFKC makes
    # them 馬車, the chain 马车) and, in markup, character references.
    "⾺⾞ radicals".encode(),
    b"<html><body><p>&#x99AC;&#x8ECA; in references</p></body></html>",
]


@pytest.fixture
def small_batches(spark):
    """Arrow batches of 3 rows while a test runs (the session's setting restored after)."""
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    before = spark.conf.get(key)
    spark.conf.set(key, "3")
    yield
    spark.conf.set(key, before)


def expected_normalised(raw: bytes | None, html: bool, mode: str) -> tuple:
    """(text, invalid_utf8, extract_fallback) of one value, by the pure functions."""
    if raw is None:
        return (None, False, False)
    try:
        text, invalid = raw.decode("utf-8"), False
    except UnicodeDecodeError:
        text, invalid = raw.decode("utf-8", errors="replace"), True
    fallback = False
    if html:
        text, fallback = extract(text, mode)
    return (normalise(text), invalid, fallback)


@pytest.mark.parametrize(("html", "mode"), [(False, "main"), (True, "main"), (True, "all")])
def test_normalised_text_is_the_pure_functions_row_for_row(spark, small_batches, html, mode):
    frame = spark.createDataFrame([(i, raw) for i, raw in enumerate(RAW)], "i int, raw binary")
    got = frame.select("i", udfs.normalised_text(frame["raw"], html, mode).alias("n")).collect()
    assert len(got) == len(RAW)
    for row in got:
        result = (row["n"]["text"], row["n"]["invalid_utf8"], row["n"]["extract_fallback"])
        assert result == expected_normalised(RAW[row["i"]], html, mode), row["i"]
    if html and mode == "main":  # the case is exercised: the menu-only page falls back
        assert any(row["n"]["extract_fallback"] for row in got)
    assert sum(row["n"]["invalid_utf8"] for row in got) == 1


TEXTS: list[str | None] = [
    normalise(PARAGRAPH),
    normalise(PARAGRAPH + " one more sentence at the end."),
    normalise("我爱北京天安门，天安门上太阳升。今天天气很好，我们一起去公园散步，看看花草树木。"),
    None,
    "",
    "two words",
    normalise("重复的中文段落。" * 40),
]


@pytest.mark.parametrize(
    ("config", "sketch"),
    [
        (FingerprintConfig(), None),
        (FingerprintConfig(tokenizer="char", ngram=3, weighting="tf", min_features=1), None),
        (FingerprintConfig(), SketchConfig(min_chars=20)),
    ],
    ids=["default", "char3", "with-sketch"],
)
def test_simhash_is_the_pure_fingerprint_of_each_text_alone(spark, small_batches, config, sketch):
    frame = spark.createDataFrame([(i, t) for i, t in enumerate(TEXTS)], "i int, text string")
    result = frame.select("i", udfs.simhash(frame["text"], config, sketch).alias("f"))
    assert [f.dataType.simpleString() for f in result.schema["f"].dataType.fields] == ["bigint", "int", "binary"]
    got = result.collect()
    assert len(got) == len(TEXTS)
    fingerprinted = sketched = 0
    for row in got:
        values, ok, n_features = fingerprints([TEXTS[row["i"]]], config)
        expected = (int(values[0]) if ok[0] else None, int(n_features[0]))
        assert (row["f"]["fingerprint"], row["f"]["n_features"]) == expected, row["i"]
        fingerprinted += expected[0] is not None
        if sketch is None:
            assert row["f"]["sketch"] is None
        else:
            alone = signatures([TEXTS[row["i"]]], config, sketch)
            want = sketch_bytes(alone.sketch[0]) if alone.has_sketch[0] else None
            assert row["f"]["sketch"] == want, row["i"]
            sketched += want is not None
    if sketch is not None:
        assert 0 < sketched < len(TEXTS), "texts with and without a sketch are exercised"
    assert 0 < fingerprinted < len(TEXTS), "both outcomes are exercised"
