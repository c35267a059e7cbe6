"""Teacher networks: functions a ReLU network of a given width represents exactly.

A universal approximation theorem says weights exist (lecture notes §2; the ML-for-physics
slides, 'Universal approximation theorem'); a teacher network makes that existence certain for
one task. Its weights are drawn once and fixed, and the data are its outputs, noise-free, so a
student of the teacher's architecture *can* reach zero loss: whether gradient descent finds such
weights is then a question about the search alone (Safran & Shamir 2018's setting).

:func:`relu_teacher` draws a one-hidden-layer ReLU teacher of width W on d inputs,

    f(x) = Σ_{i=1..W} a_i · max(0, w_i · x),     w_i uniform on the unit sphere S^{d−1},
                                                  a_i = ±1 with equal probability,

as ``[(W_1, b_1), (W_2, b_2)]`` in ``biaslab.nn.MLP.from_numpy``'s layout (biases 0), so
``MLP.from_numpy(relu_teacher(...))`` is the teacher as a torch module of width W.
:func:`relu_network` evaluates such layers in NumPy (float64) and :func:`teacher_data` draws
inputs x ~ N(0, I_d) with their outputs.

:func:`bump` is a target no monotone function fits, exp(−x² / (2 s²)): it rises, then falls, so a
width-1 ReLU network (monotone, ``biaslab.nn.narrow``) misses it by at least the best monotone
fit's error (``biaslab.evaluate.approximation``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["bump", "relu_network", "relu_teacher", "teacher_data"]

Layers = list[tuple[np.ndarray, np.ndarray]]  # [(W (out, in), b (out,)), ...], y = W h + b


def _whole(value, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name}={value!r}: give a whole number >= {minimum}")
    return int(value)


def relu_teacher(inputs: int, width: int, seed: int) -> Layers:
    """A one-hidden-layer ReLU network of width ``width``: unit-norm hidden weights in random
    directions, output weights ±1, every bias 0 (see the module's docstring).

    Args:
        inputs: d, the input dimension.
        width: W, the hidden units.
        seed: fixes the weights.

    Shapes:
        -> ``[(W_1 (width, inputs), b_1 (width,)), (W_2 (1, width), b_2 (1,))]``, float32.
    """
    inputs, width = _whole(inputs, "inputs"), _whole(width, "width")
    rng = np.random.default_rng(seed)
    directions = rng.normal(size=(width, inputs))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)  # each row on S^{d-1}
    signs = rng.choice([-1.0, 1.0], size=(1, width))
    layers = [(directions, np.zeros(width)), (signs, np.zeros(1))]
    return [(w.astype(np.float32), b.astype(np.float32)) for w, b in layers]


def relu_network(layers: Sequence[tuple[np.ndarray, np.ndarray]], x: np.ndarray) -> np.ndarray:
    """The ReLU network of ``layers`` at ``x``, in float64:
    h_0 = x, h_l = max(0, W_l h_{l−1} + b_l) for l < L, y = W_L h_{L−1} + b_L.

    Shapes:
        x ``(n, in)`` -> ``(n, out)``.
    """
    h = np.asarray(x, dtype=np.float64)
    for i, (w, b) in enumerate(layers):
        h = h @ np.asarray(w, dtype=np.float64).T + np.asarray(b, dtype=np.float64)  # (n, out_l)
        if i < len(layers) - 1:
            h = np.maximum(h, 0.0)
    return h


def teacher_data(layers: Layers, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` inputs x ~ N(0, I_d) and the teacher's outputs y = f(x), noise-free.

    Shapes:
        -> x ``(n, d)`` float32, y ``(n, out)`` float32 (f computed in float64, then rounded).
    """
    n = _whole(n, "n")
    x = np.random.default_rng(seed).normal(size=(n, layers[0][0].shape[1])).astype(np.float32)
    return x, relu_network(layers, x).astype(np.float32)


def bump(x: np.ndarray, width: float) -> np.ndarray:
    """The Gaussian bump exp(−x² / (2 width²)), 1 at x = 0, in ``x``'s floating type.

    Shapes:
        x ``(...)`` -> ``(...)``.
    """
    if not width > 0:
        raise ValueError(f"width={width!r}: give a positive number")
    x = np.asarray(x)
    return np.exp(-(x**2) / (2.0 * width**2)).astype(x.dtype if x.dtype.kind == "f" else np.float64)
