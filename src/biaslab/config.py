"""Frozen dataclass configs, ``--set key=value`` overrides and JSON round-trip.

Every experiment declares one frozen dataclass of plain fields (int, float, bool, str,
``Literal[...]`` choices, or tuples of those). A *profile* (``quick``, ``default``, ``full``) is
a dict of overrides applied to the dataclass defaults; ``--set`` overrides are applied last.
Values given as strings (from the command line) are parsed into the field's type; anything that
does not fit is a
:class:`~biaslab.errors.ConfigError` with one line that names the key and the expected type.

A lab's config is made of *parts*: a field whose type is a dataclass (its training,
``train: ClassifierTraining``; its data sizes, ``data: MnistSizes``) holds that part's keys,
which stay flat (``--set lr=0.1``, never ``train.lr``; config.json lists them in their place), so
a lab lists exactly the keys it reads: its parts' and its own (:func:`field_types`).

Validation: a config checks every value against the data and the machine it will meet, in its
``__post_init__``, so that a bad value is refused before a run directory exists. A part is built
(and checks its own keys) before the config that holds it, and every ``__post_init__`` keeps one
order::

    def __post_init__(self):
        check_range(self, "hidden", 1)             # 1. its own fields, one by one
        check_batch_fits(self)                     # 2. relations between fields (parts' too),
        check_memory(...)                          #    and memory

so each field is checked on its own before any relation uses it: a relation's message never
blames a key whose own value is the problem. The helpers here (:func:`check_range`,
:func:`check_batch_fits`, :func:`check_memory`) name the key, the allowed range and why.

The rest of the module:

* :func:`field_types` and :func:`flat_values` (every key in its place; two parts with one key
  is a TypeError). No lab config inherits from a part: it holds parts (a registry test).
* :func:`unused_keys`: the keys a part leaves out of the part it builds on, with why
  (:func:`~biaslab.train.config.training_without`).
* :func:`apply_overrides` (typed ``--set key=value``; an unknown key suggests the closest; a
  left-out key is refused with its reason) and :func:`parse_set_args`.
* :func:`check_choices`: every ``Literal`` field holds one of its choices, also in a config made
  in Python.
* :func:`to_dict` / :func:`from_dict`: strict, so a saved value is taken only with its field's
  type and no text is parsed (``"epochs": "2"`` is refused).
* By type, every float is finite and every tuple non-empty (:func:`parse_value`).
* :func:`check_batch_fits`: a batch no larger than the ``training_set()`` of the config or its
  data part; :func:`smallest_training_set` for a lab that trains once per size.
* :func:`check_memory`: an estimate against the free memory.
* :func:`check_seed`: 0..2**64 - 1.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import os
import types
import typing
from collections.abc import Mapping
from typing import Any

from biaslab.checks import is_integer, is_number
from biaslab.errors import ConfigError

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def field_types(cls) -> dict[str, Any]:
    """Map each key of config class ``cls`` to its resolved type, flat: a field whose type is a
    dataclass is a *part* (a lab's training, its data sizes), and its keys stand in its place
    (``lr``, not ``train.lr``: a part's name is never a key). Two parts with one key is a
    TypeError."""
    hints = typing.get_type_hints(cls)
    keys: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        inner = field_types(tp) if _is_part(tp) else {f.name: tp}
        for key, key_type in inner.items():
            if key in keys:
                raise TypeError(f"{cls.__name__}: the key {key!r} belongs to two of its parts")
            keys[key] = key_type
    return keys


def _is_part(tp) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def flat_values(cfg) -> dict[str, Any]:
    """Each key of ``cfg`` (its parts' keys in their place, as :func:`field_types`) -> its value."""
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        values.update(flat_values(value) if dataclasses.is_dataclass(value) else {f.name: value})
    return values


def unused_keys(cls) -> dict[str, str]:
    """Keys a config leaves out of a part it builds on, each with why (``UNUSED_KEYS`` of its
    class and of its parts' classes, as :func:`biaslab.train.config.training_without` makes
    them): ``--set`` refuses them with the reason, and ``biaslab config`` prints it."""
    found = dict(getattr(cls, "UNUSED_KEYS", {}))
    for tp in typing.get_type_hints(cls).values():
        if _is_part(tp):
            found.update(unused_keys(tp))
    return found


def _replaced(cfg, changes: Mapping[str, Any]):
    """``cfg`` with the flat ``changes`` made in whichever part holds each key (each part built
    anew, so that its own checks run before those of the config that holds it)."""
    own: dict[str, Any] = {}
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if dataclasses.is_dataclass(value):
            inner = {k: v for k, v in changes.items() if k in field_types(type(value))}
            if inner:
                own[f.name] = _replaced(value, inner)
        elif f.name in changes:
            own[f.name] = changes[f.name]
    return dataclasses.replace(cfg, **own)


def check_choices(cfg) -> None:
    """Every field of ``cfg`` typed ``Literal[...]`` holds one of its choices: a ConfigError in
    one line naming the field otherwise (``--set`` checks the same when it parses a value; this
    catches a config made in Python)."""
    values = flat_values(cfg)
    for name, tp in field_types(type(cfg)).items():
        if typing.get_origin(tp) is typing.Literal and values[name] not in typing.get_args(tp):
            choices = ", ".join(map(str, typing.get_args(tp)))
            raise ConfigError(f"{name}={values[name]!r}: choose one of {choices}")


def _type_name(tp) -> str:
    if tp is int:
        return "an integer"
    if tp is float:
        return "a number"
    if tp is bool:
        return "true or false"
    if tp is str:
        return "a string"
    return f"a value of type {getattr(tp, '__name__', str(tp))}"


def _unwrap_optional(tp):
    """``int | None`` -> (int, True); ``int`` -> (int, False)."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(tp)) == 2:
            return args[0], True
    return tp, False


def parse_value(key: str, raw: Any, tp, *, strict: bool = False) -> Any:
    """Convert ``raw`` (a string from the command line, or a Python value) to type ``tp``.

    ``strict``: ``raw`` is a value read from a JSON file (a saved config), taken only when it
    already has the field's type: no text is parsed (``"epochs": "2"`` is refused).
    """
    tp, optional = _unwrap_optional(tp)
    if strict and isinstance(raw, str) and tp is not str and typing.get_origin(tp) is not typing.Literal:
        raise ConfigError(f"{key}={raw!r}: expected {_type_name(tp)}, not text")
    if typing.get_origin(tp) is typing.Literal:
        choices = typing.get_args(tp)
        value = raw.strip() if isinstance(raw, str) and not strict else raw
        if value not in choices:
            raise ConfigError(f"{key}={raw!r}: choose one of {', '.join(map(str, choices))}")
        return value
    if optional and (raw is None or (isinstance(raw, str) and raw.lower() in {"none", "null"})):
        return None
    if typing.get_origin(tp) is tuple:
        (item_tp, *_rest) = typing.get_args(tp)
        if isinstance(raw, str) and not strict:
            parts = [p for p in raw.replace("(", "").replace(")", "").split(",") if p.strip()]
        elif isinstance(raw, (list, tuple)):
            parts = list(raw)
        else:
            raise ConfigError(f"{key}={raw!r}: expected a comma-separated list")
        if not parts:
            raise ConfigError(f"{key}={raw!r}: give at least one value (comma-separated)")
        return tuple(parse_value(key, p, item_tp, strict=strict) for p in parts)
    if isinstance(raw, str) and not strict:
        text = raw.strip()
        try:
            if tp is bool:
                if text.lower() in _TRUE:
                    return True
                if text.lower() in _FALSE:
                    return False
                raise ValueError
            if tp is int:
                return int(text)
            if tp is float:
                return _finite(key, float(text))
            if tp is str:
                return text
        except ValueError:
            pass
        raise ConfigError(f"{key}={raw!r}: expected {_type_name(tp)}")
    # A Python value (from biaslab.run(...) or a JSON file).
    if tp is float and is_number(raw):
        try:
            return _finite(key, float(raw))
        except OverflowError:  # an int too large for a float
            raise ConfigError(f"{key}={raw!r}: too large for a floating-point number") from None
    if tp in (int, bool, str) and type(raw) is tp:
        return raw
    raise ConfigError(f"{key}={raw!r}: expected {_type_name(tp)}")


def _finite(key: str, value: float) -> float:
    """No config value is infinite or nan: every scale, rate and fraction is a finite number."""
    if not math.isfinite(value):
        raise ConfigError(f"{key}={value!r}: must be a finite number")
    return value


def apply_overrides(cfg, overrides: Mapping[str, Any], context: str = "", *, strict: bool = False):
    """Return a copy of ``cfg`` with ``overrides`` applied (values parsed and type-checked).

    A key the config leaves out of a part (:func:`unused_keys`) is refused with the reason.
    ``strict``: values from a JSON file, taken only when they have the field's type
    (:func:`parse_value`).
    """
    if not overrides:
        return cfg
    types_ = field_types(type(cfg))
    unused = unused_keys(type(cfg))
    changes = {}
    for key, raw in overrides.items():
        if key in unused:
            where = f" by {context}" if context else ""
            raise ConfigError(f"'{key}' is not used{where}: {unused[key]}")
        if key not in types_:
            close = difflib.get_close_matches(key, list(types_), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            where = f" for {context}" if context else ""
            raise ConfigError(f"unknown config key '{key}'{where}{hint} (keys: {', '.join(sorted(types_))})")
        changes[key] = parse_value(key, raw, types_[key], strict=strict)
    return _replaced(cfg, changes)


def require_positive(cfg, *names: str) -> None:
    """Raise ConfigError unless each named field of ``cfg`` is > 0 (None counts as unset).

    Shorthand for :func:`check_range` with an open lower bound of 0.
    """
    for name in names:
        check_range(cfg, name, 0, open_low=True)


def check_range(
    cfg,
    name: str,
    low: float | None = None,
    high: float | None = None,
    why: str = "",
    *,
    open_low: bool = False,
    open_high: bool = False,
) -> None:
    """Raise ConfigError unless ``low <= value <= high`` for field ``name`` of ``cfg``.

    A tuple field is checked item by item; ``None`` (an unset optional) passes. The message
    names the key, the allowed range and ``why`` (e.g. the data set's size that bounds it), e.g.
    ``n_val=0: must be in 1..59999 (mnist-mlp reports validation accuracy)``.

    Args:
        open_low, open_high: exclude the bound itself (``> low``, ``< high``).
    """
    value = getattr(cfg, name)
    items = value if isinstance(value, tuple) else (value,)

    def inside(v) -> bool:
        above = low is None or (v > low if open_low else v >= low)
        below = high is None or (v < high if open_high else v <= high)
        return above and below

    if all(v is None or inside(v) for v in items):
        return
    each = "each value " if isinstance(value, tuple) else ""
    raise ConfigError(
        f"{name}={shown_value(value)}: {each}must be {_allowed(low, high, open_low, open_high)}"
        + (f" ({why})" if why else "")
    )


def _bound(x: float) -> str:
    """A bound as a user types it: integers in full, other numbers short (``1e-08``)."""
    return str(x) if isinstance(x, int) else f"{x:g}"


def _allowed(low, high, open_low: bool, open_high: bool) -> str:
    """``in 1..10``, ``>= 1``, ``> 0``, ``<= 5`` or ``> 0 and < 1``."""
    lower = None if low is None else f"{'>' if open_low else '>='} {_bound(low)}"
    upper = None if high is None else f"{'<' if open_high else '<='} {_bound(high)}"
    if lower and upper:
        if not (open_low or open_high):
            return f"in {_bound(low)}..{_bound(high)}"
        return f"{lower} and {upper}"
    return lower or upper or "a value"


def shown_value(value) -> str:
    """A config value as a user types it on the command line (``true``, ``none``, ``1,2``)."""
    if isinstance(value, tuple):
        return ",".join(map(shown_value, value))
    if isinstance(value, bool):
        return str(value).lower()
    return "none" if value is None else str(value)


def check_batch_fits(cfg) -> None:
    """Refuse a ``batch_size`` larger than the training set, naming both keys.

    Runs for a config that has a ``batch_size`` key (its own, or its training part's) and a
    ``training_set()`` method returning ``(size, description)``, on the config itself or on one
    of its parts (its data part: :class:`~biaslab.data.mnist.MnistSizes`,
    :class:`~biaslab.data.splits.GeneratedSizes`): the number of training examples and the
    key(s) that set it, e.g. ``(200, "n_train=200")``. A config calls it among its relations,
    after its parts and its own keys are checked.
    """
    batch = flat_values(cfg).get("batch_size")
    holders = [cfg, *(getattr(cfg, f.name) for f in dataclasses.fields(cfg))]
    training_set = next((h.training_set for h in holders if hasattr(h, "training_set")), None)
    if batch is None or training_set is None:
        return
    size, description = training_set()
    if batch > size:
        raise ConfigError(
            f"batch_size={batch}: must be <= {size}, the size of the training set ({description}); "
            "lower batch_size or enlarge the training set"
        )


def smallest_training_set(train_sizes) -> tuple[int, str]:
    """``training_set()`` of a config that trains once per size in ``train_sizes``: the smallest
    size, and the key that sets it (a batch must fit every training set)."""
    return min(train_sizes), f"the smallest of train_sizes={shown_value(tuple(train_sizes))}"


# -- seeds and memory -------------------------------------------------------------------------
SEED_MAX = 2**64 - 1  # the largest seed torch's 64-bit generator takes


def check_seed(seed: Any) -> int:
    """``seed`` if it is an integer in 0..2**64 - 1, else a ConfigError naming the range."""
    if not is_integer(seed):
        raise ConfigError(f"seed={seed!r}: must be an integer in 0..{SEED_MAX}")
    if not 0 <= seed <= SEED_MAX:
        raise ConfigError(f"seed={seed}: must be in 0..{SEED_MAX} (it seeds a 64-bit generator)")
    return seed


def available_memory() -> int:
    """Bytes of memory a new allocation can take now (Linux: MemAvailable; else physical memory)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 2**63  # unknown: never refuse


MEMORY_SHARE = 0.9  # the most of the memory free now that one planned allocation may take


def short_of_memory(nbytes: float) -> int | None:
    """The bytes free now when ``nbytes`` would take more than :data:`MEMORY_SHARE` of them
    (the one rule behind every memory check), else None."""
    free = available_memory()
    return free if nbytes > MEMORY_SHARE * free else None


def check_memory(name: str, nbytes: float, what: str = "the model") -> None:
    """Raise ConfigError when ``nbytes`` (an estimate) would not fit in the free memory.

    Args:
        name: the config key(s) that set the size, named in the message.
        nbytes: estimated peak bytes of what the key makes (weights, gradients, optimizer state,
            activations of a batch).
        what: what needs the memory, for the message.
    """
    free = short_of_memory(nbytes)
    if free is not None:
        raise ConfigError(
            f"{name}: {what} would need about {_gib(nbytes)} of memory, "
            f"more than the {_gib(free)} free on this machine; choose a smaller value"
        )


def _gib(nbytes: float) -> str:
    """``12.5 GiB``; an absurd estimate (an integer beyond any float) stays one short word."""
    gib = min(nbytes, 1e300) / 2**30
    return f"{gib:.1f} GiB" if gib < 1e6 else f"{gib:.3g} GiB"


def parse_set_args(pairs: list[str] | None) -> dict[str, str]:
    """Parse ``["lr=0.1", "epochs=3"]`` into ``{"lr": "0.1", "epochs": "3"}``; one key given two
    different values is refused (which one was meant is not ours to guess)."""
    out: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set expects key=value, got '{pair}'")
        key = key.strip()
        if key in out and out[key] != value:
            raise ConfigError(f"{key} is given two values ({out[key]!r} and {value!r}): give it once")
        out[key] = value
    return out


def to_dict(cfg) -> dict[str, Any]:
    """The config as a JSON-ready dict of its keys, flat (:func:`flat_values`; tuples become lists)."""
    return json.loads(json.dumps(flat_values(cfg)))


def from_dict(cls, data: Mapping[str, Any]):
    """Rebuild a config of class ``cls`` from :func:`to_dict` output (strictly type-checked)."""
    return apply_overrides(cls(), dict(data), context=cls.__name__, strict=True)
