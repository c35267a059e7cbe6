"""What a function fitted on a grid can and cannot be: monotone or not, and the best monotone fit.

A ReLU network of width 1 on one input computes a monotone function (``biaslab.nn.narrow``;
Hanin and Sellke 2017, quoted by the ML-for-physics slides, 'Universal approximation theorem:
depth'). On a grid x_1 < ... < x_n that shows as a sequence of values v_i whose steps
Δ_i = v_{i+1} − v_i never change sign: :func:`sign_changes` counts the changes of sign between
consecutive non-zero steps (exactly flat steps, Δ_i = 0, are skipped: a ReLU's flat pieces are
monotone both ways), and :func:`is_monotone` is that count being 0.

No monotone function can fit a non-monotone target y better than the best monotone sequence,

    m* = argmin_{m_1 ≤ ... ≤ m_n  or  m_1 ≥ ... ≥ m_n}  (1/n) Σ_i (m_i − y_i)²,

isotonic regression in the better of the two directions, computed by the pool-adjacent-violators
algorithm (:func:`monotone_fit`: equal to ``sklearn.isotonic.IsotonicRegression``, tested).
:func:`best_monotone_fit` returns m* and its mean squared error, the floor no width-1 network
evaluated on that grid can go below.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["MonotoneFit", "best_monotone_fit", "is_monotone", "monotone_fit", "sign_changes"]


def _sequence(values) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 1 or len(values) < 1 or not np.isfinite(values).all():
        raise ValueError(f"need a finite sequence of shape (n,); got shape {values.shape}")
    return values


def sign_changes(values) -> int:
    """How often the steps of ``values`` change sign, exactly flat steps skipped.

    Shapes:
        values ``(n,)`` -> a count in 0..n−2.
    """
    steps = np.diff(_sequence(values))  # (n-1,)
    signs = np.sign(steps[steps != 0])
    return int(np.count_nonzero(signs[1:] != signs[:-1]))


def is_monotone(values) -> bool:
    """Whether ``values`` never go up after going down, nor down after going up."""
    return sign_changes(values) == 0


def monotone_fit(values, increasing: bool = True) -> np.ndarray:
    """The non-decreasing (or, with ``increasing=False``, non-increasing) sequence closest to
    ``values`` in squared error: pool adjacent violators, each block the mean of its values.

    Shapes:
        values ``(n,)`` -> ``(n,)`` float64.
    """
    y = _sequence(values) if increasing else -_sequence(values)
    means: list[float] = []
    counts: list[int] = []
    for value in y:
        means.append(float(value))
        counts.append(1)
        while len(means) > 1 and means[-2] > means[-1]:  # a violator: pool the last two blocks
            mean, count = means.pop(), counts.pop()
            total = counts[-1] + count
            means[-1] = (means[-1] * counts[-1] + mean * count) / total
            counts[-1] = total
    fit = np.repeat(np.array(means), counts)
    return fit if increasing else -fit


@dataclass(frozen=True)
class MonotoneFit:
    """The best monotone fit of a sequence.

    Attributes:
        values: m*, shape ``(n,)``.
        increasing: whether m* is the non-decreasing fit (else the non-increasing one).
        mse: (1/n) Σ_i (m*_i − y_i)².
    """

    values: np.ndarray
    increasing: bool
    mse: float


def best_monotone_fit(values) -> MonotoneFit:
    """The monotone sequence, of either direction, closest to ``values`` in squared error.

    Shapes:
        values ``(n,)`` -> ``MonotoneFit`` with ``values`` ``(n,)``.
    """
    y = _sequence(values)
    fits = {up: monotone_fit(y, up) for up in (True, False)}
    errors = {up: float(np.mean((fit - y) ** 2)) for up, fit in fits.items()}
    increasing = errors[True] <= errors[False]
    return MonotoneFit(fits[increasing], increasing, errors[increasing])
