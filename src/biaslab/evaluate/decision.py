"""The decision a model evaluation ends in: ship it, collect more data, or redesign it.

"A model is done when you can defend, in front of a stakeholder, both the cases where it works
and the cases where it fails." The evidence (``Evidence``) comes from the Day-5 measurements:

* a **learning curve** over training-set sizes — is the validation error still falling as data
  is added?
* **accuracy** on the held-out split against the requirement;
* **calibration** — the expected calibration error;
* **accuracy under the shift** the model will meet in use (e.g. digits written off-centre);
* **OOD detection** — can inputs it was not made for be flagged (the detector's AUROC)?

The requirements of the use are arguments (``min_accuracy``, ``min_shift_accuracy``,
``min_ood_auroc``, ``max_ece``); two more thresholds diagnose *why* a requirement fails
(``min_shift_retention``, ``still_falling``). :func:`decide` applies these rules in order and
returns the verdict with the rule that fired and every number it looked at:

1. **redesign** — the prior does not fit the use: under the expected shift the model misses
   ``min_shift_accuracy`` *and* keeps less than ``min_shift_retention`` of its own accuracy
   (the shift, not a general lack of accuracy, is what it fails on: more of the same data does
   not teach a missing invariance); or it cannot flag foreign inputs (OOD AUROC below
   ``min_ood_auroc``).
2. **collect more data** — a requirement of accuracy (``min_accuracy``, or
   ``min_shift_accuracy`` missed by a model that keeps its accuracy under the shift) is missed
   while the learning curve is still falling: the last step of the curve (usually a doubling of
   the data) cut the validation error by more than ``still_falling`` (relative).
3. **redesign** — an accuracy requirement is missed and the curve has flattened: more data will
   not close the gap either.
4. **redesign** (recalibrate) — accurate but miscalibrated (ECE above ``max_ece``): its
   confidences cannot be used as probabilities until recalibrated.
5. **ship** — every requirement met.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

__all__ = ["VERDICTS", "Decision", "Evidence", "decide"]

VERDICTS = ("ship", "collect more data", "redesign")


@dataclass(frozen=True)
class Evidence:
    """What the evaluation measured.

    Args:
        train_sizes: training-set sizes of the learning curve, increasing.
        val_errors: validation error (1 − accuracy) at each size.
        accuracy: accuracy on the held-out (test) split of the final model.
        ece: its expected calibration error.
        shift_accuracy: its accuracy under the shift expected in use (None: not measured).
        ood_auroc: the OOD detector's AUROC on inputs it must flag (None: not measured).
    """

    train_sizes: Sequence[int]
    val_errors: Sequence[float]
    accuracy: float
    ece: float
    shift_accuracy: float | None = None
    ood_auroc: float | None = None

    def __post_init__(self):
        if len(self.train_sizes) != len(self.val_errors) or len(self.train_sizes) < 2:
            raise ValueError("a learning curve needs at least two (size, error) points of equal number")
        if list(self.train_sizes) != sorted(set(self.train_sizes)):
            raise ValueError(f"train_sizes must increase, got {list(self.train_sizes)}")
        shares = {"accuracy": self.accuracy, "ece": self.ece, "shift_accuracy": self.shift_accuracy}
        shares |= {
            "ood_auroc": self.ood_auroc,
            **{f"val_errors[{i}]": e for i, e in enumerate(self.val_errors)},
        }
        for name, value in shares.items():
            if value is not None and not (math.isfinite(value) and 0 <= value <= 1):
                raise ValueError(f"{name} must be a fraction in [0, 1], got {value}")


@dataclass(frozen=True)
class Decision:
    """The verdict, the rule that fired (its number in :func:`decide`'s list) and the evidence."""

    verdict: str
    rule: int
    reason: str
    evidence: dict
    curve_drop: float  # relative fall of the validation error over the last step of the curve
    shift_retention: float | None  # accuracy under the shift / accuracy (None: not measured)


def decide(
    evidence: Evidence,
    min_accuracy: float = 0.97,
    max_ece: float = 0.05,
    min_shift_accuracy: float = 0.8,
    min_ood_auroc: float = 0.9,
    min_shift_retention: float = 0.75,
    still_falling: float = 0.1,
) -> Decision:
    """Ship, collect more data, or redesign, by the rules of the module docstring.

    Args:
        evidence: the measurements.
        min_accuracy: the accuracy the use requires (default 0.97).
        max_ece: the largest acceptable expected calibration error (default 0.05).
        min_shift_accuracy: the accuracy required under the expected shift (default 0.8).
        min_ood_auroc: the OOD-detection AUROC required (default 0.9).
        min_shift_retention: a model missing ``min_shift_accuracy`` lacks the invariance when it
            keeps less than this share of its accuracy under the shift (default 0.75: it loses
            more than a quarter of what it knows to the shift alone).
        still_falling: the curve is still falling if its last step (usually a doubling of the
            data) cut the validation error by more than this fraction (default 0.1).
    """
    e = evidence
    last, previous = e.val_errors[-1], e.val_errors[-2]
    drop = (previous - last) / previous if previous > 0 else 0.0
    retention = None
    if e.shift_accuracy is not None:
        retention = e.shift_accuracy / e.accuracy if e.accuracy > 0 else 0.0
    facts = {**asdict(e), "train_sizes": list(e.train_sizes), "val_errors": list(e.val_errors)}

    def verdict(name: str, rule: int, reason: str) -> Decision:
        return Decision(name, rule, reason, facts, drop, retention)

    shift_short = e.shift_accuracy is not None and e.shift_accuracy < min_shift_accuracy
    if shift_short and retention < min_shift_retention:
        why = (
            f"accuracy under the expected shift {e.shift_accuracy:.3f} < {min_shift_accuracy}, "
            f"{retention:.0%} of its accuracy {e.accuracy:.3f} (< {min_shift_retention:.0%})"
        )
        return verdict("redesign", 1, why + ": more of the same data does not teach the missing invariance")
    if e.ood_auroc is not None and e.ood_auroc < min_ood_auroc:
        why = f"OOD AUROC {e.ood_auroc:.3f} < {min_ood_auroc}"
        return verdict("redesign", 1, why + ": inputs it was not made for go unflagged")
    shortfalls = []
    if e.accuracy < min_accuracy:
        shortfalls.append(f"accuracy {e.accuracy:.3f} < {min_accuracy}")
    if shift_short:
        shortfalls.append(f"accuracy under the shift {e.shift_accuracy:.3f} < {min_shift_accuracy}")
    short = " and ".join(shortfalls)
    if shortfalls and drop > still_falling:
        why = f"the validation error still fell {drop:.0%} over the curve's last step (> {still_falling:.0%})"
        return verdict("collect more data", 2, f"{short}, and {why}")
    if shortfalls:
        why = f"the learning curve has flattened (last step {drop:.0%} <= {still_falling:.0%})"
        return verdict("redesign", 3, f"{short}, and {why}: more data will not close the gap")
    if e.ece > max_ece:
        return verdict("redesign", 4, f"accurate but miscalibrated: ECE {e.ece:.3f} > {max_ece}; recalibrate")
    met = f"accuracy {e.accuracy:.3f} >= {min_accuracy}, ECE {e.ece:.3f} <= {max_ece}"
    if e.shift_accuracy is not None:
        met += f", under the shift {e.shift_accuracy:.3f} >= {min_shift_accuracy}"
    if e.ood_auroc is not None:
        met += f", OOD AUROC {e.ood_auroc:.3f} >= {min_ood_auroc}"
    return verdict("ship", 5, f"{met}: every requirement met")
