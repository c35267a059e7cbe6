"""Tests for biaslab.evaluate.shift: each kind of shift is exposed by its own measurement."""

import pytest
from sklearn.linear_model import LogisticRegression

from biaslab.evaluate.shift import domain_auc, predicted_label_shift, shift_scenario


def measure(kind):
    x_s, y_s, x_t, y_t = shift_scenario(kind, n=1500, seed=1)
    half = len(x_s) // 2
    features = lambda x: x  # a linear model: right where it was fitted, wrong where the curve bends
    model = LogisticRegression(max_iter=1000).fit(features(x_s[:half]), y_s[:half])
    held_out = model.predict(features(x_s[half:]))
    return {
        "domain_auc": domain_auc(x_s, x_t),
        "label_shift": predicted_label_shift(held_out, model.predict(features(x_t)), 2),
        "source_accuracy": float((held_out == y_s[half:]).mean()),
        "target_accuracy": float((model.predict(features(x_t)) == y_t).mean()),
    }


def test_covariate_shift_is_seen_in_the_inputs():
    m = measure("covariate")
    assert m["domain_auc"] > 0.95 and m["target_accuracy"] < m["source_accuracy"] - 0.1


def test_label_shift_is_seen_in_the_predicted_class_mix():
    m = measure("label")
    assert m["label_shift"] > 0.25


def test_concept_shift_is_invisible_without_labels():
    m = measure("concept")
    assert m["domain_auc"] < 0.6 and m["label_shift"] < 0.1  # inputs and predictions look the same
    assert m["target_accuracy"] < m["source_accuracy"] - 0.1  # only labels reveal the change


def test_predicted_label_shift_by_hand_and_bad_kind():
    assert predicted_label_shift([0, 0, 1, 1], [0, 0, 0, 0], 2) == pytest.approx(0.5)
    assert predicted_label_shift([0, 1, 2], [2, 1, 0], 3) == 0.0
    with pytest.raises(ValueError, match="kind"):
        shift_scenario("prior")
