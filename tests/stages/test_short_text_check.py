"""The short-text check in Spark (`simhash_udf.stages.short_text_check`): the scored pairs
against the policy's rule applied in Python, the texts of paired fingerprints, and the job with
--verify on planted short texts."""

from __future__ import annotations

import itertools
import json
import random

import pytest
from generators import VOCAB, brute_jaccard, brute_word_shingles

from simhash_udf.core.config import VerifyConfig
from simhash_udf.core.fingerprint import fingerprint, hamming
from simhash_udf.core.normalise import normalise
from simhash_udf.core.short_text_policy import jaccard, keeps, shingles


# --- the Spark transform ----------------------------------------------------------------------


@pytest.mark.spark
@pytest.mark.parametrize(
    "policy",
    [
        VerifyConfig(threshold=0.5, below_chars=30, shingle=2),
        VerifyConfig(threshold=0.3, below_chars=None, shingle=1),
        VerifyConfig(threshold=0.8, below_chars=None, shingle=3),
        VerifyConfig(threshold=None),
    ],
    ids=["0.5-below30-2", "0.3-all-1", "0.8-all-3", "off"],
)
def test_scored_pairs_equal_the_rule_applied_in_python(spark, policy):
    from simhash_udf.stages.short_text_check import kept_pairs, scored_pairs

    rng = random.Random(5)
    # Fingerprints are just keys here; fingerprint 0 carries two texts (a 64-bit collision).
    texts = {fp: [" ".join(rng.choice(VOCAB[:8]) for _ in range(rng.randint(1, 9)))] for fp in range(1, 25)}
    texts[0] = ["river stone garden window", "copper violin lantern harbor"]
    texts[25] = [" ".join(VOCAB)]  # long: never checked when below_chars is 30
    pairs = sorted({tuple(sorted(rng.sample(sorted(texts), 2))) for _ in range(80)})
    frame_texts = spark.createDataFrame([(fp, t) for fp, ts in texts.items() for t in ts], "fingerprint long, text string")
    frame_pairs = spark.createDataFrame([(a, b, 1 + (a + b) % 3) for a, b in pairs], "fp_a long, fp_b long, distance int")

    scored = {(r["fp_a"], r["fp_b"]): r for r in scored_pairs(frame_pairs, frame_texts, policy).collect()}
    kept = {(r["fp_a"], r["fp_b"], r["distance"]) for r in kept_pairs(scored_pairs(frame_pairs, frame_texts, policy)).collect()}

    assert set(scored) == set(pairs)
    expected_kept = set()
    for a, b in pairs:
        text_pairs = list(itertools.product(texts[a], texts[b]))
        checked = [policy.threshold is not None and (policy.below_chars is None or min(len(x), len(y)) < policy.below_chars) for x, y in text_pairs]
        sims = [brute_jaccard(brute_word_shingles(x, policy.shingle), brute_word_shingles(y, policy.shingle)) for x, y in text_pairs]
        keep = any(not c or s >= policy.threshold for c, s in zip(checked, sims))
        assert keep == any(keeps(x, y, policy) for x, y in text_pairs)
        row = scored[(a, b)]
        assert row["checked"] == any(checked) and row["kept"] == keep
        if any(checked):
            assert row["similarity"] == pytest.approx(max(s for c, s in zip(checked, sims) if c))
        else:
            assert row["similarity"] is None
        if keep:
            expected_kept.add((a, b, 1 + (a + b) % 3))
    assert kept == expected_kept
    if policy.threshold is not None:
        assert 0 < len(kept) < len(pairs), "the case must both keep and drop pairs"


# --- the job ----------------------------------------------------------------------------------


def _colliding_pair(k: int, threshold: float, n: int) -> tuple[str, str]:
    """Two short texts of the same words in another order (one repeated) whose fingerprints are
    within k bits while their word n-gram Jaccard is below the threshold: unigram simhash
    cannot tell them apart. Found with the library's fingerprint, so the planted collision
    follows any change of tokenizer or weights."""
    rng = random.Random(7)
    for _ in range(20_000):
        words = rng.sample(VOCAB, rng.choice([4, 5, 6]))
        other = words[:]
        rng.shuffle(other)
        other.insert(rng.randrange(len(other) + 1), rng.choice(words))
        a, b = " ".join(words), " ".join(other)
        fa, fb = fingerprint(normalise(a)), fingerprint(normalise(b))
        if fa is None or fb is None:
            continue
        if 1 <= hamming(fa, fb) <= k and jaccard(shingles(a, n), shingles(b, n)) < threshold:
            return a, b
    raise AssertionError("no colliding pair found: the search space needs widening")


