"""The hand-written two-layer MLP: forward, loss and the five-formula backward against
torch (float64 reference and autograd) and against the NumPy autodiff engine."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from biaslab.scratch.mlp import TwoLayerMLP, cross_entropy, softmax

KEYS = ("W1", "b1", "W2", "b2")


def _batch(n=32, d=20, c=5, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)), rng.integers(0, c, n)


def _torch_reference(params, X, y):
    """Loss and autograd gradients of y = W2 relu(W1 x + b1) + b2 in float64 torch."""
    t = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in params.items()}
    logits = F.linear(F.relu(F.linear(torch.from_numpy(X), t["W1"], t["b1"])), t["W2"], t["b2"])
    loss = F.cross_entropy(logits, torch.from_numpy(y))
    loss.backward()
    return logits.detach().numpy(), loss.item(), {k: t[k].grad.numpy() for k in KEYS}


def test_parameter_shapes_count_and_init():
    model = TwoLayerMLP()
    shapes = {k: v.shape for k, v in model.params.items()}
    assert shapes == {"W1": (256, 784), "b1": (256,), "W2": (10, 256), "b2": (10,)}
    assert model.parameter_count() == 203_530
    assert all(v.dtype == np.float32 for v in model.params.values())
    # torch.nn.Linear's init: U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    for k, fan_in in (("W1", 784), ("b1", 784), ("W2", 256), ("b2", 256)):
        bound = 1 / np.sqrt(fan_in)
        assert np.abs(model.params[k]).max() <= bound
        if k.startswith("W"):  # thousands of draws: they reach close to the bound
            assert np.abs(model.params[k]).max() > 0.99 * bound
    np.testing.assert_array_equal(TwoLayerMLP(seed=3).params["W1"], TwoLayerMLP(seed=3).params["W1"])
    assert not np.array_equal(TwoLayerMLP(seed=3).params["W1"], model.params["W1"])


def test_forward_and_loss_equal_torch_float64():
    X, y = _batch()
    model = TwoLayerMLP(20, 16, 5, seed=1, dtype=np.float64)
    ref_logits, ref_loss, _ = _torch_reference(model.params, X, y)
    np.testing.assert_allclose(model.forward(X), ref_logits, rtol=0, atol=1e-13)
    assert abs(model.loss(X, y) - ref_loss) <= 1e-13
    assert abs(cross_entropy(model.forward(X), y) - ref_loss) <= 1e-13


def test_five_formula_gradients_equal_autograd_float64():
    X, y = _batch(n=64, d=784, c=10, seed=2)
    model = TwoLayerMLP(784, 256, 10, seed=2, dtype=np.float64)
    model.loss(X, y)
    grads = model.backward(y)
    _, _, ref = _torch_reference(model.params, X, y)
    for k in KEYS:
        assert grads[k].shape == model.params[k].shape
        assert np.max(np.abs(grads[k] - ref[k])) <= 1e-12, k


def test_backward_after_forward_only_matches_backward_after_loss():
    X, y = _batch(seed=3)
    model = TwoLayerMLP(20, 16, 5, seed=3, dtype=np.float64)
    model.loss(X, y)
    after_loss = model.backward(y)
    model.forward(X)
    after_forward = model.backward(y)
    for k in KEYS:
        np.testing.assert_array_equal(after_loss[k], after_forward[k])


def test_float32_gradients_close_to_float64():
    X, y = _batch(n=16, d=30, c=4, seed=4)
    m64 = TwoLayerMLP(30, 12, 4, seed=4, dtype=np.float64)
    m32 = TwoLayerMLP(30, 12, 4, seed=4, dtype=np.float32)
    m64.loss(X, y)
    m32.loss(X, y)
    g64, g32 = m64.backward(y), m32.backward(y)
    for k in KEYS:
        assert g32[k].dtype == np.float32
        np.testing.assert_allclose(g32[k], g64[k], atol=1e-5)


def test_loss_is_stable_for_huge_logits():
    X, y = _batch(seed=5)
    model = TwoLayerMLP(20, 16, 5, seed=5, dtype=np.float64)
    X = X * 1e4  # logits of order 1e3: a naive exp would overflow
    loss = model.loss(X, y)
    _, ref_loss, _ = _torch_reference(model.params, X, y)
    assert np.isfinite(loss)
    assert abs(loss - ref_loss) <= 1e-9 * max(1.0, abs(ref_loss))
    grads = model.backward(y)
    assert all(np.all(np.isfinite(g)) for g in grads.values())
    p = softmax(np.array([[1000.0, 0.0, -1000.0]]))
    np.testing.assert_allclose(p, [[1.0, 0.0, 0.0]])


def test_predict_and_accuracy():
    X, y = _batch(seed=6)
    model = TwoLayerMLP(20, 16, 5, seed=6)
    pred = model.predict(X)
    assert pred.shape == (32,)
    np.testing.assert_array_equal(pred, model.forward(X).argmax(axis=1))
    assert model.accuracy(X, pred) == 1.0
    assert model.accuracy(X, y) == pytest.approx(np.mean(pred == y))


def test_state_dict_copies_and_load_keeps_arrays():
    model = TwoLayerMLP(20, 16, 5, seed=7)
    arrays = dict(model.params)
    state = model.state_dict()
    state["W1"][...] = 0  # a copy: the model does not change
    assert np.abs(model.params["W1"]).sum() > 0
    other = TwoLayerMLP(20, 16, 5, seed=8).state_dict()
    model.load_state_dict(other)
    for k in KEYS:
        assert model.params[k] is arrays[k]  # loaded into the same arrays (optimizers hold them)
        np.testing.assert_array_equal(model.params[k], other[k])
    other["b2"][...] = 123.0
    assert not np.any(model.params["b2"] == 123.0)
    with pytest.raises(KeyError):
        model.load_state_dict({"W1": other["W1"]})
    with pytest.raises(ValueError):
        model.load_state_dict({**other, "W1": np.zeros((3, 3))})


def test_backward_needs_forward():
    with pytest.raises(RuntimeError):
        TwoLayerMLP(4, 3, 2).backward(np.array([0, 1]))


def test_gradients_equal_numpy_autodiff_engine():
    autodiff = pytest.importorskip("biaslab.scratch.autodiff")
    X, y = _batch(n=24, d=20, c=5, seed=9)
    model = TwoLayerMLP(20, 16, 5, seed=9, dtype=np.float64)
    model.loss(X, y)
    grads = model.backward(y)
    t = {k: autodiff.Tensor(v.copy(), requires_grad=True) for k, v in model.params.items()}
    hidden = (autodiff.Tensor(X) @ t["W1"].T + t["b1"]).relu()  # (N, H)
    logits = hidden @ t["W2"].T + t["b2"]  # (N, C)
    loss = autodiff.softmax_cross_entropy(logits, y)
    loss.backward()
    assert abs(float(loss.data) - model.loss(X, y)) <= 1e-13
    for k in KEYS:
        assert np.max(np.abs(grads[k] - t[k].grad)) <= 1e-12, k


def test_memory_bytes_bounds_the_measured_peak_of_building_and_a_step():
    import tracemalloc

    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((256, 784)).astype(np.float32), rng.integers(0, 10, 256)
    tracemalloc.start()
    try:
        model = TwoLayerMLP(784, 512, 10)
        model.loss(X, y)
        model.backward(y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    estimate = TwoLayerMLP.memory_bytes(784, 512, 10, 256)
    assert peak <= estimate <= 2 * peak  # an upper bound, not a wild one


def test_memory_bytes_formula():
    p = 256 * 784 + 256 + 10 * 256 + 10  # 203,530
    assert TwoLayerMLP.memory_bytes(784, 256, 10, 0) == p * (8 + 4)  # float64 draws + float32
    assert TwoLayerMLP.memory_bytes(784, 256, 10, 0, dtype=np.float64, optimizer_states=2) == p * 8 * 4
    assert TwoLayerMLP.memory_bytes(784, 256, 10, 10) - TwoLayerMLP.memory_bytes(784, 256, 10, 0) == (
        10 * (784 + 2 * 256 + 3 * 10) * 4
    )
    assert TwoLayerMLP.memory_bytes(784, 10**9, 10, 64) > 2**40  # a terabyte: refused before building


def test_a_model_over_given_arrays_shares_them():
    """from_params: the same forward and gradients as the model the arrays came from, and a step on
    the arrays is a step of the model (the notebooks' SGD loop updates a dict of arrays)."""
    original = TwoLayerMLP(12, 5, 3, seed=1, dtype=np.float64)
    shared = TwoLayerMLP.from_params(original.params)
    X, y = np.random.default_rng(0).normal(size=(7, 12)), np.array([0, 1, 2, 0, 1, 2, 0])
    assert shared.loss(X, y) == original.loss(X, y) and shared.dtype == np.float64
    for name, g in shared.backward(y).items():
        np.testing.assert_array_equal(g, original.backward(y)[name])
    original.params["b2"] += 1.0
    np.testing.assert_array_equal(shared.forward(X), original.forward(X))
    with pytest.raises(KeyError, match="expected keys"):
        TwoLayerMLP.from_params({"W1": original.params["W1"]})
    with pytest.raises(ValueError, match="D -> H -> C"):
        TwoLayerMLP.from_params({**original.params, "b1": np.zeros(4)})
