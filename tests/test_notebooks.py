"""The notebooks in notebooks/ run top to bottom in a fresh kernel, and are kept without outputs.

The notebook's kernel is a process of its own with its own local Spark session (the test
process's `spark` fixture is not used), started from the notebooks/ folder as a person would.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import ipykernel.kernelspec
import nbclient
import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager


ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
QUICKSTART = NOTEBOOKS / "quickstart.ipynb"
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


def test_quickstart_is_kept_without_outputs():
    nb = nbformat.read(QUICKSTART, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == KERNEL
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code
    for cell in code:
        assert cell.outputs == [], f"cell {cell.id} has outputs: clear them before committing"
        assert cell.execution_count is None, f"cell {cell.id} has an execution count"


@pytest.mark.spark
@pytest.mark.slow
def test_quickstart_runs(this_python_kernel):
    nb = nbformat.read(QUICKSTART, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        kernel_name=this_python_kernel,
        timeout=300,  # per cell; the whole run takes well under a minute
        resources={"metadata": {"path": str(NOTEBOOKS)}},  # the kernel's working directory
    )
    client.execute()  # raises CellExecutionError, with the traceback, if any cell fails

    cells = {cell.id: cell for cell in nb.cells}
    for cell in cells.values():
        if cell.cell_type == "code":
            assert not [o for o in cell.outputs if o["output_type"] == "error"], cell.id

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

    # One row per distance, 1..k (k = 3), with a bar as long as its count. The counts depend
    # on the fingerprint settings, so only their form is checked here.
    distances = _output_text(cells["distances"])
    rows = re.findall(r"^\d+\s+(\d+)\s+(\d+)\s+(█+)$", distances, re.MULTILINE)
    assert rows, distances
    for distance, count, bar in rows:
        assert 1 <= int(distance) <= 3 and len(bar) == int(count) > 0, (distance, count, bar)

    diff = _output_text(cells["diff"])
    assert "bits apart" in diff
    assert "<mark" in diff  # the differing words are highlighted
