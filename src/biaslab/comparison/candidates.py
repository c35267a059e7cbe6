"""Which architectures to compare on a kind of data, and the prior each one brings.

The workshop's decision guide (Day 4, "which architecture for which data"), as candidates:

    kind       candidates (name: prior)
    table      gradient-boosted trees: axis-aligned splits; linear model: the target is a
               linear function of the inputs; k-nearest neighbours: similar inputs have similar
               targets; MLP: none beyond smoothness
    image      linear model and k-nearest neighbours on the flattened image; MLP; CNN: locality
               and translation equivariance; CNN + augmentation: the same, plus invariance to
               small shifts taught by shifted copies
    sequence   MLP; 1-D CNN: local patterns anywhere in time; GRU: order, a carried state;
               Transformer: content-dependent relevance, order from positions
    set        Deep Sets: permutation invariance; Transformer without positions: permutation
               invariance with interactions between elements
    graph      GCN: permutation invariance, a node read from its neighbours' degree-normalised
               average; GAT: the same with learned attention over neighbours; MPNN: messages
               that read the edge (bond) features; graph Transformer: every node attends to every
               other, edges as attention bias
    molecule   fingerprint trees and MLP: a fixed substructure fingerprint (Morgan bits), the
               chemist's features; the graph models on the atoms and bonds; EGNN (when 3-D
               coordinates are given): E(3) invariance, distances and not coordinates

A scientist's own model joins them through :mod:`biaslab.comparison.user_models`
(``"module:factory"`` or ``"path/file.py:factory"``), where a candidate is also tried once on a
small batch so that a broken factory is one line before any training. The models and their sizes are in
:mod:`biaslab.comparison.models` and, for graphs and molecules, :mod:`biaslab.comparison.graph_models`.

A :class:`Candidate` holds ``name``, ``prior`` (in plain words), ``engine`` (torch or sklearn),
``build(input_shape, n_outputs, task)``, ``augment``, ``takes_mask`` and what it ``reads`` (x,
graph, geometry, fingerprint or counts); :func:`candidates_for` gives a kind's (EGNN only when
coordinates are given), and :func:`slug` a candidate's name in metric keys and tags. The table's
trees are scikit-learn's HistGradientBoosting (``random_state=0``), its linear model
``LogisticRegression`` / ``Ridge``, its neighbours ``KNeighbors*`` (k = 5); the image's
augmentation shifts by up to 1/8 of the side, edges repeated
(:func:`~biaslab.comparison.models.random_shifts`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import torch

from biaslab.comparison import graph_models, models
from biaslab.errors import ConfigError
from biaslab.formatting import quoted

__all__ = ["Candidate", "Reads", "RegressionLoss", "Task", "candidates_for", "slug"]

Task = Literal["classify", "regress"]
Reads = Literal["x", "graph", "geometry", "fingerprint", "counts"]
RegressionLoss = Literal["mse", "l1"]  # the protocol's loss on standardized regression targets


@dataclass(frozen=True)
class Candidate:
    """One architecture offered for a kind of data, with the prior it encodes.

    Attributes:
        name: shown in the leaderboard: ``"MLP"``, ``"CNN"``, ``"CNN + augmentation"``, ...
        prior: the inductive bias in plain words: ``"locality and translation equivariance"``.
        engine: ``"torch"`` or ``"sklearn"``.
        build: ``build(input_shape, n_outputs, task)``; ``input_shape`` is one example's shape
            (``(F,)`` table, ``(C, H, W)`` image, ``(T, F)`` sequence, ``(S, F)`` set) and
            ``n_outputs`` the number of classes (classify) or 1 (regress). ``torch``: a fresh
            ``nn.Module`` mapping ``(N, *input_shape)`` (sets: and a mask ``(N, S)``, as
            ``model(x, mask)``) to ``(N, n_outputs)``; ``sklearn``: an unfitted estimator taking
            ``x.reshape(N, -1)``.
        augment: ``augment(x, generator)``, a training-time transform of a batch of inputs
            (random shifts for ``CNN + augmentation``), or None.
        takes_mask: the model is called as ``model(x, mask)`` (sets).
        reads: what the model takes: ``"x"`` the arrays above (default); ``"graph"`` a batch of
            graphs (``input_shape`` is ``(F,)``, the node features;
            :mod:`~biaslab.comparison.graph_models`); ``"geometry"`` the same with 3-D
            coordinates; ``"fingerprint"`` a molecule's Morgan bits as a table row
            (``input_shape`` ``(2048,)``); ``"counts"`` its counts of atoms and bonds (QM9,
            ``(49,)``).
        source: a user's model, the ``"module:factory"`` or ``"file.py:factory"`` it was given
            as (what rebuilds it from a saved comparison); "" for the guide's.
    """

    name: str
    prior: str
    engine: Literal["torch", "sklearn"]
    build: Callable[[tuple[int, ...], int, Task], Any]
    augment: Callable[[torch.Tensor, torch.Generator], torch.Tensor] | None = None
    takes_mask: bool = False
    reads: Reads = "x"
    source: str = ""


NO_PRIOR = "none beyond smoothness: every input position independent"
LOCALITY = "locality and translation equivariance"
PERMUTATION = "permutation invariance"
FINGERPRINT = "a fixed substructure fingerprint (Morgan bits): the chemist's features"

_MLP = Candidate("MLP", NO_PRIOR, "torch", models.mlp)
_LINEAR = Candidate(
    "linear model",
    "the target is a linear function of the inputs (the class scores, to classify)",
    "sklearn",
    models.linear_model,
)
_NEIGHBOURS = Candidate(
    "k-nearest neighbours",
    "similar inputs, in the raw metric (Euclidean on standardized inputs), have similar targets",
    "sklearn",
    models.nearest_neighbours,
)
_GRAPH_MODELS = (
    Candidate(
        "GCN",
        f"{PERMUTATION}; each node is read from its neighbours (degree-normalised averages)",
        "torch",
        graph_models.gcn,
        reads="graph",
    ),
    Candidate(
        "GAT",
        f"{PERMUTATION}; a node reads its neighbours with learned attention weights",
        "torch",
        graph_models.gat,
        reads="graph",
    ),
    Candidate(
        "MPNN",
        f"{PERMUTATION}; messages that read the bond (edge) features, a learned readout",
        "torch",
        graph_models.mpnn,
        reads="graph",
    ),
    Candidate(
        "graph Transformer",
        f"{PERMUTATION}; every atom attends to every other, bonds as attention bias",
        "torch",
        graph_models.graph_transformer,
        reads="graph",
    ),
)
_GUIDE: dict[str, tuple[Candidate, ...]] = {
    "table": (
        Candidate(
            "gradient-boosted trees",
            "axis-aligned splits, no smoothness assumed",
            "sklearn",
            models.gradient_boosted_trees,
        ),
        _LINEAR,
        _NEIGHBOURS,
        _MLP,
    ),
    "image": (
        _LINEAR,
        _NEIGHBOURS,
        _MLP,
        Candidate("CNN", LOCALITY, "torch", models.image_cnn),
        Candidate(
            "CNN + augmentation",
            f"{LOCALITY}, plus invariance to small shifts taught by shifted copies",
            "torch",
            models.image_cnn,
            augment=models.random_shifts,
        ),
    ),
    "sequence": (
        _MLP,
        Candidate(
            "1-D CNN",
            f"{LOCALITY} along the sequence: local patterns anywhere",
            "torch",
            models.sequence_cnn,
        ),
        Candidate("GRU", "order: a state carried along the sequence", "torch", models.sequence_gru),
        Candidate(
            "Transformer",
            "content-dependent relevance between steps, order from positional encodings",
            "torch",
            models.sequence_transformer,
        ),
    ),
    "set": (
        Candidate("Deep Sets", PERMUTATION, "torch", models.deep_sets, takes_mask=True),
        Candidate(
            "Transformer without positions",
            f"{PERMUTATION}, with learned interactions between elements",
            "torch",
            models.set_transformer,
            takes_mask=True,
        ),
    ),
    "graph": _GRAPH_MODELS,
    "molecule": (
        Candidate(
            "fingerprint trees",
            f"{FINGERPRINT}; axis-aligned splits on them",
            "sklearn",
            graph_models.fingerprint_trees,
            reads="fingerprint",
        ),
        Candidate(
            "fingerprint MLP",
            f"{FINGERPRINT}; smooth in them",
            "torch",
            graph_models.fingerprint_mlp,
            reads="fingerprint",
        ),
        *_GRAPH_MODELS,
    ),
}
_EGNN = Candidate(
    "EGNN",
    "E(3) invariance: distances, not coordinates (and permutation invariance over the atoms)",
    "torch",
    graph_models.egnn,
    reads="geometry",
)


def candidates_for(kind: str, *, task: Task, has_positions: bool = False) -> list[Candidate]:
    """The decision guide: the candidates whose priors can fit ``kind`` of data.

    Args:
        kind: ``table``, ``image``, ``sequence``, ``set``, ``graph`` or ``molecule``
            (``UserData.kind``).
        task: ``classify`` or ``regress``; the candidates are the same, each ``build`` takes it.
        has_positions: the molecules carry 3-D coordinates (``UserData.positions``): EGNN joins
            the molecule candidates; unused for other kinds.

    Returns:
        A new list, in the order the leaderboard shows them (the simplest prior first, except
        for tables and molecules, where the trees lead).

    Raises:
        ConfigError: an unknown kind or task.
    """
    if task not in ("classify", "regress"):
        raise ConfigError(f"unknown task {quoted(task)}; choose classify or regress")
    if kind not in _GUIDE:
        raise ConfigError(f"unknown kind {quoted(kind)}; choose one of {', '.join(_GUIDE)}")
    geometric = [_EGNN] if kind == "molecule" and has_positions else []
    return [*_GUIDE[kind], *geometric]


def slug(name: str) -> str:
    """A candidate's name in metric keys and training tags: ``CNN + augmentation`` -> ``cnn-augmentation``."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "model"
