"""Judge a run's report.json against the reports of the days before it (pure, stdlib only).

A scheduled run can succeed and still be wrong: the crawl delivered nothing, most lines did
not parse, or the duplicate rate jumped because a crawler looped or fingerprinting broke.
`judge` turns a report (and recent days' reports) into findings, each with a message that
says what is wrong in numbers; `jobs/check_report.py` is its command line and the Airflow
DAG (`dags/simhash_daily.py`) runs that after the job. No Spark here: the check runs in a
few milliseconds on the reports alone.
"""

from __future__ import annotations

import dataclasses
import datetime
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


class ReportError(ValueError):
    """A report lacks what the checks read (not a report.json of this job, or truncated)."""


@dataclasses.dataclass(frozen=True)
class Thresholds:
    """What the checks allow.

    min_documents: fewest documents a day may have.
    max_rejected_fraction: rejected rows (unparseable, null id) over input rows.
    max_skipped_fraction: skipped (empty) documents over documents.
    max_rate_deviation: largest distance, in absolute terms (0.15 = 15 percentage points),
        between the day's duplicate rate and the median of the recent days' rates.
    min_history: recent days with documents needed before the duplicate rate is judged.
    """

    min_documents: int = 1
    max_rejected_fraction: float = 0.01
    max_skipped_fraction: float = 0.5
    max_rate_deviation: float = 0.15
    min_history: int = 3

    def __post_init__(self) -> None:
        for name in ("max_rejected_fraction", "max_skipped_fraction", "max_rate_deviation"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1, got {value}")
        if self.min_documents < 0 or self.min_history < 1:
            raise ValueError("min_documents must be >= 0 and min_history >= 1")


@dataclasses.dataclass(frozen=True)
class Finding:
    """One check's verdict: `check` names it, `ok` is False when the run should fail."""

    check: str
    ok: bool
    message: str

    def __str__(self) -> str:
        return f"{'ok  ' if self.ok else 'FAIL'} {self.check}: {self.message}"


@dataclasses.dataclass(frozen=True)
class Counts:
    """The counts of a report that the checks read."""

    input_rows: int
    rejected: dict[str, int]
    documents: int
    skipped: dict[str, int]
    kept: int
    exact_duplicates: int
    near_duplicates: int

    @property
    def rejected_rows(self) -> int:
        return sum(self.rejected.values())

    @property
    def skipped_documents(self) -> int:
        return sum(self.skipped.values())

    @property
    def duplicate_rate(self) -> float | None:
        """Exact and near duplicates over documents; None for a day without documents."""
        if self.documents <= 0:
            return None
        return (self.exact_duplicates + self.near_duplicates) / self.documents


def counts_of(report: Mapping[str, Any]) -> Counts:
    """The counts of a report.json (parsed), or ReportError naming what is missing."""
    counts = report.get("counts") if isinstance(report, Mapping) else None
    if not isinstance(counts, Mapping):
        raise ReportError("the report has no 'counts' object")
    missing = [
        key for key in ("input_rows", "rejected_rows", "documents", "skipped", "kept",
                        "exact_duplicates", "near_duplicates")
        if key not in counts
    ]
    if missing:
        raise ReportError(f"the report's counts lack {', '.join(missing)}")
    try:
        return Counts(
            input_rows=int(counts["input_rows"]),
            rejected={str(k): int(v) for k, v in dict(counts["rejected_rows"]).items()},
            documents=int(counts["documents"]),
            skipped={str(k): int(v) for k, v in dict(counts["skipped"]).items()},
            kept=int(counts["kept"]),
            exact_duplicates=int(counts["exact_duplicates"]),
            near_duplicates=int(counts["near_duplicates"]),
        )
    except (TypeError, ValueError) as error:
        raise ReportError(f"the report's counts are not numbers: {error}") from None


def _percent(part: int | float, whole: int | float) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "n/a"


def check_input(c: Counts) -> Finding:
    """The day had input rows at all."""
    if c.input_rows <= 0:
        return Finding("input", False, "no input: the run read 0 rows")
    return Finding("input", True, f"{c.input_rows:,} input rows")


def check_documents(c: Counts, t: Thresholds) -> Finding:
    """Enough input rows became documents (rejected rows are not documents)."""
    if c.documents < t.min_documents:
        return Finding(
            "documents", False,
            f"{c.documents:,} documents (at least {t.min_documents:,} expected) from "
            f"{c.input_rows:,} input rows, {c.rejected_rows:,} of them rejected",
        )
    return Finding("documents", True, f"{c.documents:,} documents")


def check_accounted(c: Counts) -> Finding:
    """Every input row is a document or a rejected row, and every document has one status."""
    lost = c.input_rows - c.documents - c.rejected_rows
    if lost != 0:
        return Finding(
            "accounted", False,
            f"{lost:,} input rows lost: {c.input_rows:,} input rows, but {c.documents:,} "
            f"documents + {c.rejected_rows:,} rejected rows",
        )
    statuses = c.kept + c.exact_duplicates + c.near_duplicates + c.skipped_documents
    if statuses != c.documents:
        return Finding(
            "accounted", False,
            f"statuses do not add up: kept {c.kept:,} + exact {c.exact_duplicates:,} + near "
            f"{c.near_duplicates:,} + skipped {c.skipped_documents:,} = {statuses:,}, "
            f"documents {c.documents:,}",
        )
    return Finding("accounted", True, "every input row is a document or a rejected row")


def check_rejected(c: Counts, t: Thresholds) -> Finding:
    """Rejected rows stay below a fraction of the input."""
    if c.input_rows > 0 and c.rejected_rows > t.max_rejected_fraction * c.input_rows:
        reasons = ", ".join(f"{reason} {n:,}" for reason, n in sorted(c.rejected.items()))
        return Finding(
            "rejected", False,
            f"{c.rejected_rows:,} of {c.input_rows:,} input rows rejected "
            f"({_percent(c.rejected_rows, c.input_rows)}: {reasons}); at most "
            f"{_percent(t.max_rejected_fraction, 1)} allowed",
        )
    return Finding("rejected", True, f"{c.rejected_rows:,} rejected rows ({_percent(c.rejected_rows, c.input_rows)})")


def check_skipped(c: Counts, t: Thresholds) -> Finding:
    """Skipped (empty) documents stay below a fraction of the documents."""
    if c.documents > 0 and c.skipped_documents > t.max_skipped_fraction * c.documents:
        return Finding(
            "skipped", False,
            f"{c.skipped_documents:,} of {c.documents:,} documents skipped "
            f"({_percent(c.skipped_documents, c.documents)}: {c.skipped}); at most "
            f"{_percent(t.max_skipped_fraction, 1)} allowed",
        )
    return Finding("skipped", True, f"{c.skipped_documents:,} skipped documents")


def check_duplicate_rate(c: Counts, history: Sequence[Counts], t: Thresholds) -> Finding:
    """The day's duplicate rate is within `max_rate_deviation` of the median of the recent
    days' rates; with fewer than `min_history` recent days there is nothing to judge by
    (the finding is ok and says so)."""
    rate = c.duplicate_rate
    if rate is None:
        return Finding("duplicate_rate", True, "no documents: no duplicate rate to judge")
    rates = [r for r in (h.duplicate_rate for h in history) if r is not None]
    if len(rates) < t.min_history:
        return Finding(
            "duplicate_rate", True,
            f"{_percent(rate, 1)}; not judged: {len(rates)} recent day(s) with documents, "
            f"{t.min_history} needed",
        )
    median = statistics.median(rates)
    deviation = rate - median
    # A small tolerance: rates are ratios of integers, and 0.15 should allow exactly 0.15.
    if abs(deviation) > t.max_rate_deviation + 1e-12:
        return Finding(
            "duplicate_rate", False,
            f"duplicate rate {_percent(rate, 1)} is {_percent(abs(deviation), 1)} "
            f"{'above' if deviation > 0 else 'below'} the median {_percent(median, 1)} of the "
            f"last {len(rates)} day(s) (at most {_percent(t.max_rate_deviation, 1)} allowed)",
        )
    return Finding(
        "duplicate_rate", True,
        f"{_percent(rate, 1)}, median of the last {len(rates)} day(s) {_percent(median, 1)}",
    )


def judge(
    report: Mapping[str, Any],
    history: Iterable[Mapping[str, Any]] = (),
    thresholds: Thresholds = Thresholds(),
) -> list[Finding]:
    """Every check's finding for a report, given the recent days' reports (any order).

    Raises ReportError when the report (or one of the history's) lacks its counts.
    """
    c = counts_of(report)
    past = [counts_of(h) for h in history]
    return [
        check_input(c),
        check_documents(c, thresholds),
        check_accounted(c),
        check_rejected(c, thresholds),
        check_skipped(c, thresholds),
        check_duplicate_rate(c, past, thresholds),
    ]


def failures(findings: Iterable[Finding]) -> list[Finding]:
    """The findings that fail the run."""
    return [f for f in findings if not f.ok]


def previous_partitions(names: Iterable[str], day: str, n: int) -> list[str]:
    """The last `n` daily partition names (`YYYY-MM-DD`) before `day`, oldest first.

    Anything else among `names` is ignored: hidden staging folders of a run in progress or
    killed (`.2024-01-02.staging-...`), other files.
    """
    until = parse_day(day)
    dates = []
    for name in names:
        try:
            date = parse_day(name)
        except ValueError:
            continue
        if date < until:
            dates.append(date)
    return [d.isoformat() for d in sorted(dates)[-n:]] if n > 0 else []


_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def parse_day(name: str) -> datetime.date:
    """A `YYYY-MM-DD` date (Airflow's `{{ ds }}`), or ValueError; stricter than
    `date.fromisoformat`, which also takes `20240102` and week dates like `2024-W01-1`."""
    if not _DAY.fullmatch(name):
        raise ValueError(f"not a YYYY-MM-DD date: {name!r}")
    return datetime.date.fromisoformat(name)
