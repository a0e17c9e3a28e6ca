"""The README's own command lines run (issue 11, item 7: its `./submit.sh --driver-memory 8g`
example stopped with "unrecognized arguments"), so the README cannot drift from the code.

Every line of the ```bash blocks under "## Running it" runs as written, through bash in the
project's folder, with only its placeholders filled in: `crawl/`, `hdfs:///crawl/` and an
`--input ...` become examples/sample.jsonl, the WARC glob becomes the shared WARC files, and
every output goes to pytest's temporary folder. The `--driver-memory` line and the by-hand
`spark-submit` line write their output there and are checked against the sample's row count;
the other local lines that write an output (the same run as tests/system/test_submit.py's, WARC as
tests/files/test_warc.py's) get `--explain` added, which still reads their input.

A cluster line (a master that is not `local[...]`) cannot reach its master here. Its words
are checked twice: (1) as written, master included, submit.sh's dry run (SIMHASH_SUBMIT_DRY_RUN,
nothing packed) must hand spark-submit exactly the spark-submit options and the job exactly
the job's options, which the job's parser accepts; (2) the line then runs for real in local
mode (`--master local[2]`) with `--explain` added, which reads the input and prints the plan
without writing anything. So no cluster is needed, and what the line asks of submit.sh and
of the job is still run.

Every `./submit.sh` line of the README's other bash blocks (the cluster section's standalone,
YARN and Kubernetes lines) gets check (1).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT, SHARED_DATA

pytestmark = [pytest.mark.spark, pytest.mark.slow]

VENV = Path(sys.executable).parent.parent
SAMPLE = ROOT / "examples" / "sample.jsonl"
SAMPLE_ROWS = sum(1 for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip())
WARC_GLOB = SHARED_DATA / "web" / "warc" / "*.warc.gz"
DEDUPE = ROOT / "jobs" / "dedupe.py"
OPERATORS = {"&&", "||", ";", "|"}


def bash_lines(section: str | None) -> list[str]:
    """The command lines of the README's ```bash blocks (under `section`, a "## " heading, up
    to the next one; the whole README when None), continuation lines joined, comments kept."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    if section is not None:
        start = text.index(f"\n## {section}\n")
        end = text.find("\n## ", start + 1)
        text = text[start:end if end > 0 else None]
    lines = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, re.S | re.M):
        for line in block.replace("\\\n", " ").splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                lines.append(line)
    return lines


def words_of(line: str) -> list[str]:
    return shlex.split(line, comments=True)


def master_of(words: list[str]) -> str | None:
    for i, word in enumerate(words):
        if word == "--master":
            return words[i + 1]
        if word.startswith("--master="):
            return word.split("=", 1)[1]
    return None


def is_cluster(words: list[str]) -> bool:
    master = master_of(words)
    return master is not None and not master.startswith("local")


def localise(words: list[str], out: Path) -> list[str]:
    """The README's placeholders filled in: inputs on this machine, outputs under `out`."""
    filled = []
    for i, word in enumerate(words):
        previous = words[i - 1] if i else ""
        if previous == "--input":
            if "warc" in word:
                if not WARC_GLOB.parent.is_dir():
                    pytest.skip(f"shared WARC files not found at {WARC_GLOB.parent}")
                word = str(WARC_GLOB)
            else:
                word = str(SAMPLE)
        elif previous == "--output":
            word = str(out)
        filled.append(word)
    return filled


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("SPARK_MASTER", "SPARK_SUBMIT_ARGS", "SPARK_DRIVER_MEMORY", "PYSPARK_SUBMIT_ARGS")}
    env.update(SIMHASH_VENV=str(VENV))
    return env


def as_shell(words: list[str]) -> str:
    return " ".join(w if w in OPERATORS else shlex.quote(w) for w in words)


def job_parser():
    spec = importlib.util.spec_from_file_location("dedupe_for_readme", DEDUPE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build_parser()


def check_sorting(words: list[str]) -> None:
    """Check (1): submit.sh's dry run of the line as written. Environment assignments in front
    (SIMHASH_PYTHON_PREFIX=...) stay environment."""
    env = clean_env()
    while "=" in words[0] and not words[0].startswith("-"):
        name, value = words.pop(0).split("=", 1)
        env[name] = value
    assert words[0] == "./submit.sh", words
    env.update(SIMHASH_SUBMIT_DRY_RUN="1", SIMHASH_PACK="0")
    result = subprocess.run(words, capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    command = result.stdout.split("\0")[:-1]
    at = command.index(str(DEDUPE))
    spark_words, job_words = command[1:at], command[at + 1:]
    # The job gets the line's words minus spark-submit's (those stand before --input here).
    given_job = words[words.index("--input"):] if "--input" in words else [w for w in words[1:] if w == "--help"]
    assert job_words == given_job, (job_words, given_job)
    if "--help" not in job_words:
        job_parser().parse_args(job_words)     # the job accepts every word it gets
    # Every spark-submit word of the line reached spark-submit.
    for word in words[1:len(words) - len(given_job)]:
        assert word in spark_words or any(word in w for w in spark_words), (word, spark_words)
    assert master_of(spark_words) == (master_of(words) or "local[*]")


RUNNING_IT = bash_lines("Running it")


def test_the_running_it_section_has_the_lines_this_test_knows():
    """A guard: the section's lines are the ones the runs below were decided for."""
    assert len(RUNNING_IT) >= 6
    assert any("--driver-memory" in line for line in RUNNING_IT)
    assert any(is_cluster(words_of(line)) for line in RUNNING_IT)


@pytest.mark.parametrize("line", RUNNING_IT, ids=lambda line: " ".join(words_of(line))[:60])
def test_a_command_line_of_running_it_runs(line, tmp_path):
    words = words_of(line)
    out = tmp_path / "out"
    filled = localise(words, out)
    cluster = is_cluster(filled)
    if cluster:
        check_sorting(list(words))
        at = filled.index("--master")
        filled[at + 1] = "local[2]"
        filled.append("--explain")
    elif "--output" in filled and filled[0] == "./submit.sh" and "--driver-memory" not in filled:
        # A plain local run of submit.sh to an output is tests/system/test_submit.py's full run, and
        # WARC input's is tests/files/test_warc.py's: here the line's words are run with --explain
        # (the input is read and planned). The --driver-memory line and the by-hand
        # spark-submit line write their outputs.
        filled.append("--explain")
    result = subprocess.run(["bash", "-c", as_shell(filled)], capture_output=True, text=True, env=clean_env(),
                            cwd=ROOT, timeout=900)
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-4000:]
    assert "unrecognized arguments" not in log
    if "--help" in filled:
        assert "usage: dedupe.py" in result.stdout
    elif "--explain" in filled:
        assert "blocks" in result.stdout and not out.exists()
    else:
        report = json.loads((out / "report.json").read_text())
        if "warc" in line:
            assert report["counts"]["documents"] > 0 and "records" in report
        else:
            assert report["counts"]["documents"] == SAMPLE_ROWS


@pytest.mark.parametrize(
    "line", [l for l in bash_lines(None) if l.split()[0].endswith("submit.sh") or "./submit.sh" in l.split()[:2]],
    ids=lambda line: " ".join(words_of(line))[:60],
)
def test_every_submit_line_of_the_readme_sorts_its_options(line):
    check_sorting(words_of(line))
