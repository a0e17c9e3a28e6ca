"""bench/tables.py, bench/runners.py and bench/machine.py: the helpers every benchmark shares;
and how bench/driver_gc.py picks each collector.

Oracles: a markdown table is parsed back into its cells; sizes go through `fmt_n` and back;
the interleaving is recorded by the methods themselves; cached inputs count their builds;
written documents are read back with pyarrow; versions and memory come from numpy itself and
from /proc/meminfo. No Spark.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from bench import machine, runners, tables


def _cells(line: str) -> list[str]:
    assert line.startswith("|") and line.endswith("|"), line
    return [cell.strip() for cell in line[1:-1].split("|")]


def test_table_lines_parse_back_into_the_cells_given():
    headers = ["method", "MB/s", "runs (s)", "ratio"]
    rows = [["ours", "1.50", "1.00, 2.00", ""], ["recipe", 0.5, "3.00", "3.00x"]]
    lines = tables.table_lines(headers, rows, right=".r.r")
    assert _cells(lines[0]) == headers
    assert _cells(lines[1]) == ["---", "---:", "---", "---:"]
    assert [_cells(line) for line in lines[2:]] == [[str(c) for c in row] for row in rows]
    assert tables.md_table(headers, rows, ".r.r") == "\n".join(lines)


@pytest.mark.parametrize("n", [0, 7, 999, 1_000, 250_000, 1_000_000, 1_500_000, 64_000_000, 2_000_000_000])
def test_fmt_n_and_parse_size_round_trip(n):
    assert tables.parse_size(tables.fmt_n(n)) == n


def test_pct_and_num_say_dash_when_undefined():
    assert tables.pct(float("nan")) == tables.num(None) == "-"
    assert float(tables.pct(0.125).rstrip("%")) == pytest.approx(12.5)
    assert float(tables.num(2 / 3)) == pytest.approx(2 / 3, abs=5e-4)


def test_interleaved_runs_every_method_once_per_repeat_in_turn():
    calls: list[str] = []
    methods = {name: (lambda name=name: calls.append(name)) for name in ("a", "b", "c")}
    runs = runners.interleaved(methods, 3)
    assert calls == ["a", "b", "c"] * 3
    assert all(len(r.wall_s) == len(r.cpu_s) == 3 and not r.failures for r in runs.values())


def test_interleaved_records_failures_with_catch_and_raises_without():
    def broken() -> None:
        raise ValueError("first line\nsecond line")

    logged: list[tuple[str, int, bool]] = []
    runs = runners.interleaved({"ok": lambda: 42, "broken": broken}, 2, catch=True,
                               log=lambda name, repeat, r, failed: logged.append((name, repeat, failed)))
    assert runs["ok"].outcome == 42 and len(runs["ok"].wall_s) == 2
    assert runs["broken"].failures == ["first line", "first line"] and runs["broken"].wall_s == []
    assert logged == [("ok", 1, False), ("broken", 1, True), ("ok", 2, False), ("broken", 2, True)]
    with pytest.raises(ValueError):
        runners.interleaved({"broken": broken}, 1)


def test_timed_runs_measure_at_least_the_time_slept():
    seconds = runners.timed_runs(lambda: time.sleep(0.02), 2)
    assert len(seconds) == 2 and all(s >= 0.02 for s in seconds)


def test_cached_input_builds_once_and_keeps_its_metadata(tmp_path: Path):
    builds: list[Path] = []

    def build(folder: Path) -> dict:
        builds.append(folder)
        (folder / "data.txt").write_text("x")
        return {"n": 3}

    folder = tmp_path / "input-v1"
    assert runners.cached_input(folder, build) == folder
    assert runners.cached_input(folder, build) == folder
    assert builds == [folder]
    assert runners.read_meta(folder) == {"n": 3}


def test_cached_input_redoes_an_interrupted_build(tmp_path: Path):
    folder = tmp_path / "input"
    folder.mkdir()  # a build that died before meta.json was written
    runners.cached_input(folder, lambda f: {"built": True})
    assert runners.read_meta(folder) == {"built": True}


def test_write_documents_keeps_each_id_with_its_fingerprint(tmp_path: Path):
    rng = np.random.default_rng(5)
    fingerprints = rng.integers(-(2**63), 2**63 - 1, size=1000, dtype=np.int64)
    path = tmp_path / "documents.parquet"
    runners.write_documents(path, fingerprints, np.random.default_rng(9))
    table = pq.read_table(path).to_pydict()
    assert sorted(zip(table["id"], table["fingerprint"])) == list(enumerate(fingerprints.tolist()))
    assert table["id"] != sorted(table["id"])  # the rows are shuffled


def test_module_command_runs_a_bench_module_with_this_python():
    import sys

    assert runners.module_command("skew", "--quick") == [sys.executable, "-m", "bench.skew", "--quick"]


def test_package_versions_name_installed_and_missing_packages():
    missing = "surely-not-installed-package-h6"
    assert machine.package_versions(["numpy", missing]) == f"numpy {np.__version__}, {missing} (not installed)"
    assert machine.package_versions(["numpy", missing], missing=None) == f"numpy {np.__version__}"


def test_memory_bytes_is_the_kernels_mem_total():
    meminfo = Path("/proc/meminfo")
    if not meminfo.exists():
        pytest.skip("no /proc/meminfo")
    total_kb = next(int(line.split()[1]) for line in meminfo.read_text().splitlines() if line.startswith("MemTotal:"))
    assert machine.memory_bytes() == total_kb * 1024


def test_languages_arg_keeps_the_order_drops_repeats_and_refuses_others():
    import argparse

    assert runners.languages_arg("zh") == ("zh",)
    assert runners.languages_arg("en, zh,en") == ("en", "zh")
    for bad in ("", "fr", "zh,de"):
        with pytest.raises(argparse.ArgumentTypeError):
            runners.languages_arg(bad)


# A parent that holds 300 MB, forks a child that shares them all (as a process the JVM starts
# shares its pages until it execs) under another name, then starts a Python child of its own
# holding 100 MB. Printed when both children are up; everything exits on stdin's end.
_TREE = r"""
import ctypes, os, subprocess, sys
held = bytearray(300 * 2**20)
for i in range(0, len(held), 4096):
    held[i] = 1
