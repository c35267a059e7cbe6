"""Plain and residual stacks against their formulas written out with torch.nn.functional; the
identity path that carries the gradient; clear errors."""

import pytest
import torch
import torch.nn.functional as F

from biaslab.nn.residual import BLOCKS, DeepMLP

X = torch.randn(16, 12, dtype=torch.float64, generator=torch.Generator().manual_seed(0))


def _by_hand(model: DeepMLP, x: torch.Tensor) -> torch.Tensor:
    h = F.linear(x, model.stem.weight, model.stem.bias)
    if model.block == "plain":
        h = F.relu(h)
    for layer in model.layers:
        w, b = layer.linear.weight, layer.linear.bias
        if model.block == "plain":
            h = F.relu(F.linear(h, w, b))  # σ(W h + b)
            continue
        read = h
        if model.block == "residual + batch norm":
            read = F.batch_norm(h, None, None, layer.norm.weight, layer.norm.bias, training=True)
        elif model.block == "residual + layer norm":
            read = F.layer_norm(h, (h.size(1),), layer.norm.weight, layer.norm.bias)
        h = h + F.linear(F.relu(read), w, b)  # h + W σ(Norm(h)) + b
    return F.linear(h, model.head.weight, model.head.bias)


@pytest.mark.parametrize("block", BLOCKS)
def test_each_stack_is_its_formula(block):
    torch.manual_seed(0)
    model = DeepMLP(12, 8, 4, 3, block).double().train()
    torch.testing.assert_close(model(X), _by_hand(model, X), rtol=1e-12, atol=1e-12)
    assert len(model.layer_weights()) == 4 and model.layer_weights()[0] is model.layers[0].linear.weight


def test_the_identity_path_carries_the_gradient_where_a_plain_stack_loses_it():
    def first_over_last(block):
        torch.manual_seed(0)
        model = DeepMLP(12, 32, 40, 3, block).double()
        loss = F.cross_entropy(model(X), torch.arange(16) % 3)
        grads = torch.autograd.grad(loss, model.layer_weights())
        return float(grads[0].norm() / grads[-1].norm())

    assert first_over_last("plain") < 1e-3  # PyTorch's default init shrinks the signal each layer
    assert 0.1 < first_over_last("residual + layer norm") < 10


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="block must be one of"):
        DeepMLP(4, 4, 2, 2, "dense")
    with pytest.raises(ValueError, match="depth and width"):
        DeepMLP(4, 4, 0, 2)
