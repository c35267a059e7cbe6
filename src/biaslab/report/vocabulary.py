"""The words of metric labels: what a key's words mean, for :mod:`biaslab.report.labels`' rule.

Shared vocabularies (:data:`MEASURES`, :data:`MODIFIERS`, :data:`PARAMETERS`, :data:`NAMES`) hold
what a word means in every lab; :data:`LAB_TERMS` what one lab means by a word or a whole key (a
lab's terms are consulted first). Keys are the words of a metric key joined by ``_``, lowercase.
A new metric key brings its words here: a test keeps every lab's metrics free of unknown words.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["LAB_TERMS", "MEASURES", "MODIFIERS", "NAMES", "PARAMETERS", "Term", "measure", "param"]


class Term(NamedTuple):
    """One term of a label: its words, its kind (measure, modifier, param or name) and, for a
    parameter, the template its number fills (``"ε = {}"``)."""

    text: str
    kind: str = "name"
    template: str = ""


def measure(text: str) -> Term:
    """A measured quantity (heads the label)."""
    return Term(text, "measure")


def param(template: str) -> Term:
    """A parameter whose value follows it in the key: ``param("ε = {}")``; without a number
    it reads as the template's words (``"ε"``)."""
    return Term(template.replace("{}", "").strip(" ="), "param", template)


# What is measured. Keys: words of a metric key joined by "_", lowercase.
MEASURES = {
    "accuracy": "accuracy", "auroc": "AUROC", "aupr": "AUPR", "loss": "loss", "error": "error",
    "errors": "errors", "mse": "MSE", "nll": "NLL", "iw_nll": "importance-weighted NLL",
    "ece": "ECE", "mce": "MCE", "elbo": "negative ELBO", "kl": "KL divergence", "entropy": "entropy",
    "cross_entropy": "cross-entropy", "log_likelihood": "log-likelihood", "parameters": "parameters",
    "silhouette": "silhouette score", "mmd": "MMD²", "sliced_w": "sliced Wasserstein distance",
    "nearest": "distance to the nearest training point", "bias2": "bias²", "variance": "variance",
    "expected_mse": "expected MSE", "shape": "curve shape", "temperature": "temperature",
    "confidence": "confidence", "duplicates": "exact duplicates", "gain": "gain",
    "improvement": "improvement", "reconstruction": "reconstruction term", "verdict": "verdict",
    "rule": "rule that fired", "detector": "OOD detector chosen", "ood_auroc": "OOD AUROC",
    "ood_detector": "OOD detector chosen", "curve_drop": "error drop over the curve's last step",
    "histogram": "label histogram", "classes": "classes present", "confident": "confident share",
    "exponent": "power-law exponent", "r_squared": "R²", "mean_abs_error": "mean absolute error",
    "gap": "gap", "homophily": "homophily", "edges": "edges", "epochs": "epochs", "labs": "labs",
    "knn5_accuracy": "5-nearest-neighbour accuracy", "knn_accuracy": "nearest-neighbour accuracy",
    "train_size": "training set size", "domain_auroc": "domain classifier's AUROC",
    "predicted-label_shift": "predicted label shift", "findings": "findings",
    "findings_passed": "findings that hold", "findings_failed": "findings that fail", "checks": "checks",
    "checks_passed": "checks that hold", "checks_failed": "checks that fail",
    "claims_unjudged": "claims not checked", "slips": "slips found in the documents", "index": "index page",
    "seconds": "seconds", "max_diff": "largest difference", "n_train": "training examples",
    "ece_after_temperature": "ECE after temperature scaling", "mae": "MAE", "rmse": "RMSE",
    "curve_exponent": "learning curve's power-law exponent",
    "baseline_mae": "MAE of the mean predictor", "baseline_rmse": "RMSE of the mean predictor",
    "invariance": "invariance error", "label_survives": "label survives",
    "augmentation_cost": "cost of augmenting the MLP's training (accuracy points, or share of the MAE)",
    "augmentation_cost_low": "cost of augmenting the MLP's training, 95% interval's low end",
    "augmentation_cost_high": "cost of augmenting the MLP's training, 95% interval's high end",
    "label_changes": "label changes", "stopped_at_budget": "stopped at the time budget",
    "interval_coverage": "coverage of the 90% conformal intervals",
    "interval_width": "mean width of the 90% conformal intervals",
    "interval_half_width": "half-width of the 90% conformal intervals",
}  # fmt: skip

