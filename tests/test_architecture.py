"""The layer rules of docs/architecture.md, checked by import-linter (the contracts are in
pyproject.toml's [tool.importlinter]): the tree keeps them, and each contract fails when a
forbidden import is added to a copy of the tree. No Spark: a few seconds.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import grimp
import pytest

REPO = Path(__file__).resolve().parents[1]
# The console script installed beside this interpreter by the test extra (import-linter==2.17).
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def lint_imports(root: Path, *contract_ids: str) -> subprocess.CompletedProcess[str]:
    """Run lint-imports from `root` (it reads root's pyproject.toml and analyses root's
    simhash_udf/ and jobs/, as it puts the current directory first on sys.path)."""
    selected = [arg for contract_id in contract_ids for arg in ("--contract", contract_id)]
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo", *selected],
        cwd=root,
        check=False,  # the return code is what the tests assert
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_tree_keeps_every_contract() -> None:
    result = lint_imports(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "BROKEN" not in result.stdout


# --- each contract fails when broken ----------------------------------------------------------
#
# Modules are picked from the package's real import graph (grimp, the library import-linter is
# built on), not named here, so the checks follow the code when modules are renamed or split.


def _graph() -> grimp.ImportGraph:
    return grimp.build_graph("simhash_udf", cache_dir=None)


def _modules_of(graph: grimp.ImportGraph, package: str) -> list[str]:
    """The plain modules (not subpackages) directly inside `package`, sorted."""
    return sorted(m for m in graph.find_children(package) if not graph.find_children(m))


def _file_of(root: Path, module: str) -> Path:
    path = root.joinpath(*module.split(".")).with_suffix(".py")
    assert path.is_file(), path
    return path


def _append_import(path: Path, statement: str) -> int:
    """Append `statement` as the last line of `path`; return its line number."""
    text = path.read_text(encoding="utf-8")
    if text and not text.endswith("\n"):
        text += "\n"
    text += statement + "\n"
    path.write_text(text, encoding="utf-8")
    return text.count("\n")


def _sibling_import(graph: grimp.ImportGraph) -> tuple[str, str]:
    """One import between two modules of the same subpackage: (importer, imported)."""
    for package in sorted(graph.find_children("simhash_udf")):
        modules = set(_modules_of(graph, package))
        for importer in sorted(modules):
            imported = sorted(graph.find_modules_directly_imported_by(importer) & modules)
            if imported:
                return importer, imported[0]
    raise AssertionError("no module of simhash_udf imports a sibling module")


# A breakage: (copy of the tree, its import graph) -> lines lint-imports must print.
Breakage = Callable[[Path, grimp.ImportGraph], list[str]]


def _upward(package: str, target: str) -> Breakage:
    """A module of `package` imports `target` (a package it may not import)."""

    def breakage(root: Path, graph: grimp.ImportGraph) -> list[str]:
        module = _modules_of(graph, package)[0]
        line = _append_import(_file_of(root, module), f"import {target}")
        return [f"{package} is not allowed to import {target}:", f"{module} -> {target} (l.{line})"]

    return breakage


def _core_imports_pyspark(root: Path, graph: grimp.ImportGraph) -> list[str]:
    module = _modules_of(graph, "simhash_udf.core")[0]
    line = _append_import(_file_of(root, module), "import pyspark.sql")
    return ["simhash_udf.core is not allowed to import pyspark:", f"{module} -> pyspark (l.{line})"]


def _unlisted_subpackage(root: Path, graph: grimp.ImportGraph) -> list[str]:
    (root / "simhash_udf" / "misc").mkdir()
    (root / "simhash_udf" / "misc" / "__init__.py").write_text('"""Not placed in a layer."""\n')
    return ["The following modules are not listed as layers:", "- simhash_udf.misc"]


def _cycle_in_a_layer(root: Path, graph: grimp.ImportGraph) -> list[str]:
    importer, imported = _sibling_import(graph)
    _append_import(_file_of(root, imported), f"import {importer}")
    package = importer.rpartition(".")[0]
    return [f"No cycles are allowed in {package}."]


def _imported_by_script(path: Path) -> set[str]:
    """The modules a script names in its import statements (`from a import b` names a and a.b)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _job_imports_a_module_of(job: str, package: str, allowed: str = "") -> Breakage:
    """jobs/<job>.py imports a module of `package` (other than `allowed`) it did not import:
    lint-imports names each importer -> imported pair once, at its first line."""

    def breakage(root: Path, graph: grimp.ImportGraph) -> list[str]:
        script = root / "jobs" / f"{job}.py"
        already = _imported_by_script(script) | {allowed}
        target = next(m for m in _modules_of(graph, package) if m not in already)
        line = _append_import(script, f"import {target}")
        return [f"jobs.{job} -> {target} (l.{line})"]

    return breakage


@pytest.mark.parametrize(
    ("contract_id", "contract_name", "breakage"),
    [
        ("layers", "Layers:", _upward("simhash_udf.stages", "simhash_udf.run")),
        ("layers", "Layers:", _upward("simhash_udf.core", "simhash_udf.files")),
        ("layers", "Layers:", _upward("simhash_udf.files", "simhash_udf.stages")),
        # report and index are one layer of two independent packages.
        ("layers", "Layers:", _upward("simhash_udf.report", "simhash_udf.index")),
        ("layers", "Layers:", _upward("simhash_udf.index", "simhash_udf.report")),
        ("layers", "Layers:", _unlisted_subpackage),
        ("core-no-spark", "simhash_udf.core never imports pyspark", _core_imports_pyspark),
        ("no-cycles", "No import cycles", _cycle_in_a_layer),
        (
            "jobs-use-run",
            "jobs/ import only",
            _job_imports_a_module_of("dedupe", "simhash_udf.core"),
        ),
        # The one allowed edge, check_report -> report.checks, does not open the rest of report.
        (
            "jobs-use-run",
            "jobs/ import only",
            _job_imports_a_module_of(
                "check_report", "simhash_udf.report", allowed="simhash_udf.report.checks"
            ),
        ),
    ],
    ids=[
        "stages-imports-run",
        "core-imports-files",
        "files-imports-stages",
        "report-imports-index",
        "index-imports-report",
        "subpackage-outside-the-layers",
        "core-imports-pyspark",
        "cycle-inside-a-package",
        "job-imports-core",
        "check_report-imports-more-of-report",
    ],
)
def test_a_forbidden_import_breaks_its_contract(
    tmp_path: Path, contract_id: str, contract_name: str, breakage: Breakage
) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO / "simhash_udf", tmp_path / "simhash_udf", ignore=ignore)
    shutil.copytree(REPO / "jobs", tmp_path / "jobs", ignore=ignore)
    shutil.copy2(REPO / "pyproject.toml", tmp_path / "pyproject.toml")

    expected_lines = breakage(tmp_path, _graph())
    result = lint_imports(tmp_path, contract_id)

    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    # The summary lines: "<contract name> BROKEN", or "... BROKEN (1 ignored import)".
    broken = [line for line in result.stdout.splitlines() if re.search(r" BROKEN( \(|$)", line)]
    assert len(broken) == 1 and broken[0].startswith(contract_name), output
    for expected in expected_lines:
        assert expected in output, f"{expected!r} not in:\n{output}"