def _near_copy(base: str, k: int) -> str:
    """`base` with one word (or character, for Chinese) changed, dropped or added, within k bits."""
    fb = fingerprint(normalise(base))
    han = any("\u4e00" <= c <= "\u9fff" for c in base)
    units = list(base) if han else base.split(" ")
    joiner = "" if han else " "
    for i in range(len(units) - 1, 0, -1):
        for variant in (units[:i] + units[i + 1 :], units[:i] + units[i - 1 : i] + units[i:]):
            text = joiner.join(variant)
            f = fingerprint(normalise(text))
            if f is not None and 1 <= hamming(fb, f) <= k:
                return text
    raise AssertionError(f"no near copy of {base!r} within {k} bits")


@pytest.mark.slow
@pytest.mark.spark
def test_job_separates_colliding_short_texts_and_keeps_copies(spark, dedupe_main, tmp_path):
    k, policy = 3, VerifyConfig()
    assert policy.threshold is not None
    c1, c2 = _colliding_pair(k, policy.threshold, policy.shingle)
    english = "the battery lasts two full days and the screen is bright enough to read in the sun"
    chinese = "这本书的内容很精彩，翻译也很流畅，推荐给喜欢历史的朋友们阅读"
    docs = {
        1: "Great phone, fast delivery, would buy again from this shop",
        2: "great  phone, fast delivery,  would buy again from this shop",  # exact copy after normalising
        3: "GREAT PHONE, FAST DELIVERY, WOULD BUY AGAIN FROM THIS SHOP",  # exact copy
        4: c1,
        5: c1.upper(),  # exact copy of one side of the collision
        6: c2,
        7: english,
        8: _near_copy(english, k),
        9: chinese,
        10: _near_copy(chinese, k),
        11: "the hotel room was clean but the breakfast was cold and the staff seemed tired",
        12: "delivery took three weeks and the box arrived crushed, never ordering here again",
    }
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in docs.items()), encoding="utf-8")

    def run(name: str, *extra: str) -> tuple[dict, set, dict]:
        out = tmp_path / name
        assert dedupe_main(["--input", str(src), "--output", str(out), "--k", str(k), *extra], spark=spark) == 0
        clusters = {r["id"]: r["cluster_id"] for r in spark.read.parquet(str(out / "clusters")).collect()}
        pairs = {(r["id_a"], r["id_b"]) for r in spark.read.parquet(str(out / "pairs")).collect()}
        return clusters, pairs, json.loads((out / "report.json").read_text())

    plain, plain_pairs, plain_report = run("none", "--verify", "none")
    checked, checked_pairs, report = run("default")  # the default policy, no option given

    # Without the policy the planted collision is merged: the case is real.
    assert plain[4] == plain[6]
    assert plain_report["verify"]["applied"] is False
    # With it: the colliding texts are apart, every exact and near copy stays together.
    assert checked[4] != checked[6]
    assert checked[1] == checked[2] == checked[3]
    assert checked[4] == checked[5]
    assert checked[7] == checked[8] and checked[9] == checked[10]
    assert plain[7] == plain[8] and plain[9] == plain[10]
    # pairs/ with the policy = the candidate pairs (pairs/ without it) the rule keeps.
    norm = {i: normalise(t) for i, t in docs.items()}
    assert checked_pairs == {(a, b) for a, b in plain_pairs if keeps(norm[a], norm[b], policy)}
    assert (4, 6) in plain_pairs and (4, 6) not in checked_pairs
    v = report["verify"]
    assert v["applied"] and v["spec"] == f"jaccard:{policy.threshold:g}" and v["below_chars"] == policy.below_chars
    assert v["pairs_within_k"] == len(plain_pairs) == v["checked_pairs"]  # every text here is short
    assert v["dropped_pairs"] == len(plain_pairs - checked_pairs) >= 1
    assert report["join"]["verified_pairs"] == len(checked_pairs)


@pytest.mark.spark
def test_job_rejects_a_bad_verify_value(spark, dedupe_main, tmp_path, capsys):
    src = tmp_path / "in.jsonl"
    src.write_text('{"id": 1, "text": "a b c d e"}\n', encoding="utf-8")
    for bad in (["--verify", "jaccard:2"], ["--verify", "cosine:0.5"], ["--verify-shingle", "0"], ["--verify-below", "-3"]):
        assert dedupe_main(["--input", str(src), "--output", str(tmp_path / "out"), *bad], spark=spark) == 2
        assert "verify" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.spark
