"""Argument checks, one message style naming the argument: the library's one place for them.

Each check returns the value as a plain Python number (or a float64 array) so a caller can keep
the converted value, and raises ``ValueError`` with a message of the form
``"<name> must be <what>, got <value>"``. A bool is refused wherever a number is wanted: it is an
``int`` subclass, so ``accuracy=True`` would otherwise pass as 1. :func:`is_integer` and
:func:`is_number` answer the same questions without raising. NumPy is imported only by
:func:`check_finite_array` and torch only by :func:`as_generator`: this module sits at the
bottom of the layers, and ``biaslab list`` and ``biaslab config`` import neither.
"""

from __future__ import annotations

import math
import numbers

from biaslab.formatting import quoted

__all__ = [
    "as_generator",
    "check_finite_array",
    "check_fraction",
    "check_integer",
    "check_number",
    "check_sequence",
    "check_sizes",
    "is_integer",
    "is_number",
]


def _scalar(value):
    """A 0-d NumPy array or torch tensor as its Python number; anything else unchanged."""
    if getattr(value, "ndim", None) == 0 and hasattr(value, "item"):  # NumPy's scalars too
        return value.item()
    return value


def _got(value) -> str:
    value = _scalar(value)
    return f"{value!r} (a bool)" if isinstance(value, bool) else quoted(value)


def _interval(low: float, high: float, low_open: bool, high_open: bool) -> str:
    if math.isfinite(low) and math.isfinite(high):
        return f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    if math.isfinite(low):
        return f"{'>' if low_open else '>='} {low:g}"
    if math.isfinite(high):
        return f"{'<' if high_open else '<='} {high:g}"
    return ""


def check_number(
    value,
    name: str,
    low: float = -math.inf,
    high: float = math.inf,
    *,
    low_open: bool = False,
    high_open: bool = False,
    kind: str = "a finite number",
    why: str = "",
) -> float:
    """``value`` as a float: a real number (not a bool), finite, within the bounds.

    Args:
        low, high: the bounds (infinite: none); ``low_open`` / ``high_open`` exclude them.
        kind: what the message calls the value ("a finite number", "a fraction", ...).
        why: appended to the message (e.g. ": the share of ...").
    """
    v = _scalar(value)
    ok = is_number(v) and math.isfinite(v)
    if ok:
        v = float(v)
        ok = (v > low if low_open else v >= low) and (v < high if high_open else v <= high)
    if not ok:
        where = _interval(low, high, low_open, high_open)
        raise ValueError(f"{name} must be {kind}{' ' + where if where else ''}{why}, got {_got(value)}")
    return v


def check_fraction(value, name: str, why: str = "") -> float:
    """``value`` as a float in [0, 1] (an accuracy, an ECE, an AUROC, a threshold on either)."""
    return check_number(value, name, 0.0, 1.0, kind="a fraction", why=why)


def is_integer(value) -> bool:
    """A Python or NumPy integer (or a 0-d array or tensor holding one), not a bool, not a float."""
    v = _scalar(value)
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def is_number(value) -> bool:
    """A real number (int, float, NumPy's), not a bool; nan and inf included."""
    v = _scalar(value)
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def check_integer(value, name: str, low: int = 1, high: int | None = None, why: str = "") -> int:
    """``value`` as an int: a Python or NumPy integer (not a bool, not a float), in [low, high]."""
    v = _scalar(value)
    if not is_integer(v) or v < low or (high is not None and v > high):
        where = f"in {low}..{high}" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be an integer {where}{why}, got {_got(value)}")
    return int(v)


def check_sizes(values, name: str, low: int = 1) -> tuple[int, ...]:
    """A sequence (list, tuple, 1-D array) of integers >= ``low`` as a tuple of Python ints."""
    seq = check_sequence(values, name)
    return tuple(check_integer(v, f"{name}[{i}]", low) for i, v in enumerate(seq))


def check_sequence(values, name: str) -> list:
    """A 1-D sequence (list, tuple, NumPy array, tensor) as a list; a string or a scalar is refused."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise ValueError(f"{name} must be a sequence of numbers, got {values!r}")
    if getattr(values, "ndim", 1) != 1:
        raise ValueError(f"{name} must be 1-D, got shape {tuple(values.shape)}")
    return list(values)


def check_finite_array(x, name: str, ndim: int | None = None, min_len: int = 0):
    """``x`` (array, tensor or sequence) as a float64 array of finite values.

    Args:
        ndim: the number of dimensions required (None: any).
        min_len: the fewest rows (entries along the first axis) required.
    """
    import numpy as np

    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be an array of real numbers: {exc}") from None
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {a.shape}")
    if a.ndim > 0 and len(a) < min_len:
        raise ValueError(
            f"{name} needs at least {min_len} {'entry' if min_len == 1 else 'entries'}, got {len(a)}"
        )
    if not np.isfinite(a).all():
        where = tuple(int(i) for i in np.argwhere(~np.isfinite(a))[0])
        at = f"{name}[{', '.join(map(str, where))}]" if where else name
        raise ValueError(f"{name} must be finite numbers; {at} is {a[where]}")
    return a


def check_error(value, name: str) -> float:
    """An error in a target's unit (a regression's MAE or RMSE): a finite number >= 0."""
    return check_number(value, name, 0.0, kind="an error (a finite number)")


def as_generator(generator):
    """``generator`` itself, or a fresh CPU ``torch.Generator`` seeded with it (a seed: an
    integer >= 0): randomness is explicit, never torch's global state."""
    import torch

    if isinstance(generator, torch.Generator):
        return generator
    seed = check_integer(generator, "generator", 0, why=" (a seed) or a torch.Generator")
    return torch.Generator().manual_seed(seed)
