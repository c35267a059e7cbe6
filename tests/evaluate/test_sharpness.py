"""Tests for biaslab.evaluate.sharpness: Hessian-vector products and power iteration against the
exact Hessian (torch.autograd.functional.hessian) of a small MLP, and against a quadratic whose
spectrum is known."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call

from biaslab.evaluate.sharpness import (
    SharpnessResult,
    hessian_vector_product,
    loss_of,
    sharpness,
    top_hessian_eigenvalue,
)

SPECTRUM = (5.0, 2.0, 1.0, 0.5)


def small_mlp() -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    """An MLP 3-5-2 with tanh in float64 (32 parameters) and one batch of 8 regression targets."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2)).double()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(8, 3, generator=g, dtype=torch.float64)
    y = torch.randn(8, 2, generator=g, dtype=torch.float64)
    return model, x, y


def exact_hessian(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The (P, P) Hessian of the MSE loss in the flattened parameters."""
    names = [n for n, _ in model.named_parameters()]
    shapes = [p.shape for _, p in model.named_parameters()]
    theta = torch.cat([p.detach().reshape(-1) for p in model.parameters()])

    def flat_loss(flat: torch.Tensor) -> torch.Tensor:
        pieces = torch.split(flat, [s.numel() for s in shapes])
        params = {n: piece.reshape(s) for n, piece, s in zip(names, pieces, shapes)}
        return F.mse_loss(functional_call(model, params, (x,)), y)

    return torch.autograd.functional.hessian(flat_loss, theta)


def split_like(flat: torch.Tensor, params: list[torch.Tensor]) -> list[torch.Tensor]:
    pieces = torch.split(flat, [p.numel() for p in params])
    return [piece.reshape(p.shape) for piece, p in zip(pieces, params)]


def flat(tensors: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat([t.reshape(-1) for t in tensors])


def quadratic(spectrum=SPECTRUM, seed: int = 0, scale: float = 1.0):
    """``loss_fn`` of 0.5 θᵀAθ with A = QΛQᵀ (Q a random orthogonal matrix), θ split in two
    tensors (a (2,) and a (2,)); returns (loss_fn, params, A)."""
    g = torch.Generator().manual_seed(seed)
    q, _ = torch.linalg.qr(torch.randn(len(spectrum), len(spectrum), generator=g, dtype=torch.float64))
    a = q @ torch.diag(torch.tensor(spectrum, dtype=torch.float64)) @ q.T
    theta = torch.randn(len(spectrum), generator=g, dtype=torch.float64)
    params = [theta[:2].clone().requires_grad_(), theta[2:].clone().requires_grad_()]

    def loss_fn():
        t = torch.cat(params)
        return scale * 0.5 * t @ a @ t

    return loss_fn, params, a


# -- hessian_vector_product ---------------------------------------------------------------------
def test_hessian_vector_product_equals_the_exact_hessian_times_v():
    model, x, y = small_mlp()
    params = list(model.parameters())
    h = exact_hessian(model, x, y)
    assert h.shape == (32, 32)
    g = torch.Generator().manual_seed(2)
    for _ in range(3):
        v = torch.randn(32, generator=g, dtype=torch.float64)
        hv = hessian_vector_product(loss_of(model, F.mse_loss, x, y), params, split_like(v, params))
        assert [t.shape for t in hv] == [p.shape for p in params]
        assert torch.allclose(flat(hv), h @ v, rtol=0, atol=1e-10)
    assert all(p.grad is None for p in params)  # .grad untouched


def test_hessian_vector_product_on_the_quadratic_is_a_v_even_under_no_grad():
    loss_fn, params, a = quadratic()
    v = torch.tensor([1.0, -2.0, 0.5, 3.0], dtype=torch.float64)
    with torch.no_grad():
        hv = hessian_vector_product(loss_fn, params, split_like(v, params))
    assert torch.allclose(flat(hv), a @ v, rtol=0, atol=1e-12)


def test_an_unused_parameter_gets_a_zero_block_and_a_linear_loss_a_zero_product():
    w = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    unused = torch.ones(3, dtype=torch.float64, requires_grad=True)
    hv = hessian_vector_product(lambda: (w**3).sum(), [w, unused], [torch.ones(2), torch.ones(3)])
    assert torch.allclose(hv[0], 6 * w.detach()) and torch.equal(hv[1], torch.zeros(3, dtype=torch.float64))
    zero = hessian_vector_product(lambda: (3 * w).sum(), [w], [torch.ones(2)])
    assert torch.equal(zero[0], torch.zeros(2, dtype=torch.float64))
    result = top_hessian_eigenvalue(lambda: (3 * w).sum(), [w])
    assert result.eigenvalue == 0.0 and result.converged and result.iterations == 1


# -- top_hessian_eigenvalue ---------------------------------------------------------------------
def test_power_iteration_finds_the_top_eigenvalue_of_a_known_quadratic():
    loss_fn, params, a = quadratic()
    result = top_hessian_eigenvalue(loss_fn, params, iterations=500, tol=1e-12)
    assert isinstance(result, SharpnessResult) and result.converged and result.iterations < 500
    assert abs(result.eigenvalue - 5.0) < 1e-6
    assert abs(result.eigenvalue - float(torch.linalg.eigvalsh(a).max())) < 1e-6
    v = flat(result.vector)
    assert abs(float(v.norm()) - 1.0) < 1e-12
    assert float((a @ v - result.eigenvalue * v).norm()) < 1e-4 * abs(result.eigenvalue)


def test_the_eigenvector_is_shaped_like_params_and_detached():
    loss_fn, params, _ = quadratic()
    result = top_hessian_eigenvalue(loss_fn, params, iterations=200, tol=1e-10)
    assert [t.shape for t in result.vector] == [p.shape for p in params]
    assert not any(t.requires_grad for t in result.vector)


def test_power_iteration_matches_the_exact_hessian_of_a_small_mlp():
    model, x, y = small_mlp()
    eigenvalues = torch.linalg.eigvalsh(exact_hessian(model, x, y))
    largest = eigenvalues[eigenvalues.abs().argmax()]
    result = top_hessian_eigenvalue(
        loss_of(model, F.mse_loss, x, y), list(model.parameters()), iterations=2000, tol=1e-12
    )
    assert result.converged
    assert result.eigenvalue == pytest.approx(float(largest), rel=1e-4)
    assert sharpness(model, F.mse_loss, x, y, iterations=2000, tol=1e-12) == pytest.approx(
        float(largest), rel=1e-4
    )


def test_at_a_saddle_the_most_negative_eigenvalue_can_win():
    loss_fn, params, _ = quadratic(spectrum=(-6.0, 2.0, 1.0, 0.5))
    result = top_hessian_eigenvalue(loss_fn, params, iterations=500, tol=1e-12)
    assert result.converged and result.eigenvalue == pytest.approx(-6.0, abs=1e-6)


@pytest.mark.parametrize("c", [3.0, 0.25, -2.0])
def test_scaling_the_loss_by_c_scales_the_eigenvalue_by_c(c):
    base = top_hessian_eigenvalue(*quadratic()[:2], iterations=500, tol=1e-12)
    scaled = top_hessian_eigenvalue(*quadratic(scale=c)[:2], iterations=500, tol=1e-12)
    assert scaled.eigenvalue == pytest.approx(c * base.eigenvalue, rel=1e-9)
    model, x, y = small_mlp()
    mlp = sharpness(model, F.mse_loss, x, y, iterations=300, tol=1e-10)
    mlp_scaled = sharpness(model, lambda out, t: c * F.mse_loss(out, t), x, y, iterations=300, tol=1e-10)
    assert mlp_scaled == pytest.approx(c * mlp, rel=1e-6)


def test_iterations_run_out_without_convergence():
    loss_fn, params, _ = quadratic(spectrum=(5.0, 4.9, 1.0, 0.5))
    result = top_hessian_eigenvalue(loss_fn, params, iterations=3, tol=1e-12)
    assert not result.converged and result.iterations == 3
    one = top_hessian_eigenvalue(loss_fn, params, iterations=1)
    assert not one.converged and one.iterations == 1


# -- randomness ---------------------------------------------------------------------------------
def test_the_same_seed_gives_the_same_result_and_the_global_generator_is_untouched():
    model, x, y = small_mlp()
    params = list(model.parameters())
    loss_fn = loss_of(model, F.mse_loss, x, y)
    state = torch.random.get_rng_state()
    first = top_hessian_eigenvalue(loss_fn, params, iterations=20, tol=0.0, generator=7)
    second = top_hessian_eigenvalue(loss_fn, params, iterations=20, tol=0.0, generator=7)
    third = top_hessian_eigenvalue(
        loss_fn, params, iterations=20, tol=0.0, generator=torch.Generator().manual_seed(7)
    )
    other = top_hessian_eigenvalue(loss_fn, params, iterations=20, tol=0.0, generator=8)
    assert torch.equal(torch.random.get_rng_state(), state)
    for again in (second, third):
        assert again.eigenvalue == first.eigenvalue and again.iterations == first.iterations
        assert all(torch.equal(a, b) for a, b in zip(first.vector, again.vector))
    assert not torch.equal(flat(first.vector), flat(other.vector))


def test_a_passed_generator_advances():
    loss_fn, params, _ = quadratic()
    g = torch.Generator().manual_seed(3)
    a = top_hessian_eigenvalue(loss_fn, params, iterations=2, tol=0.0, generator=g)
    b = top_hessian_eigenvalue(loss_fn, params, iterations=2, tol=0.0, generator=g)
    assert not torch.equal(flat(a.vector), flat(b.vector))


# -- loss_of and sharpness ----------------------------------------------------------------------
def test_dropout_in_training_mode_is_refused_and_allowed_in_eval_mode():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Dropout(0.5), nn.Linear(5, 2)).double()
    _, x, y = small_mlp()
    with pytest.raises(ValueError, match=r"dropout in training mode \(2\).*model\.eval\(\)"):
        loss_of(model, F.mse_loss, x, y)
    with pytest.raises(ValueError, match="dropout in training mode"):
        sharpness(model, F.mse_loss, x, y)
    model.eval()
    assert sharpness(model, F.mse_loss, x, y) > 0
    assert not model.training  # the mode is the caller's
    model.train()
    model[2].p = 0.0  # a dropout that drops nothing is deterministic
    loss_of(model, F.mse_loss, x, y)


def test_loss_of_keeps_the_mode_and_sharpness_restores_batchnorm_statistics():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 5), nn.BatchNorm1d(5), nn.Tanh(), nn.Linear(5, 2)).double()
    _, x, y = small_mlp()
    before = {n: b.clone() for n, b in model.named_buffers()}
    value = sharpness(model, F.mse_loss, x, y, iterations=20)
    assert model.training and value != 0.0
    assert all(torch.equal(b, before[n]) for n, b in model.named_buffers())


def test_loss_of_accepts_a_tuple_of_inputs():
    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.tensor([1.0, -1.0], dtype=torch.float64))

        def forward(self, a, b):
            return (self.w**2 * a + self.w * b).sum(dim=1)

    a = torch.tensor([[1.0, 2.0]], dtype=torch.float64)
    b = torch.zeros(1, 2, dtype=torch.float64)
    loss_fn = loss_of(Two(), lambda out, t: (out - t).sum(), (a, b), torch.zeros(1, dtype=torch.float64))
    assert float(loss_fn().detach()) == 3.0  # H = diag(2 a) = diag(2, 4)
    assert sharpness(Two(), lambda out, t: (out - t).sum(), (a, b), torch.zeros(1), tol=1e-12) == (
        pytest.approx(4.0, rel=1e-6)
    )


def test_frozen_parameters_are_held_constant_and_all_frozen_is_refused():
    model, x, y = small_mlp()
    model[0].requires_grad_(False)
    last = [model[2].weight, model[2].bias]
    h = torch.linalg.eigvalsh(exact_hessian(model, x, y)[20:, 20:])  # the last layer's block
    assert sharpness(model, F.mse_loss, x, y, iterations=500, tol=1e-12) == pytest.approx(
        float(h.abs().max()), rel=1e-4
    )
    assert top_hessian_eigenvalue(loss_of(model, F.mse_loss, x, y), last, iterations=500, tol=1e-12).converged
    model.requires_grad_(False)
    with pytest.raises(ValueError, match="no parameters that require grad"):
        sharpness(model, F.mse_loss, x, y)


# -- argument checks ----------------------------------------------------------------------------
def test_params_that_do_not_require_grad_are_refused():
    w = torch.ones(3)
    with pytest.raises(ValueError, match=r"params\[0\] must require grad"):
        hessian_vector_product(lambda: (w**2).sum(), [w], [torch.ones(3)])
    with pytest.raises(ValueError, match=r"params\[1\] must require grad"):
        top_hessian_eigenvalue(lambda: (w**2).sum(), [torch.ones(2, requires_grad=True), w])


@pytest.mark.parametrize(
    ("params", "vector", "match"),
    [
        (torch.ones(2, requires_grad=True), [torch.ones(2)], "params must be a list of tensors"),
        ([], [], "at least one tensor"),
        ([torch.ones(2, requires_grad=True)], [torch.ones(3)], r"vector\[0\] must have the shape"),
        ([torch.ones(2, requires_grad=True)], [torch.ones(2), torch.ones(2)], "one tensor per parameter"),
        ([torch.ones(2, requires_grad=True)], torch.ones(2), "vector must be a list"),
    ],
)
def test_malformed_params_and_vectors_are_refused(params, vector, match):
    with pytest.raises(ValueError, match=match):
        hessian_vector_product(lambda: torch.tensor(0.0), params, vector)


def test_a_non_scalar_or_detached_loss_is_refused():
    w = torch.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match="must return a scalar tensor, got shape"):
        hessian_vector_product(lambda: w**2, [w], [torch.ones(2)])
    with pytest.raises(ValueError, match="without a graph"):
        hessian_vector_product(lambda: (w.detach() ** 2).sum(), [w], [torch.ones(2)])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"iterations": 0}, "iterations must be an integer >= 1"),
        ({"iterations": 2.0}, "iterations must be an integer"),
        ({"tol": -1e-3}, "tol must be a finite number >= 0"),
        ({"generator": -1}, "generator must be an integer >= 0"),
        ({"generator": True}, "generator must be an integer"),
    ],
)
def test_bad_settings_are_refused(kwargs, match):
    loss_fn, params, _ = quadratic()
    with pytest.raises(ValueError, match=match):
        top_hessian_eigenvalue(loss_fn, params, **kwargs)


def test_loss_of_refuses_a_non_module():
    with pytest.raises(ValueError, match="model must be a torch.nn.Module"):
        loss_of(lambda x: x, F.mse_loss, torch.ones(1), torch.ones(1))
