"""Bad input and bad command lines: clear errors or counted skips, never lost rows, never
half-written output."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from generators import PARAGRAPH

pytestmark = pytest.mark.spark



LONGER = (
    "The council also approved a plan to widen the coast road between the fish market and the "
    "old lighthouse, where lorries queue every morning. Residents asked for a cycle lane, a "
    "lower speed limit near the primary school and more trees along the promenade; the "
    "engineers promised a revised drawing before the summer recess and a public meeting in "
    "the library hall, with the mayor, the harbour master and the bus company all invited."
)


def _write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def _run(main, spark, *args: str) -> int:
    return main(list(args), spark=spark)


def _no_staging_left(folder: Path) -> bool:
    return not any(".staging-" in p.name or ".replaced-" in p.name for p in folder.iterdir())


def test_missing_text_column_is_named(spark, dedupe_main, tmp_path, capsys):
    src = _write_jsonl(tmp_path / "in.jsonl", [{"id": 1, "body": PARAGRAPH}])
    out = tmp_path / "out"
    assert _run(dedupe_main, spark, "--input", str(src), "--output", str(out)) == 2
    err = capsys.readouterr().err
    assert "'text'" in err and "body" in err
    assert not out.exists() and _no_staging_left(tmp_path)


def test_csv_with_a_missing_id_column(spark, dedupe_main, tmp_path, capsys):
    src = tmp_path / "in.csv"
    src.write_text('doc,text\n1,"hello, world"\n', encoding="utf-8")
    out = tmp_path / "out"
    assert _run(dedupe_main, spark, "--input", str(src), "--output", str(out)) == 2
    assert "'id'" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.slow
def test_repeated_ids_keep_one_row_each_whatever_the_row_order(spark, dedupe_main, tmp_path, caplog):
    rows = [{"id": i % 3, "text": f"{PARAGRAPH} {i}"} for i in range(9)] + [{"id": 7, "text": LONGER}]
    kept_texts = []
    # Parquet input is read in place, not stored first as JSON is: its ids are checked there.
    for name, order in (("forward", rows), ("backward", rows[::-1]), ("parquet", rows[3:] + rows[:3])):
        if name == "parquet":
            src = tmp_path / "input.parquet"
            pq.write_table(pa.Table.from_pylist(order), src)
        else:
            src = _write_jsonl(tmp_path / f"{name}.jsonl", order)
        out = tmp_path / f"out-{name}"
        # The texts are one paragraph and a number: near duplicates by the sketch route, which
        # would leave one of ids 0, 1, 2 in deduped/; this test is about which row of an id stays.
        assert _run(dedupe_main, spark, "--input", str(src), "--output", str(out), "--sketch", "none") == 0
        clusters = spark.read.parquet(str(out / "clusters")).collect()
        assert sorted(r["id"] for r in clusters) == [0, 1, 2, 7]
        rejected = spark.read.parquet(str(out / "rejected")).collect()
        assert sorted(r["id"] for r in rejected) == [0, 0, 1, 1, 2, 2]
        assert {r["reason"] for r in rejected} == {"duplicate_id"}
        report = json.loads((out / "report.json").read_text())
        assert report["counts"]["rejected_rows"] == {"duplicate_id": 6}
        assert report["counts"]["input_rows"] == 10
        deduped = {r["id"]: r["text"] for r in spark.read.parquet(str(out / "deduped")).collect()}
        # Of the rows of an id, the one with the smallest text stays, in either row order.
        assert deduped[0] == f"{PARAGRAPH} 0" and deduped[1] == f"{PARAGRAPH} 1"
        kept_texts.append(sorted(deduped.items()))
    assert kept_texts[0] == kept_texts[1] == kept_texts[2]
    assert "not unique" in caplog.text and "0, 1, 2" in caplog.text


@pytest.mark.slow
def test_a_cut_gzip_keeps_its_rows_before_the_cut_and_is_named(spark, dedupe_main, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    _write_jsonl(folder / "whole.jsonl", [{"id": i, "text": f"{PARAGRAPH} {i}"} for i in range(3)])
    lines = "".join(json.dumps({"id": 100 + i, "text": f"{LONGER} {i}"}) + "\n" for i in range(400)).encode()
    packed = gzip.compress(lines)
    (folder / "cut.jsonl.gz").write_bytes(packed[: len(packed) // 2])
    (folder / "not-gzip.jsonl.gz").write_bytes(lines[:200])
    out = tmp_path / "out"
    assert _run(dedupe_main, spark, "--input", str(folder), "--output", str(out)) == 0
    report = json.loads((out / "report.json").read_text())
    damaged = {Path(d["path"]).name: d["reason"] for d in report["damaged_files"]}
    assert set(damaged) == {"cut.jsonl.gz", "not-gzip.jsonl.gz"} and report["counts"]["damaged_files"] == 2
    assert damaged["cut.jsonl.gz"].startswith("truncated gzip") and damaged["not-gzip.jsonl.gz"].startswith("not gzip")
    ids = sorted(r["id"] for r in spark.read.parquet(str(out / "clusters")).collect())
    # The whole lines of the readable prefix, as zlib decodes it, are exactly the rows read.
    prefix = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(packed[: len(packed) // 2])
    whole_lines = prefix.count(b"\n")
    assert 0 < whole_lines < 400
    assert ids == [0, 1, 2] + list(range(100, 100 + whole_lines))
    assert report["counts"]["input_rows"] == 3 + whole_lines and not (out / "rejected").exists()


@pytest.mark.slow
def test_damaged_parquet_files_are_named_and_left_out(spark, dedupe_main, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    pq.write_table(pa.table({"id": [1, 2], "text": [PARAGRAPH, LONGER]}), folder / "good.parquet")
    whole = (folder / "good.parquet").read_bytes()
    (folder / "cut.parquet").write_bytes(whole[:-5])
    (folder / "random.parquet").write_bytes(b"\x00garbage that is not parquet at all")
    (folder / "empty.parquet").write_bytes(b"")
    out = tmp_path / "out"
    assert _run(dedupe_main, spark, "--input", str(folder), "--output", str(out)) == 0
    report = json.loads((out / "report.json").read_text())
    assert sorted(Path(d["path"]).name for d in report["damaged_files"]) == ["cut.parquet", "empty.parquet", "random.parquet"]
    assert sorted(r["id"] for r in spark.read.parquet(str(out / "clusters")).collect()) == [1, 2]


@pytest.mark.slow
def test_text_files_empty_or_damaged_are_rows_too(spark, dedupe_main, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "page one.txt").write_text(PARAGRAPH)
    (folder / "empty.txt").write_bytes(b"")
    (folder / "cut.txt.gz").write_bytes(gzip.compress(LONGER.encode())[:30])
    out = tmp_path / "out"
    assert _run(dedupe_main, spark, "--input", str(folder), "--format", "text", "--output", str(out)) == 0
    clusters = {Path(r["id"]).name: r for r in spark.read.parquet(str(out / "clusters")).collect()}
    assert set(clusters) == {"page%20one.txt", "empty.txt"}
    assert (clusters["empty.txt"]["status"], clusters["empty.txt"]["reason"]) == ("skipped", "empty")
    rejected = spark.read.parquet(str(out / "rejected")).collect()
    assert [(Path(r["id"]).name, r["reason"]) for r in rejected] == [("cut.txt.gz", "damaged_file")]
    assert rejected[0]["_damaged_file"].startswith("truncated gzip")
    report = json.loads((out / "report.json").read_text())
    assert report["counts"]["input_rows"] == 3 and report["counts"]["rejected_rows"] == {"damaged_file": 1}


def test_json_with_no_parseable_row_is_all_rejected(spark, dedupe_main, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "garbage.jsonl").write_bytes(b"\xff\xfe\x00\n{not json\n")
    (folder / "empty.jsonl").write_bytes(b"")
    (folder / "cut.jsonl.gz").write_bytes(gzip.compress(b'{"id": 1, "text": "x"}\n')[:5])
    out = tmp_path / "out"
    assert _run(dedupe_main, spark, "--input", str(folder), "--output", str(out)) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["counts"]["input_rows"] == 2 and report["counts"]["documents"] == 0
    assert report["counts"]["rejected_rows"] == {"unparseable": 2} and report["counts"]["damaged_files"] == 1
    assert spark.read.parquet(str(out / "clusters")).count() == 0


@pytest.mark.slow
def test_ids_and_texts_of_other_types_are_read_as_strings(spark, dedupe_main, tmp_path):
    rows = [
        {"id": 1, "text": PARAGRAPH},
        {"id": {"n": 2}, "text": LONGER},
        {"id": 2.5, "text": 12345},
        {"id": [3], "text": {"title": "a page as an object"}},
    ]
    src = _write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out"
    assert _run(dedupe_main, spark, "--input", str(src), "--output", str(out)) == 0
    deduped = {r["id"]: r["text"] for r in spark.read.parquet(str(out / "deduped")).collect()}
    # Each value as the file wrote it (json.dumps puts a space after ':').
    assert deduped == {"1": PARAGRAPH, '{"n": 2}': LONGER, "2.5": "12345", "[3]": '{"title": "a page as an object"}'}
    csv_src = tmp_path / "in.csv"
    csv_src.write_text('id,text\n1.5,hello there\n2,"say ""hi"""\n', encoding="utf-8")
    assert _run(dedupe_main, spark, "--input", str(csv_src), "--output", str(tmp_path / "out-csv")) == 0
    ids = sorted(r["id"] for r in spark.read.parquet(str(tmp_path / "out-csv" / "clusters")).collect())
    assert ids == ["1.5", "2"]


