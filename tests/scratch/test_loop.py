"""The framework-free training loop: batching, learning, determinism, divergence."""

from __future__ import annotations

import math

import numpy as np
import pytest

from biaslab.data.synthetic import two_spirals
from biaslab.scratch.loop import evaluate, fit, iterate_minibatches, train_epoch
from biaslab.scratch.mlp import TwoLayerMLP
from biaslab.scratch.optim import SGD, Adam


@pytest.fixture(scope="module")
def spirals():
    return two_spirals(n=400, noise=0.05, seed=0), two_spirals(n=200, noise=0.05, seed=1)


def test_iterate_minibatches_covers_every_row_once_in_seeded_order():
    X = np.arange(20, dtype=np.float32).reshape(10, 2)
    y = np.arange(10)
    batches = list(iterate_minibatches(X, y, 4, np.random.default_rng(0)))
    assert [len(b) for _, b in batches] == [4, 4, 2]
    seen = np.concatenate([b for _, b in batches])
    assert sorted(seen) == list(range(10))
    assert not np.array_equal(seen, np.arange(10))  # shuffled
    for xb, yb in batches:
        np.testing.assert_array_equal(xb[:, 0], 2 * yb)  # rows stay with their labels
    again = np.concatenate([b for _, b in iterate_minibatches(X, y, 4, np.random.default_rng(0))])
    np.testing.assert_array_equal(seen, again)
    with pytest.raises(ValueError):
        next(iterate_minibatches(X, y, 0, np.random.default_rng(0)))
    with pytest.raises(ValueError):
        next(iterate_minibatches(X, y[:5], 4, np.random.default_rng(0)))


def test_fit_improves_loss_on_two_spirals(spirals):
    (X, y), (Xv, yv) = spirals
    model = TwoLayerMLP(2, 64, 2, seed=0)
    opt = Adam(model.params, lr=0.01)
    before, _ = evaluate(model, Xv, yv)
    history = fit(model, opt, (X, y), (Xv, yv), epochs=40, batch_size=32, seed=0)
    assert len(history) == 40
    assert set(history[0]) == {
        "epoch",
        "step",
        "train_loss",
        "val_loss",
        "val_accuracy",
        "seconds",
        "diverged",
    }
    assert [r["epoch"] for r in history] == list(range(1, 41))
    assert history[-1]["train_loss"] < 0.6 * history[0]["train_loss"]
    assert history[-1]["val_loss"] < 0.6 * before
    assert history[-1]["val_accuracy"] > 0.8
    assert not any(r["diverged"] for r in history)
    loss, acc = evaluate(model, Xv, yv, batch_size=37)  # chunking does not change the result
    assert loss == pytest.approx(history[-1]["val_loss"], rel=1e-5)
    assert acc == history[-1]["val_accuracy"] == model.accuracy(Xv, yv)


def test_fit_is_deterministic_given_the_seeds(spirals):
    (X, y), val = spirals

    def run(seed):
        model = TwoLayerMLP(2, 16, 2, seed=0)
        history = fit(
            model, SGD(model.params, lr=0.2, momentum=0.9), (X, y), val, epochs=5, batch_size=16, seed=seed
        )
        return [(r["train_loss"], r["val_loss"]) for r in history], model.params

    h1, p1 = run(0)
    h2, p2 = run(0)
    h3, _ = run(1)
    assert h1 == h2
    for k in p1:
        np.testing.assert_array_equal(p1[k], p2[k])
    assert h1 != h3  # another seed, another batch order


def test_divergence_is_flagged_and_stops_training(spirals):
    (X, y), val = spirals
    model = TwoLayerMLP(2, 16, 2, seed=0)
    with np.errstate(all="ignore"):  # lr 1e20: weights, then float32 logits, overflow to inf
        history = fit(model, SGD(model.params, lr=1e20), (X, y), val, epochs=20, batch_size=16, seed=0)
    assert history[-1]["diverged"]
    assert not math.isfinite(history[-1]["train_loss"])
    assert len(history) < 20
    assert not any(r["diverged"] for r in history[:-1])


def test_train_epoch_returns_mean_loss_and_callback_can_stop(spirals):
    (X, y), _ = spirals
    model = TwoLayerMLP(2, 8, 2, seed=0)
    loss = train_epoch(model, SGD(model.params, lr=0.0), X, y, 400, np.random.default_rng(0))
    assert loss == pytest.approx(evaluate(model, X, y)[0], rel=1e-6)  # lr 0: one full batch
    seen = []
    history = fit(
        model,
        SGD(model.params, lr=0.1),
        (X, y),
        None,
        epochs=10,
        batch_size=50,
        seed=0,
        callback=lambda r: seen.append(r["epoch"]) or r["epoch"] == 3,
    )
    assert seen == [1, 2, 3] and len(history) == 3
    assert math.isnan(history[0]["val_loss"])
