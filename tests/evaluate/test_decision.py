"""Tests for biaslab.evaluate.decision: each rule fires on the evidence it is written for."""

import pytest

from biaslab.evaluate.decision import VERDICTS, Evidence, decide, last_drop

GOOD_CURVE = dict(train_sizes=[1000, 2000, 4000, 8000], val_errors=[0.05, 0.03, 0.02, 0.0195])
FALLING = [0.3, 0.2, 0.14, 0.10]  # the last doubling cut the error by 29%
FLAT = [0.12, 0.105, 0.101, 0.1]  # ... by 1%


def evidence(**changes):
    base = dict(**GOOD_CURVE, accuracy=0.985, ece=0.01, ood_auroc=0.99)
    base |= dict(shift_accuracy=0.95, shift_val_errors=[0.2, 0.1, 0.07, 0.06])
    return Evidence(**{**base, **changes})


def test_last_drop_is_the_relative_fall_over_the_last_step():
    assert last_drop([0.5, 0.2, 0.1]) == pytest.approx(0.5)
    assert last_drop([0.1, 0.12]) == pytest.approx(-0.2)  # rose
    assert last_drop([0.3, 0.0, 0.0]) == 0.0


def test_a_good_model_ships():
    d = decide(evidence())
    assert (d.verdict, d.rule) == ("ship", 5) and d.verdict in VERDICTS
    assert d.curve_drop == pytest.approx(0.025) and d.shift_curve_drop == pytest.approx(1 / 7)
    assert "under the shift 0.950 >= 0.8" in d.reason and "OOD AUROC 0.990 >= 0.9" in d.reason


def test_too_few_data_with_a_falling_curve_means_collect_more():
    d = decide(evidence(accuracy=0.90, val_errors=FALLING))
    assert (d.verdict, d.rule) == ("collect more data", 2) and "fell 29%" in d.reason


def test_short_of_the_target_on_a_flat_curve_means_redesign():
    d = decide(evidence(accuracy=0.90, val_errors=FLAT))
    assert (d.verdict, d.rule) == ("redesign", 3) and "more data will not close the gap" in d.reason


def test_a_shift_failure_whose_error_stopped_falling_is_a_missing_invariance():
    # Accurate in distribution, short under the shift, and more data stopped helping there.
    d = decide(evidence(shift_accuracy=0.6, shift_val_errors=[0.5, 0.45, 0.42, 0.41]))
    assert (d.verdict, d.rule) == ("redesign", 1) and "missing invariance" in d.reason
    # It fires before the data rule: a model still learning in distribution is redesigned too.
    d = decide(evidence(accuracy=0.9, val_errors=FALLING, shift_accuracy=0.6, shift_val_errors=FLAT))
    assert (d.verdict, d.rule) == ("redesign", 1)


def test_a_shift_failure_whose_error_still_falls_is_a_lack_of_data():
    d = decide(evidence(shift_accuracy=0.7, shift_val_errors=FALLING))
    assert (d.verdict, d.rule) == ("collect more data", 2)
    assert d.reason.startswith("accuracy under the shift 0.700 < 0.8, and the error under the shift fell 29%")
    both = decide(evidence(accuracy=0.9, val_errors=FALLING, shift_accuracy=0.7, shift_val_errors=FALLING))
    assert both.verdict == "collect more data" and both.reason.count("fell 29%") == 2
    # Still falling under the shift, but flat in distribution while short there: redesign.
    mixed = decide(evidence(accuracy=0.9, val_errors=FLAT, shift_accuracy=0.7, shift_val_errors=FALLING))
    assert (mixed.verdict, mixed.rule) == ("redesign", 3)


def test_an_ood_failure_means_redesign_first():
    d = decide(evidence(accuracy=0.90, val_errors=FALLING, ood_auroc=0.7))  # would otherwise be "collect"
    assert (d.verdict, d.rule) == ("redesign", 1) and "unflagged" in d.reason


def test_miscalibration_is_caught_after_accuracy():
    assert decide(evidence(ece=0.08)).rule == 4
    assert decide(evidence(ece=0.08), max_ece=0.1).verdict == "ship"  # thresholds are arguments


def test_thresholds_are_arguments():
    shifted = evidence(shift_accuracy=0.7, shift_val_errors=FALLING)
    assert decide(shifted, min_shift_accuracy=0.6).verdict == "ship"
    assert decide(shifted, still_falling=0.5).rule == 1  # a 29% fall no longer counts as falling
    assert decide(evidence(accuracy=0.95), min_accuracy=0.9).verdict == "ship"
    assert decide(evidence(ood_auroc=0.85), min_ood_auroc=0.8).verdict == "ship"


def test_the_evidence_travels_with_the_verdict_and_bad_curves_are_refused():
    d = decide(evidence(shift_accuracy=None, shift_val_errors=None, ood_auroc=None))
    assert d.verdict == "ship" and d.evidence["val_errors"] == GOOD_CURVE["val_errors"]
    assert d.shift_curve_drop is None
    with pytest.raises(ValueError, match="increase"):
        Evidence(train_sizes=[2, 1], val_errors=[0.1, 0.2], accuracy=0.9, ece=0.01)
    with pytest.raises(ValueError, match="two"):
        Evidence(train_sizes=[1], val_errors=[0.1], accuracy=0.9, ece=0.01)
    with pytest.raises(ValueError, match="both or neither"):
        evidence(shift_val_errors=None)
    with pytest.raises(ValueError, match="one error per training-set size"):
        evidence(shift_val_errors=[0.1, 0.1])


@pytest.mark.parametrize(
    "changes, name",
    [
        ({"accuracy": 1.2}, "accuracy"),
        ({"ece": -0.1}, "ece"),
        ({"shift_accuracy": float("nan")}, "shift_accuracy"),
        ({"ood_auroc": 2.0}, "ood_auroc"),
        ({"val_errors": [0.5, 1.5, 0.1, 0.1]}, r"val_errors\[1\]"),
        ({"shift_val_errors": [0.5, 0.4, 0.3, -0.1]}, r"shift_val_errors\[3\]"),
    ],
)
def test_evidence_outside_zero_one_is_refused(changes, name):
    with pytest.raises(ValueError, match=f"{name} must be a fraction"):
        evidence(**changes)
