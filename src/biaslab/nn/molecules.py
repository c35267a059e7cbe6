"""One regressor per inductive bias, for molecules: the QM9 model zoo.

Every model maps a batch of molecules to one prediction per molecule (per target), reading only
what its bias allows:

=================  =====================================  =======================================
model              reads                                  symmetry built in
=================  =====================================  =======================================
``tabular``        a fixed vector per molecule (bag of     none (an MLP on a table)
                   atoms and bonds, or a fingerprint)
``deepsets``       the atoms' features, no bonds           permutation of the atoms
``gcn``/``gat``    atoms and bonds (GCN ignores the bond   permutation; locality along bonds
                   type; GAT weighs neighbours)
``mpnn``           atoms and typed bonds: edge network,    permutation; locality; learned readout
                   GRU update, Set2Set readout (Gilmer)
``transformer``    every pair of atoms, bonds as a bias    permutation; global reach
``egnn``           atoms, bonds and 3-D coordinates        permutation; rotation, reflection and
                                                           translation of the coordinates
=================  =====================================  =======================================

A batch is any object with the fields of :class:`biaslab.data.qm9.MoleculeBatch` (``x``,
``pos``, ``edge_index``, ``edge_attr``, ``batch``, ``num_graphs``, and ``features`` for the
tabular model).

:data:`MOLECULE_MODELS` and :func:`build_molecule_model` build them by name;
:func:`dense_batch` pads a batch's atoms for the graph Transformer, which attends over all pairs.
"""

from __future__ import annotations

import torch
from torch import nn

from biaslab.nn._scatter import scatter
from biaslab.nn.geometric import EGNNConv, complete_graph_edges
from biaslab.nn.graph import GATConv, GCNConv, MPNNConv
from biaslab.nn.graph_transformer import GraphTransformerLayer, dense_relations
from biaslab.nn.mlp import MLP
from biaslab.nn.readout import Set2Set

__all__ = [
    "MOLECULE_MODELS",
    "AtomSetRegressor",
    "EGNNRegressor",
    "GraphConvRegressor",
    "GraphTransformerRegressor",
    "MPNNRegressor",
    "TabularRegressor",
    "build_molecule_model",
    "dense_batch",
]


