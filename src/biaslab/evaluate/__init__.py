"""Evaluation: classification metrics over whole sets, representation scores, curve shapes, and
the symmetry verifier (``equivariance_error``)."""

from biaslab.evaluate.curves import SHAPES, CurveReading, classify_curve
from biaslab.evaluate.metrics import (
    accuracy_score,
    cluster_separation,
    confusion_matrix,
    knn_accuracy,
    log_loss,
    pca_project,
    pca_reconstruction_error,
    precision_recall_f1,
    roc_auc,
)
from biaslab.evaluate.symmetry import equivariance_error, invariance_error

__all__ = [
    "SHAPES",
    "CurveReading",
    "accuracy_score",
    "classify_curve",
    "cluster_separation",
    "confusion_matrix",
    "equivariance_error",
    "invariance_error",
    "knn_accuracy",
    "log_loss",
    "pca_project",
    "pca_reconstruction_error",
    "precision_recall_f1",
    "roc_auc",
]
