"""Convolution arithmetic and the CNN builder, each against PyTorch's own layers."""

import itertools

import pytest
import torch
from torch import nn

from biaslab.nn.conv import (
    CNN,
    conv_operation_count,
    conv_output_size,
    conv_parameter_count,
    effective_stride,
    receptive_field,
)
from biaslab.nn.mlp import linear_parameter_count


@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_conv_output_size_equals_torch_conv1d_conv2d_and_maxpool2d(k, d):
    for size, s, p in itertools.product((5, 8, 13), (1, 2, 3), (0, 1, 2)):
        if d * (k - 1) + 1 > size + 2 * p:
            continue
        case = f"size={size} k={k} stride={s} padding={p} dilation={d}"
        expected = conv_output_size(size, k, stride=s, padding=p, dilation=d)
        out1 = nn.Conv1d(1, 1, k, stride=s, padding=p, dilation=d)(torch.zeros(1, 1, size))
        out2 = nn.Conv2d(1, 1, k, stride=s, padding=p, dilation=d)(torch.zeros(1, 1, size, size + 1))
        assert out1.shape[-1] == expected, case
        assert out2.shape[-2:] == (expected, conv_output_size(size + 1, k, s, p, d)), case
        if p <= k // 2:  # torch's own limit on pooling's padding
            pooled = nn.MaxPool2d(k, stride=s, padding=p, dilation=d)(torch.zeros(1, 1, size, size))
            assert pooled.shape[-1] == expected, case


def test_conv_output_size_without_dilation_is_the_notes_formula():
    for size, k, s, p in itertools.product(range(5, 30), (1, 3, 5), (1, 2, 4), (0, 1, 2)):
        assert conv_output_size(size, k, s, p) == (size + 2 * p - k) // s + 1
    assert conv_output_size(28, 3, padding=1) == 28
    assert conv_output_size(28, 2, stride=2) == 14


def measured_receptive_field(layers, dims):
    """Width of the input region with nonzero gradient of one output unit (all-positive weights)."""
    modules = []
    for kind, k, s, d in layers:
        if kind == "conv":
            conv = (nn.Conv1d if dims == 1 else nn.Conv2d)(1, 1, k, stride=s, dilation=d, bias=False)
            nn.init.constant_(conv.weight, 1.0)
            modules += [conv, nn.ReLU()]
        else:
            modules.append((nn.AvgPool1d if dims == 1 else nn.AvgPool2d)(k, stride=s))
    size = 64
    x = torch.rand((1, 1) + (size,) * dims, requires_grad=True)  # positive: no ReLU switches off
    y = nn.Sequential(*modules)(x)
    y[(0, 0) + (1,) * dims].backward()  # one unit, away from the borders
    hit = x.grad[0, 0].nonzero()  # (count, dims)
    widths = {int(hit[:, i].max() - hit[:, i].min()) + 1 for i in range(dims)}
    assert len(widths) == 1
    return widths.pop()


STACKS = [
    [("conv", 3, 1, 1)],
    [("conv", 3, 1, 1)] * 3,
    [("conv", 3, 1, 1), ("pool", 2, 2, 1), ("conv", 3, 1, 1), ("conv", 3, 1, 1)],
    [("conv", 5, 2, 1), ("conv", 3, 1, 2), ("pool", 3, 2, 1), ("conv", 3, 1, 1)],
    [("conv", 3, 1, 1), ("conv", 3, 1, 2), ("conv", 3, 1, 4)],
    [("conv", 2, 2, 1), ("conv", 2, 2, 1), ("conv", 2, 2, 1)],
    [("conv", 4, 3, 1), ("pool", 2, 2, 1), ("conv", 3, 1, 3)],
]


@pytest.mark.parametrize("dims", [1, 2])
@pytest.mark.parametrize("stack", STACKS)
def test_receptive_field_equals_the_gradient_footprint(stack, dims):
    specs = [(k, s, d) for _, k, s, d in stack]
    assert receptive_field(specs) == measured_receptive_field(stack, dims)


def test_receptive_field_examples_and_effective_stride():
    assert receptive_field([]) == 1
    assert receptive_field([(3, 1)] * 3) == 7
    assert receptive_field([(3, 1), (2, 2), (3, 1), (3, 1)]) == 12
    assert receptive_field([(3, 1, 2)]) == 5
    assert effective_stride([(3, 1), (2, 2), (3, 2)]) == 4
    assert effective_stride([]) == 1


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize(("c_in", "c_out", "k", "dims"), [(64, 128, 3, 2), (3, 16, 5, 1), (1, 8, (3, 5), 2)])
def test_conv_parameter_count_equals_torch(c_in, c_out, k, dims, bias):
    layer = (nn.Conv1d if dims == 1 else nn.Conv2d)(c_in, c_out, k, bias=bias)
    assert conv_parameter_count(c_in, c_out, k, bias=bias, dims=dims) == sum(
        p.numel() for p in layer.parameters()
    )


