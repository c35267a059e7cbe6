"""The experiment registry: ``@experiment(name=..., day=..., step=..., summary=...)``.

An experiment is a function ``fn(ctx: RunContext) -> None`` plus a frozen config dataclass and a
dict of overrides for each profile. Every module in ``biaslab/experiments/`` is found by itself
(:func:`discover`): adding a lab means adding its module, nothing else. ``biaslab list`` groups
experiments by workshop day and orders them by their ``step`` within the day.

The command line answers ``list`` and ``config`` from a :func:`catalog` of plain data. Building it
imports every lab (and so torch, ~3 s); it is cached as JSON in the data directory, keyed by the
size and modification time of every source file of the package, so a later call reads it back
without importing any lab, and any edit of the sources rebuilds it.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib
import json
import pkgutil
import platform
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biaslab.errors import BiaslabError

PROFILES = ("quick", "default", "full")
EXPERIMENTS_PACKAGE = "biaslab.experiments"
CATALOG_FILE = "registry-catalog.json"

DAY_TITLES = {
    1: "Day 1 - linear algebra and parametric models",
    2: "Day 2 - calculus, backpropagation and optimization",
    3: "Day 3 - generative models",
    4: "Day 4 - architectures as priors",
    5: "Day 5 - evaluation and decisions",
    6: "Benchmarks",
    7: "Lecture claims",
    0: "Whole workshop",
}


@dataclass(frozen=True)
class Experiment:
    name: str
    day: int
    summary: str
    title: str
    config: type
    fn: Callable[..., None]
    profiles: dict[str, dict[str, Any]] = field(default_factory=dict)
    # data sets checked before a run directory is made: names, or a function of the config
    requires: tuple[str, ...] | Callable[[Any], Iterable[str]] = ()
    step: int = 99  # position within its day, as the notes order the labs

    def required_data(self, cfg) -> tuple[str, ...]:
        """The data sets a run with config ``cfg`` needs (``require_data`` checks them)."""
        return tuple(self.requires(cfg)) if callable(self.requires) else self.requires

    def make_config(self, profile: str = "default", overrides: dict[str, Any] | None = None):
        """Defaults, then the profile's overrides, then the user's ``overrides``."""
        from biaslab.config import apply_overrides

        if profile not in PROFILES:
            raise BiaslabError(f"unknown profile '{profile}' (choose from {', '.join(PROFILES)})")
        cfg = apply_overrides(self.config(), self.profiles.get(profile, {}), context=self.name)
        return apply_overrides(cfg, overrides or {}, context=f"experiment '{self.name}'")


@dataclass(frozen=True)
class Entry:
    """What ``biaslab list`` and ``biaslab config`` show of an experiment: plain data only.

    ``configs`` maps each profile to the resolved config as JSON (``config.to_dict``);
    ``unused`` names inherited keys the lab does not use, with the reason.
    """

    name: str
    day: int
    step: int
    title: str
    summary: str
    module: str
    configs: dict[str, dict[str, Any]]
    unused: dict[str, str] = field(default_factory=dict)


_REGISTRY: dict[str, Experiment] = {}


def experiment(
    *,
    name: str,
    day: int,
    summary: str,
    config: type,
    title: str | None = None,
    step: int = 99,
    quick: dict | None = None,
    full: dict | None = None,
    requires: tuple[str, ...] | Callable[[Any], Iterable[str]] = (),
):
    """Register ``fn(ctx)`` as experiment ``name`` with config class ``config``.

    ``step`` orders the labs of one day as the workshop runs them. ``quick`` and ``full`` are
    override dicts for those profiles; the default profile is the dataclass defaults.
    ``requires`` names data sets (``"mnist"``) whose availability is checked before the run
    directory is created, so a missing package costs one clear line; a function of the config
    names them where they depend on it (the workshop: its days' labs).
    """

    def decorate(fn):
        if name in _REGISTRY and _REGISTRY[name].fn is not fn:
            raise RuntimeError(f"experiment '{name}' registered twice")
        profiles = {"quick": dict(quick or {}), "default": {}, "full": dict(full or {})}
        _REGISTRY[name] = Experiment(
            name,
            day,
            summary,
            title or name,
            config,
            fn,
            profiles,
            requires if callable(requires) else tuple(requires),
            step,
        )
        return fn

    return decorate


def experiment_modules() -> list[str]:
    """Every module of ``biaslab.experiments`` (each one registers at least one lab)."""
    package = importlib.import_module(EXPERIMENTS_PACKAGE)
    return sorted(
        f"{EXPERIMENTS_PACKAGE}.{m.name}"
        for m in pkgutil.iter_modules(package.__path__)
        if not m.name.startswith("_")
    )


def discover() -> None:
    """Import every experiment module, which registers its labs."""
    for module in experiment_modules():
        importlib.import_module(module)


def _order(day: int, step: int, name: str) -> tuple:
    return (day if day else 99, step, name)  # the whole workshop (day 0) comes last


def all_experiments() -> list[Experiment]:
    """Every registered experiment, ordered by day, then step within the day, then name."""
    discover()
    return sorted(_REGISTRY.values(), key=lambda e: _order(e.day, e.step, e.name))


def _unknown(name: str, known) -> BiaslabError:
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.4)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    return BiaslabError(f"unknown experiment '{name}'{hint} (see 'biaslab list')")


def get(name: str) -> Experiment:
    """The experiment called ``name``; an unknown name suggests the closest one.

    Only the lab's own module is imported when the catalog knows it.
    """
    if name not in _REGISTRY:
        module = next((e.module for e in _cached_catalog() or () if e.name == name), None)
        if module is not None:
            importlib.import_module(module)
    if name not in _REGISTRY:
        discover()
    if name in _REGISTRY:
        return _REGISTRY[name]
    raise _unknown(name, _REGISTRY)


# -- the catalog: list and config without importing the labs ---------------------------------
def _source_fingerprint() -> str:
    """A hash of the path, size and modification time of every source file of the package."""
    from biaslab.version import __version__

    root = Path(__file__).resolve().parent
    h = hashlib.sha256(f"{__version__}|{platform.python_version()}".encode())
    for path in sorted(root.rglob("*.py")):
        st = path.stat()
        h.update(f"{path.relative_to(root)}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _catalog_path() -> Path | None:
    from biaslab.fileio import data_dir

    try:
        return data_dir() / CATALOG_FILE
    except BiaslabError:  # no writable data directory: build the catalog each time
        return None


def _cached_catalog(fingerprint: str | None = None) -> list[Entry] | None:
    """The catalog from its cache, or None when there is none for the current sources."""
    from biaslab.fileio import read_json

    path = _catalog_path()
    if path is None or not path.is_file():
        return None
    try:
        data = read_json(path)
        if data.get("fingerprint") != (fingerprint or _source_fingerprint()):
            return None
        return [Entry(**e) for e in data["entries"]]
    except (BiaslabError, TypeError, KeyError, AttributeError):
        return None  # unreadable or from an older format: rebuild


def catalog() -> list[Entry]:
    """Every lab of ``biaslab/experiments/`` as plain data, in :func:`all_experiments` order.

    Cached (see the module docstring). Experiments registered from elsewhere (a test's) are
    left out, so that they never reach the cache.
    """
    fingerprint = _source_fingerprint()
    cached = _cached_catalog(fingerprint)
    if cached is not None:
        return cached
    from biaslab.config import to_dict
    from biaslab.fileio import atomic_write_text

    entries = [
        Entry(
            e.name,
            e.day,
            e.step,
            e.title,
            e.summary,
            e.fn.__module__,
            {p: to_dict(e.make_config(p)) for p in PROFILES},
            dict(getattr(e.config, "UNUSED_KEYS", {})),
        )
        for e in all_experiments()
        if e.fn.__module__.startswith(f"{EXPERIMENTS_PACKAGE}.")
    ]
    path = _catalog_path()
    if path is not None:
        try:
            atomic_write_text(
                path, json.dumps({"fingerprint": fingerprint, "entries": [vars(e) for e in entries]})
            )
        except OSError:
            pass  # a cache that cannot be written only costs time
    return entries


def entry(name: str) -> Entry:
    """The catalog entry of ``name``; an unknown name suggests the closest one."""
    entries = {e.name: e for e in catalog()}
    if name not in entries:
        raise _unknown(name, entries)
    return entries[name]


def workshop_order() -> list[str]:
    """Experiment names in the order the workshop runs them."""
    return [e.name for e in catalog()]