def dense_batch(x: torch.Tensor, batch: torch.Tensor, num_graphs: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Nodes of each graph as rows of a padded tensor (``torch_geometric.utils.to_dense_batch``).

    Shapes:
        ``x`` ``(N, C)``, ``batch`` ``(N,)`` sorted -> ``(B, M, C)`` (zeros as padding) and a mask
        ``(B, M)``, True for a real node; M is the largest graph's size.
    """
    counts = torch.bincount(batch, minlength=num_graphs)
    size = int(counts.max()) if counts.numel() else 0
    local = torch.arange(batch.numel(), device=x.device) - (torch.cumsum(counts, 0) - counts)[batch]
    dense = x.new_zeros(num_graphs, size, x.size(-1))
    dense[batch, local] = x
    mask = torch.zeros(num_graphs, size, dtype=torch.bool, device=x.device)
    mask[batch, local] = True
    return dense, mask


def _head(channels: int, hidden: int, out_dim: int) -> MLP:
    return MLP((channels, hidden, out_dim), "silu")


def _squeeze(y: torch.Tensor, out_dim: int) -> torch.Tensor:
    return y.squeeze(-1) if out_dim == 1 else y  # (B,) for one target, (B, K) for several


class TabularRegressor(nn.Module):
    """An MLP on a vector per molecule (``batch.features``): no structure, no symmetry.

    Args:
        in_dim: features per molecule; hidden: widths (default (256, 256)); out_dim (default 1).
    """

    def __init__(self, in_dim: int, hidden: tuple[int, ...] = (256, 256), out_dim: int = 1):
        super().__init__()
        self.out_dim = out_dim
        self.mlp = MLP((in_dim, *hidden, out_dim), "silu")

    def forward(self, batch) -> torch.Tensor:
        return _squeeze(self.mlp(batch.features), self.out_dim)


class AtomSetRegressor(nn.Module):
    """Deep Sets over a molecule's atoms: ρ(Σ_i φ(x_i)) (eq. 5.7); bonds are not read.

    Args:
        in_dim: atom features; hidden (default 128); out_dim (default 1).
    """

    def __init__(self, in_dim: int, hidden: int = 128, out_dim: int = 1):
        super().__init__()
        self.out_dim = out_dim
        self.phi = MLP((in_dim, hidden, hidden, hidden), "silu")
        self.rho = MLP((hidden, hidden, out_dim), "silu")

    def forward(self, batch) -> torch.Tensor:
        pooled = scatter(self.phi(batch.x), batch.batch, batch.num_graphs)  # Σ_i φ(x_i), (B, hidden)
        return _squeeze(self.rho(pooled), self.out_dim)


class GraphConvRegressor(nn.Module):
    """GCN or GAT layers with residual connections, then sum and mean pooling and an MLP head.

    Args:
        in_dim: atom features; kind: ``"gcn"`` or ``"gat"``; hidden (default 128); layers
        (default 4); heads for GAT (default 4); out_dim (default 1).
    """

    def __init__(
        self,
        in_dim: int,
        kind: str = "gcn",
        hidden: int = 128,
        layers: int = 4,
        heads: int = 4,
        out_dim: int = 1,
    ):
        super().__init__()
        if kind not in ("gcn", "gat"):
            raise ValueError(f"kind must be 'gcn' or 'gat', got {kind!r}")
        self.out_dim = out_dim
        self.embed = nn.Linear(in_dim, hidden)
        if kind == "gcn":
            convs = [GCNConv(hidden, hidden) for _ in range(layers)]
        else:
            convs = [GATConv(hidden, hidden // heads, heads=heads) for _ in range(layers)]
        self.convs = nn.ModuleList(convs)
        self.head = _head(2 * hidden, hidden, out_dim)

    def forward(self, batch) -> torch.Tensor:
        h = self.embed(batch.x)  # (N, C)
        for conv in self.convs:
            h = h + nn.functional.silu(conv(h, batch.edge_index))  # residual: deep stacks stay trainable
        pooled = torch.cat(
            [scatter(h, batch.batch, batch.num_graphs), scatter(h, batch.batch, batch.num_graphs, "mean")], -1
        )  # (B, 2C)
        return _squeeze(self.head(pooled), self.out_dim)


class MPNNRegressor(nn.Module):
    """Gilmer et al.'s MPNN: edge-network messages, a GRU update shared over T steps, Set2Set.

        m_i^(t+1) = Σ_j Θ(e_ij) h_j^(t)   (+ Θ_root h_i),   h_i^(t+1) = GRU(m_i^(t+1), h_i^(t))
        ŷ = MLP(Set2Set({h_i^(T)}))

    Args:
        in_dim: atom features; edge_dim: bond features; hidden (default 64); steps T (default 3);
        set2set_steps (default 3); out_dim (default 1).
    """

    def __init__(
        self,
        in_dim: int,
        edge_dim: int,
        hidden: int = 64,
        steps: int = 3,
        set2set_steps: int = 3,
        out_dim: int = 1,
    ):
        super().__init__()
        self.out_dim, self.steps = out_dim, steps
        self.embed = nn.Linear(in_dim, hidden)
        self.conv = MPNNConv(hidden, hidden, edge_dim, aggr="mean", hidden=(128,))
        self.gru = nn.GRUCell(hidden, hidden)
        self.readout = Set2Set(hidden, set2set_steps)
        self.head = _head(2 * hidden, hidden, out_dim)

    def forward(self, batch) -> torch.Tensor:
        h = nn.functional.silu(self.embed(batch.x))  # h^(0), (N, C)
        for _ in range(self.steps):
            m = nn.functional.silu(self.conv(h, batch.edge_index, batch.edge_attr))  # (N, C)
            h = self.gru(m, h)  # the same GRU at every step
        return _squeeze(self.head(self.readout(h, batch.batch, batch.num_graphs)), self.out_dim)


class GraphTransformerRegressor(nn.Module):
    """Transformer layers over all atoms of a molecule, bonds and distances in bonds as biases.

    Args:
        in_dim: atom features; hidden (default 128); layers (default 4); heads (default 4);
        out_dim (default 1).
    """

    def __init__(self, in_dim: int, hidden: int = 128, layers: int = 4, heads: int = 4, out_dim: int = 1):
        super().__init__()
        self.out_dim = out_dim
        self.embed = nn.Linear(in_dim, hidden)
        self.layers = nn.ModuleList(GraphTransformerLayer(hidden, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(hidden)
        self.head = _head(hidden, hidden, out_dim)

    def forward(self, batch) -> torch.Tensor:
        h, mask = dense_batch(self.embed(batch.x), batch.batch, batch.num_graphs)  # (B, M, C), (B, M)
        bond_type = batch.edge_attr.argmax(-1)  # one-hot -> index, (E,)
        relation = dense_relations(batch.edge_index, bond_type, batch.batch, batch.num_graphs, h.size(1))
        for layer in self.layers:
            h = layer(h, relation, mask)
        pooled = (self.norm(h) * mask.unsqueeze(-1)).sum(1)  # sum over the real atoms, (B, C)
        return _squeeze(self.head(pooled), self.out_dim)


class EGNNRegressor(nn.Module):
    """EGNN layers on the complete graph of each molecule (bond types as edge features), then a
    sum over atoms: invariant to rotations, reflections and translations of the coordinates.

    Args:
        in_dim: atom features; edge_dim: bond features (a fifth channel marks non-bonded pairs);
        hidden (default 128); layers (default 4); out_dim (default 1).
    """

    def __init__(self, in_dim: int, edge_dim: int, hidden: int = 128, layers: int = 4, out_dim: int = 1):
        super().__init__()
        self.out_dim, self.edge_dim = out_dim, edge_dim
        self.embed = nn.Linear(in_dim, hidden)
        self.layers = nn.ModuleList(EGNNConv(hidden, edge_dim + 1, update_coords=True) for _ in range(layers))
        self.head = _head(hidden, hidden, out_dim)

    def pair_features(self, batch, pairs: torch.Tensor) -> torch.Tensor:
        """The bond one-hot of each pair of the complete graph, (P, edge_dim + 1), last = no bond."""
        counts = torch.bincount(batch.batch, minlength=batch.num_graphs)
        local = (
            torch.arange(batch.batch.numel(), device=batch.x.device)
            - (torch.cumsum(counts, 0) - counts)[batch.batch]
        )
        size = int(counts.max())

        def slot(edges):  # a unique id per ordered pair: (graph, local i, local j), (E,)
            return (batch.batch[edges[0]] * size + local[edges[0]]) * size + local[edges[1]]

        dense = batch.x.new_zeros(batch.num_graphs * size * size, self.edge_dim + 1)
        dense[:, -1] = 1.0
        dense[slot(batch.edge_index)] = torch.cat(
            [batch.edge_attr, batch.x.new_zeros(batch.edge_attr.size(0), 1)], -1
        )
        return dense[slot(pairs)]  # (P, edge_dim + 1)

    def forward(self, batch) -> torch.Tensor:
        pairs = complete_graph_edges(batch.batch)  # (2, P)
        edge_attr = self.pair_features(batch, pairs)
        h, pos = self.embed(batch.x), batch.pos
        for layer in self.layers:
            h, pos = layer(h, pos, pairs, edge_attr)
        return _squeeze(self.head(scatter(h, batch.batch, batch.num_graphs)), self.out_dim)


# The neural models of the QM9 experiment, by name: what each reads.
MOLECULE_MODELS = {
    "bag-mlp": "MLP on counts of atoms and bonds",
    "fingerprint-mlp": "MLP on a Morgan fingerprint",
    "deepsets": "Deep Sets over atoms (no bonds)",
    "gcn": "GCN",
    "gat": "GAT",
    "mpnn": "MPNN: edge network, GRU, Set2Set (Gilmer)",
    "transformer": "graph Transformer, bonds as attention bias",
    "egnn": "EGNN on 3-D coordinates (E(3)-invariant)",
}


def build_molecule_model(
    name: str, in_dim: int, edge_dim: int, hidden: int = 128, out_dim: int = 1, feature_dim: int = 0
) -> nn.Module:
    """The model ``name`` of :data:`MOLECULE_MODELS` at width ``hidden``.

    Args:
        name: a key of :data:`MOLECULE_MODELS`.
        in_dim: atom features; edge_dim: bond features; out_dim: targets (default 1).
        feature_dim: per-molecule features of the tabular models (``*-mlp``).
    """
    if name.endswith("-mlp"):
        return TabularRegressor(feature_dim, (2 * hidden, 2 * hidden), out_dim)
    builders = {
        "deepsets": lambda: AtomSetRegressor(in_dim, hidden, out_dim),
        "gcn": lambda: GraphConvRegressor(in_dim, "gcn", hidden, out_dim=out_dim),
        "gat": lambda: GraphConvRegressor(in_dim, "gat", hidden, out_dim=out_dim),
        "mpnn": lambda: MPNNRegressor(in_dim, edge_dim, hidden // 2, out_dim=out_dim),
        "transformer": lambda: GraphTransformerRegressor(in_dim, hidden, out_dim=out_dim),
        "egnn": lambda: EGNNRegressor(
            in_dim, edge_dim, hidden // 2, out_dim=out_dim
        ),  # on all pairs: narrower
    }
    if name not in builders:
        raise ValueError(f"unknown molecule model {name!r} (known: {', '.join(MOLECULE_MODELS)})")
    return builders[name]()
