"""Attention as the unifying primitive: one weighted sum, with the patterns of four architectures.

The lecture notes §6: "The core operation is always the same: compute a weighted combination of
inputs. What varies is *which* inputs participate and whether the weights are fixed or
content-dependent." Every layer below is ``output_i = Σ_j α_ij v_j`` (eq. 6.1) with ``v_j`` a
linear map of input j; only the attention matrix α differs (Fig. 13 and the table after eq. 6.5):

    layer        α (which inputs, which weights)                       equal to
    convolution  fixed, local: one 0/1 shift pattern per kernel offset   a 1-D convolution (eq. 6.2)
    GCN          fixed, on the graph's edges: Ã = D^-1/2 (A + I) D^-1/2  a graph convolution (eq. 5.11)
    Deep Sets    a graph without edges: α = I, then a sum over the set    Deep Sets (eq. 5.7, 5.12)
    Transformer  content-dependent, every pair: softmax(q·k / √d)        (eq. 6.4, nn.attention)

A convolution with K offsets is K "heads" of attention, each with a fixed pattern that reads the
neighbour a steps away and its own value map ``W_a`` (Cordonnier et al. 2020 show the converse: a
multi-head self-attention layer can learn exactly such patterns). Images become tokens the way a
Vision Transformer reads them (Dosovitskiy et al. 2021): non-overlapping p × p patches, each
flattened; a linear map of the tokens is the convolution with kernel and stride p.

Each function here builds α explicitly and multiplies; the tests and the ``self-attention`` lab
check the results against the library's and torch's own layers to rounding.
"""

from __future__ import annotations

import torch
from torch import nn

from biaslab.nn.graph import GCNConv
from biaslab.nn.sets import DeepSets

__all__ = [
    "PatchTokens",
    "convolution_as_attention",
    "deep_sets_as_gnn",
    "gcn_as_attention",
    "normalized_adjacency",
    "patch_tokens",
    "shift_patterns",
]


def shift_patterns(length: int, kernel_size: int) -> torch.Tensor:
    """The fixed attention patterns of a 1-D convolution with ``same`` zero padding: pattern a
    has ``α[a, i, j] = 1`` where ``j = i + a − (K − 1)/2`` lies inside the sequence, else 0 (the
    padding reads nothing).

    Shapes:
        -> ``(K, T, T)``, K = ``kernel_size`` (odd), T = ``length``.
    """
    if kernel_size < 1 or kernel_size % 2 == 0:
        raise ValueError(f"kernel_size={kernel_size}: give an odd size (same padding on both sides)")
    half = (kernel_size - 1) // 2
    patterns = torch.zeros(kernel_size, length, length, dtype=torch.float64)  # 0 and 1: exact in any dtype
    for a in range(kernel_size):
        offset = a - half  # α[a, i, i + offset] = 1 where i + offset is a position
        if abs(offset) < length:
            patterns[a] = torch.diag(torch.ones(length - abs(offset)), offset)
    return patterns


def convolution_as_attention(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None):
    """``torch.nn.functional.conv1d(x, weight, bias, padding=(K − 1)/2)`` written as K heads of
    fixed local attention (eq. 6.2 as eq. 6.1): ``out = Σ_a α_a X W_aᵀ + b``, X the sequence as
    tokens, ``W_a = weight[:, :, a]``.

    Shapes:
        x ``(N, C_in, T)``, weight ``(C_out, C_in, K)``, bias ``(C_out,)`` -> ``(N, C_out, T)``.
    """
    if x.dim() != 3 or weight.dim() != 3 or x.size(1) != weight.size(1):
        raise ValueError(
            f"need x (N, C_in, T) and weight (C_out, C_in, K); got {tuple(x.shape)}, {tuple(weight.shape)}"
        )
    tokens = x.transpose(1, 2)  # (N, T, C_in): one token per position
    patterns = shift_patterns(x.size(2), weight.size(2)).to(x)  # (K, T, T)
    values = torch.einsum("ntc,oca->nato", tokens, weight)  # (N, K, T, C_out): v = W_a x_j per head
    out = (patterns.unsqueeze(0) @ values).sum(1)  # (1, K, T, T) @ (N, K, T, C_out), summed over heads
    if bias is not None:
        out = out + bias
    return out.transpose(1, 2)  # (N, C_out, T)


