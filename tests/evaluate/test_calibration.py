"""Calibration: ECE / MCE equal torchmetrics' and hand computations; temperature scaling works."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torchmetrics.classification import BinaryCalibrationError, MulticlassCalibrationError

from biaslab.evaluate.calibration import (
    NotFittedError,
    ReliabilityDiagram,
    TemperatureScaling,
    expected_calibration_error,
    maximum_calibration_error,
    reliability_bins,
)


def random_probs(seed, n, c, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    scale = torch.rand(n, 1, generator=g, dtype=torch.float64) * 6  # spread the confidences over [1/C, 1]
    logits = torch.randn(n, c, generator=g, dtype=torch.float64) * scale
    return torch.softmax(logits, dim=1).to(dtype), torch.randint(0, c, (n,), generator=g)


def torchmetrics_ce(probs, labels, n_bins, norm):
    metric = MulticlassCalibrationError(num_classes=probs.shape[1], n_bins=n_bins, norm=norm)
    return float(metric(torch.as_tensor(probs), torch.as_tensor(labels)))


# -- ECE / MCE against torchmetrics ----------------------------------------------------------------

CASES = [(1, 2, 15), (7, 3, 1), (50, 3, 5), (500, 10, 15), (1000, 5, 10), (2000, 100, 20), (300, 2, 7)]


@pytest.mark.parametrize(("n", "c", "n_bins"), CASES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_ece_mce_equal_torchmetrics(n, c, n_bins, dtype):
    probs, labels = random_probs(1000 * n + c, n, c, dtype)
    for norm in ("l1", "l2", "max"):
        expected = torchmetrics_ce(probs, labels, n_bins, norm)
        assert expected_calibration_error(probs, labels, n_bins, norm=norm) == pytest.approx(
            expected, abs=1e-6
        )
    assert expected_calibration_error(probs, labels, n_bins) == pytest.approx(
        torchmetrics_ce(probs, labels, n_bins, "l1"), abs=1e-6
    )
    assert maximum_calibration_error(probs, labels, n_bins) == pytest.approx(
        torchmetrics_ce(probs, labels, n_bins, "max"), abs=1e-6
    )
    # NumPy arrays give the same numbers as tensors
    assert expected_calibration_error(probs.numpy(), labels.numpy(), n_bins) == expected_calibration_error(
        probs, labels, n_bins
    )


@pytest.mark.parametrize("n_bins", [1, 4, 10, 15])
def test_confidence_vector_equals_torchmetrics_binary(n_bins):
    g = torch.Generator().manual_seed(n_bins)
    conf = torch.rand(400, generator=g)
    correct = (torch.rand(400, generator=g) < conf).long()
    for norm in ("l1", "max"):
        expected = float(BinaryCalibrationError(n_bins=n_bins, norm=norm)(conf, correct))
        assert expected_calibration_error(conf, correct, n_bins, norm=norm) == pytest.approx(
            expected, abs=1e-6
        )


@pytest.mark.parametrize("n_bins", [2, 4, 5, 10])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_confidences_on_edges_binned_like_torchmetrics(n_bins, dtype):
    # every edge b / n_bins (0.5 ... 1.0) as a confidence, each once right and once wrong, plus one
    # extra correct prediction in the top bins so right/wrong do not cancel
    rows, labels = [], []
    for b in range(math.ceil(n_bins / 2), n_bins + 1):
        p = b / n_bins
        rows += [[p, 1 - p]] * 2
        labels += [0, 1]
    rows.append([0.99 if n_bins > 1 else 0.6, 0.01 if n_bins > 1 else 0.4])
    labels.append(0)
    probs, labels = torch.tensor(rows, dtype=dtype), torch.tensor(labels)
    diagram = reliability_bins(probs, labels, n_bins)
    for b in range(math.ceil(n_bins / 2), n_bins + 1):  # each edge starts the bin it lands in
        assert diagram.counts[b] >= 2
    assert diagram.counts[n_bins] == 2  # exactly 1.0: its own bin
    for norm in ("l1", "max"):
        expected = torchmetrics_ce(probs, labels, n_bins, norm)
        assert expected_calibration_error(probs, labels, n_bins, norm=norm) == pytest.approx(
            expected, abs=1e-6
        )


def test_saturated_float64_confidence_counts_as_one_like_torchmetrics():
    probs = torch.tensor([[1 - 1e-12, 1e-12], [0.97, 0.03]], dtype=torch.float64)
    labels = torch.tensor([1, 0])
    assert reliability_bins(probs, labels).counts[15] == 1  # rounds to 1.0 in float32
    assert expected_calibration_error(probs, labels) == pytest.approx(
        torchmetrics_ce(probs, labels, 15, "l1"), abs=1e-6
    )
    assert expected_calibration_error(probs, labels) == pytest.approx(0.5 * 1.0 + 0.5 * 0.03, abs=1e-9)


# -- hand computations -----------------------------------------------------------------------------


def test_four_predictions_by_hand():
    # n_bins=4: bins [0, .25) [.25, .5) [.5, .75) [.75, 1) and {1.0}
    probs = np.array(
        [
            [0.5, 0.3, 0.2],  # conf 0.5 on an edge -> bin 2, correct (label 0)
            [0.2, 0.6, 0.2],  # conf 0.6 -> bin 2, wrong (label 2)
            [0.1, 0.1, 0.8],  # conf 0.8 -> bin 3, correct
            [0.0, 1.0, 0.0],  # conf 1.0 -> bin 4 of its own, wrong (label 0)
        ]
    )
    labels = np.array([0, 2, 2, 0])
    d = reliability_bins(probs, labels, n_bins=4)
    assert isinstance(d, ReliabilityDiagram)
    np.testing.assert_array_equal(d.counts, [0, 0, 2, 1, 1])
    np.testing.assert_allclose(d.confidence, [np.nan, np.nan, 0.55, 0.8, 1.0])
    np.testing.assert_allclose(d.accuracy, [np.nan, np.nan, 0.5, 1.0, 0.0])
    np.testing.assert_allclose(d.edges, [0, 0.25, 0.5, 0.75, 1.0])
    ece = 2 / 4 * 0.05 + 1 / 4 * 0.2 + 1 / 4 * 1.0  # = 0.325
    assert expected_calibration_error(probs, labels, n_bins=4) == pytest.approx(ece, abs=1e-12)
    assert maximum_calibration_error(probs, labels, n_bins=4) == pytest.approx(1.0, abs=1e-12)
    rms = math.sqrt(2 / 4 * 0.05**2 + 1 / 4 * 0.2**2 + 1 / 4 * 1.0**2)
    assert expected_calibration_error(probs, labels, 4, norm="l2") == pytest.approx(rms, abs=1e-12)
    assert torchmetrics_ce(torch.tensor(probs, dtype=torch.float32), labels, 4, "l1") == pytest.approx(
        ece, abs=1e-6
    )


def test_confidence_vector_by_hand_and_one_bin():
    conf = np.array([0.9, 0.9, 0.3, 0.1])
    correct = np.array([True, False, True, False])
    # n_bins=2: bin [0, .5) has 0.3 (right), 0.1 (wrong): conf .2, acc .5; bin [.5, 1): conf .9, acc .5
    assert expected_calibration_error(conf, correct, n_bins=2) == pytest.approx(0.5 * 0.3 + 0.5 * 0.4)
    assert maximum_calibration_error(conf, correct, n_bins=2) == pytest.approx(0.4)
    # one bin: |mean accuracy - mean confidence|
    assert expected_calibration_error(conf, correct, n_bins=1) == pytest.approx(abs(0.5 - 0.55))


def test_certain_predictions_and_empty_bins():
    probs = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    assert expected_calibration_error(probs, torch.tensor([0, 1])) == 0.0  # certain and right
    assert expected_calibration_error(probs, torch.tensor([1, 0])) == 1.0  # certain and wrong
    assert maximum_calibration_error(probs, torch.tensor([0, 0])) == 0.5
    d = reliability_bins(probs, torch.tensor([0, 0]), n_bins=15)
    assert d.counts.shape == (16,) and d.counts.sum() == 2 and d.counts[15] == 2
    assert np.isnan(d.accuracy[:15]).all() and np.isnan(d.confidence[:15]).all()
    # MCE ignores the empty bins: a single non-empty bin decides it
    conf, correct = np.array([0.55, 0.65]), np.array([1, 1])
    assert maximum_calibration_error(conf, correct, n_bins=10) == pytest.approx(0.45)


# -- input validation ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("probs", "labels", "match"),
    [
        (np.array([[0.5, 0.4], [0.2, 0.8]]), np.array([0, 1]), "sum to 1; row 0 sums to 0.9"),
        (np.ones((2, 2, 2)) / 2, np.array([0, 1]), r"shape \(N, C\) or \(N,\)"),
        (np.zeros((0, 3)), np.zeros(0, dtype=int), r"shape \(N, C\)"),
        (np.array([[0.5, 0.5]]), np.array([0, 1]), r"labels must have shape \(1,\)"),
        (np.array([[0.5, 0.5]]), np.array([2]), r"labels must lie in \[0, 2\)"),
        (np.array([[0.5, 0.5]]), np.array([0.0]), "labels must be integers"),
        (np.array([[1, 0]]), np.array([0]), "floating-point"),
        (np.array([[2.0, -1.0]]), np.array([0]), "apply softmax first"),
        (np.array([[np.nan, 1.0]]), np.array([0]), r"in \[0, 1\]"),
        (np.array([0.7, 0.2]), np.array([1, 2]), "correct"),
    ],
)
def test_bad_inputs_raise_clear_errors(probs, labels, match):
    with pytest.raises(ValueError, match=match):
        expected_calibration_error(probs, labels)


def test_bad_bins_and_norm():
    probs, labels = np.array([[0.5, 0.5]]), np.array([0])
    for n_bins in (0, -3, 2.0, True):
        with pytest.raises(ValueError, match=r"n_bins must be an integer in 1\.\.10000"):
            reliability_bins(probs, labels, n_bins)
    with pytest.raises(ValueError, match="norm must be one of"):
        expected_calibration_error(probs, labels, norm="l3")


# -- temperature scaling ---------------------------------------------------------------------------


def synthetic(seed, n=4000, c=5, overconfidence=3.0):
    """Labels drawn from softmax(true logits); the model reports ``overconfidence x`` true logits."""
    rng = np.random.default_rng(seed)
    true = rng.normal(size=(n, c)) * 2.0
    p = np.exp(true - true.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    labels = (rng.random((n, 1)) > np.cumsum(p, axis=1)).sum(axis=1).clip(max=c - 1)
    return torch.tensor(true * overconfidence), torch.tensor(labels)


def nll(logits, labels, t):
    return float(F.cross_entropy(logits.double() / t, labels))


def test_transform_before_fit_raises():
    ts = TemperatureScaling()
    assert vars(ts) == {"min_temperature": 1e-2, "max_temperature": 1e2}  # __init__ only stores
    for method in (ts.transform, ts.predict_proba):
        with pytest.raises(NotFittedError, match=r"not fitted yet; call fit"):
            method(torch.zeros(2, 3))
    assert issubclass(NotFittedError, ValueError)


def test_overconfident_logits_give_t_near_3_and_lower_ece():
    logits, labels = synthetic(0)
    ts = TemperatureScaling()
    assert ts.fit(logits, labels) is ts
    assert abs(ts.temperature_ - 3.0) < 0.25
    before = expected_calibration_error(torch.softmax(logits, 1), labels)
    test_logits, test_labels = synthetic(1)  # a fresh split from the same source
    after = expected_calibration_error(ts.predict_proba(test_logits), test_labels)
    raw = expected_calibration_error(torch.softmax(test_logits, 1), test_labels)
    assert before > 0.1 and raw > 0.1
    assert after < raw / 4


def test_calibrated_logits_give_t_near_1():
    logits, labels = synthetic(2, overconfidence=1.0)
    assert abs(TemperatureScaling().fit(logits, labels).temperature_ - 1.0) < 0.08


def test_fitted_temperature_really_changes_probabilities():
    logits, labels = synthetic(3)
    ts = TemperatureScaling().fit(logits, labels)
    assert ts.temperature_ > 1.5
    scaled = ts.predict_proba(logits)
    unscaled = torch.softmax(logits, dim=1)
    assert (scaled - unscaled).abs().max() > 0.1  # not a no-op ...
    assert torch.equal(scaled.argmax(1), unscaled.argmax(1))  # ... but the argmax stays
    torch.testing.assert_close(scaled.sum(1), torch.ones(len(logits), dtype=scaled.dtype))
    torch.testing.assert_close(ts.transform(logits), logits / ts.temperature_)
    # an array in gives an array out, with the same numbers
    out = ts.predict_proba(logits.numpy())
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(out, scaled.numpy())
    assert isinstance(ts.transform(logits.float().numpy()), np.ndarray)


def test_fitted_temperature_minimises_validation_nll():
    logits, labels = synthetic(4, n=2000, overconfidence=2.0)
    ts = TemperatureScaling().fit(logits, labels)
    t = ts.temperature_
    assert ts.nll_ == pytest.approx(nll(logits, labels, t), abs=1e-12)
    assert ts.nll_ < nll(logits, labels, 1.0)
    for factor in (0.99, 0.999, 1.001, 1.01):
        assert ts.nll_ <= nll(logits, labels, t * factor) + 1e-12
    assert ts.n_iter_ >= 1 and ts.n_classes_ == 5


def test_fit_is_deterministic_and_leaves_global_rng_alone():
    logits, labels = synthetic(5, n=1000)
    torch_state, np_state = torch.get_rng_state(), np.random.get_state()
    torch.manual_seed(1)
    t1 = TemperatureScaling().fit(logits, labels).temperature_
    torch.manual_seed(2)
    t2 = TemperatureScaling().fit(logits, labels).temperature_
    assert t1 == t2
    torch.manual_seed(3)
    before = torch.get_rng_state()
    with torch.no_grad():  # fitting works inside no_grad too
        t3 = TemperatureScaling().fit(logits.numpy(), labels.numpy()).temperature_
    assert torch.equal(torch.get_rng_state(), before)
    assert t3 == pytest.approx(t1, rel=1e-9)
    # only the data passed matters: another split gives another temperature
    other = TemperatureScaling().fit(*synthetic(6, n=1000)).temperature_
    assert other != t1
    torch.set_rng_state(torch_state)
    np.random.set_state(np_state)


def test_separable_data_stops_at_the_temperature_bound():
    logits = torch.tensor([[1.0, 0.0], [0.0, 1.0]] * 5)  # NLL -> 0 as T -> 0: no minimum
    labels = torch.tensor([0, 1] * 5)
    ts = TemperatureScaling(min_temperature=0.05).fit(logits, labels)
    assert ts.temperature_ == pytest.approx(0.05)
    assert math.isfinite(ts.nll_) and ts.nll_ < 1e-8


def test_fit_and_transform_validate_inputs():
    logits, labels = synthetic(7, n=50)
    with pytest.raises(ValueError, match=r"logits must have shape \(N, C\)"):
        TemperatureScaling().fit(logits[:, 0], labels)
    with pytest.raises(ValueError, match="finite"):
        TemperatureScaling().fit(torch.full((2, 3), float("nan")), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="labels must be integers"):
        TemperatureScaling().fit(logits, labels[:-1])
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 5\)"):
        TemperatureScaling().fit(logits, labels + 5)
    with pytest.raises(ValueError, match="min_temperature"):
        TemperatureScaling(min_temperature=0.0).fit(logits, labels)
    ts = TemperatureScaling().fit(logits, labels)
    with pytest.raises(ValueError, match="fitted on 5 classes"):
        ts.transform(torch.zeros(3, 4))
