"""A lab's configs from a slice of its sources: ``biaslab config NAME`` without importing the lab.

A lab's config (:func:`lab_configs`): its config class is built from a *slice* of its
  module: only the top-level statements the class and its ``quick=`` / ``full=`` profiles need
  (their names, then the names those statements use, transitively through the ``biaslab``
  modules they import from), executed in private modules (``_biaslab_catalog.<name>``, removed
  afterwards). The standard library is imported as usual; any other import (torch, NumPy, ...)
  is bound to a proxy that imports it when the code building the config first uses it, so a
  config that needs torch still gets it (slower, the same values). A ``biaslab`` module that is
  already imported, or whose import needs only the standard library, is imported as usual, not
  sliced: the registry, the config helpers and the errors are the real ones, with their state
  (the workshop's config sees every lab). Anything a slice cannot do (a ``biaslab`` module
  imported as a whole, a ``*`` import) raises :class:`Unreadable`, and the registry imports the
  lab instead. ``tests/test_catalog.py`` checks the slices' configs against the imported labs',
  for every lab and profile, in a fresh process.
"""

from __future__ import annotations

import ast
import importlib
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

from biaslab.catalog import (
    PROFILES,
    SHADOW_PREFIX,
    Configs,
    Unreadable,
    declarations,
    module_path,
    parse_source,
)
from biaslab.config import apply_overrides, to_dict, unused_keys

__all__ = ["lab_configs"]


# -- a lab's configs from a slice of the sources ------------------------------------------------
def lab_configs(module: str, name: str) -> Configs:
    """The configs of lab ``name`` (declared in ``module``) in every profile, as the registry's
    ``Experiment.make_config(profile)`` gives them, built from a slice of the sources."""
    declared = {d.entry.name: d for d in declarations(module)}
    if name not in declared:
        raise Unreadable(f"{module} declares no lab '{name}'")
    decl = declared[name]
    if not isinstance(decl.config, ast.Name):
        raise Unreadable(f"{module}: config= is not a name defined in the module")
    slicer = _Slicer()
    try:
        slicer.require(module, decl.config.id)
        for expr in decl.profiles.values():
            slicer.require_loads(module, expr)
        slicer.settle()
        lab = slicer.execute(module)
        cls = vars(lab)[decl.config.id]
        configs = {}
        for profile in PROFILES:
            # as @experiment stores them: dict(quick or {}); the default profile is empty
            expr = decl.profiles.get(profile)
            overrides = dict(_evaluate(expr, lab) or {}) if expr is not None else {}
            configs[profile] = to_dict(apply_overrides(cls(), overrides, context=name))
        return Configs(configs, unused_keys(cls))
    finally:
        slicer.close()


def _evaluate(expr: ast.expr, module: types.ModuleType):
    """The value of an expression of ``module``'s source, in the namespace of its slice."""
    code = compile(ast.fix_missing_locations(ast.Expression(expr)), module.__file__, "eval")
    return eval(code, vars(module))


def _is_stdlib(module: str) -> bool:
    top = module.partition(".")[0]
    return top in sys.stdlib_module_names or top == "__future__"


