"""simhash_udf.files.inputs: which files, in which format, which are damaged, read as one frame.

The expectations come from outside the module: the README's table of extensions, os.walk for
the listing, Python's gzip/bz2 and pyarrow for which files are damaged, Python's json and csv
modules and plain file reads for the rows, and Spark's own `_metadata.file_path` for file URIs.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from simhash_udf.files.inputs import (
    MIN_SPLITS_KEY,
    InputError,
    balance_splits,
    balanced_split_count,
    damaged_files,
    infer_format,
    input_files,
    read_input_files,
    split_setting_restored,
)

# -- the format from the file names (README: ".parquet, .jsonl/.json/.ndjson, .csv, .txt,
# optionally compressed"; .warc/.wet for crawls) --------------------------------------------


@pytest.mark.parametrize(
    ("names", "fmt"),
    [
        (["a.parquet", "b.PARQUET"], "parquet"),
        (["a.jsonl", "b.json", "c.ndjson", "d.jsonl.gz", "e.json.bz2", "f.ndjson.zst"], "json"),
        (["a.csv", "b.csv.gz", "c.csv.deflate"], "csv"),
        (["a.txt", "b.text", "c.txt.xz", "d.txt.lz4", "e.txt.snappy"], "text"),
        (["crawl-0.warc.gz", "crawl-1.warc"], "warc"),
        (["crawl-0.wet.gz"], "wet"),
        (["/deep/folder.json/part-0.csv"], "csv"),  # the file's own extension, not its folder's
    ],
)
def test_the_format_is_inferred_from_the_extensions(names: list[str], fmt: str) -> None:
    assert infer_format(names) == fmt


@pytest.mark.parametrize(
    "names",
    [["a.json", "b.csv"], ["a.parquet", "b.txt.gz"], ["a.dat"], ["README"], ["a.gz"], ["a.json", "b.unknown"]],
)
def test_mixed_or_unknown_extensions_ask_for_format(names: list[str]) -> None:
    with pytest.raises(InputError, match="cannot infer the input format.*pass --format with one of"):
        infer_format(names)


# -- listing -----------------------------------------------------------------------------

def walked_data_files(root: Path) -> list[str]:
    """The oracle of the listing: files under root whose own name and folders' names do not
    start with "." or "_" (Spark's and Hadoop's convention for hidden files)."""
    found = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = [d for d in subfolders if not d.startswith((".", "_"))]
        found += [os.path.join(folder, f) for f in files if not f.startswith((".", "_"))]
    return sorted(found)


@pytest.fixture(scope="module")
def listed_folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("listing")
    for relative in [
        "a.jsonl", "b c.jsonl", "z/part-0.jsonl", "z/deeper/part-1.jsonl",
        "_SUCCESS", ".a.jsonl.crc", "_temporary/0/part-9.jsonl", ".hidden/part-8.jsonl", "z/_meta",
    ]:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"id": relative, "text": "x" * len(relative)}) + "\n")
    return root


@pytest.mark.spark
def test_input_files_are_the_visible_files_under_a_folder_sorted_with_their_sizes(spark, listed_folder):
    files = input_files(spark, str(listed_folder))
    local = [f.path.removeprefix("file:") for f in files]
    assert local == walked_data_files(listed_folder)
    assert [f.size for f in files] == [os.path.getsize(p) for p in local]


@pytest.mark.spark
def test_input_file_uris_are_what_spark_names_the_rows_files(spark, listed_folder):
    """`uri` is how Spark's `_metadata.file_path` names a file (URL-encoded: "b%20c.jsonl")."""
    files = input_files(spark, str(listed_folder))
    named = {r[0] for r in spark.read.text([f.path for f in files]).select("_metadata.file_path").collect()}
    assert {f.uri for f in files} == named
    assert any("%20" in f.uri for f in files)


@pytest.mark.spark
def test_a_glob_lists_what_it_matches(spark, listed_folder):
    files = input_files(spark, str(listed_folder / "z" / "*" / "*.jsonl"))
    assert [f.path.removeprefix("file:") for f in files] == [str(listed_folder / "z" / "deeper" / "part-1.jsonl")]


@pytest.mark.spark
def test_no_match_and_no_data_files_are_input_errors(spark, tmp_path):
    with pytest.raises(InputError, match="no input: nothing matches"):
        input_files(spark, str(tmp_path / "missing" / "*.jsonl"))
    (tmp_path / "only-hidden").mkdir()
    (tmp_path / "only-hidden" / "_SUCCESS").write_text("")
    with pytest.raises(InputError, match="holds no data files"):
        input_files(spark, str(tmp_path / "only-hidden"))


