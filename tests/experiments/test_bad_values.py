"""Bad values are refused before a run directory exists.

Every lab's config checks each value against the data and the machine it will meet (in the
dataclasses' ``__post_init__``), so ``biaslab run LAB --set key=value`` with a value that would
crash the lab deep inside NumPy, scikit-learn or torch is one line on stderr naming the key,
exit status 2, and no run directory. These checks happen before any data is loaded: this file
needs no MNIST (except the test that recomputes a constant from it) and runs in seconds.
"""

from __future__ import annotations

import numpy as np
import pytest

import biaslab.config
from biaslab import registry
from biaslab.cli import main
from biaslab.data.availability import require_data
from biaslab.errors import BiaslabError

GIB = 2**30
LABS = [
    e
    for e in registry.all_experiments()
    if e.fn.__module__.startswith(f"{registry.EXPERIMENTS_PACKAGE}.")  # not a test's fake lab
]


@pytest.fixture(scope="module", autouse=True)
def mnist_available():
    """Overrides the conftest's: config errors come before the data check, so no MNIST needed."""


@pytest.fixture
def memory(monkeypatch):
    """``memory(gib)``: pretend this machine has ``gib`` GiB free (16 unless set)."""

    def set_free(gib: float) -> None:
        monkeypatch.setattr(biaslab.config, "available_memory", lambda: int(gib * GIB))

    set_free(16)
    return set_free


