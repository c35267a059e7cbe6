"""What a learned embedding table shows: analogies by rank (Mikolov et al. 2013, the vector offset),
and the circles of a cyclic group.

An analogy "a is to b as c is to d" holds in a table E when the offset that leads from a to b also
leads from c to d: E[d] ≈ E[b] − E[a] + E[c]. It is measured by the *rank* of the true d among all
symbols, by cosine similarity to that query, the three symbols of the question left out as in
word2vec's evaluation: rank 1 is a perfect answer, a random table ranks d about halfway.

Symbols with a cyclic structure (residues modulo p, learned from their sums) are not placed along
offsets but around circles: a network that adds modulo p represents n by cos and sin of 2π f n / p
for a few frequencies f (Nanda et al. 2023). :func:`cyclic_plane` finds the table's dominant
frequency by the discrete Fourier transform over the symbols,

    F_f = Σ_n (E_n − Ē) e^{−2πi f n / p},        f* = argmax_f ‖F_f‖²,

and projects the rows on the plane spanned by Re F_{f*} and Im F_{f*}. There, adding k is a
rotation, and an analogy a : b :: c : d is answered by turning c by the angle from a to b
(:func:`rotation_analogy_ranks`).

:func:`cosine_neighbours` gives each row's nearest rows by cosine; :func:`analogy_ranks` equals a
loop over the candidates, and a random table ranks about halfway (tested); a circle is found at
its frequency and answers every rotation analogy first (tested).
"""

from __future__ import annotations

import torch

__all__ = ["analogy_ranks", "cosine_neighbours", "cyclic_plane", "rotation_analogy_ranks"]


def _unit_rows(table: torch.Tensor) -> torch.Tensor:
    return table / table.norm(dim=1, keepdim=True).clamp_min(1e-12)  # (V, D), each row of length 1


def cosine_neighbours(table: torch.Tensor, k: int = 1) -> torch.Tensor:
    """For each row, the ``k`` other rows nearest by cosine similarity.

    Shapes:
        ``table`` ``(V, D)`` -> ``(V, k)`` int64.
    """
    unit = _unit_rows(table)
    similarity = unit @ unit.T  # (V, V)
    similarity.fill_diagonal_(-torch.inf)  # a symbol is not its own neighbour
    return similarity.topk(k, dim=1).indices


def analogy_ranks(table: torch.Tensor, questions: torch.Tensor) -> torch.Tensor:
    """The rank (1 = best) of each question's answer d among the symbols, by the cosine
    similarity of its row to E[b] − E[a] + E[c]; a, b and c themselves are not candidates.

    Shapes:
        ``table`` ``(V, D)``, ``questions`` ``(Q, 4)`` int64 rows (a, b, c, d) -> ``(Q,)`` int64.
    """
    if table.dim() != 2 or questions.dim() != 2 or questions.size(1) != 4:
        raise ValueError(
            f"expected a table (V, D) and questions (Q, 4), got {tuple(table.shape)} and "
            f"{tuple(questions.shape)}"
        )
    unit = _unit_rows(table)
    a, b, c, d = questions.unbind(1)
    query = unit[b] - unit[a] + unit[c]  # (Q, D)
    similarity = (query / query.norm(dim=1, keepdim=True).clamp_min(1e-12)) @ unit.T  # (Q, V)
    rows = torch.arange(len(questions))
    for asked in (a, b, c):
        similarity[rows, asked] = -torch.inf  # the question's own symbols are not answers
    answer = similarity[rows, d]  # (Q,)
    return (similarity > answer[:, None]).sum(dim=1) + 1


def cyclic_plane(table: torch.Tensor) -> tuple[int, torch.Tensor]:
    """The dominant frequency f* (1..p // 2) of the rows E_0 … E_{p−1} and the rows projected on
    the plane of Re F_{f*} and Im F_{f*} (orthonormalised), float64.

    Shapes:
        ``table`` ``(p, D)`` -> (f*, ``(p, 2)``).
    """
    p = len(table)
    if table.dim() != 2 or p < 3:
        raise ValueError(f"expected a table (p, D) of at least 3 symbols, got {tuple(table.shape)}")
    centred = table.double() - table.double().mean(dim=0)  # (p, D)
    spectrum = torch.fft.fft(centred, dim=0)  # (p, D) complex: F_f for f = 0..p−1
    power = spectrum.abs().pow(2).sum(dim=1)[1 : p // 2 + 1]  # ‖F_f‖², f = 1..p // 2
    frequency = int(power.argmax()) + 1
    basis, _ = torch.linalg.qr(
        torch.stack([spectrum[frequency].real, spectrum[frequency].imag], dim=1)
    )  # (D, 2)
    return frequency, centred @ basis  # (p, D) @ (D, 2) -> (p, 2)


def rotation_analogy_ranks(points: torch.Tensor, questions: torch.Tensor) -> torch.Tensor:
    """The rank (1 = best) of each answer d among the symbols by the angular distance of its point
    to c turned by the angle from a to b; a, b and c themselves are not candidates.

    Shapes:
        ``points`` ``(V, 2)``, ``questions`` ``(Q, 4)`` int64 rows (a, b, c, d) -> ``(Q,)`` int64.
    """
    if points.dim() != 2 or points.size(1) != 2 or questions.dim() != 2 or questions.size(1) != 4:
        raise ValueError(f"expected points (V, 2) and questions (Q, 4), got {tuple(points.shape)} and "
                         f"{tuple(questions.shape)}")  # fmt: skip
    angle = torch.atan2(points[:, 1], points[:, 0])  # (V,)
    a, b, c, d = questions.unbind(1)
    target = angle[c] + angle[b] - angle[a]  # (Q,)
    gap = torch.remainder(angle[None, :] - target[:, None] + torch.pi, 2 * torch.pi) - torch.pi  # (Q, V)
    distance = gap.abs()
    rows = torch.arange(len(questions))
    for asked in (a, b, c):
        distance[rows, asked] = torch.inf
    return (distance < distance[rows, d][:, None]).sum(dim=1) + 1
