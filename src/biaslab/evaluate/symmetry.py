"""The symmetry verifier: does a model commute with a transformation of its input?

A model f is *equivariant* to a transformation g when transforming the input transforms the
output the matching way, and *invariant* when the output does not change at all:

    f(T_in(x)) = T_out(f(x))        equivariance        (T_out = identity: invariance)

Each primitive of ``biaslab.nn`` claims a symmetry — convolution with circular padding commutes
with cyclic translation, Deep Sets and message passing with a permutation of the elements or
nodes, self-attention without positions with a permutation of the tokens — and an MLP claims
none. :func:`equivariance_error` measures the claim numerically for any callable, and the
transforms below are the ones the notes discuss. The error is relative to the output's scale:

    error = max |f(T_in(x)) − T_out(f(x))| / max |T_out(f(x))|

(~1e-7 in float32 for an exact symmetry, order 1 for none).

Points in space (atoms of a molecule) have the Euclidean group E(D) as their symmetry: x → Q x + t
with Q orthogonal (a rotation, det +1, or a rotation-reflection, det −1) and t a translation.
:func:`random_isometry` draws one, seeded, and :func:`on_field` applies a transform to one field
of a batch (the coordinates ``pos`` of a molecule batch).

The transforms: :func:`cyclic_shift`, :func:`rotate90`, :func:`reverse`, :func:`permute`,
:func:`permute_nodes` (P·X, and P·A·Pᵀ on an edge list), :func:`permute_dense_graph`,
:func:`random_permutation`; in space, :func:`random_orthogonal` (uniform on O(D), det +1, −1 or
either) and :func:`random_isometry` -> :class:`Isometry` (x → Qx + t).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

from biaslab.checks import as_generator, check_integer, check_number
from biaslab.nn.mlp import device_of
from biaslab.train.steps import move_to

__all__ = [
    "Isometry",
    "cyclic_shift",
    "equivariance_error",
    "identity",
    "invariance_error",
    "on_field",
    "permute",
    "permute_dense_graph",
    "permute_nodes",
    "random_isometry",
    "random_orthogonal",
    "random_permutation",
    "relative_difference",
    "reverse",
    "rotate90",
]

Transform = Callable[[Any], Any]


def equivariance_error(
    model: Callable,
    transform_in: Transform,
    transform_out: Transform,
    inputs: Any,
    output: Callable[[Any], torch.Tensor] | None = None,
) -> float:
    """How far ``model`` is from commuting with a transformation: 0 for an exact symmetry.

    Args:
        model: an ``nn.Module`` or any callable; a module is evaluated in eval mode under
            ``torch.no_grad()`` and its training mode restored afterwards, on its device (the
            inputs are moved there before they are transformed).
        transform_in: maps ``inputs`` to transformed inputs of the same structure.
        transform_out: maps an output to the output the symmetry predicts (``identity`` for
            invariance).
        inputs: a tensor, or a tuple of the model's positional arguments (e.g.
            ``(x, edge_index)`` for a graph layer); the model is called as ``model(*inputs)``.
        output: picks the tensor to compare from what the model returns (e.g.
            ``lambda out: out[0]`` for a module returning ``(output, weights)``); default the
            return value itself.

    Returns:
        ``max |f(T_in(x)) - T_out(f(x))| / max |T_out(f(x))|`` (the denominator floored at the
        smallest normal number of the output's dtype).
    """
    pick = output if output is not None else (lambda out: out)
    if isinstance(model, nn.Module):
        inputs = move_to(inputs, device_of(model))
    was_training = getattr(model, "training", None)
    if was_training is not None:
        model.eval()
    try:
        with torch.no_grad():
            predicted = transform_out(pick(_call(model, inputs)))  # T_out(f(x))
            actual = pick(_call(model, transform_in(inputs)))  # f(T_in(x))
    finally:
        if was_training:
            model.train()
    if predicted.shape != actual.shape:
        raise ValueError(
            f"transformed outputs differ in shape: f(T_in(x)) {tuple(actual.shape)} vs "
            f"T_out(f(x)) {tuple(predicted.shape)}; is transform_out the matching transformation?"
        )
    return relative_difference(actual, predicted)


def relative_difference(actual: torch.Tensor, expected: torch.Tensor) -> float:
    """``max |actual − expected| / max |expected|``, the denominator floored at the smallest
    normal number of ``expected``'s dtype: rounding level when two computations agree."""
    scale = expected.abs().max().clamp_min(torch.finfo(expected.dtype).tiny)
    return float((actual - expected).abs().max() / scale)


def invariance_error(model: Callable, transform_in: Transform, inputs: Any, output=None) -> float:
    """:func:`equivariance_error` with ``transform_out`` the identity: f(T(x)) = f(x)."""
    return equivariance_error(model, transform_in, identity, inputs, output=output)


def _call(model: Callable, inputs: Any):
    return model(*inputs) if isinstance(inputs, tuple) else model(inputs)


# -- transforms --------------------------------------------------------------------------------
def identity(x: Any) -> Any:
    """The output transform of an invariance."""
    return x


def cyclic_shift(shift: int | Sequence[int], dims: int | Sequence[int] = -1) -> Transform:
    """Translate by ``shift`` positions along ``dims``, wrapping around (``torch.roll``).

    1-D signals (N, C, L): ``cyclic_shift(3)``; images (N, C, H, W):
    ``cyclic_shift((2, -1), dims=(-2, -1))``.
    """
    return lambda x: torch.roll(x, shifts=shift, dims=dims)


def rotate90(k: int = 1, dims: tuple[int, int] = (-2, -1)) -> Transform:
    """Rotate images by ``k`` quarter turns in the plane of ``dims`` (``torch.rot90``)."""
    return lambda x: torch.rot90(x, k, dims)


def reverse(dim: int = 1) -> Transform:
    """Reverse the order of a sequence along ``dim`` (time, for (N, T, C) sequences)."""
    return lambda x: torch.flip(x, dims=(dim,))


def permute(perm: torch.Tensor, dim: int = 1) -> Transform:
    """Reorder along ``dim`` so that new position i holds old position ``perm[i]``: P·X for the
    elements of sets (N, M, D) (``dim=1``), tokens of sequences, or node outputs (``dim=0``)."""
    return lambda x: torch.index_select(x, dim, perm.to(x.device))


def permute_nodes(perm: torch.Tensor) -> Transform:
    """Relabel the nodes of a graph given as ``(x, edge_index, *rest)``: x → P·X and every edge
    (j → i) → (π⁻¹(j) → π⁻¹(i)), the edge-list form of A → P·A·Pᵀ.

    New node i is old node ``perm[i]``. ``rest`` (edge features, ...) is passed through: edges
    keep their order, only their endpoints are renamed. A ``batch`` vector is a node feature:
    pass it inside ``rest`` only if the model does not need it permuted, else permute it too.
    """

    def apply(graph: tuple) -> tuple:
        x, edge_index, *rest = graph
        order = perm.to(edge_index.device)  # indexes the edges: on their device
        inverse = torch.empty_like(order)
        inverse[order] = torch.arange(len(order), device=order.device)  # old label -> new label
        return (x[order], inverse[edge_index], *rest)

    return apply


def permute_dense_graph(perm: torch.Tensor) -> Transform:
    """Relabel the nodes of a graph given as ``(x, adjacency)``: P·X and P·A·Pᵀ."""

    def apply(graph: tuple) -> tuple:
        x, adjacency, *rest = graph
        return (x[perm], adjacency[perm][:, perm], *rest)

    return apply


def random_orthogonal(
    dim: int = 3, generator: torch.Generator | int = 0, det: int | None = None
) -> torch.Tensor:
    """A random orthogonal matrix Q (Qᵀ Q = I), uniformly distributed (Haar measure), float64.

    The QR decomposition of a standard normal matrix with the signs of R's diagonal moved into
    Q (Mezzadri 2007: without that step Q is not uniform).

    Args:
        dim: D, the matrix is (D, D).
        generator: a ``torch.Generator`` (Q is drawn and returned on its device), or the seed of
            a fresh CPU one (default 0).
        det: +1 for a rotation, −1 for a rotation-reflection (the first column's sign flipped
            where needed, which keeps the draw uniform within its kind), None for either.
    """
    dim = check_integer(dim, "dim")
    if det not in (None, 1, -1):
        raise ValueError(f"det must be 1, -1 or None, got {det!r}")
    generator = as_generator(generator)
    z = torch.randn(dim, dim, generator=generator, dtype=torch.float64, device=generator.device)
    q, r = torch.linalg.qr(z)
    q = q * torch.where(torch.diagonal(r) < 0, -1.0, 1.0)  # column j times sign(R_jj)
    if det is not None and torch.linalg.det(q) * det < 0:
        q[:, 0] = -q[:, 0]
    return q


@dataclasses.dataclass(frozen=True)
class Isometry:
    """x → Q x + t on points (..., D): ``matrix`` Q (D, D) orthogonal, ``shift`` t (D,), float64;
    applied in the points' dtype and device."""

    matrix: torch.Tensor
    shift: torch.Tensor

    def __call__(self, points: torch.Tensor) -> torch.Tensor:
        return points @ self.matrix.to(points).T + self.shift.to(points)


def random_isometry(
    dim: int = 3, generator: torch.Generator | int = 0, det: int | None = None, shift_std: float = 1.0
) -> Isometry:
    """A random element of E(D): :func:`random_orthogonal` Q and a translation t ~ N(0, shift_std² I).

    Args:
        det: as :func:`random_orthogonal` (−1: every draw includes a reflection).
        shift_std: the standard deviation of each coordinate of the translation (0: none).
    """
    shift_std = check_number(shift_std, "shift_std", 0.0)
    generator = as_generator(generator)
    matrix = random_orthogonal(dim, generator, det)
    shift = torch.randn(dim, generator=generator, dtype=torch.float64, device=generator.device)
    return Isometry(matrix, shift * shift_std)


def on_field(name: str, transform: Transform) -> Transform:
    """Apply ``transform`` to the field ``name`` of a dataclass (a batch), the rest unchanged:
    ``on_field("pos", random_isometry(3, seed))`` moves a molecule batch's atoms."""

    def apply(batch: Any) -> Any:
        return dataclasses.replace(batch, **{name: transform(getattr(batch, name))})

    return apply


def random_permutation(n: int, generator: torch.Generator | int = 0) -> torch.Tensor:
    """A uniformly random permutation of ``range(n)`` that is not the identity (for n > 1).

    Args:
        n: the number of elements.
        generator: a ``torch.Generator`` (the permutation is drawn on its device), or the seed
            of a fresh CPU one (default 0): randomness is explicit, never the global generator.
    """
    generator = as_generator(generator)
    while True:
        perm = torch.randperm(n, generator=generator, device=generator.device)
        if n < 2 or not torch.equal(perm, torch.arange(n, device=perm.device)):
            return perm
