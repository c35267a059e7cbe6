"""Which way a metric improves: the one rule for "lower is better".

Early stopping and keep-the-best (:class:`~biaslab.train.callbacks.Best`), a sweep's ``--select``
(:mod:`biaslab.sweep`) and its index's best configuration all ask this module, so a metric is
never minimised in one place and maximised in another (the vae lab's ``val_kl`` and
``val_reconstruction`` monitors once were).

A metric's key names what it measures in its words (``val_rmse``,
``test_ece_after_temperature``, ``penalty_n200_val_loss``). A key holding one of the words of
:data:`LOWER_IS_BETTER` measures an error, a loss, a divergence or a cost: lower is better.
Every other key (accuracy, AUROC, R², a likelihood, a coverage) improves upwards.
"""

from __future__ import annotations

import math
import re
from typing import Literal

__all__ = ["LOWER_IS_BETTER", "Direction", "better", "improves"]

Direction = Literal["lower", "higher"]

LOWER_IS_BETTER = frozenset(
    {
        "loss",  # any training objective (cross-entropy, MSE, ELBO's negative, ...)
        "nll",  # negative log-likelihood
        "error",  # an error rate or an error of any kind
        "mae",  # mean absolute error
        "mse",  # mean squared error
        "rmse",  # root mean squared error
        "ece",  # expected calibration error (Guo et al. 2017)
        "brier",  # Brier score
        "kl",  # Kullback-Leibler divergence
        "reconstruction",  # a reconstruction term of a loss: −E_q log p(x | z), ‖x − x̂‖²
        "perplexity",
        "seconds",  # a cost in time
    }
)


def better(metric: str) -> Direction:
    """``"lower"`` when the key ``metric`` names an error, a loss or a cost (one of its words,
    split at ``_``, ``-``, ``/``, ``.`` and spaces, is in :data:`LOWER_IS_BETTER`), else
    ``"higher"``."""
    words = re.split(r"[_\-/.\s]+", metric.lower())
    return "lower" if LOWER_IS_BETTER.intersection(words) else "higher"


def improves(value: float, best: float | None, direction: Direction, min_delta: float = 0.0) -> bool:
    """Whether ``value`` beats ``best`` (None: nothing seen yet) by more than ``min_delta`` in
    ``direction``; a value that is nan or infinite never does."""
    if not math.isfinite(value):
        return False
    if best is None:
        return True
    return value < best - min_delta if direction == "lower" else value > best + min_delta
