"""The evaluation API refuses arguments it cannot mean: NaN thresholds, bools for numbers, bin
counts that would exhaust memory, flattened or scalar score arrays, non-finite logits. Each
refusal is a ValueError whose message names the argument."""

import numpy as np
import pytest
import torch

from biaslab.evaluate import (
    KNN,
    MSP,
    Energy,
    Evidence,
    Mahalanobis,
    MaxLogit,
    TemperatureScaling,
    accuracy_score,
    aupr,
    auroc,
    classify_curve,
    confusion_matrix,
    decide,
    expected_calibration_error,
    fgsm,
    fpr_at_95_tpr,
    log_loss,
    maximum_calibration_error,
    pgd,
    pgd_attack,
    precision_recall_f1,
    predicted_label_shift,
    reliability_bins,
    roc_auc,
    shift_scenario,
)
from biaslab.evaluate.bias_variance import bias_variance, double_descent, polynomial_fit
from biaslab.evaluate.decision import last_drop
from biaslab.evaluate.ood import fit_detectors
from biaslab.evaluate.sample_quality import classifier_scores, mmd, sliced_wasserstein, wasserstein_1d
from biaslab.evaluate.scaling import fit_power_law

NAN, INF = float("nan"), float("inf")
CURVE = dict(train_sizes=[1000, 2000, 4000], val_errors=[0.1, 0.05, 0.04])


def evidence(**changes) -> Evidence:
    return Evidence(**{**CURVE, "accuracy": 0.985, "ece": 0.01, **changes})


# -- decide: every threshold ------------------------------------------------------------------------


def test_nan_thresholds_do_not_ship_a_bad_model():
    bad = evidence(accuracy=0.5, ece=0.9)
    with pytest.raises(ValueError, match=r"min_accuracy must be a fraction in \[0, 1\], got nan"):
        decide(bad, min_accuracy=NAN, max_ece=NAN)
    with pytest.raises(ValueError, match="max_ece must be"):
        decide(bad, max_ece=NAN)


THRESHOLDS = ("min_accuracy", "max_ece", "min_shift_accuracy", "min_ood_auroc", "still_falling")


@pytest.mark.parametrize("name", THRESHOLDS)
@pytest.mark.parametrize("value", [NAN, INF, -INF, -1, -0.01, 1.01, 5, True, False, "0.9", None])
def test_every_threshold_of_decide_is_a_fraction(name, value):
    with pytest.raises(ValueError, match=f"{name} must be a fraction in"):
        decide(evidence(), **{name: value})


def test_decide_accepts_numpy_thresholds_and_refuses_what_is_not_evidence():
    assert decide(evidence(), min_accuracy=np.float64(0.9), still_falling=np.float32(0.2)).verdict == "ship"
    assert decide(evidence(), min_accuracy=0, max_ece=1, still_falling=1).verdict == "ship"
    with pytest.raises(ValueError, match="evidence must be an Evidence"):
        decide({"accuracy": 0.9})
    with pytest.raises(ValueError, match=r"still_falling .*\(the share of the error"):
        decide(evidence(), still_falling=-1)


# -- Evidence --------------------------------------------------------------------------------------


def test_evidence_accepts_numpy_arrays_as_tuples_of_python_numbers():
    e = Evidence(
        train_sizes=np.array([1000, 2000]),
        val_errors=np.array([0.1, 0.05]),
        accuracy=np.float64(0.98),
        ece=torch.tensor(0.01),
        shift_accuracy=np.float32(0.9),
        shift_val_errors=np.array([0.2, 0.1]),
    )
    assert e.train_sizes == (1000, 2000) and type(e.train_sizes[0]) is int
    assert e.val_errors == (0.1, 0.05) and type(e.val_errors[0]) is float
    assert type(e.accuracy) is float and type(e.ece) is float and e.shift_val_errors == (0.2, 0.1)
    hash(e)  # frozen and made of tuples: hashable
    from_arrays = Evidence(np.array([10, 20]), np.array([0.2, 0.1]), np.float64(0.9), np.float64(0.1))
    assert from_arrays == Evidence([10, 20], [0.2, 0.1], 0.9, 0.1)
    d = decide(e, min_accuracy=0.97)
    assert d.verdict == "ship" and d.evidence["train_sizes"] == [1000, 2000]
    assert Evidence(train_sizes=range(1, 3), val_errors=(0.2, 0.1), accuracy=0.9, ece=0.1).train_sizes == (
        1,
        2,
    )


