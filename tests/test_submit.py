"""`./submit.sh` runs the job through spark-submit, as users run it, quietly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SAMPLE = ROOT / "examples" / "sample.jsonl"


def test_submit_sh_runs_the_job_like_main(spark, dedupe_main, tmp_path):
    env = dict(os.environ, SIMHASH_VENV=str(Path(sys.executable).parent.parent), SPARK_MASTER="local[2]")
    out = tmp_path / "submitted"
    result = subprocess.run(
        [str(ROOT / "submit.sh"), "--input", str(SAMPLE), "--output", str(out)],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "wrote" in result.stdout and "documents 49" in result.stdout
    # jieba's dictionary loads quietly on the executors, and nothing failed along the way.
    for noise in ("pkg_resources", "Building prefix dict", "Traceback", "ERROR"):
        assert noise not in result.stderr, noise
    report = json.loads((out / "report.json").read_text())
    assert report["counts"]["documents"] == 49

    in_process = tmp_path / "in-process"
    assert dedupe_main(["--input", str(SAMPLE), "--output", str(in_process)], spark=spark) == 0
    for name in ("clusters", "pairs", "deduped"):
        a = sorted(map(tuple, spark.read.parquet(str(out / name)).collect()))
        b = sorted(map(tuple, spark.read.parquet(str(in_process / name)).collect()))
        assert a == b, name


def test_submit_sh_explains_a_missing_environment(tmp_path):
    env = dict(os.environ, SIMHASH_VENV=str(tmp_path / "no-venv"))
    result = subprocess.run([str(ROOT / "submit.sh"), "--help"], capture_output=True, text=True, env=env)
    assert result.returncode == 2 and "bootstrap" in result.stderr
