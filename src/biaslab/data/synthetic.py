"""Small synthetic data sets whose structure is known exactly.

Each generator takes an explicit ``seed`` (fed to ``np.random.default_rng``), so the same
arguments always give the same data. Features are float32 numpy arrays, class labels int64.

The sets: :func:`xor`, :func:`two_spirals`, :func:`spiral` (one spiral: diffusion's 2-D data),
:func:`noisy_polynomial` (with :func:`polynomial_features`) and :func:`teacher_regression`
(x ~ N(0, I), y a fixed random two-layer tanh teacher, noise-free: the scaling-laws task; equal
to the teacher written out, tested) and :func:`repeated_measurements` (several measurements of
each subject, labelled by the subject: the set-up in which a split by measurement leaks).
"""

from __future__ import annotations

import numpy as np

from biaslab.errors import BiaslabError

__all__ = [
    "noisy_polynomial",
    "polynomial_features",
    "repeated_measurements",
    "spiral",
    "teacher_regression",
    "two_spirals",
    "xor",
]


def _check_n(n: int, minimum: int = 1) -> None:
    if int(n) != n or n < minimum:
        raise BiaslabError(f"n must be an integer >= {minimum}, got {n}")


def _check_noise(noise: float) -> None:
    if not noise >= 0:
        raise BiaslabError(f"noise must be >= 0, got {noise}")


def xor(n: int = 200, noise: float = 0.1, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Four Gaussian blobs at (±1, ±1); the label is 1 where the two signs differ (XOR).

    The four blobs get (almost) equal shares of the ``n`` points, in shuffled order. No single
    line separates the classes, which is what makes XOR the classic test for hidden layers.

    Args:
        n: number of points.
        noise: standard deviation of the Gaussian blobs around their centres.
        seed: random seed.

    Returns:
        ``(X, y)`` with X float32 (n, 2) and y int64 (n,) in {0, 1}.
    """
    _check_n(n)
    _check_noise(noise)
    rng = np.random.default_rng(seed)
    corners = np.array([[-1, -1], [-1, 1], [1, -1], [1, 1]], dtype=np.float64)
    which = rng.permutation(np.arange(n) % 4)
    centres = corners[which]
    X = centres + noise * rng.standard_normal((n, 2))
    y = (centres[:, 0] != centres[:, 1]).astype(np.int64)
    return X.astype(np.float32), y


def two_spirals(
    n: int = 400, noise: float = 0.1, turns: float = 1.5, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaved spirals, one per class, centred at the origin with radius up to 1.

    Points lie at angle ``t`` in ``[0, 2π·turns]`` and radius ``t / (2π·turns)``; class 1 is
    class 0 rotated by 180°. Classes are balanced (sizes differ by at most one), order shuffled.

    Args:
        n: number of points (at least 2).
        noise: standard deviation of Gaussian noise added to each coordinate.
        turns: how many full turns each spiral makes.
        seed: random seed.

    Returns:
        ``(X, y)`` with X float32 (n, 2) and y int64 (n,) in {0, 1}.
    """
    _check_n(n, minimum=2)
    _check_noise(noise)
    if not turns > 0:
        raise BiaslabError(f"turns must be > 0, got {turns}")
    rng = np.random.default_rng(seed)
    y = rng.permutation(np.arange(n) % 2).astype(np.int64)
    # sqrt makes points roughly uniform along the arc (outer loops are longer than inner ones).
    radius = np.sqrt(rng.uniform(0.0, 1.0, n))
    angle = radius * 2 * np.pi * turns + np.pi * y
    X = np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=1)
    X += noise * rng.standard_normal((n, 2))
    return X.astype(np.float32), y


def spiral(n: int = 1000, noise: float = 0.04, turns: float = 1.5, seed: int = 0) -> np.ndarray:
    """One arm of :func:`two_spirals` (class 0): the 2-D spiral of the first diffusion paper's
    demonstrations (Sohl-Dickstein et al. 2015), points spread evenly along the arc.

    Points lie at angle ``t`` in ``[0, 2π·turns]`` and radius ``t / (2π·turns)`` (up to 1), with
    Gaussian noise of standard deviation ``noise`` on each coordinate.

    Returns:
        X float32 (n, 2).
    """
    _check_n(n)
    _check_noise(noise)
    if not turns > 0:
        raise BiaslabError(f"turns must be > 0, got {turns}")
    rng = np.random.default_rng(seed)
    radius = np.sqrt(rng.uniform(0.0, 1.0, n))  # even along the arc: outer loops are longer
    angle = radius * 2 * np.pi * turns
    X = np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=1)
    X += noise * rng.standard_normal((n, 2))
    return X.astype(np.float32)


