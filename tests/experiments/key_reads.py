"""Which config keys a lab reads while it runs: every key ``biaslab config`` lists must be.

While a lab's run executes, reads of its config's fields (on the lab's config class and the parts
it is made of) are recorded, except the reads that only check, copy or print a config (its own
``__post_init__``, :mod:`biaslab.config`, the runner's bookkeeping, ``dataclasses``), which read
every key. ``TrainConfig.of(cfg, **overrides)`` passes a key on to a training, so it counts; an
overridden key is not read by it.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from contextlib import contextmanager
from pathlib import Path

import biaslab

PACKAGE = Path(biaslab.__file__).resolve().parent
NOT_USES = {  # files whose reads only check, copy or record a config
    PACKAGE / "config.py",
    PACKAGE / "runner.py",
    PACKAGE / "runs.py",
    PACKAGE / "config_slices.py",
    Path(dataclasses.__file__).resolve(),
}
CHECKING = {"__post_init__", "training_set", "__repr__", "__eq__", "__hash__", "mlp_memory"}


@functools.cache
def _only_checks(filename: str) -> bool:
    return Path(filename).resolve() in NOT_USES


@contextmanager
def recording(config_class):
    """Record the fields of ``config_class`` read inside the block: yields the set of names."""
    reads: set[str] = set()
    classes = [c for c in config_class.__mro__ if dataclasses.is_dataclass(c)]
    names = {f.name for f in dataclasses.fields(config_class)}
    originals = {c: c.__dict__.get("__getattribute__") for c in classes}

    def getattribute(self, name, _get=object.__getattribute__):
        if name in names:
            code = sys._getframe(1).f_code
            if code.co_name not in CHECKING and not _only_checks(code.co_filename):
                reads.add(name)
        return _get(self, name)

    for c in classes:
        c.__getattribute__ = getattribute
    try:
        yield reads
    finally:
        for c, original in originals.items():
            if original is None:
                del c.__getattribute__
            else:
                c.__getattribute__ = original
