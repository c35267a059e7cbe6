"""NumPy optimizers against torch.optim, step by step, on the same float64 parameters and the
same gradient sequence."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from biaslab.scratch.optim import SGD, Adam, Momentum, Nesterov

STEPS = 25

CONFIGS = {
    "sgd": (SGD, torch.optim.SGD, {"lr": 0.1}),
    "sgd_weight_decay": (SGD, torch.optim.SGD, {"lr": 0.1, "weight_decay": 0.05}),
    "momentum": (SGD, torch.optim.SGD, {"lr": 0.05, "momentum": 0.9}),
    "momentum_weight_decay": (SGD, torch.optim.SGD, {"lr": 0.05, "momentum": 0.9, "weight_decay": 0.01}),
    "nesterov": (SGD, torch.optim.SGD, {"lr": 0.05, "momentum": 0.9, "nesterov": True}),
    "adam": (Adam, torch.optim.Adam, {"lr": 0.01}),
    "adam_custom": (
        Adam,
        torch.optim.Adam,
        {"lr": 0.03, "betas": (0.8, 0.99), "eps": 1e-6, "weight_decay": 0.01},
    ),
}


def _params(seed=0):
    rng = np.random.default_rng(seed)
    return {"W": rng.standard_normal((4, 3)), "b": rng.standard_normal(3)}


def _quadratic_grads(params, seed=1):
    """Gradient of L = sum_k 0.5 p_k^T A_k p_k - c_k^T p_k (A_k positive definite): A p - c."""
    rng = np.random.default_rng(seed)
    out = {}
    for k, p in params.items():
        n = p.size
        M = rng.standard_normal((n, n))
        A, c = M @ M.T / n + np.eye(n), rng.standard_normal(n)
        out[k] = (A, c)
    return lambda ps: {k: (A @ ps[k].ravel() - c).reshape(ps[k].shape) for k, (A, c) in out.items()}


def _random_grads(seed=2):
    rng = np.random.default_rng(seed)
    return lambda ps: {k: rng.standard_normal(p.shape) * 3.0 for k, p in ps.items()}


@pytest.mark.parametrize("gradients", ["random", "quadratic"])
@pytest.mark.parametrize("name", list(CONFIGS))
def test_matches_torch_step_by_step(name, gradients):
    ours_cls, torch_cls, kwargs = CONFIGS[name]
    params = _params()
    arrays = dict(params)
    ref = {k: torch.tensor(v.copy(), requires_grad=True) for k, v in params.items()}
    ours = ours_cls(params, **kwargs)
    theirs = torch_cls(list(ref.values()), foreach=False, **kwargs)
    grad_fn = _random_grads() if gradients == "random" else _quadratic_grads(params)
    for step in range(STEPS):
        grads = grad_fn(params)
        before = {k: g.copy() for k, g in grads.items()}
        for k, t in ref.items():
            t.grad = torch.from_numpy(grads[k].copy())
        theirs.step()
        ours.step(grads)
        for k in params:
            assert params[k] is arrays[k]  # updated in place
            diff = np.max(np.abs(params[k] - ref[k].detach().numpy()))
            assert diff <= 1e-12, (name, step, k, diff)
            np.testing.assert_array_equal(grads[k], before[k])  # gradients left untouched
    moved = max(np.max(np.abs(params[k] - v)) for k, v in _params().items())
    assert moved > 1e-3  # the check compared real updates


@pytest.mark.parametrize("name", ["momentum", "nesterov", "adam_custom"])
def test_state_dict_round_trip_continues_identically(name):
    ours_cls, _, kwargs = CONFIGS[name]
    grad_fn = _random_grads(seed=5)
    grads = [grad_fn(_params()) for _ in range(20)]
    a_params, b_params = _params(), _params()
    a = ours_cls(a_params, **kwargs)
    for g in grads[:10]:
        a.step(g)
    saved_params = {k: v.copy() for k, v in a_params.items()}
    saved = a.state_dict()
    for g in grads[10:]:
        a.step(g)
    for k in b_params:
        b_params[k][...] = saved_params[k]
    b = ours_cls(b_params, **kwargs)
    b.load_state_dict(saved)
    for g in grads[10:]:
        b.step(g)
    for k in a_params:
        np.testing.assert_array_equal(a_params[k], b_params[k])
    # the saved state is a copy: stepping after saving did not change it
    b2 = ours_cls(_params(), **kwargs)
    b2.load_state_dict(saved)
    assert b2.t == 10


def test_momentum_and_nesterov_helpers_are_sgd_flags():
    g = _random_grads(seed=7)
    p1, p2, p3, p4 = _params(), _params(), _params(), _params()
    o1, o2 = Momentum(p1, lr=0.1), SGD(p2, lr=0.1, momentum=0.9)
    o3, o4 = Nesterov(p3, lr=0.1), SGD(p4, lr=0.1, momentum=0.9, nesterov=True)
    for _ in range(5):
        grads = g(p1)
        for opt in (o1, o2, o3, o4):
            opt.step(grads)
    for k in p1:
        np.testing.assert_array_equal(p1[k], p2[k])
        np.testing.assert_array_equal(p3[k], p4[k])
    assert o1.momentum == 0.9 and o3.nesterov


def test_float32_parameters_stay_float32():
    params = {k: v.astype(np.float32) for k, v in _params().items()}
    grads = {k: np.ones_like(v) for k, v in params.items()}
    for opt in (SGD(params, lr=0.1), SGD(params, lr=0.1, momentum=0.9), Adam(params)):
        opt.step(grads)
        assert all(v.dtype == np.float32 for v in params.values())


def test_invalid_arguments():
    with pytest.raises(ValueError):
        SGD(_params(), lr=-1.0)
    with pytest.raises(ValueError):
        SGD(_params(), lr=0.1, nesterov=True)
    with pytest.raises(ValueError):
        Adam(_params(), betas=(1.0, 0.999))
    with pytest.raises(ValueError):
        SGD({}, lr=0.1)
