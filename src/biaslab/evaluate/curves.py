"""Reading learning curves: label a (train, validation) loss curve by its shape.

The notes name four characteristic shapes of a learning curve:

* **diverging**   — the loss blows up: a non-finite value, a training loss that climbs far above
  the loss of an uninformed guess, or one that ends higher than it started;
* **underfitting** — training and validation loss stay high and close together: the model has
  not (yet) fitted even the training data;
* **overfitting**  — the training loss keeps falling while the validation loss has turned and
  risen clearly above its minimum: the model memorises the training set;
* **healthy**      — both fall and the validation loss stays near its minimum.

The rules are applied in that order; the thresholds are arguments with documented defaults.

:func:`size_needed` reads an error against a size (a code, a model): the smallest size about as good
as the best. :func:`window_decades` reads a learning-rate sweep: how wide the range of rates is whose
final loss reaches a target (the lecture notes §3 call Adam "often more robust to hyperparameter
choices": a wider window).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from biaslab.checks import check_number

SHAPES = ("healthy", "overfitting", "underfitting", "diverging")


@dataclass(frozen=True)
class CurveReading:
    """The label and the numbers that decided it."""

    shape: str
    reason: str


def classify_curve(
    train_loss: Sequence[float],
    val_loss: Sequence[float],
    chance_loss: float | None = None,
    blowup: float = 2.0,
    underfit_fraction: float = 0.25,
    gap_fraction: float = 0.25,
    overfit_rise: float = 0.1,
) -> CurveReading:
    """Label one learning curve as healthy, overfitting, underfitting or diverging.

    Args:
        train_loss: training loss per epoch.
        val_loss: validation loss per epoch (same length; may be shorter if training stopped).
        chance_loss: the loss of an uninformed prediction (``ln C`` for C balanced classes);
            default: the first training loss stands in for it.
        blowup: diverging if the training loss ever exceeds ``blowup x chance_loss``
            (default 2.0).
        underfit_fraction: underfitting if the final training loss is above this fraction of
            ``chance_loss`` (default 0.25) ...
        gap_fraction: ... and the final validation loss is within this fraction of the final
            training loss (default 0.25): both high, close together.
        overfit_rise: overfitting if the final validation loss is more than this fraction above
            its minimum (default 0.1) while the training loss fell after that minimum.

    Returns:
        A :class:`CurveReading` with ``shape`` in :data:`SHAPES` and a one-line ``reason``.
    """
    train = [float(v) for v in train_loss]
    val = [float(v) for v in val_loss]
    if not train:
        raise ValueError("an empty learning curve has no shape")
    # A NaN threshold makes every comparison false and labels any curve healthy: refuse it.
    if chance_loss is not None:
        chance_loss = check_number(chance_loss, "chance_loss", 0.0, low_open=True)
    blowup = check_number(blowup, "blowup", 0.0, low_open=True)
    underfit_fraction = check_number(underfit_fraction, "underfit_fraction", 0.0)
    gap_fraction = check_number(gap_fraction, "gap_fraction", 0.0)
    overfit_rise = check_number(overfit_rise, "overfit_rise", 0.0)
    # 1. diverging
    bad = [i + 1 for i, v in enumerate(train + val) if not math.isfinite(v)]
    if bad:
        return CurveReading("diverging", "the loss became non-finite")
    reference = chance_loss if chance_loss is not None else train[0]
    if max(train) > blowup * reference:
        return CurveReading(
            "diverging",
            f"training loss reached {max(train):.3g}, more than "
            f"{blowup:g}x the uninformed loss {reference:.3g}",
        )
    if len(train) > 1 and train[-1] > train[0]:
        return CurveReading("diverging", f"training loss rose from {train[0]:.3g} to {train[-1]:.3g}")
    # 2. underfitting
    final_train = train[-1]
    final_val = val[-1] if val else final_train
    if (
        final_train > underfit_fraction * reference
        and abs(final_val - final_train) <= gap_fraction * final_train
    ):
        return CurveReading(
            "underfitting",
            f"final training loss {final_train:.3g} is still above "
            f"{underfit_fraction:g}x the uninformed loss, and "
            f"validation ({final_val:.3g}) is close to it",
        )
    # 3. overfitting
    if val:
        best = min(range(len(val)), key=val.__getitem__)
        rise = (final_val - val[best]) / max(val[best], 1e-12)
        if rise > overfit_rise and train[-1] < train[min(best, len(train) - 1)]:
            return CurveReading(
                "overfitting",
                f"validation loss rose {rise:.0%} above its minimum "
                f"{val[best]:.3g} (epoch {best + 1}) while training "
                f"loss kept falling to {final_train:.3g}",
            )
    # 4. healthy
    return CurveReading(
        "healthy",
        f"training loss fell to {final_train:.3g}; validation loss {final_val:.3g} stays near its minimum",
    )


def window_decades(lrs: Sequence[float], losses: Sequence[float], target: float) -> float:
    """The width in decades of the learning rates whose loss reaches ``target``: the longest run
    of neighbouring grid rates whose loss is at most ``target``, one grid step per rate (each
    rate standing for the step around it); 0 when none does. A NaN loss (a diverged training)
    does not reach it.

    Args:
        lrs: increasing learning rates, evenly spaced on a log axis (a grid such as
            ``np.logspace(-5, 0, 21)``).
        losses: the loss each rate ended with, same length.
        target: the loss a rate must reach.
    """
    lrs, losses = np.asarray(lrs, dtype=float), np.asarray(losses, dtype=float)
    if lrs.ndim != 1 or lrs.shape != losses.shape or len(lrs) < 2:
        raise ValueError(f"lrs and losses must be 1-D of one length >= 2, got {lrs.shape} and {losses.shape}")
    if (lrs <= 0).any():
        raise ValueError("learning rates must be positive (a window is measured on a log axis)")
    steps = np.diff(np.log10(lrs))
    if not evenly_logspaced(lrs):
        raise ValueError(
            "learning rates must increase evenly on a log axis (within 1% of a step), as np.logspace"
        )
    best, run = 0, 0
    for loss in losses:
        run = run + 1 if loss <= target else 0  # NaN <= target is False: a diverged rate breaks the run
        best = max(best, run)
    return best * float(steps.mean())


def evenly_logspaced(values: Sequence[float]) -> bool:
    """Whether ``values`` increase by the same factor at every step, within 1% of a step (a grid
    such as ``np.logspace(-5, 0, 21)`` printed to three digits is)."""
    values = np.asarray(values, dtype=float)
    if values.ndim != 1 or len(values) < 2 or (values <= 0).any():
        return False
    steps = np.diff(np.log10(values))
    return bool((steps > 0).all() and np.abs(steps - steps.mean()).max() <= 0.01 * steps.mean())


def size_needed(sizes: Sequence[float], errors: Sequence[float], within: float = 0.25):
    """The smallest of ``sizes`` whose error is at most ``(1 + within)`` times the lowest error over
    all of them: where a curve of error against size has come close to what the largest sizes give.

    Args:
        sizes: increasing sizes (code dimensions, widths, ...).
        errors: the error at each size, positive and finite.
        within: the tolerance, a share of the lowest error (default 0.25).
    """
    sizes, errors = list(sizes), np.asarray(errors, dtype=float)
    if len(sizes) == 0 or len(sizes) != len(errors) or sorted(set(sizes)) != sizes:
        raise ValueError(
            f"sizes must be increasing and as many as the errors, got {sizes} and {len(errors)} errors"
        )
    if not (np.isfinite(errors).all() and (errors > 0).all()):
        raise ValueError("errors must be positive finite numbers")
    if not within >= 0:
        raise ValueError(f"within={within!r}: give a share >= 0")
    good = errors <= (1 + within) * errors.min()
    return sizes[int(np.argmax(good))]  # the first size that is good enough