# (lab, --set values, substrings the one-line message must hold: the key(s), the range, why)
CASES = [
    # -- xor: every TrainConfig key, and its own
    ("xor", ["epochs=0"], ["epochs=0", ">= 1"]),
    ("xor", ["batch_size=0"], ["batch_size=0", ">= 1"]),
    ("xor", ["lr=0"], ["lr=0.0", "> 0"]),
    ("xor", ["lr=-0.1"], ["lr=-0.1", "> 0"]),
    ("xor", ["lr=inf"], ["lr=", "finite"]),
    ("xor", ["lr=nan"], ["lr=", "finite"]),
    ("xor", ["noise=-0.1"], ["noise=-0.1", "0..100"]),
    ("xor", ["noise=1e6"], ["noise=1000000.0", "0..100"]),
    ("xor", ["n_train=0"], ["n_train=0", ">= 1"]),
    ("xor", ["n_test=0"], ["n_test=0", ">= 1", "validation"]),
    ("xor", ["hidden=0"], ["hidden=0", ">= 1"]),
    ("xor", ["n_train=10"], ["batch_size=32", "n_train=10", "<= 10"]),
    ("xor", ["batch_size=1000"], ["batch_size=1000", "n_train=200", "<= 200"]),
    ("xor", ["momentum=0.9"], ["momentum=0.9", "optimizer=sgd"]),
    ("xor", ["optimizer=sgd", "momentum=1"], ["momentum=1.0", ">= 0 and < 1"]),
    ("xor", ["optimizer=sgd", "nesterov=true"], ["nesterov=true", "momentum > 0"]),
    ("xor", ["optimizer=adamw", "nesterov=true"], ["nesterov=true", "optimizer=sgd"]),
    ("xor", ["schedule=onecycle", "warmup=0"], ["warmup=0.0", "> 0 and < 1"]),
    ("xor", ["warmup=1"], ["warmup=1.0", "> 0 and < 1"]),
    ("xor", ["patience=-1"], ["patience=-1", ">= 0"]),
    ("xor", ["monitor=val_acc"], ["monitor='val_acc'", "val_accuracy"]),
    ("xor", ["max_grad_norm=0"], ["max_grad_norm=0.0", "> 0"]),
    ("xor", ["weight_decay=-1"], ["weight_decay=-1.0", ">= 0"]),
    ("xor", ["min_delta=-0.5"], ["min_delta=-0.5", ">= 0"]),
    ("xor", ["checkpoint_every=-1"], ["checkpoint_every=-1", ">= 0"]),
    ("xor", ["hidden=100000000"], ["hidden=100000000", "GiB"]),
    ("xor", ["n_test=10000000000"], ["n_test=10000000000", "GiB"]),
    # -- mnist-mlp: MnistSizes, the batch against the training set, the model's memory
    # -- Day 3
    ("gaussians", ["n_samples=2"], ["n_samples=2", "3..10000000", "covariance"]),
    ("gaussians", ["mc_sizes=100,10"], ["mc_sizes=(100, 10)", "increasing"]),
    ("gaussians", ["mc_sizes=1,10"], ["mc_sizes=1,10", "2..10000000", "standard error"]),
    ("gaussians", ["mc_repeats=1"], ["mc_repeats=1", "2..10000", "spread"]),
    ("vae", ["latent_dim=0"], ["latent_dim=0", "1..1024"]),
    ("vae", ["iw_samples=0"], ["iw_samples=0", "1..10000"]),
    ("vae", ["grid=1"], ["grid=1", "2..40"]),
    ("vae", ["monitor=val_accuracy"], ["monitor='val_accuracy'", "val_kl"]),
    ("diffusion-mnist", ["channels=8,16,32,64"], ["channels=(8, 16, 32, 64)", "at most 3 resolutions"]),
    ("diffusion-mnist", ["sample_steps=5000"], ["sample_steps=5000", "timesteps=1000"]),
    ("diffusion-mnist", ["n_samples=5"], ["n_samples=5", "10..10000"]),
    ("diffusion-mnist", ["time_dim=1"], ["time_dim=1", "2..1024"]),
    ("autoencoder-uses", ["noise_std=0"], ["noise_std=0.0", "> 0 and <= 10"]),
    ("autoencoder-uses", ["latent_dim=1000"], ["latent_dim=1000", "1..784"]),
    ("autoencoder-uses", ["n_ood=20000"], ["n_ood=20000", "10,000 images"]),
    # -- physics-loss: the training states, the energies, the penalty, the rollouts
    ("physics-loss", ["train_energy=0"], ["train_energy=0.0", "g L"]),
    ("physics-loss", ["beyond_energy=0.2"], ["beyond_energy=0.2", "above train_energy"]),
    ("physics-loss", ["weight=-1"], ["weight=-1.0", "0..1e+06"]),
    ("physics-loss", ["dt=0"], ["dt=0.0"]),
    ("physics-loss", ["train_sizes=4"], ["train_sizes=4", "8..1000000"]),
    # -- depth: the depths, the width, the budget
    ("depth", ["depths=0"], ["depths=0", "1..1000"]),
    ("depth", ["width=0"], ["width=0", "1..4096"]),
    ("depth", ["epochs=3"], ["epochs", "steps"]),
    # -- scaling-laws: the sweeps and the budget
    ("scaling-laws", ["widths=4,8"], ["widths=(4, 8)", "at least 3 distinct values"]),
    (
        "scaling-laws",
        ["train_sizes=64,128,256", "batch_size=128"],
        ["batch_size=128", "the smallest of train_sizes=64,128,256"],
    ),
    ("scaling-laws", ["steps=0"], ["steps=0", "1..10000000"]),
    # -- adam-vs-sgd's learning-rate window
    ("adam-vs-sgd", ["sweep_lrs=0.1,0.01"], ["sweep_lrs=(0.1, 0.01)", "increasing"]),
    ("adam-vs-sgd", ["sweep_lrs=0.1"], ["sweep_lrs=(0.1,)", "2 or more"]),
    ("adam-vs-sgd", ["sweep_lrs=0,0.1"], ["sweep_lrs=", "learning rates"]),
    ("adam-vs-sgd", ["sweep_lrs=0.001,0.01,1"], ["sweep_lrs=(0.001, 0.01, 1.0)", "one factor per step"]),
    ("adam-vs-sgd", ["sweep_n_train=0"], ["sweep_n_train=0", "1..55000"]),
    ("adam-vs-sgd", ["sweep_epochs=0"], ["sweep_epochs=0", "1..10000"]),
    ("adam-vs-sgd", ["sweep_target=0"], ["sweep_target=0.0", "a cross-entropy"]),
    # -- sequences' spectral radii
    ("sequences", ["radii=1.5,0.5"], ["radii=(1.5, 0.5)", "increasing"]),
    ("sequences", ["radii=0,1"], ["radii=", "spectral radii"]),
    ("sequences", ["timed_lengths=50,25,100"], ["timed_lengths=(50, 25, 100)", "increasing"]),
    ("sequences", ["timed_lengths=10,20"], ["timed_lengths=(10, 20)", "at least 3"]),
    ("sequences", ["timing_batch=0"], ["timing_batch=0"]),
    # -- test-set: the models, the sizes, the two test sets
    ("test-set", ["models=1"], ["models=1", "2..1000"]),
    ("test-set", ["sizes=500,50"], ["sizes=(500, 50)", "increasing"]),
    ("test-set", ["sizes=50,100000"], ["sizes=", "within the unseen digits"]),
    ("test-set", ["draws=1"], ["draws=1", "2..1000000"]),
    ("test-set", ["select=0"], ["select=0", "the reused test set"]),
    ("test-set", ["fresh=50000"], ["fresh=50000", "the fresh test set"]),
    ("test-set", ["n_train=10"], ["batch_size=64", "n_train=10"]),
    # -- gnn-nodes' relay paths
    ("gnn-nodes", ["relay_hops=0"], ["relay_hops=0", "1..20"]),
    ("gnn-nodes", ["relay_paths=4"], ["relay_paths=4", "8..100000"]),
    # -- depth's batch sizes for batch norm against layer norm
    ("depth", ["small_batches=1,64"], ["small_batches=", "batch norm needs 2 or more"]),
    ("depth", ["small_batches=64,2"], ["small_batches=(64, 2)", "the smaller first"]),
    ("depth", ["batch_epochs=0"], ["batch_epochs=0", "1..1000"]),
    # -- bayesian-view: the linear study, the polynomial degrees, the dropout network's masks
    ("bayesian-view", ["noise=0"], ["noise=0.0", "the noise's standard deviation"]),
    ("bayesian-view", ["prior_std=-1"], ["prior_std=-1.0", "the weights' standard deviation"]),
    ("bayesian-view", ["lambdas=1,0.1,10"], ["lambdas=(1.0, 0.1, 10.0)", "increasing"]),
    ("bayesian-view", ["lambdas=0,1,10"], ["lambdas=", "ridge strengths"]),
    ("bayesian-view", ["degrees=1,2"], ["degrees=(1, 2)", "3 or more"]),
    ("bayesian-view", ["ridge_train=1"], ["ridge_train=1", "2..1000000"]),
    ("bayesian-view", ["repeats=0"], ["repeats=0", "1..100000"]),
    ("bayesian-view", ["dropout=1"], ["dropout=1.0", "a probability"]),
    ("bayesian-view", ["mc_samples=5,1"], ["mc_samples=(5, 1)", "increasing"]),
    ("bayesian-view", ["mc_samples=0,5"], ["mc_samples=", "1..100000"]),
    # -- training-claims: the minibatch against the training set, the target loss
    ("training-claims", ["minibatch=20000"], ["minibatch=20000", "at most the training set"]),
    ("training-claims", ["target_loss=3"], ["target_loss=3.0", "chance"]),
    ("training-claims", ["learning_rates=0"], ["learning_rates=0.0", "> 0"]),
    # -- regularization: the strengths, early stopping's patience, the proximal steps' plain SGD
    ("regularization", ["l1=0"], ["l1=0.0", "> 0"]),
    ("regularization", ["dropout=1"], ["dropout=1.0", "a probability"]),
    ("regularization", ["patience=0"], ["patience=0", "early-stopping"]),
    ("regularization", ["momentum=0.9"], ["momentum=0.9", "plain gradient steps"]),
    ("regularization", ["max_shift=0"], ["max_shift=0", "1..13"]),
    # -- sharpness: the batch sizes, the probe
    ("sharpness", ["batch_sizes=8000"], ["batch_sizes=8000", "the size of the training set"]),
    ("sharpness", ["probe=0"], ["probe=0", "1..1000000"]),
    ("sharpness", ["batch_size=64"], ["batch_size", "batch_sizes"]),
    # -- embeddings: the modulus, the pairs
    ("embeddings", ["modulus=30"], ["modulus=30", "prime"]),
    ("embeddings", ["train_share=1"], ["train_share=1.0", "a share of the pairs"]),
    ("embeddings", ["modulus=5", "batch_size=128"], ["batch_size=128", "<= 15", "modulus²=25 pairs"]),
    # -- equivariance: the step budget, the clusters, the models
    ("equivariance", ["steps=0"], ["steps=0", "1..10000000"]),
    ("equivariance", ["particles=1"], ["particles=1", "2..64"]),
    ("equivariance", ["train_sizes=32", "batch_size=64"], ["batch_size=64", "train_sizes=32"]),
    ("equivariance", ["epochs=5"], ["epochs", "steps"]),
    # -- symmetry-three-ways: the digits, the penalty weights, the budget
    ("symmetry-three-ways", ["digits=3"], ["digits=3", "at least two different digits"]),
    ("symmetry-three-ways", ["weights=0"], ["weights=0", "> 0"]),
    ("symmetry-three-ways", ["train_sizes=5"], ["train_sizes=5", "10..60000"]),
    ("symmetry-three-ways", ["steps=0"], ["steps=0", "1..10000000"]),
    # -- flows-unfolding: the flows' sizes, the unfolding's samples, bins and passes
    ("flows-unfolding", ["layers=0"], ["layers=0", "1..64"]),
    ("flows-unfolding", ["n_measured=5"], ["n_measured=5", "100.."]),
    ("flows-unfolding", ["bins=1"], ["bins=1", "2..1000"]),
    ("flows-unfolding", ["unfold_passes=0"], ["unfold_passes=0", "1..20"]),
    ("flows-unfolding", ["unfold_batch_size=200000"], ["unfold_batch_size=200000", "must be in 1.."]),
    ("diffusion-spiral", ["ddim_steps=20,50"], ["ddim_steps=(20, 50)", "decreasing"]),
    ("diffusion-spiral", ["ddim_steps=2000"], ["ddim_steps=2000", "timesteps=1000"]),
    ("diffusion-spiral", ["noise=2"], ["noise=2.0", "0..1", "radius"]),
    ("diffusion-spiral", ["timesteps=1"], ["timesteps=1", "2..10000"]),
    ("diffusion-spiral", ["references=0"], ["references=0", "1..100"]),
    # -- Day 4 and the lecture claims
    ("symmetries", ["length=2"], ["length=2", "4..256", "non-trivial permutation"]),
    ("symmetries", ["channels=0"], ["channels=0", "1..64"]),
    ("claims", ["lengths=8,4"], ["lengths=(8, 4)", "increasing"]),
    ("claims", ["fit_points=9"], ["fit_points=9", "must be in 2..", "power-law fit"]),
    ("claims", ["lengths=8,16,100000"], ["lengths=100000", "GiB", "score matrices"]),
    ("mlp-vs-cnn-shift", ["max_shift=28"], ["max_shift=28", "1..27", "28-pixel image"]),
    ("mlp-vs-cnn-shift", ["cnn_channels=8,0"], ["cnn_channels=(8, 0)", ">= 1 channel"]),
    ("gnn-nodes", ["homophily=1.5"], ["homophily=1.5", "0..1"]),
    ("gnn-nodes", ["nodes=10"], ["nodes=10", "32..20000", "8 per class"]),
    ("self-attention", ["pairs=20"], ["pairs=20", "1..16", "distinct keys"]),
    ("self-attention", ["dim=30"], ["dim=30", "multiple of the 4 attention heads"]),
    ("mnist1d", ["n_val=4000"], ["n_val=4000", "1..3999"]),
    ("mnist1d", ["epochs=3"], ["'epochs' is not used", "each model trains for its own <model>_epochs"]),
    ("mnist1d", ["batch_size=3600"], ["batch_size=3600", "n_train=400", "<= 400"]),
    ("mnist1d", ["seeds=0"], ["seeds=0", "1..20"]),
    ("sequences", ["lengths=10,5"], ["lengths=(10, 5)", "increasing"]),
    ("sequences", ["hidden=30"], ["hidden=30", "multiple of the Transformer's 4 heads"]),
    ("sequences", ["n_train=0"], ["n_train=0", "examples the generator draws"]),
    ("sequences", ["restarts=0"], ["restarts=0", "1..20"]),
    ("bias-variance", ["degrees=3,1"], ["degrees=(3, 1)", "increasing"]),
    ("bias-variance", ["n_datasets=1"], ["n_datasets=1", "2..100000"]),
    ("calibration", ["n_bins=0"], ["n_bins=0", "1..1000"]),
    ("calibration", ["overfit_epochs=0"], ["overfit_epochs=0", "1..100000"]),
    ("calibration", ["overfit_n_train=0"], ["overfit_n_train=0", "training digits"]),
    ("calibration", ["n_train=500", "overfit_n_train=1000"], ["overfit_n_train=1000", "1..500"]),
    ("rotated-mnist", ["angles=90,0"], ["angles=(90.0, 0.0)", "increasing degrees"]),
    ("rotated-mnist", ["shift_samples=5"], ["shift_samples=5", "20..1000000"]),
    ("ood", ["n_ood=5"], ["n_ood=5", "10..10000", "smallest OOD set"]),
    ("ood", ["knn_k=100", "knn_train=50"], ["knn_train=50", "at least knn_k"]),
    ("ood", ["cnn_channels=8,0"], ["cnn_channels=8,0", "each value", "1..1024"]),
    ("ood", ["cnn_channels=4,4,4,4,4"], ["cnn_channels=(4, 4, 4, 4, 4)", "at most 4 blocks"]),
    ("adversarial", ["epsilons=0.3,0.1"], ["epsilons=(0.3, 0.1)", "increasing"]),
    ("adversarial", ["robust_eps=0"], ["robust_eps=0.0", "> 0 and <= 1"]),
    ("decision", ["cnn_channels=8,0"], ["cnn_channels=8,0", "each value", "1..1024"]),
    ("decision", ["cnn_channels=4,4,4,4,4"], ["cnn_channels=(4, 4, 4, 4, 4)", "at most 4 blocks"]),
    ("decision", ["small_fraction=0"], ["small_fraction=0.0", "share of the training set"]),
    ("decision", ["curve_points=1"], ["curve_points=1", "2..8", "two sizes"]),
    ("decision", ["use_shift=14"], ["use_shift=14", "0..13"]),
    ("decision", ["min_accuracy=1.5"], ["min_accuracy=1.5", "0..1", "fraction"]),
    ("decision", ["n_ood=6000"], ["n_ood=6000", "two disjoint halves"]),
    ("decision", ["n_val=100"], ["n_ood=200", "n_val=100"]),  # the quick profile's n_ood
    ("decision", ["small_fraction=0.001"], ["small_fraction=0.001", "2 training digits", "knn_k=5"]),
    ("decision", ["n_train=1000", "curve_points=8"], ["100 training digits", "= 128"]),
    ("mnist-mlp", ["n_val=0"], ["n_val=0", "1..59999", "the validation set is evaluated after every epoch"]),
    ("mnist-mlp", ["n_val=60000"], ["n_val=60000", "1..59999", "60000 training images"]),
    ("mnist-mlp", ["n_train=0"], ["n_train=0", "1..59500"]),
    ("mnist-mlp", ["n_train=60000"], ["n_train=60000", "1..59500", "n_val=500"]),
    ("mnist-mlp", ["n_test=0"], ["n_test=0", "1..10000"]),
    ("mnist-mlp", ["n_test=10001"], ["n_test=10001", "1..10000"]),
    ("mnist-mlp", ["n_train=100"], ["batch_size=256", "n_train=100", "<= 100"]),
    ("mnist-mlp", ["n_train=none", "n_val=59900"], ["batch_size=256", "<= 100", "n_val=59900"]),
    ("mnist-mlp", ["hidden=-5"], ["hidden=-5", ">= 1"]),
    ("mnist-mlp", ["hidden=100000000"], ["hidden=100000000", "784-100000000-10", "GiB"]),
    ("mnist-mlp", ["epochs=-1"], ["epochs=-1", ">= 1"]),
    # -- hidden-pca: what PCA, the 5-NN vote and silhouette scores need
    ("hidden-pca", ["n_train=1"], ["n_train=1", "5..59500", "5-nearest-neighbour"]),
    ("hidden-pca", ["n_test=5"], ["n_test=5", "11..10000", "silhouette"]),
    ("hidden-pca", ["silhouette_points=2"], ["silhouette_points=2", "11..10000", "silhouette"]),
    ("hidden-pca", ["silhouette_points=20000"], ["silhouette_points=20000", "11..10000"]),
    ("hidden-pca", ["hidden=1"], ["hidden=1", ">= 2", "PCA"]),
    ("hidden-pca", ["hidden=50000000"], ["hidden=50000000", "GiB"]),
    ("hidden-pca", ["n_val=0"], ["n_val=0", "1..59995"]),
    # -- attention-vs-priors: the sizes of each task, the Transformers' shape
    ("attention-vs-priors", ["mnist_sizes=1000,250"], ["mnist_sizes=(1000, 250)", "increasing"]),
    ("attention-vs-priors", ["mnist1d_sizes=250"], ["mnist1d_sizes=(250,)", "at least 2"]),
    ("attention-vs-priors", ["mnist1d_sizes=250,4000"], ["mnist1d_sizes=", "1..3500", "minus 500"]),
    ("attention-vs-priors", ["mnist_sizes=250,59000"], ["mnist_sizes=", "1..2000", "MNIST training set"]),
    ("attention-vs-priors", ["n_train=300"], ["mnist_sizes=", "1..300", "n_train=300"]),
    ("attention-vs-priors", ["dim=30"], ["dim=30", "multiple of the Transformers' 4 heads"]),
    ("attention-vs-priors", ["patch=5"], ["patch=5", "28-pixel side"]),
    ("attention-vs-priors", ["signal_patch=3"], ["signal_patch=3", "40 samples"]),
    ("attention-vs-priors", ["steps=0"], ["steps=0", "1..10000000"]),
    ("attention-vs-priors", ["batch_size=300"], ["batch_size=300", "smallest training size"]),
    # -- latent-dimension: the code sizes, the estimator's neighbours, the walks
    ("latent-dimension", ["latent_dims=8,2"], ["latent_dims=(8, 2)", "increasing"]),
    ("latent-dimension", ["latent_dims=8"], ["latent_dims=(8,)", "at least 2"]),
    ("latent-dimension", ["latent_dims=2,1000"], ["latent_dims=", "1..784"]),
    ("latent-dimension", ["within=0"], ["within=0.0", "> 0"]),
    ("latent-dimension", ["samples=0"], ["samples=0", "1..100000"]),
    ("latent-dimension", ["neighbours=1"], ["neighbours=1", "2..1000"]),
    ("latent-dimension", ["n_train=10"], ["neighbours=20", "training set"]),
    ("latent-dimension", ["walks=2000"], ["walks=2000", "two test digits"]),
    ("latent-dimension", ["walk_steps=2"], ["walk_steps=2", "3..100"]),
    ("latent-dimension", ["hidden=100000,100000"], ["hidden=100000,100000", "GiB"]),
    # -- autoencoder-2d: the interpolation's digits, PCA-2, the figure, the model's memory
    ("autoencoder-2d", ["n_test=5"], ["n_test=5", "62..10000", "every digit"]),
    ("autoencoder-2d", ["n_test=61"], ["n_test=61", "62..10000"]),
    ("autoencoder-2d", ["n_train=1"], ["n_train=1", "2..59500", "PCA-2"]),
    ("autoencoder-2d", ["steps=1"], ["steps=1", "2..25"]),
    ("autoencoder-2d", ["steps=1000"], ["steps=1000", "2..25"]),
    ("autoencoder-2d", ["hidden=64,0"], ["hidden=64,0", "each value must be >= 1"]),
    ("autoencoder-2d", ["hidden="], ["hidden=", "at least one value"]),
    ("autoencoder-2d", ["hidden=100000,100000"], ["hidden=100000,100000", "autoencoder", "GiB"]),
    ("autoencoder-2d", ["monitor=val_accuracy"], ["monitor='val_accuracy'", "train_loss, val_loss"]),
    ("autoencoder-2d", ["linear_epochs=0"], ["linear_epochs=0", "1..10000"]),
    ("autoencoder-2d", ["linear_lr=0"], ["linear_lr=0.0", "> 0"]),
    ("autoencoder-2d", ["n_train=500"], ["linear_batch_size=1024", "1..500", "n_train=500"]),
    # -- lr-sweep: every rate, distinct rates, the noise fraction
    ("lr-sweep", ["learning_rates=0.1,0"], ["learning_rates=0.1,0.0", "each value must be > 0"]),
    ("lr-sweep", ["learning_rates=0.1,-1"], ["learning_rates=0.1,-1.0", "> 0"]),
    ("lr-sweep", ["learning_rates=0.1,inf"], ["learning_rates=", "finite"]),
    ("lr-sweep", ["learning_rates="], ["learning_rates=", "at least one value"]),
    ("lr-sweep", ["learning_rates=0.1,1e-1"], ["learning_rates=0.1,0.1", "twice"]),
    ("lr-sweep", ["label_noise=1.5"], ["label_noise=1.5", "0..1"]),
    ("lr-sweep", ["label_noise=-0.1"], ["label_noise=-0.1", "0..1"]),
    ("lr-sweep", ["label_noise=nan"], ["label_noise=", "finite"]),
    ("lr-sweep", ["n_val=0"], ["n_val=0", "the validation set is evaluated after every epoch"]),
    ("lr-sweep", ["lr=0.1"], ["'lr' is not used", "once per value of learning_rates"]),
    ("lr-sweep", ["batch_size=500"], ["batch_size=500", "n_train=200"]),
    ("lr-sweep", ["hidden=100000000"], ["hidden=100000000", "GiB"]),
    # -- gradients: float64 must hold z, its derivatives and the step
    ("gradients", ["x1=1e200"], ["x1=1e+200", "-1e+100..1e+100"]),
    ("gradients", ["x0=-1e101"], ["x0=-1e+101", "-1e+100..1e+100"]),
    ("gradients", ["x0=nan"], ["x0=", "finite"]),
    ("gradients", ["step_size=0"], ["step_size=0.0", "> 0 and <= 1e+100"]),
    ("gradients", ["step_size=-0.1"], ["step_size=-0.1", "> 0"]),
    ("gradients", ["step_size=inf"], ["step_size=", "finite"]),
    # -- manual-backprop: LoopConfig, MnistSizes, the NumPy model and its gradient check
    ("manual-backprop", ["epochs=0"], ["epochs=0", ">= 1"]),
    ("manual-backprop", ["lr=0"], ["lr=0.0", "> 0"]),
    ("manual-backprop", ["batch_size=5000"], ["batch_size=5000", "n_train=2000"]),
    ("manual-backprop", ["hidden=0"], ["hidden=0", ">= 1"]),
    ("manual-backprop", ["hidden=2000000"], ["hidden=2000000", "NumPy MLP", "GiB"]),
    ("manual-backprop", ["n_val=0"], ["n_val=0", "1..59999"]),
    # -- adam-vs-sgd
    ("adam-vs-sgd", ["adam_lr=0"], ["adam_lr=0.0", "> 0"]),
    ("adam-vs-sgd", ["adam_lr=inf"], ["adam_lr=", "finite"]),
    ("adam-vs-sgd", ["batch_size=0"], ["batch_size=0", ">= 1"]),
    ("adam-vs-sgd", ["hidden=5000000"], ["hidden=5000000", "GiB"]),
    ("adam-vs-sgd", ["n_test=0"], ["n_test=0", "1..10000"]),
    # -- qm9: the target, the models, the split, the learning-curve sizes, the schedule
    ("qm9", ["target=gapp"], ["target='gapp'", "choose one of", "gap"]),
    ("qm9", ["models=gcn,foo"], ["models=gcn,foo", "foo", "choose from", "egnn"]),
    ("qm9", ["models="], ["models=", "at least one value"]),
    # -- compare: the curve, the data named, the candidates for the data's kind
    ("compare", ["curve_points=0"], ["curve_points=0", "1..10"]),
    ("compare", ["curve_seeds=11"], ["curve_seeds=11", "1..10"]),
    ("compare", ["data=sklearn:nope"], ["sklearn:nope", "choose one of", "sklearn:digits"]),
    ("compare", ["data=/nonexistent.csv"], ["no file or folder", "/nonexistent.csv"]),
    ("compare", ["models=gru"], ["models=gru", "no candidate gru for image data", "CNN"]),
    ("qm9", ["split=temporal"], ["split='temporal'", "choose one of random, scaffold"]),
    ("qm9", ["train_sizes=5000,1000"], ["train_sizes=5000,1000", "increasing order"]),
    ("qm9", ["train_sizes=1000,1000"], ["train_sizes=1000,1000", "distinct"]),
    ("qm9", ["train_sizes=5,1000"], ["train_sizes=5,1000", "10..110000"]),
    ("qm9", ["split=scaffold", "train_sizes=1000,110000"], ["train_sizes=", "scaffold split"]),
    ("qm9", ["val_size=0"], ["val_size=0", "10..10000"]),
    ("qm9", ["hidden=4"], ["hidden=4", "8..4096"]),
    ("qm9", ["loss=huber"], ["loss='huber'", "choose one of l1, mse"]),
    ("qm9", ["schedule=linear"], ["schedule='linear'", "choose one of constant, cosine, onecycle, step"]),
    # -- power-spectrum: the shifts, the classifiers, the random fields
    ("power-spectrum", ["max_shift=0"], ["max_shift=0", "1..27", "0 would not shift it"]),
    ("power-spectrum", ["max_shift=28"], ["max_shift=28", "1..27", "28-pixel digit"]),
    ("power-spectrum", ["hidden=0"], ["hidden=0", "1..100000"]),
    ("power-spectrum", ["fields=0"], ["fields=0", "1..256", "random fields"]),
    ("power-spectrum", ["field_size=4"], ["field_size=4", "8..256", "pixels per side"]),
    ("power-spectrum", ["field_slope=-1"], ["field_slope=-1.0", "0..6", "power-law index"]),
    ("power-spectrum", ["n_train=10"], ["batch_size=128", "n_train=10", "<= 10"]),
    # -- universal-approximation: the training, the teacher's students, the bump's narrow networks
    ("universal-approximation", ["width_multiples=2,4"], ["width_multiples=(2, 4)", "the first 1"]),
    ("universal-approximation", ["width_multiples=1"], ["width_multiples=(1,)", "2 or more"]),
    ("universal-approximation", ["width_multiples=1,4,2"], ["width_multiples=(1, 4, 2)", "increasing"]),
    ("universal-approximation", ["seeds=1"], ["seeds=1", "2..1000", "random starts"]),
    ("universal-approximation", ["target=0"], ["target=0.0", "> 0 and < 1", "teacher's output variance"]),
    ("universal-approximation", ["target=1"], ["target=1.0", "> 0 and < 1"]),
    ("universal-approximation", ["inputs=0"], ["inputs=0", "1..1000", "input dimension"]),
    ("universal-approximation", ["depths=4,2"], ["depths=(4, 2)", "increasing"]),
    ("universal-approximation", ["depths=0"], ["depths=0", "1..1000", "hidden layers"]),
    ("universal-approximation", ["bump_width=0"], ["bump_width=0.0", "0.01..10"]),
    ("universal-approximation", ["grid=2"], ["grid=2", "3..1000000", "fine grid"]),
    ("universal-approximation", ["teacher_steps=0"], ["teacher_steps=0", "1..10000000"]),
    ("universal-approximation", ["narrow_seeds=0"], ["narrow_seeds=0", "1..1000"]),
    ("universal-approximation", ["n_train=100"], ["batch_size=256", "n_train=100"]),
    ("universal-approximation", ["lr=0"], ["lr=0.0", "> 0 and <= 10", "Adam"]),
    ("universal-approximation", ["lr=nan"], ["lr=", "finite"]),
    ("universal-approximation", ["batch_size=0"], ["batch_size=0", "1..1000000"]),
    ("universal-approximation", ["patience=3"], ["unknown config key 'patience'", "teacher_steps"]),
    (
        "universal-approximation",
        ["seeds=1000", "n_train=1000000", "inputs=1000"],
        ["seeds=1000", "n_train=1000000", "GiB"],
    ),
    # -- workshop: its days (0 is the workshop itself)
    ("workshop", ["days=0"], ["days=0", "1..7", "the workshop itself"]),
    ("workshop", ["days=8"], ["days=8", "1..7"]),
    ("workshop", ["days="], ["days=", "at least one value"]),
]


