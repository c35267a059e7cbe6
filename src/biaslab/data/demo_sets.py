"""Demo data sets for ``biaslab compare``, and the one door it reads data through: :func:`load_data`.

The demo sets are scikit-learn's shipped data (no download), loaded as a user's file would be
(their arrays read by :func:`~biaslab.data.user_data.arrays_as_user_data`, as an NPZ holding
them is, with the same checks), so that a demo behaves exactly like one's own data:

    name                    kind    task      what
    sklearn:digits          image   classify  1,797 handwritten digits, 8×8 pixels
    sklearn:digits-table    table   classify  the same digits as 64 columns
    sklearn:wine            table   classify  178 wines, 13 chemical measurements, 3 cultivars
    sklearn:diabetes        table   regress   442 patients, 10 measurements, disease progression

This module imports only the standard library at the top (``biaslab config compare`` builds its
config without NumPy, scikit-learn or torch); the readers are imported on first use.

:func:`load_data` reads a demo set or a user's file (:func:`~biaslab.data.user_data.load_user_data`)
and keeps the last data set read, so that a config's check and its run read a file once; errors
name the demo set.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from biaslab.errors import ConfigError

if TYPE_CHECKING:
    from biaslab.data.user_data import UserData

__all__ = ["DEMO_PREFIX", "DEMO_SETS", "DemoSet", "is_demo_set", "load_data", "load_demo_set"]

DEMO_PREFIX = "sklearn:"


@dataclass(frozen=True)
class DemoSet:
    """A demo set: scikit-learn's loader, the kind and task it is read as, one line about it."""

    loader: str  # the function of sklearn.datasets
    kind: str
    task: str
    about: str


DEMO_SETS: dict[str, DemoSet] = {
    "sklearn:digits": DemoSet("load_digits", "image", "classify", "handwritten digits, 8×8 pixels"),
    "sklearn:digits-table": DemoSet("load_digits", "table", "classify", "the digits as 64 pixel columns"),
    "sklearn:wine": DemoSet("load_wine", "table", "classify", "13 chemical measurements of 3 cultivars"),
    "sklearn:diabetes": DemoSet(
        "load_diabetes", "table", "regress", "10 measurements, disease progression a year later"
    ),
}


def is_demo_set(source: str) -> bool:
    """``source`` names a demo set (``sklearn:...``), known or not."""
    return isinstance(source, str) and source.startswith(DEMO_PREFIX)


def demo_set(name: str) -> DemoSet:
    """The demo set called ``name``; an unknown one is a ConfigError listing them."""
    if name not in DEMO_SETS:
        raise ConfigError(f"no demo data set {name!r}; choose one of {', '.join(DEMO_SETS)} or give a file")
    return DEMO_SETS[name]


def load_demo_set(name: str, *, task: str | None = None, kind: str | None = None) -> UserData:
    """A demo set as a checked :class:`~biaslab.data.user_data.UserData`.

    Args:
        name: one of :data:`DEMO_SETS`.
        task, kind: as for :func:`~biaslab.data.user_data.load_user_data` (None: the demo's own).

    Raises:
        ConfigError: an unknown name, or a kind or task the data cannot be.
    """
    import dataclasses

    import numpy as np
    from sklearn import datasets

    from biaslab.data.user_data import arrays_as_user_data

    demo = demo_set(name)
    bunch = getattr(datasets, demo.loader)()
    x = np.asarray(bunch.data, dtype=np.float32)
    names: tuple[str, ...] = tuple(str(n) for n in getattr(bunch, "feature_names", ()))
    if demo.loader == "load_digits":
        x = x / np.float32(16)  # pixel values 0..16 -> [0, 1]
        names = tuple(f"pixel_{i // 8}_{i % 8}" for i in range(64))
        if demo.kind == "image":
            x, names = x.reshape(-1, 8, 8), ()
    data = arrays_as_user_data(
        {"x": x, "y": np.asarray(bunch.target)}, name, task=task, kind=kind or demo.kind
    )
    notes = (f"{name}: scikit-learn's {demo.about} (shipped with scikit-learn, no download)", *data.notes)
    return dataclasses.replace(data, source=name, feature_names=names or data.feature_names, notes=notes)


_LAST: dict[tuple, UserData] = {}  # the last data set read: a config checks it, the run reuses it


def load_data(
    source: str,
    *,
    target: str | None = None,
    task: str | None = None,
    kind: str | None = None,
) -> UserData:
    """A demo set (``sklearn:...``) or a user's file or folder
    (:func:`~biaslab.data.user_data.load_user_data`), read once: a second call with the same
    arguments on an unchanged file returns the same object.

    Raises:
        ConfigError, DataFormatError, DataMissingError: as the readers do, one line each.
    """
    if is_demo_set(source):
        key: tuple = (source, task, kind)
    else:
        try:
            stat = os.stat(source)
            key = (source, target, task, kind, stat.st_mtime_ns, stat.st_size)
        except OSError:
            key = ()
    if key and key in _LAST:
        return _LAST[key]
    if is_demo_set(source):
        data = load_demo_set(source, task=task, kind=kind)
    else:
        from biaslab.data.user_data import load_user_data

        data = load_user_data(source, target=target, task=task, kind=kind)
    _LAST.clear()
    if key:
        _LAST[key] = data
    return data
