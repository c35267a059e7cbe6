"""Scaling laws from measurements: fit y ≈ a·x^k on log–log axes.

The notes state costs as powers: attention costs O(T²·C) in the sequence length T, a dense layer
on an n-pixel image O(n²) weights. A measured cost confirms such a claim when the exponent of the
fitted power law, over the large-x end where lower-order terms have faded, is the one stated.

:func:`fit_power_law` -> :class:`PowerLaw` (exponent, prefactor, r²); :func:`compute_frontier`:
the points of a loss-against-compute cloud that no cheaper point beats (Kaplan et al. 2020's
compute-efficient frontier, to which their L(C_min) law is fitted).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PowerLaw", "compute_frontier", "fit_power_law"]


@dataclass(frozen=True)
class PowerLaw:
    """y ≈ prefactor · x^exponent, fitted by least squares on (log x, log y)."""

    exponent: float
    prefactor: float
    r_squared: float  # of the straight-line fit on log–log axes

    def __call__(self, x):
        return self.prefactor * np.asarray(x, dtype=float) ** self.exponent


def fit_power_law(x, y) -> PowerLaw:
    """Least-squares line through (log x, log y): log y = log a + k·log x.

    Args:
        x, y: positive measurements, at least two distinct x.

    Returns:
        A :class:`PowerLaw` with the exponent k, the prefactor a and the fit's R².
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"x and y must be 1-D and of equal length, got {x.shape} and {y.shape}")
    if len(np.unique(x)) < 2:
        raise ValueError("a power law needs at least two distinct x values")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("x and y must be finite numbers (a NaN or inf would make the fit NaN)")
    if (x <= 0).any() or (y <= 0).any():
        raise ValueError("a power law is fitted on log axes: every x and y must be positive")
    log_x, log_y = np.log(x), np.log(y)
    exponent, intercept = np.polyfit(log_x, log_y, 1)
    residual = log_y - (intercept + exponent * log_x)
    spread = ((log_y - log_y.mean()) ** 2).sum()
    r_squared = 1.0 - (residual**2).sum() / spread if spread > 0 else 1.0
    return PowerLaw(float(exponent), float(np.exp(intercept)), float(r_squared))


def compute_frontier(compute, loss) -> np.ndarray:
    """The indices of the compute-efficient points: those whose loss is lower than that of every
    point costing no more compute (ties in compute keep the lower loss once), in increasing
    compute. Many models trained for many steps make a cloud of (compute, loss) points; the
    frontier is its lower envelope, the best loss each budget buys (Kaplan et al. 2020, Fig. 1's
    L(C_min)).

    Args:
        compute, loss: 1-D arrays of equal length, finite.
    """
    compute, loss = np.asarray(compute, dtype=float), np.asarray(loss, dtype=float)
    if compute.shape != loss.shape or compute.ndim != 1 or compute.size == 0:
        raise ValueError(
            "compute and loss must be 1-D, non-empty and of equal length, "
            f"got {compute.shape} and {loss.shape}"
        )
    if not (np.isfinite(compute).all() and np.isfinite(loss).all()):
        raise ValueError("compute and loss must be finite numbers")
    order = np.lexsort((loss, compute))  # by compute, then loss: the best of equal costs first
    kept, best = [], np.inf
    for i in order:
        if loss[i] < best:
            kept.append(i)
            best = loss[i]
    return np.asarray(kept, dtype=int)
