"""The checks of a day's report (simhash_udf/report/checks.py) and their command line
(jobs/check_report.py): no Spark, reports written as the job writes them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from simhash_udf.report import checks
from simhash_udf.report.checks import Thresholds, judge

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "jobs" / "check_report.py"


def report(
    *,
    input_rows: int = 100,
    rejected: dict[str, int] | None = None,
    skipped: dict[str, int] | None = None,
    exact: int = 10,
    near: int = 20,
    documents: int | None = None,
    kept: int | None = None,
) -> dict:
    """A report.json shaped as `simhash_udf.report.summary.build` writes it; documents and kept
    follow from the other counts unless given (to make inconsistent reports)."""
    rejected = rejected or {}
    skipped = skipped or {}
    if documents is None:
        documents = input_rows - sum(rejected.values())
    if kept is None:
        kept = documents - exact - near - sum(skipped.values())
    return {
        "parameters": {"k": 3},
        "counts": {
            "input_rows": input_rows,
            "rejected_rows": rejected,
            "documents": documents,
            "skipped": skipped,
            "too_short": 0,
            "kept": kept,
            "exact_duplicates": exact,
            "near_duplicates": near,
            "clusters": kept,
        },
    }


def by_check(findings: list[checks.Finding]) -> dict[str, checks.Finding]:
    return {f.check: f for f in findings}


def failed(findings: list[checks.Finding]) -> set[str]:
    return {f.check for f in checks.failures(findings)}


HISTORY = [report(exact=10, near=20), report(exact=12, near=20), report(exact=15, near=20)]  # 30%, 32%, 35%


def test_a_healthy_day_passes_every_check():
    findings = judge(report(exact=11, near=22), HISTORY)
    assert [f.check for f in findings] == ["input", "documents", "accounted", "rejected", "skipped", "duplicate_rate"]
    assert failed(findings) == set()
    assert "33.0%" in by_check(findings)["duplicate_rate"].message  # 33 of 100
    assert "median of the last 3 day(s) 32.0%" in by_check(findings)["duplicate_rate"].message


def test_no_input_fails_with_a_clear_message():
    findings = by_check(judge(report(input_rows=0, exact=0, near=0)))
    assert not findings["input"].ok and findings["input"].message == "no input: the run read 0 rows"
    assert not findings["documents"].ok
    assert findings["duplicate_rate"].ok  # nothing to judge, and no crash on 0 / 0


def test_zero_documents_when_every_row_is_rejected():
    findings = by_check(judge(report(input_rows=3, rejected={"unparseable": 2, "null_id": 1}, exact=0, near=0)))
    assert findings["input"].ok
    assert not findings["documents"].ok
    assert "0 documents (at least 1 expected) from 3 input rows, 3 of them rejected" == findings["documents"].message
    assert not findings["rejected"].ok
    assert "3 of 3 input rows rejected (100.0%: null_id 1, unparseable 2)" in findings["rejected"].message
    assert findings["accounted"].ok


def test_min_documents_is_a_threshold():
    assert failed(judge(report(input_rows=40, exact=0, near=0), thresholds=Thresholds(min_documents=50))) == {"documents"}
    assert failed(judge(report(input_rows=50, exact=0, near=0), thresholds=Thresholds(min_documents=50))) == set()


def test_rows_neither_documents_nor_rejected_are_lost():
    findings = by_check(judge(report(input_rows=100, rejected={"null_id": 1}, documents=97)))
    assert not findings["accounted"].ok
    assert findings["accounted"].message.startswith("2 input rows lost: 100 input rows, but 97 documents + 1 rejected rows")


def test_statuses_that_do_not_add_up_fail():
    findings = by_check(judge(report(input_rows=100, kept=60)))  # 60 + 10 + 20 = 90 of 100 documents
    assert not findings["accounted"].ok
    assert "statuses do not add up" in findings["accounted"].message and "= 90" in findings["accounted"].message


@pytest.mark.parametrize(
    ("rejected_rows", "ok"),
    [(0, True), (10, True), (11, False), (500, False)],
)
def test_rejected_rows_beyond_the_fraction_fail(rejected_rows, ok):
    # 1000 input rows, 1% allowed: 10 pass, 11 fail.
    day = report(input_rows=1000, rejected={"unparseable": rejected_rows} if rejected_rows else {}, exact=0, near=0)
    finding = by_check(judge(day, thresholds=Thresholds(max_rejected_fraction=0.01)))["rejected"]
    assert finding.ok is ok
    if not ok:
        assert f"{rejected_rows:,} of 1,000 input rows rejected" in finding.message and "at most 1.0% allowed" in finding.message


def test_mostly_empty_pages_fail():
    assert failed(judge(report(skipped={"empty": 50}, exact=0, near=0))) == set()  # half: allowed
    finding = by_check(judge(report(skipped={"empty": 51}, exact=0, near=0)))["skipped"]
    assert not finding.ok and "51 of 100 documents skipped (51.0%" in finding.message


@pytest.mark.parametrize(
    ("duplicates", "ok", "direction"),
    [(32, True, None), (47, True, None), (48, False, "above"), (17, True, None), (16, False, "below"), (0, False, "below")],
)
def test_duplicate_rate_far_from_the_recent_median_fails(duplicates, ok, direction):
    # History rates 30%, 32%, 35%: median 32%; 15 points allowed either way.
    finding = by_check(judge(report(exact=0, near=duplicates), HISTORY))["duplicate_rate"]
    assert finding.ok is ok
    if direction:
        assert f"duplicate rate {duplicates:.1f}% is {abs(duplicates - 32):.1f}% {direction} the median 32.0% of the last 3 day(s)" in finding.message


def test_duplicate_rate_median_is_robust_to_one_odd_day():
    # One earlier day at 90% (a crawler loop) does not move the median of five days much.
    history = [report(exact=0, near=n) for n in (30, 31, 90, 29, 30)]
    assert by_check(judge(report(exact=0, near=33), history))["duplicate_rate"].ok
    assert not by_check(judge(report(exact=0, near=90), history))["duplicate_rate"].ok


def test_duplicate_rate_needs_enough_history():
    finding = by_check(judge(report(exact=0, near=90), HISTORY[:2]))["duplicate_rate"]
    assert finding.ok and "not judged: 2 recent day(s) with documents, 3 needed" in finding.message
    # Days without documents are not history.
    empty_days = [report(input_rows=0, exact=0, near=0)] * 5
    finding = by_check(judge(report(exact=0, near=90), HISTORY[:2] + empty_days))["duplicate_rate"]
    assert finding.ok and "not judged" in finding.message
    assert not by_check(judge(report(exact=0, near=90), HISTORY[:2], Thresholds(min_history=2)))["duplicate_rate"].ok


def test_a_report_without_counts_is_an_error():
    with pytest.raises(checks.ReportError, match="no 'counts'"):
        judge({"parameters": {}})
    broken = report()
    del broken["counts"]["near_duplicates"], broken["counts"]["input_rows"]
    with pytest.raises(checks.ReportError, match="lack input_rows, near_duplicates"):
        judge(broken)
    with pytest.raises(checks.ReportError, match="not numbers"):
        judge(report() | {"counts": report()["counts"] | {"documents": "many"}})


def test_thresholds_are_validated():
    with pytest.raises(ValueError, match="max_rejected_fraction"):
        Thresholds(max_rejected_fraction=1.5)
    with pytest.raises(ValueError, match="min_history"):
        Thresholds(min_history=0)


def test_previous_partitions_are_the_last_days_before_the_date():
    names = [
        "2024-01-03", "2024-01-01", "2024-01-05", "2024-01-04",
        ".2024-01-04.staging-20240104T010203-abcd1234",  # a run in progress or killed
        "2024-01-02.bak", "20240102", "2024-W01-2", "README", "2023-12-31",
    ]
    assert checks.previous_partitions(names, "2024-01-05", 3) == ["2024-01-01", "2024-01-03", "2024-01-04"]
    assert checks.previous_partitions(names, "2024-01-05", 10) == ["2023-12-31", "2024-01-01", "2024-01-03", "2024-01-04"]
    assert checks.previous_partitions(names, "2024-01-01", 3) == ["2023-12-31"]
    assert checks.previous_partitions(names, "2024-01-05", 0) == []
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        checks.previous_partitions(names, "20240105", 3)


# The command line, as the DAG's check_report task runs it.


def write_day(root: Path, day: str, content: dict | str) -> None:
    (root / day).mkdir(parents=True)
    text = content if isinstance(content, str) else json.dumps(content)
    (root / day / "report.json").write_text(text, encoding="utf-8")


def run_cli(root: Path, day: str, *extra: str) -> subprocess.CompletedProcess:
    # -S: no site-packages at all, so the check runs on the standard library alone.
    return subprocess.run(
        [sys.executable, "-S", str(CLI), "--output-root", str(root), "--date", day, *extra],
        capture_output=True, text=True, timeout=60,
    )


def test_cli_passes_a_healthy_day_against_its_history(tmp_path):
    for i, day in enumerate(["2024-01-01", "2024-01-02", "2024-01-03"]):
        write_day(tmp_path, day, HISTORY[i])
    write_day(tmp_path, "2024-01-04", report(exact=11, near=22))
    (tmp_path / ".2024-01-05.staging-x").mkdir()
    done = run_cli(tmp_path, "2024-01-04")
    assert done.returncode == 0, done.stderr
    assert "compared with 3 earlier day(s)" in done.stdout
    assert done.stdout.count("\nok   ") == 6 and "FAIL" not in done.stdout


def test_cli_fails_a_day_whose_duplicate_rate_jumped(tmp_path):
    for i, day in enumerate(["2024-01-01", "2024-01-02", "2024-01-03"]):
        write_day(tmp_path, day, HISTORY[i])
    write_day(tmp_path, "2024-01-04", report(exact=40, near=40))
    done = run_cli(tmp_path, "2024-01-04")
    assert done.returncode == 1
    assert "FAIL duplicate_rate: duplicate rate 80.0% is 48.0% above the median 32.0%" in done.stdout
    assert "1 check(s) failed for 2024-01-04" in done.stderr and "duplicate_rate:" in done.stderr
    # A wider tolerance lets the same day pass.
    assert run_cli(tmp_path, "2024-01-04", "--max-rate-deviation", "0.5").returncode == 0


def test_cli_skips_an_unreadable_earlier_report(tmp_path):
    write_day(tmp_path, "2024-01-01", "{truncated")
    write_day(tmp_path, "2024-01-02", {"counts": {}})
    write_day(tmp_path, "2024-01-03", report())
    done = run_cli(tmp_path, "2024-01-03")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("note: skipping") == 2 and "compared with 0 earlier day(s)" in done.stdout


def test_cli_exits_2_without_a_usable_report(tmp_path):
    done = run_cli(tmp_path, "2024-01-01")
    assert done.returncode == 2 and "cannot read the day's report" in done.stderr
    write_day(tmp_path, "2024-01-02", {"counts": {"documents": 3}})
    done = run_cli(tmp_path, "2024-01-02")
    assert done.returncode == 2 and "lack input_rows" in done.stderr
    done = run_cli(tmp_path, "yesterday")
    assert done.returncode == 2 and "not a YYYY-MM-DD date" in done.stderr
