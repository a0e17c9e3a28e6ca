"""bench/job_vs_join.py: the pairs' comparison, its document, and one small run.

Oracles: pair sets built by hand (a pair in either order, a missing pair, a wrong distance, a
repeated pair); ids mapped back to fingerprints through a table written here; the small run's
pairs against synthetic.py's own truth (every planted pair found).

SIMHASH_BENCH_JOB_REV=<rev> makes the small run measure that commit's job (see
tests/bench/test_job_throughput.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bench import job_vs_join
from bench.job_runs import ROOT

A = np.array([5, -9, 7], dtype=np.int64)
B = np.array([-3, 4, 100], dtype=np.int64)
D = np.array([1, 2, 3], dtype=np.int32)


def test_pairs_in_either_order_are_the_same_pairs():
    one = job_vs_join.pair_keys(A, B, D)
    other = job_vs_join.pair_keys(B[::-1], A[::-1], D[::-1])
    assert one.tolist() == other.tolist() == [[-9, 4, 2], [-3, 5, 1], [7, 100, 3]]
    assert job_vs_join.compare_pairs(one, other)["equal"]


def test_a_missing_pair_a_wrong_distance_and_a_repeat_are_differences():
    plain = job_vs_join.pair_keys(A, B, D)
    missing = job_vs_join.compare_pairs(job_vs_join.pair_keys(A[:2], B[:2], D[:2]), plain)
    assert not missing["equal"] and missing["only_plain"] == 1 and missing["only_job"] == 0
    wrong = job_vs_join.compare_pairs(job_vs_join.pair_keys(A, B, np.array([1, 2, 2])), plain)
    assert not wrong["equal"] and wrong["only_job"] == wrong["only_plain"] == 1
    repeated = job_vs_join.compare_pairs(job_vs_join.pair_keys(np.r_[A, A[:1]], np.r_[B, B[:1]], np.r_[D, D[:1]]), plain)
    assert not repeated["equal"] and repeated["job_repeated"] == 1


def test_the_job_s_ids_are_mapped_back_to_their_fingerprints(tmp_path: Path):
    fingerprints = np.array([10, -20, 30, 40], dtype=np.int64)  # id i is fingerprints[i]
    pq.write_table(pa.table({"id_a": np.array([3, 0], dtype=np.int64), "id_b": np.array([1, 2], dtype=np.int64),
                             "distance": np.array([2, 1], dtype=np.int32)}), tmp_path / "part-0.parquet")
    assert job_vs_join.job_pairs(tmp_path, fingerprints).tolist() == [[-20, 40, 2], [10, 30, 1]]


def _report(ratio_4m: float, equal: bool) -> dict:
    def entry(n: int, job: float, plain: float) -> dict:
        return {"n": n, "runs": {"job": [{"wall_s": job, "peak_rss": 2**30}],
                                 "plain join": [{"wall_s": plain, "peak_rss": 2**30}]},
                "wall_s": {"job": job, "plain join": plain}, "ratio": job / plain, "job_total_seconds": job - 10,
                "plain_session_s": plain - 10, "job_stage_seconds": {"join": 5.0, "read": 1.0},
                "exactness": {"equal": equal, "job_pairs": 7, "plain_pairs": 7 if equal else 8, "only_job": 0,
                              "only_plain": 0 if equal else 1, "job_repeated": 0}}
    return {"job_commit": "abc", "repeats": 1, "seconds": 1.0, "driver_memory": "8g", "load_start": [1, 1, 1],
            "load_end": [1, 1, 1], "results": [entry(4_000_000, 100 * ratio_4m, 100.0), entry(16_000_000, 40, 100)]}


def test_the_section_judges_the_ratios_and_exactness():
    text = "\n".join(job_vs_join.section_lines(_report(1.2, True), "python -m bench.job_vs_join"))
    assert "at 4M (process wall) | 1.20x | missed by 1.20x |" in text
    assert "at 16M (process wall) | 0.40x | met |" in text
    assert "| 2 of 2 sizes equal | met |" in text
    text = "\n".join(job_vs_join.section_lines(_report(0.9, False), "x"))
    assert "at 4M (process wall) | 0.90x | met |" in text
    assert "| 0 of 2 sizes equal | not met |" in text and "1 only in the plain join's" in text


@pytest.mark.slow
def test_a_small_run_finds_the_same_pairs_as_the_plain_join_and_the_planted_truth(tmp_path: Path):
    out = tmp_path / "vs.json"
    rev = os.environ.get("SIMHASH_BENCH_JOB_REV")
    result = subprocess.run(
        [sys.executable, "-m", "bench.job_vs_join", "--sizes", "50k", "--driver-memory", "2g", "--json", str(out),
         *(["--rev", rev] if rev else [])],
        cwd=ROOT, capture_output=True, text=True, timeout=3600)
    assert result.returncode == 0, result.stderr[-3000:]
    (entry,) = json.loads(out.read_text())["results"]
    assert entry["n"] == 50_000 and entry["exactness"]["equal"], entry.get("exactness")
    truth = pq.read_table(job_vs_join.synthetic.generate(50_000, job_vs_join.SEED, job_vs_join.K).truth)
    # Every planted pair is among them (chance pairs within 3 bits at 50k: 3e-6 expected).
    assert entry["exactness"]["plain_pairs"] >= truth.num_rows > 0
    assert entry["ratio"] > 0 and entry["job_stage_seconds"]
