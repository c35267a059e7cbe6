"""Synthetic sequence tasks whose difficulty is a dial: how far back the answer lies, and whether
it is found by position or by content.

* :func:`adding_problem` (Hochreiter & Schmidhuber 1997): T random numbers, two of them marked;
  the target is their sum. The first mark lies in the first half, so the information needed
  travels up to T steps — the classic test of vanishing gradients in recurrent networks.
* :func:`recall_task`: T random symbols; the target is the one at position 0, so the answer is
  exactly T − 1 steps back (chance accuracy 1 / vocab).
* :func:`retrieval_task`: key–value pairs followed by a query key; the target is the value
  paired with the query. The answer is found by *content*, wherever it sits: what attention's
  learned, content-dependent relevance is for.

Each generator takes an explicit ``seed`` (``np.random.default_rng``) and returns torch tensors.

:func:`retrieval_match` finds the position of the pair whose key the query names (equal to a
loop over the pairs, tested); the retrieval task's tokens come paired or interleaved.
"""

from __future__ import annotations

import numpy as np
import torch

from biaslab.checks import is_integer
from biaslab.errors import BiaslabError

__all__ = ["ADDING_TOLERANCE", "adding_problem", "recall_task", "retrieval_task", "retrieval_vocabulary"]

ADDING_TOLERANCE = 0.04  # an adding-problem answer counts as right within this (Le et al. 2015)


def _check(name: str, value: int, least: int) -> None:
    if not is_integer(value) or value < least:
        raise BiaslabError(f"{name} must be an integer >= {least}, got {value!r}")


