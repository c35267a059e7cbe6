"""Tests for biaslab.nn.attention_patterns: each attention pattern equals the layer it stands for,
torch's convolutions and the library's GCNConv and DeepSets, to rounding (float64)."""

from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F

from biaslab.nn.attention_patterns import (
    convolution_as_attention,
    deep_sets_as_gnn,
    gcn_as_attention,
    normalized_adjacency,
    patch_tokens,
    shift_patterns,
)
from biaslab.nn.graph import GCNConv
from biaslab.nn.sets import DeepSets


@pytest.fixture(autouse=True)
def float64():  # every tensor in float64: the equalities hold to 1e-12
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)


def random_graph(num_nodes: int, edges: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    pairs = torch.randint(num_nodes, (2, edges), generator=g)
    pairs = pairs[:, pairs[0] != pairs[1]]  # no self-loops: the layers add their own
    both = torch.cat([pairs, pairs.flip(0)], dim=1)  # undirected
    return torch.unique(both, dim=1)


@pytest.mark.parametrize("kernel_size", [1, 3, 5])
def test_a_convolution_is_fixed_local_attention(kernel_size):
    torch.manual_seed(kernel_size)
    x, weight, bias = torch.randn(2, 3, 11), torch.randn(4, 3, kernel_size), torch.randn(4)
    expected = F.conv1d(x, weight, bias, padding=(kernel_size - 1) // 2)
    torch.testing.assert_close(convolution_as_attention(x, weight, bias), expected, rtol=0, atol=1e-12)


def test_the_shift_patterns_read_one_neighbour_each_and_nothing_past_the_ends():
    patterns = shift_patterns(6, 3)  # (3, 6, 6): offsets -1, 0, +1
    assert patterns.shape == (3, 6, 6)
    torch.testing.assert_close(patterns[1], torch.eye(6))
    torch.testing.assert_close(patterns[0], patterns[2].T)  # reading left is the transpose of right
    assert patterns[0][0].sum() == 0 and patterns[2][-1].sum() == 0  # the zero padding
    assert (patterns.sum(-1) <= 1).all()


def test_a_gcn_is_attention_restricted_to_the_edges_with_fixed_weights():
    torch.manual_seed(0)
    edge_index, x = random_graph(9, 14, seed=1), torch.randn(9, 5)
    conv = GCNConv(5, 3)
    torch.nn.init.normal_(conv.bias)
    with torch.no_grad():
        expected = conv(x, edge_index)
    torch.testing.assert_close(
        gcn_as_attention(x, edge_index, conv.lin.weight.detach(), conv.bias.detach()),
        expected,
        rtol=0,
        atol=1e-12,
    )
    alpha = normalized_adjacency(edge_index, 9, torch.float64)
    outside = torch.ones(9, 9, dtype=torch.bool)
    outside[edge_index[1], edge_index[0]] = False
    outside.fill_diagonal_(False)
    assert (alpha[outside] == 0).all()  # no weight off the graph's edges and self-loops


def test_the_graph_pattern_is_permutation_equivariant():
    torch.manual_seed(2)
    edge_index, x, weight = random_graph(7, 10, seed=3), torch.randn(7, 4), torch.randn(2, 4)
    perm = torch.randperm(7)
    inverse = torch.argsort(perm)  # node i of the new graph is node perm[i] of the old
    moved = inverse[edge_index]
    torch.testing.assert_close(
        gcn_as_attention(x[perm], moved, weight),
        gcn_as_attention(x, edge_index, weight)[perm],
        rtol=0,
        atol=1e-12,
    )


def test_deep_sets_is_a_graph_network_without_edges():
    torch.manual_seed(4)
    model = DeepSets(3, 8, 2, phi_layers=2, rho_layers=2)
    x = torch.randn(5, 6, 3)
    with torch.no_grad():
        expected = model(x)
    torch.testing.assert_close(deep_sets_as_gnn(model, x), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("channels, patch", [(1, 4), (3, 2)])
def test_patch_tokens_and_a_linear_map_are_the_strided_convolution(channels, patch):
    torch.manual_seed(patch)
    images = torch.randn(2, channels, 8, 12)
    embed = torch.nn.Conv2d(channels, 5, kernel_size=patch, stride=patch)
    with torch.no_grad():
        expected = embed(images).flatten(2).transpose(1, 2)  # (N, tokens, 5) in reading order
        tokens = patch_tokens(images, patch)  # (N, tokens, C·p²)
        ours = tokens @ embed.weight.reshape(5, -1).T + embed.bias
    assert tokens.shape == (2, (8 // patch) * (12 // patch), channels * patch * patch)
    torch.testing.assert_close(ours, expected, rtol=0, atol=1e-12)


def test_patch_tokens_layer_feeds_a_transformer_as_a_vision_transformer():
    from biaslab.nn import TransformerConfig, TransformerEncoder
    from biaslab.nn.attention_patterns import PatchTokens

    images = torch.randn(3, 1, 28, 28)
    layer = PatchTokens(7)
    torch.testing.assert_close(layer(images), patch_tokens(images, 7), rtol=0, atol=0)
    config = TransformerConfig(input_dim=49, dim=16, heads=2, layers=1, max_len=16, num_classes=10)
    vit = torch.nn.Sequential(layer, TransformerEncoder(replace(config, pool="mean")))
    assert vit(images).shape == (3, 10) and "patch=7" in repr(vit)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: shift_patterns(5, 2), "kernel_size=2"),
        (lambda: convolution_as_attention(torch.randn(2, 3, 5), torch.randn(4, 2, 3)), "need x"),
        (lambda: patch_tokens(torch.randn(1, 1, 6, 6), 4), "patch=4"),
        (
            lambda: deep_sets_as_gnn(DeepSets(2, 4, 1, aggregation="mean"), torch.randn(1, 3, 2)),
            "aggregation='mean'",
        ),
    ],
)
def test_bad_input_is_one_clear_line(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_the_graph_pattern_is_built_in_the_inputs_precision():
    """The normalisation's square roots in x's dtype: float64 input is not rounded through float32."""
    torch.manual_seed(5)
    edge_index = random_graph(8, 12, seed=6)
    assert normalized_adjacency(edge_index, 8, torch.float64).dtype == torch.float64
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float32)  # the library's default; x itself is float64
    try:
        x, weight = torch.randn(8, 3, dtype=torch.float64), torch.randn(2, 3, dtype=torch.float64)
        conv = GCNConv(3, 2, bias=False).double()
        with torch.no_grad():
            conv.lin.weight.copy_(weight)
            expected = conv(x, edge_index)
        torch.testing.assert_close(gcn_as_attention(x, edge_index, weight), expected, rtol=0, atol=1e-12)
    finally:
        torch.set_default_dtype(previous)
