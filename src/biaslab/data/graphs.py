"""Synthetic graphs whose labels depend on the neighbourhood: the contextual stochastic block model.

In a contextual SBM (Deshpande et al. 2018) each node has a class, edges join nodes of the same
class with probability ``p_in`` and of different classes with ``p_out`` (homophily when
p_in > p_out), and each node's features are a class mean plus Gaussian noise. With weak
features a model that sees each node alone (an MLP) is little better than chance, while a model
that averages over neighbours (message passing) denoises the features with the graph: the
inductive bias that labels are smooth over the graph.

:func:`contextual_sbm` returns a torch-geometric ``Data``; :func:`split_masks` draws the node
masks of the training, validation and test nodes. :func:`relay_paths` is a graph whose labels
need a known number of hops: k rounds of message passing see exactly k hops.
"""

from __future__ import annotations

import numpy as np
import torch

from biaslab.checks import is_integer
from biaslab.errors import BiaslabError

__all__ = ["contextual_sbm", "relay_paths", "split_masks"]


def contextual_sbm(
    n: int = 1000,
    classes: int = 2,
    average_degree: float = 8.0,
    homophily: float = 0.9,
    feature_dim: int = 16,
    signal: float = 0.3,
    seed: int = 0,
):
    """A contextual stochastic block model as a torch-geometric ``Data`` graph.

    Args:
        n: nodes, spread evenly over the classes (in random order).
        classes: number of classes (at least 2).
        average_degree: expected number of neighbours of a node.
        homophily: expected share of a node's edges that join its own class (1/classes: none).
        feature_dim: node feature dimension.
        signal: distance of each class mean from the origin, in units of the noise's standard
            deviation per dimension spread over all dimensions (0: features carry no label).
        seed: random seed.

    Returns:
        ``Data(x, y, edge_index)``: x float32 (n, feature_dim), y int64 (n,), edge_index int64
        (2, E) undirected (both directions stored), no self-loops.
    """
    from torch_geometric.data import Data

    if not is_integer(classes) or classes < 2:
        raise BiaslabError(f"classes must be an integer >= 2, got {classes!r}")
    if not n >= 2 * classes:
        raise BiaslabError(f"n must be at least 2 per class ({2 * classes}), got {n}")
    if not 0 < average_degree < n - 1:
        raise BiaslabError(f"average_degree must be in (0, {n - 1}), got {average_degree}")
    if not 0 <= homophily <= 1:
        raise BiaslabError(f"homophily must be in [0, 1], got {homophily}")
    rng = np.random.default_rng(seed)
    y = rng.permutation(np.arange(n) % classes)
    same = y[:, None] == y[None, :]  # (n, n)
    n_same = n / classes - 1  # expected same-class partners of a node
    n_other = n - 1 - n_same
    p_in = min(1.0, homophily * average_degree / n_same)
    p_out = min(1.0, (1 - homophily) * average_degree / n_other)
    upper = np.triu(rng.random((n, n)) < np.where(same, p_in, p_out), k=1)  # each pair once
    source, target = np.nonzero(upper)
    edge_index = np.concatenate([np.stack([source, target]), np.stack([target, source])], axis=1)
    directions = rng.normal(size=(classes, feature_dim))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    means = signal * np.sqrt(feature_dim) * directions  # (classes, feature_dim)
    x = means[y] + rng.normal(size=(n, feature_dim))
    return Data(
        x=torch.from_numpy(x.astype(np.float32)),
        y=torch.from_numpy(y.astype(np.int64)),
        edge_index=torch.from_numpy(edge_index.astype(np.int64)),
    )


def split_masks(n: int, train: float = 0.5, val: float = 0.25, seed: int = 0):
    """Boolean node masks ``(train, val, test)`` from a seeded permutation; test takes the rest."""
    if not (0 < train and 0 <= val and train + val < 1):
        raise BiaslabError(f"train={train} and val={val} must be positive fractions summing below 1")
    order = np.random.default_rng(seed).permutation(n)
    n_train, n_val = round(train * n), round(val * n)
    masks = []
    for part in (order[:n_train], order[n_train : n_train + n_val], order[n_train + n_val :]):
        mask = torch.zeros(n, dtype=torch.bool)
        mask[torch.from_numpy(part)] = True
        masks.append(mask)
    return tuple(masks)


def relay_paths(paths: int, hops: int, classes: int, seed: int = 0):
    """``paths`` disjoint paths of ``hops + 1`` nodes; node 0 of each (the source) carries its
    path's class as a one-hot feature, every node a constant 1, and every node is labelled with
    its path's class: the node at the far end can only learn it from ``hops`` steps away.

    Returns:
        ``Data(x, y, edge_index, position)``: x float32 (N, classes + 1), y int64 (N,),
        edge_index int64 (2, E) with both directions, position int64 (N,) the distance from the
        source, N = ``paths * (hops + 1)``; classes balanced, shuffled by ``seed``.
    """
    from torch_geometric.data import Data

    for name, value, low in (("paths", paths, 1), ("hops", hops, 1), ("classes", classes, 2)):
        if not is_integer(value) or value < low:
            raise BiaslabError(f"{name}={value!r}: give a whole number >= {low}")
    length = hops + 1
    label = np.random.default_rng(seed).permutation(np.arange(paths) % classes)  # (paths,)
    y = np.repeat(label, length)  # (N,): every node its path's class
    position = np.tile(np.arange(length), paths)  # (N,)
    x = np.zeros((paths * length, classes + 1), dtype=np.float32)
    x[:, -1] = 1.0
    x[position == 0, label] = 1.0  # the source's one-hot class
    start = np.arange(paths) * length
    left = (start[:, None] + np.arange(hops)[None, :]).ravel()  # (paths * hops,)
    edges = np.stack([np.concatenate([left, left + 1]), np.concatenate([left + 1, left])])  # both ways
    return Data(
        x=torch.from_numpy(x),
        y=torch.from_numpy(y.astype(np.int64)),
        edge_index=torch.from_numpy(edges.astype(np.int64)),
        position=torch.from_numpy(position.astype(np.int64)),
    )