def noisy_polynomial(
    n: int = 50,
    coefficients: tuple[float, ...] = (0.0, 1.0, -2.0, 0.5),
    noise: float = 0.1,
    x_range: tuple[float, float] = (-1.0, 1.0),
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Points ``y = c0 + c1·x + c2·x² + ... + noise`` with x drawn uniformly from ``x_range``.

    The default is the cubic ``x - 2x² + 0.5x³`` on [-1, 1] with noise 0.1: a straight line
    underfits it, a degree-3 fit matches it, and high degrees on 50 points overfit the noise.

    Args:
        n: number of points.
        coefficients: polynomial coefficients in increasing powers of x.
        noise: standard deviation of Gaussian noise added to y.
        x_range: interval ``(low, high)`` that x is drawn from.
        seed: random seed.

    Returns:
        ``(x, y)`` with x float32 (n, 1) and y float32 (n,).
    """
    _check_n(n)
    _check_noise(noise)
    low, high = x_range
    if not low < high:
        raise BiaslabError(f"x_range must be (low, high) with low < high, got {x_range}")
    if len(coefficients) == 0:
        raise BiaslabError("coefficients must contain at least one value")
    rng = np.random.default_rng(seed)
    x = rng.uniform(low, high, n)
    coefficients = np.asarray(coefficients, dtype=np.float64)
    clean = polynomial_features(x, len(coefficients) - 1) @ coefficients
    y = clean + noise * rng.standard_normal(n)
    return x.astype(np.float32).reshape(n, 1), y.astype(np.float32)


def polynomial_features(x: np.ndarray, degree: int) -> np.ndarray:
    """The powers ``1, x, x², ..., x^degree`` of a single input feature.

    Args:
        x: inputs of shape (n,) or (n, 1).
        degree: highest power (>= 0).

    Returns:
        Array (n, degree + 1), column ``k`` holding ``x**k``; float inputs keep their dtype,
        others become float64.
    """
    x = np.asarray(x)
    if x.ndim == 2 and x.shape[1] == 1:
        x = x[:, 0]
    if x.ndim != 1:
        raise BiaslabError(f"x must have shape (n,) or (n, 1), got {x.shape}")
    if int(degree) != degree or degree < 0:
        raise BiaslabError(f"degree must be an integer >= 0, got {degree}")
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)
    features = np.ones((len(x), int(degree) + 1), dtype=x.dtype)
    for k in range(1, int(degree) + 1):
        features[:, k] = features[:, k - 1] * x
    return features


def teacher_regression(
    n: int, seed: int, teacher_seed: int = 0, inputs: int = 16, hidden: int = 64
) -> tuple[np.ndarray, np.ndarray]:
    """A student-teacher task: x ~ N(0, I_inputs) and y = teacher(x), a fixed random two-layer tanh
    network (the teacher's weights from ``teacher_seed``, the same for every draw of data),

        y = v · tanh(W x / √inputs) / √hidden,     W ~ N(0, 1)^(hidden, inputs),  v ~ N(0, 1)^hidden,

    noise-free, so a student's test loss has no floor but its own limits (data, size, training):
    the setting of scaling-law studies.

    Shapes:
        -> x (n, inputs) float32, y (n,) float32.
    """
    _check_n(n)
    teacher = np.random.default_rng(teacher_seed)
    w, v = teacher.normal(size=(hidden, inputs)), teacher.normal(size=hidden)
    x = np.random.default_rng(seed).normal(size=(n, inputs))
    y = np.tanh(x @ w.T / np.sqrt(inputs)) @ v / np.sqrt(hidden)  # (n, hidden) -> (n,)
    return x.astype(np.float32), y.astype(np.float32)


def repeated_measurements(
    subjects: int = 100,
    per_subject: int = 10,
    features: int = 10,
    signal: float = 2.0,
    identity: float = 3.0,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Several noisy measurements of each subject (a patient's scans), labelled by the subject's
    class: the set-up in which a split by measurement leaks (workshop book §4.8, "Inputs").

    Subject s has a class y_s (half the subjects each) and an identity u_s ~ N(0, identity² I),
    what makes its measurements recognisable whatever its class; measurement m of s is

        x_sm = u_s + signal · (2 y_s − 1) · e_1 + ε_sm,      ε_sm ~ N(0, I),

    so the class shows only as a weak shift along the first feature, while measurements of one
    subject lie close together. A model that recognises the subject scores well on a test split
    that holds other measurements of its training subjects, and only as well as the class signal
    allows on new subjects.

    Shapes:
        -> x (subjects · per_subject, features) float32, y (same,) int64, groups (same,) int64:
        the subject of each measurement, in subject order.
    """
    _check_n(subjects, 2)
    _check_n(per_subject)
    _check_n(features)
    rng = np.random.default_rng(seed)
    classes = rng.permutation(np.arange(subjects) % 2)  # (S,): half the subjects each
    ids = identity * rng.normal(size=(subjects, features))  # (S, F): u_s
    ids[:, 0] += signal * (2 * classes - 1)  # the class's shift along e_1
    groups = np.repeat(np.arange(subjects), per_subject)  # (S·M,)
    x = ids[groups] + rng.normal(size=(len(groups), features))  # (S·M, F)
    return x.astype(np.float32), classes[groups].astype(np.int64), groups.astype(np.int64)