# Words that narrow the measure right after them: "final" + "val" + "loss" -> "final validation loss".
MODIFIERS = {
    "test": "test", "val": "validation", "train": "training", "final": "final", "best": "best",
    "mean": "mean", "heldout": "held-out", "source": "source", "target": "target", "max": "max",
    "robust": "robust", "sampling": "sampling", "measured": "measured",
}  # fmt: skip

# Parameters: the number after them in the key fills the "{}".
PARAMETERS = {
    "eps": "ε = {}", "degree": "degree {}", "shift": "shift {} px", "n": "n = {}", "t": "T = {}",
    "lr": "learning rate {}", "epoch": "epoch {}", "k": "k = {}", "deg": "{}°", "features": "{} features",
    "lambda": "λ = {}", "depth": "depth {}", "batch": "batch {}", "width": "width {}",
}  # fmt: skip

# Names of models, detectors, data sets and the like: qualifiers after the measure.
NAMES = {
    "msp": "max softmax probability", "max_logit": "max logit", "energy": "energy",
    "mahalanobis": "Mahalanobis", "knn": "kNN", "animal-mnist": "Animal-MNIST",
    "animal_mnist": "Animal-MNIST", "gaussian-noise": "Gaussian noise",
    "uniform-noise": "uniform noise", "inverted-mnist": "inverted MNIST", "fashion-mnist": "Fashion-MNIST",
    "mnist": "MNIST", "mlp": "MLP", "cnn": "CNN", "gcn": "GCN", "gat": "GAT", "rnn": "RNN",
    "lstm": "LSTM", "gru": "GRU", "transformer": "transformer", "logistic": "logistic regression",
    "perceptron": "perceptron", "sgd": "SGD", "adam": "Adam", "fgsm": "FGSM", "pgd": "PGD",
    "ddpm": "DDPM", "ddim": "DDIM", "vae": "VAE", "ae": "autoencoder", "pca2": "PCA to 2-D",
    "pca": "PCA", "hidden": "hidden layer", "pixels": "pixels", "full": "all dimensions",
    "covariate": "covariate shift", "label": "label shift", "concept": "concept shift",
    "corner": "corners", "classifier": "classifier", "samples": "samples", "real": "real test digits",
    "latent2d": "2-D latent space", "true": "true distribution", "categorical": "categorical",
    "uniform": "uniform", "random": "random", "smoothed": "smoothed", "gaussian": "Gaussian baseline",
    "noisy": "noisy input", "plain": "plain autoencoder", "denoising": "denoising autoencoder",
    "double_descent": "double descent", "bowl": "bowl", "softmax": "softmax", "clean": "clean",
    "train_seconds": "training time (s)", "udl-cnn": "CNN of UDL fig. 10.8",
    "udl-mlp": "MLP of UDL fig. 10.8", "gradient-boosted-trees": "gradient-boosted trees",
    "cnn-augmentation": "CNN + augmentation", "linear-model": "linear model",
    "k-nearest-neighbours": "k-nearest neighbours", "1-d-cnn": "1-D CNN", "deep-sets": "Deep Sets",
    "transformer-without-positions": "transformer without positions",
    "mpnn": "MPNN", "graph-transformer": "graph Transformer", "egnn": "EGNN",
    "fingerprint-mlp": "fingerprint MLP", "fingerprint-trees": "fingerprint trees",
    "flip": "left-right flip", "reversal": "reversal", "permutation": "permutation",
    "time-shift": "time shift",
}  # fmt: skip

