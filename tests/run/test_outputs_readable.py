"""Bad bytes in every input format: the rows are kept as documents and every output can be
read by the usual readers.

Each run writes an input with invalid UTF-8 (WARC: bytes invalid in the page's declared
charset) through `main()`, then reads every output folder (clusters/, pairs/, deduped/,
rejected/) with pyarrow (`to_pylist()`, which decodes every string), pandas, Spark and, when
it is installed, DuckDB. Arrow refuses a string column holding invalid UTF-8, so a folder
that still carries raw bytes in a string column fails here.

What the outputs must hold is computed by the test from the bytes it wrote, with Python's
own decoder (`bytes.decode("utf-8", "replace")`) and codecs, never from the job's output.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from generators import PARAGRAPH, write_warc_records


pytestmark = pytest.mark.spark

OUTPUTS = ("clusters", "pairs", "deduped", "rejected")


def fixed(raw: bytes) -> str:
    """What a string of these bytes must read as: each invalid sequence one U+FFFD."""
    return raw.decode("utf-8", "replace")


def valid(raw: bytes, codec: str = "utf-8") -> bool:
    try:
        raw.decode(codec)
    except UnicodeDecodeError:
        return False
    return True


@dataclass
class Case:
    """An input written by the test and what the job must make of it: `texts` (id -> text
    of every document, as deduped/ must hold it; None: not checked), `invalid` (how many
    documents had invalid bytes), `unparseable` (raw lines rejected/ must hold)."""

    path: Path
    args: list[str]
    texts: dict
    invalid: int
    unparseable: list[bytes] = field(default_factory=list)


def json_case(folder: Path) -> Case:
    """The issue's input: line 8 has a raw 0xFF inside a string, line 9 starts with FF FE;
    plus a line that is broken JSON as well as broken UTF-8 (it stays unparseable)."""
    texts = {i: f"{PARAGRAPH} Item {i}: " + " ".join(f"w{i}x{j}" for j in range(i * 5)) for i in range(1, 8)}
    lines = [json.dumps({"id": i, "text": t}).encode() for i, t in texts.items()]
    bad = {8: b"ok \xff broken", 9: b"\xff\xfe invalid utf-8 bytes"}
    lines += [b'{"id": %d, "text": "%s"}' % (i, raw) for i, raw in bad.items()]
    lines.append(json.dumps({"id": 10, "text": PARAGRAPH}).encode())
    cut = b'{"id": 11, "text": "cut \xfe short'
    lines.append(cut)
    path = folder / "in.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    texts |= {i: fixed(raw) for i, raw in bad.items()} | {10: PARAGRAPH}
    return Case(path, [], texts, invalid=2, unparseable=[cut])


def csv_case(folder: Path) -> Case:
    """String ids and texts with invalid bytes (two near-identical pages with broken ids, so
    that pairs/ holds repaired ids), and a BOM before the header."""
    rows = [
        (b"a", PARAGRAPH.encode()),
        (b"b\xff1", PARAGRAPH.encode() + b" One more sentence about the \xfe\xfe cranes."),
        (b"b\xff2", PARAGRAPH.encode() + b" One more sentence about the cranes."),
        (b"c", b"caf\xc3\xa9 \xc3\x28 truncated \xe2\x82 sequences"),
        (b"d", b"plain and short"),
    ]
    body = b"".join(b'%s,"%s"\r\n' % (i, t) for i, t in rows)
    path = folder / "in.csv"
    path.write_bytes(b"\xef\xbb\xbfid,text\r\n" + body)
    texts = {fixed(i): fixed(t) for i, t in rows}
    return Case(path, [], texts, invalid=sum(not (valid(i) and valid(t)) for i, t in rows))


def text_case(folder: Path) -> Case:
    """`--format text`: one document per file, one of them with invalid bytes."""
    files = {"good.txt": PARAGRAPH.encode(), "broken.txt": b"\xff\xfe" + PARAGRAPH.encode() + b" \x80 end"}
    root = folder / "texts"
    root.mkdir()
    texts = {}
    for name, raw in files.items():
        (root / name).write_bytes(raw)
        texts[(root / name).resolve().as_uri().replace("file:///", "file:/")] = fixed(raw)
    return Case(root, ["--format", "text"], texts, invalid=sum(not valid(r) for r in files.values()))


def parquet_case(folder: Path) -> Case:
    """String columns written from bytes, invalid ones included (the text and a `url`)."""
    ids = ["p1", "p2", "p3"]
    raws = [PARAGRAPH.encode(), PARAGRAPH.encode().replace(b"Tuesday", b"Tues\xffday"), b"\xc3\x28 broken"]
    urls = [b"http://a.example/", b"http://b.example/\xff", b"http://c.example/"]
    table = pa.table({
        "id": pa.array(ids),
        "text": pa.array(raws, type=pa.binary()).view(pa.string()),
        "url": pa.array(urls, type=pa.binary()).view(pa.string()),
    })
    path = folder / "in.parquet"
    pq.write_table(table, path)
    texts = dict(zip(ids, map(fixed, raws)))
    return Case(path, [], texts, invalid=sum(not (valid(r) and valid(u)) for r, u in zip(raws, urls)))


def warc_case(folder: Path) -> Case:
    """HTML responses whose bytes are invalid in their declared charset (UTF-8 with a stray
    0xFF, Shift_JIS with a lead byte and no trail byte), beside valid ones."""
    pages = [
        ("utf-8", f"<html><body><p>{PARAGRAPH} caf\u00e9</p></body></html>".encode()),
        ("utf-8", f"<html><body><p>{PARAGRAPH} broken</p></body></html>".encode().replace(b"broken", b"br\xffoken")),
        ("shift_jis", "<html><body><p>港の新しいコンテナターミナルは来春開業する。</p></body></html>".encode("shift_jis") + b"\x82 x"),
        ("windows-1252", b"<html><body><p>Caf\xe9 au lait, na\xefve r\xe9sum\xe9, and a long paragraph.</p></body></html>"),
    ]
    records = []
    for i, (charset, body) in enumerate(pages):
        head = f"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset={charset}\r\nContent-Length: {len(body)}\r\n\r\n"
        records.append(("response", f"http://w.example/{i}", "2024-03-01T00:00:00Z", head.encode() + body))
    path = folder / "crawl.warc.gz"
    write_warc_records(path, records)
    invalid = sum(not valid(body, charset) for charset, body in pages)
    return Case(path, [], {f"http://w.example/{i}": None for i in range(len(pages))}, invalid=invalid)


CASES = {"json": json_case, "csv": csv_case, "text": text_case, "parquet": parquet_case, "warc": warc_case}


def read_everywhere(spark, folder: Path) -> list[dict]:
    """The rows of an output folder, read by pyarrow; pandas, Spark (and DuckDB) must read
    as many."""
    rows = pq.read_table(folder).to_pylist()
    assert len(pd.read_parquet(folder)) == len(rows)
    assert spark.read.parquet(str(folder)).count() == len(rows)
    try:
        import duckdb
    except ImportError:
        return rows
    assert duckdb.sql(f"select * from read_parquet('{folder}/*.parquet')").fetchall() is not None
    return rows


@pytest.mark.parametrize("fmt", list(CASES))
def test_bad_bytes_are_documents_and_every_output_is_readable(spark, dedupe_main, tmp_path, fmt):
    case = CASES[fmt](tmp_path)
    out = tmp_path / "out"
    assert dedupe_main(["--input", str(case.path), "--output", str(out), *case.args], spark=spark) == 0
    outputs = {name: read_everywhere(spark, out / name) for name in OUTPUTS if (out / name).exists()}
    assert {"clusters", "deduped"} <= set(outputs)
    report = json.loads((out / "report.json").read_text())
    clusters = outputs["clusters"]
    key = "url" if fmt == "warc" else "id"
    # Every document is there under its id (repaired as Python repairs it), as a document.
    assert sorted(str(r[key]) for r in clusters) == sorted(map(str, case.texts))
    assert report["counts"]["invalid_utf8_documents"] == case.invalid
    assert report["counts"]["input_rows"] == len(clusters) + len(outputs.get("rejected", []))
    # deduped/ holds the input's columns, the texts decoded as Python decodes them.
    deduped = outputs["deduped"]
    assert deduped and all(set(r) for r in deduped)
    assert not any(c.startswith("_invalid") for c in deduped[0])
    for row in deduped:
        expected = case.texts[row[key]]
        if expected is not None:
            assert row["text"] == expected, row[key]
    rejected = outputs.get("rejected", [])
    assert sorted(r["_corrupt_bytes"] for r in rejected) == sorted(case.unparseable)
    assert sorted(r["_corrupt_record"] for r in rejected) == sorted(map(fixed, case.unparseable))
    assert all(r["reason"] == "unparseable" for r in rejected)


@pytest.mark.slow
def test_the_issue_lines_8_and_9_are_documents(spark, dedupe_main, tmp_path):
    """The two lines of the issue through `main()`: both ids in clusters/ as documents with
    a status, counted in `invalid_utf8_documents`, nothing rejected."""
    good = [json.dumps({"id": i, "text": f"{PARAGRAPH} number {i}"}).encode() for i in range(1, 8)]
    bad = [b'{"id": 8, "text": "ok \xff broken"}', b'{"id": 9, "text": "\xff\xfe invalid utf-8 bytes"}']
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"\n".join(good + bad) + b"\n")
    out = tmp_path / "out"
    assert dedupe_main(["--input", str(path), "--output", str(out)], spark=spark) == 0
    clusters = {r["id"]: r for r in spark.read.parquet(str(out / "clusters")).collect()}
    assert set(clusters) == set(range(1, 10))
    assert clusters[8]["status"] == clusters[9]["status"] == "kept"
    report = json.loads((out / "report.json").read_text())
    assert report["counts"]["invalid_utf8_documents"] == 2
    assert report["counts"]["rejected_rows"] == {}
    assert not (out / "rejected").exists()


def _checks_utf8(frame) -> bool:
    """Whether computing `frame` runs a UTF-8 check or repair of its strings."""
    plan = frame._jdf.queryExecution().analyzed().toString()
    return "is_valid_utf8" in plan or "make_valid_utf8" in plan


def test_a_parsed_input_is_repaired_once_where_it_is_stored(spark, tmp_path):
    """JSON (and CSV) input is stored once as Parquet (the `parse` stage): its strings are
    repaired on the way there, so the documents every later stage reads (the signatures, the
    deduped output, the samples) are read without checking their bytes again. Parquet input,
    not stored, is checked where it is read."""
    from simhash_udf.core.config import DedupeConfig
    from simhash_udf.run.pipeline import read_input
    from simhash_udf.stages.scratch import Stages

    case = json_case(tmp_path)
    source = read_input(spark, DedupeConfig(), str(case.path), "json", Stages(work=str(tmp_path / "work")))
    assert not _checks_utf8(source.documents)
    rows = {r["id"]: (r["text"], r["_invalid_bytes"]) for r in source.documents.collect()}
    assert {i: text for i, (text, _) in rows.items()} == case.texts
    assert {i for i, (_, bad) in rows.items() if bad} == {8, 9}
    assert [r["reason"] for r in source.rejected.collect()] == ["unparseable"]

    (tmp_path / "pq").mkdir()
    parquet = parquet_case(tmp_path / "pq")
    stored = read_input(spark, DedupeConfig(), str(parquet.path), "parquet", Stages(work=str(tmp_path / "work2")))
    assert _checks_utf8(stored.documents)
