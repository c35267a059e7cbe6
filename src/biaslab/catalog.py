"""What ``biaslab list`` shows, read from the sources: no lab imported.

Importing a lab imports torch (1.6 s on a 2-core machine) and importing them all several
seconds, so the list is read from the source files instead, with nothing cached: each call
reads what the files hold now (:func:`read_catalog`): the ``@experiment(name=..., day=...,
step=..., title=..., summary=...)`` declarations of ``biaslab/experiments/*.py``, read with
:mod:`ast`. These five are literals; a module whose declaration is not (or that declares no lab
this way) is returned as a :class:`Problem`, which the registry answers by importing that
module, and ``tests/test_catalog.py`` fails on. ``biaslab config NAME`` imports its lab
(:func:`biaslab.registry.configs`).

:class:`Entry` is one lab as ``biaslab list`` shows it; :class:`Configs` is what ``biaslab config``
shows (every profile's config and the keys left out of a part, with why).
"""

from __future__ import annotations

import ast
import pkgutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROFILES = ("quick", "default", "full")
EXPERIMENTS_PACKAGE = "biaslab.experiments"
ROOT = Path(__file__).resolve().parent  # the biaslab package
EXPERIMENTS_DIR = ROOT / "experiments"
# The declaration's literal keywords, with their type and default (REQUIRED: no default).
REQUIRED = object()
LITERALS: dict[str, tuple[type, Any]] = {
    "name": (str, REQUIRED),
    "day": (int, REQUIRED),
    "step": (int, 99),
    "title": (str, None),  # None: the name
    "summary": (str, REQUIRED),
}


@dataclass(frozen=True)
class Entry:
    """What ``biaslab list`` shows of an experiment: plain data, read from its declaration."""

    name: str
    day: int
    step: int
    title: str
    summary: str
    module: str


@dataclass(frozen=True)
class Configs:
    """What ``biaslab config`` shows: ``configs`` maps each profile to the resolved config as
    JSON (``config.to_dict``); ``unused`` names the keys the lab leaves out of a part it builds
    on, with why."""

    configs: dict[str, dict[str, Any]]
    unused: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Problem:
    """A module of ``experiments/`` whose labs cannot be read from its source."""

    module: str
    reason: str


class Unreadable(Exception):
    """A declaration the catalog cannot read from the source (not literal): the registry
    imports that lab instead."""


# declarations by file, kept while the file's size and modification time stay the same
_DECLARED: dict[Path, tuple[tuple[int, int], list[Entry]]] = {}


def module_path(module: str) -> Path | None:
    """The source file of a ``biaslab`` module, found without importing its package."""
    parts = module.split(".")
    if parts[0] != "biaslab":
        return None
    base = ROOT.joinpath(*parts[1:])
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def experiment_modules() -> list[str]:
    """Every module of ``biaslab.experiments`` (each one registers at least one lab), found as
    files: nothing is imported."""
    return sorted(
        f"{EXPERIMENTS_PACKAGE}.{m.name}"
        for m in pkgutil.iter_modules([str(EXPERIMENTS_DIR)])
        if not m.name.startswith("_")
    )


def _is_experiment_decorator(node: ast.expr) -> bool:
    func = node.func if isinstance(node, ast.Call) else None
    return (isinstance(func, ast.Name) and func.id == "experiment") or (
        isinstance(func, ast.Attribute) and func.attr == "experiment"
    )


def declarations(module: str) -> list[Entry]:
    """The ``@experiment(...)`` declarations of ``module`` (a module of ``experiments/``).

    Raises :class:`Unreadable` (the reason names file, line and keyword) when one of
    ``name``, ``day``, ``step``, ``title``, ``summary`` is not a literal of its type, when a
    keyword is passed as ``**``, or when the module declares no lab with a decorator.
    """
    path = module_path(module)
    if path is None:
        raise Unreadable(f"{module}: no source file")
    st = path.stat()
    key = (st.st_size, st.st_mtime_ns)
    if path not in _DECLARED or _DECLARED[path][0] != key:
        _DECLARED[path] = (key, _declarations(module, path))
    return _DECLARED[path][1]


def _declarations(module: str, path: Path) -> list[Entry]:
    found = []
    for node in ast.parse(path.read_bytes(), filename=str(path)).body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for deco in node.decorator_list:
            if not _is_experiment_decorator(deco):
                continue
            where = f"{path.name}:{deco.lineno}"
            if deco.args or any(k.arg is None for k in deco.keywords):
                raise Unreadable(f"{where}: @experiment takes keywords only, no * or ** arguments")
            keywords = {k.arg: k.value for k in deco.keywords}
            values = {}
            for key, (kind, default) in LITERALS.items():
                if key not in keywords:
                    values[key] = default
                    continue
                try:
                    value = ast.literal_eval(keywords[key])
                except (ValueError, TypeError, SyntaxError):
                    raise Unreadable(
                        f"{where}: {key}= is not a literal ({ast.unparse(keywords[key])}); "
                        "biaslab list reads it without importing the lab"
                    ) from None
                if type(value) is not kind and not (value is None and default is None):
                    raise Unreadable(f"{where}: {key}={value!r} is not a {kind.__name__}")
                values[key] = value
            missing = [k for k, v in values.items() if v is REQUIRED]
            if missing:
                raise Unreadable(f"{where}: @experiment without {', '.join(missing)}")
            found.append(
                Entry(
                    values["name"],
                    values["day"],
                    values["step"],
                    values["title"] or values["name"],
                    values["summary"],
                    module,
                )
            )
    if not found:
        raise Unreadable(f"{path.name}: no @experiment(...) decorator")
    return found


def read_catalog() -> tuple[list[Entry], list[Problem]]:
    """The entries of every lab in ``experiments/`` (unordered), and the modules that could not
    be read (each with the reason)."""
    entries, problems = [], []
    for module in experiment_modules():
        try:
            entries += declarations(module)
        except (Unreadable, SyntaxError, OSError) as exc:
            problems.append(Problem(module, str(exc)))
    return entries, problems
