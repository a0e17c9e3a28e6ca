"""Bad input at scale: generated inputs in every format go through the real job.

Each example writes files (JSON Lines, CSV, Parquet, text; plain, gzip, or gzip cut short)
mixing good rows with garbage: random bytes, invalid UTF-8, NUL bytes, BOMs, CRLF, nulls in
every column, ids and texts of the wrong type, repeated ids, empty and damaged files. The test
computes from the bytes it wrote, on its own, how many rows the input has and what becomes of
each (a line with invalid UTF-8 is read with U+FFFD in place of each bad sequence, as README
promises); then it runs `main()` and checks that

- the job returns 0 (never a crash, never an exit 2: nothing here is a wrong command line),
- clusters/ + rejected/ hold exactly the rows the test counted, each with a status or reason,
- every good document is in clusters/ under its id, and rejected/ has the reasons expected,
- report.json counts every rejection and skip by reason, the counts add up, and it names
  every damaged file,
- every output folder can be read by pyarrow (no invalid UTF-8 in a string column).

The examples are derandomised (the same ones on every run) and few: each is a whole Spark job.
"""

from __future__ import annotations

import csv
import gzip
import io as pyio
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

# Each example is a whole Spark job: all four properties are `slow` (the focused regression
# tests of every fix are in test_bad_input.py, in the fast set).
pytestmark = [pytest.mark.spark, pytest.mark.slow]

