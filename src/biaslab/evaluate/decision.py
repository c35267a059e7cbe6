"""The decision a model evaluation ends in: ship it, collect more data, or redesign it.

"A model is done when you can defend, in front of a stakeholder, both the cases where it works
and the cases where it fails." The evidence comes from the Day-5 measurements, for a classifier
(``Evidence``) or a regression model (``RegressionEvidence``):

* a **learning curve** over training-set sizes — is the validation error still falling as data
  is added? — measured on the validation split as it is and, where the use brings a shift, on
  the validation split under that shift. A classifier's error is its error rate (1 − accuracy);
  a regression's is in the target's unit (an MAE or RMSE, e.g. in eV);
* the **held-out (test) performance** against the requirement: a classifier's accuracy; a
  regression's test error, in the target's unit and, where its ``baseline_error`` is given,
  relative to the mean predictor's error on the same split (a model must beat predicting the
  training targets' mean to have learnt anything);
* **calibration** (classifiers) — the expected calibration error;
* **performance under the shift** the model will meet in use (e.g. digits written off-centre,
  molecules larger than those trained on): accuracy, or the error and its baseline under it;
* **OOD detection** — can inputs it was not made for be flagged (the detector's AUROC)?

The requirements of the use are arguments of :func:`decide`. For a classifier: ``min_accuracy``,
``min_shift_accuracy``, ``max_ece``. For a regression, absolute in the target's unit or relative
to the mean predictor's error (a share of it), or both: ``max_error`` / ``max_relative_error``
and, under the shift, ``max_shift_error`` / ``max_relative_shift_error``. For both:
``min_ood_auroc``. ``still_falling`` diagnoses why a requirement is missed: an error that still
fell by more than this fraction over the curve's last step (usually a doubling of the data) will
fall further with more data. :func:`decide` applies these rules in order and returns the verdict
with the rule that fired and every number it looked at:

1. **redesign** — the prior does not fit the use: the model misses its requirement under the
   shift (``min_shift_accuracy``; ``max_shift_error`` / ``max_relative_shift_error``) and its
   error under the shift has stopped falling along the curve (more of the same data does not
   teach the missing invariance); or it cannot flag foreign inputs (OOD AUROC below
   ``min_ood_auroc``).
2. **collect more data** — a performance requirement (on the test split or under the shift) is
   missed and every missed one is measured by an error that is still falling.
3. **redesign** — the test-split requirement (``min_accuracy``; ``max_error`` /
   ``max_relative_error``) is missed and the learning curve has flattened: more data will not
   close the gap either.
4. **redesign** (recalibrate; classifiers) — accurate but miscalibrated (ECE above
   ``max_ece``): its confidences cannot be used as probabilities until recalibrated.
5. **ship** — every requirement met.

Why two evidence classes rather than one with a task flag: the two tasks share the learning
curve and the OOD AUROC but not the measurements the verdict is read off — fractions for a
classifier, errors in a unit against a baseline for a regression. One class would make every
measurement optional and leave "which fields go with which task" to run-time checks; two make
each class's required fields the ones its task needs, keep every ``Evidence(...)`` call (by
position too) valid, and let :func:`decide` dispatch on the class.

:func:`decide` returns a :class:`Decision` (``verdict``, ``rule``, ``reason``, ``evidence``, ``task``,
``unit``), which carries the last drop of both curves (:func:`~biaslab.evaluate.evidence.last_drop`).
"""

from __future__ import annotations

import inspect
from dataclasses import asdict, dataclass

from biaslab.checks import check_error, check_fraction
from biaslab.evaluate.evidence import Evidence, RegressionEvidence, last_drop

__all__ = ["VERDICTS", "Decision", "Evidence", "RegressionEvidence", "decide", "last_drop"]

VERDICTS = ("ship", "collect more data", "redesign")


@dataclass(frozen=True)
class Decision:
    """The verdict, the rule that fired (its number in :func:`decide`'s list) and the evidence.

    ``evidence`` holds every measured number (and, for a regression, the relative errors
    ``relative_error`` / ``shift_relative_error`` read off them); ``task`` is "classify" or
    "regress"; ``unit`` is the target's unit of a regression's errors (None for a classifier).
    """

    verdict: str
    rule: int
    reason: str
    evidence: dict
    curve_drop: float  # last_drop of the validation error
    shift_curve_drop: float | None  # last_drop of the validation error under the shift
    task: str = "classify"
    unit: str | None = None


# A requirement held to the evidence: the sentence that compares them, and whether it is missed.
Check = tuple[str, bool]