def _module_level(tree: ast.AST):
    """The nodes a module runs when imported (those inside its functions and classes' methods
    are left out: a lazy import runs when its function does)."""
    for node in ast.iter_child_nodes(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield node
            yield from _module_level(node)


class _Lazy:
    """A third-party module (or a name from one), imported when first used."""

    __slots__ = ("_load", "_value", "_what")

    def __init__(self, what: str, load):
        object.__setattr__(self, "_what", what)
        object.__setattr__(self, "_load", load)

    def _get(self):
        try:
            return object.__getattribute__(self, "_value")
        except AttributeError:
            value = object.__getattribute__(self, "_load")()
            object.__setattr__(self, "_value", value)
            return value

    def __getattr__(self, name):
        return getattr(self._get(), name)

    def __call__(self, *args, **kwargs):
        return self._get()(*args, **kwargs)

    def __getitem__(self, key):
        return self._get()[key]

    def __mro_entries__(self, bases):  # a class deriving from it (nn.Module)
        return (self._get(),)

    def __instancecheck__(self, obj):
        return isinstance(obj, self._get())

    def __subclasscheck__(self, cls):
        return issubclass(cls, self._get())

    def __repr__(self):
        return f"<lazy {object.__getattribute__(self, '_what')}>"


def _load_module(target: str, top: str | None = None):
    module = importlib.import_module(target)
    return sys.modules[top] if top else module


def _load_name(target: str, attr: str):
    module = importlib.import_module(target)
    try:
        return getattr(module, attr)
    except AttributeError:
        return importlib.import_module(f"{target}.{attr}")


@dataclass
class _Unit:
    """A top-level statement (or one name of an import) and the names it binds and uses."""

    index: int
    node: ast.stmt
    binds: set[str]
    loads: set[str]
    # an import's one name: (module, attribute or None, the name bound is the top package)
    imported: tuple[str, str | None, bool] | None = None


@dataclass
class _Source:
    name: str
    path: Path
    future: list[ast.stmt]
    units: list[_Unit]
    binders: dict[str, list[int]]
    kept: set[int] = field(default_factory=set)


def _loads(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _binds(stmt: ast.stmt) -> set[str]:
    """Names a module-level statement binds (not those local to its functions or classes)."""
    names: set[str] = set()
    scopes = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            return
        if isinstance(node, scopes):
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).partition(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(stmt)
    return names


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    anchor = package[: len(package) - node.level + 1]
    return ".".join(anchor + ([node.module] if node.module else []))


def _read_source(module: str, path: Path, tree: ast.Module) -> _Source:
    is_package = path.name == "__init__.py"
    future, units = [], []
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
            future.append(stmt)
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                top = alias.asname is None
                bound = alias.asname or alias.name.partition(".")[0]
                units.append(_Unit(len(units), stmt, {bound}, set(), (alias.name, None, top)))
        elif isinstance(stmt, ast.ImportFrom):
            target = _absolute(module, is_package, stmt)
            for alias in stmt.names:
                if alias.name == "*":
                    units.append(_Unit(len(units), stmt, {"*"}, set(), (target, "*", False)))
                else:
                    bound = alias.asname or alias.name
                    units.append(_Unit(len(units), stmt, {bound}, set(), (target, alias.name, False)))
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # a docstring
        else:
            units.append(_Unit(len(units), stmt, _binds(stmt), _loads(stmt)))
    binders: dict[str, list[int]] = {}
    for unit in units:
        for name in unit.binds:
            binders.setdefault(name, []).append(unit.index)
    return _Source(module, path, future, units, binders)


class _Slicer:
    """Finds the statements some names of a module need, then runs only those."""

    def __init__(self):
        self.sources: dict[str, _Source] = {}
        self.shadows: dict[str, types.ModuleType] = {}
        self.light: dict[str, bool] = {}
        self.trees: dict[Path, ast.Module] = {}

    def tree(self, path: Path) -> ast.Module:
        if path not in self.trees:
            self.trees[path] = parse_source(path)
        return self.trees[path]

    def source(self, module: str) -> _Source:
        if module not in self.sources:
            path = module_path(module)
            if path is None:
                raise Unreadable(f"{module}: no source file")
            self.sources[module] = _read_source(module, path, self.tree(path))
        return self.sources[module]

    def require(self, module: str, name: str) -> None:
        source = self.source(module)
        if name not in source.binders:
            if "*" in source.binders:
                raise Unreadable(f"{module}: '{name}' may come from a * import")
            raise Unreadable(f"{module} binds no '{name}' at its top level")
        for index in source.binders[name]:
            self.keep(source, index)

    def require_loads(self, module: str, node: ast.AST) -> None:
        source = self.source(module)
        for name in _loads(node):
            if name in source.binders:
                self.require(module, name)

    def keep(self, source: _Source, index: int) -> None:
        if index in source.kept:
            return
        source.kept.add(index)
        unit = source.units[index]
        if unit.imported is not None:
            target, attr, _ = unit.imported
            if attr == "*":
                raise Unreadable(f"{source.name}: from {target} import *")
            if target.partition(".")[0] == "biaslab" and not self.importable(target):
                if attr is None:
                    raise Unreadable(f"{source.name}: import {target} (a whole module)")
                if attr not in self.source(target).binders and module_path(f"{target}.{attr}"):
                    raise Unreadable(f"{source.name}: from {target} import {attr} (a whole module)")
                self.require(target, attr)
        for name in unit.loads:
            if name in source.binders:
                self.require(source.name, name)

    def settle(self) -> None:
        """Also keep each statement that binds nothing but uses a kept name (``X.update(...)``)."""
        changed = True
        while changed:
            changed = False
            for source in list(self.sources.values()):
                bound = {n for i in source.kept for n in source.units[i].binds}
                for unit in source.units:
                    if unit.index not in source.kept and not unit.binds and unit.loads & bound:
                        self.keep(source, unit.index)
                        changed = True

    def execute(self, module: str) -> types.ModuleType:
        """The slice of ``module``, run in a private module (registered while the slicer lives,
        for ``typing.get_type_hints`` and ``dataclasses``)."""
        if module in self.shadows:
            return self.shadows[module]
        source = self.sources[module]
        shadow = types.ModuleType(SHADOW_PREFIX + module)
        shadow.__file__ = str(source.path)
        # a relative import inside a function imports the real sibling when it runs
        shadow.__package__ = module if source.path.name == "__init__.py" else module.rpartition(".")[0]
        shadow.__dict__["__biaslab_import__"] = self.bind
        self.shadows[module] = shadow
        sys.modules[shadow.__name__] = shadow
        body: list[ast.stmt] = list(source.future)
        for unit in source.units:
            if unit.index not in source.kept:
                continue
            if unit.imported is None:
                body.append(unit.node)
                continue
            target, attr, top = unit.imported
            call = ast.Call(
                ast.Name("__biaslab_import__", ast.Load()),
                [ast.Constant(target), ast.Constant(attr), ast.Constant(top)],
                [],
            )
            assign = ast.Assign([ast.Name(next(iter(unit.binds)), ast.Store())], call)
            body.append(ast.copy_location(assign, unit.node))
        tree = ast.fix_missing_locations(ast.Module(body, []))
        exec(compile(tree, str(source.path), "exec", dont_inherit=True), shadow.__dict__)
        return shadow

    def importable(self, module: str) -> bool:
        """Whether the slice imports ``module`` as usual rather than slicing it: a ``biaslab``
        module already imported, or one whose import needs nothing outside the standard library
        (the ``__init__`` of its packages included). So the registry, the config helpers and the
        errors a slice uses are the real ones, with their state."""
        if module in sys.modules:
            return True
        if module not in self.light:
            self.light[module] = True  # in a cycle: decided by the other imports
            self.light[module] = self._light(module)
        return self.light[module]

    def _light(self, module: str) -> bool:
        parts = module.split(".")
        path = module_path(module)
        if path is None or not all(self.importable(".".join(parts[:i])) for i in range(2, len(parts))):
            return False
        for node in _module_level(self.tree(path)):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(module, path.name == "__init__.py", node)
                submodules = [f"{base}.{a.name}" for a in node.names]
                targets = [base, *(m for m in submodules if module_path(m))]
            else:
                continue
            for target in targets:
                biaslab = target.partition(".")[0] == "biaslab"
                if not (self.importable(target) if biaslab else _is_stdlib(target)):
                    return False
        return True

    def bind(self, target: str, attr: str | None, top: bool):
        """What an import statement of a slice binds."""
        if target in self.sources:  # sliced (a biaslab module not imported when the slice was made)
            return getattr(self.execute(target), attr)
        if target.partition(".")[0] == "biaslab":
            return _load_name(target, attr) if attr else _load_module(target, "biaslab" if top else None)
        if _is_stdlib(target):
            if attr:
                return _load_name(target, attr)
            return _load_module(target, target.partition(".")[0] if top else None)
        if attr:
            return _Lazy(f"{target}.{attr}", lambda: _load_name(target, attr))
        return _Lazy(target, lambda: _load_module(target, target.partition(".")[0] if top else None))

    def close(self) -> None:
        for shadow in self.shadows.values():
            sys.modules.pop(shadow.__name__, None)
