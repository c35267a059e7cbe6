"""Check, before a run starts, that the data sets an experiment needs can be loaded.

:func:`require_data` runs before a run directory is made (``request.check``). It knows the data
sets (``CHECKS``: MNIST, MNIST-1D, Animal-MNIST, QM9) and the ``graph`` extra's libraries
(torch-geometric, RDKit): a missing one is one DataMissingError line naming what installs it
(``pip install 'biaslab[graph]'`` for the libraries).
"""

from __future__ import annotations

import importlib.util

from biaslab.data import mnist, mnist1d, ood, qm9
from biaslab.errors import BiaslabError, DataMissingError


def _library(module: str, package: str):
    """A check that ``module`` imports; the graph labs' libraries are the ``graph`` extra."""

    def check() -> None:
        if importlib.util.find_spec(module) is None:
            raise DataMissingError(f"this lab needs {package}: pip install 'biaslab[graph]'")

    return check


# data set name -> a function that raises a one-line DataMissingError when it cannot be loaded
CHECKS = {
    "mnist": mnist.check_available,
    "mnist1d": mnist1d.check_available,
    "animal-mnist": ood.check_animal_mnist,
    "qm9": qm9.check_available,
    "torch-geometric": _library("torch_geometric", "torch-geometric"),
    "rdkit": _library("rdkit", "rdkit"),
}


def require_data(names) -> None:
    """Raise a one-line :class:`~biaslab.errors.DataMissingError` if a named data set is missing."""
    for name in names:
        if name not in CHECKS:
            raise BiaslabError(f"unknown data set '{name}' (known: {', '.join(CHECKS)})")
        CHECKS[name]()