def test_texts_by_fingerprint_normalises_the_paired_fingerprints_texts_again_once(spark):
    from simhash_udf.core.config import DedupeConfig
    from simhash_udf.stages.short_text_check import texts_by_fingerprint

    docs = spark.createDataFrame(
        [(1, "A  b"), (2, "a b"), (3, "c d"), (4, "e f"), (5, "g h"), (6, None)], "id long, text string"
    )
    # ids 1 and 2 are one text (k1) once normalised; k1 and k2 collide on fingerprint 10;
    # k4 has no fingerprint (too short); 30 is not asked for.
    signed = spark.createDataFrame(
        [(1, b"k1", 10), (2, b"k1", 10), (3, b"k2", 10), (4, b"k3", 30), (5, b"k4", None), (6, None, None)],
        "id long, exact_key binary, fingerprint long",
    )
    wanted = spark.createDataFrame([(10,), (20,)], "fingerprint long")
    got = sorted((r["fingerprint"], r["text"]) for r in texts_by_fingerprint(signed, docs, DedupeConfig(), wanted).collect())
    assert got == [(10, "a b"), (10, "c d")]


def _checked_pairs(spark, texts: dict[int, str], config, tmp_path):
    """The job's short-text check on every pair of `texts`' fingerprints, step by step: the
    input as Parquet, the one pass with its carried texts, the stored fingerprints, the
    marked pairs. Returns (docs, signed, marked, the pairs' fingerprints' normalised texts,
    the distinct fingerprints' rows)."""
    from simhash_udf.stages import documents
    from simhash_udf.stages.short_text_check import mark_pairs

    source = str(tmp_path / "input")
    spark.createDataFrame(sorted(texts.items()), "id long, text string").write.parquet(source)
    docs = spark.read.parquet(source)
    signed_path = str(tmp_path / "signed")
    documents.signed_documents(docs, config, True).write.parquet(signed_path)
    signed = spark.read.parquet(signed_path)
    table = documents.distinct_fingerprints(signed, signed)
    by_fp = {r["fingerprint"]: normalise(texts[r["id"]]) for r in signed.collect() if r["fingerprint"] is not None}
    pairs = spark.createDataFrame(
        [(a, b, hamming(a, b)) for a, b in itertools.combinations(sorted(by_fp), 2)], "fp_a long, fp_b long, distance int"
    )
    return docs, signed, mark_pairs(pairs, table, config.verify), by_fp, table


@pytest.mark.spark
def test_short_texts_are_compared_without_reading_the_input(spark, tmp_path):
    """Pairs of short texts are checked against the texts the one pass carried: the check's
    query reads none of the input's files (it does when told to read the input), and it keeps
    exactly the pairs the rule keeps."""
    from simhash_udf.core.config import DedupeConfig
    from simhash_udf.stages.short_text_check import score_marked

    config = DedupeConfig(verify=VerifyConfig(threshold=0.5, below_chars=300))
    texts = {
        1: "great phone, fast delivery, would buy again",
        2: "great phone, fast delivery, would buy again soon",
        3: "the hotel room was clean but the breakfast was cold",
        4: "这本书的内容很精彩，翻译也很流畅",
    }
    docs, signed, marked, by_fp, _ = _checked_pairs(spark, texts, config, tmp_path)
    flags = marked.collect()
    assert flags and all(r["needs_texts"] and not r["needs_input"] for r in flags)
    input_files = set(docs.inputFiles())
    assert input_files and input_files <= set(score_marked(marked, signed, docs, config, from_input=True).inputFiles())
    carried_only = score_marked(marked, signed, docs, config, from_input=False)
    assert not input_files & set(carried_only.inputFiles())
    scored = {(r["fp_a"], r["fp_b"]): r["kept"] for r in carried_only.collect()}
    assert scored == {(r["fp_a"], r["fp_b"]): keeps(by_fp[r["fp_a"]], by_fp[r["fp_b"]], config.verify) for r in flags}
    assert not all(scored.values()) and any(scored.values())  # the rule both keeps and drops here