def test_existing_output_is_untouched_without_overwrite(spark, dedupe_main, tmp_path, capsys):
    src = _write_jsonl(tmp_path / "in.jsonl", [{"id": 1, "text": PARAGRAPH}])
    out = tmp_path / "out"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    assert _run(dedupe_main, spark, "--input", str(src), "--output", str(out)) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["precious.txt"]
    assert _run(dedupe_main, spark, "--input", str(src), "--output", str(out), "--overwrite") == 0
    assert not (out / "precious.txt").exists() and (out / "report.json").exists()
    assert _no_staging_left(tmp_path)


def test_folder_with_no_files_and_glob_with_no_match(spark, dedupe_main, tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _run(dedupe_main, spark, "--input", str(empty), "--output", str(tmp_path / "o1")) == 2
    assert "no data files" in capsys.readouterr().err
    assert _run(dedupe_main, spark, "--input", str(tmp_path / "nothing-*.jsonl"), "--output", str(tmp_path / "o2")) == 2
    assert "nothing matches" in capsys.readouterr().err
    assert not (tmp_path / "o1").exists() and not (tmp_path / "o2").exists()


def test_unknown_extension_asks_for_format(spark, dedupe_main, tmp_path, capsys):
    src = tmp_path / "in.data"
    src.write_text(json.dumps({"id": 1, "text": PARAGRAPH}) + "\n")
    assert _run(dedupe_main, spark, "--input", str(src), "--output", str(tmp_path / "o")) == 2
    assert "--format" in capsys.readouterr().err
    assert _run(dedupe_main, spark, "--input", str(src), "--format", "json", "--output", str(tmp_path / "o")) == 0


def test_bad_parameters_fail_before_spark_work(spark, dedupe_main, tmp_path, capsys):
    src = _write_jsonl(tmp_path / "in.jsonl", [{"id": 1, "text": PARAGRAPH}])
    assert _run(dedupe_main, spark, "--input", str(src), "--output", str(tmp_path / "o"), "--k", "3", "--blocks", "3") == 2
    assert "blocks" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _run(dedupe_main, spark, "--input", str(src), "--output", str(tmp_path / "o"), "--tokenizer", "nope")


@pytest.mark.slow
def test_empty_null_and_unparseable_rows_are_counted_not_lost(spark, dedupe_main, tmp_path):
    rows = [
        {"id": 1, "text": PARAGRAPH},
        {"id": 2, "text": None},
        {"id": 3, "text": ""},
        {"id": 4, "text": " \t\n  "},
        {"id": 5},
        "{this is not json",
        {"text": "a row without an id " + PARAGRAPH},
        {"id": 6, "text": PARAGRAPH},  # a copy of 1: dropped with or without --keep-empty
    ]
    src = _write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out"
    assert _run(dedupe_main, spark, "--input", str(src), "--output", str(out)) == 0
    clusters = {r["id"]: r for r in spark.read.parquet(str(out / "clusters")).collect()}
    assert set(clusters) == {1, 2, 3, 4, 5, 6}
    for i in (2, 3, 4, 5):
        assert (clusters[i]["status"], clusters[i]["reason"], clusters[i]["cluster_id"]) == ("skipped", "empty", None)
    assert clusters[1]["status"] == "kept"
    assert (clusters[6]["status"], clusters[6]["reason"], clusters[6]["cluster_id"]) == ("exact_duplicate", None, 1)
    rejected = spark.read.parquet(str(out / "rejected")).collect()
    assert sorted(r["reason"] for r in rejected) == ["null_id", "unparseable"]
    assert any(r["_corrupt_record"] == "{this is not json" for r in rejected)
    report = json.loads((out / "report.json").read_text())
    assert report["counts"]["input_rows"] == 8
    assert report["counts"]["skipped"] == {"empty": 4}
    assert report["counts"]["rejected_rows"] == {"unparseable": 1, "null_id": 1}
    assert [r["id"] for r in spark.read.parquet(str(out / "deduped")).collect()] == [1]
    out2 = tmp_path / "out2"
    assert _run(dedupe_main, spark, "--input", str(src), "--output", str(out2), "--keep-empty") == 0
    assert sorted(r["id"] for r in spark.read.parquet(str(out2 / "deduped")).collect()) == [1, 2, 3, 4, 5]


def test_invalid_utf8_in_parquet_is_decoded_and_counted(spark, dedupe_main, tmp_path):
    page = " ".join([PARAGRAPH, LONGER, PARAGRAPH.replace("Tuesday", "Monday")])
    good = page.encode()
    bad = page.encode().replace(b"Tuesday", b"Tues\xff\xfeday", 1)
    texts = pa.array([good, bad, b"\xc3\x28 only broken bytes \xa0\xa1"], type=pa.binary()).view(pa.string())
    table = pa.table({"id": pa.array(["a", "b", "c"]), "text": texts})
    pq.write_table(table, tmp_path / "in.parquet")
    out = tmp_path / "out"
    assert _run(dedupe_main, spark, "--input", str(tmp_path / "in.parquet"), "--output", str(out)) == 0
    clusters = {r["id"]: r for r in spark.read.parquet(str(out / "clusters")).collect()}
    assert set(clusters) == {"a", "b", "c"}
    # The broken bytes became U+FFFD: the page is fingerprinted like any other and differs
    # from its clean copy by one word ("tues", "day" instead of "tuesday").
    assert clusters["b"]["fingerprint"] is not None and clusters["b"]["status"] != "exact_duplicate"
    assert bin((clusters["a"]["fingerprint"] ^ clusters["b"]["fingerprint"]) & (2**64 - 1)).count("1") <= 8
    report = json.loads((out / "report.json").read_text())
    assert report["counts"]["invalid_utf8_documents"] == 2


def test_gzipped_json_lines_are_read(spark, dedupe_main, tmp_path):
    src = tmp_path / "in.jsonl.gz"
    with gzip.open(src, "wt", encoding="utf-8") as f:
        f.write(json.dumps({"id": 1, "text": PARAGRAPH}) + "\n" + json.dumps({"id": 2, "text": PARAGRAPH}) + "\n")
    out = tmp_path / "out"
    assert _run(dedupe_main, spark, "--input", str(src), "--output", str(out)) == 0
    statuses = sorted(r["status"] for r in spark.read.parquet(str(out / "clusters")).collect())
    assert statuses == ["exact_duplicate", "kept"]


@pytest.mark.slow
def test_a_failed_run_leaves_no_output_and_keeps_the_old_one(spark, dedupe_main, tmp_path, monkeypatch):
    src = _write_jsonl(tmp_path / "in.jsonl", [{"id": i, "text": f"{PARAGRAPH} {i}"} for i in range(5)])
    out = tmp_path / "out"
    assert _run(dedupe_main, spark, "--input", str(src), "--output", str(out)) == 0
    before = (out / "report.json").read_text()

    from simhash_udf.stages import clusters

    def broken(*args, **kwargs):
        raise RuntimeError("simulated failure after the join")

    # Both paths of the clusters (Spark's, and the driver's for a small run).
    monkeypatch.setattr(clusters, "cluster_assignment", broken)
    monkeypatch.setattr(clusters, "assigned_on_driver", broken)
    with pytest.raises(RuntimeError, match="simulated failure"):
        _run(dedupe_main, spark, "--input", str(src), "--output", str(out), "--overwrite")
    assert (out / "report.json").read_text() == before
    with pytest.raises(RuntimeError):
        _run(dedupe_main, spark, "--input", str(src), "--output", str(tmp_path / "fresh"))
    assert not (tmp_path / "fresh").exists()
    assert _no_staging_left(tmp_path)


@pytest.mark.slow
def test_a_50_mb_document_is_fingerprinted_on_its_prefix(spark, dedupe_main, tmp_path):
    huge = (PARAGRAPH + " ") * (50_000_000 // (len(PARAGRAPH) + 1))
    src = _write_jsonl(
        tmp_path / "in.jsonl",
        [
            {"id": 1, "text": huge},
            {"id": 2, "text": huge + " one more line at the very end"},
            {"id": 3, "text": "A different, ordinary page about gardening: " + "tomatoes, beans, " * 20},
        ],
    )
    assert src.stat().st_size > 90_000_000
    out = tmp_path / "out"
    assert _run(dedupe_main, spark, "--input", str(src), "--output", str(out)) == 0
    clusters = {r["id"]: r for r in spark.read.parquet(str(out / "clusters")).collect()}
    # The two giant documents differ only after the fingerprinted prefix: near duplicates
    # at distance 0, not exact copies (their full texts differ).
    assert clusters[2]["status"] == "near_duplicate" and clusters[2]["cluster_id"] == 1
    assert clusters[3]["status"] == "kept"


@pytest.mark.slow
def test_an_enormous_gzipped_text_document_and_its_cut_copy(spark, dedupe_main, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    huge = ((LONGER + " ") * (40_000_000 // (len(LONGER) + 1))).encode()
    packed = gzip.compress(huge, compresslevel=1)
    (folder / "huge.txt.gz").write_bytes(packed)
    (folder / "huge-cut.txt.gz").write_bytes(packed[: len(packed) * 3 // 4])
    (folder / "small.txt").write_text(PARAGRAPH)
    out = tmp_path / "out"
    assert _run(dedupe_main, spark, "--input", str(folder), "--output", str(out)) == 0
    clusters = {Path(r["id"]).name: r for r in spark.read.parquet(str(out / "clusters")).collect()}
    assert set(clusters) == {"huge.txt.gz", "small.txt"}
    assert clusters["huge.txt.gz"]["fingerprint"] is not None
    report = json.loads((out / "report.json").read_text())
    assert [Path(d["path"]).name for d in report["damaged_files"]] == ["huge-cut.txt.gz"]
    assert report["counts"]["rejected_rows"] == {"damaged_file": 1} and report["counts"]["input_rows"] == 3
