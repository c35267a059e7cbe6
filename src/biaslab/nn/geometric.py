"""E(n)-equivariant message passing (Satorras et al. 2021, EGNN): graphs with coordinates.

A molecule's properties do not change when it is rotated, reflected or moved. A model that reads
raw coordinates must learn that from data; one that reads them only through distances has it
built in. An EGNN layer updates node features h from invariant quantities and coordinates x
equivariantly (eqs. 3–6 of the paper):

    m_ij  = φ_e(h_i, h_j, ‖x_i − x_j‖², a_ij)                  message: depends on x only via distance
    x_i'  = x_i + (1 / (n_i)) Σ_j (x_i − x_j) φ_x(m_ij)        coordinates move along the differences
    m_i   = Σ_j m_ij
    h_i'  = h_i + φ_h(h_i, m_i)                                 residual feature update

Rotating, reflecting or translating every x_i leaves every ‖x_i − x_j‖² and therefore h' unchanged
(invariance) and transforms x' the same way (equivariance); permuting the nodes permutes both.

Models of point clouds (B, n, 3) -> (B,): :class:`EGNN` (a learned embedding of identical
particles, EGNN layers on all pairs, a sum over the particles) and :class:`PairDistanceNet`
(Σ_{i<j} φ(‖x_i − x_j‖), a learned pair potential); both are E(3)- and permutation-invariant to
rounding (tested).
"""

from __future__ import annotations

import torch
from torch import nn

from biaslab.nn._scatter import check_edge_index, check_node_features, scatter
from biaslab.nn.mlp import MLP

__all__ = ["EGNN", "EGNNConv", "PairDistanceNet", "complete_graph_edges"]