def case_id(case) -> str:
    lab, sets, _ = case
    return f"{lab}:{'+'.join(sets)}"


@pytest.mark.parametrize("lab, sets, needles", CASES, ids=[case_id(c) for c in CASES])
def test_bad_value_is_one_line_and_no_run_directory(
    tmp_path, monkeypatch, capsys, memory, lab, sets, needles
):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "r"
    args = ["run", lab, "--quick", "--no-progress", "--out", str(out)]
    for value in sets:
        args += ["--set", value]
    assert main(args) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and captured.err.endswith("\n"), captured.err
    assert lines[0].startswith("biaslab: error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], f"{needle!r} not in {lines[0]!r}"
    assert not out.exists() and not (tmp_path / "runs").exists()
    assert list(tmp_path.iterdir()) == []


def test_every_lab_has_bad_value_cases():
    """Each lab has cases here; a new lab should get its own."""
    assert {e.name for e in LABS} <= {lab for lab, _, _ in CASES}
    assert len(CASES) >= 40


@pytest.mark.parametrize("profile", registry.PROFILES)
@pytest.mark.parametrize("exp", LABS, ids=[e.name for e in LABS])
def test_shipped_profiles_are_valid_on_a_small_machine(memory, exp, profile):
    """The checks never refuse what the labs ship, even with 2 GiB free."""
    memory(2)
    cfg = exp.make_config(profile)
    assert type(cfg) is exp.config


@pytest.mark.parametrize(
    "lab, overrides",
    [
        ("xor", {"n_train": "32", "n_test": "1", "noise": "100", "hidden": "1"}),
        ("xor", {"optimizer": "sgd", "momentum": "0.9", "nesterov": "true"}),
        ("xor", {"monitor": "val_accuracy", "patience": "3"}),
        ("mnist-mlp", {"n_train": "256", "n_val": "1", "n_test": "1"}),
        ("mnist-mlp", {"n_train": "none", "n_val": "59744"}),  # 256 training images left
        ("hidden-pca", {"n_train": "5", "batch_size": "5", "n_test": "11", "silhouette_points": "11"}),
        ("hidden-pca", {"hidden": "2", "silhouette_points": "10000"}),
        (
            "autoencoder-2d",
            {"n_test": "62", "n_train": "2", "batch_size": "2", "linear_batch_size": "2", "steps": "2"},
        ),
        ("autoencoder-2d", {"steps": "25", "hidden": "8,4,2", "monitor": "train_loss"}),
        ("lr-sweep", {"learning_rates": "1e-300,1e30", "label_noise": "1"}),
        ("gradients", {"x0": "-1e100", "x1": "1e100", "step_size": "1e100"}),
        ("manual-backprop", {"n_train": "1", "batch_size": "1"}),
        ("adam-vs-sgd", {"adam_lr": "1e-9", "n_train": "64"}),
        ("workshop", {"days": "1,6"}),
    ],
)
def test_edge_values_are_accepted(memory, lab, overrides):
    """The smallest and largest allowed values pass (the ranges are not stricter than needed)."""
    exp = registry.get(lab)
    assert type(exp.make_config("quick", overrides)) is exp.config


def test_min_test_for_pairs_is_the_first_prefix_of_the_test_set_holding_every_digit():
    """autoencoder-2d's MIN_TEST_FOR_PAIRS, recomputed from the real MNIST test labels."""
    try:
        require_data(("mnist",))
    except BiaslabError as exc:
        pytest.skip(str(exc))
    from biaslab.data.mnist import load_mnist
    from biaslab.experiments.autoencoder_2d import MIN_TEST_FOR_PAIRS, PAIRS

    labels = load_mnist().y_test
    digits = {d for pair in PAIRS for d in pair}
    first = max(int(np.flatnonzero(labels == d)[0]) for d in digits) + 1
    assert MIN_TEST_FOR_PAIRS == max(first, 8)  # 8: the reconstructions figure's images
    # hidden-pca's silhouette minimum: its first 11 test images hold at least 2 digits
    from biaslab.experiments.hidden_pca import SILHOUETTE_MIN

    assert 2 <= len(set(labels[:SILHOUETTE_MIN].tolist())) < SILHOUETTE_MIN