# -- damaged files -----------------------------------------------------------------------
LINES = [{"id": i, "text": f"document number {i} " * 20} for i in range(400)]
JSON_BYTES = "".join(json.dumps(row) + "\n" for row in LINES).encode()


def python_reads(path: Path) -> bool:
    """Whether Python's own library reads the whole file without an error."""
    data = path.read_bytes()
    try:
        if path.suffix == ".gz":
            gzip.GzipFile(fileobj=io.BytesIO(data)).read()
        elif path.suffix == ".bz2":
            bz2.decompress(data)
        elif path.suffix == ".parquet":
            pq.read_table(io.BytesIO(data))
    except (OSError, EOFError, ValueError, pa.ArrowException):
        return False
    return True


@pytest.mark.spark
def test_damaged_compressed_files_are_named_as_pythons_libraries_find_them(spark, tmp_path):
    gz, bz = gzip.compress(JSON_BYTES), bz2.compress(JSON_BYTES)
    contents = {
        "whole.json.gz": gz, "cut.json.gz": gz[: len(gz) // 2], "two-members.json.gz": gz + gz,
        "cut-second-member.json.gz": gz + gz[:-9], "whole.json.bz2": bz, "cut.json.bz2": bz[:-40],
        "empty.json.gz": b"", "plain.json": JSON_BYTES,
    }
    for name, data in contents.items():
        (tmp_path / name).write_bytes(data)
    expected = {name for name in contents if not python_reads(tmp_path / name)}
    assert expected == {"cut.json.gz", "cut-second-member.json.gz", "cut.json.bz2"}

    damaged = damaged_files(spark, input_files(spark, str(tmp_path)), "json")
    assert {Path(d.path).name for d in damaged} == expected
    assert all(d.reason.startswith(("truncated gzip", "truncated bzip2")) for d in damaged), damaged


@pytest.mark.spark
def test_damaged_parquet_files_are_named_as_pyarrow_finds_them(spark, tmp_path):
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(LINES), sink)
    data = sink.getvalue()
    contents = {"whole.parquet": data, "cut.parquet": data[:-100], "empty.parquet": b"", "json.parquet": JSON_BYTES}
    for name, content in contents.items():
        (tmp_path / name).write_bytes(content)
    expected = {name for name in contents if not python_reads(tmp_path / name)}
    assert expected == {"cut.parquet", "empty.parquet", "json.parquet"}
    damaged = damaged_files(spark, input_files(spark, str(tmp_path)), "parquet")
    assert {Path(d.path).name for d in damaged} == expected


# -- reading -----------------------------------------------------------------------------
def rows_of(frame, *columns: str) -> list[tuple]:
    return sorted(tuple(r[c] for c in columns) for r in frame.select(*columns).collect())


