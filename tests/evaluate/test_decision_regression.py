"""Tests for biaslab.evaluate.decision on regression evidence: errors in the target's unit, held
to absolute and relative (to the mean predictor) requirements, reach each verdict by the same
rules as a classifier's; every bad value is refused with one line naming it."""

import numpy as np
import pytest

from biaslab.evaluate import Evidence, RegressionEvidence, decide

SIZES = [1000, 2000, 4000, 8000]
GOOD = [0.4, 0.2, 0.13, 0.128]  # flattened: the last doubling cut the error by 1.5%
FALLING = [0.8, 0.5, 0.35, 0.25]  # ... by 29%
FLAT = [0.5, 0.42, 0.4, 0.396]  # ... by 1%


def qm9(**changes) -> RegressionEvidence:
    """A QM9-like model: MAE in eV against the mean predictor's 0.34 eV."""
    base = dict(train_sizes=SIZES, val_errors=GOOD, test_error=0.12, baseline_error=0.34, unit="eV")
    return RegressionEvidence(**{**base, **changes})


def shifted(**changes) -> RegressionEvidence:
    """Also measured under a shift (larger molecules), with the mean predictor's error there."""
    shift = dict(shift_error=0.2, shift_val_errors=[0.6, 0.35, 0.25, 0.19], shift_baseline_error=0.5)
    return qm9(**{**shift, **changes})


def test_a_model_meeting_its_requirements_ships_and_the_reason_says_the_unit():
    d = decide(qm9(), max_error=0.15, max_relative_error=0.5)
    assert (d.verdict, d.rule, d.task, d.unit) == ("ship", 5, "regress", "eV")
    assert d.reason == (
        "MAE 0.12 eV <= 0.15 eV, 35.3% of the mean predictor's 0.34 eV (<= 50.0%): every requirement met"
    )
    assert d.evidence["test_error"] == 0.12 and d.evidence["baseline_error"] == 0.34
    assert d.evidence["relative_error"] == pytest.approx(0.12 / 0.34) and d.evidence["unit"] == "eV"
    assert d.evidence["val_errors"] == GOOD and d.curve_drop == pytest.approx(0.002 / 0.13)


def test_an_absolute_requirement_alone_needs_no_baseline():
    d = decide(qm9(baseline_error=None), max_error=0.15)
    assert d.verdict == "ship" and d.reason.startswith("MAE 0.12 eV <= 0.15 eV:")
    assert d.evidence["relative_error"] is None
    # A baseline given without a relative requirement is still reported beside the error.
    assert "35.3% of the mean predictor's 0.34 eV" in decide(qm9(), max_error=0.15).reason


def test_a_relative_requirement_alone_is_held_to_the_baseline():
    assert decide(qm9(), max_relative_error=0.4).verdict == "ship"
    d = decide(qm9(val_errors=FLAT), max_relative_error=0.3)  # 35% of the baseline > 30%
    assert (d.verdict, d.rule) == ("redesign", 3)
    assert d.reason.startswith("MAE 0.12 eV, 35.3% of the mean predictor's 0.34 eV (> 30.0%)")


def test_a_missed_requirement_on_a_falling_curve_means_collect_more_data():
    d = decide(qm9(val_errors=FALLING), max_error=0.1)
    assert (d.verdict, d.rule) == ("collect more data", 2)
    assert d.reason.startswith("MAE 0.12 eV > 0.1 eV, 35.3% of the mean predictor's 0.34 eV, and the ")
    assert "validation error fell 29% over the curve's last step (> 10%)" in d.reason


def test_a_missed_requirement_on_a_flat_curve_means_redesign():
    d = decide(qm9(val_errors=FLAT), max_error=0.1)
    assert (d.verdict, d.rule) == ("redesign", 3) and "more data will not close the gap" in d.reason
    # Either requirement missed is a miss: here the relative one, the absolute one being met.
    both = decide(qm9(val_errors=FLAT), max_error=0.2, max_relative_error=0.3)
    assert both.rule == 3 and "<= 0.2 eV" in both.reason and "(> 30.0%)" in both.reason


