"""Functions of sets: the answer must not depend on the order in which the elements are listed.

A function of a set is *invariant* when permuting the elements leaves it unchanged, and a
per-element map is *equivariant* when permuting the elements permutes its outputs the same way.
Sum-decomposition gives every invariant function (Zaheer et al., 2017), and sharing one map
over the elements plus a pooled context gives an equivariant layer:

    f(X) = ρ( Σ_i φ(x_i) )                                                            (eq. 5.7)
    y_i = ψ(x_i, Σ_j φ(x_j)) = Λ x_i + Γ Σ_j x_j + b                                  (eq. 5.8)

Sets of different sizes are padded to a common length M and come with a boolean ``mask``
(True for a real element): padded elements contribute nothing to a pool, and the equivariant
layer writes zeros at padded positions.
"""

from __future__ import annotations

import torch
from torch import nn

from biaslab.nn.mlp import MLP

AGGREGATIONS = ("sum", "mean", "max")


def _check_set(x: torch.Tensor, mask: torch.Tensor | None, in_dim: int) -> None:
    if x.dim() != 3:
        raise ValueError(f"expected sets of shape (N, M, D), got a tensor of shape {tuple(x.shape)}")
    if x.size(-1) != in_dim:
        raise ValueError(f"expected elements with {in_dim} features, got {x.size(-1)}")
    if mask is not None:
        if mask.dtype != torch.bool:
            raise ValueError(f"mask must be a boolean tensor (True = real element), got {mask.dtype}")
        if mask.shape != x.shape[:2]:
            raise ValueError(f"mask must have shape (N, M) = {tuple(x.shape[:2])}, got {tuple(mask.shape)}")


def set_pool(h: torch.Tensor, mask: torch.Tensor | None = None, aggregation: str = "sum") -> torch.Tensor:
    """Pools the elements of each set: a permutation-invariant sum, mean or max over dim 1.

    Args:
        h: element features ``(N, M, D)``.
        mask: ``(N, M)`` booleans, True for a real element (default None: every element is real).
        aggregation: ``"sum"`` (default), ``"mean"`` or ``"max"``. An empty set pools to 0.

    Shapes:
        ``(N, M, D)`` -> ``(N, D)``.
    """
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")
    if mask is None:
        mask = torch.ones(h.shape[:2], dtype=torch.bool, device=h.device)
    keep = mask.unsqueeze(-1)  # (N, M, 1)
    if aggregation == "max":
        pooled = h.masked_fill(~keep, float("-inf")).amax(dim=1)
        return pooled.masked_fill(~keep.any(dim=1), 0.0)  # an empty set pools to 0, not -inf
    total = h.masked_fill(~keep, 0.0).sum(dim=1)
    if aggregation == "sum":
        return total
    return total / keep.sum(dim=1).clamp(min=1).to(h.dtype)


class DeepSets(nn.Module):
    """An invariant network on sets: f(X) = ρ(⊕_i φ(x_i)) with ⊕ a sum, mean or max (eq. 5.7).

    Args:
        in_dim: features per element.
        hidden: width of φ's layers, of the pooled representation and of ρ's hidden layers.
        out_dim: size of the output.
        aggregation: ``"sum"`` (default, the theorem's), ``"mean"`` or ``"max"``.
        phi_layers: ``Linear`` layers of φ (default 2).
        rho_layers: ``Linear`` layers of ρ (default 2).
        activation: the non-linearity inside φ and ρ, as for :class:`MLP` (default ``"relu"``).
        dropout: dropout inside φ and ρ (default 0.0).

    Shapes:
        ``x`` ``(N, M, in_dim)`` (N sets of M elements), optional ``mask`` ``(N, M)`` booleans
        (True for a real element, False for padding) -> ``(N, out_dim)``.
    """

    def __init__(
        self,
        in_dim: int,
        hidden: int,
        out_dim: int,
        aggregation: str = "sum",
        phi_layers: int = 2,
        rho_layers: int = 2,
        activation: str = "relu",
        dropout: float = 0.0,
    ):
        super().__init__()
        if aggregation not in AGGREGATIONS:
            raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")
        if phi_layers < 1 or rho_layers < 1:
            raise ValueError("phi_layers and rho_layers must be at least 1")
        self.in_dim, self.out_dim, self.aggregation = int(in_dim), int(out_dim), aggregation
        self.phi = MLP((self.in_dim, *[hidden] * phi_layers), activation, dropout)
        self.rho = MLP((*[hidden] * rho_layers, self.out_dim), activation, dropout)

    def reset_parameters(self) -> None:
        self.phi.reset_parameters()
        self.rho.reset_parameters()

    def pool(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """The set representation ⊕_i φ(x_i), shape ``(N, hidden)``."""
        _check_set(x, mask, self.in_dim)
        n, m, d = x.shape
        h = self.phi(x.reshape(n * m, d)).view(n, m, -1)  # φ on every element (MLP flattens 3-D inputs)
        return set_pool(h, mask, self.aggregation)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.rho(self.pool(x, mask))


class DeepSetsLayer(nn.Module):
    """A permutation-equivariant layer: y_i = Λ x_i + Γ ⊕_j x_j + b (eq. 5.8 with ψ linear).

    Every element sees itself through Λ and the whole set through the pooled Γ term, so
    permuting the elements permutes the outputs. Stack these layers (with a non-linearity
    between them) and end with :func:`set_pool` for an invariant network.

    Args:
        in_dim: features per input element.
        out_dim: features per output element.
        aggregation: the pool ⊕: ``"sum"`` (default), ``"mean"`` or ``"max"``.
        bias: learn the shared bias b (default True).

    Shapes:
        ``x`` ``(N, M, in_dim)``, optional ``mask`` ``(N, M)`` -> ``(N, M, out_dim)``, zero at
        padded positions.
    """

    def __init__(self, in_dim: int, out_dim: int, aggregation: str = "sum", bias: bool = True):
        super().__init__()
        if aggregation not in AGGREGATIONS:
            raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")
        self.in_dim, self.out_dim, self.aggregation = int(in_dim), int(out_dim), aggregation
        self.lin_self = nn.Linear(self.in_dim, self.out_dim, bias=bias)  # Λ and b
        self.lin_pool = nn.Linear(self.in_dim, self.out_dim, bias=False)  # Γ

    def reset_parameters(self) -> None:
        self.lin_self.reset_parameters()
        self.lin_pool.reset_parameters()

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        _check_set(x, mask, self.in_dim)
        context = self.lin_pool(set_pool(x, mask, self.aggregation))  # (N, out_dim)
        y = self.lin_self(x) + context.unsqueeze(1)  # (N, M, out_dim)
        return y if mask is None else y.masked_fill(~mask.unsqueeze(-1), 0.0)