def _classification_checks(e: Evidence, min_accuracy, max_ece, min_shift_accuracy) -> dict[str, Check]:
    """The requirements of a classifier held to its evidence (see :func:`_verdict`)."""
    min_accuracy, max_ece = check_fraction(min_accuracy, "min_accuracy"), check_fraction(max_ece, "max_ece")
    min_shift_accuracy = check_fraction(min_shift_accuracy, "min_shift_accuracy")
    checks = {}
    if e.accuracy < min_accuracy:
        checks["test"] = (f"accuracy {e.accuracy:.3f} < {min_accuracy}", True)
    else:
        checks["test"] = (f"accuracy {e.accuracy:.3f} >= {min_accuracy}", False)
    if e.ece > max_ece:
        checks["calibration"] = (
            f"accurate but miscalibrated: ECE {e.ece:.3f} > {max_ece}; recalibrate",
            True,
        )
    else:
        checks["calibration"] = (f"ECE {e.ece:.3f} <= {max_ece}", False)
    if e.shift_accuracy is not None and e.shift_accuracy < min_shift_accuracy:
        checks["shift"] = (f"accuracy under the shift {e.shift_accuracy:.3f} < {min_shift_accuracy}", True)
    elif e.shift_accuracy is not None:
        checks["shift"] = (f"under the shift {e.shift_accuracy:.3f} >= {min_shift_accuracy}", False)
    return checks


def _error_check(error, baseline, max_error, max_relative, what: str, unit: str) -> Check:
    """An error held to an absolute and/or a relative requirement, in words.

    E.g. "MAE 0.12 eV <= 0.15 eV, 35.3% of the mean predictor's 0.34 eV (<= 50.0%)".
    """
    in_unit = (lambda x: f"{x:.4g} {unit}") if unit else (lambda x: f"{x:.4g}")
    words, missed = f"{what} {in_unit(error)}", False
    if max_error is not None:
        missed = error > max_error
        words += f" {'>' if missed else '<='} {in_unit(max_error)}"
    if baseline is not None:
        share = error / baseline
        words += f", {share:.1%} of the mean predictor's {in_unit(baseline)}"
        if max_relative is not None:
            missed_share = share > max_relative
            words += f" ({'>' if missed_share else '<='} {max_relative:.1%})"
            missed = missed or missed_share
    return words, missed


def _regression_checks(
    e: RegressionEvidence, max_error, max_relative_error, max_shift_error, max_relative_shift_error
) -> dict[str, Check]:
    """The requirements of a regression held to its evidence (see :func:`_verdict`)."""
    why = " (the share of the mean predictor's error the model may keep)"
    if max_error is None and max_relative_error is None:
        raise ValueError(
            "a regression needs a requirement: max_error (in the target's unit) or "
            "max_relative_error (a share of the mean predictor's error), or both"
        )
    if max_shift_error is None and max_relative_shift_error is None and e.shift_error is not None:
        raise ValueError(
            "shift_error is given but no requirement holds it: give max_shift_error or "
            "max_relative_shift_error"
        )
    requirements = {
        "max_error": (max_error, None),
        "max_relative_error": (max_relative_error, ("baseline_error", "the mean predictor's error")),
        "max_shift_error": (max_shift_error, ("shift_error", "the error under the shift")),
        "max_relative_shift_error": (
            max_relative_shift_error,
            ("shift_baseline_error", "the mean predictor's error under the shift"),
        ),
    }
    held = {}
    for name, (value, needs) in requirements.items():
        if value is None:
            held[name] = None
            continue
        relative = name.startswith("max_relative")
        held[name] = check_fraction(value, name, why=why) if relative else check_error(value, name)
        if needs is not None and getattr(e, needs[0]) is None:
            raise ValueError(f"{name} needs the evidence's {needs[0]} ({needs[1]}), which is not given")
    checks = {
        "test": _error_check(
            e.test_error, e.baseline_error, held["max_error"], held["max_relative_error"], e.metric, e.unit
        )
    }
    if e.shift_error is not None:
        checks["shift"] = _error_check(
            e.shift_error,
            e.shift_baseline_error,
            held["max_shift_error"],
            held["max_relative_shift_error"],
            f"{e.metric} under the shift",
            e.unit,
        )
    return checks


