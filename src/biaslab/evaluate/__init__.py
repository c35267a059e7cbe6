"""Evaluation: classification metrics over whole sets, representation scores, curve shapes, and
the symmetry verifier (``equivariance_error``), robustness curves (``accuracy_under_transform``,
``accuracy_under_attack``) and the vanishing-gradient probe (``gradient_by_step``).

Also calibration, OOD detection, adversarial attacks, distribution shift, sample quality,
sharpness, conformal intervals, the bias-variance decomposition, timings, power-law fits,
Bayesian linear regression with its evidence, dropout read as an ensemble (Monte-Carlo
dropout), and the ship / collect-more-data / redesign decision (``decide``) with its evidence.
"""

from biaslab.evaluate.adversarial import accuracy_under_attack, fgsm, pgd, pgd_attack
from biaslab.evaluate.bayes_linear import BayesianLinearRegression, log_evidence, posterior
from biaslab.evaluate.bias_variance import BiasVariance, bias_variance, double_descent, polynomial_fit
from biaslab.evaluate.calibration import (
    ReliabilityDiagram,
    TemperatureScaling,
    expected_calibration_error,
    maximum_calibration_error,
    reliability_bins,
)
from biaslab.evaluate.curves import SHAPES, CurveReading, classify_curve
from biaslab.evaluate.decision import Decision, Evidence, RegressionEvidence, decide
from biaslab.evaluate.gradient_flow import gradient_by_step
from biaslab.evaluate.mc_dropout import mc_dropout_probs, weight_scaled_probs
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
from biaslab.evaluate.ood import (
    KNN,
    MSP,
    Energy,
    Mahalanobis,
    MaxLogit,
    aupr,
    auroc,
    choose_detector,
    fpr_at_95_tpr,
    ood_report,
    ood_scores,
)
from biaslab.evaluate.robustness import accuracy_under_transform
from biaslab.evaluate.sharpness import hessian_vector_product, sharpness, top_hessian_eigenvalue
from biaslab.evaluate.shift import SHIFT_KINDS, domain_auc, predicted_label_shift, shift_scenario
from biaslab.evaluate.splits import SplitIndices, k_fold, stratified_split
from biaslab.evaluate.symmetry import equivariance_error, invariance_error

__all__ = [
    "KNN",
    "MSP",
    "SHAPES",
    "SHIFT_KINDS",
    "BayesianLinearRegression",
    "BiasVariance",
    "CurveReading",
    "Decision",
    "Energy",
    "Evidence",
    "Mahalanobis",
    "MaxLogit",
    "RegressionEvidence",
    "ReliabilityDiagram",
    "SplitIndices",
    "TemperatureScaling",
    "accuracy_score",
    "accuracy_under_attack",
    "accuracy_under_transform",
    "aupr",
    "auroc",
    "bias_variance",
    "choose_detector",
    "classify_curve",
    "cluster_separation",
    "confusion_matrix",
    "decide",
    "domain_auc",
    "double_descent",
    "equivariance_error",
    "expected_calibration_error",
    "fgsm",
    "fpr_at_95_tpr",
    "gradient_by_step",
    "hessian_vector_product",
    "invariance_error",
    "k_fold",
    "knn_accuracy",
    "log_evidence",
    "log_loss",
    "maximum_calibration_error",
    "mc_dropout_probs",
    "ood_report",
    "ood_scores",
    "pca_project",
    "pca_reconstruction_error",
    "pgd",
    "pgd_attack",
    "polynomial_fit",
    "posterior",
    "precision_recall_f1",
    "predicted_label_shift",
    "reliability_bins",
    "roc_auc",
    "sharpness",
    "shift_scenario",
    "stratified_split",
    "top_hessian_eigenvalue",
    "weight_scaled_probs",
]
