"""simhash_udf.files.outputs on real folders: a staged output appears all at once or not at all.

Folders are inspected with pathlib and Parquet read back with pyarrow, independently of the
Hadoop FileSystem calls the module makes.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from helpers import jobs_in_group

from simhash_udf.files.outputs import OutputError, StagedOutput, report_json, write_parquet

pytestmark = pytest.mark.spark


def listing(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (Hadoop's .crc files left out) with its bytes."""
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.name.endswith(".crc")
    }


def siblings(target: Path) -> list[str]:
    """Names beside `target` other than itself: staging and replaced folders."""
    return sorted(p.name for p in target.parent.iterdir() if p.name != target.name)


def old_output(tmp_path: Path) -> Path:
    target = tmp_path / "out"
    (target / "pairs").mkdir(parents=True)
    (target / "report.json").write_text('{"old": true}')
    (target / "pairs" / "part-0").write_text("old pairs")
    return target


def test_a_new_output_appears_only_on_publish_and_whole(spark, tmp_path):
    target = tmp_path / "out"
    staged = StagedOutput(spark, str(target), overwrite=False)
    staging = Path(staged.staging.removeprefix("file:"))
    assert staging.parent == tmp_path and staging.name.startswith(".out.staging-")
    write_parquet(spark.createDataFrame([(1, "a"), (2, "b")], "id long, text string"), staged.path("clusters"))
    write_parquet(spark.range(3), staged.work + "/scratch")
    staged.write_text("report.json", '{"new": "é"}')
    assert not target.exists(), "nothing at the target before publish"

    staged.publish()
    assert (target / "report.json").read_text() == '{"new": "é"}'
    assert sorted(pq.read_table(target / "clusters").to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "text": "a"}, {"id": 2, "text": "b"},
    ]
    assert not (target / "_work").exists(), "the scratch folder is not published"
    assert siblings(target) == [], "no staging folder left behind"


def test_an_existing_output_is_refused_without_overwrite_and_untouched(spark, tmp_path):
    target = old_output(tmp_path)
    before = listing(target)
    with pytest.raises(OutputError, match="exists; pass --overwrite"):
        StagedOutput(spark, str(target), overwrite=False)
    assert listing(target) == before
    assert siblings(target) == [], "refused before staging anything"


def test_overwrite_keeps_the_old_output_until_publish_then_replaces_it_whole(spark, tmp_path):
    target = old_output(tmp_path)
    before = listing(target)
    staged = StagedOutput(spark, str(target), overwrite=True)
    staged.write_text("report.json", '{"new": true}')
    assert listing(target) == before, "the old output stays readable while the run writes"

    staged.publish()
    assert listing(target) == {"report.json": b'{"new": true}'}, "no file of the old output survives"
    assert siblings(target) == []


def test_discard_removes_the_staging_and_leaves_the_old_output(spark, tmp_path):
    target = old_output(tmp_path)
    before = listing(target)
    staged = StagedOutput(spark, str(target), overwrite=True)
    staged.write_text("report.json", '{"new": true}')
    staged.discard()
    assert listing(target) == before
    assert siblings(target) == []


def test_a_publish_whose_staging_is_gone_fails_and_the_next_run_finds_the_old_output(spark, tmp_path):
    """The old output is moved aside before the new one is renamed in. When that rename
    fails (here: the staging folder was removed under the run; Hadoop's local file system
    raises) the publish fails, and the next run on the target starts from the old output."""
    target = old_output(tmp_path)
    before = listing(target)
    staged = StagedOutput(spark, str(target), overwrite=True)
    staged.discard()
    with pytest.raises(Exception):  # noqa: B017 (OutputError or the file system's own error)
        staged.publish()
    StagedOutput(spark, str(target), overwrite=True).discard()
    assert listing(target) == before
    assert siblings(target) == []


