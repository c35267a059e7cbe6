"""What a learned embedding table shows: analogies by rank (Mikolov et al. 2013, the vector offset).

An analogy "a is to b as c is to d" holds in a table E when the offset that leads from a to b also
leads from c to d: E[d] ≈ E[b] − E[a] + E[c]. It is measured by the *rank* of the true d among all
symbols, by cosine similarity to that query, the three symbols of the question left out as in
word2vec's evaluation: rank 1 is a perfect answer, a random table ranks d about halfway.
"""

from __future__ import annotations

import torch

__all__ = ["analogy_ranks"]


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
    unit = table / table.norm(dim=1, keepdim=True).clamp_min(1e-12)  # (V, D)
    a, b, c, d = questions.unbind(1)
    query = unit[b] - unit[a] + unit[c]  # (Q, D)
    similarity = (query / query.norm(dim=1, keepdim=True).clamp_min(1e-12)) @ unit.T  # (Q, V)
    rows = torch.arange(len(questions))
    for asked in (a, b, c):
        similarity[rows, asked] = -torch.inf  # the question's own symbols are not answers
    answer = similarity[rows, d]  # (Q,)
    return (similarity > answer[:, None]).sum(dim=1) + 1
