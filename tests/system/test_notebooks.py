"""The notebooks in notebooks/ run top to bottom in a fresh kernel, and are kept without outputs.

The notebook's kernel is a process of its own with its own local Spark session (the test
process's `spark` fixture is not used), started from the notebooks/ folder as a person would.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from collections import Counter
from pathlib import Path

import ipykernel.kernelspec
import nbclient
import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
QUICKSTART = NOTEBOOKS / "quickstart.ipynb"
EXPLORE = NOTEBOOKS / "explore.ipynb"
SAMPLE = ROOT / "examples" / "sample.jsonl"
KERNEL = "python3"


@pytest.fixture
def this_python_kernel(tmp_path, monkeypatch) -> str:
    """A `python3` kernel spec that runs this interpreter (the venv's, with pyspark and
    simhash_udf installed).

    ipykernel writes a spec whose argv starts with sys.executable into a temporary prefix, and
    JUPYTER_PATH puts that prefix ahead of every other Jupyter data folder, so a `python3`
    spec in the user's or the system's folders (which may name another Python) is never used.
    IPYTHONDIR keeps the user's IPython profile and startup files out of the run.
    """
    ipykernel.kernelspec.install(prefix=str(tmp_path / "jupyter-prefix"), kernel_name=KERNEL)
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter-prefix" / "share" / "jupyter"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    # The kernel inherits this environment: read the default, ../examples/sample.jsonl, relative
    # to the notebook's folder, as a person opening the notebook would.
    monkeypatch.delenv("SAMPLE_PATH", raising=False)
    assert KernelSpecManager().get_kernel_spec(KERNEL).argv[0] == sys.executable
    return KERNEL


def _output_text(cell) -> str:
    """Everything a code cell showed: streams, plain text and HTML of its results."""
    parts = []
    for output in cell.get("outputs", []):
        if output["output_type"] == "stream":
            parts.append(output["text"])
        elif output["output_type"] in ("execute_result", "display_data"):
            for mime in ("text/plain", "text/html"):
                if mime in output["data"]:
                    parts.append(output["data"][mime])
    return "\n".join(parts)


@pytest.mark.parametrize("path", [QUICKSTART, EXPLORE], ids=lambda p: p.name)
def test_notebook_is_kept_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == KERNEL
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code
    for cell in code:
        assert cell.outputs == [], f"cell {cell.id} has outputs: clear them before committing"
        assert cell.execution_count is None, f"cell {cell.id} has an execution count"


@pytest.mark.parametrize("path", [QUICKSTART, EXPLORE], ids=lambda p: p.name)
def test_notebook_defines_nothing_reusable(path):
    """Notebooks call the library; a function or class written in one belongs in simhash_udf."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            tree = ast.parse(cell.source)
            defined = [n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
            assert not defined, f"cell {cell.id} defines {defined}: move it to the library"


def _execute(path: Path, kernel: str) -> dict:
    """Run a notebook top to bottom in a fresh kernel; its cells by id, with their outputs."""
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        kernel_name=kernel,
        timeout=300,  # per cell; a whole notebook takes about a minute on two cores
        resources={"metadata": {"path": str(NOTEBOOKS)}},  # the kernel's working directory
    )
    client.execute()  # raises CellExecutionError, with the traceback, if any cell fails
    cells = {cell.id: cell for cell in nb.cells}
    for cell in cells.values():
        if cell.cell_type == "code":
            assert not [o for o in cell.outputs if o["output_type"] == "error"], cell.id
    return cells


@pytest.mark.spark
@pytest.mark.slow
def test_quickstart_runs(this_python_kernel):
    cells = _execute(QUICKSTART, this_python_kernel)

    # The sample (examples/README.md) has 49 pages, 2 of them empty, and exact copies in 9 of
    # its groups; how many near copies join depends on the fingerprint settings.
    status = _output_text(cells["status-counts"])
    counts = {name: int(n) for name, n in re.findall(r"\b(kept|exact_duplicate|near_duplicate|skipped)\s+(\d+)\b", status)}
    assert set(counts) == {"kept", "exact_duplicate", "near_duplicate", "skipped"}, status
    assert sum(counts.values()) == 49 and counts["skipped"] == 2, counts
    assert counts["exact_duplicate"] >= 9, counts

    clusters = _output_text(cells["clusters"])
    found = re.search(r"(\d+) clusters with more than one member, (\d+) documents in them", clusters)
    assert found and int(found.group(1)) >= 9 and int(found.group(2)) > int(found.group(1)), clusters
    assert "Riverside Daily" in clusters  # the start of a member's text
    assert "near_duplicate" in clusters and "exact_duplicate" in clusters
    assert "skipped" not in clusters

    # One row per distance: 1..k (k = 3) from the band join, beyond it up to the sketch route's
    # --sketch-max-distance (12) only with sketches that reach its Jaccard threshold (0.75); a bar
    # as long as its count. The counts depend on the settings, so only their form is checked here.
    distances = _output_text(cells["distances"])
    rows = re.findall(r"^\d+\s+(\d+)\s+(\d+)\s+([\d.]+)\s+(█+)$", distances, re.MULTILINE)
    assert rows, distances
    for distance, count, lowest_jaccard, bar in rows:
        assert 1 <= int(distance) <= 12 and len(bar) == int(count) > 0, (distance, count, bar)
        assert int(distance) <= 3 or float(lowest_jaccard) >= 0.75, (distance, lowest_jaccard)

    diff = _output_text(cells["diff"])
    assert "bits apart" in diff
    assert "<mark" in diff  # the differing words are highlighted