@pytest.mark.spark
def test_a_long_text_paired_with_a_short_one_is_read_from_the_input(spark, tmp_path):
    """A pair of a short and a long text is checked (its shorter text is short), but the one
    pass did not carry the long one: the pair needs the input, and with it gets the rule's
    verdict. A text a little over the limit (`carried_below`: up to L / T characters) was
    carried, so its pair with the short text needs no input; a pair of two texts over the limit
    needs no text at all."""
    from simhash_udf.core.config import DedupeConfig
    from simhash_udf.core.short_text_policy import carried_below
    from simhash_udf.stages.short_text_check import score_marked, scored_on_driver

    config = DedupeConfig(verify=VerifyConfig(threshold=0.3, below_chars=60))
    short = "the battery lasts two full days"
    medium = short + " and the screen is bright enough to read in the sun"
    long_text = medium + " and in the rain, says every reviewer who took it on a long hike with them"
    assert len(short) < 60 <= len(medium) < carried_below(config.verify) == 120 <= len(long_text)
    docs, signed, marked, by_fp, _ = _checked_pairs(spark, {1: short, 2: medium, 3: long_text}, config, tmp_path)
    short_fp, long_fp = (next(fp for fp, text in by_fp.items() if text == normalise(t)) for t in (short, long_text))
    flags = {(r["fp_a"], r["fp_b"]): (r["needs_texts"], r["needs_input"]) for r in marked.collect()}
    assert len(flags) == 3
    for (a, b), (needs_texts, needs_input) in flags.items():
        assert needs_texts == (short_fp in (a, b))
        assert needs_input == (short_fp in (a, b) and long_fp in (a, b))
    scored = {(r["fp_a"], r["fp_b"]): (r["checked"], r["kept"]) for r in score_marked(marked, signed, docs, config).collect()}
    for (a, b) in flags:
        checked = short_fp in (a, b)
        assert scored[(a, b)] == (checked, keeps(by_fp[a], by_fp[b], config.verify))
    # On the driver, the long text read again from the input: the same verdicts.
    on_driver, counted = scored_on_driver(marked, signed, docs, config, len(flags), from_input=True)
    assert {(r["fp_a"], r["fp_b"]): (r["checked"], r["kept"]) for r in on_driver.collect()} == scored
    assert counted["checked"] == 2 and counted["pairs"] == 3
    # Told the input is not needed, the driver has no text for the long one: that pair has no row.
    carried_only, _ = scored_on_driver(marked, signed, docs, config, len(flags), from_input=False)
    assert {(r["fp_a"], r["fp_b"]) for r in carried_only.collect()} == set(flags) - {tuple(sorted((short_fp, long_fp)))}


@pytest.mark.spark
def test_few_texts_read_again_are_broadcast_and_the_input_is_not_shuffled(spark, tmp_path):
    """In Spark, with few pairs needing the input, the documents read again are broadcast to a
    scan of the input (a shuffle would move every raw text, HTML and all, for a few of them),
    with the same verdicts as the join by shuffle. Spark's own broadcasting of small frames is
    turned off, so the only broadcast join in the plan is the one asked for."""
    from simhash_udf.core.config import DedupeConfig
    from simhash_udf.stages.short_text_check import score_marked

    config = DedupeConfig(verify=VerifyConfig(threshold=0.3, below_chars=60))
    short = "the battery lasts two full days"
    long_text = short + " and the screen is bright enough to read in the sun, says every reviewer who took it out" * 2
    docs, signed, marked, _, _ = _checked_pairs(spark, {1: short, 2: long_text}, config, tmp_path)
    assert [r["needs_input"] for r in marked.collect()] == [True]

    def verdicts_and_plan(few_read_again):
        frame = score_marked(marked, signed, docs, config, from_input=True, few_read_again=few_read_again)
        rows = sorted((r["fp_a"], r["fp_b"], r["checked"], r["similarity"], r["kept"]) for r in frame.collect())
        return rows, frame._jdf.queryExecution().executedPlan().toString()

    previous = spark.conf.get("spark.sql.autoBroadcastJoinThreshold")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try:
        broadcast_rows, broadcast_plan = verdicts_and_plan(True)
        shuffled_rows, shuffled_plan = verdicts_and_plan(False)
    finally:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", previous)
    assert broadcast_rows == shuffled_rows and len(broadcast_rows) == 1
    assert "BroadcastHashJoin" in broadcast_plan and "BroadcastHashJoin" not in shuffled_plan


