"""Tests for biaslab.comparison.protocol (and its fitting / curves modules): one split, statistics
from the training rows only, choices on validation, the test rows read once, learning curves."""

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

from biaslab.comparison import protocol
from biaslab.comparison.fitting import Trial
from biaslab.comparison.protocol import fit_candidate, learning_curve, nested_order, prepare
from biaslab.data.user_data import UserData
from biaslab.errors import ConfigError
from biaslab.train.config import TrainConfig
from biaslab.train.recipes import TrainSetup

QUIET = TrainSetup(progress=False)
CONFIG = TrainConfig(epochs=3, batch_size=32, lr=1e-2)


@dataclass(frozen=True)
class Candidate:
    """The fields of biaslab.comparison.candidates.Candidate (the protocol duck-types them)."""

    name: str
    prior: str
    engine: str
    build: Callable[[tuple[int, ...], int, str], Any]
    augment: Callable | None = None
    takes_mask: bool = False


class Records:
    """A metrics logger that keeps the trainer's records."""

    def __init__(self):
        self.records = []

    def log(self, record):
        self.records.append(record)

    def rewind(self, step):
        pass


def tiny_mlp(input_shape, n_outputs, task):
    return nn.Sequential(
        nn.Flatten(), nn.Linear(math.prod(input_shape), 16), nn.ReLU(), nn.Linear(16, n_outputs)
    )


MLP = Candidate("MLP", "none", "torch", tiny_mlp)


def logistic(input_shape, n_outputs, task):
    from sklearn.linear_model import LogisticRegression, Ridge

    return LogisticRegression() if task == "classify" else Ridge(alpha=1.0)


LINEAR = Candidate("linear", "a hyperplane", "sklearn", logistic)


# -- data ---------------------------------------------------------------------------------
def table(n=200, task="classify", seed=0, rare=None):
    """Columns on different scales; classify: y = [x0/10 + x1 > 0] (unbalanced); regress:
    y = 3·x0 − 20·x1 + 500 + noise, in a unit far from standard."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)) * np.array([10.0, 1.0, 0.1, 5.0]) + np.array([3.0, 0.5, -2.0, 40.0])
    x = x.astype(np.float32)
    if task == "regress":
        y = (3 * x[:, 0] - 20 * x[:, 1] + 500 + rng.normal(size=n)).astype(np.float32)
        return UserData("table", "regress", x, y)
    y = (x[:, 0] / 10 + x[:, 1] > 0.8).astype(np.int64)
    classes = (0, 1)
    if rare is not None:  # a third class of `rare` rows
        y[:rare] = 2
        classes = (0, 1, 2)
    return UserData("table", "classify", x, y, classes=classes)


def images(n=120, seed=0):
    """1×8×8 images: a bright blob left (class 0) or right (class 1) of the centre."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    x = rng.uniform(0, 0.2, size=(n, 1, 8, 8))
    for i, label in enumerate(y):
        col = rng.integers(0, 3) + (5 if label else 0)
        x[i, 0, 2:6, col] += 0.7
    return UserData("image", "classify", x.astype(np.float32), y.astype(np.int64), classes=(0, 1))


