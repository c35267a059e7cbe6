"""The decision a model evaluation ends in: ship it, collect more data, or redesign it.

"A model is done when you can defend, in front of a stakeholder, both the cases where it works
and the cases where it fails." The evidence (``Evidence``) comes from the Day-5 measurements:

* a **learning curve** over training-set sizes — is the validation error still falling as data
  is added? — measured on the validation digits as they are and, where the use brings a shift,
  on the validation digits under that shift;
* **accuracy** on the held-out (test) split against the requirement;
* **calibration** — the expected calibration error;
* **accuracy under the shift** the model will meet in use (e.g. digits written off-centre);
* **OOD detection** — can inputs it was not made for be flagged (the detector's AUROC)?

The requirements of the use are arguments (``min_accuracy``, ``min_shift_accuracy``,
``min_ood_auroc``, ``max_ece``); ``still_falling`` diagnoses why one is missed: an error that
still fell by more than this fraction over the curve's last step (usually a doubling of the
data) will fall further with more data. :func:`decide` applies these rules in order and returns
the verdict with the rule that fired and every number it looked at:

1. **redesign** — the prior does not fit the use: the model misses ``min_shift_accuracy`` and
   its error under the shift has stopped falling along the curve (more of the same data does not
   teach the missing invariance); or it cannot flag foreign inputs (OOD AUROC below
   ``min_ood_auroc``).
2. **collect more data** — an accuracy requirement (``min_accuracy``, ``min_shift_accuracy``)
   is missed and every missed one is measured by an error that is still falling.
3. **redesign** — ``min_accuracy`` is missed and the learning curve has flattened: more data
   will not close the gap either.
4. **redesign** (recalibrate) — accurate but miscalibrated (ECE above ``max_ece``): its
   confidences cannot be used as probabilities until recalibrated.
5. **ship** — every requirement met.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from biaslab.evaluate._checks import check_fraction, check_number, check_sequence, check_sizes

__all__ = ["VERDICTS", "Decision", "Evidence", "decide", "last_drop"]

VERDICTS = ("ship", "collect more data", "redesign")


@dataclass(frozen=True)
class Evidence:
    """What the evaluation measured.

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
    numbers.
    """

    train_sizes: Sequence[int]
    val_errors: Sequence[float]
    accuracy: float
    ece: float
    shift_accuracy: float | None = None
    shift_val_errors: Sequence[float] | None = None
    ood_auroc: float | None = None

    def __post_init__(self):
        # Any sequence (a list, a tuple, a NumPy array) is kept as a tuple of Python numbers, so
        # the evidence compares, hashes and serialises the same whatever it was built from.
        sizes = check_sizes(self.train_sizes, "train_sizes")
        object.__setattr__(self, "train_sizes", sizes)
        for curve in ("val_errors", "shift_val_errors"):
            errors = getattr(self, curve)
            if errors is not None or curve == "val_errors":
                errors = check_sequence(errors, curve)
                errors = tuple(check_fraction(e, f"{curve}[{i}]") for i, e in enumerate(errors))
                object.__setattr__(self, curve, errors)
        for share in ("accuracy", "ece", "shift_accuracy", "ood_auroc"):
            value = getattr(self, share)
            if value is not None or share in ("accuracy", "ece"):
                object.__setattr__(self, share, check_fraction(value, share))
        if len(sizes) != len(self.val_errors) or len(sizes) < 2:
            raise ValueError(
                "a learning curve needs at least two (size, error) points of equal number: got "
                f"{len(sizes)} train_sizes and {len(self.val_errors)} val_errors"
            )
        if list(sizes) != sorted(set(sizes)):
            raise ValueError(f"train_sizes must increase, got {list(sizes)}")
        if (self.shift_accuracy is None) != (self.shift_val_errors is None):
            raise ValueError("shift_accuracy and shift_val_errors go together: give both or neither")
        if self.shift_val_errors is not None and len(self.shift_val_errors) != len(sizes):
            raise ValueError("shift_val_errors needs one error per training-set size")


def last_drop(errors: Sequence[float]) -> float:
    """The relative fall of an error over a curve's last step: ``(e[-2] − e[-1]) / e[-2]``
    (0 when ``e[-2]`` is 0; negative when the error rose)."""
    if len(check_sequence(errors, "errors")) < 2:
        raise ValueError(f"errors needs at least two points to have a last step, got {len(errors)}")
    previous = check_number(errors[-2], f"errors[{len(errors) - 2}]", 0.0)
    last = check_number(errors[-1], f"errors[{len(errors) - 1}]", 0.0)
    return (previous - last) / previous if previous > 0 else 0.0


@dataclass(frozen=True)
class Decision:
    """The verdict, the rule that fired (its number in :func:`decide`'s list) and the evidence."""

    verdict: str
    rule: int
    reason: str
    evidence: dict
    curve_drop: float  # last_drop of the validation error
    shift_curve_drop: float | None  # last_drop of the validation error under the shift


def decide(
    evidence: Evidence,
    min_accuracy: float = 0.97,
    max_ece: float = 0.05,
    min_shift_accuracy: float = 0.8,
    min_ood_auroc: float = 0.9,
    still_falling: float = 0.1,
) -> Decision:
    """Ship, collect more data, or redesign, by the rules of the module docstring.

    Args:
        evidence: the measurements.
        min_accuracy: the accuracy the use requires (default 0.97).
        max_ece: the largest acceptable expected calibration error (default 0.05).
        min_shift_accuracy: the accuracy required under the expected shift (default 0.8).
        min_ood_auroc: the OOD-detection AUROC required (default 0.9).
        still_falling: an error is still falling if the last step of its curve (usually a
            doubling of the data) cut it by more than this fraction (default 0.1).

    Every threshold must be a fraction in [0, 1] (a bool or NaN is refused: a NaN threshold
    would make every comparison false and ship anything).
    """
    if not isinstance(evidence, Evidence):
        raise ValueError(f"evidence must be an Evidence, got {type(evidence).__name__}")
    min_accuracy, max_ece = check_fraction(min_accuracy, "min_accuracy"), check_fraction(max_ece, "max_ece")
    min_shift_accuracy = check_fraction(min_shift_accuracy, "min_shift_accuracy")
    min_ood_auroc = check_fraction(min_ood_auroc, "min_ood_auroc")
    # A last drop is at most 1 (the error fell to 0), so 1 means "never still falling"; below 0
    # a curve that rose would count as falling.
    why = " (the share of the error a curve's last step must cut for it to count as still falling)"
    still_falling = check_fraction(still_falling, "still_falling", why=why)
    e = evidence
    drop = last_drop(e.val_errors)
    shift_drop = None if e.shift_val_errors is None else last_drop(e.shift_val_errors)
    facts = {k: list(v) if isinstance(v, Sequence) else v for k, v in asdict(e).items()}

    def verdict(name: str, rule: int, reason: str) -> Decision:
        return Decision(name, rule, reason, facts, drop, shift_drop)

    def trend(fall: float) -> str:
        sense = ">" if fall > still_falling else "<="
        return f"fell {fall:.0%} over the curve's last step ({sense} {still_falling:.0%})"

    missed = {}  # requirement -> (what is missed, the last drop of the error that measures it)
    if e.shift_accuracy is not None and e.shift_accuracy < min_shift_accuracy:
        missed["shift"] = (
            f"accuracy under the shift {e.shift_accuracy:.3f} < {min_shift_accuracy}",
            shift_drop,
        )
        if shift_drop <= still_falling:
            why = f"{missed['shift'][0]}, and the error under the shift {trend(shift_drop)}"
            return verdict(
                "redesign", 1, why + ": more of the same data does not teach the missing invariance"
            )
    if e.ood_auroc is not None and e.ood_auroc < min_ood_auroc:
        why = f"OOD AUROC {e.ood_auroc:.3f} < {min_ood_auroc}"
        return verdict("redesign", 1, why + ": inputs it was not made for go unflagged")
    if e.accuracy < min_accuracy:
        missed["accuracy"] = (f"accuracy {e.accuracy:.3f} < {min_accuracy}", drop)
    if missed:
        errors = {"accuracy": "the validation error", "shift": "the error under the shift"}
        why = "; ".join(f"{short}, and {errors[k]} {trend(fall)}" for k, (short, fall) in missed.items())
        if all(fall > still_falling for _, fall in missed.values()):
            return verdict("collect more data", 2, why)
        return verdict("redesign", 3, why + ": more data will not close the gap")
    if e.ece > max_ece:
        return verdict("redesign", 4, f"accurate but miscalibrated: ECE {e.ece:.3f} > {max_ece}; recalibrate")
    met = f"accuracy {e.accuracy:.3f} >= {min_accuracy}, ECE {e.ece:.3f} <= {max_ece}"
    if e.shift_accuracy is not None:
        met += f", under the shift {e.shift_accuracy:.3f} >= {min_shift_accuracy}"
    if e.ood_auroc is not None:
        met += f", OOD AUROC {e.ood_auroc:.3f} >= {min_ood_auroc}"
    return verdict("ship", 5, f"{met}: every requirement met")
