"""No test module imports another test module or a conftest (issue 12).

Shared code lives in tests/generators.py (data generators, brute-force oracles) and
tests/helpers.py (paths, job drivers, readers of outputs); fixtures in the conftest.py files,
which pytest loads itself. With a conftest per folder, `from conftest import ...` would resolve
to whichever was loaded last, and importing a test module runs (and collects) it twice.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in a file, function-level imports included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


def test_no_test_module_imports_another_or_a_conftest():
    offending = [
        f"{path.relative_to(TESTS)}:{line}: {module}"
        for path in sorted(TESTS.rglob("*.py"))
        for line, module in imported_modules(path)
        if module.split(".")[0] == "conftest" or module.split(".")[0].startswith("test_")
    ]
    assert offending == []


def test_the_check_sees_such_imports(tmp_path):
    """The rule above is not vacuous: it finds both kinds, also inside a function."""
    sample = tmp_path / "test_sample.py"
    sample.write_text("import os\nfrom conftest import ROOT\n\ndef f():\n    from test_index import run_job\n")
    assert imported_modules(sample) == [(1, "os"), (2, "conftest"), (5, "test_index")]