@pytest.mark.parametrize(
    ("sizes", "match"),
    [
        ([-2, -1], r"train_sizes\[0\] must be an integer >= 1, got -2"),
        ([0, 10], r"train_sizes\[0\] must be an integer >= 1, got 0"),
        ([100.5, 200.5], r"train_sizes\[0\] must be an integer"),
        ([100.0, 200.0], r"train_sizes\[0\] must be an integer"),
        ([True, 2], r"train_sizes\[0\] must be an integer >= 1, got True \(a bool\)"),
        (np.array([[1, 2]]), "train_sizes must be 1-D"),
        (5, "train_sizes must be a sequence"),
        ("12", "train_sizes must be a sequence"),
    ],
)
def test_training_sizes_must_be_positive_integers(sizes, match):
    with pytest.raises(ValueError, match=match):
        evidence(train_sizes=sizes, val_errors=[0.1, 0.05])


def test_sizes_and_errors_must_be_the_same_length():
    with pytest.raises(ValueError, match="got 3 train_sizes and 2 val_errors"):
        evidence(val_errors=[0.1, 0.05])


@pytest.mark.parametrize(
    ("changes", "name"),
    [
        ({"accuracy": True}, "accuracy"),
        ({"ece": False}, "ece"),
        ({"accuracy": None}, "accuracy"),
        ({"ece": "0.1"}, "ece"),
        ({"ood_auroc": True}, "ood_auroc"),
        ({"val_errors": [0.1, True, 0.04]}, r"val_errors\[1\]"),
        ({"val_errors": None}, "val_errors"),
        ({"shift_accuracy": True, "shift_val_errors": [0.2, 0.1, 0.1]}, "shift_accuracy"),
    ],
)
def test_evidence_numbers_are_finite_fractions_not_bools(changes, name):
    with pytest.raises(ValueError, match=f"{name} must be"):
        evidence(**changes)


def test_optional_evidence_stays_optional():
    e = evidence(shift_accuracy=None, shift_val_errors=None, ood_auroc=None)
    assert e.ood_auroc is None and e.shift_val_errors is None


def test_last_drop_needs_two_finite_errors():
    with pytest.raises(ValueError, match="at least two points"):
        last_drop([0.1])
    with pytest.raises(ValueError, match=r"errors\[0\] must be a finite number >= 0, got nan"):
        last_drop([NAN, 0.1])
    assert last_drop(np.array([0.2, 0.1])) == pytest.approx(0.5)


# -- calibration -----------------------------------------------------------------------------------

PROBS, LABELS = np.array([[0.9, 0.1], [0.3, 0.7], [0.6, 0.4]]), np.array([0, 1, 1])


@pytest.mark.parametrize("fn", [reliability_bins, expected_calibration_error, maximum_calibration_error])
def test_bin_counts_are_capped_before_anything_is_allocated(fn):
    # 10_001 first: on code without the cap it returns instead of allocating gigabytes
    for n_bins in (10_001, 10**9):
        with pytest.raises(ValueError, match=rf"n_bins must be an integer in 1\.\.10000 .*got {n_bins}"):
            fn(PROBS, LABELS, n_bins=n_bins)


def test_numpy_integer_bin_counts_are_accepted():
    assert expected_calibration_error(PROBS, LABELS, np.int64(10)) == expected_calibration_error(
        PROBS, LABELS, 10
    )
    assert len(reliability_bins(PROBS, LABELS, 10_000).counts) == 10_001


@pytest.mark.parametrize(
    ("scaler", "fit_args", "match"),
    [
        (TemperatureScaling(min_temperature=True), {}, "min_temperature"),
        (TemperatureScaling(), {"max_iter": 0}, "max_iter must be an integer >= 1"),
        (TemperatureScaling(), {"max_iter": True}, "max_iter must be an integer"),
        (TemperatureScaling(), {"tol": NAN}, "tol must be a finite number >= 0"),
    ],
)
def test_temperature_scaling_arguments(scaler, fit_args, match):
    logits = np.array([[2.0, 0.0], [0.0, 1.0], [1.0, 0.5]])
    with pytest.raises(ValueError, match=match):
        scaler.fit(logits, LABELS, **fit_args)


# -- AUROC and the OOD metrics ---------------------------------------------------------------------


