"""bench/results_file.py: a run of some sections replaces those in bench/RESULTS.md and keeps
the others, each credited to the run that wrote it (run_all once kept only its own sections)."""

from __future__ import annotations

from bench.results_file import numbered_sections, provenance, provenance_lines, splice

OLD_FILE = """# Benchmarks

Written by `python -m bench.run_all` on 2026-11-29 23:31 UTC, commit 07f1da2, in 1572 s (a 1 s).

| machine | |
|---|---|
| CPU | x |

## 1. Fingerprints

one table
### Chinese

| a | b |

## 2. Join

join figures

## 3. Skew

skew figures
"""


def test_sections_split_at_numbered_headings_and_keep_their_subsections():
    sections = numbered_sections(OLD_FILE)
    assert sorted(sections) == [1, 2, 3]
    assert sections[1] == ["## 1. Fingerprints", "", "one table", "### Chinese", "", "| a | b |"]
    assert sections[3][0] == "## 3. Skew" and "| machine | |" not in sum(sections.values(), [])


def test_an_older_file_credits_every_section_to_its_written_by_line():
    assert provenance(OLD_FILE) == {n: "`python -m bench.run_all` on 2026-11-29 23:31 UTC, commit 07f1da2"
                                    for n in (1, 2, 3)}


def test_a_partial_run_replaces_its_sections_and_keeps_the_others_with_their_writers():
    body = ["## 2. Join", "", "new join figures", "", "## 4. Pipeline", "", "pipeline figures", ""]
    lines, writers = splice(OLD_FILE, body, "this run")
    old = numbered_sections(OLD_FILE)
    merged = numbered_sections("\n".join(lines))
    assert sorted(merged) == [1, 2, 3, 4]
    assert merged[1] == old[1] and merged[3] == old[3]      # not rerun: kept line for line
    assert "new join figures" in merged[2] and "join figures" not in merged[2]
    assert writers == {1: provenance(OLD_FILE)[1], 2: "this run", 3: provenance(OLD_FILE)[3], 4: "this run"}

    # The next partial run reads the writers back from the header's list, not the Written-by line.
    header = ["# Benchmarks", "", "Written by `python -m bench.run_all --sections join` on 2026-12-01 "
              "10:00 UTC, commit abc1234, in 9 s.", "",
              *provenance_lines(writers, {1: "fingerprint", 2: "join", 3: "skew", 4: "pipeline"})]
    second = "\n".join(header + lines)
    assert provenance(second) == writers
    lines2, writers2 = splice(second, ["## 3. Skew", "", "newer skew", ""], "third run")
    assert writers2 == {**writers, 3: "third run"}
    assert numbered_sections("\n".join(lines2))[2] == merged[2]


def test_a_full_run_over_no_file_is_its_own_body():
    body = ["## 1. Fingerprints", "", "figures", "", "## 2. Join", "", "more", ""]
    lines, writers = splice("", body, "this run")
    assert numbered_sections("\n".join(lines)) == numbered_sections("\n".join(body))
    assert writers == {1: "this run", 2: "this run"}
