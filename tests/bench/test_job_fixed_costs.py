"""bench/job_fixed_costs.py: the short documents it builds, its document, and one --quick run.

Oracles: sentences split by hand; the documents' lengths, languages, copies and distinctness
counted here; the rendered targets against verdicts worked out by hand; the --quick run
against its own input file (documents counted from its lines) and the job's report.json.

SIMHASH_BENCH_JOB_REV=<rev> makes the --quick run measure that commit's job (see
tests/bench/test_job_throughput.py).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from bench import job_fixed_costs as fixed
from bench.job_runs import ROOT
from bench.pipeline_throughput import near_copy


def test_sentences_are_cut_after_each_end():
    paragraphs = ["今天天气很好。我们去公园！你来吗？", "First one. Second one? Third!", "No end here"]
    assert fixed.sentences(paragraphs) == ["今天天气很好。", "我们去公园！", "你来吗？", "First one.",
                                           "Second one?", "Third!", "No end here"]


def test_a_dot_inside_a_word_does_not_end_a_sentence():
    assert fixed.sentences(["Call os.path.join() here. Then stop."]) == ["Call os.path.join() here.", "Then stop."]


def test_target_lengths_lie_in_range_and_are_mostly_short():
    rng = random.Random(3)
    lengths = [fixed.target_length(rng) for _ in range(20_000)]
    assert min(lengths) >= fixed.MIN_CHARS and max(lengths) <= fixed.MAX_CHARS
    # 200 x 10^(u^3): the median is 200 x 10^(1/8) = 267.
    assert 250 <= statistics.median(lengths) <= 285
    assert max(lengths) > 1500


def _pools() -> dict[str, list[str]]:
    rng = random.Random(0)
    zh = ["".join(rng.choice("的一是在不了有和人这中大为上个国") for _ in range(rng.randint(10, 60))) + "。"
          for _ in range(3000)]
    en = [" ".join(rng.choice(["alpha", "beta", "gamma", "delta", "omega", "sigma"]) for _ in range(rng.randint(4, 20)))
          + "." for _ in range(3000)]
    return {"zh": zh, "en": en}


@pytest.mark.parametrize("n", [11, 100, 1001, 5000])
def test_short_documents_are_n_rows_with_a_copy_of_every_tenth(n):
    rows = fixed.short_documents(_pools(), n, seed=1)
    assert len(rows) == n
    originals = [r for r in rows if not r["id"].endswith("-copy")]
    copies = {r["id"]: r["text"] for r in rows if r["id"].endswith("-copy")}
    assert len(copies) == n // 11  # one in 11 rows is a copy: 10% of the originals
    copied = 0
    for i, row in enumerate(originals):
        assert row["id"].startswith("zh-" if i % 2 == 0 else "en-")
        assert fixed.MIN_CHARS <= len(row["text"]) <= fixed.MAX_CHARS
        if f"{row['id']}-copy" in copies:
            assert i % 10 == 0 and copies[f"{row['id']}-copy"] == near_copy(row["text"])
            copied += 1
    assert copied == len(copies)
    assert len({r["text"] for r in originals}) == len(originals)
    assert len({r["id"] for r in rows}) == n


def _report() -> dict:
    run = {"wall_s": 400.0, "cpu_s": 700.0, "total_seconds": 380.0, "peak_rss": 6 * 2**30, "peak_jvm_rss": 5 * 2**30,
           "peak_python_workers_rss": 2**30, "spark_jobs": 31, "stage_seconds": {"fingerprint": 300.0, "join": 50.0}, "stage_jobs": {"join": 4}}
    sample = [{"wall_s": w, "total_seconds": t, "spark_jobs": 12, "stage_seconds": {"read": 1.0}}
              for w, t in ((20.0, 9.0), (18.0, 7.0), (30.0, 12.0))]
    return {
        "job_commit": "abc", "load_start": [1, 1, 1], "load_end": [1, 1, 1],
        "documents": {"input": {"documents": 1_000_000, "mb": 800.0, "chars_median": 270, "chars_mean": 460.0},
                      "driver_memory": "8g", "run": run, "docs_per_s_per_core": 1250.0,
                      "docs_per_s_per_core_report": 1315.8},
        "sample": {"runs": sample, "wall_s": [20.0, 18.0, 30.0], "total_seconds": [9.0, 7.0, 12.0],
                   "median_total_seconds": 9.0, "median_wall_s": 20.0, "spark_jobs": [12, 12, 12],
                   "stage_seconds": {"read": 1.0}},
    }


def test_the_documents_section_shows_the_run_and_its_stages():
    text = "\n".join(fixed.documents_lines(_report(), "python -m bench.job_fixed_costs"))
    assert "| 1M | 400.0 | 380.0 | 1,250 | 1,316 | 700 | 6.00 (5.00, 1.00) | 31 |" in text  # 1M / 400 s / 2 cores
    assert "| fingerprint | 300.00 | 79% | - |" in text and "| join | 50.00 | 13% | 4 |" in text
    assert text.index("| fingerprint |") < text.index("| join |")
    assert "driver 8g, peak RSS 6.00 GB | met |" in text


def test_the_sample_section_judges_the_median_against_8_seconds():
    text = "\n".join(fixed.sample_lines(_report(), "python -m bench.job_fixed_costs --parts sample"))
    assert "| 9.0 s | missed by 1.12x |" in text  # median total_seconds 9.0 against 8
    assert "| 20.0 s | missed by 2.50x |" in text
    report = _report()
    report["sample"].update(median_total_seconds=6.0, spark_jobs=[])
    text = "\n".join(fixed.sample_lines(report, "x"))
    assert "| 6.0 s | met |" in text and "not in report.json" in text


def test_with_a_base_the_sample_section_gives_both_medians_and_their_ratio():
    report = _report()
    base = {**report["sample"], "wall_s": [40.0, 44.0, 42.0], "total_seconds": [18.0, 20.0, 19.0],
            "median_total_seconds": 19.0, "median_wall_s": 42.0, "spark_jobs": [103] * 3}
    report.update(base_commit="f99eb30")
    report["sample"].update(base=base, ratio_total_seconds=9.0 / 19.0, ratio_wall_s=20.0 / 42.0)
    text = "\n".join(fixed.sample_lines(report, "x"))
    assert "| base f99eb30: 3 of 3 | 18.0, 20.0, 19.0 | 19.0 | 40.0, 44.0, 42.0 | 42.0 | 103 |" in text
    assert "report total_seconds 0.47x, process wall 0.48x" in text
    assert "base" not in "\n".join(fixed.sample_lines(_report(), "x"))
    # The default second row: the same job without the class archive.
    report.update(base_label="without the class archive")
    text = "\n".join(fixed.sample_lines(report, "x"))
    assert "| without the class archive: 3 of 3 | 18.0, 20.0, 19.0 |" in text and "f99eb30" not in text


def test_sample_runs_take_turns_between_the_trees(monkeypatch, tmp_path: Path):
    order = []

    def fake_run(tree, job_args, output, driver_memory, timeout, env):
        order.append((tree, env["SIMHASH_CLASS_ARCHIVE"]))
        return {"wall_s": 10.0 + len(order), "total_seconds": 5.0 + len(order), "spark_jobs": 7, "stage_seconds": {}}

    monkeypatch.setattr(fixed, "run_job", fake_run)
    args = argparse.Namespace(sample_runs=3, timeout=60)
    result = fixed.sample_runs({"base": ("T", {"SIMHASH_CLASS_ARCHIVE": "none"}),
                                "head": ("T", {"SIMHASH_CLASS_ARCHIVE": "a.jsa"})}, args)
    assert order == [("T", "none"), ("T", "a.jsa")] * 3
    assert result["base"]["wall_s"] == [11.0, 13.0, 15.0] and result["head"]["median_wall_s"] == 14.0
    assert fixed.ratio(result["head"]["median_wall_s"], result["base"]["median_wall_s"]) == 14.0 / 13.0


@pytest.mark.slow
def test_a_quick_run_measures_the_documents_and_the_sample(tmp_path: Path):
    out = tmp_path / "fixed.json"
    rev = os.environ.get("SIMHASH_BENCH_JOB_REV")
    result = subprocess.run(
        [sys.executable, "-m", "bench.job_fixed_costs", "--quick", "--n", "3000", "--sample-runs", "1",
         "--driver-memory", "2g", "--json", str(out), *(["--rev", rev] if rev else [])],
        cwd=ROOT, capture_output=True, text=True, timeout=3600)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(out.read_text())
    d = report["documents"]
    assert Path(d["input"]["path"]).read_text("utf-8").count("\n") == d["input"]["documents"] == 3000
    assert d["run"]["counts"]["documents"] == 3000
    assert d["run"]["peak_rss"] > d["run"]["peak_jvm_rss"] > 0
    assert d["run"]["stage_seconds"]
    (run,) = report["sample"]["runs"]
    assert run["counts"]["documents"] == sum(1 for _ in (ROOT / "examples" / "sample.jsonl").open())
    assert report["sample"]["median_total_seconds"] == run["total_seconds"] > 0
    # The same job without the class archive took turns with it, to the same counts.
    (without,) = report["sample"]["base"]["runs"]
    assert report["base_label"] == "without the class archive" and without["counts"] == run["counts"]
    assert (fixed.CACHE / "driver-classes.jsa").is_file()