def test_a_3x3_conv_from_64_to_128_channels():
    assert conv_parameter_count(64, 128, 3, bias=False) == 73_728
    assert conv_parameter_count(64, 128, 3) == 73_856
    assert conv_parameter_count(64, 128, (3, 3, 3), bias=False) == 73_728 * 3


def reference(dims, pool, global_pool, size, activation=nn.ReLU):
    """The CNN below built by hand from torch layers."""
    conv = nn.Conv1d if dims == 1 else nn.Conv2d
    pools = {
        "max": nn.MaxPool1d if dims == 1 else nn.MaxPool2d,
        "avg": nn.AvgPool1d if dims == 1 else nn.AvgPool2d,
    }
    layers = [conv(3, 4, 3, padding=1), activation()]
    layers += [pools[pool](2)] if pool else []
    layers += [conv(4, 6, 3, padding=1), activation()]
    layers += [pools[pool](2)] if pool else []
    if global_pool == "avg":
        layers += [nn.AdaptiveAvgPool1d(1) if dims == 1 else nn.AdaptiveAvgPool2d(1), nn.Flatten()]
        width = 6
    elif global_pool == "max":
        layers += [nn.AdaptiveMaxPool1d(1) if dims == 1 else nn.AdaptiveMaxPool2d(1), nn.Flatten()]
        width = 6
    else:
        layers.append(nn.Flatten())
        width = 6 * (size // 4 if pool else size) ** dims
    layers += [nn.Linear(width, 7), activation(), nn.Linear(7, 5)]
    return nn.Sequential(*layers)


@pytest.mark.parametrize("dims", [1, 2])
@pytest.mark.parametrize("pool", ["max", "avg", None])
@pytest.mark.parametrize("global_pool", ["avg", "max", None])
def test_cnn_forward_equals_hand_built_torch_layers(dims, pool, global_pool):
    torch.manual_seed(0)
    size = 12
    model = CNN(3, (4, 6), 5, dims=dims, pool=pool, global_pool=global_pool, input_size=size, head=(7,))
    ref = reference(dims, pool, global_pool, size)
    mine, theirs = list(model.parameters()), list(ref.parameters())
    assert [p.shape for p in mine] == [p.shape for p in theirs]
    with torch.no_grad():
        for a, b in zip(theirs, mine):
            a.copy_(b)
    x = torch.randn((2, 3) + (size,) * dims)
    assert torch.allclose(model(x), ref(x), atol=1e-6, rtol=0)
    assert model.features(x).shape == (2, *model.output_shape(size))
    head_input = ref[:-3](x)  # the reference up to its pooled or flattened vector
    assert torch.allclose(model.embedding(x), head_input, atol=1e-6, rtol=0)


def test_output_shape_and_receptive_field_of_a_cnn():
    model = CNN(1, (8, 16), kernel_size=5, pool="max", stride=1)
    assert model.output_shape(28) == (16, 7, 7)
    assert model.output_shape((28, 20)) == (16, 7, 5)
    assert model.receptive_field == receptive_field([(5, 1), (2, 2), (5, 1), (2, 2)]) == 16
    strided = CNN(1, (8,), kernel_size=3, padding=0, stride=2, pool=None, dims=1)
    assert strided.output_shape(11) == (8, 5)
    assert strided.features(torch.zeros(1, 1, 11)).shape == (1, 8, 5)


def test_reset_parameters_draws_new_weights():
    model = CNN(1, (4,), 3, head=(5,))
    before = [p.clone() for p in model.parameters()]
    model.reset_parameters()
    assert all(not torch.equal(a, b) for a, b in zip(before, model.parameters()))


def shift_errors(padding_mode, dims, pool=None, shift=3, pool_shift=None):
    """Max errors of equivariance (features) and invariance (logits) under a cyclic shift."""
    torch.manual_seed(1)
    model = CNN(2, (5, 6), 4, dims=dims, pool=pool, padding_mode=padding_mode, head=(8,)).eval()
    axes = tuple(range(2, 2 + dims))
    x = torch.randn((3, 2) + (16,) * dims)
    shifted = torch.roll(x, (shift,) * dims, axes)
    with torch.no_grad():
        f, f_shifted = model.features(x), model.features(shifted)
        out_shift = shift if pool_shift is None else pool_shift
        equivariance = (f_shifted - torch.roll(f, (out_shift,) * dims, axes)).abs().max().item()
        invariance = (model(shifted) - model(x)).abs().max().item()
    return equivariance, invariance


@pytest.mark.parametrize("dims", [1, 2])
def test_circular_padding_makes_features_equivariant_and_pooled_logits_invariant(dims):
    equivariance, invariance = shift_errors("circular", dims)
    assert equivariance <= 1e-5
    assert invariance <= 1e-5


@pytest.mark.parametrize("dims", [1, 2])
def test_zero_padding_breaks_both_at_the_borders(dims):
    equivariance, invariance = shift_errors("zeros", dims)
    assert equivariance > 1e-2
    assert invariance > 1e-4


def test_pooling_keeps_equivariance_only_for_shifts_by_its_stride():
    # two 2-pools: a shift by 4 moves the features by 1 exactly; a shift by 1 does not
    equivariance, invariance = shift_errors("circular", 2, pool="max", shift=4, pool_shift=1)
    assert equivariance <= 1e-5 and invariance <= 1e-5
    equivariance, invariance = shift_errors("circular", 2, pool="max", shift=1, pool_shift=0)
    assert equivariance > 1e-2 and invariance > 1e-5


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: conv_output_size(4, 7), "the kernel spans 7 positions"),
        (lambda: conv_output_size(4, 3, dilation=3), "kernel spans 7"),
        (lambda: conv_output_size(0, 3), "size must be at least 1"),
        (lambda: conv_output_size(8, 3, stride=0), "stride must be at least 1"),
        (lambda: conv_output_size(8, 3, padding=-1), "padding must be at least 0"),
        (lambda: conv_output_size(8.0, 3), "size must be an integer"),
        (lambda: receptive_field([(3,)]), "layer 0 must be"),
        (lambda: receptive_field([(3, 0)]), "stride must be at least 1"),
        (lambda: conv_parameter_count(0, 8, 3), "in_channels must be at least 1"),
        (lambda: conv_parameter_count(1, 8, ()), "kernel_size must not be empty"),
        (lambda: CNN(1, dims=3), "dims must be 1"),
        (lambda: CNN(1, channels=()), "at least one convolution"),
        (lambda: CNN(1, pool="min"), "pool must be 'max', 'avg' or None"),
        (lambda: CNN(1, global_pool="sum"), "global_pool must be"),
        (lambda: CNN(1, padding_mode="mirror"), "padding_mode must be one of"),
        (lambda: CNN(1, activation="swish"), "activation must be one of"),
        (lambda: CNN(1, kernel_size=4), "odd kernel_size"),
        (lambda: CNN(1, padding="valid"), "padding must be 'same' or an int"),
        (lambda: CNN(1, global_pool=None), "pass input_size"),
        (lambda: CNN(1, global_pool=None, input_size=3), "the output would be empty"),
        (lambda: CNN(1, global_pool=None, input_size=(28,)), "needs 2 spatial sizes"),
        (lambda: CNN(1).features(torch.zeros(1, 1, 28)), "a 2-D CNN needs input"),
    ],
)
def test_bad_arguments_raise_a_clear_value_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def count_operations_by_hand(height, width, kernel_h, kernel_w, channels_in):
    """Walk every output of a valid convolution and count its multiplications and additions."""
    operations = 0
    for _ in range(height - kernel_h + 1):
        for _ in range(width - kernel_w + 1):
            products = channels_in * kernel_h * kernel_w
            operations += products + (products - 1)
    return operations


