"""The package's layers: imports only point down, and no modules import each other in a circle.

Layers, bottom up (docs/architecture.md):

    better, caches, checks, errors, fileio, formatting, hardware, locking, records, results, version
    ->  scratch, nn, data, config  ->  train, evaluate, generative
    ->  comparison  ->  runs, registry, catalog, loggers  ->  report, scale
    ->  runner, context, request  ->  sequence, sweep  ->  experiments, notebooks
    ->  api, cli (and the package root)

A module may import from its own layer or any layer below. Every import statement counts,
also those inside functions (a lazy import is still a dependency).
"""

import ast
from pathlib import Path

import pytest

import biaslab

ROOT = Path(biaslab.__file__).resolve().parent
LAYERS = [
    {
        "better",
        "caches",
        "checks",
        "documents",
        "errors",
        "fileio",
        "formatting",
        "hardware",
        "inputs",
        "locking",
        "records",
        "results",
        "version",
    },
    {"scratch", "nn", "data", "config"},
    {"train", "evaluate", "generative", "physics"},
    {"comparison"},
    {"runs", "registry", "catalog", "loggers", "exact_claims"},
    {"report", "scale"},
    {"runner", "context", "request"},
    {"sequence", "sweep"},
    {"experiments", "notebooks"},
    {"api", "cli", "__init__"},
]
RANK = {part: i for i, layer in enumerate(LAYERS) for part in layer}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def part_of(module: str) -> str:
    """``biaslab.train.trainer`` -> ``train``; the package root ``biaslab`` -> ``__init__``."""
    pieces = module.split(".")
    return pieces[1] if len(pieces) > 1 else "__init__"


def imports_of(path: Path) -> set[str]:
    """The biaslab modules ``path`` imports (``from biaslab.x import y`` counts y if a module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "biaslab"}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against the importing package
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            if base.split(".")[0] != "biaslab":
                continue
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                found.add(candidate if candidate in MODULES else base)
    return {m for m in found if m in MODULES}


FILES = sorted(ROOT.rglob("*.py"))
MODULES = {module_name(p): p for p in FILES}
GRAPH = {name: imports_of(path) for name, path in MODULES.items()}


def test_every_package_part_has_a_layer():
    parts = {part_of(m) for m in MODULES}
    assert parts <= set(RANK), f"add {sorted(parts - set(RANK))} to LAYERS and docs/architecture.md"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down(module):
    upward = [dep for dep in GRAPH[module] if RANK[part_of(dep)] > RANK[part_of(module)]]
    assert not upward, f"{module} imports from a layer above it: {sorted(upward)}"


def test_no_import_cycles():
    """Depth-first search for a back edge; reports the cycle it finds."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node):
        state[node] = 1
        path.append(node)
        for dep in sorted(GRAPH[node]):
            if dep == node:
                continue
            if state.get(dep) == 1:
                cycle = [*path[path.index(dep) :], dep]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if dep not in state:
                visit(dep)
        path.pop()
        state[node] = 2

    for module in sorted(GRAPH):
        if module not in state:
            visit(module)


def test_labs_never_import_labs():
    labs = {m for m in MODULES if part_of(m) == "experiments" and m != "biaslab.experiments"}
    for lab in labs:
        assert not (GRAPH[lab] & labs), f"{lab} imports another lab: {sorted(GRAPH[lab] & labs)}"


def test_checker_sees_a_violation_and_a_cycle(tmp_path, monkeypatch):
    """The checks above can fail: a fake upward import and a fake cycle are caught."""
    assert "biaslab.sequence" in imports_of(MODULES["biaslab.experiments.workshop"])
    fake = dict(GRAPH, **{"biaslab.nn.mlp": GRAPH["biaslab.nn.mlp"] | {"biaslab.train.trainer"}})
    assert [d for d in fake["biaslab.nn.mlp"] if RANK[part_of(d)] > RANK["nn"]]
    dual = "biaslab.scratch.dual"
    monkeypatch.setitem(GRAPH, dual, GRAPH[dual] | {"biaslab.scratch.trace"})
    with pytest.raises(pytest.fail.Exception, match="import cycle"):
        test_no_import_cycles()


def test_scratch_imports_no_torch():
    for name, path in MODULES.items():
        if part_of(name) == "scratch":
            tree = ast.parse(path.read_text(encoding="utf-8"))
            names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
            names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
            assert not any(n.split(".")[0] == "torch" for n in names), f"{name} imports torch"
