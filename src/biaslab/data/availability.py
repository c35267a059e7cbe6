"""Check, before a run starts, that the data sets an experiment needs can be loaded."""

from __future__ import annotations

from biaslab.errors import BiaslabError


def _mnist_available() -> None:
    from biaslab.data import mnist
    from biaslab.data.store import data_dir

    if not (data_dir() / mnist.CACHE_NAME).is_file():
        mnist._package_data_dir()  # raises DataMissingError with the pip command


CHECKS = {"mnist": _mnist_available}


def require_data(names) -> None:
    """Raise a one-line :class:`~biaslab.errors.DataMissingError` if a named data set is missing."""
    for name in names:
        if name not in CHECKS:
            raise BiaslabError(f"unknown data set '{name}' (known: {', '.join(CHECKS)})")
        CHECKS[name]()
