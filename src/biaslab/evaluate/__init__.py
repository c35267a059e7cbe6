"""Evaluation: metrics, representation scores (more to come: calibration, OOD, shift...)."""

from biaslab.evaluate.curves import SHAPES, CurveReading, classify_curve
from biaslab.evaluate.metrics import (
    accuracy_score,
    cluster_separation,
    knn_accuracy,
    pca_project,
    pca_reconstruction_error,
)

__all__ = ["SHAPES", "CurveReading", "classify_curve", "accuracy_score", "cluster_separation", "knn_accuracy", "pca_project", "pca_reconstruction_error"]
