"""The decision a model evaluation ends in: ship it, collect more data, or redesign it.

"A model is done when you can defend, in front of a stakeholder, both the cases where it works
and the cases where it fails." The evidence (``Evidence``) comes from the Day-5 measurements:

* a **learning curve** over training-set sizes — is the validation error still falling as data
  is added?
* **accuracy** on the held-out split against the requirement;
* **calibration** — the expected calibration error;
* **accuracy under the shift** the model will meet in use (e.g. rotated or shifted inputs);
* **OOD detection** — can inputs it was not made for be flagged (the best detector's AUROC)?

:func:`decide` applies these rules in order, each with a documented threshold, and returns the
verdict with the rule that fired and every number it looked at:

1. **redesign** — the model fails under the expected shift (accuracy under shift below
   ``min_shift_accuracy``) or cannot flag foreign inputs (OOD AUROC below ``min_ood_auroc``): more
   of the same data does not teach a missing invariance; the architecture (its prior) or the
   training must change.
2. **collect more data** — accuracy falls short of ``min_accuracy`` while the learning curve is
   still falling: the last doubling of the data cut the validation error by more than
   ``still_falling`` (relative).
3. **redesign** — accuracy falls short and the curve has flattened: more data will not close the
   gap either.
4. **redesign** (recalibrate) — accurate but miscalibrated (ECE above ``max_ece``): its
   confidences cannot be used as probabilities until recalibrated.
5. **ship** — every requirement met.
"""

from __future__ import annotations

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
        ood_auroc: the best OOD detector's AUROC (None: not measured).
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


@dataclass(frozen=True)
class Decision:
    """The verdict, the rule that fired (its number in :func:`decide`'s list) and the evidence."""

    verdict: str
    rule: int
    reason: str
    evidence: dict
    curve_drop: float  # relative fall of the validation error over the last step of the curve


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
        still_falling: the curve is still falling if its last step (usually a doubling of the
            data) cut the validation error by more than this fraction (default 0.1).
    """
    e = evidence
    last, previous = e.val_errors[-1], e.val_errors[-2]
    drop = (previous - last) / previous if previous > 0 else 0.0
    facts = {**asdict(e), "train_sizes": list(e.train_sizes), "val_errors": list(e.val_errors)}

    def verdict(name: str, rule: int, reason: str) -> Decision:
        return Decision(name, rule, reason, facts, drop)

    if e.shift_accuracy is not None and e.shift_accuracy < min_shift_accuracy:
        why = f"accuracy under the expected shift {e.shift_accuracy:.3f} < {min_shift_accuracy}"
        return verdict("redesign", 1, why + ": more of the same data does not teach the missing invariance")
    if e.ood_auroc is not None and e.ood_auroc < min_ood_auroc:
        why = f"OOD AUROC {e.ood_auroc:.3f} < {min_ood_auroc}"
        return verdict("redesign", 1, why + ": inputs it was not made for go unflagged")
    short = f"accuracy {e.accuracy:.3f} < {min_accuracy}"
    if e.accuracy < min_accuracy and drop > still_falling:
        why = f"the validation error still fell {drop:.0%} over the curve's last step (> {still_falling:.0%})"
        return verdict("collect more data", 2, f"{short} and {why}")
    if e.accuracy < min_accuracy:
        why = f"the learning curve has flattened (last step {drop:.0%} <= {still_falling:.0%})"
        return verdict("redesign", 3, f"{short} and {why}: more data will not close the gap")
    if e.ece > max_ece:
        return verdict("redesign", 4, f"accurate but miscalibrated: ECE {e.ece:.3f} > {max_ece}; recalibrate")
    met = f"accuracy {e.accuracy:.3f} >= {min_accuracy}, ECE {e.ece:.3f} <= {max_ece}"
    return verdict("ship", 5, f"{met}; no measured shift or OOD requirement failed")
