"""Markdown tables and the number formats of bench/'s documents (pure functions, no I/O)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

SIZE_SUFFIXES = {"K": 1_000, "M": 1_000_000, "B": 1_000_000_000}


def table_lines(headers: Sequence[str], rows: Iterable[Sequence[object]], right: str = "") -> list[str]:
    """A GitHub markdown table as lines: the header, the separator, one line per row.

    right: one character per column, `r` for a right-aligned column (`---:`), anything else
    (or nothing, past its end) for the default alignment (`---`). Cells are `str()` of the
    values: format floats before passing them.
    """
    separator = ["---:" if right[i : i + 1] == "r" else "---" for i in range(len(headers))]
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(separator) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return lines


def md_table(headers: Sequence[str], rows: Iterable[Sequence[object]], right: str = "") -> str:
    """`table_lines` joined into one string."""
    return "\n".join(table_lines(headers, rows, right))


def pct(x: float | None, digits: int = 1) -> str:
    """A share as a percentage, `-` when undefined."""
    return "-" if x is None or math.isnan(x) else f"{100 * x:.{digits}f}%"


def num(x: float | None, digits: int = 3) -> str:
    """A number, `-` when undefined."""
    return "-" if x is None or math.isnan(x) else f"{x:.{digits}f}"


def seconds_list(seconds: Iterable[float], digits: int = 2) -> str:
    """`1.23, 4.56`: every run's seconds, for a `runs (s)` column."""
    return ", ".join(f"{s:.{digits}f}" for s in seconds)


def load_text(load: Iterable[float]) -> str:
    """`1.00 / 0.80 / 0.50`: load averages (1 / 5 / 15 minutes)."""
    return " / ".join(f"{v:.2f}" for v in load)


def ratio_text(numerator: float, denominator: float, digits: int = 2) -> str:
    """`1.50x`: one method's figure over another's (a ratio beside a baseline)."""
    return f"{numerator / denominator:.{digits}f}x"


def fmt_n(n: float) -> str:
    """A count with a suffix: `250k`, `1M`, `1.5B`; below a thousand, the number."""
    for unit, div in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= div:
            value = n / div
            return f"{value:.0f}{unit}" if value == int(value) else f"{value:.1f}{unit}"
    return f"{n:.0f}"


def parse_size(text: str) -> int:
    """`250k`, `4M`, `1.5B` or `1000` as a count (the inverse of `fmt_n`, for arguments)."""
    text = text.strip().upper()
    scale = SIZE_SUFFIXES.get(text[-1:], 1)
    return int(float(text[:-1] if scale != 1 else text) * scale)
