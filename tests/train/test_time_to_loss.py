"""The race to a loss: full-batch steps equal gradient descent written out with torch.optim.SGD,
the run stops at the first check at or below the target, and a diverging run stops early."""

import pytest
import torch
from torch import nn

from biaslab.evaluate.timing import backward_operations, time_forward_backward
from biaslab.nn import MLP
from biaslab.train.time_to_loss import time_to_loss

X = torch.randn(64, 5, generator=torch.Generator().manual_seed(0))
Y = (X[:, 0] > 0).long()


def _model():
    torch.manual_seed(1)
    return MLP((5, 8, 2))


def test_full_batch_steps_equal_gradient_descent_written_out():
    model, reference = _model(), _model()
    run = time_to_loss(model, X, Y, batch_size=64, lr=0.5, target=0.0, max_examples=64 * 7)
    optimizer = torch.optim.SGD(reference.parameters(), lr=0.5)
    for _ in range(7):
        optimizer.zero_grad()
        nn.functional.cross_entropy(reference(X), Y).backward()
        optimizer.step()
    assert (run.reached, run.steps, run.examples) == (False, 7, 448)  # the budget ran out
    for p, q in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p, q)
    assert run.loss == pytest.approx(nn.functional.cross_entropy(reference(X), Y).item())


def test_the_run_stops_at_the_first_check_below_the_target_and_when_it_diverges():
    run = time_to_loss(_model(), X, Y, batch_size=8, lr=0.5, target=0.3, max_examples=10**6, check_every=5)
    assert run.reached and run.loss <= 0.3 and run.steps % 5 == 0 and run.examples == 8 * run.steps
    slower = time_to_loss(_model(), X, Y, batch_size=8, lr=0.5, target=0.3, max_examples=10**6, check_every=1)
    assert slower.steps <= run.steps and run.steps - slower.steps < 5  # checked more often, found earlier
    diverged = time_to_loss(_model(), X * 100, Y, batch_size=64, lr=100.0, target=0.01, max_examples=10**6)
    assert not diverged.reached and diverged.steps < 100
    with pytest.raises(ValueError, match="batch_size"):
        time_to_loss(_model(), X, Y, batch_size=65, lr=0.1, target=0.1, max_examples=100)


def test_operation_counts_equal_the_products_counted_by_hand():
    model, batch = _model(), 16
    x, y = X[:batch], Y[:batch]
    forward, backward = backward_operations(model, x, y, nn.functional.cross_entropy)
    assert forward == 2 * batch * (5 * 8 + 8 * 2)  # two flops per multiply-add of each product
    assert backward == 2 * batch * (5 * 8 + 8 * 2) + 2 * batch * 8 * 2  # weights', and layer 2's input
    seconds = time_forward_backward(model, x, y, nn.functional.cross_entropy, repeats=2)
    assert all(s > 0 for s in seconds) and model.layers[0].weight.grad is not None
