"""Message passing on graphs: layers that commute with any relabelling of the nodes.

Graphs follow PyTorch Geometric's convention: node features ``x`` (num_nodes, F), ``edge_index``
(2, E) with row 0 the source j and row 1 the target i (messages flow j -> i), optional
``edge_attr`` (E, F_e), and ``batch`` (num_nodes,) giving each node's graph when several graphs
are collated with ``torch_geometric.data.Batch``. Every layer is one round of

    h_i' = φ( h_i, ⊕_{j ∈ N(i)} ψ(h_i, h_j, e_ij) )                                   (eq. 5.9)

with ψ the message, ⊕ a permutation-invariant aggregation and φ the update; a graph-level
readout pools the nodes, e.g. h_G = Σ_i h_i (eq. 5.12). The layers:

    GCN   H' = D̂^{-1/2} Â D̂^{-1/2} H W + b,  Â = A + I,  D̂_ii = Σ_j Â_ij          (eq. 5.10-5.11)
    GAT   e_ij = LeakyReLU(aᵀ[W h_i ‖ W h_j]),  α_ij = softmax_j(e_ij),  h_i' = Σ_j α_ij W h_j
                                                                                  (eq. 5.13-5.14)
    MPNN  h_i' = Θ_root h_i + ⊕_j Θ(e_ij) h_j + b  (Θ(e_ij) an MLP of the edge features)
    SAGE  h_i' = W_l mean_j h_j + W_r h_i + b

Each equals its ``torch_geometric.nn`` namesake given the same weights, and the parameter names
are PyG's, so ``layer.load_state_dict(pyg_layer.state_dict())`` copies them.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from biaslab.nn._scatter import (
    REDUCTIONS,
    add_remaining_self_loops,
    check_edge_index,
    check_edge_values,
    check_node_features,
    global_add_pool,
    global_max_pool,
    global_mean_pool,
    scatter,
    segment_softmax,
    with_self_loops,
)
from biaslab.nn.mlp import MLP

__all__ = [
    "GATConv",
    "GCNConv",
    "MPNNConv",
    "MessagePassing",
    "SAGEConv",
    "global_add_pool",  # graph pooling, eq. 5.12 (written in _scatter.py)
    "global_max_pool",
    "global_mean_pool",
]


class MessagePassing(nn.Module):
    """Base class of the graph layers: message (ψ) -> aggregate (⊕) -> update (φ), eq. 5.9.

    A subclass computes what it needs per node in ``forward`` and calls :meth:`propagate`,
    which gathers the endpoints of every edge and calls, in turn,

    - ``message(x_i, x_j, **kwargs)``: ψ per edge; ``x_i = x[target]``, ``x_j = x[source]``
      and ``kwargs`` are the edge-level tensors given to ``propagate`` (``(E, *)``, unchanged);
    - ``aggregate(messages, index, dim_size)``: ⊕ over the edges into each node; a node
      without incoming edges gets 0;
    - ``update(aggregated, x)``: φ from the aggregate and the node's own features.

    Args:
        aggr: ``"sum"`` (default), ``"mean"`` or ``"max"``.
    """

    def __init__(self, aggr: str = "sum"):
        super().__init__()
        if aggr not in REDUCTIONS:
            raise ValueError(f"aggr must be one of {REDUCTIONS}, got {aggr!r}")
        self.aggr = aggr

    def propagate(
        self,
        edge_index: torch.Tensor,
        x: torch.Tensor | tuple[torch.Tensor, torch.Tensor],
        size: tuple[int, int] | None = None,
        **kwargs: torch.Tensor,
    ) -> torch.Tensor:
        """One round: ``x`` node features ``(N, *)`` (or a bipartite pair ``(x_src, x_dst)``),
        ``size`` ``(num_src, num_dst)`` (default: their rows), ``kwargs`` edge-level ``(E, *)``
        tensors for :meth:`message` -> ``update``'s output, ``(num_dst, *)`` by default."""
        x_src, x_dst = x if isinstance(x, tuple) else (x, x)
        num_src, num_dst = size if size is not None else (x_src.size(0), x_dst.size(0))
        check_edge_index(edge_index, num_src, num_dst)
        source, target = edge_index
        messages = self.message(x_dst.index_select(0, target), x_src.index_select(0, source), **kwargs)
        return self.update(self.aggregate(messages, target, num_dst), x_dst)

    def message(self, x_i: torch.Tensor, x_j: torch.Tensor, **kwargs: torch.Tensor) -> torch.Tensor:
        """ψ(h_i, h_j, e_ij) for every edge; by default the source's features h_j."""
        return x_j

    def aggregate(self, messages: torch.Tensor, index: torch.Tensor, dim_size: int) -> torch.Tensor:
        """⊕ of the messages into each target node: ``(E, *)`` -> ``(dim_size, *)``."""
        return scatter(messages, index, dim_size, self.aggr)

    def update(self, aggregated: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """φ(h_i, m_i); by default the aggregate m_i itself."""
        return aggregated


def _glorot_or_zeros(layer: nn.Module) -> None:
    """Glorot-uniform weights (attention vectors (1, K, C) as K x C) and zero biases, as in PyG."""
    for name, param in layer.named_parameters(recurse=False):
        if name == "bias":
            nn.init.zeros_(param)
        else:
            nn.init.xavier_uniform_(param.view(-1, param.size(-1)))


class GCNConv(MessagePassing):
    """Graph convolution (Kipf & Welling): H' = D̂^{-1/2} Â D̂^{-1/2} H W + b, Â = A + I (eq. 5.10-5.11).

    Per edge j -> i the message is w_ji / sqrt(d̂_j d̂_i) · W h_j, summed at i, with d̂_i the
    (weighted) in-degree of i counting its self-loop. A node without neighbours keeps its own
    features through its self-loop; without self-loops its degree is 0 and it gets b alone.

    Args:
        in_channels: features per input node.
        out_channels: features per output node.
        bias: learn b (default True).
        add_self_loops: Â = A + I (default True); a self-loop already in the graph keeps its weight.
        normalize: the symmetric D̂^{-1/2} · D̂^{-1/2} scaling (default True); without it the
            layer sums (weighted) messages, H' = Â H W + b.
        improved: self-loops of weight 2 instead of 1, Â = A + 2I (default False).

    Shapes:
        ``x`` ``(N, in_channels)``, ``edge_index`` ``(2, E)``, optional ``edge_weight`` ``(E,)``
        -> ``(N, out_channels)``.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        bias: bool = True,
        add_self_loops: bool = True,
        normalize: bool = True,
        improved: bool = False,
    ):
        super().__init__(aggr="sum")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.add_self_loops, self.normalize, self.improved = add_self_loops, normalize, improved
        self.lin = nn.Linear(in_channels, out_channels, bias=False)
        self.bias = nn.Parameter(torch.empty(out_channels)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _glorot_or_zeros(self.lin)
        _glorot_or_zeros(self)

    def forward(
        self, x: torch.Tensor, edge_index: torch.Tensor, edge_weight: torch.Tensor | None = None
    ) -> torch.Tensor:
        check_node_features(x, self.in_channels)
        num_nodes = x.size(0)
        check_edge_index(edge_index, num_nodes)
        if edge_weight is None:
            edge_weight = x.new_ones(edge_index.size(1))
        check_edge_values(edge_weight, edge_index.size(1), "edge_weight")
        if self.add_self_loops:
            fill = 2.0 if self.improved else 1.0
            edge_index, edge_weight = add_remaining_self_loops(edge_index, edge_weight, fill, num_nodes)
        if self.normalize:
            source, target = edge_index
            degree = scatter(edge_weight, target, num_nodes, "sum")
            inv_sqrt = degree.pow(-0.5).masked_fill(degree == 0, 0.0)
            edge_weight = inv_sqrt[source] * edge_weight * inv_sqrt[target]
        out = self.propagate(edge_index, x=self.lin(x), edge_weight=edge_weight)
        return out if self.bias is None else out + self.bias

    def message(self, x_i: torch.Tensor, x_j: torch.Tensor, edge_weight: torch.Tensor) -> torch.Tensor:
        return edge_weight.unsqueeze(-1) * x_j


class GATConv(MessagePassing):
    """Graph attention (Veličković et al.): attention-weighted sums of the neighbours (eq. 5.13-5.14).

        e_ij = LeakyReLU(a_dstᵀ W h_i + a_srcᵀ W h_j)     (= aᵀ[W h_i ‖ W h_j], a = [a_dst ‖ a_src])
        α_ij = softmax over j ∈ N(i) of e_ij,   h_i' = Σ_j α_ij W h_j + b

    With ``heads`` = K independent attentions the K outputs are concatenated (``concat=True``)
    or averaged. The softmax runs over the edges into each node, with its maximum subtracted.

    Args:
        in_channels: features per input node.
        out_channels: features per head.
        heads: number of attention heads K (default 1).
        concat: concatenate the heads (output K·out_channels) or average them (default True).
        negative_slope: LeakyReLU's slope for negative scores (default 0.2).
        add_self_loops: let each node attend to itself (default True; existing loops are replaced).
        dropout: dropout on the attention coefficients α while training (default 0.0).
        bias: learn b (default True).

    Shapes:
        ``x`` ``(N, in_channels)``, ``edge_index`` ``(2, E)`` -> ``(N, heads·out_channels)`` or
        ``(N, out_channels)``; with ``return_attention_weights=True`` also ``(edge_index, α)``,
        the edges used (self-loops included) and α ``(E', heads)``.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        heads: int = 1,
        concat: bool = True,
        negative_slope: float = 0.2,
        add_self_loops: bool = True,
        dropout: float = 0.0,
        bias: bool = True,
    ):
        super().__init__(aggr="sum")
        self.in_channels, self.out_channels, self.heads, self.concat = (
            in_channels,
            out_channels,
            heads,
            concat,
        )
        self.negative_slope, self.add_self_loops, self.dropout = negative_slope, add_self_loops, dropout
        self.lin = nn.Linear(in_channels, heads * out_channels, bias=False)  # W, all heads at once
        self.att_src = nn.Parameter(torch.empty(1, heads, out_channels))
        self.att_dst = nn.Parameter(torch.empty(1, heads, out_channels))
        self.bias = (
            nn.Parameter(torch.empty(heads * out_channels if concat else out_channels)) if bias else None
        )
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _glorot_or_zeros(self.lin)
        _glorot_or_zeros(self)

    def forward(
        self, x: torch.Tensor, edge_index: torch.Tensor, return_attention_weights: bool = False
    ) -> torch.Tensor | tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        check_node_features(x, self.in_channels)
        num_nodes = x.size(0)
        check_edge_index(edge_index, num_nodes)
        if self.add_self_loops:
            edge_index = with_self_loops(edge_index, num_nodes)
        h = self.lin(x).view(num_nodes, self.heads, self.out_channels)  # W h, (N, K, C)
        score_src = (h * self.att_src).sum(-1)  # a_srcᵀ W h_j, (N, K)
        score_dst = (h * self.att_dst).sum(-1)  # a_dstᵀ W h_i
        source, target = edge_index
        scores = F.leaky_relu(score_src[source] + score_dst[target], self.negative_slope)  # (E, K)
        alpha = segment_softmax(scores, target, num_nodes)
        alpha = F.dropout(alpha, p=self.dropout, training=self.training)
        out = self.propagate(edge_index, x=h, alpha=alpha)  # (N, K, C)
        out = out.reshape(num_nodes, -1) if self.concat else out.mean(dim=1)
        if self.bias is not None:
            out = out + self.bias
        return (out, (edge_index, alpha)) if return_attention_weights else out

    def message(self, x_i: torch.Tensor, x_j: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
        return alpha.unsqueeze(-1) * x_j  # (E, K, 1) * (E, K, C)


DISTINCT_EDGE_GROUPS = 16  # up to this many distinct edge feature vectors: one matrix per group


class MPNNConv(MessagePassing):
    """Edge-conditioned message passing (Gilmer et al.'s MPNN with NNConv's edge network).

        h_i' = Θ_root h_i + ⊕_{j ∈ N(i)} Θ(e_ij) h_j + b,   Θ(e_ij) = MLP(e_ij) reshaped (in, out)

    The message ψ(h_j, e_ij) = Θ(e_ij) h_j lets the edge type decide how a neighbour is read;
    the update φ adds the node's own Θ_root h_i. Equal to ``torch_geometric.nn.NNConv`` built
    with the same ``nn`` (the edge network), ``lin`` (Θ_root) and ``bias``.

    Args:
        in_channels: features per input node.
        out_channels: features per output node.
        edge_dim: features per edge.
        aggr: ``"sum"`` (default), ``"mean"`` or ``"max"``.
        hidden: hidden widths of the edge network (default ``(64,)``).
        activation: the edge network's non-linearity (default ``"relu"``).
        root_weight: add Θ_root h_i (default True).
        bias: learn b (default True).

    Shapes:
        ``x`` ``(N, in_channels)``, ``edge_index`` ``(2, E)``, ``edge_attr`` ``(E, edge_dim)``
        -> ``(N, out_channels)``.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        edge_dim: int,
        aggr: str = "sum",
        hidden: tuple[int, ...] = (64,),
        activation: str = "relu",
        root_weight: bool = True,
        bias: bool = True,
    ):
        super().__init__(aggr=aggr)
        self.in_channels, self.out_channels, self.edge_dim = in_channels, out_channels, edge_dim
        self.nn = MLP((edge_dim, *hidden, in_channels * out_channels), activation)
        self.lin = nn.Linear(in_channels, out_channels, bias=False) if root_weight else None
        self.bias = nn.Parameter(torch.empty(out_channels)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        self.nn.reset_parameters()
        if self.lin is not None:
            _glorot_or_zeros(self.lin)
        _glorot_or_zeros(self)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor, edge_attr: torch.Tensor) -> torch.Tensor:
        check_node_features(x, self.in_channels)
        check_edge_index(edge_index, x.size(0))
        check_edge_values(edge_attr, edge_index.size(1), "edge_attr", self.edge_dim)
        return self.propagate(edge_index, x=x, edge_attr=edge_attr)

    def message(self, x_i: torch.Tensor, x_j: torch.Tensor, edge_attr: torch.Tensor) -> torch.Tensor:
        # Edges often share their features (a molecule's bonds have four types): the edge network
        # then runs once per distinct feature vector, and each group of edges uses its matrix.
        distinct, group = torch.unique(edge_attr, dim=0, return_inverse=True)
        if distinct.size(0) <= DISTINCT_EDGE_GROUPS:
            theta = self.nn(distinct).view(-1, self.in_channels, self.out_channels)  # (G, in, out)
            out = x_j.new_empty(x_j.size(0), self.out_channels)
            for g in range(distinct.size(0)):
                rows = (group == g).nonzero().squeeze(1)
                out = out.index_copy(0, rows, x_j.index_select(0, rows) @ theta[g])  # h_jᵀ Θ(e_ij)
            return out
        theta = self.nn(edge_attr).view(-1, self.in_channels, self.out_channels)  # Θ(e_ij), (E, in, out)
        return torch.bmm(x_j.unsqueeze(1), theta).squeeze(1)  # h_jᵀ Θ(e_ij), (E, out)

    def update(self, aggregated: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        out = aggregated if self.lin is None else aggregated + self.lin(x)
        return out if self.bias is None else out + self.bias


class SAGEConv(MessagePassing):
    """GraphSAGE (Hamilton et al.): h_i' = W_l ⊕_{j ∈ N(i)} h_j + W_r h_i + b, ⊕ = mean by default.

    Args:
        in_channels: features per input node.
        out_channels: features per output node.
        aggr: ``"mean"`` (default), ``"sum"`` or ``"max"``.
        root_weight: add W_r h_i (default True).
        bias: learn b, held by ``lin_l`` as in PyG (default True).

    Shapes:
        ``x`` ``(N, in_channels)``, ``edge_index`` ``(2, E)`` -> ``(N, out_channels)``.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        aggr: str = "mean",
        root_weight: bool = True,
        bias: bool = True,
    ):
        super().__init__(aggr=aggr)
        self.in_channels, self.out_channels = in_channels, out_channels
        self.lin_l = nn.Linear(in_channels, out_channels, bias=bias)  # W_l and b
        self.lin_r = nn.Linear(in_channels, out_channels, bias=False) if root_weight else None

    def reset_parameters(self) -> None:
        self.lin_l.reset_parameters()
        if self.lin_r is not None:
            self.lin_r.reset_parameters()

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        check_node_features(x, self.in_channels)
        return self.propagate(edge_index, x=x)

    def update(self, aggregated: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        out = self.lin_l(aggregated)
        return out if self.lin_r is None else out + self.lin_r(x)
