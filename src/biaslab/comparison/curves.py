"""Learning curves of a comparison: would more data help this candidate? (the workshop's Day 5)

The validation error on nested subsets of the training rows, each trained for the same number of
steps, with the power law through it extrapolated to 2x and 4x the data: a curve still falling
steeply says "collect more data", a flat one "redesign" (or ship).

:func:`learning_curve` -> :class:`Curve` (sizes, validation errors and their spread, the power
law, its extrapolation, each seed's errors, notes: a size missing a class is left out and said);
:func:`curve_of` makes the same summary of errors measured elsewhere (the QM9 lab's sizes);
:func:`nested_order` gives each seed's nested, stratified order of the training rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from biaslab.checks import is_integer
from biaslab.comparison.batched import fit_together, small_enough
from biaslab.comparison.fitting import Fitted, Trial, errors, fit
from biaslab.comparison.prepared import Prepared
from biaslab.errors import ConfigError
from biaslab.evaluate.scaling import PowerLaw, fit_power_law
from biaslab.train.seed import derive_seed

if TYPE_CHECKING:
    from biaslab.train.recipes import TrainSetup

__all__ = ["Curve", "curve_of", "fit_with_curve", "learning_curve", "nested_order"]


@dataclass(frozen=True)
class Curve:
    """Validation error against the number of training rows (Day 5: would more data help?).

    Args:
        sizes: training-set sizes, increasing, the last the whole training set.
        val_errors: per size, the mean over seeds of the validation error (classify 1 − accuracy,
            regress MAE in the target's unit).
        val_errors_std: per size, their standard deviation over seeds (sample, n − 1; 0 for one
            seed).
        power_law: error ≈ a · n^k fitted (least squares on log–log axes) through the sizes whose
            mean error is positive, None with fewer than two.
        extrapolated: the fitted law at 2x and 4x the training set ({} without a law).
        per_seed: per size, the error of each seed (in the order of ``seeds``).
        notes: what was left out and why, one sentence each.
    """

    sizes: list[int]
    val_errors: list[float]
    val_errors_std: list[float]
    power_law: PowerLaw | None
    extrapolated: dict[int, float]
    per_seed: list[list[float]] = field(default_factory=list)
    notes: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        """The curve as plain data (what a task returns to its driver); :meth:`from_dict` reads it."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Curve:
        law = data["power_law"]
        return cls(
            sizes=list(data["sizes"]),
            val_errors=list(data["val_errors"]),
            val_errors_std=list(data["val_errors_std"]),
            power_law=None if law is None else PowerLaw(**law),
            extrapolated={int(n): e for n, e in data["extrapolated"].items()},  # JSON's keys are text
            per_seed=[list(errors) for errors in data["per_seed"]],
            notes=tuple(data["notes"]),
        )


def nested_order(y: np.ndarray, task: str, seed: int) -> np.ndarray:
    """A seeded order of the rows whose every prefix is a subset for a learning curve: shuffled,
    and to classify interleaved by class, so that each prefix holds every class in proportion
    (within a row): class c's j-th row (of n_c) goes at (j + ½) / n_c of the way.

    Shapes:
        y (N,) -> (N,) positions.
    """
    order = np.random.default_rng(derive_seed(seed, "compare-subsets")).permutation(len(y))
    if task != "classify":
        return order
    key = np.empty(len(y))
    shuffled = y[order]
    for c in np.unique(shuffled):
        at = np.flatnonzero(shuffled == c)
        key[at] = (np.arange(len(at)) + 0.5) / len(at)
    return order[np.argsort(key, kind="stable")]


def _curve_sizes(n: int, points: int, orders: list[np.ndarray], y: np.ndarray, task: str):
    """Sizes n / 2**k for k = points − 1 .. 0 (distinct, at least one row); to classify, a size
    whose subset misses a class for some seed is left out, and said so."""
    sizes = sorted({n // 2**k for k in range(points)} - {0})
    notes = []
    if task == "classify":
        classes = len(np.unique(y))
        full = [s for s in sizes if all(len(np.unique(y[o[:s]])) == classes for o in orders)]
        if len(full) < len(sizes):
            left_out = ", ".join(str(s) for s in sizes if s not in full)
            notes.append(
                f"{len(full)} of {points} points: the subsets of {left_out} rows miss a class for "
                "some seed, and an error without every class is not comparable"
            )
        sizes = full
    elif len(sizes) < points:
        notes.append(f"{len(sizes)} of {points} points: {n} training rows halve to fewer distinct sizes")
    return sizes, notes


def learning_curve(
    trial: Trial,
    setup_for: Callable[[int, int], TrainSetup],
    *,
    points: int = 4,
    seeds: Sequence[int] = (0, 1),
) -> Curve:
    """The validation error of ``trial.candidate`` on nested subsets of the training rows (each
    training's setup is ``setup_for(size, seed)``, not ``trial.setup``).

    For each seed, one :func:`nested_order` of the training rows (stratified to classify); the
    subset of size n_k = N / 2**k is its first n_k rows, so each subset holds the smaller ones.
    A torch candidate's subset is repeated to the N rows of the whole training set, so every
    point trains for the same number of steps (as :func:`~biaslab.train.recipes.fit_learning_curve`
    does): only the amount of data differs, not the optimisation. The epoch is chosen on
    validation as in :func:`fit_candidate`; the test rows are never read. Those trainings are of
    one architecture on data of one shape: where every subset fits in memory at once they are
    fitted together (:func:`~biaslab.comparison.batched.fit_together`: a batched ensemble, each
    training equal to its own fit up to float rounding).

    Args:
        setup_for: ``setup_for(size, seed)`` returns the :class:`TrainSetup` of one training
            (its own tag and seed).
        points: sizes on the curve (default 4: N/8, N/4, N/2, N); fewer when a subset would miss
            a class (said in ``notes``).
        seeds: each draws its own subsets and trainings (default (0, 1)).
    """
    return _curve(trial, setup_for, points, seeds, with_fit=False)[1]


def fit_with_curve(
    trial: Trial,
    setup_for: Callable[[int, int], TrainSetup],
    *,
    points: int = 4,
    seeds: Sequence[int] = (0, 1),
) -> tuple[Fitted, Curve]:
    """``trial`` fitted as :func:`~biaslab.comparison.fitting.fit` fits it, and its
    :func:`learning_curve`: the candidate's own training (the whole training set, its own setup)
    is one more of the curve's shape, fitted together with them where they are."""
    return _curve(trial, setup_for, points, seeds, with_fit=True)


def _curve(trial, setup_for, points, seeds, with_fit: bool) -> tuple[Fitted | None, Curve]:
    """The curve of :func:`learning_curve`, and ``trial``'s own fit when ``with_fit``."""
    if not is_integer(points) or points < 1:
        raise ConfigError(f"points={points!r}: the number of sizes on the curve, an integer >= 1")
    seeds = list(seeds)
    if not seeds:
        raise ConfigError("seeds=(): a learning curve needs at least one seed")
    candidate, prepared, task = trial.candidate, trial.prepared, trial.task
    n, y = prepared.n_train, prepared.targets["train"]
    orders = [nested_order(y, task, seed) for seed in seeds]
    sizes, notes = _curve_sizes(n, points, orders, y, task)
    repeat_to = n if candidate.engine == "torch" else None  # trees take no steps
    points_trials = [(size, seed, order) for size in sizes for seed, order in zip(seeds, orders)]
    count = len(points_trials) + int(with_fit)
    together = repeat_to is not None and small_enough(count, n, prepared.input_shape)

    def trial_at(size, seed, order) -> Trial:
        subset = prepared.train_subset(order[:size], repeat_to=repeat_to)
        return replace(trial, prepared=subset, setup=setup_for(size, seed))

    own = None
    if together:  # every training the same rows and steps: one batched training when it can be
        trials = [trial_at(*point) for point in points_trials]
        fits = fit_together([trial, *trials] if with_fit else trials)
        own, fits = (fits[0], fits[1:]) if with_fit else (None, fits)
        errors_at = [_validation_error(f, t.prepared) for f, t in zip(fits, trials)]
    else:  # one at a time (an estimator; data too large to hold every subset at once)
        own = fit(trial) if with_fit else None
        errors_at = []
        for point in points_trials:
            one = trial_at(*point)
            errors_at.append(_validation_error(fit(one), one.prepared))
    per_seed = [errors_at[k : k + len(seeds)] for k in range(0, len(errors_at), len(seeds))]
    return own, curve_of(sizes, per_seed, (2 * n, 4 * n), notes)


def curve_of(
    sizes: Sequence[int], per_seed: Sequence[Sequence[float]], extrapolate_to: Sequence[int], notes=()
) -> Curve:
    """A :class:`Curve` from the validation errors measured at ``sizes`` (one list per size, a
    value per seed): their mean and standard deviation, the power law through the positive means
    (least squares on log–log axes) and its value at each of ``extrapolate_to``."""
    notes = list(notes)
    per_seed = [list(map(float, e)) for e in per_seed]
    means = [float(np.mean(e)) for e in per_seed]
    stds = [float(np.std(e, ddof=1)) if len(e) > 1 else 0.0 for e in per_seed]
    fit_at = [(s, e) for s, e in zip(sizes, means) if e > 0]
    law = None
    if len(fit_at) >= 2:
        law = fit_power_law(*zip(*fit_at))
    else:
        notes.append("no power law: fewer than two sizes with a positive validation error")
    extrapolated = {} if law is None else {int(m): float(law(m)) for m in extrapolate_to}
    return Curve(list(sizes), means, stds, law, extrapolated, per_seed, tuple(notes))


def _validation_error(fitted: Fitted, prepared: Prepared) -> float:
    """1 − validation accuracy (classify) or the validation MAE in the target's unit (regress)."""
    out = fitted.outputs_on(prepared, "val")
    targets = prepared.targets["val"]
    if prepared.task == "classify":
        return 1.0 - float(np.mean(out.argmax(axis=1) == targets))
    return errors(prepared.to_unit(out), targets)["mae"]
