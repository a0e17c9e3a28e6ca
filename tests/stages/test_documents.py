"""Document stages on small inline frames: the UDFs agree with the pure functions."""

from __future__ import annotations

import hashlib

import pytest

from simhash_udf.core.config import DedupeConfig, FingerprintConfig
from simhash_udf.core.fingerprint import fingerprint
from simhash_udf.core.normalise import normalise
from simhash_udf.stages import documents

pytestmark = pytest.mark.spark

TEXTS = {
    1: "The Harbour  reopens on Tuesday.\nShips queue outside.",
    2: "the harbour reopens on tuesday. ships queue outside.",  # an exact copy once normalised
    3: "港口週二重新開放，船隻在外面排隊。",  # Traditional script
    4: "港口周二重新开放，船只在外面排队。",  # the same text in Simplified
    5: "   \t ",
    6: None,
    7: "ＦＵＬＬ　ＷＩＤＴＨ ｔｅｘｔ",
}


@pytest.fixture(scope="module")
def normalised(spark):
    frame = spark.createDataFrame(sorted(TEXTS.items(), key=lambda kv: kv[0]), "id long, text string")
    return {r["id"]: r for r in documents.normalise_documents(frame, DedupeConfig()).collect()}


def test_normalised_text_and_exact_key_match_the_pure_functions(normalised):
    for doc_id, raw in TEXTS.items():
        row = normalised[doc_id]
        expected = normalise(raw) if raw is not None else ""
        if not expected:
            assert (row["text"], row["exact_key"], row["reason"]) == (None, None, "empty")
            continue
        assert row["text"] == expected and row["reason"] is None
        assert bytes(row["exact_key"]) == hashlib.sha256(expected.encode("utf-8")).digest()
    assert normalised[1]["exact_key"] == normalised[2]["exact_key"]
    assert normalised[3]["exact_key"] == normalised[4]["exact_key"]
    assert normalised[7]["text"] == "full width text"


def test_fingerprint_udf_equals_the_pure_fingerprint(spark, normalised):
    config = FingerprintConfig(min_features=4)
    texts = documents.distinct_texts(spark.createDataFrame([r for r in normalised.values()]))
    rows = documents.fingerprint_texts(texts, config).collect()
    by_key = {bytes(r["exact_key"]): r for r in rows}
    assert len(rows) == 3  # 1=2 and 3=4 collapse, 7 alone; 5 and 6 are empty
    for doc_id in (1, 3, 7):
        text = normalised[doc_id]["text"]
        row = by_key[bytes(normalised[doc_id]["exact_key"])]
        assert row["fingerprint"] == fingerprint(text, config)
    assert by_key[bytes(normalised[1]["exact_key"])]["n_documents"] == 2
    # "full width text" has 3 features: too short at min_features=4, so no fingerprint.
    assert by_key[bytes(normalised[7]["exact_key"])]["fingerprint"] is None
    assert by_key[bytes(normalised[7]["exact_key"])]["n_features"] == 3
