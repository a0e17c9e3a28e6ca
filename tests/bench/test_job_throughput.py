"""bench/job_throughput.py and bench/job_runs.py: the job's MB/s per core per extra MB, its
inputs, its document, and one --quick run.

Oracles: the rate against arithmetic done by hand (a start-up paid by both runs cancelling);
the English paragraphs against the words of the HTML they came from; the summary against
medians taken by hand; the --quick run against its own input files (documents counted from
their lines) and the job's report.json (its document count).

SIMHASH_BENCH_JOB_REV=<rev> makes the --quick run measure that commit's job (a git worktree)
instead of the working tree's, for a run while the working tree is half edited.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import job_throughput
from bench.job_runs import ROOT, measured_process


def test_per_core_rate_is_the_extra_mb_over_the_extra_seconds_per_core():
    assert job_throughput.per_core_rate((5.0, 30.0), (205.0, 80.0)) == pytest.approx(200 / 50 / 2)
    assert job_throughput.per_core_rate((5.0, 30.0), (205.0, 80.0), cores=1) == pytest.approx(4.0)


def test_a_start_up_paid_by_both_runs_cancels():
    without = job_throughput.per_core_rate((5.0, 2.0), (200.0, 41.0))
    assert job_throughput.per_core_rate((5.0, 2.0 + 25.0), (200.0, 41.0 + 25.0)) == pytest.approx(without)


def test_no_extra_seconds_gives_no_rate_and_the_big_input_must_be_bigger():
    assert math.isnan(job_throughput.per_core_rate((1.0, 10.0), (4.0, 9.0)))
    with pytest.raises(ValueError):
        job_throughput.per_core_rate((4.0, 10.0), (4.0, 20.0))


def test_english_paragraphs_are_the_pages_text_without_blank_lines():
    pages = ["<html><body><h1>Title one</h1><p>First paragraph here.</p><p></p><p>Second one.</p></body></html>",
             "<html><body><p>Another page's text.</p><script>var x = 1;</script></body></html>"]
    paragraphs = job_throughput.english_paragraphs(pages)
    assert all(p == p.strip() and p for p in paragraphs)
    joined = " ".join(paragraphs)
    for words in ("Title one", "First paragraph here.", "Second one.", "Another page's text."):
        assert words in joined
    assert "var x" not in joined and "<p>" not in joined


def _run(wall: float, cpu: float, stages: dict[str, float]) -> dict:
    return {"wall_s": wall, "cpu_s": cpu, "peak_rss": 2**30, "stage_seconds": stages}


def _report() -> dict:
    inputs = [{"language": "zh", "size": "small", "path": "a", "documents": 10, "mb": 5.0},
              {"language": "zh", "size": "big", "path": "b", "documents": 400, "mb": 205.0}]
    return {
        "inputs": inputs, "repeats": 3, "big_repeats": 1, "driver_memory": "4g", "job_commit": "abc",
        "seconds": 1.0, "load_start": [1, 1, 1], "load_end": [1, 1, 1],
        "runs": {
            "zh-small": {"job": [_run(30, 40, {"fp": 1}), _run(90, 41, {"fp": 2}), _run(31, 42, {"fp": 3})],
                         "recipe": [_run(50, 60, {}), _run(52, 61, {}), {"failed": "boom"}]},
            "zh-big": {"job": [_run(81, 142, {"fp": 42})], "recipe": [_run(1052, 1661, {})]},
        },
        "function": {"zh": {"mb_per_s": 8.0, "mb_per_cpu_s": 9.0}},
    }


def test_summary_takes_the_rate_of_the_medians_and_skips_failed_runs():
    s = job_throughput.summarise(_report())["zh"]
    job, recipe = s["methods"]["job"], s["methods"]["recipe"]
    assert job["wall_s"] == {"small": 31, "big": 81}  # the 90 s outlier is not the median
    assert job["mb_per_s_per_core"] == pytest.approx(200 / 50 / 2)
    assert job["mb_per_cpu_s"] == pytest.approx(200 / (142 - 41))  # CPU medians 41 and 142
    assert recipe["mb_per_s_per_core"] == pytest.approx(200 / 1001 / 2)  # median of 50 and 52 is 51
    assert job["stage_s_per_extra_mb"]["fp"] == pytest.approx((42 - 2) / 200)
    assert s["job_over_function"] == pytest.approx(2.0 / 8.0)
    assert s["job_over_recipe"] == pytest.approx(1001 / 50)


def test_the_recipe_s_rate_comes_from_its_own_big_input_when_it_had_one():
    report = _report()
    report["inputs"].append({"language": "zh", "size": "recipe-big", "path": "c", "documents": 90, "mb": 45.0})
    report["runs"]["zh-big"]["recipe"] = []
    report["runs"]["zh-recipe-big"] = {"job": [], "recipe": [_run(251, 300, {})]}
    s = job_throughput.summarise(report)["zh"]
    assert s["methods"]["recipe"]["mb_per_s_per_core"] == pytest.approx(40 / 200 / 2)  # (45 - 5) MB in 251 - 51 s
    assert s["methods"]["job"]["mb_per_s_per_core"] == pytest.approx(200 / 50 / 2)  # the job's big input still


def test_a_rate_that_could_not_be_read_off_is_not_measured():
    report = _report()
    report["runs"]["zh-big"]["job"] = [_run(20, 30, {"fp": 1})]  # the big run took less time than the small
    summary = job_throughput.summarise(report)
    assert summary["zh"]["job_over_function"] is None and summary["zh"]["job_over_recipe"] is None
    text = "\n".join(job_throughput.section_lines({**report, "summary": summary}, "x"))
    assert "nan" not in text
    assert text.split("### Targets")[1].count("not measured") == 5


def test_verdict_says_met_or_by_how_much_it_missed():
    assert job_throughput.verdict(5.0, 5.0) == "met"
    assert job_throughput.verdict(2.5, 5.0) == "missed by 2.00x"
    assert job_throughput.verdict(0.4, 0.5, at_least=False) == "met"
    assert job_throughput.verdict(1.5, 0.5, at_least=False) == "missed by 3.00x"
    assert job_throughput.verdict(None, 1.0) == "not measured"


def test_the_section_judges_every_target():
    text = "\n".join(job_throughput.section_lines({**_report(), "summary": job_throughput.summarise(_report())},
                                                 "python -m bench.job_throughput"))
    targets = text.split("### Targets", 1)[1]
    rows = [line for line in targets.splitlines() if line.startswith("| Chinese")]
    assert len(rows) == 5  # MB/s, share of the function, over the recipe, two anchors
    assert "| 2.00 (on CPU seconds: 1.98 MB per CPU-second) | missed by 2.50x |" in rows[0]  # 2 MB/s per core vs 5
    assert "| 25% (on CPU seconds: 22%) | missed by 2.00x |" in rows[1]  # 1.98 / 9.0 MB per CPU-second
    assert "| 20.02x | met |" in rows[2]
    assert "| 5.0x | missed by 2.00x |" in rows[3]  # 2.0 / 0.4 BigCode
    assert "1 failed" in text.split("### Targets")[0]  # the recipe's failed run is shown


def test_measured_process_counts_a_child_s_cpu_and_memory_and_its_exit():
    # The child idles after burning: TreeCpu keeps the last value it sampled (every 0.2 s), so
    # the idle time is its chance to see the burnt CPU. 2 s, not 0.5: under a loaded suite (two
    # pytest processes, Spark beside them) it failed once, the sampler thread likely starved past 0.5 s.
    burn = ("import time\nx = bytearray(200 * 2**20)\nt = time.process_time()\n"
            "while time.process_time() - t < 0.6: pass\ntime.sleep(2)")
    result = measured_process(["bash", "-c", f"{sys.executable} -c '{burn}'; exit 3"], ROOT, dict(os.environ), 60)
    assert result["returncode"] == 3
    assert 0.5 <= result["cpu_s"] <= 1.5
    assert 0.5 <= result["cpu_s_by_kind"]["python"] <= 1.5  # the shell's Python child burnt it
    assert result["peak_rss"] >= 200 * 2**20


@pytest.mark.slow
def test_a_quick_run_measures_the_job_on_its_inputs(tmp_path: Path):
    out = tmp_path / "throughput.json"
    rev = os.environ.get("SIMHASH_BENCH_JOB_REV")
    result = subprocess.run(
        [sys.executable, "-m", "bench.job_throughput", "--quick", "--languages", "zh", "--repeats", "1",
         "--driver-memory", "2g",
         "--json", str(out), *(["--rev", rev] if rev else [])],
        cwd=ROOT, capture_output=True, text=True, timeout=3600)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(out.read_text())
    for item in report["inputs"]:
        assert Path(item["path"]).read_text("utf-8").count("\n") == item["documents"]
        for method in ("job", "recipe"):
            (run,) = report["runs"][f"{item['language']}-{item['size']}"][method]
            assert "failed" not in run, run
            assert run["cpu_s"] > 1  # a JVM was started: the process tree was counted
            if method == "job":
                assert run["counts"]["documents"] == item["documents"]
    # One language keeps the run short (every job run pays Spark's start-up); --languages is honoured.
    assert {item["language"] for item in report["inputs"]} == set(report["function"]) == {"zh"}
    assert report["function"]["zh"]["mb_per_s"] > 0
    text = "\n".join(job_throughput.section_lines(report, "python -m bench.job_throughput --quick"))
    # Each of the language's five targets has a verdict; English has no rows.
    assert text.count("| met |") + text.count("| missed by") + text.count("not measured") >= 5
    assert job_throughput.LANGUAGE["en"] not in text


def test_a_base_commit_s_runs_give_its_rate_and_the_ratio_of_the_two():
    """--base: the base's rate from its own runs, and job / base on wall and CPU seconds."""
    report = _report()
    report["base_commit"] = "def"
    report["runs"]["zh-small"]["base"] = [_run(32, 40, {"fp": 2}), _run(34, 44, {"fp": 2}), {"failed": "x"}]
    report["runs"]["zh-big"]["base"] = [_run(133, 242, {"fp": 80})]
    s = job_throughput.summarise(report)["zh"]
    assert s["methods"]["base"]["mb_per_s_per_core"] == pytest.approx(200 / (133 - 33) / 2)  # 1 MB/s per core
    assert s["methods"]["base"]["stage_s_per_extra_mb"]["fp"] == pytest.approx((80 - 2) / 200)
    assert s["job_over_base"] == pytest.approx(2.0)  # 200 / 50 / 2 against 200 / 100 / 2
    assert s["job_over_base_cpu"] == pytest.approx((200 / 101) / (200 / 200))  # CPU medians 41/142 and 42/242
    text = "\n".join(job_throughput.section_lines({**report, "summary": job_throughput.summarise(report)}, "x"))
    assert "**base** = the job at def" in text
    assert "over the base's (def): 2.00x (on CPU seconds: 1.98x)" in text
    assert "| Chinese (People's Daily, plain text) | base | 1.00 | 1.00 | 2.00x |" in text
    assert "| big | 400 | 205.0 | base | 133.0 |" in text


