"""The short-text check in Spark: the band join's pairs of short texts, kept or dropped by the
policy of `core/short_text_policy.py` (`--verify jaccard:T --verify-below L --verify-shingle N`).

Simhash says little about short texts, so a candidate pair whose shorter normalised text has
fewer than L characters is kept only when the Jaccard similarity of the two texts' shingle
sets reaches T (`core/short_text_policy.keeps` is the same rule for one pair, in plain
Python). `mark_pairs` marks the band join's pairs that need their texts, `score_marked`
scores those against their texts before the connected components, and `kept_pairs` keeps the
survivors. The texts are the ones the one pass carried (`documents.signed_documents`'
`short_text`: under `short_text_policy.carried_below`, a little over L); a longer text in
such a pair is normalised again from the input, which is read only when some pair has one.
Because the check may drop a pair, the band join never summarises pairs the check looks at
(`checked_fingerprints`): a hot run's pairs with a short text are all listed and checked, so
the clusters are the components of every pair within k that the policy keeps, whatever the
row order. Exact copies share one text and so one fingerprint: no pair joins them, and the
check never separates them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.functions import pandas_udf
from pyspark.sql.types import DoubleType

from simhash_udf.core.config import DedupeConfig, VerifyConfig
from simhash_udf.core.short_text_policy import describe, fingerprint_checked, pair_verdict, similarity
from simhash_udf.stages import udfs


def texts_by_fingerprint(
    signed: DataFrame, docs: DataFrame, config: DedupeConfig, fingerprints: DataFrame, from_input: bool = True,
    few_fingerprints: bool = False, few_read_again: bool = False,
) -> DataFrame:
    """The distinct normalised texts of `fingerprints`: `fingerprint` (long), `text`.

    signed: `id`, `exact_key`, `fingerprint`, [`short_text`] (`documents.signed_documents`);
    docs: the checked input rows (`config.id_col`, `config.text_col`); fingerprints:
    `fingerprint`. A fingerprint usually has one text; texts that collide on all 64 bits give it
    several. The run does not carry its texts past the one pass over them, except the ones
    the check is likely to compare (`short_text`): those are taken from `signed`. Any other text is
    normalised again from the input, one document per distinct text, only when `from_input`:
    a caller that knows every text asked for is carried (`mark_pairs`' `needs_input`) passes
    False, and the input is not read at all (a scan of the whole crawl, HTML extraction
    included, to compare a few short texts). few_fingerprints: the fingerprints are the
    driver's few (`scored_on_driver`): they are broadcast. few_read_again: the documents read
    again are known to be few (few pairs need the input): they are broadcast and the input is
    streamed past them. Otherwise the join shuffles the input, raw texts (HTML) and all, as it
    must when many texts are read again.
    """
    short_text = F.col("short_text") if "short_text" in signed.columns else F.lit(None).cast("string")
    fingerprints = fingerprints.select("fingerprint")
    wanted = (
        signed.where(F.col("fingerprint").isNotNull())
        .join(F.broadcast(fingerprints) if few_fingerprints else fingerprints.distinct(), "fingerprint", "left_semi")
        .groupBy("exact_key", "fingerprint")
        # One normalised text per exact key, so any of its documents' short_text is the same.
        .agg(F.min("id").alias("id"), F.min(short_text).alias("short_text"))
    )
    carried = wanted.where(F.col("short_text").isNotNull()).select("fingerprint", F.col("short_text").alias("text"))
    if not from_input:
        return carried
    missing = wanted.where(F.col("short_text").isNull()).select("id", "fingerprint")
    raw = docs.select(F.col(config.id_col).alias("id"), F.col(config.text_col).cast("binary").alias("raw"))
    return carried.unionByName(raw.join(F.broadcast(missing) if few_read_again else missing, "id").select(
        "fingerprint",
        udfs.normalised_text(F.col("raw"), config.html, config.extract).getField("text").alias("text"),
    ))


def checked_fingerprints(fingerprints: DataFrame, policy: VerifyConfig) -> DataFrame:
    """`fingerprint` and `checked` (bool): whether the policy checks every pair the
    fingerprint is in, so that the band join must list those pairs rather than summarise
    them (`core/hot_runs.hot_run_edges`).

    fingerprints: `fingerprint`, `chars` (the longest text carrying it,
    `documents.distinct_fingerprints`). A pair's text pairs are checked when the shorter text
    has fewer than `policy.below_chars` characters, and the pair is kept when any text pair is
    unchecked or passes (`scored_pairs`). So a pair of two fingerprints that each have a text
    of at least below_chars characters is always kept: such a fingerprint is unchecked. Any
    other fingerprint is checked: all when below_chars is None, none when the policy is off.
    A fingerprint with no known text counts as checked (listing is always safe). The lengths
    are those `scored_pairs` compares (characters).
    """
    return fingerprints.select("fingerprint", _checked(policy).alias("checked"))


def _checked(policy: VerifyConfig) -> Column:
    """`checked_fingerprints`' column, over `chars` (`core/short_text_policy.fingerprint_checked`
    is the same rule in plain Python)."""
    if policy.threshold is None:
        return F.lit(False)
    if policy.below_chars is None:
        return F.lit(True)
    return F.coalesce(F.col("chars") < F.lit(policy.below_chars), F.lit(True))


def _similarity_udf(policy: VerifyConfig) -> Any:
    @pandas_udf(DoubleType())  # type: ignore[call-overload]
    def similarity_batch(a: pd.Series, b: pd.Series) -> pd.Series:
        return pd.Series([similarity(x, y, policy) for x, y in zip(a, b)], dtype="float64")

    return similarity_batch


def scored_pairs(pairs: DataFrame, fingerprint_texts: DataFrame, policy: VerifyConfig) -> DataFrame:
    """Each candidate pair with its check: `fp_a`, `fp_b`, `distance`, `checked` (bool),
    `similarity` (double, the largest over the pair's texts; null when not checked), `kept`.

    pairs: `fp_a`, `fp_b`, `distance` (the verified band-join pairs). fingerprint_texts:
    `fingerprint`, `text` (`texts_by_fingerprint`). The Jaccard UDF runs only on the text
    pairs the policy checks (a pandas UDF inside `when` would run on every row, so the rows
    are split first). A pair is kept when any of its text pairs is unchecked or reaches the
    threshold.
    """
    a = fingerprint_texts.select(F.col("fingerprint").alias("fp_a"), F.col("text").alias("text_a"))
    b = fingerprint_texts.select(F.col("fingerprint").alias("fp_b"), F.col("text").alias("text_b"))
    joined = pairs.join(a, "fp_a").join(b, "fp_b")
    if policy.threshold is None:
        checked = F.lit(False)
    elif policy.below_chars is None:
        checked = F.lit(True)
    else:
        checked = F.least(F.length("text_a"), F.length("text_b")) < F.lit(policy.below_chars)
    marked = joined.withColumn("checked", checked)
    keys = ["fp_a", "fp_b", "distance"]
    scored = marked.where("checked").select(
        *keys, "checked", _similarity_udf(policy)(F.col("text_a"), F.col("text_b")).alias("similarity")
    ).unionByName(
        marked.where(~F.col("checked")).select(*keys, "checked", F.lit(None).cast("double").alias("similarity"))
    )
    passes = ~F.col("checked") | (F.col("similarity") >= F.lit(policy.threshold or 0.0))
    return scored.groupBy(*keys).agg(
        F.bool_or("checked").alias("checked"),
        F.max("similarity").alias("similarity"),
        F.bool_or(passes).alias("kept"),
    )


def kept_pairs(scored: DataFrame) -> DataFrame:
    """The pairs the policy keeps: `fp_a`, `fp_b`, `distance` (from `scored_pairs`)."""
    return scored.where("kept").select("fp_a", "fp_b", "distance")


def mark_pairs(pairs: DataFrame, fingerprints: DataFrame, policy: VerifyConfig) -> DataFrame:
    """The band join's pairs with whether the policy needs their texts: `fp_a`, `fp_b`,
    `distance`, `needs_texts` (bool: a fingerprint of the pair is checked, `checked_fingerprints`),
    `needs_input` (bool: it needs texts and a fingerprint of the pair has a text the one pass
    did not carry, so the check must read the input again).

    pairs: `fp_a`, `fp_b`, `distance`; fingerprints: `fingerprint`, `chars`, [`text_carried`]
    (`documents.distinct_fingerprints`, holding every fingerprint of the pairs). A pair that
    needs no texts is kept unchecked, so a run whose pairs are all of long texts never goes
    back to its input, nor one whose checked pairs are all of carried short texts (`score_marked`)."""
    # One projection of the fingerprints' rows (a join of them with themselves is a shuffle
    # more: 1-2 s at 100k fingerprints).
    carried = F.col("text_carried") if "text_carried" in fingerprints.columns else F.lit(False)
    flags = fingerprints.select("fingerprint", _checked(policy).alias("checked"), carried.alias("text_carried"))

    def side(name: str) -> DataFrame:
        return flags.select(
            F.col("fingerprint").alias(f"fp_{name}"),
            F.col("checked").alias(f"checked_{name}"),
            F.coalesce(F.col("text_carried"), F.lit(False)).alias(f"carried_{name}"),
        )

    needs_texts = F.col("checked_a") | F.col("checked_b")
    return pairs.join(side("a"), "fp_a").join(side("b"), "fp_b").select(
        "fp_a", "fp_b", "distance",
        needs_texts.alias("needs_texts"),
        (needs_texts & ~(F.col("carried_a") & F.col("carried_b"))).alias("needs_input"),
    )


def unchecked(marked: DataFrame) -> DataFrame:
    """`marked` pairs (`mark_pairs`) that need no texts, scored: kept, not checked."""
    return marked.where(~F.col("needs_texts")).select(
        "fp_a", "fp_b", "distance",
        F.lit(False).alias("checked"), F.lit(None).cast("double").alias("similarity"), F.lit(True).alias("kept"),
    )


def score_marked(
    marked: DataFrame, signed: DataFrame, docs: DataFrame, config: DedupeConfig, from_input: bool = True,
    few_read_again: bool = False,
) -> DataFrame:
    """`scored_pairs` of every `marked` pair (`mark_pairs`): those that need texts against their
    texts (`texts_by_fingerprint`), the others unchecked. from_input: some marked pair
    `needs_input`; False: every text needed was carried by the one pass, and the input is not
    read. few_read_again: few pairs need the input (`few_enough_for_driver`), so the documents
    read again are broadcast, not joined by a shuffle of the input."""
    needing = marked.where("needs_texts").select("fp_a", "fp_b", "distance")
    wanted = needing.select(F.col("fp_a").alias("fingerprint")).union(needing.select(F.col("fp_b").alias("fingerprint")))
    texts = texts_by_fingerprint(signed, docs, config, wanted, from_input, few_read_again=few_read_again)
    scored = scored_pairs(needing, texts, config.verify)
    return scored.unionByName(unchecked(marked))


# Up to this many pairs, the short-text check runs on the driver: the band join's pairs are
# marked there (`marked_on_driver`), and those needing texts are judged there
# (`scored_on_driver`). In Spark each step is a stage result of joins and shuffles, with a
# query plan compiled for it (2,000 HTML pages: 4.6 s for one checked pair, 0.6 s on the
# driver; 1M short documents, 24,771 pairs: 15.7 s, 7.7 s on the driver, 4 s of which scan
# the input for the one pair whose longer text was not carried). The driver reads the
# fingerprints' rows and the carried texts by a broadcast semi-join with stored results, a
# Spark job each and no shuffle, and the few texts the one pass did not carry by one scan of
# the input past them. Texts of more than DRIVER_ROWS documents (a short text copied all
# over a crawl) are judged in Spark. Carried texts are under 462 characters by default
# (`carried_below`): tens of MB at most; 100,000 pairs are a few MB of tuples.
DRIVER_PAIRS = 100_000
DRIVER_ROWS = 100_000

SCORED_SCHEMA = pa.schema([
    ("fp_a", pa.int64()), ("fp_b", pa.int64()), ("distance", pa.int32()),
    ("checked", pa.bool_()), ("similarity", pa.float64()), ("kept", pa.bool_()),
])
FINGERPRINT_SCHEMA = pa.schema([("fingerprint", pa.int64())])
MARKED_SCHEMA = pa.schema([
    ("fp_a", pa.int64()), ("fp_b", pa.int64()), ("distance", pa.int32()),
    ("needs_texts", pa.bool_()), ("needs_input", pa.bool_()),
])


def driver_frame(spark: SparkSession, rows: Sequence[tuple], schema: pa.Schema) -> DataFrame:
    """A frame of the driver's rows, as a local relation built from Arrow: no Spark task reads
    it. (`createDataFrame` of a list of tuples runs a stage of Python tasks at each read, 0.3-0.9 s.)"""
    columns = list(zip(*rows)) if rows else [[] for _ in schema]
    return spark.createDataFrame(
        pa.Table.from_arrays([pa.array(column, field.type) for column, field in zip(columns, schema)], schema=schema)
    )


def _of_fingerprints(frame: DataFrame, fingerprints: Sequence[int]) -> DataFrame:
    """frame's rows whose `fingerprint` is one of `fingerprints` (the driver's, a few thousand):
    a semi-join with them broadcast, no shuffle. (`isin` of as many literals costs ~3 s to
    build and plan at 8,000 of them; this ~0.3 s.)"""
    wanted = driver_frame(frame.sparkSession, [(fp,) for fp in fingerprints], FINGERPRINT_SCHEMA)
    return frame.join(F.broadcast(wanted), "fingerprint", "left_semi")


def few_enough_for_driver(pairs: int) -> bool:
    """Whether `pairs` pairs are marked, or judged, on the driver (see DRIVER_PAIRS)."""
    return pairs <= DRIVER_PAIRS


def marked_on_driver(pairs: DataFrame, fingerprints: DataFrame, policy: VerifyConfig) -> tuple[DataFrame, dict[str, int]]:
    """`mark_pairs` of a few pairs (`few_enough_for_driver`), on the driver: the marked pairs as
    a frame of the driver's rows, and their counts `rows`, `needs_texts`, `needs_input`. Two
    small Spark jobs with no shuffle (the pairs; their fingerprints' rows, `_of_fingerprints`),
    where storing the marks costs a stage result's joins, write and read. The marks are
    `core/short_text_policy.fingerprint_checked`, the rule `checked_fingerprints` applies."""
    rows = [(r["fp_a"], r["fp_b"], r["distance"]) for r in pairs.collect()]
    wanted = sorted({a for a, _, _ in rows} | {b for _, b, _ in rows})
    carried = F.col("text_carried") if "text_carried" in fingerprints.columns else F.lit(False)
    flags = {
        r["fingerprint"]: (fingerprint_checked(r["chars"], policy), bool(r["text_carried"]))
        for r in _of_fingerprints(fingerprints, wanted).select("fingerprint", "chars", carried.alias("text_carried")).collect()
    }
    marks = []
    for a, b, distance in rows:
        (checked_a, carried_a), (checked_b, carried_b) = flags[a], flags[b]
        needs_texts = checked_a or checked_b
        marks.append((a, b, distance, needs_texts, needs_texts and not (carried_a and carried_b)))
    counts = {
        "rows": len(marks),
        "needs_texts": sum(1 for m in marks if m[3]),
        "needs_input": sum(1 for m in marks if m[4]),
    }
    return driver_frame(pairs.sparkSession, marks, MARKED_SCHEMA), counts


def scored_on_driver(
    marked: DataFrame, signed: DataFrame, docs: DataFrame, config: DedupeConfig, marked_rows: int,
    from_input: bool = False,
) -> tuple[DataFrame, dict[str, int]] | None:
    """`score_marked`'s rows with the pairs needing texts judged on the driver by
    `core/short_text_policy.pair_verdict` (the rule `scored_pairs` applies in Spark), and their
    `totals()` as counted there: no Spark job stores or counts them. marked_rows: the marked
    pairs' number. None when their fingerprints are carried by more than DRIVER_ROWS documents.
    Only for marked pairs that are few (`few_enough_for_driver`). from_input: some pair
    `needs_input` (`mark_pairs`): the texts the one pass did not carry are read again from
    docs (`texts_by_fingerprint`, one scan of the input past the wanted documents, broadcast);
    else every text is in signed's `short_text` and the input is not read."""
    needing = marked.where("needs_texts").select("fp_a", "fp_b", "distance").collect()
    wanted = sorted({r["fp_a"] for r in needing} | {r["fp_b"] for r in needing})
    rows = (
        _of_fingerprints(signed, wanted).select("fingerprint", "short_text").limit(DRIVER_ROWS + 1).collect()
    )
    if len(rows) > DRIVER_ROWS:
        return None
    found = {(r["fingerprint"], r["short_text"]) for r in rows if r["short_text"] is not None}
    if from_input:
        # Only the fingerprints with a text not carried: their texts, carried or read again.
        uncarried = sorted({r["fingerprint"] for r in rows if r["short_text"] is None})
        if uncarried:
            read_again = texts_by_fingerprint(
                signed, docs, config, driver_frame(marked.sparkSession, [(fp,) for fp in uncarried], FINGERPRINT_SCHEMA),
                from_input=True, few_fingerprints=True, few_read_again=True,
            )
            found |= {(r["fingerprint"], r["text"]) for r in read_again.collect()}
    texts: dict[int, list[str]] = {}
    for fingerprint, text in sorted(found):
        texts.setdefault(fingerprint, []).append(text)
    scored = []
    for pair in needing:
        verdict = pair_verdict(texts.get(pair["fp_a"], []), texts.get(pair["fp_b"], []), config.verify)
        if verdict is not None:  # as scored_pairs' joins: a pair without texts has no row
            scored.append((pair["fp_a"], pair["fp_b"], pair["distance"], *verdict))
    counted = {
        "pairs": marked_rows - len(needing) + len(scored),
        "checked": sum(1 for row in scored if row[3]),
        "dropped": sum(1 for row in scored if not row[5]),
    }
    return driver_frame(marked.sparkSession, scored, SCORED_SCHEMA).unionByName(unchecked(marked)), counted


def totals() -> dict[str, Column]:
    """Aggregates over scored pairs (`scored_pairs`, `unchecked`), to observe while they are
    stored: `pairs`, `checked` and `dropped` (those the policy checked and did not keep)."""
    return {
        "pairs": F.count(F.lit(1)),
        "checked": F.sum(F.col("checked").cast("long")),
        "dropped": F.sum((~F.col("kept")).cast("long")),
    }


def counts(row: Mapping[str, int | None], policy: VerifyConfig) -> dict[str, Any]:
    """report.json's `verify`: the policy, and the candidate pairs it checked and dropped.

    row: `totals()` over the scored pairs (None where a sum had no rows)."""
    return {
        **describe(policy),
        "applied": True,
        "pairs_within_k": int(row["pairs"] or 0),
        "checked_pairs": int(row["checked"] or 0),
        "dropped_pairs": int(row["dropped"] or 0),
    }
