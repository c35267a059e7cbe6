"""The experiment registry: ``@experiment(name=..., day=..., step=..., summary=...)``.

An experiment is a function ``fn(ctx: RunContext) -> None`` plus a frozen config dataclass and a
dict of overrides for each profile. Every module in ``biaslab/experiments/`` is found by itself
(:func:`discover`): adding a lab means adding its module, nothing else. ``biaslab list`` groups
experiments by workshop day and orders them by their ``step`` within the day.

The command line answers ``list`` without importing any lab (and so torch, 1.6 s here):
:func:`catalog` reads the ``@experiment(...)`` declarations from the sources
(:mod:`biaslab.catalog`), nothing cached. ``biaslab config NAME`` imports that lab alone
(:func:`configs`).
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biaslab.catalog import (
    EXPERIMENTS_PACKAGE,  # noqa: F401 (re-exported: registry.EXPERIMENTS_PACKAGE)
    PROFILES,
    Configs,
    Entry,
    experiment_modules,
    read_catalog,
)
from biaslab.config import apply_overrides, to_dict, unused_keys
from biaslab.errors import BiaslabError

# The groups of ``biaslab list``, in the order they are listed (day 0: runs of several labs).
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
    # a sweep's own tables: run folders of one configuration -> [{title, columns, rows, lines}]
    sweep_tables: Callable[[list[Path]], list[dict]] | None = None
    # the lab's words for its metrics' labels: word -> Term or text (biaslab.records)
    words: Mapping[str, Any] = field(default_factory=dict)

    def required_data(self, cfg) -> tuple[str, ...]:
        """The data sets a run with config ``cfg`` needs (``require_data`` checks them)."""
        return tuple(self.requires(cfg)) if callable(self.requires) else self.requires

    def make_config(self, profile: str = "default", overrides: dict[str, Any] | None = None):
        """Defaults, then the profile's overrides, then the user's ``overrides``."""
        if profile not in PROFILES:
            raise BiaslabError(f"unknown profile '{profile}' (choose from {', '.join(PROFILES)})")
        cfg = apply_overrides(self.config(), self.profiles.get(profile, {}), context=self.name)
        return apply_overrides(cfg, overrides or {}, context=f"experiment '{self.name}'")


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
    sweep_tables: Callable[[list[Path]], list[dict]] | None = None,
    words: Mapping[str, Any] | None = None,
):
    """Register ``fn(ctx)`` as experiment ``name`` with config class ``config``.

    ``step`` orders the labs of one day as the workshop runs them. ``quick`` and ``full`` are
    override dicts for those profiles; the default profile is the dataclass defaults.
    ``requires`` names data sets (``"mnist"``) whose availability is checked before the run
    directory is created, so a missing package costs one clear line; a function of the config
    names them where they depend on it (the workshop: its days' labs). ``sweep_tables`` makes a
    sweep's own tables from the run folders of each configuration (compare: its leaderboard
    over the seeds), each a dict of ``title``, ``columns``, ``rows`` (shown in the sweep's
    index, kept in sweep-results.json) and ``lines`` (printed at the sweep's end). ``words``
    are the lab's words for its metrics' labels (:mod:`biaslab.records`): what it means by a
    model's, a split's or a measure's name (``{"none": "no regulariser", "gap":
    measure("gap (training minus validation accuracy)")}``), written into each run's results.
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
            sweep_tables,
            dict(words or {}),
        )
        return fn

    return decorate


def discover() -> None:
    """Import every experiment module, which registers its labs."""
    for module in experiment_modules():
        importlib.import_module(module)


def _order(day: int, step: int, name: str) -> tuple:
    position = list(DAY_TITLES).index(day) if day in DAY_TITLES else len(DAY_TITLES)
    return (position, step, name)  # DAY_TITLES' order, then the step within the day


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
        module = next((e.module for e in catalog() if e.name == name), None)
        if module is not None:
            importlib.import_module(module)
    if name not in _REGISTRY:
        discover()
    if name in _REGISTRY:
        return _REGISTRY[name]
    raise _unknown(name, _REGISTRY)


# -- the catalog: list and config without importing the labs ---------------------------------
def catalog() -> list[Entry]:
    """Every lab of ``biaslab/experiments/`` as plain data, in :func:`all_experiments` order.

    Read from the ``@experiment(...)`` declarations in the sources (:mod:`biaslab.catalog`): no
    lab is imported, nothing is cached. A module whose declaration is not literal is imported
    instead (``tests/test_catalog.py`` fails on it). Experiments registered from elsewhere (a
    test's) are left out.
    """
    entries, problems = read_catalog()
    for problem in problems:
        importlib.import_module(problem.module)
        entries += [
            Entry(e.name, e.day, e.step, e.title, e.summary, problem.module)
            for e in _REGISTRY.values()
            if e.fn.__module__ == problem.module
        ]
    return sorted(entries, key=lambda e: _order(e.day, e.step, e.name))


def entry(name: str) -> Entry:
    """The catalog entry of ``name``; an unknown name suggests the closest one."""
    entries = {e.name: e for e in catalog()}
    if name not in entries:
        raise _unknown(name, entries)
    return entries[name]


def configs(name: str) -> Configs:
    """The configs of experiment ``name`` in every profile and its unused keys (``biaslab
    config``), as :meth:`Experiment.make_config` gives them.

    The lab's module is imported (its config is the lab's own class). A config a profile cannot
    build is one BiaslabError line naming the lab and the profile; nothing is swallowed.
    """
    exp = get(name)
    built = {}
    for profile in PROFILES:
        try:
            built[profile] = to_dict(exp.make_config(profile))
        except BiaslabError as exc:
            raise BiaslabError(f"experiment '{name}': its {profile} config cannot be built: {exc}") from None
    return Configs(built, unused_keys(exp.config))


def workshop_order() -> list[str]:
    """Experiment names in the order the workshop runs them."""
    return [e.name for e in catalog()]