@pytest.mark.spark
def test_pairs_judged_on_the_driver_equal_the_pairs_judged_in_spark(spark, tmp_path):
    """`scored_on_driver` (a few pairs, texts all carried) gives the rows `score_marked` gives,
    fingerprints carrying several texts included (they differ only by punctuation, which no
    feature sees)."""
    from simhash_udf.core.config import DedupeConfig
    from simhash_udf.stages.short_text_check import score_marked, scored_on_driver, totals

    config = DedupeConfig(verify=VerifyConfig(threshold=0.5, below_chars=300))
    texts = {
        1: "great phone, fast delivery, would buy again",
        2: "great phone fast delivery would buy again!",  # the fingerprint of 1, another text
        3: "great phone, slow delivery, would not buy again",
        4: "the hotel room was clean but the breakfast was cold",
        5: "the hotel room was clean, the breakfast was warm",
        6: "这本书的内容很精彩，翻译也很流畅",
    }
    docs, signed, marked, _, _ = _checked_pairs(spark, texts, config, tmp_path)
    fingerprints = {r["id"]: r["fingerprint"] for r in signed.collect()}
    assert fingerprints[1] == fingerprints[2]  # the case is real: two texts, one fingerprint

    def rows(frame):
        return sorted((r["fp_a"], r["fp_b"], r["distance"], r["checked"], r["similarity"], r["kept"]) for r in frame.collect())

    frame, counted = scored_on_driver(marked, signed, docs, config, marked.count())
    on_driver = rows(frame)
    in_spark_frame = score_marked(marked, signed, docs, config, from_input=False)
    in_spark = rows(in_spark_frame)
    assert len(on_driver) == marked.count() and on_driver == in_spark
    assert {r[5] for r in on_driver} == {True, False}
    # The counts the driver gives are those Spark aggregates over its scores.
    assert counted == in_spark_frame.agg(*[c.alias(k) for k, c in totals().items()]).first().asDict()


@pytest.mark.spark
@pytest.mark.parametrize(
    "policy",
    [VerifyConfig(threshold=0.5, below_chars=30), VerifyConfig(threshold=0.5, below_chars=None), VerifyConfig(threshold=None)],
    ids=["below30", "all", "off"],
)
def test_pairs_marked_on_the_driver_equal_the_pairs_marked_in_spark(spark, tmp_path, policy):
    """`marked_on_driver` gives `mark_pairs`' rows and counts them, for texts on both sides of
    --verify-below and for the policies that check every pair or none."""
    from simhash_udf.core.config import DedupeConfig
    from simhash_udf.stages.short_text_check import marked_on_driver

    config = DedupeConfig(verify=policy)
    texts = {
        1: "great phone, fast delivery",
        2: "great phone, fast delivery, would buy again from this shop any day",
        3: "the hotel room was clean",
        4: "the hotel room was clean but the breakfast was cold and the staff were tired",
    }
    _, _, marked, _, table = _checked_pairs(spark, texts, config, tmp_path)
    pairs = marked.select("fp_a", "fp_b", "distance")
    frame, counted = marked_on_driver(pairs, table, policy)

    def rows(f):
        return sorted(tuple(r) for r in f.collect())

    in_spark = rows(marked)
    assert rows(frame) == in_spark and len(in_spark) == 6
    assert counted == {"rows": 6, "needs_texts": sum(r[3] for r in in_spark), "needs_input": sum(r[4] for r in in_spark)}
    if policy.below_chars == 30 and policy.threshold is not None:
        assert 0 < counted["needs_input"] < counted["needs_texts"] < 6  # every kind of pair is here


@pytest.mark.slow
@pytest.mark.spark
def test_the_check_on_the_driver_and_in_spark_give_the_same_outputs(spark, dedupe_main, tmp_path, monkeypatch):
    """The job's outputs are the same whether its short-text check runs on the driver (few
    pairs, the default here) or in Spark (DRIVER_PAIRS set to 0): clusters, pairs and the
    check's counts, on short texts that collide, copy and nearly copy each other."""
    from simhash_udf.stages import short_text_check

    k, policy = 3, VerifyConfig()
    assert policy.threshold is not None
    c1, c2 = _colliding_pair(k, policy.threshold, policy.shingle)
    english = "the battery lasts two full days and the screen is bright enough to read in the sun"
    docs = {1: c1, 2: c1.upper(), 3: c2, 4: english, 5: _near_copy(english, k), 6: english + " " + english * 4}
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in docs.items()), encoding="utf-8")

    def run(name: str) -> tuple[list, list, dict]:
        out = tmp_path / name
        assert dedupe_main(["--input", str(src), "--output", str(out), "--k", str(k)], spark=spark) == 0
        clusters = sorted(tuple(r) for r in spark.read.parquet(str(out / "clusters")).select("id", "cluster_id", "status").collect())
        pairs = sorted(tuple(r) for r in spark.read.parquet(str(out / "pairs")).collect())
        return clusters, pairs, json.loads((out / "report.json").read_text())

    on_driver = run("driver")
    monkeypatch.setattr(short_text_check, "DRIVER_PAIRS", 0)
    in_spark = run("spark")
    assert on_driver[:2] == in_spark[:2]
    assert on_driver[2]["verify"] == in_spark[2]["verify"] and on_driver[2]["verify"]["dropped_pairs"] >= 1
    # The driver's run stored no marks; Spark's stored them (their rows are in the report).
    assert "verify_texts" not in on_driver[2]["stage_rows"] and "verify_texts" in in_spark[2]["stage_rows"]
