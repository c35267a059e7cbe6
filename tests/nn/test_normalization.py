"""Batch norm and layer norm: equal to torch's layers, unit statistics, permutation and scale symmetries."""

import pytest
import torch

from biaslab.nn import BatchNorm, LayerNorm

TOL = 1e-10  # float64 agreement with torch
STAT_TOL = 1e-6  # unit statistics and symmetries, up to ε's effect
SHAPES = [(8, 5), (6, 5, 7), (4, 5, 3, 6)]  # (N, F), (N, C, L), (N, C, H, W), always 5 channels


def close(a, b, tol=TOL):
    return torch.allclose(a, b, atol=tol, rtol=0)


def torch_batch_norm(shape, **kwargs):
    layer = torch.nn.BatchNorm2d if len(shape) == 4 else torch.nn.BatchNorm1d
    return layer(shape[1], **kwargs).double()


def randomise_affine(*layers, seed=0):
    """The same random γ and β in every layer (instead of the initial 1 and 0)."""
    g = torch.Generator().manual_seed(seed)
    weight = torch.rand(layers[0].weight.shape, generator=g, dtype=torch.float64) + 0.5
    bias = torch.randn(layers[0].bias.shape, generator=g, dtype=torch.float64)
    with torch.no_grad():
        for layer in layers:
            layer.weight.copy_(weight)
            layer.bias.copy_(bias)


def scaled_shifted(shape, seed=0, channel_dim=1):
    """Gaussian values with a random scale in [10, 100] and shift in [-1000, 1000] per channel."""
    g = torch.Generator().manual_seed(seed)
    channels = [1] * len(shape)
    channels[channel_dim] = shape[channel_dim]
    scale = 10 ** (1 + torch.rand(channels, generator=g, dtype=torch.float64))
    shift = 2000 * torch.rand(channels, generator=g, dtype=torch.float64) - 1000
    return torch.randn(shape, generator=g, dtype=torch.float64) * scale + shift


def input_output_grads(layer, x, upstream):
    """Gradients of Σ upstream · layer(x) with respect to x, γ and β."""
    x = x.clone().requires_grad_(True)
    layer.zero_grad()
    (layer(x) * upstream).sum().backward()
    return x.grad, layer.weight.grad, layer.bias.grad


# ------------------------------------------------------------------------------- batch norm vs torch


@pytest.mark.parametrize("shape", SHAPES)
def test_batch_norm_equals_torch_in_training_and_evaluation(shape):
    torch.manual_seed(0)
    ours = BatchNorm(shape[1], eps=1e-3, momentum=0.3).double()
    theirs = torch_batch_norm(shape, eps=1e-3, momentum=0.3)
    randomise_affine(ours, theirs)
    for step in range(4):
        x = 3 * torch.randn(shape, dtype=torch.float64) + step
        assert close(ours(x), theirs(x))
    assert close(ours.running_mean, theirs.running_mean)
    assert close(ours.running_var, theirs.running_var)
    assert ours.num_batches_tracked.item() == theirs.num_batches_tracked.item() == 4
    ours.eval()
    theirs.eval()
    x = torch.randn(shape, dtype=torch.float64)
    assert close(ours(x), theirs(x))
    assert close(ours(x[:1]), theirs(x[:1]))  # one example is fine in evaluation
    assert ours.num_batches_tracked.item() == 4  # evaluation leaves the running estimates alone


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_gradients_equal_torch(shape, training):
    torch.manual_seed(1)
    ours = BatchNorm(shape[1]).double().train(training)
    theirs = torch_batch_norm(shape).train(training)
    randomise_affine(ours, theirs, seed=1)
    if not training:  # non-trivial running estimates
        with torch.no_grad():
            for layer in (ours, theirs):
                layer.running_mean.copy_(torch.linspace(-1, 1, shape[1]))
                layer.running_var.copy_(torch.linspace(0.5, 2, shape[1]))
    x = 2 * torch.randn(shape, dtype=torch.float64) + 1
    upstream = torch.randn(shape, dtype=torch.float64)
    for mine, reference in zip(
        input_output_grads(ours, x, upstream), input_output_grads(theirs, x, upstream)
    ):
        assert close(mine, reference)