# No shrinking: each step would be another Spark job; a failure prints the example as found.
FUZZ = settings(
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
STATUSES = {"kept", "exact_duplicate", "near_duplicate", "skipped"}
ROW_REASONS = {None, "empty", "too_short"}

WORDS = ["harbour", "container", "terminal", "dredging", "cranes", "rail", "depot", "port", "fees", "coast",
         "港口", "集装箱", "码头", "铁路", "运费", "海岸", "Ünïcode", "naïve", "ﬁne", "Ｆｕｌｌ"]
texts = st.lists(st.sampled_from(WORDS), min_size=0, max_size=40).map(" ".join)
# Any text hypothesis can make: control characters, NUL, lone surrogates (JSON escapes them).
odd_texts = st.text(max_size=60)
wrong_type_values = st.one_of(
    st.integers(), st.floats(allow_nan=False), st.booleans(),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
garbage_bytes = st.binary(min_size=1, max_size=80)


# ---------------------------------------------------------------------------------------
# What the input holds, computed by the test from the bytes it wrote.


@dataclass
class Expected:
    """The rows of an input as the test counts them."""

    rows: int = 0
    reasons: Counter = field(default_factory=Counter)  # rejected/ reason -> rows
    good_ids: set = field(default_factory=set)  # ids that must be in clusters/
    id_counts: Counter = field(default_factory=Counter)  # every document's id -> rows
    damaged: set = field(default_factory=set)  # file names the report must list
    # A file cut short: rows read from it lie within [low, high] (the line cut through may
    # or may not be whole); checked on totals only.
    slack: int = 0

    def add_document(self, doc_id: Any, good: bool) -> None:
        self.rows += 1
        self.id_counts[doc_id] += 1
        if good:
            self.good_ids.add(doc_id)

    def reject(self, reason: str, n: int = 1) -> None:
        self.rows += n
        self.reasons[reason] += n

    def finish(self) -> None:
        """Every row of a repeated id but one is rejected as duplicate_id."""
        extra = sum(n - 1 for n in self.id_counts.values() if n > 1)
        if extra:
            self.reasons["duplicate_id"] += extra


def split_lines(data: bytes) -> list[bytes]:
    """Lines as Hadoop's LineRecordReader cuts them: at \\n, \\r or \\r\\n."""
    lines = re.split(rb"\r\n|\r|\n", data)
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def json_key(value: Any) -> Any:
    """An id as a string, as the job holds ids when the column is read as strings: exact for
    integers and strings (the only ids checked one by one); for objects and arrays Spark keeps
    the text as written, so this only serves to tell them apart."""
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def decode_line(line: bytes) -> str:
    """A line as the job must read it: invalid UTF-8 is not a reason to reject a row (README,
    "Nothing is lost"), each invalid sequence is U+FFFD (Python's replacement), a BOM is
    dropped."""
    return line.decode("utf-8-sig", "replace")


def count_json_lines(data: bytes, expected: Expected, *, string_ids: bool) -> None:
    """Classify each line as Spark's JSON reader does (one value per line; an array of
    objects is a row per object; whitespace-only lines are no row), invalid UTF-8 replaced."""
    for line in split_lines(data):
        if not line.strip(b" \t"):
            continue
        try:
            value = json.loads(decode_line(line))
        except ValueError:
            expected.reject("unparseable")
            continue
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            objects = value
        elif isinstance(value, list) and not value:
            continue
        elif isinstance(value, dict):
            objects = [value]
        else:
            expected.reject("unparseable")
            continue
        for obj in objects:
            doc_id = obj.get("id")
            if doc_id is None:
                expected.reject("null_id")
            else:
                key = json_key(doc_id) if string_ids else doc_id
                expected.add_document(key, good=isinstance(doc_id, (int, str)) and not isinstance(doc_id, bool))


# ---------------------------------------------------------------------------------------
# Generated inputs.


@st.composite
def json_rows(draw, first_id: int) -> tuple[list[bytes], bool]:
    """Lines of a JSON Lines file (bytes, without line ends) and whether any id is not an
    integer (then Spark reads the id column as strings)."""
    lines: list[bytes] = []
    string_ids = False
    next_id = first_id
    for _ in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(
            ["good", "good", "good", "repeat", "null_id", "no_id", "wrong_id", "wrong_text",
             "null_text", "odd_text", "garbage", "bad_utf8", "raw_nul", "array", "scalar", "blank"]
        ))
        row: dict[str, Any]
        if kind in ("good", "wrong_text", "null_text", "odd_text"):
            next_id += 1
            text = {"good": draw(texts), "wrong_text": draw(wrong_type_values), "null_text": None,
                    "odd_text": draw(odd_texts)}[kind]
            row = {"id": next_id, "text": text}
        elif kind == "repeat":
            row = {"id": first_id + 1, "text": draw(texts)}
        elif kind == "null_id":
            row = {"id": None, "text": draw(texts)}
        elif kind == "no_id":
            row = {"text": draw(texts)}
        elif kind == "wrong_id":
            next_id += 1
            string_ids = True
            # Unique by construction: the counter is inside the value.
            row = {"id": draw(st.sampled_from([{"n": next_id}, [next_id, 0], next_id + 0.5])), "text": draw(texts)}
        elif kind == "garbage":
            lines.append(draw(garbage_bytes))
            continue
        elif kind == "bad_utf8":
            lines.append(json.dumps({"id": -1, "text": "x"}).encode().replace(b'"x"', b'"\xff\xfe bad"'))
            continue
        elif kind == "raw_nul":
            lines.append(b'{"id": -2, "text": "a\x00b"}')
            continue
        elif kind == "array":
            next_id += 2
            lines.append(json.dumps([{"id": next_id - 1, "text": draw(texts)}, {"id": next_id, "text": None}]).encode())
            continue
        elif kind == "scalar":
            lines.append(draw(st.sampled_from([b"5", b'"just a string"', b"null", b"[1, 2]", b"[]"])))
            continue
        else:
            lines.append(draw(st.sampled_from([b"", b"   ", b"\t"])))
            continue
        if draw(st.booleans()):  # extra columns, null or of any type
            row[draw(st.sampled_from(["extra", "url", "fetch_time"]))] = draw(st.one_of(st.none(), wrong_type_values))
        lines.append(json.dumps(row, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass"))
    return lines, string_ids


def json_file_bytes(lines: list[bytes], crlf: bool, bom: bool) -> bytes:
    data = (b"\r\n" if crlf else b"\n").join(lines) + b"\n"
    return (b"\xef\xbb\xbf" + data) if bom else data


def run_job(dedupe_main, spark, folder: Path, *extra: str) -> tuple[Path, int]:
    out = folder.parent / (folder.name + "-out")
    code = dedupe_main(["--input", str(folder), "--output", str(out), "--log-level", "WARNING", *extra], spark=spark)
    return out, code


def read_outputs(spark, out: Path) -> tuple[list, list, dict]:
    """clusters/ and rejected/ rows and the report; every output folder must also be
    readable by pyarrow, which refuses invalid UTF-8 in a string column."""
    for name in ("clusters", "pairs", "deduped", "rejected"):
        if (out / name).exists():
            assert len(pq.read_table(out / name).to_pylist()) == spark.read.parquet(str(out / name)).count(), name
    clusters = spark.read.parquet(str(out / "clusters")).collect()
    rejected = spark.read.parquet(str(out / "rejected")).collect() if (out / "rejected").exists() else []
    return clusters, rejected, json.loads((out / "report.json").read_text())


def check_accounting(clusters: list, rejected: list, report: dict, expected: Expected) -> None:
    """The properties every run must have (see the module docstring)."""
    counts = report["counts"]
    total = len(clusters) + len(rejected)
    assert counts["input_rows"] == total, "report's input rows differ from clusters/ + rejected/"
    assert expected.rows - expected.slack <= total <= expected.rows
    # Every row has a status or a reason, and the report counts each by reason.
    assert all(r["status"] in STATUSES and r["reason"] in ROW_REASONS for r in clusters)
    assert all(r["reason"] for r in rejected)
    assert counts["rejected_rows"] == dict(Counter(r["reason"] for r in rejected))
    skipped = Counter(r["reason"] for r in clusters if r["status"] == "skipped")
    assert counts["skipped"] == dict(skipped) and set(skipped) <= {"empty"}
    assert counts["documents"] == len(clusters)
    assert counts["kept"] + counts["exact_duplicates"] + counts["near_duplicates"] + sum(skipped.values()) == len(clusters)
    # Each document appears once; the ids the test wrote are all there.
    ids = [r["id"] for r in clusters]
    assert len(ids) == len(set(ids))
    assert expected.good_ids <= set(ids), f"missing from clusters/: {sorted(map(str, expected.good_ids - set(ids)))[:5]}"
    if not expected.slack:
        assert dict(Counter(r["reason"] for r in rejected)) == dict(+expected.reasons)
        assert len(clusters) == len(expected.id_counts)
    listed = {Path(d["path"].split(":", 1)[-1]).name: d["reason"] for d in report["damaged_files"]}
    assert counts["damaged_files"] == len(report["damaged_files"])
    assert set(listed) == expected.damaged, listed


# ---------------------------------------------------------------------------------------
# JSON Lines, plain and gzip (some cut short or not gzip at all).


@st.composite
def json_inputs(draw) -> list[tuple[str, bytes, str]]:
    """Files (name, bytes, how they were damaged: '', 'cut' or 'not_gzip')."""
    files = []
    for n in range(draw(st.integers(1, 3))):
        lines, _ = draw(json_rows(first_id=1000 * n))
        data = json_file_bytes(lines, crlf=draw(st.booleans()), bom=draw(st.booleans()))
        how = draw(st.sampled_from(["plain", "plain", "gzip", "cut", "not_gzip", "empty"]))
        if how == "plain":
            files.append((f"part-{n}.jsonl", data, ""))
        elif how == "empty":
            files.append((f"part-{n}.jsonl", b"", ""))
        elif how == "gzip":
            files.append((f"part-{n}.jsonl.gz", gzip.compress(data), ""))
        elif how == "not_gzip":
            files.append((f"part-{n}.jsonl.gz", data, "not_gzip"))
        else:
            packed = gzip.compress(data)
            files.append((f"part-{n}.jsonl.gz", packed[: draw(st.integers(1, len(packed) - 1))], "cut"))
    return files


def expected_json(files: list[tuple[str, bytes, str]]) -> Expected:
    string_ids = False
    decoded = []
    for name, data, how in files:
        if how == "not_gzip":
            content = b""  # nothing of it can be read
        elif name.endswith(".gz") and how == "cut":
            content = _gunzip_prefix(data)
        elif name.endswith(".gz"):
            content = gzip.decompress(data)
        else:
            content = data
        decoded.append((name, content, how))
        string_ids |= any(_non_integer_id(line) for line in split_lines(content))
    expected = Expected()
    for name, content, how in decoded:
        if how == "cut":
            # Only whole lines before the cut are rows; the last of them may be lost with the
            # line end cut in two (\r|\n).
            whole = content[: content.rfind(b"\n") + 1] if b"\n" in content else b""
            before = expected.rows
            count_json_lines(whole, expected, string_ids=string_ids)
            expected.slack += expected.rows - before
        else:
            count_json_lines(content, expected, string_ids=string_ids)
        if how:
            expected.damaged.add(name)
    if expected.slack:
        expected.good_ids = set()  # which rows of a cut file survive is checked on totals only
    expected.finish()
    return expected


def _gunzip_prefix(data: bytes) -> bytes:
    import zlib

    return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data)


def _non_integer_id(line: bytes) -> bool:
    try:
        value = json.loads(decode_line(line))
    except ValueError:
        return False
    objects = value if isinstance(value, list) else [value]
    return any(
        isinstance(o, dict) and o.get("id") is not None and (isinstance(o["id"], bool) or not isinstance(o["id"], int))
        for o in objects
    )


# Always run besides the generated ones: every kind of line in one file, with CRLF and a BOM,
# next to the same lines gzipped and cut in the middle.
EVERY_KIND = [
    b'{"id": 1, "text": "harbour cranes"}', b'{"id": 2, "text": null, "extra": [1, {"a": null}]}',
    b'{"id": null, "text": "x"}', b'{"text": "no id"}', b'{"id": {"n": 3}, "text": 5}', b'{"id": 4.5, "text": true}',
    b'{"id": 5, "text": "\\u0000 NUL \\ud800 lone surrogate"}', b'{"id": 6, "text": "a\x00b"}',
    b'{"id": 7, "text": "\xff\xfe"}', b"\xef\xbb\xbf{\"id\": 8}", b"\x00", b"   ", b"[]", b"null",
    b'[{"id": 9}, {"id": 10, "text": "t"}]', b"{not json", b'{"id": 1, "text": "repeated id"}',
]


@settings(FUZZ, max_examples=8)
@example(files=[("every-kind.jsonl", json_file_bytes(EVERY_KIND, crlf=True, bom=True), "")])
@example(files=[
    ("every-kind.jsonl", json_file_bytes(EVERY_KIND, crlf=False, bom=False), ""),
    ("cut.jsonl.gz", gzip.compress(json_file_bytes([b'{"id": %d, "text": "t %d"}' % (i, i) for i in range(100, 400)], False, False))[:700], "cut"),
])
@given(files=json_inputs())
def test_json_lines_of_any_bytes(spark, dedupe_main, tmp_path_factory, files):
    folder = tmp_path_factory.mktemp("json")
    for name, data, _ in files:
        (folder / name).write_bytes(data)
    out, code = run_job(dedupe_main, spark, folder)
    assert code == 0
    clusters, rejected, report = read_outputs(spark, out)
    expected = expected_json(files)
    if clusters and isinstance(clusters[0]["id"], str):
        expected.good_ids = {json_key(i) for i in expected.good_ids}
    check_accounting(clusters, rejected, report, expected)


# ---------------------------------------------------------------------------------------
# CSV with a header: nulls, wrong types, quotes, newlines and NUL inside fields.


@st.composite
def csv_input(draw) -> tuple[bytes, Expected]:
    expected = Expected()
    buffer = pyio.StringIO()
    writer = csv.writer(buffer, lineterminator=draw(st.sampled_from(["\n", "\r\n"])))
    writer.writerow(["id", "text", "extra"])
    ids = draw(st.sampled_from(["int", "str", "mixed"]))
    for n in range(draw(st.integers(0, 10))):
        kind = draw(st.sampled_from(["good", "good", "null_id", "null_text", "odd_text", "repeat", "null_all"]))
        doc_id: Any = {"int": n + 1, "str": f"doc-{n + 1}", "mixed": (n + 1 if n % 2 else f"{n + 1}.5")}[ids]
        if kind == "repeat":
            doc_id = {"int": 1, "str": "doc-1", "mixed": 1}[ids] if n else doc_id
        text = {"odd_text": draw(odd_texts),
                "null_text": None, "null_all": None}.get(kind, draw(texts))
        if kind in ("null_id", "null_all"):
            writer.writerow(["", text, ""])
            expected.reject("null_id")
            continue
        writer.writerow([doc_id, text, draw(st.sampled_from(["", "1", "x,y", 'say "hi"']))])
        expected.add_document(str(doc_id), good=True)
    expected.finish()
    data = buffer.getvalue().encode("utf-8", "surrogatepass")
    return (b"\xef\xbb\xbf" + data if draw(st.booleans()) else data), expected


@settings(FUZZ, max_examples=5)
@given(made=csv_input(), gz=st.booleans())
def test_csv_with_nulls_and_wrong_types(spark, dedupe_main, tmp_path_factory, made, gz):
    data, expected = made
    folder = tmp_path_factory.mktemp("csv")
    (folder / ("in.csv.gz" if gz else "in.csv")).write_bytes(gzip.compress(data) if gz else data)
    out, code = run_job(dedupe_main, spark, folder)
    assert code == 0
    clusters, rejected, report = read_outputs(spark, out)
    # CSV ids come back as integers or strings depending on what Spark inferred.
    got = Counter(str(r["id"]) for r in clusters)
    assert set(got) == set(expected.id_counts) and max(got.values(), default=1) == 1
    expected.good_ids = {r["id"] for r in clusters}
    check_accounting(clusters, rejected, report, expected)


# ---------------------------------------------------------------------------------------
# Parquet: null columns, invalid UTF-8 strings, binary text, damaged files.


@st.composite
def parquet_inputs(draw) -> tuple[list[tuple[str, bytes]], Expected]:
    expected = Expected()
    files = []
    text_type = draw(st.sampled_from([pa.string(), pa.binary(), pa.large_string()]))
    id_type = draw(st.sampled_from([pa.int64(), pa.int32(), pa.string()]))
    for n in range(draw(st.integers(1, 3))):
        how = draw(st.sampled_from(["whole", "whole", "cut", "random", "empty"]))
        size = draw(st.integers(0, 8))
        ids = [None if draw(st.integers(0, 4)) == 0 else 100 * n + i for i in range(size)]
        raw = [draw(st.one_of(st.none(), texts.map(str.encode), garbage_bytes)) for _ in range(size)]
        # Strings viewed from bytes: invalid UTF-8 is written as it is.
        binary_type = pa.large_binary() if text_type == pa.large_string() else pa.binary()
        texts_array = pa.array(raw, type=binary_type)
        if text_type != pa.binary():
            texts_array = texts_array.view(text_type)
        id_values = [None if i is None else (str(i) if id_type == pa.string() else i) for i in ids]
        table = pa.table({
            "id": pa.array(id_values, type=id_type), "text": texts_array,
            "nothing": pa.nulls(size), "extra": pa.array([None] * size, type=pa.float64()),
        })
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink)
        data = sink.getvalue().to_pybytes()
        name = f"part-{n}.parquet"
        if how == "whole":
            for value in id_values:
                if value is None:
                    expected.reject("null_id")
                else:
                    expected.add_document(value, good=True)
        else:
            data = {"cut": data[: draw(st.integers(0, len(data) - 1))], "random": draw(garbage_bytes), "empty": b""}[how]
            expected.damaged.add(name)
        files.append((name, data))
    expected.finish()
    return files, expected


@settings(FUZZ, max_examples=5)
@given(made=parquet_inputs())
def test_parquet_with_null_columns_and_damaged_files(spark, dedupe_main, tmp_path_factory, made):
    files, expected = made
    folder = tmp_path_factory.mktemp("parquet")
    for name, data in files:
        (folder / name).write_bytes(data)
    out, code = run_job(dedupe_main, spark, folder)
    assert code == 0
    clusters, rejected, report = read_outputs(spark, out)
    check_accounting(clusters, rejected, report, expected)


# ---------------------------------------------------------------------------------------
# Text: one document per file, whatever its bytes.


@st.composite
def text_inputs(draw) -> list[tuple[str, bytes, str]]:
    files = []
    for n in range(draw(st.integers(1, 4))):
        content = draw(st.one_of(
            texts.map(str.encode), garbage_bytes, st.just(b""),
            st.just(b"\xef\xbb\xbfBOM first\r\nthen CRLF\r\n\x00 and a NUL"),
        ))
        how = draw(st.sampled_from(["plain", "plain", "gzip", "cut"]))
        if how == "plain":
            files.append((f"doc {n}.txt", content, ""))
        elif how == "gzip":
            files.append((f"doc-{n}.txt.gz", gzip.compress(content), ""))
        else:
            packed = gzip.compress(content)
            files.append((f"doc-{n}.txt.gz", packed[: draw(st.integers(0, len(packed) - 1))], "cut"))
    return files


@settings(FUZZ, max_examples=5)
@given(files=text_inputs())
def test_text_files_of_any_bytes(spark, dedupe_main, tmp_path_factory, files):
    folder = tmp_path_factory.mktemp("text")
    expected = Expected()
    for name, data, how in files:
        (folder / name).write_bytes(data)
        # A gzip cut to 0 bytes is an empty file, which is whole (and an empty document).
        if how == "cut" and data:
            expected.reject("damaged_file")
            expected.damaged.add(name)
        else:
            expected.add_document((folder / name).resolve().as_uri().replace("file:///", "file:/"), good=True)
    out, code = run_job(dedupe_main, spark, folder)
    assert code == 0
    clusters, rejected, report = read_outputs(spark, out)
    check_accounting(clusters, rejected, report, expected)
    empty = {Path(r["id"]).name for r in clusters if r["reason"] == "empty"}
    assert {n.replace(" ", "%20") for n, d, h in files if (gzip.decompress(d) if h == "gzip" else d).strip() == b""} <= empty
