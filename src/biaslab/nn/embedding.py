"""Embeddings: a learned lookup table, which is a linear layer applied to one-hot vectors.

A vocabulary of V symbols (words, residues, entities) gets a table E of V rows of D numbers each;
symbol i is represented by its row,

    embed(i) = E[i] = onehot(i) · E          onehot(i) ∈ {0, 1}^V, one 1 at position i

so an embedding is exactly a bias-free linear layer on one-hot inputs, computed without the
V-long multiplication. Its gradient follows: ∂L/∂E = onehot(i)ᵀ · ∂L/∂embed(i), the incoming
gradient added into row i alone (rows of symbols not in the batch get none). Nothing in E is
given: what structure the rows show (neighbours, directions, a circle) is learned from the task.

:class:`Embedding` equals its one-hot product (``as_one_hot_product``) in values and gradients,
and ``torch.nn.Embedding``; :class:`SymbolPairModel` reads two symbols through one table, then an
MLP; :class:`OneHotInputs` feeds integer symbols, one-hot, to a model that reads vectors (a
recurrent network). Neighbours by cosine are :func:`biaslab.evaluate.embeddings.cosine_neighbours`.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["Embedding", "OneHotInputs", "SymbolPairModel"]


class Embedding(nn.Module):
    """A table of ``symbols`` rows of ``dim`` learned numbers, read by index.

    Args:
        symbols: V, the size of the vocabulary.
        dim: D, the numbers per symbol.

    Shapes:
        ``index`` ``(*)`` int64 in 0..V−1 -> ``(*, D)``; ``weight`` E ``(V, D)``, initialised
        N(0, 1) as ``torch.nn.Embedding``'s.
    """

    def __init__(self, symbols: int, dim: int):
        super().__init__()
        if symbols < 1 or dim < 1:
            raise ValueError(f"symbols and dim must be at least 1, got {symbols} and {dim}")
        self.symbols, self.dim = symbols, dim
        self.weight = nn.Parameter(torch.empty(symbols, dim))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.normal_(self.weight)

    def _check(self, index: torch.Tensor) -> None:
        if index.dtype not in (torch.int64, torch.int32):
            raise ValueError(f"embedding indices must be integers, got {index.dtype}")
        if index.numel() and (index.min() < 0 or index.max() >= self.symbols):
            low, high = int(index.min()), int(index.max())
            raise ValueError(f"embedding indices must lie in 0..{self.symbols - 1}, got {low}..{high}")

    def forward(self, index: torch.Tensor) -> torch.Tensor:
        self._check(index)
        return self.weight[index]  # E[i]: (*) -> (*, D)

    def as_one_hot_product(self, index: torch.Tensor) -> torch.Tensor:
        """onehot(i) · E, the same numbers by the V-long product (for teaching and tests)."""
        self._check(index)
        one_hot = nn.functional.one_hot(index.long(), self.symbols).to(self.weight.dtype)  # (*, V)
        return one_hot @ self.weight  # (*, V) @ (V, D) -> (*, D)

    def extra_repr(self) -> str:
        return f"{self.symbols}, {self.dim}"


class SymbolPairModel(nn.Module):
    """Reads two symbols through one shared table and classifies the pair: y = MLP([E[a], E[b]]),
    e.g. (a + b) mod p from a and b.

    Args:
        symbols: V, the vocabulary (both positions share it).
        dim: D, the numbers per symbol.
        hidden: the width of the MLP's hidden layer.
        classes: outputs.

    Shapes:
        ``pairs`` ``(N, 2)`` int64 -> ``(N, classes)``.
    """

    def __init__(self, symbols: int, dim: int, hidden: int, classes: int):
        super().__init__()
        self.embedding = Embedding(symbols, dim)
        self.mlp = nn.Sequential(nn.Linear(2 * dim, hidden), nn.ReLU(), nn.Linear(hidden, classes))

    def forward(self, pairs: torch.Tensor) -> torch.Tensor:
        if pairs.dim() != 2 or pairs.size(1) != 2:
            raise ValueError(f"expected pairs of symbols (N, 2), got shape {tuple(pairs.shape)}")
        both = self.embedding(pairs)  # (N, 2, D)
        return self.mlp(both.flatten(1))  # (N, 2, D) -> (N, 2 D) -> (N, classes)


class OneHotInputs(nn.Module):
    """``model(onehot(tokens))``: integer symbols as one-hot vectors, for a model that reads vectors.

    Shapes:
        tokens ``(N, T)`` -> one-hot ``(N, T, vocab)`` -> whatever ``model`` returns.
    """

    def __init__(self, model: nn.Module, vocab: int):
        super().__init__()
        self.model, self.vocab = model, vocab

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.model(nn.functional.one_hot(tokens, self.vocab).float())  # (N, T, vocab)
