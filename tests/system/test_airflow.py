"""The Airflow DAG (dags/simhash_daily.py), run for real: Airflow 3 and the Spark provider in
their own environment (scripts/airflow_env.sh), a SQLite metadata database in a temporary
AIRFLOW_HOME, `airflow dags test` running spark-submit in local mode on the sample laid out
as one day's partition. Each run takes a minute or two; the first install a few minutes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from simhash_udf.run.session import local_driver_memory, physical_memory_bytes

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "examples" / "sample.jsonl"
AIRFLOW_VENV = ROOT / "build" / "airflow-venv"
DAG_ID = "simhash_daily"


class Airflow:
    """The `airflow` command of the separate environment, with a private AIRFLOW_HOME."""

    def __init__(self, home: Path, env: dict[str, str]) -> None:
        self.home = home
        self.env = env

    def run(self, *args: str, timeout: float = 300, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(AIRFLOW_VENV / "bin" / "airflow"), *args],
            cwd=self.home, env={**self.env, **(env or {})}, capture_output=True, text=True, timeout=timeout,
        )

    def json(self, *args: str, env: dict[str, str] | None = None, returncode: int = 0) -> list[dict]:
        """A command's `-o json` output (Airflow prints warnings on stdout before it)."""
        done = self.run(*args, "-o", "json", env=env)
        assert done.returncode == returncode, done.stdout + done.stderr
        lines = [line for line in done.stdout.splitlines() if line.startswith("[")]
        assert lines, done.stdout
        return json.loads(lines[-1])

    def task_states(self, day: str) -> tuple[str, dict[str, str]]:
        """The state of the run of `day` and of each of its tasks."""
        runs = [r for r in self.json("dags", "list-runs", DAG_ID) if r["logical_date"].startswith(day)]
        assert len(runs) == 1, runs
        tasks = self.json("tasks", "states-for-dag-run", DAG_ID, runs[0]["run_id"])
        return runs[0]["state"], {t["task_id"]: t["state"] for t in tasks}


@pytest.fixture(scope="module")
def airflow(tmp_path_factory) -> Airflow:
    install = subprocess.run(
        [str(ROOT / "scripts" / "airflow_env.sh")], capture_output=True, text=True, timeout=1800,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    home = tmp_path_factory.mktemp("airflow_home")
    data = tmp_path_factory.mktemp("airflow_data")
    # Nothing of the project's environment leaks in: the DAG itself must point spark-submit at
    # the project's Spark and Python.
    env = {
        k: v for k, v in os.environ.items()
        if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_HOME", "VIRTUAL_ENV", "PYTHONPATH")
        and not k.startswith("AIRFLOW")
    }
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if Path(p) != ROOT / ".venv" / "bin"
    )
    env.update({
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        # spark_default in local mode, two cores (the provider's master is the host).
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "AIRFLOW_VAR_SIMHASH_INPUT_ROOT": str(data / "input"),
        "AIRFLOW_VAR_SIMHASH_OUTPUT_ROOT": str(data / "output"),
        "AIRFLOW_VAR_SIMHASH_INDEX_PATH": str(data / "index"),
    })
    flow = Airflow(home, env)
    migrate = flow.run("db", "migrate")
    assert migrate.returncode == 0, migrate.stdout + migrate.stderr
    flow.input_root = data / "input"
    flow.output_root = data / "output"
    return flow


