"""biaslab — the inductive-bias laboratory.

Run an experiment from Python exactly as from the command line::

    import biaslab
    result = biaslab.run("xor", {"epochs": 20}, profile="quick", seed=0)
    result.claims        # each claim from the lecture notes beside the measured value
    result               # in Jupyter: the claims table in verdict colours, and the figures
    biaslab.show("runs/xor-20261125-101500-0")   # an earlier run, the same way

Compare architectures on your own data (``biaslab compare`` from the command line)::

    found = biaslab.compare("measurements.csv", target="yield", profile="quick")
    found.leaderboard(), found.recommended
    found.predict("new_measurements.csv"), found.predict_interval("new_measurements.csv")
    biaslab.load_comparison(found.run_dir)   # reopened later, without training

Config keys go in one mapping and run options as keywords (``profile``, ``seed``, ``out``,
``resume``, ``threads``, ``device``, ``log``, ...): a run option given as a config key is refused,
naming the option (``biaslab.request.RUN_OPTIONS``). ``biaslab.show(path)`` displays an earlier
run inline in Jupyter and as text elsewhere; ``biaslab.load(path)`` returns it as a ``Result``.
``run``, ``compare``, ``load_comparison``, ``show`` and ``load`` are their modules' own functions
(``biaslab.runner``, ``biaslab.api``, ``biaslab.report.display``), looked up on first use (PEP 562),
so ``import biaslab`` imports no torch; ``__version__`` is ``biaslab.version``'s.
"""

import importlib

from biaslab.version import __version__

__all__ = ["__version__", "compare", "load", "load_comparison", "run", "show"]

# The public functions are defined in their modules, which import torch: each is looked up there
# on first use (PEP 562), so ``import biaslab`` stays light and ``help(biaslab.run)`` shows the
# one definition, with its signature and docstring.
_DEFINED_IN = {
    "run": "biaslab.runner",
    "compare": "biaslab.api",
    "load_comparison": "biaslab.api",
    "show": "biaslab.report.display",
    "load": "biaslab.report.display",
}


def __getattr__(name: str):
    if name in _DEFINED_IN:
        return getattr(importlib.import_module(_DEFINED_IN[name]), name)
    raise AttributeError(f"module 'biaslab' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_DEFINED_IN})