# What one lab means by a word or a whole key (whole keys are labels as they stand).
LAB_TERMS: dict[str, dict[str, Term | str]] = {
    "adam-vs-sgd": {"epochs_to_97": measure("epochs to 97% validation accuracy")},
    "adversarial": {
        "pgd_robust": "PGD, after adversarial training",
        "adversarial_training_gain": "Accuracy gained under PGD by adversarial training",
    },
    "autoencoder-2d": {
        "improvement": measure("MSE improvement over PCA"),
        "linear_ae": "linear autoencoder",
        "linear_ae_largest_angle": "Largest principal angle of the linear autoencoder's plane to PCA-2's (°)",
        "linear_ae_smallest_angle": (
            "Smallest principal angle of the linear autoencoder's plane to PCA-2's (°)"
        ),
        "linear_ae_largest_angle_initial": (
            "Largest principal angle of the linear autoencoder's plane to PCA-2's at initialisation (°)"
        ),
    },
    "calibration": {"before": "before temperature scaling", "after": "after temperature scaling"},
    "autoencoder-uses": {"max": "max logit", "ae": "autoencoder reconstruction error"},
    "bias-variance": {
        "double_descent_mse": param("test MSE at {} random features"),
        "double_descent_peak_features": "Double descent: random features at the test error's peak",
    },
    "decision": {
        "cnn_all": "good CNN",
        "cnn_small": "CNN on 2% of the data",
        "mlp_all": "MLP for shifted digits",
        "shift_accuracy": measure("accuracy under the shift"),
        "shift_val_errors": measure("validation errors under the shift"),
        "shift_curve_drop": measure("error drop under the shift over the curve's last step"),
    },
    "compare": {"shift": "small shift"},
    "diffusion-mnist": {"samples": "generated samples"},
    "diffusion-spiral": {
        "two_spiral_samples": "fresh data samples (the floor)",
        "ddim_50": "DDIM, 50 steps",
        "ddim_20": "DDIM, 20 steps",
    },
    "depth": {
        "plain": "plain stack",
        "residual": "residual stack",
        "residual_batchnorm": "residual + batch norm",
        "residual_layernorm": "residual + layer norm",
    },
    "embeddings": {
        "trained": "trained table",
        "initialisation": "table at initialisation",
        "neighbours": measure("share of residues whose nearest row is n ± c"),
        "median_rank": measure("median analogy rank by the vector offset"),
        "frequency": measure("dominant frequency of the table"),
        "plane_neighbours": measure("share whose nearest point on the dominant frequency's plane is n ± c"),
        "rotation_rank": measure("median analogy rank by rotation"),
    },
    "equivariance": {
        "deep_sets": "Deep Sets",
        "pair_distances": "pair-distance model",
        "test_error": measure("test error (MSE / variance)"),
        "seconds": measure("training time (s)"),
    },
    "flows-unfolding": {
        "flow_test_nll": "Test NLL of the flow (nats per point)",
        "gaussian_test_nll": "Test NLL of the best Gaussian (nats per point)",
        "flow_density_mass": "Mass of the flow's density on the grid",
        "unfolding_floor": "Noise floor of the distance to the truth",
        "distance_measured": "Distance to the truth, smeared measurement",
        "distance_prior": "Distance to the truth, the simulation's spectrum",
        "distance_ibu": "Distance to the truth, iterative Bayesian unfolding",
        "distance_cinn_one_pass": "Distance to the truth, cINN after one pass",
        "distance_cinn": "Distance to the truth, cINN after every pass",
    },
    "gaussians": {
        "mle": "maximum-likelihood fit",
        "mle_mean_gap_stderrs": "Largest gap of the fitted mean to the truth, in standard errors",
        "kl_truth_to_fit": "KL(truth ‖ fit)",
        "fitted_mean_0": "Fitted mean, x₁",
        "fitted_mean_1": "Fitted mean, x₂",
        "fitted_cov_00": "Fitted covariance, (x₁, x₁)",
        "fitted_cov_01": "Fitted covariance, (x₁, x₂)",
        "fitted_cov_11": "Fitted covariance, (x₂, x₂)",
        "kl_mc": "Monte-Carlo KL estimate",
        "kl_p_q": "KL(P ‖ Q)",
        "kl_q_p": "KL(Q ‖ P)",
        "classifier_gap": "Gap between cross-entropy and NLL, classifier",
        "categorical_identity_gap": "Largest gap of NLL to H + KL, categorical models",
        "categorical_nll": measure("mean NLL of the categorical draws"),
        "categorical_entropy": "Entropy of the categorical draws",
        "uniform": "uniform model",
        "random": "random model",
        "smoothed": "smoothed frequencies",
        "frequencies": "data frequencies (maximum likelihood)",
    },
    "gradients": {
        "z": "z = 2·x0 + x0·sin(x1) + x1³ at the notes' point",
        "forward_tangent_x0": "∂z/∂x0, forward mode",
        "adjoint_x0": "∂z/∂x0, reverse mode (adjoint)",
        "adjoint_x1": "∂z/∂x1, reverse mode (adjoint)",
        "max_diff_to_torch": "Largest difference of the gradient to torch.autograd",
        "forward_vs_reverse": "Largest difference of forward- and reverse-mode Jacobians",
        "bowl_gradient": "Gradient of the bowl",
        "bowl_hessian": "Hessian of the bowl",
        "bowl_f_before": "Bowl f before the Newton step",
        "bowl_f_after": "Bowl f after the Newton step",
        "bowl_forward_gradient": "Gradient of the bowl, forward mode",
        "softmax_123": "softmax([1, 2, 3])",
        "softmax_246": "softmax([2, 4, 6])",
        "softmax_1000": "softmax([1000, 1001, 1002]), stable",
        "cross_entropy_on_logits": "Cross-entropy on logits",
        "softmax_then_nll": "Softmax, then negative log-likelihood",
    },
    "hidden-pca": {"full": "all dimensions"},
    "manual-backprop": {
        "tensor_engine": "Tensor engine",
        "torch": "torch.autograd",
        "finite_differences": "finite differences",
    },
    "mnist1d": {"normal": "digits in order", "shuffled": "shuffled positions"},
    "physics-loss": {
        "plain": "plain field",
        "energy_conserving": "energy-conserving field",
        "inside_mse": measure("derivative MSE inside the training energies"),
        "beyond_mse": measure("derivative MSE beyond the training energies"),
        "beyond_speed": measure("speed beyond the training energies over the true speed (median)"),
        "drift": measure("energy drift at the rollouts' end"),
        "rate": measure("mean squared energy rate"),
    },
    "self-attention": {
        "match_head": "Head that selects best (chosen on validation sequences)",
        "match_weight": "Test weight of the query on its matching key, the selecting head",
        "match_weight_heads": "Test weight of the query on its matching key, mean over heads",
        "match_weight_initial": (
            "Test weight of the query on its matching key, mean over heads, at initialisation"
        ),
        "match_weight_any_head": "Test weight of the query on its matching key, the query's best head",
        "match_weight_any_head_initial": (
            "Test weight of the query on its matching key, the query's best head, at initialisation"
        ),
        "match_selection": "Share of test queries whose most-attended pair (any head) is the matching one",
        "match_selection_initial": (
            "Share of test queries whose most-attended pair (any head) is the matching one, at initialisation"
        ),
        "uniform_weight": "Uniform attention weight 1/(pairs + 1)",
    },
    "sequences": {"gradient_first_over_last": measure("gradient at the first step over the last")},
    "scaling-laws": {
        "data": "data sweep",
        "parameters": "parameter sweep",
        "test_loss": measure("test loss (MSE)"),
        "exponent": measure("power-law exponent"),
        "r_squared": measure("R² of the power law"),
    },
    "training-claims": {
        "mlp": "MLP",
        "cnn": "CNN",
        "backward_operations_ratio": measure("backward over forward operations"),
        "backward_time_ratio": measure("backward over forward time"),
        "full_batch_examples_ratio": "Full batch over minibatch, examples to the same loss",
        "full_batch_time_ratio": "Full batch over minibatch, seconds to the same loss",
    },
    "regularization": {
        "none": "no regulariser",
        "l2": "L2",
        "l1": "L1",
        "dropout": "dropout",
        "early_stopping": "early stopping",
        "augmentation": "augmentation",
        "gap": measure("gap (training minus validation accuracy)"),
        "loss_gap": measure("loss gap (validation minus training cross-entropy)"),
        "zeros_share": measure("share of the weights exactly 0"),
        "path_median_difference": "median relative difference of early stopping and L2 along the weight path",
        "path_points": "L2 strengths inside the early-stopping path",
    },
    "sharpness": {
        "sharpness": measure("largest Hessian eigenvalue of the training loss"),
        "test_error": measure("test error"),
        "gap": measure("generalisation gap (training minus test accuracy)"),
        "rank_sharpness": "Spearman correlation of the batch size and the largest Hessian eigenvalue",
        "rank_test_error": "Spearman correlation of the batch size and the test error",
        "rank_gap": "Spearman correlation of the batch size and the generalisation gap",
        "loss": "trained to the same training loss",
        "steps": measure("SGD steps to the training loss"),
        "loss_rank_sharpness": "at the same training loss: Spearman correlation of the batch size and "
        "the largest Hessian eigenvalue",
        "loss_rank_gap": "at the same training loss: Spearman correlation of the batch size and the "
        "generalisation gap",
        "loss_reached": "batch sizes that reached the training loss",
    },
    "symmetry-three-ways": {
        "plain": "plain CNN",
        "augmented": "CNN with augmentation",
        "penalty": "CNN with the invariance penalty",
        "group_cnn": "group CNN",
        "accuracy": measure("accuracy on upright test digits"),
        "turned_accuracy": measure("accuracy on turned test digits"),
        "invariance": measure("invariance error of the logits"),
    },
    "symmetries": {"max_error_where_claimed": "Largest symmetry error where the symmetry is claimed"},
    "vae": {
        "elbo": measure("negative ELBO (nats per image)"),
        "kl": measure("KL term (nats per image)"),
        "reconstruction": measure("reconstruction term (nats per image)"),
        "iw_nll": measure("importance-weighted NLL (nats per image)"),
    },
    "workshop": {"labs": "Labs run", "index": "Index page of the labs"},
}
