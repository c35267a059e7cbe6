"""The benchmark scripts run against the library as it is: every name a script imports from
biaslab exists. CI runs no benchmark (they time full-size work), so without this check a refactor
that moves a function leaves a script that fails only when someone next measures with it."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("*.py"))


def biaslab_imports(path: Path) -> list[tuple[str, str | None]]:
    """``(module, name)`` for every ``from biaslab... import name`` and ``(module, None)`` for every
    ``import biaslab...`` in the script, at any depth (imports inside functions too)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("biaslab"):
            found += [(node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names if alias.name.startswith("biaslab")]
    return found


def test_there_are_benchmarks_to_check():
    assert len(BENCHMARKS) >= 5
    assert all(biaslab_imports(path) for path in BENCHMARKS if path.name != "__init__.py")


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda path: path.name)
def test_every_name_a_benchmark_imports_exists(path):
    missing = []
    for module_name, name in biaslab_imports(path):
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:
            missing.append(f"{module_name}: {error}")
            continue
        if name is None or hasattr(module, name):
            continue
        try:  # a submodule: from biaslab.comparison import study
            importlib.import_module(f"{module_name}.{name}")
        except ImportError:
            missing.append(f"{module_name}.{name}")
    assert not missing, f"{path.name} imports what the library no longer has: {missing}"