def decide(
    evidence: Evidence | RegressionEvidence,
    min_accuracy: float = 0.97,
    max_ece: float = 0.05,
    min_shift_accuracy: float = 0.8,
    min_ood_auroc: float = 0.9,
    still_falling: float = 0.1,
    *,
    max_error: float | None = None,
    max_relative_error: float | None = None,
    max_shift_error: float | None = None,
    max_relative_shift_error: float | None = None,
) -> Decision:
    """Ship, collect more data, or redesign, by the rules of the module docstring.

    Args:
        evidence: the measurements: an :class:`Evidence` (a classifier) or a
            :class:`RegressionEvidence` (a regression model).
        min_accuracy: the accuracy the use requires (classifiers; default 0.97).
        max_ece: the largest acceptable expected calibration error (classifiers; default 0.05).
        min_shift_accuracy: the accuracy required under the expected shift (classifiers;
            default 0.8).
        min_ood_auroc: the OOD-detection AUROC required (both tasks; default 0.9).
        still_falling: an error is still falling if the last step of its curve (usually a
            doubling of the data) cut it by more than this fraction (both tasks; default 0.1).
        max_error: the largest test error the use allows, in the target's unit (regressions).
        max_relative_error: the largest test error the use allows as a share of the mean
            predictor's (``evidence.baseline_error``), in [0, 1] (regressions; e.g. 0.5: at most
            half of it). A regression needs ``max_error`` or ``max_relative_error`` or both.
        max_shift_error: the largest error allowed under the shift, in the target's unit.
        max_relative_shift_error: the largest error allowed under the shift as a share of the
            mean predictor's there (``evidence.shift_baseline_error``), in [0, 1]. A regression
            with a ``shift_error`` needs one of the two.

    Every threshold is checked: a fraction in [0, 1] where it is one, an error a finite number
    >= 0 (a bool or NaN is refused: a NaN threshold would make every comparison false and ship
    anything). A requirement of the other task is refused: a regression one with an
    :class:`Evidence`, a classification one (unless left at its default) with a
    :class:`RegressionEvidence`; so is a relative requirement whose baseline is not given.
    """
    regression = {
        "max_error": max_error,
        "max_relative_error": max_relative_error,
        "max_shift_error": max_shift_error,
        "max_relative_shift_error": max_relative_shift_error,
    }
    classification = {
        "min_accuracy": min_accuracy,
        "max_ece": max_ece,
        "min_shift_accuracy": min_shift_accuracy,
    }
    if isinstance(evidence, Evidence):
        for name, value in regression.items():
            if value is not None:
                raise ValueError(
                    f"{name} is a requirement on a regression's error, but the evidence is a "
                    "classifier's (Evidence): give a RegressionEvidence, or min_accuracy"
                )
        checks = _classification_checks(evidence, **classification)
    elif isinstance(evidence, RegressionEvidence):
        for name, value in classification.items():
            if value != _CLASSIFY_DEFAULTS[name]:
                raise ValueError(
                    f"{name} is a requirement on a classifier, but the evidence is a regression's "
                    "(RegressionEvidence): give max_error or max_relative_error instead"
                )
        checks = _regression_checks(evidence, **regression)
    else:
        raise ValueError(
            f"evidence must be an Evidence or a RegressionEvidence, got {type(evidence).__name__}"
        )
    return _verdict(evidence, checks, min_ood_auroc, still_falling)


# decide's classification requirements and their defaults: with a RegressionEvidence they must be
# left at these (a regression is held to max_error / max_relative_error instead).
_CLASSIFY_DEFAULTS = {
    name: inspect.signature(decide).parameters[name].default
    for name in ("min_accuracy", "max_ece", "min_shift_accuracy")
}


def _verdict(evidence, checks: dict[str, Check], min_ood_auroc, still_falling) -> Decision:
    """The rules of the module docstring applied to ``checks`` (by kind: "test", "calibration",
    "shift"; each a sentence and whether its requirement is missed) and the OOD evidence."""
    min_ood_auroc = check_fraction(min_ood_auroc, "min_ood_auroc")
    # A last drop is at most 1 (the error fell to 0), so 1 means "never still falling"; below 0
    # a curve that rose would count as falling.
    why = " (the share of the error a curve's last step must cut for it to count as still falling)"
    still_falling = check_fraction(still_falling, "still_falling", why=why)
    e = evidence
    drop = last_drop(e.val_errors)
    shift_drop = None if e.shift_val_errors is None else last_drop(e.shift_val_errors)
    facts = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(e).items()}
    task, unit = "classify", None
    if isinstance(e, RegressionEvidence):
        facts |= {"relative_error": e.relative_error, "shift_relative_error": e.shift_relative_error}
        task, unit = "regress", e.unit

    def verdict(name: str, rule: int, reason: str) -> Decision:
        return Decision(name, rule, reason, facts, drop, shift_drop, task, unit)

    def trend(fall: float) -> str:
        sense = ">" if fall > still_falling else "<="
        return f"fell {fall:.0%} over the curve's last step ({sense} {still_falling:.0%})"

    falls = {"shift": shift_drop, "test": drop}
    errors = {"test": "the validation error", "shift": "the error under the shift"}
    # requirement -> (what is missed, the last drop of the error that measures it); shift first
    missed = {k: (checks[k][0], falls[k]) for k in ("shift", "test") if k in checks and checks[k][1]}
    if "shift" in missed and shift_drop <= still_falling:
        why = f"{missed['shift'][0]}, and the error under the shift {trend(shift_drop)}"
        return verdict("redesign", 1, why + ": more of the same data does not teach the missing invariance")
    if e.ood_auroc is not None and e.ood_auroc < min_ood_auroc:
        why = f"OOD AUROC {e.ood_auroc:.3f} < {min_ood_auroc}"
        return verdict("redesign", 1, why + ": inputs it was not made for go unflagged")
    if missed:
        why = "; ".join(f"{short}, and {errors[k]} {trend(fall)}" for k, (short, fall) in missed.items())
        if all(fall > still_falling for _, fall in missed.values()):
            return verdict("collect more data", 2, why)
        return verdict("redesign", 3, why + ": more data will not close the gap")
    if checks.get("calibration", ("", False))[1]:
        return verdict("redesign", 4, checks["calibration"][0])
    met = ", ".join(checks[k][0] for k in ("test", "calibration", "shift") if k in checks)
    if e.ood_auroc is not None:
        met += f", OOD AUROC {e.ood_auroc:.3f} >= {min_ood_auroc}"
    return verdict("ship", 5, f"{met}: every requirement met")