def _sample_expected():
    """The sample as the job sees it, computed without Spark from the pure functions:
    (id, group, fingerprint, status) rows for `test_explore.brute_force_merges`, where group
    is the normalised text (what documents without a fingerprint are clustered by)."""
    from simhash_udf.core.config import FingerprintConfig
    from simhash_udf.core.fingerprint import fingerprint
    from simhash_udf.core.normalise import normalise

    rows = []
    for line in SAMPLE.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        doc = json.loads(line)
        text = normalise(doc["text"]) if doc["text"] is not None else ""
        if not text:
            rows.append((doc["id"], None, None, "skipped"))
        else:
            rows.append((doc["id"], text, fingerprint(text, FingerprintConfig()), "kept"))
    return rows


def _table(text: str, columns: int) -> list[tuple[int, ...]]:
    """Rows of integers (and a trailing bar or flag) printed by `DataFrame.to_string`."""
    number = r"\s+(-?\d+)"
    pattern = re.compile(r"^\s*(-?\d+)" + number * (columns - 1) + r"(?:\s+\S+)?\s*$", re.MULTILINE)
    return [tuple(int(v) for v in m.groups()) for m in pattern.finditer(text)]


@pytest.mark.spark
@pytest.mark.slow
def test_explore_runs(this_python_kernel):
    """The tables the notebook prints equal a brute force over the sample's fingerprints,
    computed here without Spark from the pure text and fingerprint functions."""
    from generators import brute_force_cluster_sizes, brute_force_merges, popcount64

    from simhash_udf.core.bands import BandPlan

    cells = _execute(EXPLORE, this_python_kernel)
    rows = _sample_expected()
    fps = sorted({fp for _, _, fp, _ in rows if fp is not None})
    k = 3  # the notebook's DedupeConfig() default

    # The k table: pairs, clusters, duplicates, merged documents, largest cluster, k = 0..10.
    k_table = _output_text(cells["k-table"])
    got = _table(k_table, 6)
    expected = [brute_force_merges(rows, kk) for kk in range(11)]
    assert got == [tuple(e.values()) for e in expected], k_table
    assert expected[10]["pairs"] > expected[k]["pairs"] > 0  # the sample has copies beyond k
    # ...and its row for the run's k is what the run itself found (the status table).
    status = _output_text(cells["status-counts"])
    counts = {n: int(c) for n, c in re.findall(r"\b(kept|exact_duplicate|near_duplicate|skipped)\s+(\d+)\b", status)}
    assert expected[k]["clusters"] == counts["kept"]
    assert expected[k]["duplicates"] == counts["exact_duplicate"] + counts["near_duplicate"]

    # Candidate pairs: every pair sharing a key of the printed band plan, with its distance.
    session = _output_text(cells["session"])
    blocks = int(re.search(r"band plan (\d+) blocks", session).group(1))
    plan = BandPlan(k, blocks)
    masks = [plan.table_mask(t) for t in range(plan.n_tables)]
    candidates = Counter(
        popcount64(a ^ b)
        for i, a in enumerate(fps)
        for b in fps[i + 1 :]
        if any((a ^ b) & m == 0 for m in masks)
    )
    printed = _output_text(cells["candidates"])
    got_candidates = re.findall(r"^\s*(\d+)\s+(\d+)\s+(True|False)\s+(█+)$", printed, re.MULTILINE)
    assert [(int(d), int(n), flag == "True") for d, n, flag, _ in got_candidates] == [
        (d, candidates[d], d <= k) for d in sorted(candidates)
    ], printed
    assert any(d > k for d in candidates), "the sample has candidate pairs beyond k"

    # Cluster sizes at k: size, clusters, documents.
    sizes = _table(_output_text(cells["cluster-sizes"]), 3)
    expected_sizes = Counter(brute_force_cluster_sizes(rows, k))
    assert sizes == [(s, n, s * n) for s, n in sorted(expected_sizes.items())]

    # Side-by-side pairs around k, with their differences highlighted.
    pairs = _output_text(cells["pairs"])
    captions = re.findall(r"(\d+) bits apart \((within|beyond) k = 3\)", pairs)
    within_10 = Counter(popcount64(a ^ b) for i, a in enumerate(fps) for b in fps[i + 1 :] if popcount64(a ^ b) <= 10)
    assert [int(d) for d, _ in captions] == [d for d in range(k - 1, k + 4) if within_10[d]]
    assert all((w == "within") == (int(d) <= k) for d, w in captions)
    assert pairs.count("<mark") >= len(captions) > 0
