"""The models ``biaslab compare`` offers, built from :mod:`biaslab.nn` and sized from one example.

Every builder has the signature a :class:`~biaslab.comparison.candidates.Candidate` holds,
``build(input_shape, n_outputs, task)``: ``input_shape`` is one example's shape (no batch axis)
and the model maps a batch ``(N, *input_shape)`` to ``(N, n_outputs)`` (class scores, or
``(N, 1)`` for a regression). The sizes are modest on purpose: each model trains in seconds on
a few thousand examples on a CPU (hidden widths 64-128). Nothing here re-implements a layer: the
two wrappers below only move an axis or turn a mask around before a library model.

Sizes, with parameters for 10 classes (measured with ``biaslab.nn.count_parameters``):

    builder                 model                                            parameters
    mlp                     flatten, 2 hidden layers of 128, ReLU            118,282 (1×28×28), 26,122
                                                                             (1×8×8), 20,490 (20 features)
    image_cnn               3×3 conv blocks of 32, 64, 64 channels, each     60,554 (1×28×28: 28, 14, 7, 3),
                            with 2×2 max pooling (2 blocks below 16 pixels,  23,626 (1×8×8: 8, 4, 2)
                            1 below 8), global average pool, head 64 → K
    sequence_cnn            the same in 1-D along the steps, kernel 5        35,850 (40 steps × 1)
    sequence_gru            GRU with a state of 64, linear head              13,514 (40 × 1)
    sequence_transformer    width 64, 4 heads, 2 pre-norm blocks,            100,874 (40 × 1)
                            sinusoidal positions, mean pool, linear head
    deep_sets               φ 2 layers of 128, masked sum, ρ 128 → 128 → K   34,826 (12 elements × 3)
    set_transformer         the Transformer without positions, masked        101,002 (12 × 3)
    gradient_boosted_trees  scikit-learn's HistGradientBoosting, defaults,   (trees: up to 100
                            random_state=0                                   iterations of 31 leaves)
    linear_model            scikit-learn's LogisticRegression (L2, C = 1) /  (F + 1)·K weights
                            Ridge (α = 1) on the flattened example
    nearest_neighbours      scikit-learn's KNeighbors, k = 5, Euclidean on   (the training rows)
                            the standardized, flattened example

Measured here (2 CPU threads): an epoch of 3,000 28×28 images takes 0.03 s (MLP), 1.0 s (CNN),
1.2 s (CNN + augmentation); of 3,000 sequences of 40 steps 0.02 s (MLP), 0.14 s (1-D CNN),
0.35 s (GRU), 0.9 s (Transformer).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from biaslab.data.transforms import translate_each
from biaslab.nn import CNN, MLP, DeepSets, SequenceClassifier, TransformerConfig, TransformerEncoder
from biaslab.train.invariance import random_shifts as shifted_each

__all__ = [
    "HIDDEN",
    "TREES_RANDOM_STATE",
    "deep_sets",
    "gradient_boosted_trees",
    "image_cnn",
    "linear_model",
    "mlp",
    "nearest_neighbours",
    "random_shifts",
    "sequence_cnn",
    "sequence_gru",
    "sequence_transformer",
    "set_transformer",
]

HIDDEN = 128  # the MLPs' and Deep Sets' width
RECURRENT_HIDDEN = 64  # the GRU's state
MODEL_DIM = 64  # the Transformers' width: 4 heads of 16, 2 blocks
CONV_CHANNELS = (32, 64, 64)  # channels of up to three conv blocks
CONV_HEAD = (64,)  # the hidden layer of a CNN's head
TREES_RANDOM_STATE = 0  # scikit-learn's seed: the same trees on every run (it reads no torch seed)
LINEAR_MAX_ITER = (
    1000  # lbfgs's iterations for the logistic regression (scikit-learn's 100 stop short on images)
)
NEIGHBOURS = 5  # k of the nearest-neighbour candidate (scikit-learn's default)


def _shape(input_shape: Sequence[int], dims: int, what: str) -> tuple[int, ...]:
    """``input_shape`` as a tuple of ``dims`` positive ints, or a ValueError naming ``what``."""
    shape = tuple(int(s) for s in input_shape)
    if len(shape) != dims or min(shape) < 1:
        raise ValueError(f"{what} needs an input shape of {dims} positive sizes, got {shape}")
    return shape


def mlp(input_shape: Sequence[int], n_outputs: int, task: str) -> MLP:
    """An MLP on the flattened example: ``prod(input_shape)`` → 128 → 128 → ``n_outputs`` (ReLU).

    Shapes:
        ``(N, *input_shape)`` -> ``(N, n_outputs)`` (:class:`~biaslab.nn.MLP` flattens from dim 1).
    """
    width = math.prod(int(s) for s in input_shape)
    return MLP((width, HIDDEN, HIDDEN, n_outputs))


def gradient_boosted_trees(input_shape: Sequence[int], n_outputs: int, task: str):
    """scikit-learn's ``HistGradientBoostingClassifier`` (classify) or ``...Regressor``
    (regress) with its default settings and ``random_state=TREES_RANDOM_STATE`` (0): the
    protocol seeds torch, which scikit-learn does not read, so the trees are fixed by this
    constant (they draw only for early stopping's validation split, on above 10,000 rows).

    Shapes:
        fitted on ``x.reshape(N, -1)``; ``predict`` gives ``(N,)``, ``predict_proba`` ``(N, K)``.
    """
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

    estimator = HistGradientBoostingClassifier if task == "classify" else HistGradientBoostingRegressor
    return estimator(random_state=TREES_RANDOM_STATE)


def linear_model(input_shape: Sequence[int], n_outputs: int, task: str):
    """The strongest assumption a candidate makes: the target is a linear function of the inputs
    (the class scores, for a classifier). scikit-learn's ``LogisticRegression`` (classify: L2
    penalty, C = 1, lbfgs, up to 1,000 iterations) or ``Ridge`` (regress: α = 1), fitted on
    ``x.reshape(N, -1)`` (standardized, as every candidate reads it).

    Shapes:
        fitted on ``(N, prod(input_shape))``; ``predict`` gives ``(N,)``, ``predict_proba`` ``(N, K)``.
    """
    from sklearn.linear_model import LogisticRegression, Ridge

    return LogisticRegression(max_iter=LINEAR_MAX_ITER) if task == "classify" else Ridge(alpha=1.0)


def nearest_neighbours(input_shape: Sequence[int], n_outputs: int, task: str):
    """No fitted parameters at all: similar inputs have similar targets, "similar" read in the
    input's own metric (Euclidean on the standardized, flattened example). scikit-learn's
    ``KNeighborsClassifier`` / ``KNeighborsRegressor`` with k = ``NEIGHBOURS`` (5, its default),
    neighbours weighted equally.

    Shapes:
        fitted on ``(N, prod(input_shape))``; ``predict`` gives ``(N,)``, ``predict_proba`` ``(N, K)``.
    """
    from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor

    estimator = KNeighborsClassifier if task == "classify" else KNeighborsRegressor
    return estimator(n_neighbors=NEIGHBOURS)


def _conv_plan(length: int) -> tuple[tuple[int, ...], str | None]:
    """Channels and pooling for an input whose shortest side is ``length``: one block per
    halving that leaves at least 2 positions, between 1 and 3 blocks (8 → 2 blocks: 8, 4, 2;
    16 and larger → 3 blocks: 28, 14, 7, 3), no pooling for a side below 2."""
    blocks = min(3, max(1, int(math.log2(max(length, 1) / 2)))) if length >= 2 else 1
    return CONV_CHANNELS[:blocks], ("max" if length >= 2 else None)


def image_cnn(input_shape: Sequence[int], n_outputs: int, task: str) -> CNN:
    """A CNN for ``(C, H, W)`` images: 3×3 convolutions (``same`` padding) with ReLU and 2×2 max
    pooling, 32, 64, 64 channels (2 blocks for sides below 16, 1 below 8: see ``_conv_plan``), a
    global average pool and a head 64 → ``n_outputs``. 60,554 parameters for 1×28×28 and 10
    classes; the same count for any image size with 3 blocks.

    Shapes:
        ``(N, C, H, W)`` -> ``(N, n_outputs)``.
    """
    channels, height, width = _shape(input_shape, 3, "an image CNN")
    conv, pool = _conv_plan(min(height, width))
    return CNN(channels, conv, n_outputs, kernel_size=3, pool=pool, head=CONV_HEAD)


def random_shifts(x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Each image moved by its own random whole-pixel offset, up to 1/8 of its shorter side
    (at least 1 pixel: 1 for 8×8, 2 for 16×16, 3 for 28×28) along each axis, edges repeated
    into the pixels that enter the frame.

    Edge fill rather than a constant: after the protocol standardizes each channel, a blank
    pixel is no longer 0, and the border's own value is right for any scaling. Made with
    :func:`biaslab.train.invariance.random_shifts` (offsets drawn from ``generator``, which the
    call advances) on the batch padded by its edges (``replicate``), then cropped back, so no
    fill value ever reaches the kept frame.

    Shapes:
        ``(N, C, H, W)`` -> the same shape.
    """
    if x.dim() != 4:
        raise ValueError(f"random shifts need images (N, C, H, W), got shape {tuple(x.shape)}")
    shift = max(1, min(x.shape[-2:]) // 8)
    padded = F.pad(x, (shift, shift, shift, shift), mode="replicate")  # (N, C, H + 2s, W + 2s)
    return shifted_each(padded, generator, max_shift=shift)[..., shift:-shift, shift:-shift]


def random_shifts_of_members(x: torch.Tensor, generators: Sequence[torch.Generator]) -> torch.Tensor:
    """:func:`random_shifts` of each member's batch of a batched ensemble, member m's offsets
    drawn from ``generators[m]`` exactly as its own call draws them, the shifting done once for
    all members (a call per member per step cost 1 ms each on digits' CNN).

    Shapes:
        ``(M, N, C, H, W)`` (M members) -> the same shape.
    """
    if x.dim() != 5 or len(generators) != len(x):
        raise ValueError(f"expected (members, N, C, H, W) and one generator per member, got {tuple(x.shape)}")
    shift = max(1, min(x.shape[-2:]) // 8)
    flat = F.pad(x.flatten(0, 1), (shift, shift, shift, shift), mode="replicate")  # (M·N, C, H + 2s, W + 2s)
    offsets = torch.cat(
        [torch.randint(-shift, shift + 1, (x.shape[1], 2), generator=g, device=g.device) for g in generators]
    )  # (M·N, 2): as each member's random_shifts draws its own
    moved = translate_each(flat, offsets.to(x.device))[..., shift:-shift, shift:-shift]
    return moved.unflatten(0, x.shape[:2])  # (M, N, C, H, W)


# Augmentations with a form for all members of a batched ensemble at once (train.ensemble).
FOR_MEMBERS = {random_shifts: random_shifts_of_members}


class ChannelsFirst(nn.Module):
    """A 1-D model of ``(N, C, L)`` applied to sequences ``(N, T, F)``: the steps become the
    convolution's positions and the features its channels.

    Shapes:
        ``(N, T, F)`` -> ``model(x.transpose(1, 2))``.
    """

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x.transpose(1, 2))  # (N, T, F) -> (N, F, T)


def sequence_cnn(input_shape: Sequence[int], n_outputs: int, task: str) -> ChannelsFirst:
    """A 1-D CNN along the steps of ``(T, F)`` sequences: kernel 5 (``same`` padding), ReLU, max
    pool 2, 32-64-64 channels (fewer blocks for short sequences, as for images), a global average
    pool over the steps and a head 64 → ``n_outputs``.

    Shapes:
        ``(N, T, F)`` -> ``(N, n_outputs)``.
    """
    steps, features = _shape(input_shape, 2, "a 1-D CNN")
    conv, pool = _conv_plan(steps)
    return ChannelsFirst(CNN(features, conv, n_outputs, kernel_size=5, dims=1, pool=pool, head=CONV_HEAD))


def sequence_gru(input_shape: Sequence[int], n_outputs: int, task: str) -> SequenceClassifier:
    """A one-layer GRU with a state of 64 read at the last step, then a linear layer
    (:class:`~biaslab.nn.SequenceClassifier`, ``cell="gru"``).

    Shapes:
        ``(N, T, F)`` -> ``(N, n_outputs)``.
    """
    _, features = _shape(input_shape, 2, "a GRU")
    return SequenceClassifier(features, RECURRENT_HIDDEN, n_outputs, cell="gru")


def _transformer(features: int, length: int, n_outputs: int, positional: str | None) -> TransformerEncoder:
    """Two pre-norm blocks of width 64 with 4 heads over the projected elements, mean-pooled
    over the real ones, then a linear layer."""
    config = TransformerConfig(
        input_dim=features,
        dim=MODEL_DIM,
        heads=4,
        layers=2,
        max_len=length,
        positional=positional,
        num_classes=n_outputs,
        pool="mean",
    )
    return TransformerEncoder(config)


def sequence_transformer(input_shape: Sequence[int], n_outputs: int, task: str) -> TransformerEncoder:
    """A Transformer encoder on ``(T, F)`` sequences with sinusoidal positions: each step's
    features projected to 64, 2 pre-norm blocks of 4 heads, the mean over the steps, a linear
    layer.

    Shapes:
        ``(N, T, F)`` -> ``(N, n_outputs)``.
    """
    steps, features = _shape(input_shape, 2, "a sequence Transformer")
    return _transformer(features, steps, n_outputs, "sinusoidal")


def deep_sets(input_shape: Sequence[int], n_outputs: int, task: str) -> DeepSets:
    """Deep Sets ρ(Σ_i φ(x_i)) (:class:`~biaslab.nn.DeepSets`): φ two layers of 128 on every
    element, a masked sum over the real elements (it keeps the set's size), ρ 128 → 128 →
    ``n_outputs``.

    Shapes:
        ``x (N, S, F)``, ``mask (N, S)`` (True: a real element) -> ``(N, n_outputs)``.
    """
    _, features = _shape(input_shape, 2, "Deep Sets")
    return DeepSets(features, HIDDEN, n_outputs, aggregation="sum")


class SetTransformer(nn.Module):
    """A Transformer encoder without positions over a set's elements: attention only among the
    real elements and a mean over them, so it is invariant to their order and blind to padding.

    Args:
        encoder: a pooled :class:`~biaslab.nn.TransformerEncoder` with ``positional=None``.

    Shapes:
        ``x (N, S, F)``, ``mask (N, S)`` (True: a real element; None: all real) -> the encoder's
        pooled output ``(N, n_outputs)``.
    """

    def __init__(self, encoder: TransformerEncoder):
        super().__init__()
        if encoder.config.positional is not None or encoder.config.pool not in ("mean", "cls"):
            raise ValueError("a set Transformer needs no positions and a mean or cls pool")
        self.encoder = encoder

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        padding = None if mask is None else ~mask  # the encoder's key padding mask: True = padding
        return self.encoder(x, key_padding_mask=padding)


def set_transformer(input_shape: Sequence[int], n_outputs: int, task: str) -> SetTransformer:
    """A Transformer without positions on ``(S, F)`` sets: each element projected to 64, 2
    pre-norm blocks of 4 heads attending over the real elements, their mean, a linear layer.

    Shapes:
        ``x (N, S, F)``, ``mask (N, S)`` -> ``(N, n_outputs)``.
    """
    elements, features = _shape(input_shape, 2, "a set Transformer")
    return SetTransformer(_transformer(features, elements, n_outputs, None))