@pytest.mark.parametrize("shape", SHAPES)
def test_batch_norm_without_affine_equals_torch(shape):
    torch.manual_seed(2)
    ours = BatchNorm(shape[1], affine=False).double()
    theirs = torch_batch_norm(shape, affine=False)
    assert ours.weight is None and ours.bias is None and len(list(ours.parameters())) == 0
    x = torch.randn(shape, dtype=torch.float64, requires_grad=True)
    upstream = torch.randn(shape, dtype=torch.float64)
    (grad_ours,) = torch.autograd.grad((ours(x) * upstream).sum(), x)
    (grad_theirs,) = torch.autograd.grad((theirs(x) * upstream).sum(), x)
    assert close(grad_ours, grad_theirs)
    assert close(ours.running_var, theirs.running_var)


# ------------------------------------------------------------------------------- layer norm vs torch


@pytest.mark.parametrize("shape", [(8, 5), (3, 4, 5), (2, 3, 4, 5)])
def test_layer_norm_equals_torch_outputs_and_gradients(shape):
    torch.manual_seed(3)
    ours = LayerNorm(5, eps=1e-3).double()
    theirs = torch.nn.LayerNorm(5, eps=1e-3).double()
    randomise_affine(ours, theirs, seed=3)
    x = 3 * torch.randn(shape, dtype=torch.float64) - 2
    assert close(ours(x), theirs(x))
    ours.eval()
    assert close(ours(x), theirs(x))  # the same in evaluation
    upstream = torch.randn(shape, dtype=torch.float64)
    for mine, reference in zip(
        input_output_grads(ours, x, upstream), input_output_grads(theirs, x, upstream)
    ):
        assert close(mine, reference)
    plain, reference = LayerNorm(5, affine=False).double(), torch.nn.LayerNorm(5, elementwise_affine=False)
    assert close(plain(x), reference.double()(x))


# ------------------------------------------------------------------------------- unit statistics


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_batch_norm_gives_each_channel_mean_zero_and_unit_variance(shape, seed):
    x = scaled_shifted(shape, seed)
    y = BatchNorm(shape[1], affine=False).double()(x)
    dims = [0, *range(2, len(shape))]
    # with σ² ≥ 10² the biased variance σ² / (σ² + ε) is within 1e-7 of 1
    assert close(y.mean(dim=dims), torch.zeros(shape[1], dtype=torch.float64), STAT_TOL)
    assert close(y.var(dim=dims, correction=0), torch.ones(shape[1], dtype=torch.float64), STAT_TOL)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_layer_norm_gives_each_row_mean_zero_and_unit_variance(seed):
    x = scaled_shifted((6, 20), seed, channel_dim=0)  # one scale and shift per row
    y = LayerNorm(20, affine=False).double()(x)
    assert close(y.mean(dim=-1), torch.zeros(6, dtype=torch.float64), STAT_TOL)
    assert close(y.var(dim=-1, correction=0), torch.ones(6, dtype=torch.float64), STAT_TOL)


# ------------------------------------------------------------------------------- symmetries


@pytest.mark.parametrize("shape", SHAPES)
def test_batch_norm_is_equivariant_to_permuting_the_batch(shape):
    torch.manual_seed(5)
    layer = BatchNorm(shape[1]).double()
    randomise_affine(layer, seed=5)
    x = torch.randn(shape, dtype=torch.float64)
    out = layer(x)
    stats = layer.running_mean.clone(), layer.running_var.clone()
    layer.reset_running_stats()
    perm = torch.randperm(shape[0])
    assert close(layer(x[perm]), out[perm], STAT_TOL)
    assert close(layer.running_mean, stats[0]) and close(layer.running_var, stats[1])