@pytest.mark.spark
def test_json_lines_plain_and_gzipped_read_as_pythons_json_module_reads_them(spark, tmp_path):
    (tmp_path / "a.jsonl").write_bytes(JSON_BYTES[: len(JSON_BYTES) // 2].rsplit(b"\n", 1)[0] + b"\n")
    (tmp_path / "b.json.gz").write_bytes(gzip.compress(JSON_BYTES))
    raw = read_input_files(spark, str(tmp_path))
    assert raw.format == "json" and raw.damaged == []
    lines = (tmp_path / "a.jsonl").read_bytes().splitlines()
    lines += gzip.decompress((tmp_path / "b.json.gz").read_bytes()).splitlines()
    expected = sorted((row["id"], row["text"]) for row in map(json.loads, lines))
    assert rows_of(raw.frame, "id", "text") == expected


@pytest.mark.spark
def test_csv_reads_as_pythons_csv_module_reads_it(spark, tmp_path):
    rows = [{"id": "1", "text": 'a "quoted", multi\nline text'}, {"id": "2", "text": "plain"}, {"id": "3", "text": "é ü 日本"}]
    with open(tmp_path / "docs.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=["id", "text"])
        writer.writeheader()
        writer.writerows(rows)
    with open(tmp_path / "docs.csv", newline="", encoding="utf-8") as handle:
        expected = sorted((int(r["id"]), r["text"]) for r in csv.DictReader(handle))
    raw = read_input_files(spark, str(tmp_path))
    assert raw.format == "csv"
    assert rows_of(raw.frame, "id", "text") == expected


@pytest.mark.spark
def test_text_files_are_one_row_each_named_by_uri_with_damaged_ones_kept_as_rows(spark, tmp_path):
    texts = {"one.txt": "first document\nwith two lines", "two.txt": "second", "empty.txt": ""}
    for name, text in texts.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "cut.txt.gz").write_bytes(gzip.compress(b"a long text " * 500)[:-30])
    raw = read_input_files(spark, str(tmp_path))
    assert raw.format == "text"
    assert [Path(d.path).name for d in raw.damaged] == ["cut.txt.gz"]
    uri = {Path(f.path).name: f.uri for f in input_files(spark, str(tmp_path))}
    got = rows_of(raw.frame, "id", "text", "_damaged_file")
    assert [(i, t) for i, t, _ in got] == sorted(
        [(uri[name], text) for name, text in texts.items()] + [(uri["cut.txt.gz"], None)]
    )
    assert [d for i, _, d in got if d] == [raw.damaged[0].reason]


@pytest.mark.spark
def test_a_cut_gzip_is_named_and_gives_no_row_it_does_not_hold(spark, tmp_path):
    gz = gzip.compress(JSON_BYTES)
    (tmp_path / "whole.json.gz").write_bytes(gz)
    (tmp_path / "cut.json.gz").write_bytes(gz[: len(gz) // 2])
    raw = read_input_files(spark, str(tmp_path))
    assert [Path(d.path).name for d in raw.damaged] == ["cut.json.gz"]
    got = [r for r in rows_of(raw.frame, "id", "text") if r != (None, None)]
    # Every row of the whole file, and from the cut one only lines it really holds.
    whole = sorted((row["id"], row["text"]) for row in LINES)
    assert sorted(set(got)) == whole
    assert len(got) > len(whole), "the cut file's rows before the cut are kept"


@pytest.mark.spark
def test_a_format_named_by_hand_must_be_known(spark, tmp_path):
    (tmp_path / "a.jsonl").write_bytes(JSON_BYTES)
    with pytest.raises(InputError, match="unknown format 'xml'"):
        read_input_files(spark, str(tmp_path), fmt="xml")


# -- how many splits the input is cut into: a multiple of the cores --------------------------


def test_the_balanced_split_count_is_the_fewest_multiple_of_the_cores_within_the_split_size() -> None:
    mb = 1 << 20
    for total in (0, 1, 5 * mb, 128 * mb, 256 * mb, 257 * mb, 345 * mb, 1000 * mb, 10**12):
        for cores in (1, 2, 3, 8, 200):
            count = balanced_split_count(total, cores, 128 * mb)
            assert count % cores == 0 and count >= cores
            assert total / count <= 128 * mb  # no split over the size Spark allows
            # One wave fewer would need splits over that size (brute force over the multiples).
            fewer = [n for n in range(cores, count, cores) if total / n <= 128 * mb]
            assert fewer == []
    assert balanced_split_count(345 * mb, 2, 128 * mb) == 4  # Spark alone: 3 splits on 2 cores
    assert balanced_split_count(200 * mb, 2, 128 * mb) == 2  # as Spark's own minimum


@pytest.mark.spark
def test_a_run_reads_its_input_in_a_multiple_of_the_cores_and_gives_the_session_its_setting_back(spark, tmp_path):
    """cores + 0.5 split sizes of JSON lines: Spark alone cuts cores + 1 splits, the last read
    while the other cores idle; balanced, 2 x cores. The session's own setting is back afterwards."""
    cores = spark.sparkContext.defaultParallelism
    line = json.dumps({"id": 0, "text": "x" * 1000}).encode() + b"\n"
    (tmp_path / "docs.jsonl").write_bytes(line * ((cores * 2 + 1) * (1 << 20) // len(line)))
    files = input_files(spark, str(tmp_path))
    # Splits of 2 MiB, a file's open cost 64 KiB (Spark's defaults: 128 MiB and 4 MiB).
    sizes = {"spark.sql.files.maxPartitionBytes": "2m", "spark.sql.files.openCostInBytes": "64k"}
    before = {key: spark.conf.get(key) for key in sizes}
    try:
        for key, value in sizes.items():
            spark.conf.set(key, value)
        assert spark.conf.get(MIN_SPLITS_KEY, None) is None
        assert read_input_files(spark, str(tmp_path), files=files).frame.rdd.getNumPartitions() == cores + 1
        with split_setting_restored(spark):
            balance_splits(spark, files)
            assert read_input_files(spark, str(tmp_path), files=files).frame.rdd.getNumPartitions() == 2 * cores
        assert spark.conf.get(MIN_SPLITS_KEY, None) is None
        # A setting of the session's own is kept, during a run and after it.
        spark.conf.set(MIN_SPLITS_KEY, "5")
        with split_setting_restored(spark):
            balance_splits(spark, files)
            assert spark.conf.get(MIN_SPLITS_KEY) == "5"
            spark.conf.set(MIN_SPLITS_KEY, "9")
        assert spark.conf.get(MIN_SPLITS_KEY) == "5"
    finally:
        spark.conf.unset(MIN_SPLITS_KEY)
        for key, value in before.items():
            spark.conf.set(key, value)
