"""Coding cells: the student writes a function the workshop book asks for, and a check compares it
with the library's own implementation on fixed inputs.

The model is the UDL notebooks (Prince): a cell holds a stub, the student fills it in, and the
next cell calls :meth:`~biaslab.notebooks.lab.Lab.check_code`, which runs the student's function
and the library's on the same inputs and says, in one line, whether they agree::

    def forward(x, W1, b1, W2, b2):
        raise NotImplementedError("write the forward pass")   # the stub

    lab.check_code("MLP forward pass", forward, reference=mlp_forward, inputs=[(x, W1, b1, W2, b2)])
    # MLP forward pass: not written yet (write the forward pass)
    # MLP forward pass: not yet: output entry (0, 3) is 0.2 where the library's is 0.7
    # MLP forward pass: correct

:func:`code_mismatch` is the comparison. An output is compared entry by entry, within a
tolerance, after its type and shape: a NumPy array, a torch tensor (detached, on the CPU), a
number, or a tuple / list / dict of them (a function that returns several gradients). A student's
mistake, including an exception their code raises, is a result, not an error: the check prints
what differs (which output, which entry, the library's value against theirs) and the notebook goes
on.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

__all__ = ["NOT_WRITTEN", "code_mismatch"]

NOT_WRITTEN = "not written yet"  # the stub still raises NotImplementedError


def code_mismatch(
    student: Callable, reference: Callable, inputs: Sequence[tuple], *, tolerance: float = 1e-6
) -> str | None:
    """Why ``student`` does not compute what ``reference`` does on every input tuple of
    ``inputs`` (one line), or None when it does.

    A stub that still raises ``NotImplementedError`` gives ``"not written yet (its message)"``;
    any other exception, the exception in one line. Outputs agree when their structure, shapes
    and every entry agree within ``tolerance`` (relative, or absolute near zero). Each input is
    passed to the two functions as fresh copies, so that neither sees what the other changed.
    """
    for number, arguments in enumerate(inputs, start=1):
        where = "" if len(inputs) == 1 else f" on input {number}"
        expected = reference(*_copies(arguments))
        try:
            got = student(*_copies(arguments))
        except NotImplementedError as exc:
            return f"{NOT_WRITTEN}" + (f" ({exc})" if str(exc) else "")
        except Exception as exc:  # the student's code: its error is the answer to report
            return (
                f"your function raised {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            )
        why = _difference(got, expected, "output", tolerance)
        if why is not None:
            return why + where
    return None


def _copies(arguments: tuple) -> tuple:
    return tuple(_copy(a) for a in arguments)


def _copy(value: Any) -> Any:
    """A copy of an argument deep enough that a function changing it in place (an optimizer step
    on a dict of parameter arrays) leaves the other function's copy untouched."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone().requires_grad_(value.requires_grad)
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_copy(item) for item in value)
    return value


def _as_array(value: Any) -> np.ndarray | None:
    """A number, an array or a tensor as a float array; None for anything else."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().double().numpy()
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return value.astype(float)
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return np.asarray(float(value))
    return None


def _difference(got: Any, expected: Any, what: str, tolerance: float) -> str | None:
    """The first difference of ``got`` from ``expected`` (named ``what``), or None."""
    if isinstance(expected, Mapping):
        if not isinstance(got, Mapping) or set(got) != set(expected):
            return f"{what} should be a dict with keys {sorted(map(str, expected))}, not {_kind(got)}"
        for key in expected:
            why = _difference(got[key], expected[key], f"{what} {key!r}", tolerance)
            if why is not None:
                return why
        return None
    if isinstance(expected, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            return f"{what} should be {len(expected)} values (a tuple), not {_kind(got)}"
        for i, (g, e) in enumerate(zip(got, expected)):
            why = _difference(g, e, f"{what} {i + 1}", tolerance)
            if why is not None:
                return why
        return None
    want, have = _as_array(expected), _as_array(got)
    if want is None:  # text, a bool, an object: compared as it is
        return None if got == expected else f"{what} is {got!r} where the library's is {expected!r}"
    if have is None:
        return f"{what} should be {'a number' if want.ndim == 0 else 'an array'}, not {_kind(got)}"
    if have.shape != want.shape:
        return f"{what} has shape {tuple(have.shape)} where the library's has {tuple(want.shape)}"
    close = np.isclose(have, want, rtol=tolerance, atol=tolerance, equal_nan=True)
    if close.all():
        return None
    index = tuple(int(i) for i in np.argwhere(~close)[0])
    entry = f" entry {index if len(index) > 1 else index[0]}" if index else ""
    mine, theirs = have[index] if index else have, want[index] if index else want
    shown = _short(mine), _short(theirs)
    if shown[0] == shown[1]:  # close but not within the tolerance: the digits where they part
        shown = repr(float(mine)), repr(float(theirs))
    return f"{what}{entry} is {shown[0]} where the library's is {shown[1]}"


def _short(value: Any) -> str:
    number = float(value)
    return repr(number) if not math.isfinite(number) or number.is_integer() else f"{number:.6g}"


def _kind(value: Any) -> str:
    if isinstance(value, (np.ndarray, torch.Tensor)):
        return f"an array of shape {tuple(value.shape)}"
    return f"{type(value).__name__} {value!r}"[:80]