def normalized_adjacency(
    edge_index: torch.Tensor, num_nodes: int, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """Ã = D^-1/2 (A + I) D^-1/2 (eq. 5.11), row i reading the sources of the edges into i; a
    self-loop already in the graph counts once, D is the in-degree with the self-loop.

    Shapes:
        edge_index ``(2, E)`` (source, target) -> ``(num_nodes, num_nodes)``.
    """
    adjacency = torch.zeros(num_nodes, num_nodes, dtype=dtype, device=edge_index.device)
    adjacency[edge_index[1], edge_index[0]] = 1.0  # row = the receiving node
    adjacency.fill_diagonal_(1.0)  # A + I
    inv_sqrt = adjacency.sum(1).pow(-0.5)  # (num_nodes,): every degree >= 1 with the self-loop
    return inv_sqrt[:, None] * adjacency * inv_sqrt[None, :]


def gcn_as_attention(x: torch.Tensor, edge_index: torch.Tensor, weight: torch.Tensor, bias=None):
    """A graph convolution as attention restricted to the graph's edges, with fixed weights:
    ``out = Ã X Wᵀ + b`` (eq. 5.11 as eq. 6.3 with α = Ã, which no feature changes).

    Shapes:
        x ``(num_nodes, C_in)``, edge_index ``(2, E)``, weight ``(C_out, C_in)`` ->
        ``(num_nodes, C_out)``.
    """
    alpha = normalized_adjacency(edge_index, x.size(0), x.dtype)  # (num_nodes, num_nodes)
    out = alpha @ (x @ weight.T)  # Σ_j α_ij W x_j
    return out if bias is None else out + bias


def patch_tokens(images: torch.Tensor, patch: int) -> torch.Tensor:
    """Images as a Vision Transformer's tokens: non-overlapping ``patch`` × ``patch`` squares in
    reading order, each flattened channel-first (the order of a convolution kernel's weights).

    Shapes:
        images ``(N, C, H, W)``, H and W multiples of ``patch`` -> ``(N, H·W / patch², C·patch²)``.
    """
    n, c, h, w = images.shape
    if patch < 1 or h % patch or w % patch:
        raise ValueError(f"patch={patch}: must divide the image's height {h} and width {w}")
    grid = images.reshape(n, c, h // patch, patch, w // patch, patch)  # (N, C, H/p, p, W/p, p)
    grid = grid.permute(0, 2, 4, 1, 3, 5)  # (N, H/p, W/p, C, p, p)
    return grid.reshape(n, (h // patch) * (w // patch), c * patch * patch)  # (N, tokens, C·p²)


class PatchTokens(nn.Module):
    """:func:`patch_tokens` as a layer: ``nn.Sequential(PatchTokens(p), TransformerEncoder(config))``
    with ``config.input_dim = C·p²`` reads images as a Vision Transformer does (Dosovitskiy et al.
    2021: the encoder's input projection is the patch embedding).

    Shapes:
        images ``(N, C, H, W)`` -> ``(N, H·W / p², C·p²)``.
    """

    def __init__(self, patch: int):
        super().__init__()
        self.patch = patch

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return patch_tokens(images, self.patch)

    def extra_repr(self) -> str:
        return f"patch={self.patch}"


@torch.no_grad()
def deep_sets_as_gnn(model: DeepSets, x: torch.Tensor) -> torch.Tensor:
    """Deep Sets run as a graph network on a graph with no edges (the lecture notes §5: "Deep
    Sets is a GNN on a graph with no edges"): each of φ's linear layers becomes a
    :class:`~biaslab.nn.graph.GCNConv` with the same weights, whose only neighbour is the node's
    own self-loop (Ã = I), then a sum over each set's nodes (eq. 5.12) and ρ.

    Shapes:
        x ``(N, M, in_dim)`` (N sets of M elements) -> ``(N, out_dim)``, ``model(x)`` to rounding
        when ``model`` sums (``aggregation="sum"``).
    """
    if model.aggregation != "sum":
        raise ValueError(f"aggregation={model.aggregation!r}: the graph's readout here is a sum (eq. 5.12)")
    n, m, d = x.shape
    h = x.reshape(n * m, d)  # every element a node of one graph
    no_edges = torch.empty(2, 0, dtype=torch.long, device=x.device)
    for layer in model.phi.layers:
        if isinstance(layer, nn.Linear):
            conv = GCNConv(layer.in_features, layer.out_features, bias=layer.bias is not None).to(x)
            conv.lin.weight.copy_(layer.weight)
            if layer.bias is not None:
                conv.bias.copy_(layer.bias)
            h = conv(h, no_edges)
        else:
            h = layer(h)  # the activation between φ's layers
    pooled = h.reshape(n, m, -1).sum(1)  # (N, hidden): the readout h_G = Σ_v h_v
    return model.rho(pooled)