def adding_problem(n: int, length: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """The adding problem: the sum of the two marked numbers of a sequence.

    Args:
        n: number of sequences.
        length: T, the sequence length (at least 2).
        seed: random seed.

    Returns:
        ``(x, y)``: x float32 (n, T, 2) — channel 0 the numbers, uniform in [0, 1), channel 1
        the marks (exactly two ones: one in the first half, one in the second); y float32 (n,)
        the sum of the two marked numbers, in [0, 2). Predicting 1 always gives MSE 1/6.
    """
    _check("n", n, 1)
    _check("length", length, 2)
    rng = np.random.default_rng(seed)
    values = rng.random((n, length)).astype(np.float32)
    half = length // 2
    first = rng.integers(0, half, n)
    second = rng.integers(half, length, n)
    marks = np.zeros((n, length), dtype=np.float32)
    rows = np.arange(n)
    marks[rows, first] = marks[rows, second] = 1.0
    x = np.stack([values, marks], axis=-1)  # (n, T, 2)
    y = values[rows, first] + values[rows, second]
    return torch.from_numpy(x), torch.from_numpy(y)


def recall_task(n: int, length: int, vocab: int = 8, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Recall the first symbol of a sequence after ``length − 1`` distractors.

    Args:
        n: number of sequences.
        length: T, the sequence length (at least 2).
        vocab: the number of symbols (at least 2); chance accuracy is 1 / vocab.
        seed: random seed.

    Returns:
        ``(tokens, y)``: tokens int64 (n, T) in 0..vocab−1, y int64 (n,) = tokens[:, 0].
    """
    _check("n", n, 1)
    _check("length", length, 2)
    _check("vocab", vocab, 2)
    tokens = np.random.default_rng(seed).integers(0, vocab, (n, length))
    return torch.from_numpy(tokens), torch.from_numpy(tokens[:, 0].copy())


def retrieval_task(
    n: int, pairs: int = 4, keys: int = 16, values: int = 16, seed: int = 0, paired: bool = True
) -> tuple[torch.Tensor, torch.Tensor]:
    """Content-based retrieval: key–value pairs, then a query key → the value paired with it.

    Keys are distinct within a sequence and the query is one of them, drawn uniformly; values
    are drawn independently.

    * ``paired=True`` (default): one token per pair, id ``key·values + value`` (ids
      ``0..keys·values−1``), then the query token, id ``keys·values + key``: length P + 1 over a
      vocabulary of ``keys·(values + 1)``. One attention layer solves it: the query attends to
      the pair whose key matches and reads its value.
    * ``paired=False``: ``k_1 v_1 k_2 v_2 … k_P v_P q`` with keys ``0..keys−1`` and values
      ``keys..keys+values−1``: length 2P + 1 over ``keys + values``. The value now sits one
      position after its key, so a model must also use order (two layers and positions; a
      2-layer Transformer reached only ~31% here in 20 epochs).

    Args:
        n: number of sequences.
        pairs: P, key–value pairs per sequence (1..keys).
        keys: the size of the key vocabulary.
        values: the size of the value vocabulary; chance accuracy is 1 / values.
        seed: random seed.
        paired: the token layout (see above).

    Returns:
        ``(tokens, y)``: tokens int64 (n, P + 1) or (n, 2P + 1), y int64 (n,) in 0..values−1.
    """
    _check("n", n, 1)
    _check("keys", keys, 1)
    _check("values", values, 2)
    _check("pairs", pairs, 1)
    if pairs > keys:
        raise BiaslabError(f"pairs={pairs} needs at least as many distinct keys, got keys={keys}")
    rng = np.random.default_rng(seed)
    key_ids = np.argsort(rng.random((n, keys)), axis=1)[:, :pairs]  # (n, P) distinct keys
    value_ids = rng.integers(0, values, (n, pairs))  # (n, P)
    asked = rng.integers(0, pairs, n)
    rows = np.arange(n)
    query = key_ids[rows, asked]
    if paired:
        tokens = np.concatenate([key_ids * values + value_ids, (keys * values + query)[:, None]], axis=1)
    else:
        tokens = np.empty((n, 2 * pairs + 1), dtype=np.int64)
        tokens[:, 0:-1:2] = key_ids
        tokens[:, 1:-1:2] = keys + value_ids
        tokens[:, -1] = query
    answers = value_ids[rows, asked].astype(np.int64)
    return torch.from_numpy(tokens.astype(np.int64)), torch.from_numpy(answers)


def retrieval_match(tokens: torch.Tensor, keys: int, values: int, paired: bool = True) -> torch.Tensor:
    """Where the key the query asks for sits in each :func:`retrieval_task` sequence: the position
    of the pair token whose key matches the query (``paired=True``), or of the matching key token
    (``paired=False``; its value follows it). This is the position a content-based lookup must
    attend to.

    Args:
        tokens: sequences of :func:`retrieval_task` made with the same ``keys``, ``values`` and
            ``paired``.
        keys: the size of the key vocabulary.
        values: the size of the value vocabulary.
        paired: the token layout.

    Shapes:
        tokens (N, P + 1) or (N, 2P + 1) -> (N,) int64 positions in 0..P−1 (paired) or the even
        positions 0..2P−2 (interleaved).
    """
    if tokens.dim() != 2 or tokens.is_floating_point() or tokens.size(1) < 2:
        raise ValueError(
            f"tokens must be integer sequences (N, T), T >= 2, got {tokens.dtype} {tuple(tokens.shape)}"
        )
    if paired:
        stored, query, step = tokens[:, :-1] // values, tokens[:, -1] - keys * values, 1  # (N, P), (N,)
    else:
        stored, query, step = tokens[:, 0:-1:2], tokens[:, -1], 2
    hits = stored == query[:, None]  # (N, P)
    if not (hits.sum(1) == 1).all():
        raise ValueError(
            "each sequence must hold its query's key exactly once: are keys, values and paired those "
            "the tokens were made with?"
        )
    return hits.long().argmax(1) * step


def retrieval_vocabulary(keys: int, values: int, paired: bool = True) -> int:
    """The number of token ids :func:`retrieval_task` uses with these sizes."""
    return keys * (values + 1) if paired else keys + values
