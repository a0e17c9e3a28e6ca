"""bench/commit_cost.py and bench/cost_document.py: the cost per extra MB, the inputs it builds,
the document, and one --quick run.

Oracles: the cost arithmetic against sums done by hand (and a start-up added to both runs
cancelling); the built documents against the paragraphs they came from (every paragraph
recurs once per repetition, no two documents share more than a few paragraphs) and byte
counts of their own; the --quick run against the input files (documents counted from their
lines) and against what each commit's code has (only the head's job reports a sketch route).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections import Counter
from itertools import combinations
from pathlib import Path

import pytest

from bench import commit_cost, cost_document
from bench.corpora import group_paragraphs
from bench.pipeline_throughput import COPY_EVERY


def test_cost_per_mb_is_the_extra_seconds_over_the_extra_mb():
    assert cost_document.cost_per_mb((5.0, 30.0), (20.0, 60.0)) == pytest.approx(2.0)
    assert cost_document.cost_per_mb((1.0, 10.0), (3.0, 11.0)) == pytest.approx(0.5)


def test_a_start_up_paid_by_both_runs_cancels():
    without = cost_document.cost_per_mb((5.0, 12.5), (20.0, 47.0))
    assert cost_document.cost_per_mb((5.0, 12.5 + 17.0), (20.0, 47.0 + 17.0)) == pytest.approx(without)


def test_cost_per_mb_needs_a_bigger_second_input():
    with pytest.raises(ValueError):
        cost_document.cost_per_mb((5.0, 10.0), (5.0, 20.0))
    with pytest.raises(ValueError):
        cost_document.cost_per_mb((6.0, 10.0), (5.0, 20.0))


def test_text_mb_counts_utf8_bytes():
    assert commit_cost.text_mb(["中" * 1000, "a" * 500]) == pytest.approx(3500 / 1e6)


def _paragraphs(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice("的一是在不了有和人这中大为上个国") for _ in range(rng.randint(150, 450)))
            + f"。{i}" for i in range(n)]


def test_distinct_documents_reach_the_size_and_start_with_the_corpus_itself():
    paragraphs = _paragraphs(300)
    once = group_paragraphs(paragraphs)
    documents = commit_cost.distinct_documents(paragraphs, mb=3.5 * commit_cost.text_mb(once))
    assert documents[: len(once)] == once
    assert commit_cost.text_mb(documents) >= 3.5 * commit_cost.text_mb(once)
    # Four repetitions: no paragraph more than four times, most of them exactly four times
    # (group_paragraphs drops a few at the end of each pass).
    counts = Counter(p for d in documents for p in d.split("\n"))
    assert max(counts.values()) == 4
    assert sum(1 for c in counts.values() if c == 4) >= 0.9 * len(paragraphs)


def test_distinct_documents_are_distinct_texts():
    documents = commit_cost.distinct_documents(_paragraphs(200, seed=1), mb=1.0)
    assert len(set(documents)) == len(documents)
    sets = [set(d.split("\n")) for d in documents]
    # A near copy would share most of its paragraphs with another document.
    assert max(len(a & b) / min(len(a), len(b)) for a, b in combinations(sets, 2)) <= 0.5


def test_first_rows_of_mb_is_the_shortest_prefix_with_its_near_copies():
    texts = _paragraphs(100, seed=2)
    rows = commit_cost.first_rows_of_mb(texts, "zh", mb=0.05)
    originals = [r for r in rows if not r["id"].endswith("-copy")]
    n = len(originals)
    assert [r["text"] for r in originals] == texts[:n]
    assert len(rows) - n == len(range(0, n, COPY_EVERY))  # a copy of every tenth, the first included
    assert commit_cost.text_mb([r["text"] for r in rows]) >= 0.05
    shorter = commit_cost.with_near_copies(texts[: n - 1], "zh")
    assert commit_cost.text_mb([r["text"] for r in shorter]) < 0.05


def test_first_rows_of_mb_takes_every_text_when_they_are_too_few():
    texts = _paragraphs(5, seed=3)
    rows = commit_cost.first_rows_of_mb(texts, "en", mb=10.0)
    assert [r["text"] for r in rows if not r["id"].endswith("-copy")] == texts


def test_tree_cpu_counts_the_cpu_of_children_and_grandchildren():
    # Each burner then sleeps 1.5 s, so the sampler sees its final CPU even on a loaded machine
    # (a process that exits between two samples loses its last interval: by design, alike on
    # both commits of a benchmark, but not what this test is about).
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < {}: pass\ntime.sleep(1.5)"
    script = (f"{sys.executable} -c '{burn.format(0.8)}' & {sys.executable} -c '{burn.format(0.5)}'; "
              "wait; sleep 0.3")
    process = subprocess.Popen(["bash", "-c", script])
    with commit_cost.TreeCpu(process.pid) as cpu:
        process.wait()
    # 1.3 s burnt by two grandchildren; Python's start-up adds a little.
    assert 1.1 <= cpu.seconds() <= 2.0


def test_tree_cpu_splits_its_seconds_by_kind_of_process():
    # The root is a shell; its Python grandchildren burn the CPU (as the JVM's Python workers
    # do under a job's Python): they count as `python`, the shell as `root`, no JVM ran.
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < {}: pass\ntime.sleep(1.5)"
    script = f"{sys.executable} -c '{burn.format(0.6)}' & {sys.executable} -c '{burn.format(0.4)}'; wait"
    process = subprocess.Popen(["bash", "-c", script])
    with commit_cost.TreeCpu(process.pid) as cpu:
        process.wait()
    by_kind = cpu.seconds_by_kind()
    assert set(by_kind) == set(commit_cost.PROCESS_KINDS)
    assert 0.9 <= by_kind["python"] <= 1.6
    assert by_kind["jvm"] == 0 and by_kind["root"] < 0.3
    assert sum(by_kind.values()) == pytest.approx(cpu.seconds())


@pytest.mark.parametrize(
    ("name", "is_root", "kind"),
    [("java", False, "jvm"), ("python3.11", False, "python"), ("python", False, "python"),
     ("python", True, "root"), ("java", True, "root"), ("bash", False, "other"), ("chmod", False, "other")],
)
def test_process_kind_names_the_root_jvms_pythons_and_the_rest(name: str, is_root: bool, kind: str):
    assert commit_cost.process_kind(name, is_root) == kind


@pytest.mark.slow
def test_a_quick_run_measures_both_commits_each_with_its_own_code(tmp_path: Path):
    out_json, out_md = tmp_path / "cost.json", tmp_path / "cost.md"
    result = subprocess.run(
        [sys.executable, "-m", "bench.commit_cost", "--quick", "--languages", "zh", "--repeats", "1",
         "--json", str(out_json), "--write", str(out_md)],
        cwd=commit_cost.ROOT, capture_output=True, text=True, timeout=1800,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(out_json.read_text())
    for name, commit in report["commits"].items():
        tree = f"{name}-{commit['commit'][:10]}"
        assert all(f"/commit-cost/{tree}/" in path for path in commit["imports"].values()), commit["imports"]
    documents = {(i["language"], i["size"]): i["documents"] for i in report["inputs"]}
    assert set(documents) == {("zh", "small"), ("zh", "big")}  # --languages zh: no English inputs
    for item in report["inputs"]:
        lines = (commit_cost.CACHE / item["file"]).read_text("utf-8").count("\n")
        assert lines == item["documents"]
    for run in report["runs"]:
        assert len(run["wall_s"]) == 1 and not run["failures"]
        (job,) = run["reports"]
        assert job["counts"]["documents"] == documents[(run["language"], run["size"])]
        # The sketch route came with issue 13: the base commit's report has no such section.
        assert (job["sketch"] is not None) == (run["commit"] == "head")
        assert job["cpu_s"] > 5  # a JVM and Spark's start-up alone take more: the tree was counted
    worktrees = subprocess.run(["git", "worktree", "list"], cwd=commit_cost.ROOT, capture_output=True,
                               text=True).stdout
    assert "commit-cost" not in worktrees
    text = out_md.read_text()
    assert "## Cost per extra MB" in text and "head / base" in text


def _run(language: str, size: str, commit: str, wall: list[float], cpu: list[float], stage: list[float]) -> dict:
    reports = [{"cpu_s": c, "stage_seconds": {"fingerprint": s}, "sketch": None} for c, s in zip(cpu, stage)]
    return {"language": language, "size": size, "commit": commit, "wall_s": wall, "failures": [], "reports": reports}


def _report() -> dict:
    return {
        "command": "python -m bench.commit_cost", "when": "now", "seconds": 1.0, "cpu": "cpu", "master": "local[2]",
        "cores": 2, "driver_memory": "4g", "repeats": 3, "load_start": [1, 1, 1], "load_end": [1, 1, 1],
        "commits": {"base": {"rev": "b", "commit": "b" * 40}, "head": {"rev": "h", "commit": "h" * 40}},
        "inputs": [{"language": "zh", "size": "small", "documents": 10, "mb": 3.0},
                   {"language": "zh", "size": "big", "documents": 40, "mb": 12.0}],
        "runs": [
            _run("zh", "small", "base", [12.0, 10.0, 11.0], [20.0, 21.0, 22.0], [1.0, 2.0, 3.0]),
            _run("zh", "small", "head", [13.0, 14.0, 99.0], [25.0, 30.0, 26.0], [2.0, 2.0, 2.0]),
            _run("zh", "big", "base", [40.0, 39.0, 41.0], [50.0, 52.0, 51.0], [10.0, 11.0, 12.0]),
            _run("zh", "big", "head", [50.0, 60.0, 55.0], [70.0, 75.0, 80.0], [20.0, 20.0, 20.0]),
        ],
    }


def test_summarise_takes_the_cost_of_the_medians():
    zh = cost_document.summarise(_report())["zh"]
    base, head = zh["commits"]["base"], zh["commits"]["head"]
    assert base["cost_s_per_mb"] == pytest.approx((40 - 11) / 9)
    assert head["cost_s_per_mb"] == pytest.approx((55 - 14) / 9)  # the 99 s outlier is not the median
    assert zh["ratio"] == pytest.approx(41 / 29)
    assert base["cpu_cost_s_per_mb"] == pytest.approx((51 - 21) / 9)
    assert zh["cpu_ratio"] == pytest.approx((75 - 26) / 30)
    assert head["stage_cost_s_per_mb"]["fingerprint"] == pytest.approx(18 / 9)


def test_the_document_judges_each_ratio_against_the_target():
    text = cost_document.document(_report())
    wall_row = next(line for line in text.splitlines() if line.startswith("| Chinese") and "| wall |" in line)
    assert f"{41 / 29:.2f}x" in wall_row and "missed by" in wall_row  # 1.41x > 1.3x
    cpu_row = next(line for line in text.splitlines() if line.startswith("| Chinese") and "| CPU |" in line)
    assert f"{49 / 30:.2f}x" in cpu_row and "missed by" in cpu_row


def test_the_same_cost_on_both_commits_meets_the_target():
    report = _report()
    report["runs"] = [{**r, "commit": commit} for r in report["runs"] if r["commit"] == "base"
                      for commit in ("base", "head")]
    text = cost_document.document(report)
    rows = [line for line in text.splitlines() if line.startswith("| Chinese") and ("| wall |" in line or "| CPU |" in line)]
    assert len(rows) == 2 and all("1.00x" in row and "| met |" in row for row in rows)


def test_a_stopped_run_says_how_many_repeats_it_has():
    report = _report()
    assert "3 repeats, medians" in cost_document.document(report)
    report["runs"][0] = {**report["runs"][0], "wall_s": [12.0, 10.0], "reports": report["runs"][0]["reports"][:2]}
    assert "2 of 3 repeats" in cost_document.document(report)
