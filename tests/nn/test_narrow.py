"""Tests for biaslab.nn.narrow: the narrow ReLU MLP's layers and start, and that a width-1 network
of any depth computes a monotone function of its input while width 2 need not."""

import numpy as np
import pytest
import torch
from torch import nn

from biaslab.evaluate.approximation import sign_changes
from biaslab.nn.narrow import narrow_relu_mlp


def linears(model) -> list[nn.Linear]:
    return [m for m in model.layers if isinstance(m, nn.Linear)]


def test_the_layers_are_depth_hidden_layers_of_width_units():
    model = narrow_relu_mlp(width=2, depth=5, inputs=3, outputs=4)
    assert model.sizes == (3, 2, 2, 2, 2, 2, 4)
    assert sum(isinstance(m, nn.ReLU) for m in model.layers) == 5
    assert model(torch.zeros(7, 3)).shape == (7, 4)


def test_hidden_biases_start_at_start_bias_and_the_output_bias_at_zero():
    torch.manual_seed(0)
    layers = linears(narrow_relu_mlp(width=3, depth=4, start_bias=0.7))
    for linear in layers[:-1]:
        assert torch.all(linear.bias == 0.7)
    assert torch.all(layers[-1].bias == 0)


def test_the_weights_are_lecun_normal():
    """Over many draws, a weight's standard deviation is 1/sqrt(fan_in) and its mean 0."""
    torch.manual_seed(1)
    weights = {1: [], 2: []}
    for _ in range(3000):
        first, second, *_ = linears(narrow_relu_mlp(width=2, depth=2))
        weights[1].append(first.weight.detach().flatten())  # fan_in 1
        weights[2].append(second.weight.detach().flatten())  # fan_in 2
    for fan_in, drawn in weights.items():
        drawn = torch.cat(drawn)
        assert float(drawn.mean()) == pytest.approx(0.0, abs=0.03)
        assert float(drawn.std()) == pytest.approx(1 / np.sqrt(fan_in), rel=0.03)


def test_the_start_is_drawn_from_torchs_global_generator():
    torch.manual_seed(5)
    first = narrow_relu_mlp(width=2, depth=3).state_dict()
    torch.manual_seed(5)
    again = narrow_relu_mlp(width=2, depth=3).state_dict()
    assert all(torch.equal(first[k], again[k]) for k in first)


@pytest.mark.parametrize("depth", [1, 2, 5, 12])
def test_a_width_one_network_of_any_depth_is_monotone(depth):
    """Random weights of either sign and random biases: each layer maps one number to one number
    monotonically, so the network's values on a grid never change direction (NumPy's diff as the
    reference: all steps >= 0 or all <= 0)."""
    grid = torch.linspace(-3, 3, 4001)[:, None]
    generator = torch.Generator().manual_seed(depth)
    for _ in range(30):
        model = narrow_relu_mlp(width=1, depth=depth)
        with torch.no_grad():
            for linear in linears(model):
                linear.weight.copy_(torch.randn(linear.weight.shape, generator=generator) * 2)
                linear.bias.copy_(torch.randn(linear.bias.shape, generator=generator))
            values = model(grid)[:, 0].numpy()
        steps = np.diff(values)
        assert np.all(steps >= 0) or np.all(steps <= 0)
        assert sign_changes(values) == 0


def test_width_two_can_make_a_bump():
    """max(0, 1 - |x|) with width 2: h = (relu(x), relu(-x)), then relu(1 - h_1 - h_2)."""
    model = narrow_relu_mlp(width=2, depth=2)
    first, second, out = linears(model)
    with torch.no_grad():
        first.weight.copy_(torch.tensor([[1.0], [-1.0]]))
        first.bias.zero_()
        second.weight.copy_(torch.tensor([[-1.0, -1.0], [0.0, 0.0]]))
        second.bias.copy_(torch.tensor([1.0, 0.0]))
        out.weight.copy_(torch.tensor([[1.0, 0.0]]))
        out.bias.zero_()
        grid = torch.linspace(-2, 2, 401)[:, None]
        values = model(grid)[:, 0].numpy()
    np.testing.assert_allclose(values, np.maximum(0, 1 - np.abs(grid[:, 0].numpy())), atol=1e-6)
    assert sign_changes(values) == 1


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        ({"width": 0, "depth": 2}, "width=0"),
        ({"width": 1, "depth": 0}, "depth=0"),
        ({"width": 1, "depth": 2, "inputs": 1.5}, "inputs=1.5"),
        ({"width": 1, "depth": 2, "start_bias": float("nan")}, "start_bias=nan"),
    ],
)
def test_bad_arguments_are_refused_in_one_line(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        narrow_relu_mlp(**kwargs)
