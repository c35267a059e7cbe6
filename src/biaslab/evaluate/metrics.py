"""Scores for predictions and representations."""

from __future__ import annotations

import numpy as np


def accuracy_score(pred: np.ndarray, target: np.ndarray) -> float:
    """Fraction of equal entries."""
    return float(np.mean(np.asarray(pred) == np.asarray(target)))


def pca_project(fit_on: np.ndarray, *apply_to: np.ndarray, n_components: int = 2,
                seed: int = 0) -> list[np.ndarray]:
    """Fit PCA on ``fit_on`` (N, D) and project each of ``apply_to`` to (M, n_components)."""
    from sklearn.decomposition import PCA

    pca = PCA(n_components=n_components, random_state=seed).fit(fit_on)
    return [pca.transform(x) for x in apply_to]


def pca_reconstruction_error(fit_on: np.ndarray, x: np.ndarray, n_components: int) -> float:
    """Mean squared error per entry of ``x`` reconstructed from its top principal components.

    PCA with k components is the optimal *linear* autoencoder with a k-dimensional code.
    """
    from sklearn.decomposition import PCA

    pca = PCA(n_components=n_components).fit(fit_on)
    x_hat = pca.inverse_transform(pca.transform(x))
    return float(np.mean((x - x_hat) ** 2))


def cluster_separation(z: np.ndarray, labels: np.ndarray, sample_size: int | None = 5000,
                       seed: int = 0) -> float:
    """Mean silhouette coefficient of ``z`` (N, d) grouped by ``labels`` (N,), in [-1, 1].

    For each point, s = (b - a) / max(a, b) with a the mean distance to its own class and b to
    the nearest other class; higher means classes form tighter, better separated clusters.
    A random subsample of ``sample_size`` points keeps it O(sample_size²).
    """
    from sklearn.metrics import silhouette_score

    n = len(z)
    size = None if sample_size is None or sample_size >= n else sample_size
    return float(silhouette_score(z, labels, sample_size=size, random_state=seed))


def knn_accuracy(z_train: np.ndarray, y_train: np.ndarray, z_test: np.ndarray,
                 y_test: np.ndarray, k: int = 5) -> float:
    """Test accuracy of a k-nearest-neighbour vote in the representation ``z`` (N, d)."""
    from sklearn.neighbors import KNeighborsClassifier

    return float(KNeighborsClassifier(n_neighbors=k).fit(z_train, y_train).score(z_test, y_test))
