"""The graph and molecule models ``biaslab compare`` offers: the QM9 model zoo
(:mod:`biaslab.nn.molecules`) sized for a few hundred graphs, behind a Candidate's signature.

Every builder is ``build(input_shape, n_outputs, task)`` with ``input_shape = (F,)``, the node
features, and returns a model mapping a batch of graphs (a
:class:`~biaslab.data.qm9.MoleculeBatch`: ``x`` (A, F), ``edge_index`` (2, E), ``edge_attr``
(E, 4) one-hot edge types, ``batch`` (A,), ``pos`` (A, 3) for EGNN) to ``(B, n_outputs)``: class
scores, or one standardized value per graph. Each layer is one round of message passing
(Day 4: message passing, eq. 5.9), h_i' = φ(h_i, ⊕_{j ∈ N(i)} ψ(h_i, h_j, e_ij)), and a readout
sums (or attends over) each graph's nodes, so relabelling a graph's nodes changes nothing:

    model              one layer (σ = SiLU)                                           readout
    GCN                h_i' = h_i + σ(Σ_j â_ij W h_j),  â = D̂^{-1/2} (A + I) D̂^{-1/2}    sum ‖ mean
    GAT                h_i' = h_i + σ(Σ_j α_ij W h_j),  α_ij = softmax_j(aᵀ[Wh_i ‖ Wh_j])  sum ‖ mean
    MPNN               m_i = mean_j Θ(e_ij) h_j (an edge network),  h_i' = GRU(m_i, h_i)   Set2Set
    graph Transformer  attention over all nodes of a graph, score_ij + b[rel(i, j)],      sum
                       rel = the bond type, or the distance in bonds
    EGNN               m_ij = φ_e(h_i, h_j, ‖x_i − x_j‖², e_ij) over all pairs, the         sum
                       coordinates moved along x_i − x_j: an E(3)-invariant output

Sizes, with parameters for 11 atom features and 2 classes (``biaslab.nn.count_parameters``):

    builder             model                                                     parameters
    gcn                 embedding 64, 3 residual GCN layers of 64, sum ‖ mean pool,   21,634
                        head 128 → 64 → K
    gat                 the same with GAT layers of 4 heads × 16                      22,018
    mpnn                embedding 32, 3 steps of one edge network (4 → 128 → 32²),   155,202
                        mean aggregation and a GRU, Set2Set (3 reads), head 64 → 32 → K
    graph_transformer   embedding 64, 2 pre-norm layers of 4 heads, a bias per        72,194
                        relation, sum pool, head 64 → 64 → K
    egnn                embedding 32, 3 EGNN layers of 32 on all pairs (bond type     24,165
                        or "not bonded" as the pair's feature), sum pool, head 32 → 32 → K
    fingerprint_mlp     the table MLP (:func:`~biaslab.comparison.models.mlp`) on    279,042
                        the 2048 Morgan bits: 2048 → 128 → 128 → K
    fingerprint_trees   the table's gradient-boosted trees on the bits,               (up to 100
                        random_state=0                                                trees)

Measured here (2 CPU threads, shared), one epoch of 456 molecules of 5.6 heavy atoms on average
in batches of 32, validation included: GCN 0.06 s, GAT 0.06 s, MPNN 0.14 s, graph Transformer
0.12 s, EGNN 0.09 s, fingerprint MLP 0.02 s; the fingerprint trees' whole fit 4.7 s.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from biaslab.comparison import models
from biaslab.data.molecules import BOND_TYPES
from biaslab.nn.molecules import EGNNRegressor, GraphConvRegressor, GraphTransformerRegressor, MPNNRegressor

__all__ = [
    "GRAPH_HIDDEN",
    "PerGraph",
    "egnn",
    "fingerprint_mlp",
    "fingerprint_trees",
    "gat",
    "gcn",
    "graph_transformer",
    "mpnn",
]

GRAPH_HIDDEN = 64  # GCN's, GAT's and the graph Transformer's width
NARROW_HIDDEN = 32  # MPNN's (its edge network outputs hidden² weights) and EGNN's (it reads all pairs)
GRAPH_LAYERS = 3  # message-passing rounds of GCN, GAT and EGNN: a node reads 3 bonds away
TRANSFORMER_LAYERS = 2  # every node reads every other at each layer
HEADS = 4


class PerGraph(nn.Module):
    """A graph model whose output is one row per graph, ``(B, n_outputs)``, whatever shape the
    model gives (the QM9 regressors squeeze a single output to ``(B,)``).

    Shapes:
        a batch of B graphs -> ``(B, n_outputs)``.
    """

    def __init__(self, model: nn.Module, n_outputs: int):
        super().__init__()
        self.model, self.n_outputs = model, n_outputs

    def forward(self, batch) -> torch.Tensor:
        return self.model(batch).reshape(batch.num_graphs, self.n_outputs)


def _node_features(input_shape: Sequence[int], what: str) -> int:
    """F of ``input_shape = (F,)``, or a ValueError naming ``what``."""
    shape = tuple(int(s) for s in input_shape)
    if len(shape) != 1 or shape[0] < 1:
        raise ValueError(f"{what} needs the node features' shape (F,), got {shape}")
    return shape[0]


def gcn(input_shape: Sequence[int], n_outputs: int, task: str) -> PerGraph:
    """GCN layers (Kipf & Welling) with residual connections, sum and mean pooling, an MLP head.

    Shapes:
        a batch of B graphs with ``x`` (A, F) -> ``(B, n_outputs)``.
    """
    features = _node_features(input_shape, "a GCN")
    return PerGraph(
        GraphConvRegressor(features, "gcn", GRAPH_HIDDEN, GRAPH_LAYERS, out_dim=n_outputs), n_outputs
    )


def gat(input_shape: Sequence[int], n_outputs: int, task: str) -> PerGraph:
    """GAT layers (Veličković et al.) of 4 heads, otherwise as :func:`gcn`.

    Shapes:
        a batch of B graphs with ``x`` (A, F) -> ``(B, n_outputs)``.
    """
    features = _node_features(input_shape, "a GAT")
    return PerGraph(
        GraphConvRegressor(features, "gat", GRAPH_HIDDEN, GRAPH_LAYERS, HEADS, out_dim=n_outputs), n_outputs
    )


def mpnn(input_shape: Sequence[int], n_outputs: int, task: str) -> PerGraph:
    """Gilmer et al.'s MPNN: an edge network reads each edge's type into the message, a GRU
    updates the nodes, Set2Set reads the graph out.

    Shapes:
        a batch of B graphs with ``x`` (A, F), ``edge_attr`` (E, 4) -> ``(B, n_outputs)``.
    """
    features = _node_features(input_shape, "an MPNN")
    return PerGraph(MPNNRegressor(features, len(BOND_TYPES), NARROW_HIDDEN, out_dim=n_outputs), n_outputs)


def graph_transformer(input_shape: Sequence[int], n_outputs: int, task: str) -> PerGraph:
    """A Transformer over each graph's nodes, the edge type (or the distance in edges) of every
    pair a learned bias on its attention scores (Graphormer-style).

    Shapes:
        a batch of B graphs with ``x`` (A, F), ``edge_attr`` (E, 4) -> ``(B, n_outputs)``.
    """
    features = _node_features(input_shape, "a graph Transformer")
    return PerGraph(
        GraphTransformerRegressor(features, GRAPH_HIDDEN, TRANSFORMER_LAYERS, HEADS, out_dim=n_outputs),
        n_outputs,
    )


def egnn(input_shape: Sequence[int], n_outputs: int, task: str) -> PerGraph:
    """EGNN layers (Satorras et al.) on the complete graph of each molecule, bond types as edge
    features: reads the coordinates only through distances.

    Shapes:
        a batch of B graphs with ``x`` (A, F), ``pos`` (A, 3), ``edge_attr`` (E, 4)
        -> ``(B, n_outputs)``.
    """
    features = _node_features(input_shape, "an EGNN")
    return PerGraph(
        EGNNRegressor(features, len(BOND_TYPES), NARROW_HIDDEN, GRAPH_LAYERS, out_dim=n_outputs), n_outputs
    )


# The fingerprint candidates are table models on the (N, 2048) bits (input_shape (2048,)).
fingerprint_mlp = models.mlp
fingerprint_trees = models.gradient_boosted_trees