@pytest.mark.parametrize("metric", [auroc, aupr, fpr_at_95_tpr])
@pytest.mark.parametrize(
    ("scores_in", "scores_out", "match"),
    [
        (np.zeros((2, 2)), np.ones(3), r"scores_in must be 1-D, got shape \(2, 2\)"),
        (np.zeros(3), np.ones((3, 1)), r"scores_out must be 1-D, got shape \(3, 1\)"),
        (0.0, [1.0], r"scores_in must be 1-D, got shape \(\)"),
        ([0.0], 1.0, r"scores_out must be 1-D"),
        ([0.0, NAN], [1.0], r"scores_in must be finite numbers; scores_in\[1\] is nan"),
        ([0.0], [INF], r"scores_out must be finite numbers"),
        ([0.0], [], "at least one score, got 1 and 0"),
    ],
)
def test_ood_metrics_want_two_non_empty_finite_score_vectors(metric, scores_in, scores_out, match):
    with pytest.raises(ValueError, match=match):
        metric(scores_in, scores_out)


def test_fpr_at_tpr_refuses_a_bool_rate():
    with pytest.raises(ValueError, match=r"tpr must be a finite number in \(0, 1\]"):
        fpr_at_95_tpr([0.0], [1.0], tpr=True)


@pytest.mark.parametrize(
    ("y_true", "scores", "match"),
    [
        ([0, 1, 1], [0.1, 0.9], "y_true and scores must be 1-D of the same length"),
        ([0, 1], [[0.1], [0.9]], "y_true and scores must be 1-D"),
        (1, 0.5, "y_true and scores must be 1-D"),
        ([0, 1, 0], [0.1, NAN, 0.3], r"scores must be finite numbers; scores\[1\] is nan"),
    ],
)
def test_roc_auc_wants_labels_and_scores_of_one_length(y_true, scores, match):
    with pytest.raises(ValueError, match=match):
        roc_auc(y_true, scores)


# -- OOD detectors: one input check ----------------------------------------------------------------


@pytest.mark.parametrize("detector", [MSP(), MaxLogit(), Energy()])
@pytest.mark.parametrize("bad", [NAN, INF, -INF])
def test_logit_detectors_refuse_non_finite_logits(detector, bad):
    z = np.array([[1.0, 2.0], [0.5, bad]])
    with pytest.raises(ValueError, match=r"logits must be finite numbers; logits\[1, 1\] is"):
        detector.score(z)
    with pytest.raises(ValueError, match="logits must be finite"):
        detector.score(torch.tensor(z))


def test_feature_detectors_refuse_non_finite_features():
    h, y = np.random.default_rng(0).normal(size=(20, 3)), np.arange(20) % 2
    bad = h.copy()
    bad[4, 2] = NAN
    for det in (Mahalanobis(), KNN(k=3)):
        with pytest.raises(ValueError, match=r"features must be finite numbers; features\[4, 2\] is nan"):
            det.fit(bad, y)
        with pytest.raises(ValueError, match="features must be finite"):
            det.fit(h, y).score(bad)
    with pytest.raises(ValueError, match="train_features must be finite"):
        fit_detectors(bad, y, knn_k=3)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda h, y: Energy(temperature=INF).score(h), "temperature must be a finite number > 0"),
        (lambda h, y: Energy(temperature=True).score(h), r"temperature .* \(a bool\)"),
        (lambda h, y: KNN(k=2.5).fit(h), "k must be an integer in 1..20"),
        (lambda h, y: KNN(k=True).fit(h), "k must be an integer"),
        (lambda h, y: KNN(k=21).fit(h), r"k must be an integer in 1..20 \(the number of training features\)"),
        (lambda h, y: fit_detectors(h, y, knn_k=3, knn_train=0), "knn_train must be an integer >= 1"),
        (lambda h, y: fit_detectors(h, y, knn_k=3, knn_train=2.5), "knn_train must be an integer"),
        (lambda h, y: Mahalanobis().fit(h[:0], y[:0]), "N >= 1"),
        (lambda h, y: MSP().score(np.zeros((3, 0))), "D >= 1"),
    ],
)
def test_detector_settings(call, match):
    h, y = np.random.default_rng(0).normal(size=(20, 3)), np.arange(20) % 2
    with pytest.raises(ValueError, match=match):
        call(h, y)


