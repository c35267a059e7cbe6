"""A test score is a sample: its spread over test sets, and the optimism of choosing on it.

The workshop book §5.1: "The fluctuation across different held-out sets is real, especially for
small test sets. A reported 92% can be 87% next week." A model's accuracy on a test set of n
examples drawn without replacement from a population of P examples it never saw, of which a
share p it gets right, is a hypergeometric count over n, with standard deviation

    σ(n) = sqrt(p (1 − p) / n · (P − n) / (P − 1))            (the finite-population correction)

§5.3: "We tried 50 architectures and picked the one with the best test accuracy" has made the test
set a validation set: "The reported test accuracy is then biased upward, often substantially."
With M models' correctness on the population, :func:`selection_optimism` draws a selection set
S (the test set that was reused) and a fresh set F, disjoint, picks the model best on S and
reports its accuracy on both: the difference S − F is the optimism of the reported number.

Everything here reads a boolean matrix of which example each model gets right, so a lab trains
once and resamples for free.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Selection", "resampled_accuracy", "sampling_std", "selection_optimism"]


def _correct(correct, ndim: int) -> np.ndarray:
    correct = np.asarray(correct, dtype=bool)
    if correct.ndim != ndim or correct.shape[-1] < 2:
        shape = "(P,)" if ndim == 1 else "(M, P)"
        raise ValueError(f"need correctness of shape {shape} with P >= 2 examples; got {correct.shape}")
    return correct


def _size(size: int, name: str, population: int) -> int:
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or not 1 <= size <= population:
        raise ValueError(f"{name}={size!r}: give a whole number in 1..{population} (the population)")
    return int(size)


def resampled_accuracy(correct, size: int, draws: int, seed: int) -> np.ndarray:
    """The accuracy on ``draws`` test sets of ``size`` examples, each drawn without replacement
    from the population.

    Shapes:
        correct ``(P,)`` bool (the model right on example i) -> ``(draws,)``.
    """
    correct = _correct(correct, 1)
    size = _size(size, "size", len(correct))
    rng = np.random.default_rng(seed)
    return np.array([correct[rng.choice(len(correct), size, replace=False)].mean() for _ in range(draws)])


def sampling_std(accuracy: float, size: int, population: int) -> float:
    """σ(n): the standard deviation of the accuracy on a test set of ``size`` drawn without
    replacement from ``population`` examples of which a share ``accuracy`` is right."""
    size = _size(size, "size", population)
    if population < 2 or not 0 <= accuracy <= 1:
        raise ValueError(f"accuracy={accuracy}, population={population}: need 0..1 and >= 2")
    return math.sqrt(accuracy * (1 - accuracy) / size * (population - size) / (population - 1))


@dataclass(frozen=True)
class Selection:
    """Per draw: the index of the model best on the selection set, its accuracy there (what
    would be reported) and on the fresh set (what it is). ``optimism`` = reported − fresh."""

    chosen: np.ndarray
    reported: np.ndarray
    fresh: np.ndarray

    @property
    def optimism(self) -> np.ndarray:
        return self.reported - self.fresh


def selection_optimism(correct, select: int, fresh: int, draws: int, seed: int) -> Selection:
    """Choose the best of M models on a selection set of ``select`` examples, then score the
    choice on a disjoint fresh set of ``fresh`` examples, ``draws`` times (ties: the first model).

    Shapes:
        correct ``(M, P)`` bool -> a :class:`Selection` of ``(draws,)`` arrays.
    """
    correct = _correct(correct, 2)
    population = correct.shape[1]
    select = _size(select, "select", population)
    fresh = _size(fresh, "fresh", population - select)
    rng = np.random.default_rng(seed)
    chosen, reported, later = [], [], []
    for _ in range(draws):
        order = rng.permutation(population)
        on_s = correct[:, order[:select]].mean(1)  # (M,)
        best = int(np.argmax(on_s))
        chosen.append(best)
        reported.append(on_s[best])
        later.append(correct[best, order[select : select + fresh]].mean())
    return Selection(np.array(chosen), np.array(reported), np.array(later))
