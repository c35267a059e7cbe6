"""The evidence a model evaluation hands to :func:`~biaslab.evaluate.decision.decide`: a
learning curve and the measurements of the final model, for a classifier (:class:`Evidence`:
error rates, accuracy, calibration) or a regression (:class:`RegressionEvidence`: errors in the
target's unit against the mean predictor's). Every number is checked when the evidence is made,
one clear line per bad value; :func:`last_drop` reads a curve's last step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from biaslab.checks import check_error, check_fraction, check_number, check_sequence, check_sizes

__all__ = ["Evidence", "RegressionEvidence", "last_drop"]


def _check_curves(evidence, check_error, shift_measure: str) -> None:
    """Check and keep (as tuples of Python numbers) the learning curves of ``evidence``.

    Any sequence (a list, a tuple, a NumPy array) is kept as a tuple of Python numbers, so the
    evidence compares, hashes and serialises the same whatever it was built from. ``check_error``
    checks one error of a curve; ``shift_measure`` names the test measurement under the shift
    that goes with ``shift_val_errors``.
    """
    sizes = check_sizes(evidence.train_sizes, "train_sizes")
    object.__setattr__(evidence, "train_sizes", sizes)
    for curve in ("val_errors", "shift_val_errors"):
        errors = getattr(evidence, curve)
        if errors is not None or curve == "val_errors":
            errors = check_sequence(errors, curve)
            errors = tuple(check_error(e, f"{curve}[{i}]") for i, e in enumerate(errors))
            object.__setattr__(evidence, curve, errors)
    if len(sizes) != len(evidence.val_errors) or len(sizes) < 2:
        raise ValueError(
            "a learning curve needs at least two (size, error) points of equal number: got "
            f"{len(sizes)} train_sizes and {len(evidence.val_errors)} val_errors"
        )
    if list(sizes) != sorted(set(sizes)):
        raise ValueError(f"train_sizes must increase, got {list(sizes)}")
    if (getattr(evidence, shift_measure) is None) != (evidence.shift_val_errors is None):
        raise ValueError(f"{shift_measure} and shift_val_errors go together: give both or neither")
    if evidence.shift_val_errors is not None and len(evidence.shift_val_errors) != len(sizes):
        raise ValueError("shift_val_errors needs one error per training-set size")


def _check_optional(evidence, names: Sequence[str], check) -> None:
    """Check and keep each of ``names`` of ``evidence`` that is given (not None)."""
    for name in names:
        if getattr(evidence, name) is not None:
            object.__setattr__(evidence, name, check(getattr(evidence, name), name))


@dataclass(frozen=True)
class Evidence:
    """What the evaluation of a classifier measured.

    Args:
        train_sizes: training-set sizes of the learning curve, increasing integers >= 1.
        val_errors: validation error (1 − accuracy) at each size.
        accuracy: accuracy on the held-out (test) split of the final model.
        ece: its expected calibration error.
        shift_accuracy: its accuracy under the shift expected in use (None: no shift expected).
        shift_val_errors: the validation error under that shift at each size of the curve
            (required with ``shift_accuracy``: whether more data mends a shift failure is read
            off this curve).
        ood_auroc: the OOD detector's AUROC on inputs it must flag (None: not measured).

    Every number is checked (a fraction in [0, 1] where it is one; a bool is refused) and every
    curve, given as any 1-D sequence (list, tuple, NumPy array), is kept as a tuple of Python
    numbers. A regression's errors, in the target's unit, go in :class:`RegressionEvidence`.
    """

    train_sizes: Sequence[int]
    val_errors: Sequence[float]
    accuracy: float
    ece: float
    shift_accuracy: float | None = None
    shift_val_errors: Sequence[float] | None = None
    ood_auroc: float | None = None

    def __post_init__(self):
        why = " (an error rate, 1 − accuracy; a regression's errors go in RegressionEvidence)"
        _check_curves(self, lambda e, name: check_fraction(e, name, why=why), "shift_accuracy")
        for share in ("accuracy", "ece"):
            object.__setattr__(self, share, check_fraction(getattr(self, share), share))
        _check_optional(self, ("shift_accuracy", "ood_auroc"), check_fraction)


def _check_baseline(value, name: str) -> float:
    """The mean predictor's error: a finite number > 0 (a relative error divides by it)."""
    why = " (the mean predictor's error, which a relative error divides by)"
    return check_number(value, name, 0.0, low_open=True, kind="a finite number", why=why)