def test_a_unitless_score_with_rmse_reads_without_a_unit():
    diabetes = RegressionEvidence(SIZES, [70, 60, 56, 55.5], 54.2, baseline_error=77.0, metric="RMSE")
    d = decide(diabetes, max_relative_error=0.8)
    assert d.verdict == "ship" and d.unit == ""
    assert d.reason.startswith("RMSE 54.2, 70.4% of the mean predictor's 77 (<= 80.0%)")


def test_shift_and_ood_evidence_say_when_the_prior_does_not_fit():
    flat_shift = dict(shift_error=0.4, shift_val_errors=[0.6, 0.45, 0.41, 0.4])
    d = decide(shifted(**flat_shift), max_error=0.15, max_shift_error=0.3)
    assert (d.verdict, d.rule) == ("redesign", 1) and "missing invariance" in d.reason
    assert d.reason.startswith("MAE under the shift 0.4 eV > 0.3 eV, 80.0% of the mean predictor's 0.5 eV")
    assert d.shift_curve_drop == pytest.approx(0.01 / 0.41)
    # Still falling under the shift: more data.
    d = decide(shifted(shift_error=0.35), max_error=0.15, max_relative_shift_error=0.5)
    assert (d.verdict, d.rule) == ("collect more data", 2) and "(> 50.0%)" in d.reason
    assert d.evidence["shift_relative_error"] == pytest.approx(0.7)
    # Met under the shift: shipped, with the shift in the reason.
    d = decide(shifted(), max_error=0.15, max_shift_error=0.25, max_relative_shift_error=0.5)
    assert d.verdict == "ship" and "MAE under the shift 0.2 eV <= 0.25 eV" in d.reason
    # Inputs it was not made for go unflagged: redesign, before the data rule.
    d = decide(qm9(val_errors=FALLING, ood_auroc=0.7), max_error=0.1)
    assert (d.verdict, d.rule) == ("redesign", 1) and "unflagged" in d.reason
    assert decide(qm9(ood_auroc=0.7), max_error=0.15, min_ood_auroc=0.6).verdict == "ship"


def test_still_falling_is_an_argument_for_regressions_too():
    assert decide(qm9(val_errors=FALLING), max_error=0.1, still_falling=0.5).rule == 3


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({}, "a regression needs a requirement: max_error .* or max_relative_error"),
        ({"max_error": -0.1}, r"max_error must be an error \(a finite number\) >= 0, got -0.1"),
        ({"max_error": float("nan")}, "max_error must be an error"),
        ({"max_error": True}, r"max_error must be .*, got True \(a bool\)"),
        ({"max_relative_error": 50}, r"max_relative_error must be a fraction in \[0, 1\] \(the share of"),
        ({"max_error": 0.1, "max_shift_error": 0.2}, "max_shift_error needs the evidence's shift_error"),
        ({"max_error": 0.1, "min_accuracy": 0.9}, "min_accuracy is a requirement on a classifier"),
        ({"max_error": 0.1, "max_ece": 0.1}, "max_ece is a requirement on a classifier"),
        ({"max_error": 0.1, "min_ood_auroc": 2}, "min_ood_auroc must be a fraction"),
        ({"max_error": 0.1, "still_falling": -1}, "still_falling must be a fraction"),
    ],
)
def test_bad_requirements_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        decide(qm9(), **kwargs)


def test_a_relative_requirement_without_its_baseline_is_one_clear_error():
    with pytest.raises(ValueError) as info:
        decide(qm9(baseline_error=None), max_relative_error=0.5)
    assert str(info.value) == (
        "max_relative_error needs the evidence's baseline_error (the mean predictor's error), "
        "which is not given"
    )
    with pytest.raises(
        ValueError, match="max_relative_shift_error needs the evidence's shift_baseline_error"
    ):
        decide(shifted(shift_baseline_error=None), max_error=0.15, max_relative_shift_error=0.5)


