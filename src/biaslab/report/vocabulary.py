"""The shared words of metric labels, for :mod:`biaslab.report.labels`: what a word means in
every lab (:data:`MEASURES`, :data:`MODIFIERS`, :data:`PARAMETERS`, :data:`NAMES`). What one lab
means by a word is the lab's own, declared beside its metrics (``WORDS``; :mod:`biaslab.records`)
and read from its results.json; it is consulted first. Keys are the words of a metric key joined
by ``_``, lowercase. A test keeps every lab's metrics free of unknown words.
"""

from __future__ import annotations

from biaslab.records import Term, measure, param

__all__ = ["MEASURES", "MODIFIERS", "NAMES", "PARAMETERS", "Term", "measure", "param"]


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
