"""Document stages on small inline frames: the UDFs agree with the pure functions."""

from __future__ import annotations

import hashlib

import pytest

from simhash_udf.core.config import DedupeConfig, FingerprintConfig, VerifyConfig
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


def normalised_in_spark_sql(frame):
    """The normalised text by the normalising UDF, and its exact key and length by Spark SQL
    (sha2, length): an independent reference for the one pass, which computes both in Python."""
    from pyspark.sql import functions as F

    from simhash_udf.stages import udfs

    n = udfs.normalised_text(F.col("text").cast("binary"), False).alias("n")
    text = F.col("n.text")
    empty = text.isNull() | (F.length(text) == 0)
    return frame.select("id", n).select(
        "id",
        F.when(empty, F.lit(None)).otherwise(text).alias("text"),
        F.when(empty, F.lit(None)).otherwise(F.unhex(F.sha2(text, 256))).alias("exact_key"),
        F.when(empty, F.lit(None)).otherwise(F.length(text)).alias("chars"),
        F.col("n.invalid_utf8").alias("invalid_utf8"),
        F.col("n.extract_fallback").alias("extract_fallback"),
        F.when(empty, F.lit("empty")).alias("reason"),
    )


@pytest.fixture(scope="module")
def normalised(spark):
    frame = spark.createDataFrame(sorted(TEXTS.items(), key=lambda kv: kv[0]), "id long, text string")
    return {r["id"]: r for r in normalised_in_spark_sql(frame).collect()}


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


def test_fingerprint_udf_equals_the_pure_fingerprint(spark):
    config = FingerprintConfig(min_features=4)
    frame = spark.createDataFrame(sorted(TEXTS.items(), key=lambda kv: kv[0]), "id long, text string")
    dedupe = DedupeConfig(fingerprint=config)
    signed = documents.signed_documents(frame, dedupe)
    by_id = {r["id"]: r for r in signed.collect()}
    keys = {bytes(r["exact_key"]) for r in by_id.values() if r["exact_key"] is not None}
    assert len(keys) == 3  # 1=2 and 3=4 collapse, 7 alone; 5 and 6 are empty
    for doc_id in (1, 3, 7):
        text = normalise(TEXTS[doc_id])
        row = by_id[doc_id]
        assert row["fingerprint"] == fingerprint(text, config)
        assert row["chars"] == len(text)
        assert bytes(row["exact_key"]) == hashlib.sha256(text.encode("utf-8")).digest()
    assert by_id[1]["exact_key"] == by_id[2]["exact_key"] and by_id[1]["fingerprint"] == by_id[2]["fingerprint"]
    # "full width text" has 3 features: too short at min_features=4, so no fingerprint.
    assert by_id[7]["fingerprint"] is None and by_id[7]["reason"] == "too_short"
    assert by_id[7]["n_features"] == 3
    for doc_id in (5, 6):
        assert (by_id[doc_id]["exact_key"], by_id[doc_id]["fingerprint"], by_id[doc_id]["reason"]) == (None, None, "empty")


def test_one_pass_equals_normalising_then_hashing_in_spark_sql(spark):
    """The one pass computes the exact key and the length in Python; they must be what Spark
    SQL's sha2 and length give on the normalised text (the rows the job had before)."""
    frame = spark.createDataFrame(sorted(TEXTS.items(), key=lambda kv: kv[0]), "id long, text string")
    config = DedupeConfig()
    before = {r["id"]: r for r in normalised_in_spark_sql(frame).collect()}
    after = {r["id"]: r for r in documents.signed_documents(frame, config).collect()}
    assert before.keys() == after.keys()
    for doc_id, row in before.items():
        for column in ("exact_key", "chars", "invalid_utf8", "extract_fallback"):
            assert after[doc_id][column] == row[column], (doc_id, column)
        assert after[doc_id]["short_text"] is None  # carried only when asked for


def test_the_one_pass_carries_exactly_the_texts_shorter_than_the_policy_asks(spark):
    """With carry_short_texts, `short_text` is the normalised text of each text shorter than
    the policy's `carried_below` (--verify-below 40 at jaccard:0.65: 62 characters) and null
    for any other; off or checking every pair, none is carried."""
    texts = {
        1: "Short post, SHORT!", 2: "word " * 80, 3: "", 4: "Ｆｕｌｌ ｗｉｄｔｈ",
        5: "x" * 39 + " y", 6: "x" * 59 + " y", 7: "x" * 60 + " y",
    }
    frame = spark.createDataFrame(sorted(texts.items()), "id long, text string")
    config = DedupeConfig(verify=VerifyConfig(threshold=0.65, below_chars=40))
    carried = {r["id"]: r["short_text"] for r in documents.signed_documents(frame, config, True).collect()}
    expected = {
        i: normalise(t) if t and len(normalise(t)) < 62 else None for i, t in texts.items()
    }
    assert carried == expected
    assert carried[5] is not None and carried[6] is not None  # 41 and 61 characters: a short text's partners
    assert carried[2] is None and carried[7] is None  # 400 and 62 characters
    for policy in (VerifyConfig(threshold=None), VerifyConfig(below_chars=None)):
        off = documents.signed_documents(frame, DedupeConfig(verify=policy), True).collect()
        assert all(r["short_text"] is None for r in off)