def test_shift_evidence_needs_a_shift_requirement():
    with pytest.raises(ValueError, match="shift_error is given but no requirement holds it"):
        decide(shifted(), max_error=0.15)


def test_requirements_of_one_task_are_refused_with_the_other_tasks_evidence():
    classifier = Evidence(SIZES, [0.1, 0.05, 0.03, 0.02], accuracy=0.98, ece=0.01)
    with pytest.raises(ValueError, match="max_error is a requirement on a regression's error"):
        decide(classifier, max_error=0.1)
    # Classification thresholds left at their defaults (even given explicitly) are harmless.
    assert decide(qm9(), 0.97, 0.05, max_error=0.15).verdict == "ship"


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"test_error": -0.1}, r"test_error must be an error \(a finite number\) >= 0, got -0.1"),
        ({"test_error": float("inf")}, "test_error must be an error"),
        ({"test_error": False}, r"test_error must be .*\(a bool\)"),
        ({"val_errors": [0.4, -0.2, 0.1, 0.1]}, r"val_errors\[1\] must be an error"),
        ({"val_errors": [0.4, 0.2, float("nan"), 0.1]}, r"val_errors\[2\] must be an error"),
        ({"baseline_error": 0.0}, r"baseline_error must be a finite number > 0 \(the mean predictor"),
        ({"baseline_error": -1.0}, "baseline_error must be a finite number > 0"),
        ({"ood_auroc": 1.5}, "ood_auroc must be a fraction"),
        ({"unit": 3}, "unit must be a string, got 3"),
        ({"metric": " "}, "metric must be a non-empty string"),
        ({"train_sizes": [1000, 500, 4000, 8000]}, "train_sizes must increase"),
        ({"train_sizes": [0, 1, 2, 3]}, r"train_sizes\[0\] must be an integer >= 1"),
        ({"val_errors": [0.4, 0.2]}, "at least two .* of equal number"),
        ({"shift_val_errors": [0.5, 0.4, 0.3, 0.2]}, "shift_error and shift_val_errors go together"),
        ({"shift_error": 0.2}, "shift_error and shift_val_errors go together"),
    ],
)
def test_bad_evidence_is_refused(changes, match):
    with pytest.raises(ValueError, match=match):
        qm9(**changes)


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"shift_error": -0.2}, "shift_error must be an error"),
        ({"shift_val_errors": [0.6, 0.35]}, "shift_val_errors needs one error per training-set size"),
        ({"shift_baseline_error": 0}, "shift_baseline_error must be a finite number > 0"),
    ],
)
def test_bad_shift_evidence_is_refused(changes, match):
    with pytest.raises(ValueError, match=match):
        shifted(**changes)
    with pytest.raises(ValueError, match="shift_baseline_error goes with shift_error"):
        qm9(shift_baseline_error=0.5)


def test_regression_evidence_keeps_python_numbers_and_takes_errors_above_one():
    e = RegressionEvidence(np.array(SIZES), np.array([70.0, 60, 56, 55.5]), np.float64(54.2), np.float32(77))
    assert (
        e.train_sizes == tuple(SIZES) and type(e.val_errors[0]) is float and type(e.baseline_error) is float
    )
    assert e.relative_error == pytest.approx(54.2 / 77) and e.shift_relative_error is None
    hash(e)


def test_a_classifier_given_a_regressions_errors_is_pointed_to_regression_evidence():
    with pytest.raises(ValueError, match=r"val_errors\[0\] must be a fraction .* RegressionEvidence"):
        Evidence(SIZES, [70, 60, 56, 55.5], accuracy=0.9, ece=0.1)
    assert decide(Evidence(SIZES, [0.1, 0.05, 0.03, 0.02], 0.98, 0.01)).task == "classify"
    assert decide(Evidence(SIZES, [0.1, 0.05, 0.03, 0.02], 0.98, 0.01)).unit is None
