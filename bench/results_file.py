"""bench/RESULTS.md as numbered sections, so that a run of some sections (`run_all --sections`)
replaces those and keeps the others instead of writing a file with only its own.

A section is a heading `## N. title` and every line up to the next `## ` heading. The header
lists which run wrote each section (`provenance_lines`); a file written before that list
existed credits all its sections to its "Written by ..." line.
"""

from __future__ import annotations

import re

SECTION_HEADING = re.compile(r"^## (\d+)\. ")
PROVENANCE_TITLE = "Sections and the runs that wrote them:"
PROVENANCE_ITEM = re.compile(r"^- (\d+) \(([\w-]+)\): (.+)$")
# "Written by `python -m bench.run_all ...` on 2026-11-29 23:31 UTC, commit 07f1da2, in 1572 s ..."
WRITTEN_BY = re.compile(r"^Written by (`[^`]+` on [^,]+, commit \w+)")


def numbered_sections(markdown: str) -> dict[int, list[str]]:
    """Section number -> its lines (heading first, no trailing blank lines) in a RESULTS.md;
    the header is left out."""
    sections: dict[int, list[str]] = {}
    current: list[str] | None = None
    for line in markdown.splitlines():
        heading = SECTION_HEADING.match(line)
        if heading:
            current = sections.setdefault(int(heading.group(1)), [])
        elif line.startswith("## "):
            current = None  # an unnumbered top-level section belongs to no numbered one
        if current is not None:
            current.append(line)
    for lines in sections.values():
        while lines and not lines[-1].strip():
            lines.pop()
    return sections


def provenance(markdown: str) -> dict[int, str]:
    """Section number -> the run that wrote it ("`command` on date, commit c"), read from the
    header's list, or for an older file from its "Written by" line for every section in it."""
    listed = {int(m.group(1)): m.group(3) for m in map(PROVENANCE_ITEM.match, markdown.splitlines()) if m}
    if listed:
        return listed
    written = next((m.group(1) for m in map(WRITTEN_BY.match, markdown.splitlines()) if m), "an earlier run")
    return {number: written for number in numbered_sections(markdown)}


def splice(previous: str, body: list[str], this_run: str) -> tuple[list[str], dict[int, str]]:
    """The sections of `body` (this run's) with those of `previous` (the file so far) that this
    run did not write, in section order; and each section's writer (`this_run` for body's)."""
    new = numbered_sections("\n".join(body))
    kept = {n: lines for n, lines in numbered_sections(previous).items() if n not in new}
    earlier = provenance(previous)
    # Every kept section is listed, even one a hand-edited header leaves out.
    writers = {n: earlier.get(n, "an earlier run") for n in kept}
    writers.update({n: this_run for n in new})
    merged = {**kept, **new}
    lines: list[str] = []
    for number in sorted(merged):
        lines += [*merged[number], ""]  # one blank line before the next heading
    return lines, writers


def provenance_lines(writers: dict[int, str], names: dict[int, str]) -> list[str]:
    """The header's list of which run wrote each section (`names`: number -> section name)."""
    return [PROVENANCE_TITLE, "",
            *(f"- {n} ({names.get(n, 'section')}): {writers[n]}" for n in sorted(writers)), ""]
