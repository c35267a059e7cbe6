"""OOD detectors (sklearn contract, higher = more OOD) and metrics equal to scikit-learn's."""

import inspect

import numpy as np
import pytest
import torch
from scipy.special import logsumexp, softmax
from sklearn import metrics as skm
from sklearn.covariance import EmpiricalCovariance
from sklearn.neighbors import NearestNeighbors

from biaslab.evaluate import ood
from biaslab.evaluate.ood import (
    KNN,
    MSP,
    Energy,
    Mahalanobis,
    MaxLogit,
    NotFittedError,
    aupr,
    auroc,
    choose_detector,
    classifier_outputs,
    fit_detectors,
    fpr_at_95_tpr,
    ood_report,
    ood_scores,
)

DETECTORS = [(MSP, {}), (MaxLogit, {}), (Energy, {"temperature": 2.0}), (Mahalanobis, {}), (KNN, {"k": 5})]
LEARNS = (Mahalanobis, KNN)


def synthetic(seed=0, n_classes=3, dim=8, n=100):
    """Class clusters at 5 e_c; OOD features far away at -4 (1, ..., 1); logits = features . e_c.

    In-distribution logits are confident (about 5 on the true class, 0 elsewhere); OOD logits are
    flat and low (about -4 on every class).
    """
    rng = np.random.default_rng(seed)
    means = 5.0 * np.eye(n_classes, dim)

    def draw(m):
        y = rng.integers(0, n_classes, m)
        return means[y] + rng.normal(size=(m, dim)), y

    train, y_train = draw(3 * n)
    test_in, _ = draw(n)
    test_out = -4.0 + rng.normal(size=(n, dim))
    logits = lambda h: h[:, :n_classes]
    return train, y_train, test_in, test_out, logits


def fitted(det, train, y_train):
    return det.fit(train, y_train) if det.uses == "features" else det.fit()


