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
    # jieba's dictionary loads quietly on the executors, and nothing failed along the way
    # (spark-submit sends the driver's Python stderr to stdout, so both are checked).
    for noise in ("pkg_resources", "Building prefix dict", "Traceback", "ERROR"):
        assert noise not in result.stderr + result.stdout, noise
    # Local mode ships nothing: no environment is packed.
    assert "pack_env" not in result.stderr
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


def submit_verbose(*args: str, **env: str) -> subprocess.CompletedProcess:
    """./submit.sh with spark-submit's --verbose, which prints the arguments it parsed and
    those it hands to the job; with the job's --help nothing runs."""
    full_env = dict(os.environ, SIMHASH_VENV=str(Path(sys.executable).parent.parent), **env)
    full_env.pop("SPARK_MASTER", None)
    return subprocess.run([str(ROOT / "submit.sh"), "--verbose", *args], capture_output=True, text=True,
                          env=full_env, timeout=300)


def parsed(stderr: str, name: str) -> str:
    """A value from spark-submit's 'Parsed arguments:' listing."""
    for line in stderr.splitlines():
        if line.strip().startswith(name + " "):
            return line.split(None, 1)[1].strip()
    raise AssertionError(f"{name} not in spark-submit's output:\n{stderr[-3000:]}")


def test_spark_options_go_to_spark_submit_and_the_rest_to_the_job():
    result = submit_verbose(
        "--master", "local[1]", "--k", "4", "--conf=spark.sql.shuffle.partitions=3", "--help",
        SPARK_SUBMIT_ARGS="--master local[2] --driver-memory 1g",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "usage: dedupe.py" in result.stdout and "--min-features" in result.stdout
    # The command line's --master beats SPARK_SUBMIT_ARGS'; the rest of SPARK_SUBMIT_ARGS stays.
    assert parsed(result.stderr, "master") == "local[1]"
    assert parsed(result.stderr, "driverMemory") == "1g"
    assert "(spark.sql.shuffle.partitions,3)" in result.stderr
    # Job options reach the job in their order; the log configuration is still passed.
    assert parsed(result.stderr, "childArgs") == "[--k 4 --help]"
    assert "log4j2.properties" in parsed(result.stderr, "driverExtraJavaOptions")
    assert parsed(result.stderr, "archives") == "null"


def test_a_cluster_master_for_help_packs_nothing_and_a_bare_option_is_an_error():
    # --help needs no executors, so it does not wait for an environment to be packed; nothing
    # connects to the (absent) master either.
    result = submit_verbose("--master", "spark://127.0.0.1:9", "--help")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "usage: dedupe.py" in result.stdout
    assert parsed(result.stderr, "master") == "spark://127.0.0.1:9"
    assert "pack_env" not in result.stderr

    bare = subprocess.run([str(ROOT / "submit.sh"), "--input", "x", "--master"], capture_output=True, text=True,
                          env=dict(os.environ, SIMHASH_VENV=str(Path(sys.executable).parent.parent)))
    assert bare.returncode == 2 and "--master needs a value" in bare.stderr