def sets(n=160, size=6, seed=0):
    """Sets of 2..6 elements of 2 features, padded; the class: is the sum of feature 0 > 0."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(2, size + 1, n)
    mask = np.arange(size)[None, :] < lengths[:, None]
    x = rng.normal(size=(n, size, 2)) * np.array([1.0, 3.0]) + np.array([0.0, 7.0])
    x = np.where(mask[..., None], x, 0.0).astype(np.float32)
    y = ((x[..., 0] * mask).sum(1) > 0).astype(np.int64)
    return UserData("set", "classify", x, y, classes=(0, 1), mask=mask)


class SumOfElements(nn.Module):
    """Deep Sets in miniature: ρ(Σ_i mask_i · φ(x_i)); refuses to be called without a mask."""

    def __init__(self, features, n_outputs):
        super().__init__()
        self.phi, self.rho = nn.Linear(features, 8), nn.Linear(8, n_outputs)

    def forward(self, x, mask):
        assert mask.dtype == torch.bool and mask.shape == x.shape[:2]
        return self.rho((torch.relu(self.phi(x)) * mask[..., None]).sum(1))


# -- prepare ------------------------------------------------------------------------------
def test_split_is_seeded_stratified_and_covers_every_row_once():
    data = table(rare=10)  # classes of about 10, 75 and 115 rows
    prepared = prepare(data, seed=3)
    rows = prepared.rows
    every = np.concatenate([rows["train"], rows["val"], rows["test"]])
    assert sorted(every) == list(range(len(data)))  # disjoint, and nothing left out
    for c in range(3):
        n = int((data.y == c).sum())
        per_split = {name: int((data.y[r] == c).sum()) for name, r in rows.items()}
        assert per_split["test"] == per_split["val"] == max(1, math.floor(0.15 * n + 0.5))
        assert per_split["train"] == n - 2 * per_split["test"]
    for name in ("train", "val", "test"):  # tensors follow the rows
        np.testing.assert_array_equal(getattr(prepared.splits, f"y_{name}").numpy(), data.y[rows[name]])
        np.testing.assert_array_equal(prepared.targets[name], data.y[rows[name]])
    again, other = prepare(data, seed=3), prepare(data, seed=4)
    assert all(np.array_equal(again.rows[k], rows[k]) for k in rows)
    assert not np.array_equal(other.rows["test"], rows["test"])


def test_a_class_with_fewer_than_three_rows_is_one_line():
    with pytest.raises(ConfigError, match=r"class 2 \(2 rows\).*needs 3 per class") as caught:
        prepare(table(rare=2), seed=0)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "kwargs, match",
    [({"val": 0.5, "test": 0.5}, "together below 1"), ({"val": 0.0}, "each a fraction")],
)
def test_split_fractions_are_checked(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        prepare(table(), seed=0, **kwargs)


def test_graphs_go_to_the_graph_preparation_and_a_table_takes_no_scaffold_split():
    from biaslab.comparison.graph_data import PreparedGraphs
    from tests.comparison.test_graph_candidates import chains_and_branched

    assert isinstance(prepare(chains_and_branched(n=30), seed=0), PreparedGraphs)
    with pytest.raises(ConfigError, match="table data has no scaffolds"):
        prepare(table(), seed=0, split="scaffold")


def test_feature_statistics_come_from_the_training_rows_only():
    data = table()
    prepared = prepare(data, seed=0)
    train = data.x[prepared.rows["train"]].astype(np.float64)
    np.testing.assert_allclose(prepared.x_mean, train.mean(0), rtol=1e-12)
    np.testing.assert_allclose(prepared.x_std, train.std(0), rtol=1e-12)
    assert not np.allclose(prepared.x_mean, data.x.astype(np.float64).mean(0), rtol=1e-6, atol=0)
    x_train = prepared.splits.x_train.double()
    np.testing.assert_allclose(x_train.mean(0), 0, atol=1e-5)
    np.testing.assert_allclose(x_train.std(0, unbiased=False), 1, atol=1e-5)
    scaled_test = (data.x[prepared.rows["test"]] - train.mean(0)) / train.std(0)
    np.testing.assert_allclose(prepared.splits.x_test.numpy(), scaled_test, atol=1e-5)


def test_images_are_scaled_per_channel():
    data = images()
    prepared = prepare(data, seed=0)
    assert prepared.x_mean.shape == (1,) and prepared.input_shape == (1, 8, 8)
    assert prepared.x_mean[0] == pytest.approx(data.x[prepared.rows["train"]].astype(np.float64).mean())


def test_set_statistics_skip_padding_and_padding_stays_zero():
    data = sets()
    prepared = prepare(data, seed=0)
    train_rows = prepared.rows["train"]
    real = data.x[train_rows][data.mask[train_rows]].astype(np.float64)  # (elements, F)
    np.testing.assert_allclose(prepared.x_mean, real.mean(0), rtol=1e-10)
    np.testing.assert_allclose(prepared.x_std, real.std(0), rtol=1e-10)
    assert prepared.x_mean[1] == pytest.approx(7.0, abs=0.5)  # padding zeros would pull it down
    for name in ("train", "val", "test"):
        x, mask, _ = prepared.tensors(name)
        assert torch.equal(mask, torch.from_numpy(data.mask[prepared.rows[name]]))
        assert (x[~mask] == 0).all()


def test_regression_targets_are_standardized_on_the_training_rows():
    data = table(task="regress")
    prepared = prepare(data, seed=0)
    train = data.y[prepared.rows["train"]].astype(np.float64)
    assert (prepared.y_mean, prepared.y_std) == (pytest.approx(train.mean()), pytest.approx(train.std()))
    assert float(prepared.splits.y_train.double().mean()) == pytest.approx(0, abs=1e-6)
    np.testing.assert_allclose(
        prepared.to_unit(prepared.splits.y_val.numpy()), prepared.targets["val"], rtol=1e-6
    )


# -- fit_candidate ------------------------------------------------------------------------
def test_regression_errors_are_in_the_target_unit_and_beat_the_mean():
    data = table(task="regress")
    prepared = prepare(data, seed=0)
    result = fit_candidate(Trial(LINEAR, prepared, CONFIG, QUIET))
    from sklearn.linear_model import Ridge

    x_train = (data.x[prepared.rows["train"]] - prepared.x_mean) / prepared.x_std  # by hand
    y_train = (data.y[prepared.rows["train"]] - prepared.y_mean) / prepared.y_std
    ridge = Ridge(alpha=1.0).fit(x_train, y_train)
    x_test = (data.x[prepared.rows["test"]] - prepared.x_mean) / prepared.x_std
    predicted = ridge.predict(x_test) * prepared.y_std + prepared.y_mean
    y_test = data.y[prepared.rows["test"]].astype(np.float64)
    assert result.test["mae"] == pytest.approx(np.abs(predicted - y_test).mean(), rel=1e-4)
    assert result.test["rmse"] == pytest.approx(np.sqrt(((predicted - y_test) ** 2).mean()), rel=1e-4)
    train_mean = data.y[prepared.rows["train"]].astype(np.float64).mean()
    assert result.test["baseline_mae"] == pytest.approx(np.abs(y_test - train_mean).mean())
    assert result.test["baseline_rmse"] == pytest.approx(np.sqrt(((y_test - train_mean) ** 2).mean()))
    assert result.test["mae"] < 0.1 * result.test["baseline_mae"]  # the rule is linear
    assert result.test["baseline_mae"] > 10  # the target's unit, not the standardized one
    mlp = fit_candidate(Trial(MLP, prepared, TrainConfig(epochs=20, batch_size=32, lr=1e-2), QUIET))
    assert set(mlp.val) == {"mae", "rmse", "interval_half_width"}
    assert mlp.test["mae"] < 0.5 * mlp.test["baseline_mae"]


def test_regression_intervals_are_split_conformal_on_the_validation_rows():
    """The half-width is the ⌈(n+1)·0.9⌉-th smallest validation residual; coverage and width
    are read on the test rows (Lei et al. 2018)."""
    data = table(task="regress")
    prepared = prepare(data, seed=0)
    result = fit_candidate(Trial(LINEAR, prepared, CONFIG, QUIET))
    val_pred = prepared.to_unit(result.fitted.outputs_on(prepared, "val"))
    residuals = np.sort(np.abs(prepared.targets["val"] - val_pred))
    n = len(residuals)
    q = residuals[int(np.ceil((n + 1) * 0.9)) - 1]
    assert result.val["interval_half_width"] == pytest.approx(q)
    test_pred = prepared.to_unit(result.fitted.outputs_on(prepared, "test"))
    inside = np.abs(prepared.targets["test"] - test_pred) <= q
    assert result.test["interval_coverage"] == pytest.approx(inside.mean())
    assert result.test["interval_width"] == pytest.approx(2 * q)


def test_sklearn_candidates_fit_on_training_rows_and_report_the_same_figures():
    prepared = prepare(images(), seed=0)
    result = fit_candidate(Trial(LINEAR, prepared, CONFIG, QUIET))
    assert (result.parameters, result.best_epoch) == (None, None)
    assert set(result.val) == {"accuracy", "loss"}
    assert set(result.test) == {"accuracy", "ece", "ece_after_temperature"}
    assert result.val["accuracy"] > 0.9 and result.test["accuracy"] > 0.9
    assert 0 <= result.test["ece"] <= 1 and 0 <= result.test["ece_after_temperature"] <= 1
    # The test rows' reliability diagram after temperature scaling: its ECE is the one reported.
    diagram = result.reliability_diagram()
    assert diagram.counts.sum() == len(prepared.rows["test"])
    assert diagram.calibration_error() == pytest.approx(result.test["ece_after_temperature"])
    assert protocol.CandidateResult.from_scores(result.scores()).reliability == result.reliability
    augmented = dataclasses.replace(LINEAR, augment=lambda x, g: x)
    with pytest.raises(ConfigError, match="a scikit-learn estimator takes no augmentation"):
        fit_candidate(Trial(augmented, prepared, CONFIG, QUIET))


def test_torch_candidate_result_fields():
    prepared = prepare(table(), seed=0)
    config = dataclasses.replace(CONFIG, epochs=10)  # enough steps to learn the linear rule
    result = fit_candidate(Trial(MLP, prepared, config, QUIET))
    assert result.parameters == sum(p.numel() for p in tiny_mlp((4,), 2, "classify").parameters())
    assert result.name == "MLP" and 1 <= result.best_epoch <= 10 and result.train_seconds > 0
    assert result.val["accuracy"] > 0.8
    assert result.fitted.parameters == result.parameters  # the trained model, for what reads it after
    assert Trial(MLP, prepared, CONFIG).task == "classify"  # the task is the data's: no other can be asked


def test_the_epoch_kept_is_the_best_on_validation():
    """A model that starts right and is trained on inverted labels gets worse every epoch on
    validation: the protocol must report (and score) its first epoch, not its last."""
    data = table(n=300)
    prepared = prepare(data, seed=0)
    flipped = 1 - prepared.splits.y_train
    prepared = dataclasses.replace(prepared, splits=prepared.splits.replace(y_train=flipped))
    from sklearn.linear_model import LogisticRegression

    rule = LogisticRegression(C=100).fit(prepared.splits.x_val.numpy(), prepared.targets["val"])
    scale = 2 * np.linalg.norm(rule.coef_)  # a unit-norm weight: the wrong labels move it fast

    def right_at_first(input_shape, n_outputs, task):
        model = nn.Linear(4, 2)
        with torch.no_grad():
            model.weight.copy_(torch.tensor(np.concatenate([-rule.coef_, rule.coef_]) / scale))
            model.bias.copy_(torch.tensor([-rule.intercept_[0], rule.intercept_[0]]) / scale)
        return model

    records = Records()
    setup = TrainSetup(progress=False, logger=records)
    config = TrainConfig(epochs=6, batch_size=16, lr=0.05, optimizer="sgd")
    result = fit_candidate(Trial(Candidate("fading", "", "torch", right_at_first), prepared, config, setup))
    accuracies = [r["val_accuracy"] for r in records.records]
    assert accuracies[-1] < max(accuracies) - 0.2  # it did get worse
    assert result.best_epoch == 1 + int(np.argmax(accuracies))
    assert result.val["accuracy"] == pytest.approx(max(accuracies))


def test_the_test_rows_are_read_once_after_training():
    prepared = prepare(table(), seed=0)
    x_test = prepared.splits.x_test
    seen = []

    class Watched(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = tiny_mlp((4,), 2, "classify")

        def forward(self, x):
            seen.append(("test" if torch.equal(x, x_test) else "other", self.training))
            return self.inner(x)

    fit_candidate(Trial(Candidate("watched", "", "torch", lambda *a: Watched()), prepared, CONFIG, QUIET))
    assert seen.count(("test", False)) == 1 and ("test", True) not in seen
    assert seen[-1] == ("test", False)  # after every training step and validation


def test_an_estimator_reads_the_test_rows_once():
    from sklearn.linear_model import LogisticRegression

    prepared = prepare(table(), seed=0)
    calls = []

    class Counting(LogisticRegression):
        def predict_proba(self, x):
            calls.append(len(x))
            return super().predict_proba(x)

    fit_candidate(Trial(Candidate("counted", "", "sklearn", lambda *a: Counting()), prepared, CONFIG, QUIET))
    assert calls == [len(prepared.rows["val"]), len(prepared.rows["test"])]


def test_temperature_is_fitted_on_validation_logits_and_lowers_their_nll(monkeypatch):
    prepared = prepare(table(n=300), seed=0, val=0.25, test=0.1)  # val and test of different sizes
    fitted = []

    class Recorded(protocol.TemperatureScaling):
        def fit(self, logits, labels, **kwargs):
            fitted.append((logits.clone(), labels.clone()))
            return super().fit(logits, labels, **kwargs)

    monkeypatch.setattr(protocol, "TemperatureScaling", Recorded)
    config = TrainConfig(epochs=8, batch_size=16, lr=3e-2)
    result = fit_candidate(Trial(MLP, prepared, config, QUIET))
    ((logits, labels),) = fitted
    assert torch.equal(labels, torch.from_numpy(prepared.targets["val"]))
    nll_at_1 = float(nn.functional.cross_entropy(logits, labels))
    assert result.val["loss"] == pytest.approx(nll_at_1)
    scaled = Recorded().fit(logits, labels)
    assert scaled.nll_ <= nll_at_1 + 1e-12
    assert 0 <= result.test["ece_after_temperature"] <= 1


def test_augmentation_touches_training_batches_only():
    data = images()
    prepared = prepare(data, seed=0)
    train_rows = {tuple(r.flatten().tolist()) for r in prepared.splits.x_train}
    augmented = []

    def shift(x, generator):
        augmented.append(x.clone())
        step = int(torch.randint(-1, 2, (1,), generator=generator))
        return torch.roll(x, step, dims=-1)

    cnn = Candidate("CNN + shifts", "", "torch", tiny_mlp, augment=shift)
    config = TrainConfig(epochs=2, batch_size=32, lr=1e-2)
    result = fit_candidate(Trial(cnn, prepared, config, QUIET))
    assert len(augmented) == 2 * math.ceil(prepared.n_train / 32)  # once per training step
    assert all(tuple(r.flatten().tolist()) in train_rows for batch in augmented for r in batch)
    again = fit_candidate(Trial(cnn, prepared, config, QUIET))
    assert (again.val, again.test) == (result.val, result.test)  # the shifts are seeded
    plain = fit_candidate(Trial(dataclasses.replace(cnn, augment=None), prepared, config, QUIET))
    assert plain.val != result.val  # and they did reach the model


def test_sets_pass_their_masks_to_the_model():
    prepared = prepare(sets(), seed=0)
    deep_sets = Candidate("Deep Sets", "permutation invariance", "torch", None, takes_mask=True)
    deep_sets = dataclasses.replace(deep_sets, build=lambda shape, k, task: SumOfElements(shape[-1], k))
    result = fit_candidate(Trial(deep_sets, prepared, TrainConfig(epochs=10, batch_size=16, lr=3e-2), QUIET))
    assert result.test["accuracy"] > 0.7


def test_a_seed_fixes_a_fit():
    prepared = prepare(table(), seed=0)
    first, second = (
        fit_candidate(Trial(MLP, prepared, CONFIG, TrainSetup(seed=5, progress=False))) for _ in "ab"
    )
    assert (first.val, first.test, first.best_epoch) == (second.val, second.test, second.best_epoch)
    other = fit_candidate(Trial(MLP, prepared, CONFIG, TrainSetup(seed=6, progress=False)))
    assert other.val != first.val


# -- learning_curve -----------------------------------------------------------------------
def test_nested_order_keeps_every_prefix_stratified():
    y = np.array([0] * 90 + [1] * 30 + [2] * 10)
    order = nested_order(y, "classify", seed=1)
    assert sorted(order) == list(range(len(y)))
    for n in range(1, len(y) + 1):
        counts = np.bincount(y[order[:n]], minlength=3)
        assert np.all(np.abs(counts - n * np.array([90, 30, 10]) / len(y)) <= 1)
    assert not np.array_equal(order, nested_order(y, "classify", seed=2))


def test_learning_curve_at_an_equal_step_budget():
    prepared = prepare(table(), seed=0)
    n = prepared.n_train
    logs = {}

    def setup_for(size, seed):
        logs[size, seed] = Records()
        return TrainSetup(tag=f"mlp-{size}-{seed}", seed=seed, progress=False, logger=logs[size, seed])

    config = TrainConfig(epochs=2, batch_size=32, lr=1e-2)
    curve = learning_curve(Trial(MLP, prepared, config), setup_for, points=3, seeds=(0, 1))
    assert curve.sizes == [n // 4, n // 2, n]
    assert {records.records[-1]["step"] for records in logs.values()} == {2 * math.ceil(n / 32)}
    assert len(curve.per_seed) == 3 and all(len(e) == 2 for e in curve.per_seed)
    assert curve.val_errors == pytest.approx([np.mean(e) for e in curve.per_seed])
    assert curve.val_errors_std == pytest.approx([np.std(e, ddof=1) for e in curve.per_seed])
    assert all(0 <= e <= 1 for e in curve.val_errors)
    if curve.power_law is not None:
        assert set(curve.extrapolated) == {2 * n, 4 * n}
        assert curve.extrapolated[4 * n] == pytest.approx(float(curve.power_law(4 * n)))


def test_learning_curve_fits_a_power_law_and_drops_sizes_missing_a_class():
    data = table(n=400, rare=12)  # a class of 12 rows: 8 or so in training
    prepared = prepare(data, seed=0)
    n = prepared.n_train
    setup_for = lambda size, seed: TrainSetup(tag=f"linear-{size}", seed=seed, progress=False)
    curve = learning_curve(Trial(LINEAR, prepared, CONFIG), setup_for, points=6, seeds=(0, 1, 2))
    assert curve.sizes[-1] == n and len(curve.sizes) < 6
    assert curve.notes and "miss a class" in curve.notes[0]
    y = prepared.targets["train"]
    for seed in (0, 1, 2):
        order = nested_order(y, "classify", seed)
        assert all(len(np.unique(y[order[:size]])) == 3 for size in curve.sizes)

    regress = prepare(table(n=200, task="regress"), seed=0)
    line = learning_curve(Trial(LINEAR, regress, CONFIG), setup_for, points=4, seeds=(0, 1))
    assert line.power_law is not None and line.power_law.exponent < 0  # more data, smaller errors
    m = regress.n_train
    assert line.extrapolated == pytest.approx({2 * m: line.power_law(2 * m), 4 * m: line.power_law(4 * m)})
    assert line.extrapolated[4 * m] < line.val_errors[-1]


def test_a_curve_of_errors_measured_elsewhere_recovers_their_power_law():
    from biaslab.comparison.curves import curve_of

    sizes = [1000, 5000, 20000]
    per_seed = [[0.5 * n**-0.3 * f for f in (0.95, 1.05)] for n in sizes]  # two seeds, +-5 %
    curve = curve_of(sizes, per_seed, (110_000,))
    assert curve.power_law.exponent == pytest.approx(-0.3)
    assert curve.extrapolated == pytest.approx({110_000: 0.5 * 110_000**-0.3})
    assert curve.val_errors == pytest.approx([0.5 * n**-0.3 for n in sizes])
    assert curve.val_errors_std == pytest.approx([np.std(e, ddof=1) for e in per_seed])
    flat = curve_of([10], [[0.2]], (20,))
    assert flat.power_law is None and flat.extrapolated == {} and "no power law" in flat.notes[0]


def test_new_inputs_are_standardized_as_the_data_were():
    """An OOD set goes through the training rows' statistics, exactly as the data's own rows."""
    data = table(n=120)
    prepared = prepare(data, seed=0)
    inputs = prepared.standardize(data.x[prepared.rows["test"]])
    assert inputs.mask is None and inputs.raw is None and torch.equal(inputs.x, prepared.splits.x_test)


def test_a_result_and_its_curve_cross_a_process_boundary_as_plain_data():
    """What a task returns to its driver: the scores and the curve survive JSON unchanged."""
    import json

    from biaslab.comparison.curves import Curve
    from biaslab.comparison.protocol import CandidateResult
    from biaslab.evaluate.scaling import PowerLaw

    result = CandidateResult("MLP", "none", 1234, 1.5, 7, {"accuracy": 0.9, "loss": 0.3}, {"accuracy": 0.8})
    law = PowerLaw(-0.5, 2.0, 0.99)
    curve = Curve([10, 20], [0.4, 0.3], [0.01, 0.0], law, {40: 0.2, 80: 0.15}, [[0.4], [0.3]], ("a note",))
    assert CandidateResult.from_scores(json.loads(json.dumps(result.scores()))) == result
    back = Curve.from_dict(json.loads(json.dumps(curve.as_dict())))
    assert back == curve and back.extrapolated == {40: 0.2, 80: 0.15} and back.power_law(4) == law(4)


def test_a_refusal_naming_thousands_of_classes_stays_one_short_line():
    """5,000 classes of one row each once made a refusal of 89 KB; it names a few and counts the rest."""
    from types import SimpleNamespace

    from biaslab.comparison.preparation import split_rows
    from biaslab.errors import ConfigError

    data = SimpleNamespace(
        task="classify", y=np.arange(5000), n_classes=5000, classes=[f"c{i}" for i in range(5000)]
    )
    with pytest.raises(ConfigError) as excinfo:
        split_rows(data, 0.2, 0.2, np.random.default_rng(0))
    message = str(excinfo.value)
    assert "'c0' (1 rows)" in message and "and 4,995 more" in message and len(message) < 300