# -- whole-set classification metrics --------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: accuracy_score(np.zeros(3), np.zeros((3, 1))), "y_true and y_pred must have the same shape"),
        (lambda: accuracy_score([], []), "at least one entry"),
        (lambda: confusion_matrix([0, 1, 1], [0, 1]), "y_true and y_pred must be 1-D of the same length"),
        (lambda: precision_recall_f1([0, 1, 1], [0, 1]), "y_true and y_pred must be 1-D of the same length"),
        (lambda: log_loss([0, 1], [0.2, 0.8, 0.5, 0.5]), r"y_true must be \(N,\) and probs"),
        (lambda: log_loss([0, 1], [0.2, NAN]), "probs must be probabilities"),
        (lambda: log_loss([0, 1], [0.2, 1.5]), "probs must be probabilities"),
    ],
)
def test_classification_metrics_want_matching_inputs(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# -- the rest of the evaluation API ----------------------------------------------------------------


@pytest.mark.parametrize(
    "threshold", ["blowup", "underfit_fraction", "gap_fraction", "overfit_rise", "chance_loss"]
)
@pytest.mark.parametrize("value", [NAN, -1.0, True])
def test_curve_thresholds_are_checked(threshold, value):
    with pytest.raises(ValueError, match=f"{threshold} must be a finite number"):
        classify_curve([2.0, 100.0, 1.0], [2.0, 1.5, 1.2], **{threshold: value})


def test_zero_chance_loss_and_blowup_are_refused():
    for name in ("chance_loss", "blowup"):
        with pytest.raises(ValueError, match=f"{name} must be a finite number > 0"):
            classify_curve([1.0, 0.5], [1.0, 0.6], **{name: 0.0})


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: fit_power_law([1.0, 2.0, NAN], [1.0, 2.0, 3.0]), "finite"),
        (lambda: predicted_label_shift([0, 1, 2], [0, 1], 2), r"pred_source must hold classes in \[0, 2\)"),
        (lambda: predicted_label_shift([0, 1], [], 2), "pred_target must be a non-empty 1-D array"),
        (lambda: predicted_label_shift([0, 1], [0.5, 1.0], 2), "pred_target must be a non-empty 1-D array"),
        (lambda: predicted_label_shift([0], [0], 0), "n_classes must be an integer >= 1"),
        (lambda: shift_scenario("label", n=2.5), "n must be an integer >= 1"),
        (lambda: sliced_wasserstein(np.zeros((3, 2)), np.ones((3, 2)), projections=0), "projections must be"),
        (lambda: sliced_wasserstein(np.zeros((3, 2)), np.ones((3, 2)), projections=10_001), "1..10000"),
        (
            lambda: mmd(np.zeros((3, 2)), np.ones((3, 2)), bandwidth=INF),
            "bandwidth must be a finite number > 0",
        ),
        (
            lambda: mmd(np.array([[0.0, NAN], [1, 1]]), np.ones((3, 2))),
            r"x must be finite numbers; x\[0, 1\]",
        ),
        (lambda: wasserstein_1d([], [1.0]), "u needs at least 1 entry"),
        (lambda: classifier_scores(np.full((3, 2), 0.5), threshold=NAN), "threshold must be a fraction"),
        (lambda: fgsm(None, None, None, eps=True), r"eps must be a finite number >= 0, got True \(a bool\)"),
        (lambda: pgd(None, None, None, eps=0.1, alpha=INF, steps=1), "alpha must be a finite number > 0"),
        (lambda: pgd_attack(steps=3, step_scale=INF), "step_scale must be a finite number > 0"),
    ],
)
def test_other_public_functions_refuse_what_they_cannot_mean(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"noise_std": NAN}, "noise_std must be a finite number >= 0"),
        ({"n_datasets": 2.5}, "n_datasets must be an integer >= 2"),
        ({"n_train": True}, "n_train must be an integer >= 1"),
        ({"x_range": (1.0, -1.0)}, "x_range must be"),
        ({"x_range": (NAN, 1.0)}, r"x_range\[0\] must be a finite number"),
        ({"x_test": [0.0, NAN]}, "x_test must be finite"),
    ],
)
def test_bias_variance_arguments(kwargs, match):
    args = dict(noise_std=0.1, x_test=np.linspace(-1, 1, 5), n_train=10, n_datasets=3)
    with pytest.raises(ValueError, match=match):
        bias_variance(polynomial_fit(1), np.sin, **{**args, **kwargs})


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"repeats": True}, "repeats must be an integer >= 1"),
        ({"noise": NAN}, "noise must be a finite number >= 0"),
        ({"feature_counts": [10, 2.5]}, r"feature_counts\[1\] must be an integer"),
        ({"feature_counts": []}, "at least one count"),
        ({"n_test": 0}, "n_test must be an integer >= 1"),
    ],
)
def test_double_descent_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        double_descent(**{"feature_counts": [5, 10], "n_train": 10, "repeats": 1, **kwargs})


def test_messages_show_the_value_given_as_a_plain_number():
    with pytest.raises(ValueError) as info:
        decide(evidence(), min_accuracy=np.float64(NAN))
    assert str(info.value) == "min_accuracy must be a fraction in [0, 1], got nan"