def test_the_cpu_split_by_process_is_per_extra_mb_and_shown_beside_the_function():
    report = _report()
    kinds = lambda python, jvm: {"root": 1.0, "jvm": jvm, "python": python, "other": 0.0}  # noqa: E731
    for run, (python, jvm) in zip(report["runs"]["zh-small"]["job"], [(10, 20), (11, 90), (12, 22)]):
        run["cpu_s_by_kind"] = kinds(python, jvm)
    report["runs"]["zh-big"]["job"][0]["cpu_s_by_kind"] = kinds(91, 62)
    s = job_throughput.summarise(report)["zh"]
    by_kind = s["methods"]["job"]["cpu_s_per_extra_mb_by_kind"]
    # Medians of the small runs (python 11, jvm 22), the big run's minus them, over 200 extra MB.
    assert by_kind == pytest.approx({"root": 0.0, "jvm": (62 - 22) / 200, "python": (91 - 11) / 200, "other": 0.0})
    text = "\n".join(job_throughput.section_lines({**report, "summary": job_throughput.summarise(report)}, "x"))
    line = next(li for li in text.splitlines() if "CPU seconds per extra MB by process" in li)
    assert "Python workers (the UDFs) 0.4000 (67%), JVM (Spark: reading, Arrow, shuffles, writing) 0.2000 (33%)" in line
    assert "in all 0.6000 (the fingerprint function alone, one process: 0.1111)" in line  # 1 / 9 MB per CPU-second
    assert "driver" not in line and "other" not in line  # 0 per extra MB: under 1% of the sum


def test_runs_without_a_cpu_split_have_none_and_the_section_no_line():
    s = job_throughput.summarise(_report())["zh"]
    assert s["methods"]["job"]["cpu_s_per_extra_mb_by_kind"] == {}
    text = "\n".join(job_throughput.section_lines({**_report(), "summary": job_throughput.summarise(_report())}, "x"))
    assert "by process" not in text


def test_without_a_base_the_section_has_no_a_b():
    summary = job_throughput.summarise(_report())
    assert summary["zh"]["job_over_base"] is None
    text = "\n".join(job_throughput.section_lines({**_report(), "summary": summary}, "x"))
    assert "base" not in text