@pytest.mark.parametrize("name", ["out", "out [1]{a,b}*?"])
def test_a_replace_killed_between_its_renames_is_undone(spark, tmp_path, name):
    """`publish` moves the old output aside, then renames the new one in: a kill between the
    two leaves no output; the next run on it restores the old one before anything else.
    A name with a glob's special characters is found as written, and only its own copy."""
    target = tmp_path / name
    target.mkdir()
    (target / "report.json").write_text('{"old": true}')
    moved = tmp_path / f".{name}.replaced-deadbeef"
    target.rename(moved)  # the state a kill between the two renames leaves
    other = tmp_path / ".outs.replaced-feedbeef"  # another output's copy, which a glob could match
    other.mkdir()
    staged = StagedOutput(spark, str(target), overwrite=True)
    assert (target / "report.json").read_text() == '{"old": true}'
    assert not moved.exists()
    staged.write_text("report.json", '{"new": true}')
    staged.publish()
    assert (target / "report.json").read_text() == '{"new": true}'
    assert siblings(target) == [other.name]  # left alone


def test_write_parquet_replaces_what_is_at_the_path(spark, tmp_path):
    path = tmp_path / "frame"
    write_parquet(spark.createDataFrame([(i,) for i in range(10)], "id long"), str(path))
    write_parquet(spark.createDataFrame([(7,)], "id long"), str(path))
    assert pq.read_table(path).to_pylist() == [{"id": 7}]


def test_report_json_is_json_with_its_keys_in_order_and_text_unescaped():
    report = {"zeta": 1, "alpha": {"path": "/data/日本語.json", "ratio": 0.5}, "none": None}
    text = report_json(report)
    assert json.loads(text) == report
    assert list(json.loads(text)) == ["zeta", "alpha", "none"], "the report's order, not sorted"
    assert "日本語" in text and text.endswith("\n")


@pytest.mark.parametrize("partitions", [1, 3, 5])
def test_parquet_rows_counts_what_pyarrow_reads_from_footers_or_with_spark_beyond_the_file_limit(
    spark, tmp_path, monkeypatch, partitions
):
    from simhash_udf.files import outputs

    path = str(tmp_path / "frame")
    # Uneven parts, one of them empty (a filter leaves a partition without rows).
    frame = spark.range(0, 1000, numPartitions=partitions).where("id % 7 != 0 AND (id < 400 OR id > 600)")
    write_parquet(frame, path)
    on_disk = pq.read_table(path).num_rows  # pyarrow, independently of the Hadoop calls
    assert on_disk == sum(1 for i in range(1000) if i % 7 and (i < 400 or i > 600))
    assert outputs.parquet_rows(spark, path) == on_disk
    # More files than the limit: a Spark count, the same number.
    monkeypatch.setattr(outputs, "FOOTER_COUNT_MAX_FILES", partitions - 1)
    assert outputs.parquet_rows(spark, path) == on_disk


def test_parquet_rows_of_an_empty_frame_is_zero(spark, tmp_path):
    from simhash_udf.files.outputs import parquet_rows

    path = str(tmp_path / "empty")
    write_parquet(spark.range(10).where("id < 0"), path)
    assert parquet_rows(spark, path) == 0


def test_read_back_reads_what_spark_infers_from_the_files_without_a_job_of_its_own(spark, tmp_path):
    from simhash_udf.files.outputs import read_back

    path = str(tmp_path / "frame")
    # Non-nullable, nested, binary, timestamp and null values: what stage results hold.
    frame = spark.range(0, 50, numPartitions=3).selectExpr(
        "id",
        "IF(id % 5 = 0, NULL, CAST(id AS STRING)) AS text",
        "CAST(CAST(id AS STRING) AS BINARY) AS key",
        "ARRAY(id, id + 1) AS ends",
        "NAMED_STRUCT('a', id, 'b', id % 2 = 0) AS pair",
        "TIMESTAMP'2024-03-05 10:00:00' + make_interval(0, 0, 0, 0, 0, 0, id) AS at",
    )
    write_parquet(frame, path)
    inferred = spark.read.parquet(path)
    read = {}
    assert jobs_in_group(spark, f"read-back-{uuid.uuid4()}", lambda: read.setdefault("frame", read_back(frame, path))) == 0
    assert read["frame"].schema == inferred.schema
    assert sorted(read["frame"].collect()) == sorted(inferred.collect())
    assert len(read["frame"].collect()) == 50


def test_read_back_of_an_empty_frame_has_its_columns_and_no_rows(spark, tmp_path):
    from simhash_udf.files.outputs import read_back

    path = str(tmp_path / "empty")
    frame = spark.range(10).where("id < 0").selectExpr("id", "CAST(id AS STRING) AS text")
    write_parquet(frame, path)
    read = read_back(frame, path)
    assert read.columns == ["id", "text"] and read.count() == 0
