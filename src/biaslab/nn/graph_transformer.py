"""A graph Transformer: full attention over a graph's nodes, the graph entering as a bias.

Message passing lets a node read only its neighbours. Attention lets every node read every other
node of its graph, weighted by content; the graph's structure is not a hard restriction but a
learned additive bias on the attention scores, one per head and per *relation* of the pair
(Graphormer, Ying et al. 2021, with bonds for edges):

    score_ij^(h) = q_i^(h) · k_j^(h) / √d + b^(h)[rel(i, j)]                  (eq. 6.4 plus a bias)
    rel(i, j) = the bond type if i and j are bonded; otherwise their distance in bonds
                (2, 3, ≥ 4 or unreachable); a separate value for i = j

Without the bias the layer is a Transformer on a set of atoms (permutation-equivariant and blind
to the bonds); with it, it is still permutation-equivariant, since the relation of a pair moves
with the pair.

:class:`GraphTransformerLayer` is pre-norm; :func:`dense_relations` builds each pair's relation
(``RELATIONS``).
"""

from __future__ import annotations

import torch
from torch import nn

from biaslab.nn.attention import scaled_dot_product_attention

__all__ = ["RELATIONS", "GraphTransformerLayer", "dense_relations"]

RELATIONS = ("self", "single", "double", "triple", "aromatic", "2 bonds", "3 bonds", "≥ 4 bonds or none")
MAX_HOPS = 3  # distances 2 and 3 get their own bias; farther pairs share one


def dense_relations(
    edge_index: torch.Tensor, edge_type: torch.Tensor, batch: torch.Tensor, num_graphs: int, size: int
) -> torch.Tensor:
    """The relation (index into ``RELATIONS``) of every pair of nodes of each graph, padded.

    Args:
        edge_index: ``(2, E)`` directed edges of the batch; edge_type ``(E,)`` index into
            single, double, triple, aromatic.
        batch: ``(N,)`` sorted graph index of each node; num_graphs B; size M ≥ the largest graph.

    Shapes:
        -> ``(B, M, M)`` int64 (padding rows and columns: the "none" relation).
    """
    counts = torch.bincount(batch, minlength=num_graphs)
    local = torch.arange(batch.numel(), device=batch.device) - (torch.cumsum(counts, 0) - counts)[batch]
    graph = batch[edge_index[0]]
    adjacency = torch.zeros(num_graphs, size, size, device=batch.device)  # (B, M, M) 0/1
    adjacency[graph, local[edge_index[0]], local[edge_index[1]]] = 1.0
    relation = torch.full((num_graphs, size, size), len(RELATIONS) - 1, dtype=torch.long, device=batch.device)
    # Distances 2..MAX_HOPS by boolean matrix powers: reached at k hops, not before.
    reached = adjacency.bool() | torch.eye(size, dtype=torch.bool, device=batch.device)
    walk = adjacency
    for hops in range(2, MAX_HOPS + 1):
        walk = torch.bmm(walk, adjacency)  # (B, M, M) number of walks of length `hops`
        new = (walk > 0) & ~reached
        relation[new] = RELATIONS.index(f"{hops} bonds")
        reached |= new
    relation[graph, local[edge_index[0]], local[edge_index[1]]] = 1 + edge_type.long()  # bond types
    diagonal = torch.arange(size, device=batch.device)
    relation[:, diagonal, diagonal] = 0  # self
    return relation


class GraphTransformerLayer(nn.Module):
    """Pre-norm Transformer block whose attention scores carry a learned bias per relation.

        h ← h + W_O · Attention(LN(h)) with scores + b[rel];   h ← h + MLP(LN(h))

    Args:
        dim: width C.
        heads: heads H (must divide C) (default 4).
        mlp_ratio: the MLP's hidden width over C (default 2.0).
        relations: number of relation values (default ``len(RELATIONS)``).

    Shapes:
        ``h`` ``(B, M, C)``, ``relation`` ``(B, M, M)`` int64, ``mask`` ``(B, M)`` True for a
        real node -> ``(B, M, C)``.
    """

    def __init__(self, dim: int, heads: int = 4, mlp_ratio: float = 2.0, relations: int = len(RELATIONS)):
        super().__init__()
        if dim % heads:
            raise ValueError(f"heads={heads} must divide dim={dim}")
        self.dim, self.heads = dim, heads
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.bias = nn.Embedding(relations, heads)  # b^(h)[rel]
        hidden = int(dim * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for module in (self.norm1, self.norm2, self.qkv, self.out, self.mlp[0], self.mlp[2]):
            module.reset_parameters()
        nn.init.zeros_(self.bias.weight)  # start as a plain Transformer on the set of atoms

    def forward(self, h: torch.Tensor, relation: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        B, M, C = h.shape
        q, k, v = self.qkv(self.norm1(h)).view(B, M, 3, self.heads, C // self.heads).unbind(2)  # (B, M, H, D)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # (B, H, M, D)
        bias = self.bias(relation).permute(0, 3, 1, 2)  # (B, M, M, H) -> (B, H, M, M)
        bias = bias.masked_fill(~mask[:, None, None, :], float("-inf"))  # padded keys get no weight
        attended = scaled_dot_product_attention(q, k, v, mask=bias)  # (B, H, M, D)
        h = h + self.out(attended.transpose(1, 2).reshape(B, M, C))  # (B, H, M, D) -> (B, M, C)
        return h + self.mlp(self.norm2(h))
