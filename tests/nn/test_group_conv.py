"""p4 group convolution: each layer against its definition written out with F.conv2d per rotation,
equivariance to quarter turns, invariance of the C4CNN where a plain CNN has none."""

import pytest
import torch
import torch.nn.functional as F

from biaslab.evaluate.symmetry import equivariance_error, invariance_error, rotate90
from biaslab.nn import C4CNN, CNN, C4GroupConv, C4LiftingConv
from biaslab.nn.mlp import count_parameters

TOL = 1e-5


def rotate_p4(k):
    """The output transform the module docstring states: rot90 of every map, rotation axis rolled by k."""
    return lambda y: torch.roll(torch.rot90(y, k, (-2, -1)), shifts=k, dims=2)


def lifting_reference(layer, x):
    """Eq. 10 with one F.conv2d per rotation r: x ⋆ rot90(ψ, r) + b."""
    rotated = [torch.rot90(layer.weight, r, (-2, -1)) for r in range(4)]
    outs = [F.conv2d(x, weight, layer.bias, padding=layer.padding) for weight in rotated]
    return torch.stack(outs, dim=2)  # 4 x (N, C_out, H', W') -> (N, C_out, 4, H', W')


def group_reference(layer, x):
    """Eq. 11 as loops: out[:, :, r] = Σ_s x[:, :, s] ⋆ rot90(ψ[:, :, (s − r) mod 4], r) + b."""
    outs = []
    for r in range(4):
        total = 0
        for s in range(4):
            psi = torch.rot90(layer.weight[:, :, (s - r) % 4], r, (-2, -1))  # (C_out, C_in, k, k)
            total = total + F.conv2d(x[:, :, s], psi, padding=layer.padding)
        outs.append(total + layer.bias[:, None, None])
    return torch.stack(outs, dim=2)


LIFTING_CASES = [(3, None, (9, 9)), (5, None, (8, 11)), (4, 1, (10, 10))]
GROUP_CASES = [(3, None, (9, 9)), (5, None, (8, 11)), (3, 0, (10, 10))]


@pytest.mark.parametrize("kernel_size, padding, size", LIFTING_CASES)
def test_lifting_conv_equals_four_rotated_conv2d_calls(kernel_size, padding, size):
    torch.manual_seed(0)
    layer = C4LiftingConv(3, 5, kernel_size, padding=padding).double()
    x = torch.randn(2, 3, *size, dtype=torch.float64)
    out = layer(x)
    assert out.shape == (2, 5, 4, *(n + 2 * layer.padding - kernel_size + 1 for n in size))
    torch.testing.assert_close(out, lifting_reference(layer, x), atol=1e-12, rtol=0)


@pytest.mark.parametrize("kernel_size, padding, size", GROUP_CASES)
def test_group_conv_equals_the_definition_as_loops_over_r_and_s(kernel_size, padding, size):
    torch.manual_seed(0)
    layer = C4GroupConv(3, 5, kernel_size, padding=padding).double()
    x = torch.randn(2, 3, 4, *size, dtype=torch.float64)
    out = layer(x)
    assert out.shape == (2, 5, 4, *(n + 2 * layer.padding - kernel_size + 1 for n in size))
    torch.testing.assert_close(out, group_reference(layer, x), atol=1e-12, rtol=0)


def test_filter_bank_row_and_column_order():
    torch.manual_seed(0)
    layer = C4GroupConv(2, 3, 3)
    bank = layer.filter_bank()  # (C_out·4, C_in·4, k, k)
    assert bank.shape == (12, 8, 3, 3)
    for o, r, i, s in [(0, 0, 0, 0), (2, 1, 1, 3), (1, 3, 0, 1), (2, 2, 1, 0)]:
        expected = torch.rot90(layer.weight[o, i, (s - r) % 4], r, (-2, -1))
        assert torch.equal(bank[o * 4 + r, i * 4 + s], expected)


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("size", [(12, 12), (11, 11), (9, 14)])
def test_both_layers_are_equivariant_to_quarter_turns(k, size):
    torch.manual_seed(0)
    lifting, group = C4LiftingConv(2, 4), C4GroupConv(4, 3, kernel_size=5)
    x = torch.randn(3, 2, *size)
    assert equivariance_error(lifting, rotate90(k), rotate_p4(k), x) <= TOL
    # a function on p4 in: the input transforms as the output does, rot90 and roll
    assert equivariance_error(group, rotate_p4(k), rotate_p4(k), torch.randn(3, 4, 4, *size)) <= TOL
    stack = torch.nn.Sequential(lifting, torch.nn.ReLU(), group)
    assert equivariance_error(stack, rotate90(k), rotate_p4(k), x) <= TOL


def test_the_roll_direction_matters():
    """The convention is not vacuous: rolling the other way, or not at all, is wrong."""
    torch.manual_seed(0)
    lifting, group = C4LiftingConv(1, 4), C4GroupConv(4, 4)
    x, h = torch.randn(2, 1, 10, 10), torch.randn(2, 4, 4, 10, 10)
    assert equivariance_error(lifting, rotate90(1), rotate_p4(1), x) <= TOL
    for wrong in (rotate90(1), lambda y: rotate_p4(1)(y).roll(-2, dims=2)):
        assert equivariance_error(lifting, rotate90(1), wrong, x) > 1e-2
        assert equivariance_error(group, wrong, wrong, h) > 1e-2


