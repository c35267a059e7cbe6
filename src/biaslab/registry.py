"""The experiment registry: ``@experiment(name=..., day=..., summary=...)``.

An experiment is a function ``fn(ctx: RunContext) -> None`` plus a frozen config dataclass and a
dict of overrides for each profile. ``biaslab list`` groups experiments by workshop day.
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass, field
from typing import Any, Callable

from biaslab.errors import BiaslabError

PROFILES = ("quick", "default", "full")

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

# Modules that register experiments when imported; extended as labs are added.
EXPERIMENT_MODULES = (
    "biaslab.experiments.xor",
    "biaslab.experiments.mnist_mlp",
    "biaslab.experiments.hidden_pca",
    "biaslab.experiments.autoencoder_2d",
    "biaslab.experiments.gradients",
    "biaslab.experiments.manual_backprop",
    "biaslab.experiments.adam_vs_sgd",
    "biaslab.experiments.lr_sweep",
    "biaslab.experiments.workshop",
)


@dataclass(frozen=True)
class Experiment:
    name: str
    day: int
    summary: str
    title: str
    config: type
    fn: Callable[..., None]
    profiles: dict[str, dict[str, Any]] = field(default_factory=dict)
    requires: tuple[str, ...] = ()  # data sets checked before a run directory is made

    def make_config(self, profile: str = "default", overrides: dict[str, Any] | None = None):
        """Defaults, then the profile's overrides, then the user's ``overrides``."""
        from biaslab.config import apply_overrides

        if profile not in PROFILES:
            raise BiaslabError(f"unknown profile '{profile}' (choose from {', '.join(PROFILES)})")
        cfg = apply_overrides(self.config(), self.profiles.get(profile, {}), context=self.name)
        return apply_overrides(cfg, overrides or {}, context=f"experiment '{self.name}'")


_REGISTRY: dict[str, Experiment] = {}


def experiment(*, name: str, day: int, summary: str, config: type, title: str | None = None,
               quick: dict | None = None, full: dict | None = None,
               requires: tuple[str, ...] = ()):
    """Register ``fn(ctx)`` as experiment ``name`` with config class ``config``.

    ``quick`` and ``full`` are override dicts for those profiles; the default profile is the
    dataclass defaults. ``requires`` names data sets (``"mnist"``) whose availability is checked
    before the run directory is created, so a missing package costs one clear line.
    """

    def decorate(fn):
        if name in _REGISTRY and _REGISTRY[name].fn is not fn:
            raise RuntimeError(f"experiment '{name}' registered twice")
        profiles = {"quick": dict(quick or {}), "default": {}, "full": dict(full or {})}
        _REGISTRY[name] = Experiment(name, day, summary, title or name, config, fn, profiles,
                                     tuple(requires))
        return fn

    return decorate


def _load_all() -> None:
    for module in EXPERIMENT_MODULES:
        importlib.import_module(module)


def all_experiments() -> list[Experiment]:
    """Every registered experiment, ordered by day then registration order."""
    _load_all()
    order = {name: i for i, name in enumerate(_REGISTRY)}
    return sorted(_REGISTRY.values(), key=lambda e: (e.day if e.day else 99, order[e.name]))


def get(name: str) -> Experiment:
    """The experiment called ``name``; an unknown name suggests the closest one."""
    _load_all()
    if name in _REGISTRY:
        return _REGISTRY[name]
    close = difflib.get_close_matches(name, list(_REGISTRY), n=1, cutoff=0.4)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    raise BiaslabError(f"unknown experiment '{name}'{hint} (see 'biaslab list')")