@pytest.mark.parametrize(("cls", "kwargs"), DETECTORS, ids=[c.__name__ for c, _ in DETECTORS])
def test_detector_contract_and_direction(cls, kwargs):
    det = cls(**kwargs)
    params = inspect.signature(cls).parameters.values()
    names = [p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    assert set(vars(det)) == set(names)  # __init__ stores its arguments and nothing else ...
    args = {name: getattr(det, name) for name in names}
    assert args.items() >= kwargs.items()  # ... unchanged
    assert not [a for a in vars(det) if a.endswith("_")]
    assert repr(det).startswith(type(det).__name__ + "(")

    train, y_train, test_in, test_out, logits = synthetic()
    x_in, x_out = (h if det.uses == "features" else logits(h) for h in (test_in, test_out))
    if isinstance(det, LEARNS):
        with pytest.raises(NotFittedError, match="not fitted"):
            det.score(x_in)
    assert fitted(det, train, y_train) is det
    assert vars(det).items() >= args.items()  # arguments unchanged by fit
    s_in, s_out = det.score(x_in), det.score(torch.tensor(x_out, requires_grad=True))
    for s in (s_in, s_out):
        assert isinstance(s, np.ndarray) and s.shape == (100,) and s.dtype == np.float64
    assert auroc(s_in, s_out) > 0.9  # higher score = more out-of-distribution
    np.testing.assert_array_equal(ood_scores(det, logits=logits(test_in), features=test_in), s_in)


def test_logit_scores_equal_formulas():
    z = np.random.default_rng(1).normal(scale=3.0, size=(50, 7))
    np.testing.assert_allclose(MSP().score(z), -softmax(z, axis=1).max(axis=1), rtol=1e-12)
    np.testing.assert_array_equal(MaxLogit().score(torch.tensor(z)), -z.max(axis=1))
    for t in (0.5, 1.0, 3.0):
        np.testing.assert_allclose(Energy(t).score(z), -t * logsumexp(z / t, axis=1), rtol=1e-12)
    big = np.array([[1000.0, 0.0, -1000.0]])  # no overflow
    assert MSP().score(big)[0] == -1.0 and Energy().score(big)[0] == pytest.approx(-1000.0)
    with pytest.raises(ValueError, match="temperature"):
        Energy(temperature=0).score(z)
    with pytest.raises(ValueError, match="2-D"):
        MSP().score(z[0])


def test_mahalanobis_equals_hand_computation_and_sklearn():
    rng = np.random.default_rng(2)
    h, y = rng.normal(size=(90, 5)) @ rng.normal(size=(5, 5)), rng.integers(0, 3, 90)
    q = rng.normal(size=(20, 5))
    det = Mahalanobis().fit(torch.tensor(h), torch.tensor(y))
    mus = np.stack([h[y == c].mean(axis=0) for c in range(3)])
    centred = h - mus[y]
    prec = np.linalg.inv(centred.T @ centred / len(h))
    hand = np.min([np.einsum("nd,de,ne->n", q - m, prec, q - m) for m in mus], axis=0)
    np.testing.assert_allclose(det.score(q), hand, rtol=1e-9)
    emp = EmpiricalCovariance(assume_centered=True).fit(centred)
    np.testing.assert_allclose(det.score(q), np.min([emp.mahalanobis(q - m) for m in mus], axis=0), rtol=1e-9)
    np.testing.assert_array_equal(det.classes_, [0, 1, 2])
    assert det.means_.shape == (3, 5) and det.precision_.shape == (5, 5)


def test_mahalanobis_singular_covariance_uses_pseudo_inverse():
    rng = np.random.default_rng(3)
    h, y = rng.normal(size=(6, 10)), np.array([0, 0, 0, 1, 1, 1])  # more dimensions than samples
    h[:, -1] = 0.0  # a dead unit
    det = Mahalanobis().fit(h, y)
    q = rng.normal(size=(4, 10))
    emp = EmpiricalCovariance(assume_centered=True).fit(h - det.means_[y])
    s = det.score(q)
    assert np.isfinite(s).all() and (s >= 0).all()
    np.testing.assert_allclose(s, np.min([emp.mahalanobis(q - m) for m in det.means_], axis=0), rtol=1e-8)
    with pytest.raises(ValueError, match="labels"):
        Mahalanobis().fit(h, y[:5])


@pytest.mark.parametrize("normalize", [True, False])
def test_knn_equals_sklearn_nearest_neighbors(normalize, monkeypatch):
    monkeypatch.setattr(ood, "_BLOCK_ELEMENTS", 7 * 200)  # blocks of 7 query rows: 43 = 6 x 7 + 1
    rng = np.random.default_rng(4)
    train, q = rng.normal(size=(200, 6)) * 3.0, rng.normal(size=(43, 6)) * 3.0
    k = 9
    det = KNN(k=k, normalize=normalize).fit(train)
    unit = (lambda a: a / np.linalg.norm(a, axis=1, keepdims=True)) if normalize else (lambda a: a)
    dist, _ = NearestNeighbors(n_neighbors=k).fit(unit(train)).kneighbors(unit(q))
    np.testing.assert_allclose(det.score(torch.tensor(q)), dist[:, k - 1], rtol=1e-9, atol=1e-12)
    assert det.train_features_.shape == (200, 6)
    with pytest.raises(ValueError, match="k must be"):
        KNN(k=201).fit(train)


def test_ood_scores_needs_the_detectors_input():
    with pytest.raises(ValueError, match="features="):
        ood_scores(KNN(k=1), logits=np.zeros((2, 3)))


def test_fit_detectors_fits_each_detector_as_alone_and_subsamples_knn_with_its_seed():
    train, y_train, test_in, _, logits = synthetic(seed=5)
    fitted = fit_detectors(train, y_train, knn_k=3, knn_train=50, seed=7)
    assert list(fitted) == ["MSP", "max logit", "energy", "Mahalanobis", "kNN"]
    alone = Mahalanobis().fit(train, y_train)
    np.testing.assert_array_equal(fitted["Mahalanobis"].score(test_in), alone.score(test_in))
    rows = np.random.default_rng(7).choice(len(train), 50, replace=False)
    np.testing.assert_array_equal(fitted["kNN"].score(test_in), KNN(k=3).fit(train[rows]).score(test_in))
    everything = fit_detectors(train, y_train, knn_k=3)  # knn_train=None: all training features
    assert len(everything["kNN"].train_features_) == len(train)
    np.testing.assert_array_equal(fitted["energy"].score(logits(test_in)), Energy().score(logits(test_in)))


def test_classifier_outputs_are_the_logits_and_features_in_eval_mode_and_batches():
    from biaslab.nn import CNN, MLP

    torch.manual_seed(0)
    mlp = MLP((6, 5, 3), dropout=0.5).train()
    x = torch.randn(2100, 6)  # more rows than one evaluation batch
    out = classifier_outputs(mlp, x)
    assert not mlp.training  # eval mode: dropout off, so the outputs are the deterministic ones
    with torch.no_grad():
        np.testing.assert_allclose(out["logits"], mlp(x).numpy(), atol=1e-6, rtol=0)
        np.testing.assert_allclose(out["features"], mlp.hidden(x).numpy(), atol=1e-6, rtol=0)
    cnn = CNN(1, (2,), 3, input_size=6, global_pool=None)
    images = torch.randn(4, 1, 6, 6)
    out = classifier_outputs(cnn, images, "embedding")
    assert out["features"].shape == (4, 18) and out["logits"].shape == (4, 3)


def test_classifier_outputs_with_the_head_run_the_network_once_to_the_same_bits():
    from biaslab.nn import CNN

    torch.manual_seed(0)
    cnn = CNN(1, (4, 8), 10, input_size=28, global_pool=None)
    images = torch.randn(2100, 1, 28, 28)  # more rows than one evaluation batch
    twice = classifier_outputs(cnn, images, "embedding")
    calls = []
    cnn.blocks.register_forward_hook(lambda module, args, out: calls.append(len(args[0])))
    once = classifier_outputs(cnn, images, "embedding", head=cnn.head)
    assert sum(calls) == len(images)  # the convolutions saw each image once
    for key in ("logits", "features"):
        np.testing.assert_array_equal(once[key], twice[key])


def test_choose_detector_picks_the_highest_auroc_on_the_data_it_is_given():
    train, y_train, test_in, test_out, logits = synthetic(seed=4)
    detectors = {"MSP": MSP(), "Mahalanobis": Mahalanobis().fit(train, y_train)}
    inside = {"logits": logits(test_in), "features": test_in}
    outside = {"logits": logits(test_out), "features": test_out}
    name, aurocs = choose_detector(detectors, inside, outside)
    expected = {
        n: skm.roc_auc_score(
            np.r_[np.zeros(100), np.ones(100)], np.r_[ood_scores(d, **inside), ood_scores(d, **outside)]
        )
        for n, d in detectors.items()
    }
    assert aurocs == pytest.approx(expected, abs=1e-12) and name == max(expected, key=expected.get)
    confident = {"logits": 10.0 * np.eye(3)[np.zeros(100, int)], "features": test_out}  # fools MSP
    name, aurocs = choose_detector(detectors, inside, confident)
    assert name == "Mahalanobis" and aurocs["MSP"] < 0.5 < aurocs["Mahalanobis"]


# -- metrics ---------------------------------------------------------------------------------


def random_scores(seed):
    rng = np.random.default_rng(seed)
    n_in, n_out = rng.integers(1, 80, size=2)
    if seed % 2:  # coarse values: many ties, within and across the two sets
        return rng.integers(0, 5, n_in).astype(float), rng.integers(1, 6, n_out).astype(float)
    return rng.normal(size=n_in), rng.normal(0.7, size=n_out)


def sklearn_fpr(s_in, s_out, tpr=0.95):
    y = np.r_[np.zeros(len(s_in)), np.ones(len(s_out))]
    fpr, tprs, _ = skm.roc_curve(y, np.r_[s_in, s_out], drop_intermediate=False)
    return fpr[tprs >= tpr].min()


@pytest.mark.parametrize("seed", range(40))
def test_metrics_equal_sklearn(seed):
    s_in, s_out = random_scores(seed)
    y, s = np.r_[np.zeros(len(s_in)), np.ones(len(s_out))], np.r_[s_in, s_out]
    assert abs(auroc(s_in, s_out) - skm.roc_auc_score(y, s)) <= 1e-12
    assert abs(aupr(s_in, s_out) - skm.average_precision_score(y, s)) <= 1e-12
    for tpr in (0.95, 0.5, 1.0):
        assert fpr_at_95_tpr(s_in, s_out, tpr=tpr) == sklearn_fpr(s_in, s_out, tpr)
    report = ood_report(s_in, s_out)
    assert report == {
        "auroc": auroc(s_in, s_out),
        "aupr": aupr(s_in, s_out),
        "fpr_at_95_tpr": fpr_at_95_tpr(s_in, s_out),
    }
    assert all(type(v) is float for v in report.values())


def test_metrics_hand_examples():
    # pairs (out, in): (1, 0) won, (1, 1) tie = 1/2, (2, 0) won, (2, 1) won -> 3.5 / 4
    assert auroc([0.0, 1.0], [1.0, 2.0]) == 0.875
    # t = 2: P = 1, R = 1/2; t = 1 (a tied in/out pair enters at once): P = 2/3, R = 1
    assert aupr([0.0, 1.0], [1.0, 2.0]) == pytest.approx(0.5 * 1 + 0.5 * 2 / 3, abs=1e-15)
    # 20 OOD scores 1..20: keeping 19 of them (95%) puts the threshold at 2; in-scores >= 2,
    # the tie at 2 included, are 2, 2.5, 3 -> 3 of 5
    out = np.arange(1.0, 21.0)
    assert fpr_at_95_tpr([0.0, 1.5, 2.0, 2.5, 3.0], out) == 0.6
    assert fpr_at_95_tpr([0.0, 1.5, 1.9], out) == 0.0
    assert fpr_at_95_tpr([5.0], [1.0]) == 1.0  # one OOD sample: the threshold is its score
    assert auroc([0.0], [1.0]) == aupr([0.0], [1.0]) == 1.0
    with pytest.raises(ValueError, match="at least one"):
        auroc([], [1.0])
    with pytest.raises(ValueError, match="finite"):
        aupr([np.nan], [1.0])
    with pytest.raises(ValueError, match="tpr"):
        fpr_at_95_tpr([0.0], [1.0], tpr=0.0)
