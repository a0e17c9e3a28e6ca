"""bench/job_html.py: the pages it builds, its arithmetic, its document, and one small run.

Oracles: skeleton pages written here (their boilerplate and `<p>` elements known); a summary
worked by hand; the small run against the real pages of ../shared/data (skipped when absent).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import job_html
from bench.job_runs import ROOT

SKELETONS = [
    f"<html><nav>menu {i}</nav><body>"
    + "".join(f"<p class='x'>site {i} paragraph {j} with its words</p>" for j in range(3 + i))
    + f"<footer>footer {i}</footer></body></html>"
    for i in range(4)
] + ["<html><p>too</p><p>few</p></html>"]


def paragraphs(page: str) -> list[str]:
    return [m.group(2) for m in job_html.PARAGRAPH.finditer(page)]


def test_pages_keep_a_skeleton_s_boilerplate_and_draw_every_paragraph_from_the_pool():
    pages = job_html.site_pages(SKELETONS, 40, seed=3)
    pool = {p for page in SKELETONS[:4] for p in paragraphs(page)}
    assert len(pages) == 40
    for page in pages:
        assert set(paragraphs(page)) <= pool
        # Whatever lies outside the <p> elements is one usable skeleton's, as it was.
        outside = job_html.PARAGRAPH.sub("", page)
        assert outside in {job_html.PARAGRAPH.sub("", s) for s in SKELETONS[:4]}
    assert "too" not in "".join(pages)  # a skeleton with under MIN_PARAGRAPHS <p> is never used
    assert job_html.site_pages(SKELETONS, 40, seed=3) == pages
    assert job_html.site_pages(SKELETONS, 40, seed=4) != pages


def test_every_tenth_page_is_followed_by_its_near_copy_without_one_paragraph():
    pages = job_html.site_pages(SKELETONS, 35, seed=1)
    copies = [i for i in range(1, len(pages)) if i % (job_html.COPY_EVERY + 1) == job_html.COPY_EVERY]
    assert copies == [10, 21, 32]
    for i in copies:
        original, copy = paragraphs(pages[i - 1]), paragraphs(pages[i])
        assert len(copy) == len(original) - 1
        # The copy is the original with one element cut: it reads as a subsequence.
        rest = iter(original)
        assert all(p in rest for p in copy)
    originals = [p for i, p in enumerate(pages) if i not in copies]
    assert len(set(originals)) == len(originals)


def test_a_real_pages_paragraphs_are_all_replaced(shared_data: Path):
    from bench.datasets import load_aeb

    skeletons = [page.html for page in load_aeb(shared_data / "web" / "aeb", page_text=lambda html: "")][:20]
    pool = {p for page in skeletons for p in paragraphs(page)}
    pages = job_html.site_pages(skeletons, 30, seed=2)
    assert len(set(pages)) == 30 and all(set(paragraphs(page)) <= pool for page in pages)


def test_the_rate_per_extra_page_and_the_stages_per_extra_page_are_worked_out_by_hand():
    def run(wall: float, signatures: float) -> dict:
        return {"wall_s": wall, "cpu_s": 2 * wall, "stage_seconds": {"signatures": signatures}}

    report = {"inputs": [{"size": "small", "pages": 100}, {"size": "big", "pages": 1100}],
              "runs": {"small": [run(20, 1), run(22, 1), {"failed": "x"}], "big": [run(30, 6), run(31, 6)]}}
    summary = job_html.summarise(report)
    # 1,000 extra pages in 30.5 - 21 = 9.5 s on 2 cores; on CPU seconds 19 s on one.
    assert summary["pages_per_s_per_core"] == pytest.approx(1000 / 9.5 / 2)
    assert summary["pages_per_cpu_s"] == pytest.approx(1000 / 19)
    assert summary["stage_s_per_extra_page"]["signatures"] == pytest.approx(5 / 1000)
    report["runs"]["big"] = [{"failed": "x"}]
    assert job_html.summarise(report) == {}


def test_a_run_whose_rate_could_not_be_read_off_says_so_and_is_not_judged():
    report = {"job_commit": "abc", "repeats": 1, "seconds": 1.0, "load_start": [0, 0, 0], "load_end": [0, 0, 0],
              "driver_memory": "2g", "inputs": [{"size": "small", "pages": 10, "mb": 1.0}],
              "runs": {"small": [{"failed": "x"}]}, "summary": {},
              "extraction": {"pages_per_s": 50.0, "pages_per_cpu_s": 50.0}}
    text = "\n".join(job_html.section_lines(report, "cmd"))
    assert "no cost per extra page could be read off" in text and "| not measured |" in text


def test_a_skipped_run_says_so_in_its_section():
    lines = job_html.section_lines({"skipped": "shared/data/web/aeb not found beside the repository"}, "cmd")
    assert lines[0] == job_html.SECTION_TITLE and "skipped: shared/data/web/aeb not found" in lines[2]


@pytest.mark.slow
def test_a_small_run_measures_the_job_and_the_extraction(tmp_path: Path, shared_data: Path):
    out = tmp_path / "html.json"
    rev = os.environ.get("SIMHASH_BENCH_JOB_REV")
    result = subprocess.run(
        [sys.executable, "-m", "bench.job_html", "--quick", "--driver-memory", "2g", "--json", str(out),
         *(["--rev", rev] if rev else [])],
        cwd=ROOT, capture_output=True, text=True, timeout=3600)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(out.read_text())
    assert [i["pages"] for i in report["inputs"]] == list(job_html.QUICK_SIZES)
    assert all(len(runs) == 2 and all("failed" not in r for r in runs) for runs in report["runs"].values())
    # Every page is a document of the job's report: none lost, none invented.
    for item in report["inputs"]:
        assert all(r["counts"]["documents"] == item["pages"] for r in report["runs"][item["size"]])
    assert report["extraction"]["pages_per_s"] > 0 and report["summary"]["stage_s_per_extra_page"]
    assert job_html.section_lines(report, "cmd")[0] == job_html.SECTION_TITLE
