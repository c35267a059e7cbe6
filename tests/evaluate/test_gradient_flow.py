"""Tests for biaslab.evaluate.gradient_flow: ‖∂L/∂x_t‖ per step against closed forms (a linear
read-out, a recurrence with no memory), the Elman RNN's geometric decay, no side effects."""

import numpy as np
import pytest
import torch
from torch import nn

from biaslab.evaluate.gradient_flow import gradient_by_step
from biaslab.nn import SequenceClassifier


class WeightedSum(nn.Module):
    """f(x) = Σ_t a_t · x_t, summed over the features too: ∂f/∂x_t = a_t in every feature."""

    def __init__(self, weights: torch.Tensor):
        super().__init__()
        self.weights = nn.Parameter(weights)

    def forward(self, x):  # (N, T, F) -> (N,)
        return (x * self.weights[None, :, None]).sum(dim=(1, 2))


def test_a_linear_read_out_gives_its_weights_over_the_batch_size():
    n, features = 5, 3
    weights = torch.tensor([0.5, -2.0, 0.0, 4.0])
    steps = torch.randn(n, 4, features, generator=torch.Generator().manual_seed(0))
    norms = gradient_by_step(WeightedSum(weights), steps, torch.zeros(n), loss_fn=lambda out, _: out.mean())
    # L = mean_n f(x_n): ∂L/∂x_{n,t} = a_t / N in each of F features, norm |a_t| √F / N.
    np.testing.assert_allclose(norms, weights.abs().numpy() * np.sqrt(features) / n, rtol=1e-12)


def test_a_recurrence_without_memory_sends_gradient_to_the_last_step_only():
    torch.manual_seed(0)
    model = SequenceClassifier(4, 8, 4, cell="rnn")
    with torch.no_grad():
        for name, parameter in model.rnn.named_parameters():
            if "hh" in name and "weight" in name:
                parameter.zero_()  # h_t = tanh(W_xh x_t + b): nothing of x_1..x_{T-1} reaches h_T
    steps = torch.randn(6, 10, 4, generator=torch.Generator().manual_seed(1))
    norms = gradient_by_step(model, steps, torch.zeros(6, dtype=torch.long))
    assert norms.shape == (10,)
    assert norms[-1] > 0 and np.all(norms[:-1] == 0)


def test_an_untrained_elman_rnn_loses_the_gradient_geometrically_in_float64():
    torch.manual_seed(0)
    model = SequenceClassifier(8, 64, 8, cell="rnn")
    tokens = torch.randint(0, 8, (32, 100), generator=torch.Generator().manual_seed(2))
    norms = gradient_by_step(model, nn.functional.one_hot(tokens, 8).float(), tokens[:, 0])
    assert norms[0] / norms[-1] < 1e-3  # vanished ...
    assert norms[0] > 0  # ... yet not rounded to zero, as float32 would
    assert norms[-1] > norms[50] > norms[0]


def test_the_callers_model_and_inputs_are_left_as_they_were():
    torch.manual_seed(0)
    model = SequenceClassifier(4, 8, 4, cell="lstm")
    before = {k: v.clone() for k, v in model.state_dict().items()}
    steps = torch.randn(3, 5, 4)
    gradient_by_step(model, steps, torch.zeros(3, dtype=torch.long))
    assert all(p.dtype == torch.float32 and p.grad is None for p in model.parameters())
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert steps.dtype == torch.float32 and not steps.requires_grad


def test_steps_must_be_three_dimensional():
    with pytest.raises(ValueError, match=r"\(N, T, F\)"):
        gradient_by_step(nn.Identity(), torch.zeros(3, 5), torch.zeros(3))


@pytest.mark.parametrize("radius", [0.5, 1.0, 1.3])
def test_a_scaled_identity_rnn_multiplies_the_gradient_by_its_radius_per_step(radius):
    """∂h_T/∂h_t = ρ^(T−t) I on one-hot inputs: the gradient ratio between any two steps is a power
    of ρ, checked against a hand-made linear recurrence h_t = ρ h_{t−1} + W x_t of the same weights."""
    from biaslab.evaluate.gradient_flow import scaled_identity_rnn

    model = scaled_identity_rnn(6, 10, 6, radius, seed=3)
    tokens = torch.randint(0, 6, (32, 12), generator=torch.Generator().manual_seed(0))
    steps = nn.functional.one_hot(tokens, 6).double()  # (N, T, 6)
    norms = gradient_by_step(model, steps, tokens[:, 0])
    np.testing.assert_allclose(norms[:-1] / norms[1:], radius, rtol=1e-12)
    w_in, readout = model.rnn.weight_ih_l0.detach(), model.readout
    h = torch.zeros(32, 10, dtype=torch.float64)
    for t in range(12):
        h = radius * h + steps[:, t] @ w_in.T  # no unit ever negative: ReLU is the identity here
    with torch.no_grad():
        torch.testing.assert_close(model(steps), readout(h), rtol=1e-12, atol=1e-12)
    assert model.rnn.weight_hh_l0.dtype == torch.float64
