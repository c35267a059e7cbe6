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


def test_the_compare_benchmark_judges_its_target_on_the_means_over_splits():
    """``benchmarks/compare.py --seeds N``: the target is judged on the mean test scores, not on the
    mean of per-split verdicts, and the gap's standard error is std / sqrt(N)."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("compare_benchmark", BENCHMARKS[0].parent / "compare.py")
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench  # its dataclasses look their module up
    try:
        spec.loader.exec_module(bench)
    finally:
        del sys.modules[spec.name]
    rows = [
        {"metric": "accuracy", "kind": "table", "pick": pick, "ours": ours, "theirs": theirs,
         "gap": 100 * (ours - theirs), "configs": 10, "seconds": 1.0, "search_seconds": 1.0}
        for pick, ours, theirs in (("MLP", 0.95, 0.97), ("linear model", 0.99, 0.98))
    ]  # fmt: skip
    summary = bench.over_seeds(rows)
    assert summary["ours"] == pytest.approx(0.97) and summary["theirs"] == pytest.approx(0.975)
    assert summary["gap"] == pytest.approx(-0.5) and summary["holds"]  # the first split alone misses
    assert summary["gap_error"] == pytest.approx(abs(-2.0 - 1.0) / 2)  # std(ddof=1) / sqrt(2)
    assert summary["pick"] == "MLP, linear model" and summary["seeds"] == 2
    assert bench.judge("accuracy", False, 0.95, 0.97) == (pytest.approx(-2.0), False)
    assert bench.judge("accuracy", True, 0.98, 0.98)[1] is False  # images must be ahead
    assert bench.judge("mae", False, 10.4, 10.0) == (pytest.approx(4.0), True)


def test_the_labs_benchmark_writes_the_readme_table_from_its_own_figures():
    """``benchmarks/labs.py --markdown``: one row per lab with each side's median and min-max as
    measured, the ratio old / new, a lab new on this side shown as new, and the totals."""
    import argparse
    import importlib.util

    spec = importlib.util.spec_from_file_location("labs_benchmark", BENCHMARKS[0].parent / "labs.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    args = argparse.Namespace(profile="quick", runs=3, threads="2", against="HEAD")
    results = {
        "xor": {"new": bench.spread([2.0, 3.0, 2.5]), "old": bench.spread([5.0, 4.0, 6.0])},
        "gaussians": {"new": bench.spread([1.0, 1.2, 1.1])},
    }
    text = bench.markdown(args, results, load=0.25)
    assert "3 run(s) per side in alternation" in text and "load average 0.25" in text
    assert "| `xor` | 5.0 (4.0-6.0) | 2.5 (2.0-3.0) | 2.00 |" in text
    assert "| `gaussians` | (new) | 1.1 (1.0-1.2) |  |" in text
    assert "old: 5.0 s; new: 3.6 s" in text