@pytest.mark.parametrize(
    "size, kernel, channels", [((5, 7), (1, 2), 1), ((6, 6), (3, 3), 2), ((4, 9), (2, 3), 3)]
)
def test_conv_operation_count_matches_a_hand_count(size, kernel, channels):
    expected = count_operations_by_hand(*size, *kernel, channels)
    assert conv_operation_count(size, kernel, in_channels=channels) == expected
    with_bias = conv_operation_count(size, kernel, in_channels=channels, bias=True, out_channels=2)
    outputs = (size[0] - kernel[0] + 1) * (size[1] - kernel[1] + 1)
    assert with_bias == 2 * (expected + outputs)


def test_the_notes_horizontal_difference_costs_319_by_280_by_3():
    assert conv_operation_count((280, 320), (1, 2)) == 319 * 280 * 3 == 267_960


def test_linear_parameter_count_matches_torch():
    for n_in, n_out in [(1, 1), (288, 10), (784, 256)]:
        layer = nn.Linear(n_in, n_out)
        assert linear_parameter_count(n_in, n_out) == sum(p.numel() for p in layer.parameters())
        assert linear_parameter_count(n_in, n_out, bias=False) == layer.weight.numel()
    with pytest.raises(ValueError, match="in_features"):
        linear_parameter_count(0, 3)
