"""Penalties as proximal steps against their references: soft thresholding equals torch's
softshrink, proximal gradient descent with L1 reaches scikit-learn's Lasso (zeros included), with
L2 towards an anchor the closed-form ridge solution; the weight measures against sums by hand."""

import numpy as np
import pytest
import torch
from sklearn.linear_model import Lasso
from torch import nn

from biaslab.nn import MLP
from biaslab.train.config import TrainConfig
from biaslab.train.regularization import (
    Proximal,
    WeightNorms,
    exact_zeros,
    shrink_toward,
    soft_threshold,
    weight_norms,
    weights_of,
)
from biaslab.train.trainer import Trainer

N, D = 60, 12


def _problem():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(N, D, generator=g, dtype=torch.float64)
    w = torch.zeros(D, dtype=torch.float64)
    w[:4] = torch.tensor([1.5, -2.0, 0.8, 0.3], dtype=torch.float64)  # 8 of 12 true weights are 0
    y = x @ w + 0.1 * torch.randn(N, generator=g, dtype=torch.float64)
    return x, y


def _half_mse(out, y):  # (1/2n)‖Xw − y‖²: the least-squares term of sklearn's Lasso and of ridge
    return 0.5 * ((out.squeeze(1) - y) ** 2).mean()


def _proximal_descent(callback, epochs=1500, lr=0.2):
    x, y = _problem()
    model = nn.Linear(D, 1, bias=False).double()
    nn.init.zeros_(model.weight)
    config = TrainConfig(epochs=epochs, batch_size=N, optimizer="sgd", lr=lr)  # full batch: plain GD
    Trainer(model, _half_mse, config, callbacks=[callback]).fit((x, y))
    return model.weight.detach().squeeze(0), x, y


def test_soft_threshold_equals_torch_softshrink_and_shrinking_its_formula():
    v = torch.randn(1000, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(soft_threshold(v, 0.3), nn.functional.softshrink(v, 0.3))
    assert (soft_threshold(v, 0.3)[v.abs() <= 0.3] == 0).all()  # exactly zero, not close to it
    anchor = torch.randn(1000)
    torch.testing.assert_close(shrink_toward(v, anchor, 0.25), anchor + (v - anchor) / 1.25)
    torch.testing.assert_close(shrink_toward(v, None, 0.25), v / 1.25)


def test_proximal_l1_descent_reaches_sklearn_lasso_with_its_exact_zeros():
    alpha = 0.1
    w, x, y = _proximal_descent(Proximal("l1", alpha))
    lasso = Lasso(alpha=alpha, fit_intercept=False, tol=1e-12, max_iter=100_000).fit(x.numpy(), y.numpy())
    np.testing.assert_allclose(w.numpy(), lasso.coef_, atol=1e-6)
    assert np.array_equal(w.numpy() == 0, lasso.coef_ == 0) and (w == 0).sum() >= 4


def test_proximal_l2_descent_reaches_the_ridge_solution_around_its_anchor():
    lam = 0.5
    anchor = torch.linspace(-1, 1, D, dtype=torch.float64).unsqueeze(0)  # (1, D): the weight's shape
    w, x, y = _proximal_descent(Proximal("l2", lam, anchor=[anchor]))
    # argmin (1/2n)‖Xw − y‖² + (λ/2)‖w − a‖²  =  (XᵀX/n + λI)⁻¹ (Xᵀy/n + λa)
    ridge = torch.linalg.solve(
        x.T @ x / N + lam * torch.eye(D, dtype=torch.float64), x.T @ y / N + lam * anchor[0]
    )
    torch.testing.assert_close(w, ridge, atol=1e-8, rtol=0)


def test_proximal_refuses_what_is_not_a_plain_gradient_step_and_bad_arguments():
    model = MLP((4, 3, 2))
    for config in (TrainConfig(optimizer="adam"), TrainConfig(optimizer="sgd", momentum=0.9)):
        trainer = Trainer(model, nn.functional.cross_entropy, config, callbacks=[Proximal("l1", 0.1)])
        with pytest.raises(ValueError, match="plain gradient step"):
            trainer.fit((torch.randn(8, 4), torch.randint(0, 2, (8,))))
    with pytest.raises(ValueError, match="penalty"):
        Proximal("l3", 0.1)
    for strength in (0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="strength"):
            Proximal("l2", strength)
    with pytest.raises(ValueError, match="anchor"):
        Proximal("l1", 0.1, anchor=[torch.zeros(3, 4)])
    trainer = Trainer(model, nn.functional.cross_entropy, TrainConfig(optimizer="sgd"),
                      callbacks=[Proximal("l2", 0.1, anchor=[torch.zeros(2, 2)])])  # fmt: skip
    with pytest.raises(ValueError, match="anchor shapes"):
        trainer.fit((torch.randn(8, 4), torch.randint(0, 2, (8,))))


def test_the_weight_measures_equal_sums_written_out():
    torch.manual_seed(0)
    model = MLP((5, 4, 3))
    assert [tuple(w.shape) for w in weights_of(model)] == [(4, 5), (3, 4)]  # the biases left alone
    assert len(weights_of(model, matrices_only=False)) == 4
    start = [w.detach().clone() for w in weights_of(model)]
    with torch.no_grad():
        model.layers[0].weight[0, :3] = 0.0
    assert exact_zeros(model) == (3, 32)
    norm = np.sqrt(sum((w.detach().double() ** 2).sum().item() for w in weights_of(model)))
    moved = np.sqrt(sum((s[0, :3].double() ** 2).sum().item() for s in start[:1]))
    assert weight_norms(model, start) == pytest.approx((norm, moved), rel=1e-12)
    config = TrainConfig(epochs=2, batch_size=8, optimizer="sgd", lr=0.1)
    trainer = Trainer(model, nn.functional.cross_entropy, config, callbacks=[WeightNorms(start)])
    history = trainer.fit((torch.randn(16, 5), torch.randint(0, 3, (16,))))
    assert history[0]["weight_distance"] > 0
    assert (history[-1]["weight_norm"], history[-1]["weight_distance"]) == pytest.approx(
        weight_norms(model, start)
    )