def sample_rows() -> list[dict]:
    return [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_the_dag_loads_without_import_errors(airflow, tmp_path):
    assert airflow.json("dags", "list-import-errors", "--local") == []
    dags = airflow.json("dags", "list", "--local")
    assert [d["dag_id"] for d in dags] == [DAG_ID]
    assert dags[0]["fileloc"] == str(ROOT / "dags" / "simhash_daily.py")
    # The same command does report a DAG file that fails to import (and exits 1).
    (tmp_path / "broken.py").write_text("from airflow.sdk import DAG\nimport no_such_module\n")
    errors = airflow.json(
        "dags", "list-import-errors", "--local", env={"AIRFLOW__CORE__DAGS_FOLDER": str(tmp_path)}, returncode=1,
    )
    assert len(errors) == 1 and "No module named 'no_such_module'" in errors[0]["error"]


def earlier_report(documents: int, duplicates: int) -> dict:
    """A report.json of an earlier day, as the job writes its counts."""
    return {"counts": {
        "input_rows": documents, "rejected_rows": {}, "documents": documents, "skipped": {},
        "kept": documents - duplicates, "exact_duplicates": duplicates // 2,
        "near_duplicates": duplicates - duplicates // 2,
    }}


def check_the_sample_day(out: Path, partition: Path, log: str) -> None:
    """The output of a day whose partition is the sample, and its check against the three
    earlier days `write_earlier_reports` left: counts from the input itself and its labels
    (examples/README.md), not from the job."""
    assert f"{out / 'report.json'}; compared with 3 earlier day(s)" in log
    assert "median of the last 3 day(s) 48.0%" in log
    assert {"clusters", "deduped", "pairs", "report.json"} <= {p.name for p in out.iterdir()}
    assert not [p.name for p in out.parent.iterdir() if p.name.startswith(".")], "staging left behind"
    report = json.loads((out / "report.json").read_text())
    assert report["input"]["path"] == f"{partition}/"

    rows = sample_rows()
    ids = {r["id"] for r in rows}
    empty = {r["id"] for r in rows if r["kind"] == "empty"}
    counts = report["counts"]
    assert counts["input_rows"] == counts["documents"] == len(rows) == 49
    assert counts["rejected_rows"] == {} and counts["skipped"] == {"empty": len(empty)}

    clusters = pq.read_table(out / "clusters").to_pylist()
    assert sorted(c["id"] for c in clusters) == sorted(ids)
    by_status = Counter(c["status"] for c in clusters)
    assert by_status == {
        "kept": counts["kept"], "exact_duplicate": counts["exact_duplicates"],
        "near_duplicate": counts["near_duplicates"], "skipped": len(empty),
    }
    assert {c["id"] for c in clusters if c["status"] == "skipped"} == empty
    group = {r["id"]: r["group"] for r in rows}
    original = {r["group"]: r["id"] for r in rows if r["kind"] == "original"}
    cluster_of = {c["id"]: c["cluster_id"] for c in clusters}
    for r in rows:
        if r["kind"] == "exact_copy":
            assert cluster_of[r["id"]] == original[r["group"]], r["id"]
    groups_of_cluster = defaultdict(set)
    for c in clusters:
        if c["cluster_id"] is not None:
            groups_of_cluster[c["cluster_id"]].add(group[c["id"]])
    assert all(len(g) == 1 for g in groups_of_cluster.values()), groups_of_cluster
    # deduped/ holds the kept rows whole: at least one page of every group but the two empty pages'.
    deduped = pq.read_table(out / "deduped").to_pylist()
    assert sorted(d["id"] for d in deduped) == sorted(c["id"] for c in clusters if c["status"] == "kept")
    assert {group[d["id"]] for d in deduped} == set(group.values()) - {group[i] for i in empty}
    sample_by_id = {r["id"]: r for r in rows}
    assert all(d == sample_by_id[d["id"]] for d in deduped)


def write_earlier_reports(output_root: Path) -> None:
    """Three days before 2024-03-09 with duplicate rates of 45%, 50% and 48%, so the check
    judges a day's rate against their median."""
    for earlier, (n, dup) in {"2024-03-06": (200, 90), "2024-03-07": (100, 50), "2024-03-08": (50, 24)}.items():
        (output_root / earlier).mkdir(parents=True)
        (output_root / earlier / "report.json").write_text(json.dumps(earlier_report(n, dup)))


def test_a_day_of_unparseable_rows_fails_the_run_with_a_clear_message(airflow):
    day = "2024-03-02"
    partition = airflow.input_root / day
    partition.mkdir(parents=True)
    (partition / "part-00000.jsonl").write_text(
        '{"id": null, "text": "a page without an id"}\n'
        '{"id": 1, "text": "the one page of the day that can be read"}\n'
        "<html>a truncated line that is not JSON\n",
        encoding="utf-8",
    )
    # Its own index, apart from the module's.
    own_index = {"AIRFLOW_VAR_SIMHASH_INDEX_PATH": str(airflow.input_root.parent / "index-unparseable")}
    done = airflow.run("dags", "test", DAG_ID, day, timeout=900, env=own_index)
    log = done.stdout + done.stderr
    assert done.returncode != 0, log[-5000:]
    state, tasks = airflow.task_states(day)
    # The job did its part (every row accounted for); the check failed the run.
    assert state == "failed" and tasks["dedupe"] == "success" and tasks["check_report"] == "failed", log[-5000:]
    assert "FAIL rejected: 2 of 3 input rows rejected (66.7%: null_id 1, unparseable 1); at most 1.0% allowed" in log
    assert f"check(s) failed for {day}" in log
    report = json.loads((airflow.output_root / day / "report.json").read_text())
    assert report["counts"]["input_rows"] == 3 and report["counts"]["documents"] == 1


def near_copy(text: str) -> str:
    """The page with one sentence's words changed, as a re-crawl with a new date line shows it."""
    return text.replace("on Tuesday night", "on Wednesday evening", 1)


def index_entries(index: Path) -> list[tuple]:
    """(id, fingerprint, cluster_id, run_id, status) of every entry of the index's newest
    version, read with pyarrow from the files its manifest lists."""
    manifest = json.loads(sorted((index / "manifests").glob("*.json"))[-1].read_text())
    rows = []
    for segment in manifest["segments"]:
        for relative in segment["files"]:
            if relative.startswith("entries/"):
                table = pq.read_table(index / segment["folder"] / relative)
                rows += [(r["id"], r["fingerprint"], r["cluster_id"], r["run_id"], r["status"]) for r in table.to_pylist()]
    return sorted(rows, key=repr)


def test_day_two_is_deduplicated_against_day_one_through_the_index_and_a_retry_replaces_it(airflow, tmp_path):
    """Two consecutive days with `airflow dags test`. Day 1 is the sample as one day's
    partition: its output and its check against three earlier days' reports are whole
    (`check_the_sample_day`). A near copy of a day-1 page crawled on
    day 2 is that page's duplicate (its cluster_id names the day-1 page), a page new on day 2
    is kept; running day 2 again gives the same output and index (the day's run is replaced,
    not added twice). Day 2 is a Sunday: the index is compacted after it, day 2 kept rerunnable."""
    day1, day2 = "2024-03-09", "2024-03-10"  # Saturday, Sunday (the default compaction day)
    roots = {name: tmp_path / name for name in ("input", "output", "index")}
    env = {
        "AIRFLOW_VAR_SIMHASH_INPUT_ROOT": str(roots["input"]),
        "AIRFLOW_VAR_SIMHASH_OUTPUT_ROOT": str(roots["output"]),
        "AIRFLOW_VAR_SIMHASH_INDEX_PATH": str(roots["index"]),
    }
    rows = sample_rows()
    page = next(r for r in rows if r["id"] == 1 and r["kind"] == "original")
    copy = {**page, "id": 1001, "kind": "near_copy", "url": page["url"] + "?recrawl=1", "text": near_copy(page["text"])}
    assert copy["text"] != page["text"]
    new_page = {
        "id": 1002, "url": "https://new.example.com/a", "lang": "en", "group": "new", "kind": "original",
        "text": " ".join(f"word{i} fresh content about topic {i * 7 % 13} and item {i}" for i in range(60)),
    }
    for day, day_rows in ((day1, rows), (day2, [copy, new_page])):
        (roots["input"] / day).mkdir(parents=True)
        (roots["input"] / day / "part-00000.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in day_rows), encoding="utf-8"
        )

    write_earlier_reports(roots["output"])

    def run_day(day: str) -> tuple[list[dict], dict[str, str], str]:
        done = airflow.run("dags", "test", DAG_ID, day, timeout=900, env=env)
        log = done.stdout + done.stderr
        assert done.returncode == 0, log[-5000:]
        state, tasks = airflow.task_states(day)
        assert state == "success", (tasks, log[-5000:])
        clusters = pq.read_table(roots["output"] / day / "clusters").to_pylist()
        return sorted(clusters, key=lambda c: c["id"]), tasks, log

    first, tasks1, log1 = run_day(day1)
    check_the_sample_day(roots["output"] / day1, roots["input"] / day1, log1)
    # The operator's spark-submit is submit.sh: in local mode the driver gets a share of the
    # machine's memory (Spark alone gives it 1 GB, for every task of the run), said in one line.
    assert f"submit.sh: local mode: driver memory {local_driver_memory(physical_memory_bytes())} " in log1
    status1 = {c["id"]: c for c in first}
    assert status1[1]["status"] == "kept" and status1[1]["cluster_id"] == 1

    second, tasks2, _ = run_day(day2)
    by_id = {c["id"]: c for c in second}
    assert set(by_id) == {1001, 1002}
    assert by_id[1001]["status"] == "near_duplicate" and by_id[1001]["cluster_id"] == 1, by_id[1001]
    assert by_id[1002]["status"] == "kept" and by_id[1002]["cluster_id"] == 1002, by_id[1002]
    report = json.loads((roots["output"] / day2 / "report.json").read_text())
    assert report["index"]["run_id"] == day2 and report["index"]["runs_before"] == 1
    entries = index_entries(roots["index"])
    assert {e[3] for e in entries} == {day1, day2}
    # Saturday: compact_due says no, compact_index is skipped; Sunday: compacted after the run.
    assert tasks1 == {"dedupe": "success", "check_report": "success", "compact_due": "success", "compact_index": "skipped"}, tasks1
    assert set(tasks2.values()) == {"success"} and len(tasks2) == 4, tasks2

    # Day 2 again (a retry, or the task cleared): the same output, the run replaced.
    again, _, _ = run_day(day2)
    assert again == second
    assert index_entries(roots["index"]) == entries, "the retried day was added twice or lost entries"
    manifest = json.loads(sorted((roots["index"] / "manifests").glob("*.json"))[-1].read_text())
    assert [r["run_id"] for r in manifest["runs"]] == [day1, day2]
    assert not list((roots["index"] / "leases").glob("*.json")), "a lease was left behind"
