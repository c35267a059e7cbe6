"""Evaluation: metrics, representation scores (more to come: calibration, OOD, shift...)."""

from biaslab.evaluate.metrics import (
    accuracy_score,
    cluster_separation,
    knn_accuracy,
    pca_project,
    pca_reconstruction_error,
)

__all__ = ["accuracy_score", "cluster_separation", "knn_accuracy", "pca_project", "pca_reconstruction_error"]
