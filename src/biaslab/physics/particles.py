"""Small clusters of particles in 3-D and their potential energy under a pair potential.

A configuration is n points x_1 … x_n in space; its potential energy is a sum over the pairs,

    E(x) = Σ_{i<j} V(‖x_i − x_j‖)                                                   (pair sum)

with the Morse potential (Morse 1929) as V, a well of depth D at the distance r_0 whose width is set
by a:

    V(r) = D [(1 − e^{−a (r − r_0)})² − 1]                     (V(r_0) = −D, V(∞) = 0)

E depends on the points only through their distances, so it is invariant under E(3) (rotating,
reflecting or translating the cluster) and under permuting the identical particles: a model with
those symmetries built in has to learn only the function of the distances, a model without them
also has to learn the symmetries from data. ``random_clusters`` draws configurations with no two
particles closer than a minimum distance (the Morse wall is steep there), seeded.

:class:`Morse`, :func:`pair_distances`, :func:`pair_energy` (equal to scipy's ``pdist`` summed by
hand, E(3)- and permutation-invariant: tested) and :func:`random_clusters` (seeded, redrawn until
no two points are closer than ``min_distance``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

__all__ = ["Morse", "pair_distances", "pair_energy", "random_clusters"]


@dataclass(frozen=True)
class Morse:
    """The Morse pair potential V(r) = D [(1 − e^{−a (r − r_0)})² − 1].

    Args:
        depth: D, the depth of the well (default 1).
        width: a, the inverse width of the well (default 2).
        distance: r_0, where the well is deepest (default 1).
    """

    depth: float = 1.0
    width: float = 2.0
    distance: float = 1.0

    def __call__(self, r: torch.Tensor) -> torch.Tensor:
        return self.depth * ((1 - torch.exp(-self.width * (r - self.distance))) ** 2 - 1)


def pair_distances(points: torch.Tensor) -> torch.Tensor:
    """‖x_i − x_j‖ for every pair i < j of each configuration.

    Shapes:
        ``points`` ``(B, n, D)`` -> ``(B, n (n − 1) / 2)``, the pairs in ``torch.triu_indices`` order.
    """
    if points.dim() != 3:
        raise ValueError(f"expected configurations of shape (B, n, D), got {tuple(points.shape)}")
    first, second = torch.triu_indices(points.size(1), points.size(1), offset=1, device=points.device)
    diff = points[:, first] - points[:, second]  # (B, P, D)
    return diff.norm(dim=-1)


def pair_energy(points: torch.Tensor, potential=Morse()) -> torch.Tensor:
    """E(x) = Σ_{i<j} V(‖x_i − x_j‖) of each configuration (pair sum).

    Shapes:
        ``points`` ``(B, n, D)`` -> ``(B,)``.
    """
    return potential(pair_distances(points)).sum(dim=1)


def random_clusters(
    count: int, particles: int, seed: int, spread: float = 1.0, min_distance: float = 0.7
) -> torch.Tensor:
    """``count`` configurations of ``particles`` points, each coordinate ~ N(0, spread²), redrawn
    until no two points of a configuration are closer than ``min_distance``; float64.

    Shapes:
        -> ``(count, particles, 3)``.
    """
    if count < 1 or particles < 2:
        raise ValueError(f"need count >= 1 and particles >= 2, got {count} and {particles}")
    rng = np.random.default_rng(seed)
    kept: list[np.ndarray] = []
    have = 0
    for _ in range(1000):
        draw = rng.normal(scale=spread, size=(2 * (count - have) + 16, particles, 3))
        ok = pair_distances(torch.from_numpy(draw)).amin(dim=1).numpy() >= min_distance
        kept.append(draw[ok])
        have += int(ok.sum())
        if have >= count:
            return torch.from_numpy(np.concatenate(kept)[:count])
    raise ValueError(
        f"fewer than {count} configurations of {particles} points {min_distance} apart with spread "
        f"{spread} after 1000 rounds: raise spread or lower min_distance"
    )
