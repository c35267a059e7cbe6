"""How close generated samples are to the data: two distances between sample sets.

* :func:`mmd` — the maximum mean discrepancy with an RBF kernel (Gretton et al. 2012):
  MMD²(X, Y) = mean k(x, x') + mean k(y, y') − 2 mean k(x, y), k(a, b) = exp(−||a − b||² / (2 h²)),
  with the unbiased estimate (diagonals left out of the within-set means). The bandwidth h is
  the median heuristic by default: the median distance between all pooled points.
* :func:`sliced_wasserstein` — the mean over random unit directions θ of the 1-D Wasserstein-1
  distance between the projections θ·x and θ·y (Bonneel et al. 2015).
* :func:`nearest_distances` — each sample's Euclidean distance to its nearest reference point
  (e.g. the training set): how tightly samples hug the data, and whether they copy it (~0).

Both are zero in expectation for two samples of one distribution and are noisy at finite n:
compare a generator's distance with the distance between two independent samples of the data
(the *floor*), never with zero; :func:`mean_distance` averages either over several independent
reference samples, which steadies the comparison.

Also :func:`wasserstein_1d`, :func:`median_bandwidth` and :func:`classifier_scores` (a classifier's
view of samples: the confident share, the label histogram and its entropy, the classes present).
:func:`nearest_distances` is a blocked brute force, exact for copies.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from biaslab.checks import check_finite_array, check_fraction, check_integer, check_number

MAX_PROJECTIONS = 10_000  # sliced_wasserstein: the most directions (memory grows as (N + M) x this)
BLOCK_ENTRIES = 1 << 22  # nearest_distances: squared distances held at once (32 MiB of float64)


def _points(x, name: str) -> np.ndarray:
    x = check_finite_array(x, name)
    if x.ndim != 2 or len(x) < 2 or x.shape[1] == 0:
        raise ValueError(f"{name} must be (N, D) with N >= 2 and D >= 1, got shape {x.shape}")
    return x


def _squared_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    d = np.einsum("nd,nd->n", a, a)[:, None] + np.einsum("md,md->m", b, b)[None, :] - 2 * a @ b.T
    return np.maximum(d, 0.0)  # (N, M); rounding can dip below 0


def median_bandwidth(x, y) -> float:
    """The median heuristic: the median Euclidean distance between distinct pooled points."""
    pooled = np.concatenate([_points(x, "x"), _points(y, "y")])
    d = _squared_distances(pooled, pooled)[np.triu_indices(len(pooled), k=1)]
    return float(np.sqrt(np.median(d)))


def mmd(x, y, bandwidth: float | None = None) -> float:
    """Unbiased MMD² between samples ``x`` (N, D) and ``y`` (M, D) with an RBF kernel.

    Args:
        bandwidth: the kernel's h (default None: :func:`median_bandwidth` of the pooled points).

    Returns:
        The unbiased estimate of MMD² (it can be slightly negative when the two agree).
    """
    x, y = _points(x, "x"), _points(y, "y")
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"x has {x.shape[1]} dimensions, y has {y.shape[1]}")
    if bandwidth is not None:
        bandwidth = check_number(bandwidth, "bandwidth", 0.0, low_open=True)
    h = median_bandwidth(x, y) if bandwidth is None else bandwidth
    if not h > 0:
        raise ValueError(f"bandwidth must be > 0, got {h} (the median heuristic: most points coincide)")

    def kernel(a, b):
        return np.exp(-_squared_distances(a, b) / (2 * h * h))

    kxx, kyy, kxy = kernel(x, x), kernel(y, y), kernel(x, y)
    n, m = len(x), len(y)
    within_x = (kxx.sum() - np.trace(kxx)) / (n * (n - 1))
    within_y = (kyy.sum() - np.trace(kyy)) / (m * (m - 1))
    return float(within_x + within_y - 2 * kxy.mean())


def wasserstein_1d(u: np.ndarray, v: np.ndarray) -> float:
    """W1 between two 1-D samples (each finite, at least one value): the area between their
    empirical CDFs."""
    u, v = (np.sort(check_finite_array(s, name, ndim=1, min_len=1)) for s, name in ((u, "u"), (v, "v")))
    grid = np.sort(np.concatenate([u, v]))
    cdf_u = np.searchsorted(u, grid[:-1], side="right") / len(u)
    cdf_v = np.searchsorted(v, grid[:-1], side="right") / len(v)
    return float(np.sum(np.abs(cdf_u - cdf_v) * np.diff(grid)))


def sliced_wasserstein(x, y, projections: int = 200, seed: int = 0) -> float:
    """The mean 1-D Wasserstein-1 distance over ``projections`` random unit directions (seeded)."""
    why = " (the mean over more directions no longer moves, and memory grows as (N + M) x projections)"
    projections = check_integer(projections, "projections", 1, MAX_PROJECTIONS, why=why)
    x, y = _points(x, "x"), _points(y, "y")
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"x has {x.shape[1]} dimensions, y has {y.shape[1]}")
    theta = np.random.default_rng(seed).normal(size=(projections, x.shape[1]))
    theta /= np.linalg.norm(theta, axis=1, keepdims=True)  # (P, D) unit directions
    px, py = x @ theta.T, y @ theta.T  # (N, P), (M, P)
    return float(np.mean([wasserstein_1d(px[:, p], py[:, p]) for p in range(projections)]))


def nearest_distances(x, reference) -> np.ndarray:
    """The Euclidean distance from each row of ``x`` to its nearest row of ``reference``.

    Brute force in float64, in blocks of rows (memory stays near :data:`BLOCK_ENTRIES` entries
    whatever the sizes): the nearest point is found from squared distances expanded as
    ||a||² + ||b||² − 2 a·b, and its distance then recomputed from the difference, exact even
    for a sample that copies a reference point.

    Shapes:
        x: (N, D), reference: (M, D), N, M >= 1 -> (N,).
    """
    x = check_finite_array(x, "x", ndim=2, min_len=1)
    reference = check_finite_array(reference, "reference", ndim=2, min_len=1)
    if x.shape[1] != reference.shape[1] or x.shape[1] == 0:
        raise ValueError(
            f"x and reference must share D >= 1 columns, got shapes {x.shape} and {reference.shape}"
        )
    rows = max(1, BLOCK_ENTRIES // len(reference))
    nearest = np.concatenate(
        [_squared_distances(x[i : i + rows], reference).argmin(1) for i in range(0, len(x), rows)]
    )  # (N,) index of each row's nearest reference point
    return np.linalg.norm(x - reference[nearest], axis=1)


def mean_distance(distance: Callable[..., float], x, references: Sequence, **options) -> float:
    """The mean of ``distance(x, r, **options)`` over independent reference samples ``r`` of the
    data, e.g. ``mean_distance(sliced_wasserstein, samples, fresh_sets, projections=200)``: one
    reference set's distance is noisy at finite n, the average over several less so.
    """
    if len(references) == 0:
        raise ValueError("references must hold at least one sample set")
    return float(np.mean([distance(x, r, **options) for r in references]))


def classifier_scores(probs, threshold: float = 0.9) -> dict:
    """Sample quality read by a classifier trained on the real data (for generated images).

    Args:
        probs: (N, C) the classifier's class probabilities for N samples.
        threshold: a sample counts as confident when its top probability is at least this.

    Returns:
        ``confident`` (the share of confident samples), ``histogram`` (the count of each predicted
        class), ``entropy`` (of the predicted-class histogram, nats; ln C when every class is
        equally frequent, 0 when one class takes all: mode collapse) and ``classes`` (how many
        classes were predicted at least once).
    """
    threshold = check_fraction(threshold, "threshold")
    p = _points(probs, "probs")
    predicted = p.argmax(1)
    histogram = np.bincount(predicted, minlength=p.shape[1])
    share = histogram[histogram > 0] / len(p)
    return {
        "confident": float(np.mean(p.max(1) >= threshold)),
        "histogram": histogram.tolist(),
        "entropy": float(-(share * np.log(share)).sum()) + 0.0,  # + 0.0: no "-0.0" for one class
        "classes": int((histogram > 0).sum()),
    }
