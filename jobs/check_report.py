"""Check a daily run's report.json against the days before it; exit 1 when something is wrong.

    python jobs/check_report.py --output-root out/crawl --date 2024-01-02

Reads OUTPUT_ROOT/DATE/report.json and the reports of the last --history daily partitions
before DATE (OUTPUT_ROOT/YYYY-MM-DD/report.json), prints one line per check and exits 0 when
all pass, 1 when one fails (the messages say which and by how much), 2 when the day's report
is missing or unreadable. Entry point only: the checks are `simhash_udf.report.checks` (stdlib only,
no Spark). The Airflow DAG (dags/simhash_daily.py) runs this after the job.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# Run as a script from a checkout (python jobs/check_report.py) as well as from an install.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simhash_udf.report import checks  # noqa: E402

DEFAULTS = checks.Thresholds()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="check_report.py",
        description=(
            "Judge a daily run's report.json (OUTPUT_ROOT/DATE/report.json) against the recent "
            "days' reports: no input, zero documents, lost rows, rejected or skipped rows beyond "
            "a fraction, a duplicate rate far from the recent days' median. Exit 0: all checks "
            "pass; 1: a check failed; 2: the report is missing or unreadable."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--output-root", required=True, help="folder holding one output folder per day, named YYYY-MM-DD")
    parser.add_argument("--date", required=True, help="the day to check (YYYY-MM-DD, Airflow's {{ ds }})")
    parser.add_argument("--history", type=int, default=7, help="how many earlier daily partitions to compare with")
    parser.add_argument("--min-history", type=int, default=DEFAULTS.min_history, help="earlier days with documents needed to judge the duplicate rate")
    parser.add_argument("--min-documents", type=int, default=DEFAULTS.min_documents, help="fewest documents a day may have")
    parser.add_argument("--max-rejected-fraction", type=float, default=DEFAULTS.max_rejected_fraction, help="largest share of input rows that may be rejected")
    parser.add_argument("--max-skipped-fraction", type=float, default=DEFAULTS.max_skipped_fraction, help="largest share of documents that may be skipped (empty)")
    parser.add_argument(
        "--max-rate-deviation", type=float, default=DEFAULTS.max_rate_deviation,
        help="largest absolute distance between the day's duplicate rate and the recent days' median (0.15 = 15 points)",
    )
    return parser


def read_report(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as f:
        return json.load(f)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        checks.parse_day(args.date)
        thresholds = checks.Thresholds(
            min_documents=args.min_documents,
            max_rejected_fraction=args.max_rejected_fraction,
            max_skipped_fraction=args.max_skipped_fraction,
            max_rate_deviation=args.max_rate_deviation,
            min_history=args.min_history,
        )
    except ValueError as error:
        parser.error(str(error))
    root = Path(args.output_root)
    path = root / args.date / "report.json"
    try:
        report = read_report(path)
    except (OSError, ValueError) as error:
        print(f"check_report.py: error: cannot read the day's report {path}: {error}", file=sys.stderr)
        return 2
    names = os.listdir(root)
    history = []
    for day in checks.previous_partitions(names, args.date, args.history):
        earlier = root / day / "report.json"
        try:
            previous = read_report(earlier)
            checks.counts_of(previous)
        except (OSError, ValueError) as error:  # ReportError is a ValueError
            # A day without a usable report (its run failed) is not a day to compare with.
            print(f"note: skipping {earlier}: {error}")
            continue
        history.append(previous)
    try:
        findings = checks.judge(report, history, thresholds)
    except checks.ReportError as error:
        print(f"check_report.py: error: {path}: {error}", file=sys.stderr)
        return 2
    print(f"report {path}; compared with {len(history)} earlier day(s)")
    for finding in findings:
        print(finding)
    failed = checks.failures(findings)
    if failed:
        print(f"check_report.py: {len(failed)} check(s) failed for {args.date}:", file=sys.stderr)
        for finding in failed:
            print(f"  {finding.check}: {finding.message}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