def test_distinct_fingerprints_names_each_by_its_smallest_id_and_longest_text(spark):
    """One row per fingerprint: the smallest id carrying it (string ids compare as strings),
    its longest text's characters and how many documents carry it; documents without a
    fingerprint are left out, and given fingerprints have no characters."""
    signed = spark.createDataFrame(
        [("b", 7, 120), ("a9", 7, 40), ("a10", 3, 15), ("c", None, 2), ("d", 3, 300)],
        "id string, fingerprint long, chars int",
    )
    fingerprinted = signed.select("id", "fingerprint")
    with_texts = sorted(tuple(r) for r in documents.distinct_fingerprints(fingerprinted, signed).collect())
    assert with_texts == [(3, "a10", 300, 2, False), (7, "a9", 120, 2, False)]
    given = sorted(tuple(r) for r in documents.distinct_fingerprints(fingerprinted, None).collect())
    assert given == [(3, "a10", None, 2, False), (7, "a9", None, 2, False)]


def test_a_fingerprint_text_is_carried_only_when_every_text_carrying_it_is(spark):
    """`text_carried` says the short-text check can take a fingerprint's texts from the
    signatures: true only when each of its documents kept its text (one that did not, a longer
    text colliding on the fingerprint, sends the check to the input)."""
    signed = spark.createDataFrame(
        [("a", 7, 12, "short a"), ("b", 7, 14, "short b"), ("c", 3, 10, "short c"), ("d", 3, 400, None)],
        "id string, fingerprint long, chars int, short_text string",
    )
    rows = documents.distinct_fingerprints(signed.select("id", "fingerprint"), signed).collect()
    assert {r["fingerprint"]: r["text_carried"] for r in rows} == {7: True, 3: False}


@pytest.mark.parametrize("id_type", ["string", "binary", "bigint"])
def test_repeated_ids_are_exactly_the_ids_a_counter_finds_repeated(spark, id_type):
    # Every repeated id with its count and nothing else, whatever the id's type (the check
    # that decides which rows become duplicate_id). The counts come from collections.Counter
    # over the same rows.
    import random
    from collections import Counter

    rng = random.Random(14)
    ids = [f"https://example.org/{rng.randrange(10**9)}/page-{i}.html" for i in range(3_000)]
    ids += [rng.choice(ids[:300]) for _ in range(400)]  # repeats: some ids twice, some many times
    ids += ["", "", "ü" * 3, "ü" * 3]  # an empty id and a non-ASCII one, each repeated
    rng.shuffle(ids)
    if id_type == "binary":
        rows = [(bytearray(i.encode()),) for i in ids]
    elif id_type == "bigint":
        rows = [(int(hashlib.sha256(i.encode()).hexdigest()[:15], 16),) for i in ids]
    else:
        rows = [(i,) for i in ids]
    frame = spark.createDataFrame(rows, f"doc {id_type}").repartition(3)
    found = {bytes(r["doc"]) if id_type == "binary" else r["doc"]: r["count"] for r in documents.repeated_ids(frame, "doc").collect()}
    expected = {key: n for key, n in Counter(bytes(r[0]) if id_type == "binary" else r[0] for r in rows).items() if n > 1}
    assert found == expected
    assert len(expected) > 200  # the repeats are many, and of several counts
    assert len(set(expected.values())) > 2
    # The driver's check says the same of these rows and of their distinct ids.
    assert documents.ids_repeat(frame, "doc")
    assert not documents.ids_repeat(frame.dropDuplicates(["doc"]), "doc")


@pytest.mark.parametrize("id_type", ["string", "bigint"])
def test_counts_by_id_are_the_rows_reasons_and_repeated_ids_a_counter_finds(spark, id_type):
    # Input rows as read: some with a null id, some that did not parse or come from a damaged
    # file (rejected whatever their id), ids repeated among the documents, and ids repeated
    # only with a rejected row (not repeated among documents). The oracle is plain Python over
    # the same rows.
    import random
    from collections import Counter

    rng = random.Random(15)
    rows = []
    for _ in range(2_000):
        doc_id = rng.randrange(1_500) if rng.random() < 0.95 else None
        flag = rng.random()
        corrupt = "{broken" if flag < 0.03 else None
        damaged = "cut gzip" if 0.03 <= flag < 0.05 else None
        rows.append((f"u{doc_id}" if id_type == "string" and doc_id is not None else doc_id, corrupt, damaged))
    schema = f"doc {id_type}, `{documents.CORRUPT_COLUMN}` string, `{documents.DAMAGE_COLUMN}` string"
    frame = spark.createDataFrame(rows, schema).repartition(3)

    def reason(row):
        return (
            documents.DAMAGED_FILE if row[2] is not None
            else documents.UNPARSEABLE if row[1] is not None
            else documents.NULL_ID if row[0] is None
            else None
        )

    reasons = Counter(reason(r) for r in rows)
    per_id = Counter(r[0] for r in rows if reason(r) is None)
    expected = {
        "rows": len(rows),
        **{r: reasons[r] for r in documents.REJECTION_REASONS},
        documents.REPEATED_IDS: sum(1 for n in per_id.values() if n > 1),
    }
    assert all(expected[r] for r in documents.REJECTION_REASONS) and expected[documents.REPEATED_IDS] > 0
    assert documents.counts_by_id(frame, "doc") == expected
    # With no row at all: zeros, not nulls.
    assert documents.counts_by_id(frame.limit(0), "doc") == {name: 0 for name in expected}
