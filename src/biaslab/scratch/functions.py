"""Generic math functions that work on NumPy arrays, dual numbers and reverse-mode tensors.

A function written once with these, e.g.

    z = lambda x: 2 * x[0] + x[0] * sin(x[1]) + x[1] ** 3

can be evaluated three ways without change:

    z(np.array([1.0, 2.0]))                  a plain number            (NumPy)
    z(Dual(np.array([1.0, 2.0]), ...))       number + directional derivative  (forward mode)
    z(Tensor(np.array([1.0, 2.0]), ...))     number + a graph to run backward (reverse mode)

Dispatch is duck-typed: if the argument has a method of the same name (``Dual.sin``,
``Tensor.sin``), call it; otherwise fall back to the NumPy function. That is also what lets
duals NEST: the rules inside ``Dual`` call these functions on their value and tangent, which
may themselves be duals.
"""

from __future__ import annotations

import numpy as np

__all__ = ["cos", "exp", "log", "relu", "sigmoid", "sin", "stack", "tanh"]


def _dispatch(name: str, x, numpy_fn):
    method = getattr(x, name, None)  # Dual.sin, Tensor.sin, ...; NumPy arrays have none
    return method() if method is not None else numpy_fn(x)


def sin(x):
    """sin(x), elementwise."""
    return _dispatch("sin", x, np.sin)


def cos(x):
    """cos(x), elementwise."""
    return _dispatch("cos", x, np.cos)


def exp(x):
    """exp(x), elementwise."""
    return _dispatch("exp", x, np.exp)


def log(x):
    """Natural logarithm, elementwise."""
    return _dispatch("log", x, np.log)


def tanh(x):
    """tanh(x), elementwise."""
    return _dispatch("tanh", x, np.tanh)


def _np_sigmoid(x):
    # 1/(1 + e^-x) for x >= 0 and e^x/(1 + e^x) for x < 0: e^-|x| <= 1 never overflows.
    x = np.asarray(x, dtype=float)
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def sigmoid(x):
    """The logistic function 1 / (1 + e^-x), elementwise."""
    return _dispatch("sigmoid", x, _np_sigmoid)


def _np_relu(x):
    return np.maximum(np.asarray(x, dtype=float), 0.0)


def relu(x):
    """max(x, 0), elementwise."""
    return _dispatch("relu", x, _np_relu)


def stack(xs, axis: int = 0):
    """Join a sequence of equally shaped items along a new axis.

    Duals:    stack(values) + stack(tangents)·ε  (see ``Dual``; plain items are constants)
    Tensors:  ``biaslab.scratch.autodiff.stack`` (records the op for the backward pass)
    anything else: ``np.stack``.

    Dispatch is duck-typed like the functions above: a type that knows how to stack a list
    holding its instances says so with a ``_stack_items(xs, axis)`` static method and a
    ``_stack_rank``; the highest rank present wins (a Dual may hold Tensors, not the reverse).
    """
    xs = list(xs)
    kinds = [type(x) for x in xs if hasattr(type(x), "_stack_items")]
    if kinds:
        return max(kinds, key=lambda kind: kind._stack_rank)._stack_items(xs, axis)
    return np.stack(xs, axis=axis)