class EGNNConv(nn.Module):
    """One EGNN layer (see the module docstring).

    Args:
        channels: node features C (in and out: the update is residual).
        edge_dim: features a_ij per edge (e.g. a bond type; 0 for none) (default 0).
        hidden: width of φ_e, φ_x and φ_h (default ``channels``).
        update_coords: move the coordinates (default True); False keeps x (an invariant
            distance-based network).

    Shapes:
        ``h`` ``(N, C)``, ``pos`` ``(N, 3)``, ``edge_index`` ``(2, E)``, ``edge_attr``
        ``(E, edge_dim)`` -> ``(h' (N, C), pos' (N, 3))``.
    """

    def __init__(
        self, channels: int, edge_dim: int = 0, hidden: int | None = None, update_coords: bool = True
    ):
        super().__init__()
        hidden = hidden or channels
        self.channels, self.edge_dim, self.update_coords = channels, edge_dim, update_coords
        self.phi_e = nn.Sequential(MLP((2 * channels + 1 + edge_dim, hidden, hidden), "silu"), nn.SiLU())
        self.phi_x = MLP((hidden, hidden, 1), "silu") if update_coords else None
        self.phi_h = MLP((channels + hidden, hidden, channels), "silu")

    def reset_parameters(self) -> None:
        for mlp in (self.phi_e[0], self.phi_x, self.phi_h):
            if mlp is not None:
                mlp.reset_parameters()

    def forward(
        self,
        h: torch.Tensor,
        pos: torch.Tensor,
        edge_index: torch.Tensor,
        edge_attr: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        check_node_features(h, self.channels, "h")
        check_edge_index(edge_index, h.size(0))
        source, target = edge_index  # messages flow j = source -> i = target
        diff = pos.index_select(0, target) - pos.index_select(0, source)  # x_i − x_j, (E, 3)
        squared = (diff * diff).sum(-1, keepdim=True)  # ‖x_i − x_j‖², (E, 1)
        parts = [h.index_select(0, target), h.index_select(0, source), squared]
        if self.edge_dim:
            parts.append(edge_attr)
        m = self.phi_e(torch.cat(parts, dim=-1))  # m_ij, (E, hidden)
        if self.phi_x is not None:
            degree = scatter(torch.ones_like(squared), target, h.size(0)).clamp(min=1)  # n_i, (N, 1)
            pos = pos + scatter(diff * self.phi_x(m), target, h.size(0)) / degree  # (N, 3)
        aggregated = scatter(m, target, h.size(0))  # m_i = Σ_j m_ij, (N, hidden)
        return h + self.phi_h(torch.cat([h, aggregated], dim=-1)), pos  # h_i' = h_i + φ_h(h_i, m_i)


def complete_graph_edges(batch: torch.Tensor) -> torch.Tensor:
    """Every ordered pair of distinct nodes within the same graph (a complete graph per graph).

    Shapes:
        ``batch`` ``(N,)`` int64, sorted graph indices -> ``(2, Σ_g n_g (n_g − 1))``.
    """
    counts = torch.bincount(batch)  # (B,) nodes per graph
    starts = torch.cumsum(counts, 0) - counts  # (B,) first node of each graph
    per_node = counts.index_select(0, batch)  # (N,) n_g of each node's graph
    source = torch.repeat_interleave(torch.arange(batch.numel(), device=batch.device), per_node)  # (P,)
    first = torch.cumsum(per_node, 0) - per_node  # (N,) where each node's pairs start
    local = torch.arange(source.numel(), device=batch.device) - first.index_select(0, source)  # 0..n_g−1
    target = starts.index_select(0, batch.index_select(0, source)) + local  # (P,)
    keep = source != target
    return torch.stack([source[keep], target[keep]])  # (2, P − N)


def _flattened(points: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Configurations (B, n, 3) as one graph batch: positions (B n, 3) and the graph of each node."""
    if points.dim() != 3 or points.size(-1) != 3:
        raise ValueError(f"expected point clouds of shape (B, n, 3), got {tuple(points.shape)}")
    batch = torch.arange(points.size(0), device=points.device).repeat_interleave(points.size(1))  # (B n,)
    return points.reshape(-1, 3), batch  # (B, n, 3) -> (B n, 3)


class EGNN(nn.Module):
    """An E(3)- and permutation-invariant function of a point cloud of identical particles: EGNN
    layers on the complete graph of each cloud, then a sum over the particles (an extensive
    quantity, an energy, is a sum of contributions).

        h_i⁰ = e (one learned vector: the particles are identical)
        (h, x) ← EGNNConv(h, x) ``layers`` times;      y = Σ_i φ_out(h_i)

    Args:
        hidden: the width of h and of every φ (default 32).
        layers: EGNN layers (default 3).
        update_coords: move the coordinates between layers (default True; False: an invariant
            distance-based message-passing network).

    Shapes:
        ``points`` ``(B, n, 3)`` -> ``(B,)``.
    """

    def __init__(self, hidden: int = 32, layers: int = 3, update_coords: bool = True):
        super().__init__()
        self.embedding = nn.Parameter(torch.randn(hidden) / hidden**0.5)
        # the last layer's coordinates would be read by nothing: it updates the features only
        self.layers = nn.ModuleList(
            EGNNConv(hidden, update_coords=update_coords and k < layers - 1) for k in range(layers)
        )
        self.readout = MLP((hidden, hidden, 1), "silu")

    def forward(self, points: torch.Tensor) -> torch.Tensor:
        pos, batch = _flattened(points)  # (B n, 3), (B n,)
        h = self.embedding.expand(pos.size(0), -1)  # (B n, hidden)
        edge_index = complete_graph_edges(batch)
        for layer in self.layers:
            h, pos = layer(h, pos, edge_index)
        per_particle = self.readout(h)  # (B n, 1)
        return per_particle.reshape(points.shape[:2]).sum(dim=1)  # (B n, 1) -> (B, n) -> (B,)


class PairDistanceNet(nn.Module):
    """The invariant distance-based model with the physics' own form: a learned pair potential
    summed over the pairs, y = Σ_{i<j} φ(‖x_i − x_j‖) with φ an MLP of the distance. Invariant
    under E(3) and permutations by construction; it can represent exactly the energies of a pair
    potential and nothing else.

    Args:
        hidden: the width of φ's two hidden layers (default 64).

    Shapes:
        ``points`` ``(B, n, 3)`` -> ``(B,)``.
    """

    def __init__(self, hidden: int = 64):
        super().__init__()
        self.potential = MLP((1, hidden, hidden, 1), "silu")

    def forward(self, points: torch.Tensor) -> torch.Tensor:
        _flattened(points)  # the shape check
        first, second = torch.triu_indices(points.size(1), points.size(1), offset=1, device=points.device)
        distance = (points[:, first] - points[:, second]).norm(dim=-1)  # (B, P)
        per_pair = self.potential(distance.reshape(-1, 1))  # (B P, 1)
        return per_pair.reshape(distance.shape).sum(dim=1)  # (B P, 1) -> (B, P) -> (B,)
