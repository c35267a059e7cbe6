"""The notes' trace tables, computed by the three engines."""

import pytest
import torch

from biaslab.scratch.trace import NOTES_EXAMPLE, Step, WengertList


def test_primal_tangent_and_adjoint_tables():
    primal = NOTES_EXAMPLE.primal_table([1.0, 2.0])
    tangent = NOTES_EXAMPLE.tangent_table([1.0, 2.0], [1.0, 0.0])
    adjoint = {row[0]: row[2] for row in NOTES_EXAMPLE.adjoint_table([1.0, 2.0])}
    assert primal[-1][2] == pytest.approx(10.9093, abs=5e-5)
    assert tangent[-1][2] == pytest.approx(2.9093, abs=5e-5)
    assert adjoint["x0̄"] == pytest.approx(2.9093, abs=5e-5)
    assert adjoint["x1̄"] == pytest.approx(11.5839, abs=5e-5)
    assert [r[0] for r in primal] == ["x0", "x1", "v1", "v2", "v3", "v4", "v5", "z"]


def test_gradient_equals_torch_at_random_points():
    gen = torch.Generator().manual_seed(0)
    for _ in range(10):
        x = torch.randn(2, generator=gen, dtype=torch.float64, requires_grad=True)
        (2 * x[0] + x[0] * torch.sin(x[1]) + x[1] ** 3).backward()
        ours = NOTES_EXAMPLE.gradient(x.detach().numpy())
        assert max(abs(a - b) for a, b in zip(ours, x.grad.tolist())) <= 1e-12


def test_forward_tangent_of_each_input_is_a_gradient_entry():
    x = [0.3, -1.2]
    grad = NOTES_EXAMPLE.gradient(x)
    for i in range(2):
        seed = [1.0 if j == i else 0.0 for j in range(2)]
        assert NOTES_EXAMPLE.tangent_table(x, seed)[-1][2] == pytest.approx(grad[i], abs=1e-12)


def test_unknown_op_is_rejected():
    with pytest.raises(ValueError, match="unknown op"):
        WengertList(["x"], [Step("y", "tan", ("x",))])