@pytest.mark.parametrize("shape", SHAPES)
def test_batch_norm_is_invariant_to_a_per_channel_affine_change_of_its_input(shape):
    # exact only as ε → 0: (a x̂ σ) / sqrt(a² σ² + ε) differs from x̂ by about ε / σ² · |1 − 1/a²|,
    # so this test uses a small ε (the default 1e-5 would already move unit-variance inputs by ~1e-6)
    torch.manual_seed(6)
    layer = BatchNorm(shape[1], eps=1e-10).double()
    randomise_affine(layer, seed=6)
    x = torch.randn(shape, dtype=torch.float64)
    per_channel = (1, shape[1], *[1] * (len(shape) - 2))
    a = (0.1 + 10 * torch.rand(shape[1], dtype=torch.float64)).view(
        per_channel
    )  # a > 0, (F,) -> (1, F, 1, ...)
    b = (100 * torch.randn(shape[1], dtype=torch.float64)).view(per_channel)  # (F,) -> (1, F, 1, ...)
    assert close(layer(a * x + b), layer(x), STAT_TOL)
    assert not close(layer(-a * x + b), layer(x), STAT_TOL)  # a < 0 flips the sign of x̂


def test_layer_norm_is_invariant_to_a_per_example_affine_change_of_its_input():
    torch.manual_seed(7)
    layer = LayerNorm(12, eps=1e-10).double()
    randomise_affine(layer, seed=7)
    x = torch.randn(5, 12, dtype=torch.float64)
    a = 0.1 + 10 * torch.rand(5, 1, dtype=torch.float64)  # one a > 0 per example
    b = 100 * torch.randn(5, 1, dtype=torch.float64)
    assert close(layer(a * x + b), layer(x), STAT_TOL)
    assert close(layer(x[2:3]), layer(x)[2:3])  # each example on its own: no batch dependence


# ------------------------------------------------------------------------------- resets and errors


def test_reset_parameters_and_reset_running_stats():
    layer = BatchNorm(4)
    randomise_affine(layer.double(), seed=8)
    layer(torch.randn(10, 4, dtype=torch.float64))
    layer.reset_running_stats()
    assert torch.equal(layer.running_mean, torch.zeros(4).double())
    assert torch.equal(layer.running_var, torch.ones(4).double())
    assert layer.num_batches_tracked.item() == 0
    assert not torch.equal(layer.weight, torch.ones(4).double())  # parameters are left alone
    layer(torch.randn(10, 4, dtype=torch.float64))
    layer.reset_parameters()
    assert torch.equal(layer.weight, torch.ones(4).double()) and torch.equal(
        layer.bias, torch.zeros(4).double()
    )
    assert layer.num_batches_tracked.item() == 0
    norm = LayerNorm(4)
    randomise_affine(norm, seed=8)
    norm.reset_parameters()
    assert torch.equal(norm.weight, torch.ones(4)) and torch.equal(norm.bias, torch.zeros(4))
    assert len(LayerNorm(4, affine=False).state_dict()) == 0


def test_errors():
    with pytest.raises(ValueError, match="expected 4 channels in dim 1, got 3"):
        BatchNorm(4)(torch.randn(8, 3))
    with pytest.raises(ValueError, match="expected an input of shape"):
        BatchNorm(4)(torch.randn(4))
    with pytest.raises(ValueError, match="expected 4 features in the last dim, got 3"):
        LayerNorm(4)(torch.randn(2, 4, 3))
    with pytest.raises(ValueError, match="got a scalar"):
        LayerNorm(4)(torch.tensor(1.0))
    with pytest.raises(ValueError, match="features must be at least 1"):
        BatchNorm(0)
    for single in (torch.randn(1, 4), torch.randn(1, 4, 1), torch.randn(1, 4, 1, 1)):
        with pytest.raises(ValueError, match="expected more than 1 value per channel when training"):
            BatchNorm(4)(single)
        assert BatchNorm(4).eval()(single).shape == single.shape  # fine in evaluation
    assert BatchNorm(4)(torch.randn(1, 4, 2)).shape == (1, 4, 2)  # one example, two positions: fine
