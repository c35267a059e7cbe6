"""Scores for predictions and representations.

Every score of predictions takes scikit-learn's argument order: the true labels first,
``(y_true, y_pred)`` or ``(y_true, scores)``.

Whole-set classification metrics equal to scikit-learn's (:func:`accuracy_score`,
:func:`confusion_matrix`, :func:`precision_recall_f1`, :func:`roc_auc`, :func:`log_loss`);
representation scores (:func:`pca_project`, :func:`pca_reconstruction_error`,
:func:`cluster_separation`, :func:`knn_accuracy`); :func:`pca_basis` gives PCA's top-k directions
as orthonormal columns, equal to ``np.linalg.eigh`` of the covariance (tested).
"""

from __future__ import annotations

import numpy as np

from biaslab.checks import check_finite_array


def accuracy_score(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Fraction of predictions equal to the true labels: two arrays of one shape (at least one
    entry), in scikit-learn's order ``(y_true, y_pred)``."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_true.shape != y_pred.shape or y_true.size == 0:
        raise ValueError(
            f"y_true and y_pred must have the same shape with at least one entry, got {y_true.shape} "
            f"and {y_pred.shape} (unequal shapes would be broadcast, not compared)"
        )
    return float(np.mean(y_true == y_pred))


def _paired(y_true, y_other, other: str) -> tuple[np.ndarray, np.ndarray]:
    """``y_true`` and the predictions or scores ``other`` as 1-D arrays of one length N >= 1."""
    y_true, y_other = np.asarray(y_true), np.asarray(y_other)
    if y_true.ndim != 1 or y_other.ndim != 1 or len(y_true) != len(y_other) or len(y_true) == 0:
        raise ValueError(
            f"y_true and {other} must be 1-D of the same length N >= 1, got shapes {y_true.shape} "
            f"and {y_other.shape}"
        )
    return y_true, y_other


# -- classification scores on a whole set ---------------------------------------------------------
# Each takes the arrays of the whole evaluation set: AUROC, log-loss and macro averages are not
# means over batches. Every one equals scikit-learn's function of the same name (tests check it).


def confusion_matrix(y_true: np.ndarray, y_pred: np.ndarray, labels: np.ndarray | None = None) -> np.ndarray:
    """Counts ``C[i, j]`` of examples of true class ``labels[i]`` predicted as ``labels[j]``.

    Args:
        labels: the classes, in row/column order; default: the sorted union of both arrays.
    Shapes:
        y_true, y_pred: (N,); returns (K, K) int64 with K = len(labels).
    """
    y_true, y_pred = _paired(y_true, y_pred, "y_pred")
    labels = np.unique(np.concatenate([y_true, y_pred])) if labels is None else np.asarray(labels)
    k = len(labels)
    order = np.argsort(labels, kind="stable")
    sorted_labels = labels[order]

    def index(y: np.ndarray) -> np.ndarray:  # position in `labels`, or k when not a listed class
        pos = np.clip(np.searchsorted(sorted_labels, y), 0, k - 1)
        return np.where(sorted_labels[pos] == y, order[pos], k)

    i, j = index(y_true), index(y_pred)
    keep = (i < k) & (j < k)
    counts = np.bincount(i[keep] * k + j[keep], minlength=k * k)
    return counts.reshape(k, k).astype(np.int64)  # (K*K,) -> (K, K)


def precision_recall_f1(
    y_true: np.ndarray,
    y_pred: np.ndarray,
    average: str | None = "macro",
    labels: np.ndarray | None = None,
    pos_label=1,
):
    """Precision, recall and F1 score, as ``sklearn.metrics.precision_recall_fscore_support``.

    Per class c: precision = tp / (tp + fp), recall = tp / (tp + fn), F1 = 2 tp / (2 tp + fp + fn);
    a ratio with a zero denominator is 0 (scikit-learn's default, without its warning).

    Args:
        average: ``"macro"`` (unweighted mean over classes), ``"weighted"`` (weighted by each
            class's support), ``"micro"`` (from the summed counts; equals accuracy when every
            class is listed), ``"binary"`` (the class ``pos_label`` only) or ``None`` (per class).
        labels: the classes to score; default: the sorted union of both arrays.
    Returns:
        ``(precision, recall, f1)``: floats, or (K,) arrays when ``average`` is None.
    """
    if average not in ("macro", "weighted", "micro", "binary", None):
        raise ValueError(f"unknown average {average!r}")
    y_true, y_pred = _paired(y_true, y_pred, "y_pred")
    if average == "binary":
        present = np.unique(np.concatenate([y_true, y_pred]))
        if len(present) > 2:
            raise ValueError("average='binary' needs at most two classes; choose 'macro'")
        labels = np.asarray([pos_label])
    elif labels is None:
        labels = np.unique(np.concatenate([y_true, y_pred]))
    labels = np.asarray(labels)
    # One-vs-rest counts per class; pairs with a class outside `labels` still count as fp / fn.
    is_true = y_true[:, None] == labels[None, :]  # (N, K)
    is_pred = y_pred[:, None] == labels[None, :]  # (N, K)
    tp = np.sum(is_true & is_pred, axis=0)
    pred_sum, true_sum = is_pred.sum(axis=0), is_true.sum(axis=0)
    if average == "micro":
        tp, pred_sum, true_sum = (v.sum(keepdims=True) for v in (tp, pred_sum, true_sum))  # (1,)
    precision = _divide(tp, pred_sum)
    recall = _divide(tp, true_sum)
    f1 = _divide(2.0 * tp, true_sum + pred_sum)
    if average is None:
        return precision, recall, f1
    weights = true_sum if average == "weighted" else None
    if weights is not None and weights.sum() == 0:
        return 0.0, 0.0, 0.0  # no listed class occurs in y_true
    return tuple(float(np.average(v, weights=weights)) for v in (precision, recall, f1))


def _divide(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den`` in float64, 0 where ``den`` is 0."""
    num, den = np.asarray(num, dtype=np.float64), np.asarray(den, dtype=np.float64)
    return np.divide(num, den, out=np.zeros_like(num), where=den != 0)


def roc_auc(y_true: np.ndarray, scores: np.ndarray, pos_label=None) -> float:
    """Area under the ROC curve of binary ``scores``: P(score of a positive > score of a negative).

    Computed from ranks (Mann-Whitney U) with tied scores given their average rank, so a tie
    between a positive and a negative counts 1/2.

    Args:
        y_true: the two classes; ``pos_label`` is the positive one (default: the larger).
        scores: higher means more likely positive (a probability, logit or margin).
    Shapes:
        y_true, scores: (N,).
    """
    y_true, scores = _paired(y_true, scores, "scores")
    scores = check_finite_array(scores, "scores")
    classes = np.unique(y_true)
    if len(classes) != 2:
        raise ValueError(f"roc_auc needs exactly two classes in y_true, got {len(classes)}")
    pos = y_true == (classes[1] if pos_label is None else pos_label)
    n_pos = int(pos.sum())
    n_neg = len(y_true) - n_pos
    if n_pos == 0:
        raise ValueError(f"pos_label={pos_label!r} is not in y_true")
    ranks = _average_ranks(scores)
    u = ranks[pos].sum() - n_pos * (n_pos + 1) / 2.0  # pairs (positive, negative) won
    return float(u / (n_pos * n_neg))


def _average_ranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks of ``x``, ties sharing the mean of their ranks (``scipy.stats.rankdata``)."""
    order = np.argsort(x, kind="mergesort")
    _, first, counts = np.unique(x[order], return_index=True, return_counts=True)
    ranks = np.empty(len(x), dtype=np.float64)
    ranks[order] = np.repeat(first + (counts + 1) / 2.0, counts)
    return ranks


def log_loss(y_true: np.ndarray, probs: np.ndarray, labels: np.ndarray | None = None) -> float:
    """Mean negative log-likelihood of the true classes under predicted probabilities.

    Probabilities are clipped to ``[eps, 1 - eps]`` (eps of their float type), as scikit-learn.

    Args:
        probs: class probabilities, columns in the order of ``labels``; a 1-D array is the
            probability of the second (larger) of two classes.
        labels: the classes; default: the sorted classes of ``y_true``.
    Shapes:
        y_true: (N,); probs: (N, K) or (N,).
    """
    y_true, probs = np.asarray(y_true), np.asarray(probs)
    if y_true.ndim != 1 or probs.ndim not in (1, 2) or len(probs) != len(y_true) or len(y_true) == 0:
        raise ValueError(
            f"y_true must be (N,) and probs (N, K) or (N,) with N >= 1, got shapes {y_true.shape} "
            f"and {probs.shape}"
        )
    if probs.dtype.kind != "f":
        probs = probs.astype(np.float64)
    if not np.all((probs >= 0) & (probs <= 1)):  # also refuses NaN
        raise ValueError("probs must be probabilities: finite numbers in [0, 1]")
    labels = np.unique(y_true) if labels is None else np.asarray(labels)
    if probs.ndim == 1:
        probs = probs[:, None]  # (N,) -> (N, 1)
    if probs.shape[1] == 1:
        probs = np.concatenate([1 - probs, probs], axis=1)  # (N, 1) -> (N, 2)
    if probs.shape[1] != len(labels):
        raise ValueError(
            f"probs have {probs.shape[1]} columns but there are {len(labels)} "
            "classes; pass labels= to name them"
        )
    eps = np.finfo(probs.dtype).eps
    probs = np.clip(probs, eps, 1 - eps)
    order = np.argsort(labels, kind="stable")
    pos = np.clip(np.searchsorted(labels[order], y_true), 0, len(labels) - 1)
    if np.any(labels[order][pos] != y_true):
        raise ValueError("y_true holds a class that is not in labels")
    picked = probs[np.arange(len(y_true)), order[pos]]
    return float(np.mean(-np.log(picked)))


def pca_project(
    fit_on: np.ndarray, *apply_to: np.ndarray, n_components: int = 2, seed: int = 0
) -> list[np.ndarray]:
    """Fit PCA on ``fit_on`` (N, D) and project each of ``apply_to`` to (M, n_components)."""
    from sklearn.decomposition import PCA

    pca = PCA(n_components=n_components, random_state=seed).fit(fit_on)
    return [pca.transform(x) for x in apply_to]


def pca_basis(fit_on: np.ndarray, n_components: int) -> np.ndarray:
    """The top ``n_components`` principal directions of ``fit_on`` (centred by its mean), as
    orthonormal columns, largest variance first.

    Shapes:
        fit_on (N, D) -> (D, n_components).
    """
    from sklearn.decomposition import PCA

    return PCA(n_components=n_components, svd_solver="full").fit(fit_on).components_.T


def pca_reconstruction_error(fit_on: np.ndarray, x: np.ndarray, n_components: int) -> float:
    """Mean squared error per entry of ``x`` reconstructed from its top principal components.

    PCA with k components is the optimal *linear* autoencoder with a k-dimensional code.
    """
    from sklearn.decomposition import PCA

    pca = PCA(n_components=n_components).fit(fit_on)
    x_hat = pca.inverse_transform(pca.transform(x))
    return float(np.mean((x - x_hat) ** 2))


def cluster_separation(
    z: np.ndarray, labels: np.ndarray, sample_size: int | None = 5000, seed: int = 0
) -> float:
    """Mean silhouette coefficient of ``z`` (N, d) grouped by ``labels`` (N,), in [-1, 1].

    For each point, s = (b - a) / max(a, b) with a the mean distance to its own class and b to
    the nearest other class; higher means classes form tighter, better separated clusters.
    A random subsample of ``sample_size`` points keeps it O(sample_size²).
    """
    from sklearn.metrics import silhouette_score

    n = len(z)
    size = None if sample_size is None or sample_size >= n else sample_size
    return float(silhouette_score(z, labels, sample_size=size, random_state=seed))


def knn_accuracy(
    z_train: np.ndarray, y_train: np.ndarray, z_test: np.ndarray, y_test: np.ndarray, k: int = 5
) -> float:
    """Test accuracy of a k-nearest-neighbour vote in the representation ``z`` (N, d)."""
    from sklearn.neighbors import KNeighborsClassifier

    return float(KNeighborsClassifier(n_neighbors=k).fit(z_train, y_train).score(z_test, y_test))