pid = os.fork()
if pid == 0:
    ctypes.CDLL(None).prctl(15, b"helper", 0, 0, 0)  # PR_SET_NAME
    sys.stdin.read()
    os._exit(0)
child = subprocess.Popen([sys.executable, "-c",
    "import sys; b = bytearray(100 * 2**20); [b.__setitem__(i, 1) for i in range(0, len(b), 4096)]; print('up', flush=True); sys.stdin.read()"],
    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
child.stdout.readline()
print("ready", flush=True)
sys.stdin.read()
child.stdin.close(); child.wait(); os.waitpid(pid, 0)
"""


def test_tree_memory_counts_python_children_but_not_a_child_that_shares_its_parents_pages():
    import subprocess
    import sys

    process = subprocess.Popen([sys.executable, "-c", _TREE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "ready"
        with runners.TreeMemory(process.pid, interval=0.05) as memory:
            time.sleep(0.5)
    finally:
        process.stdin.close()
        process.wait(timeout=30)
    mb = 2**20
    assert memory.peak_python >= 100 * mb  # the Python child
    # The parent (300 MB) and the Python child (100 MB), not the forked helper's 300 MB again.
    assert 400 * mb <= memory.peak_total < 550 * mb, memory.peak_total / mb


def test_driver_gc_runs_the_job_s_collector_and_g1_the_way_a_user_chooses_one():
    """bench/driver_gc.py's two variants: nothing added for the job's own collector, and G1 put
    where `run.session.gc_chosen` finds it, so the job then adds no collector of its own (two
    would stop its JVM from starting; the JVM's own choice is tests/run/test_session.py's)."""
    from bench import driver_gc
    from simhash_udf.run.session import DRIVER_GC, driver_java_options

    ours = driver_gc.collector_env(driver_gc.COLLECTORS["parallel"], "2g")
    g1 = driver_gc.collector_env(driver_gc.COLLECTORS["g1"], "2g")
    assert ours["PYSPARK_SUBMIT_ARGS"] == "--driver-memory 2g pyspark-shell"
    assert DRIVER_GC in driver_java_options({}, environ=ours).split()
    assert "-XX:+UseG1GC" in g1["PYSPARK_SUBMIT_ARGS"] and g1["PYSPARK_SUBMIT_ARGS"].endswith("pyspark-shell")
    assert DRIVER_GC not in driver_java_options({}, environ=g1).split()


def _stage(stage_id: int, status: str, records: int = 0) -> dict:
    """A stage as Spark's REST API lists it (the fields join_scale reads)."""
    return {"stageId": stage_id, "status": status, "shuffleWriteRecords": records,
            "shuffleWriteBytes": 10 * records}


def test_join_scale_counts_a_group_settled_when_its_reused_stages_show_as_skipped():
    """A timed run that reuses a cached shuffle has stages that never run: the REST view lists
    them as SKIPPED. The group is settled then (before, join_scale waited 10 s per run for
    them to complete); shuffle is what its completed stages wrote, and a stage still running,
    or not yet listed, keeps the group unsettled."""
    from bench.join_scale import shuffle_written_if_settled

    ids = {4, 5, 6, 7}
    other_group = _stage(1, "COMPLETE", 1_000)
    settled = [other_group, _stage(4, "COMPLETE", 30), _stage(5, "SKIPPED"), _stage(6, "SKIPPED"),
               _stage(7, "COMPLETE", 12)]
    assert shuffle_written_if_settled(ids, settled) == (42, 420)
    assert shuffle_written_if_settled(ids, settled[:-1]) is None  # stage 7 not listed yet
    running = [*settled[:-1], _stage(7, "ACTIVE", 5)]
    assert shuffle_written_if_settled(ids, running) is None


def test_run_all_profiles_trim_the_default_and_let_the_command_line_override_either():
    """run_all's default leaves out the older sections and trims its baselines (its 30-minute
    budget); --full runs everything at its largest; a setting given on the command line wins
    over either profile's, as its docstring says."""
    import argparse

    from bench.run_all import DEFAULT, FULL, SECTIONS, resolve_profile

    def args(**given) -> argparse.Namespace:
        names = ("full", "sections", "join_sizes", "skew_sql_timeout", "skew_runs", "recipe_big_mb", "recipe_repeats",
                 "repeats")
        return argparse.Namespace(**{name: given.get(name) for name in names})

    assert resolve_profile(args()) == DEFAULT
    assert resolve_profile(args(full=True)) == FULL
    assert FULL.sections == SECTIONS and set(DEFAULT.sections) < set(SECTIONS)
    assert {"job-throughput", "job-documents", "job-vs-join", "job-sample", "join", "skew"} <= set(DEFAULT.sections)
    chosen = resolve_profile(args(full=True, sections="join, skew", join_sizes="1M", recipe_repeats=2, repeats=5))
    assert chosen.sections == ("join", "skew") and chosen.join_sizes == "1M"
    assert chosen.recipe_repeats == 2 and chosen.throughput_repeats == 5
    assert chosen.skew_sql_timeout == FULL.skew_sql_timeout and chosen.sample_base
    assert resolve_profile(args(skew_sql_timeout=10.0)).skew_sql_timeout == 10.0
    assert FULL.skew_runs is None
    assert resolve_profile(args(full=True, skew_runs="hot-key:pairs")).skew_runs == "hot-key:pairs"


def test_skew_section_names_the_runs_it_has():
    """The skew section says which runs its table holds (the default run_all leaves one out)
    rather than always claiming all three."""
    from bench.scale_sections import skew_section

    def run(scenario: str, pairs: bool) -> dict:
        return {"scenario": scenario, "pairs": pairs, "status": "ok", "wall_s": 30.0, "peak_rss": 2**30,
                "peak_jvm_rss": 2**29, "input": {}}

    report = {"seconds": 100.0, "n": 1000, "driver_memory": "8g", "timeout_s": 600.0,
              "runs": [run("template", True), run("hot-key", False)]}
    text = "\n".join(skew_section(report, "python -m bench.skew"))
    assert "the template with pairs/, the hot-key with `--no-pairs`, each run killed" in text
    assert "Checks: 2 of 2 runs finished" in text
