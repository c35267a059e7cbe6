"""Whole-set classification metrics: each equals scikit-learn's; AUROC is not a mean over batches."""

import inspect

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import metrics as skm
from torch import nn

from biaslab.evaluate.metrics import (
    accuracy_score,
    confusion_matrix,
    log_loss,
    pca_basis,
    precision_recall_f1,
    roc_auc,
)
from biaslab.train import TrainConfig, Trainer, accuracy

seeds = st.integers(0, 2**32 - 1)


def labels_pair(seed, n_classes=4):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    return rng.integers(0, n_classes, n), rng.integers(0, n_classes, n)


@pytest.mark.parametrize("metric", [accuracy_score, confusion_matrix, precision_recall_f1, roc_auc, log_loss])
def test_every_metric_takes_the_true_labels_first_as_sklearn(metric):
    assert next(iter(inspect.signature(metric).parameters)) == "y_true"


@settings(max_examples=60, deadline=None)
@given(seeds)
def test_accuracy_and_confusion_matrix_equal_sklearn(seed):
    y, p = labels_pair(seed)
    assert accuracy_score(y_true=y, y_pred=p) == skm.accuracy_score(y_true=y, y_pred=p)
    np.testing.assert_array_equal(confusion_matrix(y, p), skm.confusion_matrix(y, p))
    labels = list(dict.fromkeys([3, int(y[0]), 0, 5]))  # custom order; class 5 never occurs
    np.testing.assert_array_equal(
        confusion_matrix(y, p, labels=labels), skm.confusion_matrix(y, p, labels=labels)
    )


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.UndefinedMetricWarning")
@settings(max_examples=60, deadline=None)
@given(seeds, st.sampled_from(["macro", "weighted", "micro", None]))
def test_precision_recall_f1_equal_sklearn(seed, average):
    y, p = labels_pair(seed)
    ours = precision_recall_f1(y, p, average=average)
    theirs = skm.precision_recall_fscore_support(y, p, average=average)[:3]
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    if average == "macro":
        assert ours[2] == pytest.approx(skm.f1_score(y, p, average="macro"), abs=1e-12)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.UndefinedMetricWarning")
@settings(max_examples=40, deadline=None)
@given(seeds)
def test_binary_precision_recall_f1_equal_sklearn(seed):
    y, p = labels_pair(seed, n_classes=2)
    ours = precision_recall_f1(y, p, average="binary")
    theirs = skm.precision_recall_fscore_support(y, p, average="binary")[:3]
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-12)


@settings(max_examples=80, deadline=None)
@given(seeds, st.booleans())
def test_roc_auc_equals_sklearn_with_ties(seed, coarse):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 80))
    y = rng.integers(0, 2, n)
    y[:2] = [0, 1]  # both classes present
    # Coarse scores have many ties (a tie between a positive and a negative counts 1/2).
    s = rng.integers(0, 4, n).astype(float) if coarse else rng.normal(size=n) + y
    assert roc_auc(y, s) == pytest.approx(skm.roc_auc_score(y, s), abs=1e-12)
    assert roc_auc(2 * y - 1, s) == pytest.approx(skm.roc_auc_score(2 * y - 1, s), abs=1e-12)


def test_roc_auc_needs_two_classes():
    with pytest.raises(ValueError, match="two classes"):
        roc_auc(np.ones(5), np.arange(5.0))


@settings(max_examples=60, deadline=None)
@given(seeds, st.integers(2, 5))
def test_log_loss_equals_sklearn(seed, k):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    y = rng.integers(0, k, n)
    y[:k] = np.arange(k)[: min(k, n)] if n >= k else y[:k]
    probs = rng.dirichlet(np.full(k, 0.3), n)  # some near 0: exercises the clipping
    labels = np.arange(k)
    assert log_loss(y, probs, labels=labels) == pytest.approx(
        skm.log_loss(y, probs, labels=labels), abs=1e-12
    )
    p1 = rng.uniform(size=n)  # binary, as the probability of the positive class
    p1[0] = 0.0
    yb = rng.integers(0, 2, n)
    assert log_loss(yb, p1, labels=[0, 1]) == pytest.approx(skm.log_loss(yb, p1, labels=[0, 1]), abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(seeds)
def test_trainer_accuracy_equals_sklearn_exactly(seed):
    g = torch.Generator().manual_seed(seed % 2**63)
    n = int(torch.randint(1, 5000, (1,), generator=g))
    out, y = torch.randn(n, 3, generator=g), torch.randint(0, 3, (n,), generator=g)
    acc = accuracy(out, y)
    assert isinstance(acc, float)
    assert acc == skm.accuracy_score(y.numpy(), out.argmax(1).numpy())


class Score(nn.Module):
    """Returns its single input feature (times 1) as the score: the model is the data."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(()))

    def forward(self, x):
        return x[:, 0] * self.scale


def test_auroc_is_computed_on_the_whole_set_not_averaged_over_batches():
    # Two batches, each perfectly ranked, but the first batch's scores are all higher:
    # per batch AUROC = 1, over the whole set the high negatives outrank the low positives.
    scores = torch.tensor([0.8, 0.7, 0.95, 0.9, 0.1, 0.0, 0.3, 0.2])
    y = torch.tensor([0, 0, 1, 1, 0, 0, 1, 1])
    whole = skm.roc_auc_score(y.numpy(), scores.numpy())
    batch_mean = np.mean([skm.roc_auc_score(y[i : i + 4].numpy(), scores[i : i + 4].numpy()) for i in (0, 4)])
    assert batch_mean == 1.0 and whole == 12 / 16

    def auroc(out, target):
        return roc_auc(target.numpy(), out.numpy())

    trainer = Trainer(
        Score(), lambda o, t: ((o - t) ** 2).mean(), TrainConfig(epochs=1), metrics={"auroc": auroc}
    )
    result = trainer.evaluate((scores[:, None], y), batch_size=4)
    assert result["auroc"] == pytest.approx(whole, abs=1e-12)
    # The loss stays the batch-size-weighted mean of the batch losses.
    losses = [((scores[i : i + 4] - y[i : i + 4]) ** 2).mean().item() for i in (0, 4)]
    assert result["loss"] == (losses[0] * 4 + losses[1] * 4) / 8


def test_pca_basis_is_the_top_eigenvectors_of_the_covariance():
    rng = np.random.default_rng(3)
    x = (
        rng.normal(size=(300, 6))
        * np.array([4.0, 3.0, 2.0, 1.0, 0.5, 0.2])
        @ np.linalg.qr(rng.normal(size=(6, 6)))[0]
    )
    x += 5.0  # PCA centres: the mean plays no part
    basis = pca_basis(x, 3)
    assert basis.shape == (6, 3)
    np.testing.assert_allclose(basis.T @ basis, np.eye(3), atol=1e-10)  # orthonormal columns
    _, vectors = np.linalg.eigh(np.cov(x, rowvar=False))  # the reference, ascending
    top = vectors[:, ::-1][:, :3]
    np.testing.assert_allclose(np.abs(np.sum(basis * top, axis=0)), 1.0, atol=1e-8)  # equal up to sign
