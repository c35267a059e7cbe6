"""Metric labels: a record's from its dimensions, a flat key's by the rule of report/labels.py
(the shared words in report/vocabulary.py, a lab's own beside its metrics), example by example,
and the claims' source legend.

That every metric of every lab gets a label is checked on a quick workshop run in
test_workshop_pages.py.
"""

import pytest

from biaslab import registry
from biaslab.records import measure, param, words_from_json, words_to_json
from biaslab.report.labels import labeller, metric_label, record_label, source_notes, unknown_words


def words(lab: str | None):
    """A lab's own words, as it declares them beside its metrics (None: the shared words only)."""
    return None if lab is None else registry.get(lab).words


@pytest.mark.parametrize(
    ("key", "lab", "label"),
    [
        ("auroc_animal-mnist_msp", "ood", "AUROC, Animal-MNIST, max softmax probability"),
        ("auroc_animal-mnist_max_logit", "ood", "AUROC, Animal-MNIST, max logit"),  # two words, one term
        ("test_accuracy", None, "Test accuracy"),  # a modifier joins its measure
        ("mlp_test_accuracy", None, "Test accuracy, MLP"),  # the measure first
        ("sgd_final_val_loss", None, "Final validation loss, SGD"),
        ("fgsm_accuracy_eps_0.1", None, "Accuracy, FGSM, ε = 0.1"),  # a parameter takes its number
        ("lr0.01_final_train_loss", None, "Final training loss, learning rate 0.01"),  # prefix + number
        ("rnn_T5_accuracy", None, "Accuracy, RNN, T = 5"),
        ("mlp_accuracy_45deg", None, "Accuracy, MLP, 45°"),  # number + unit
        ("degree_3_bias2", None, "Bias², degree 3"),
        ("knn5_accuracy_hidden_pca2", None, "5-nearest-neighbour accuracy, hidden layer, PCA to 2-D"),
        ("covariate_domain_AUROC", None, "Domain classifier's AUROC, covariate shift"),  # any case
        ("auroc_knn", None, "AUROC, kNN"),
        ("knn", None, "kNN"),  # a capital inside the first word: left as it is
    ],
)
def test_labels_follow_the_rule(key, lab, label):
    assert metric_label(key, words(lab)) == label
    assert unknown_words(key, words(lab)) == []


def test_a_labs_own_terms_come_first_and_a_whole_key_is_a_label_as_written():
    assert metric_label("cnn_all_test_accuracy", words("decision")) == "Test accuracy, good CNN"
    assert metric_label("cnn_all_test_accuracy") == "Test accuracy, CNN, all"  # "all": unknown elsewhere
    assert unknown_words("cnn_all_test_accuracy") == ["all"]
    assert metric_label("softmax_123", words("gradients")) == "softmax([1, 2, 3])"  # not capitalised
    assert metric_label("double_descent_mse_50", words("bias-variance")) == "Test MSE at 50 random features"
    assert (
        metric_label("latent2d_test_elbo", words("vae"))
        == "Test negative ELBO (nats per image), 2-D latent space"
    )


def test_a_record_is_labelled_from_its_dimensions():
    lab = {"penalty": "CNN with the invariance penalty", "turned": "turned", "lam": param("λ = {}")}
    record = {"name": "accuracy", "dims": {"model": "penalty", "lam": 1.0, "n": 5000, "split": "turned"}}
    assert record_label(record, lab) == "Turned accuracy, CNN with the invariance penalty, λ = 1.0, n = 5000"
    assert record_label({"name": "mae", "dims": {"model": "egnn", "split": "test"}}) == "Test MAE, EGNN"
    assert record_label({"name": "zeros_share", "dims": {"model": "l1"}}) == "Zeros share, l1"  # as written
    gap = {"gap": measure("gap (training minus validation accuracy)")}
    assert record_label({"name": "gap", "dims": {}}, gap) == "Gap (training minus validation accuracy)"
    assert record_label({"name": "error", "dims": {"width": 64, "seed": 2}}) == "Error, width 64, seed = 2"


def test_a_runs_labels_read_its_records_and_its_words():
    lab = {"none": "no regulariser", "gap": measure("gap (training minus validation accuracy)")}
    results = {
        "metrics": {"none_gap": 0.1, "none_test_accuracy": 0.9},
        "records": [{"name": "accuracy", "value": 0.9, "dims": {"model": "none", "split": "test"},
                     "better": "higher", "key": "none_test_accuracy"}],
        "words": words_to_json(lab),
    }  # fmt: skip
    label = labeller(results)
    assert label("none_test_accuracy") == "Test accuracy, no regulariser"  # from the record
    assert label("none_gap") == "Gap (training minus validation accuracy), no regulariser"  # by the key
    assert words_from_json(words_to_json(lab)) == {
        k: v if not isinstance(v, str) else measure(v)._replace(kind="name") for k, v in lab.items()
    }
    assert labeller({"metrics": {"none_gap": 1}})("none_gap") == "Gap, none"  # an old run: shared words


def test_unknown_words_stay_as_written_and_are_reported():
    assert metric_label("FooBar_accuracy") == "Accuracy, FooBar"
    assert unknown_words("FooBar_accuracy") == ["FooBar"]
    assert unknown_words("accuracy_12") == []  # a number needs no vocabulary
    assert metric_label("") == ""
    assert metric_label("__") == "__"


def test_source_notes_explain_the_terms_the_claims_use():
    notes = dict(
        source_notes(["workshop book §5.6; ML-for-physics slides, 'x'", "biaslab's target (audit)", None])
    )
    assert set(notes) == {"workshop book", "ML-for-physics slides", "biaslab's target"}
    assert "five-day workshop book" in notes["workshop book"]
    assert source_notes(["Hendrycks & Gimpel 2017"]) == []
    order = ["lecture notes §6, eq. 6.1", "inductive-bias slides, 'x'", "workshop book §1.4"]
    assert [t for t, _ in source_notes(order)] == ["workshop book", "lecture notes", "inductive-bias slides"]
    everything = source_notes(
        ["workshop book", "lecture notes", "ML-for-physics slides", "inductive-bias slides"]
    )
    assert not any("issue" in meaning.lower() for _, meaning in everything)