def _check_label(value, name: str, empty: bool) -> str:
    """A label for reports (a unit, a metric's name): a string, empty only where ``empty``."""
    if not isinstance(value, str) or not (empty or value.strip()):
        what = "a string" if empty else "a non-empty string"
        raise ValueError(f"{name} must be {what}, got {value!r}")
    return value.strip()


@dataclass(frozen=True)
class RegressionEvidence:
    """What the evaluation of a regression model measured: errors in the target's unit.

    Args:
        train_sizes: training-set sizes of the learning curve, increasing integers >= 1.
        val_errors: the validation error (``metric``, in ``unit``) at each size.
        test_error: the error of the final model on the held-out (test) split.
        baseline_error: the mean predictor's error on that split (predicting the training
            targets' mean for every input), > 0; required by a relative requirement
            (``max_relative_error``). None: not measured.
        unit: the target's unit, for reports (e.g. "eV"; "" for a unitless score).
        metric: the error's name, for reports: "MAE" (default), "RMSE", ...
        shift_error: the error under the shift expected in use (None: no shift expected).
        shift_val_errors: the validation error under that shift at each size of the curve
            (required with ``shift_error``).
        shift_baseline_error: the mean predictor's error under the shift, > 0 (required by
            ``max_relative_shift_error``; only with ``shift_error``).
        ood_auroc: the OOD detector's AUROC on inputs it must flag (None: not measured).

    Every error is a finite number >= 0 and every baseline > 0 (a bool is refused); curves are
    kept as tuples of Python numbers, as in :class:`Evidence`.
    """

    train_sizes: Sequence[int]
    val_errors: Sequence[float]
    test_error: float
    baseline_error: float | None = None
    unit: str = ""
    metric: str = "MAE"
    shift_error: float | None = None
    shift_val_errors: Sequence[float] | None = None
    shift_baseline_error: float | None = None
    ood_auroc: float | None = None

    def __post_init__(self):
        _check_curves(self, check_error, "shift_error")
        object.__setattr__(self, "test_error", check_error(self.test_error, "test_error"))
        _check_optional(self, ("shift_error",), check_error)
        _check_optional(self, ("baseline_error", "shift_baseline_error"), _check_baseline)
        _check_optional(self, ("ood_auroc",), check_fraction)
        object.__setattr__(self, "unit", _check_label(self.unit, "unit", empty=True))
        object.__setattr__(self, "metric", _check_label(self.metric, "metric", empty=False))
        if self.shift_baseline_error is not None and self.shift_error is None:
            raise ValueError("shift_baseline_error goes with shift_error: give shift_error too")

    @property
    def relative_error(self) -> float | None:
        """The test error as a share of the mean predictor's (None without ``baseline_error``)."""
        return None if self.baseline_error is None else self.test_error / self.baseline_error

    @property
    def shift_relative_error(self) -> float | None:
        """The error under the shift as a share of the mean predictor's there (or None)."""
        if self.shift_baseline_error is None:
            return None
        return self.shift_error / self.shift_baseline_error


def last_drop(errors: Sequence[float]) -> float:
    """The relative fall of an error over a curve's last step: ``(e[-2] − e[-1]) / e[-2]``
    (0 when ``e[-2]`` is 0; negative when the error rose)."""
    if len(check_sequence(errors, "errors")) < 2:
        raise ValueError(f"errors needs at least two points to have a last step, got {len(errors)}")
    previous = check_number(errors[-2], f"errors[{len(errors) - 2}]", 0.0)
    last = check_number(errors[-1], f"errors[{len(errors) - 1}]", 0.0)
    return (previous - last) / previous if previous > 0 else 0.0
