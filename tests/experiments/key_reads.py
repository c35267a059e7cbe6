"""Which config keys a lab reads while it runs: every key ``biaslab config`` lists must be.

While a lab's run executes, reads of its config's keys (on the lab's config class and on the
parts it is made of, such as its training) are recorded, except the reads that only check, copy
or print a config (its own ``__post_init__``, :mod:`biaslab.config`, the runner's bookkeeping,
``dataclasses``), which read every key. A part a lab reads and hands on whole (``cfg.train`` to a
recipe, or to ``dataclasses.replace``) counts as a read of all its keys: which of them take
effect then depends on others (momentum with SGD, warmup with a one-cycle schedule), as the
trainer's tests show.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
import typing
from contextlib import contextmanager
from pathlib import Path

import biaslab
from biaslab.config import field_types

PACKAGE = Path(biaslab.__file__).resolve().parent
NOT_USES = {  # files whose reads only check, copy or record a config
    PACKAGE / "config.py",
    PACKAGE / "runner.py",
    PACKAGE / "request.py",
    Path(dataclasses.__file__).resolve(),
}
CHECKING = {"__post_init__", "training_set", "__repr__", "__eq__", "__hash__", "mlp_memory"}


def _config_classes(cls) -> list[type]:
    """``cls``, the dataclasses it inherits from, and (the same of) each of its parts."""
    found = [c for c in cls.__mro__ if dataclasses.is_dataclass(c)]
    for tp in typing.get_type_hints(cls).values():
        if _is_config(tp):
            found += [c for c in _config_classes(tp) if c not in found]
    return found


def _is_config(tp) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


@functools.cache
def _only_checks(filename: str) -> bool:
    return Path(filename).resolve() in NOT_USES


@contextmanager
def recording(config_class):
    """Record the fields of ``config_class`` read inside the block: yields the set of names."""
    reads: set[str] = set()
    classes = _config_classes(config_class)
    names = set(field_types(config_class))  # the keys, a part's in its place
    hints = typing.get_type_hints(config_class)
    parts = {name: set(field_types(tp)) for name, tp in hints.items() if _is_config(tp)}
    originals = {c: c.__dict__.get("__getattribute__") for c in classes}

    def getattribute(self, name, _get=object.__getattribute__):
        if name in names or name in parts:
            code = sys._getframe(1).f_code
            if code.co_name not in CHECKING and not _only_checks(code.co_filename):
                reads.update(parts.get(name, {name}))  # a part handed on: all its keys, as .of
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
