"""Evaluation: classification metrics over whole sets, representation scores, curve shapes."""

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

__all__ = [
    "SHAPES",
    "CurveReading",
    "accuracy_score",
    "classify_curve",
    "cluster_separation",
    "confusion_matrix",
    "knn_accuracy",
    "log_loss",
    "pca_project",
    "pca_reconstruction_error",
    "precision_recall_f1",
    "roc_auc",
]