def test_c4cnn_is_rotation_invariant_and_a_plain_cnn_is_not():
    torch.manual_seed(0)
    x = torch.randn(4, 1, 28, 28)
    model = C4CNN(1, (8, 16), 10)
    plain = CNN(1, (8, 16), 10, dims=2, pool="max", global_pool="avg")
    assert model(x).shape == (4, 10)
    assert model.features(x).shape == (4, 16)
    for k in (1, 2, 3):
        assert invariance_error(model, rotate90(k), x) <= TOL
        assert invariance_error(plain, rotate90(k), x) > 1e-2


@pytest.mark.parametrize("pool", ["max", "avg", None])
def test_c4cnn_with_three_layers_and_each_pool_is_invariant(pool):
    torch.manual_seed(0)
    model = C4CNN(2, (4, 6, 8), 3, pool=pool)  # 28 -> 14 -> 7 when pooling
    x = torch.randn(2, 2, 28, 28)
    for k in (1, 2, 3):
        assert invariance_error(model, rotate90(k), x) <= TOL


def test_c4cnn_refuses_to_pool_an_odd_size():
    model = C4CNN(1, (4, 6, 8))
    with pytest.raises(ValueError, match="odd size"):
        model(torch.randn(1, 1, 14, 14))  # 14 -> 7, then a pool of 7x7
    with pytest.raises(ValueError, match="odd size"):
        model(torch.randn(1, 1, 28, 27))


def test_mis_shaped_inputs_and_bad_arguments_raise_clear_errors():
    lifting, group = C4LiftingConv(3, 4), C4GroupConv(3, 4)
    with pytest.raises(ValueError, match=r"\(N, C_in, H, W\)"):
        lifting(torch.randn(2, 3, 4, 8, 8))
    with pytest.raises(ValueError, match="3 input channels, got 2"):
        lifting(torch.randn(2, 2, 8, 8))
    with pytest.raises(ValueError, match=r"\(N, C_in, 4, H, W\)"):
        group(torch.randn(2, 3, 8, 8))
    with pytest.raises(ValueError, match="3 input channels, got 5"):
        group(torch.randn(2, 5, 4, 8, 8))
    with pytest.raises(ValueError, match="rotation axis of size 4 at dim 2, got 3"):
        group(torch.randn(2, 3, 3, 8, 8))
    with pytest.raises(ValueError, match="odd kernel_size"):
        C4GroupConv(3, 4, kernel_size=4)
    with pytest.raises(ValueError, match="C4CNN expects images"):
        C4CNN(1)(torch.randn(1, 28, 28))
    with pytest.raises(ValueError, match="pool must be"):
        C4CNN(1, pool="sum")


@pytest.mark.parametrize("c_in, c_out, k", [(1, 8, 3), (3, 5, 5)])
def test_parameter_counts(c_in, c_out, k):
    assert count_parameters(C4LiftingConv(c_in, c_out, k)) == c_out * c_in * k * k + c_out
    assert count_parameters(C4GroupConv(c_in, c_out, k)) == c_out * c_in * 4 * k * k + c_out
    assert count_parameters(C4GroupConv(c_in, c_out, k, bias=False)) == c_out * c_in * 4 * k * k
    assert count_parameters(C4CNN(1, (8, 16), 10)) == (8 * 9 + 8) + (16 * 8 * 4 * 9 + 16) + (16 * 10 + 10)


def test_initialisation_matches_nn_conv2d_bounds():
    torch.manual_seed(0)
    layer = C4GroupConv(8, 16, 3)
    bound = 1 / (8 * 4 * 9) ** 0.5  # kaiming_uniform(a=√5) on fan_in = C_in·4·k·k gives ±1/√fan_in
    assert layer.weight.abs().max() <= bound and layer.weight.abs().max() > 0.9 * bound
    assert layer.bias.abs().max() <= bound


def test_backward_reaches_every_parameter_and_runs_are_deterministic():
    def run():
        torch.manual_seed(3)
        model = C4CNN(1, (4, 8), 10)
        x, y = torch.randn(6, 1, 16, 16), torch.randint(0, 10, (6,))
        F.cross_entropy(model(x), y).backward()
        return model

    first, second = run(), run()
    for (name, p), q in zip(first.named_parameters(), second.parameters()):
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
        assert p.grad.abs().sum() > 0, name
        assert torch.equal(p, q) and torch.equal(p.grad, q.grad), name


@pytest.mark.parametrize("kernel_size, padding", [(4, 1), (2, 0), (3, 0)])
def test_explicit_padding_and_even_kernels_keep_the_equivariance(kernel_size, padding):
    torch.manual_seed(0)
    stack = torch.nn.Sequential(
        C4LiftingConv(2, 3, kernel_size, padding=padding), C4GroupConv(3, 2, kernel_size, padding=padding)
    )
    x = torch.randn(2, 2, 9, 12)
    for k in (1, 2, 3):
        assert equivariance_error(stack, rotate90(k), rotate_p4(k), x) <= TOL


def test_layers_after_the_pooled_ones_keep_the_invariance():
    torch.manual_seed(0)
    model = C4CNN(1, (4, 4, 4, 4), 5, pooled_layers=2)  # 28 -> 14 -> 7, then two layers at 7x7
    x = torch.randn(3, 1, 28, 28, generator=torch.Generator().manual_seed(1))
    for k in (1, 2, 3):
        assert invariance_error(model, rotate90(k), x) <= 1e-5
    with pytest.raises(ValueError, match="pooled_layers"):
        C4CNN(1, (4, 4), 5, pooled_layers=3)
