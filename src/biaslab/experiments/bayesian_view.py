"""Day 4 - inductive bias as a prior: weight decay is a Gaussian prior, the evidence sets its
strength, and dropout trains an ensemble.

The inductive-bias slides: "We can draw an analogy with Bayesian inference! The Inductive Bias
plays a similar role as the Prior p(θ) in Bayes theorem". The workshop book §4.2 makes it exact for
the softest bias, L2 regularization: "Equivalent, under a Bayesian interpretation, to a Gaussian
prior on the weights", and says of dropout "The trained model behaves as an ensemble."

Three measurements (:mod:`biaslab.evaluate.bayes_linear`, :mod:`biaslab.evaluate.mc_dropout`):

1. Linear regression with noise σ and a prior N(0, τ²) on the weights: the posterior's mode
   (MAP) is ridge regression at λ = σ²/τ², to rounding (a check of the identity, Bishop 2006
   eq. 3.55).
2. The evidence p(t | λ), the probability of the training targets with the weights integrated
   out, chooses λ from the training rows alone; beside it, the λ a validation split chooses, on
   many data sets drawn from the prior (the true λ = σ²/τ² known). And Occam's razor: over
   polynomial degrees the evidence peaks at a middling degree while the training error keeps
   falling (Bishop 2006 §3.4).
3. An MNIST MLP trained with dropout: the average of T random masks' predictions (Monte-Carlo
   dropout) against one pass with every unit kept (weight scaling), T from 1 up (Srivastava et
   al. 2014 §7.5).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from biaslab.config import check_batch_fits, check_range
from biaslab.data.mnist import QUICK_SIZES, MnistSizes, mnist_splits_for
from biaslab.errors import ConfigError
from biaslab.evaluate.bayes_linear import BayesianLinearRegression, log_evidence, posterior, ridge
from biaslab.evaluate.mc_dropout import mc_dropout_probs, weight_scaled_probs
from biaslab.nn import MLP
from biaslab.records import param
from biaslab.registry import experiment
from biaslab.report import plots
from biaslab.train.config import ClassifierTraining
from biaslab.train.recipes import fit_classifier

SLIDES_PRIOR = "inductive-bias slides, 'We can draw an analogy with Bayesian inference!'"
BOOK_REGULARIZATION = "workshop book §4.2 (Constraints and regularization)"
DECADES = 1.0  # biaslab's target: the evidence's λ within one decade of the validation's
DROPOUT_POINTS = 0.5  # biaslab's target: Monte-Carlo dropout's accuracy within 0.5 points


@dataclass(frozen=True)
class BayesianViewConfig:
    """The linear study (drawn from the prior), the polynomial study (Occam's razor) and the
    dropout network."""

    features: int = 20  # inputs of the linear model, each N(0, 1)
    ridge_train: int = 30  # few rows for 20 weights: the prior matters
    ridge_val: int = 30  # the validation split that chooses λ the usual way
    ridge_test: int = 2000
    noise: float = 0.5  # σ of the targets' noise
    prior_std: float = 1.0  # τ of the weights, drawn from the prior N(0, τ²)
    lambdas: tuple[float, ...] = tuple(float(v) for v in np.logspace(-3, 3, 25))
    repeats: int = 50  # data sets drawn for the choice of λ
    degrees: tuple[int, ...] = tuple(range(13))  # polynomials for Occam's razor
    occam_n: int = 30
    occam_noise: float = 0.3
    data: MnistSizes = MnistSizes(n_train=10_000)
    hidden: int = 512
    dropout: float = 0.5
    train: ClassifierTraining = ClassifierTraining(epochs=10, batch_size=128, lr=1e-3)
    mc_samples: tuple[int, ...] = (1, 2, 5, 10, 20, 50, 100)

    def __post_init__(self):
        check_range(self, "features", 1, 10_000)
        check_range(self, "ridge_train", 2, 1_000_000)
        check_range(self, "ridge_val", 1, 1_000_000)
        check_range(self, "ridge_test", 1, 1_000_000)
        check_range(self, "noise", 0, 100, "the noise's standard deviation", open_low=True)
        check_range(self, "prior_std", 0, 100, "the weights' standard deviation", open_low=True)
        check_range(self, "lambdas", 0, 1e12, "ridge strengths", open_low=True)
        if len(self.lambdas) < 3 or sorted(set(self.lambdas)) != list(self.lambdas):
            raise ConfigError(f"lambdas={self.lambdas}: give 3 or more, increasing")
        check_range(self, "repeats", 1, 100_000)
        check_range(self, "degrees", 0, 30)
        if len(self.degrees) < 3 or sorted(set(self.degrees)) != list(self.degrees):
            raise ConfigError(f"degrees={self.degrees}: give 3 or more, increasing")
        check_range(self, "occam_n", 2, 1_000_000)
        check_range(self, "occam_noise", 0, 100, "the noise's standard deviation", open_low=True)
        check_range(self, "hidden", 1, 100_000)
        check_range(self, "dropout", 0, 1, "a probability; 1 drops every unit", open_low=True, open_high=True)
        check_range(self, "mc_samples", 1, 100_000)
        if sorted(set(self.mc_samples)) != list(self.mc_samples):
            raise ConfigError(f"mc_samples={self.mc_samples}: give them increasing")
        check_batch_fits(self)


# The words of this lab's metric labels (biaslab.records): what it means by its names.
WORDS = {
    "map_minus_ridge": "Largest difference, MAP weights against ridge at λ = σ²/τ²",
    "map_minus_ridge_tenfold": "Largest difference, MAP weights against ridge at 10 σ²/τ²",
    "lambda": "ridge strength λ",
    "chosen_by": "chosen by",
    "true_lambda": "The prior's λ = σ²/τ²",
    "decades_apart": "Decades between the evidence's λ and the validation's (median)",
    "test_mse_ratio": "Test MSE at the evidence's λ over that at the validation's (median)",
    "degree": param("degree {}"),
    "log_evidence": "log evidence",
    "train_mse": "training MSE of least squares",
    "evidence_degree": "Degree of the largest evidence",
    "samples": param("{} masks"),
    "accuracy": "test accuracy",
    "weight_scaling": "weight scaling (one pass, every unit kept)",
    "mc_dropout": "Monte-Carlo dropout",
}


def _draw(rng: np.random.Generator, cfg: BayesianViewConfig, n: int, w: np.ndarray):
    x = rng.normal(size=(n, cfg.features))  # (n, M)
    return x, x @ w + cfg.noise * rng.normal(size=n)


def _choices(cfg: BayesianViewConfig, seed: int) -> dict[str, list]:
    """Per data set drawn from the prior: the λ the evidence picks on the training rows, the λ
    the validation rows pick, and the test MSE of ridge (fitted on the training rows) at each."""
    rng = np.random.default_rng(seed)
    alpha, beta = 1 / cfg.prior_std**2, 1 / cfg.noise**2
    out: dict[str, list] = {"evidence": [], "validation": [], "evidence_mse": [], "validation_mse": []}
    curves = {"evidence": [], "validation": []}
    for _ in range(cfg.repeats):
        w = cfg.prior_std * rng.normal(size=cfg.features)
        x, t = _draw(rng, cfg, cfg.ridge_train, w)
        x_val, t_val = _draw(rng, cfg, cfg.ridge_val, w)
        x_test, t_test = _draw(rng, cfg, cfg.ridge_test, w)
        # the evidence at λ = α/β with β, the noise precision, at its known value
        evidence = [log_evidence(x, t, lam * beta, beta) for lam in cfg.lambdas]
        weights = [ridge(x, t, lam) for lam in cfg.lambdas]  # fitted on the training rows, per λ
        val_mse = [float(np.mean((x_val @ w_lam - t_val) ** 2)) for w_lam in weights]
        curves["evidence"].append(evidence)
        curves["validation"].append(val_mse)
        for by, best in (("evidence", int(np.argmax(evidence))), ("validation", int(np.argmin(val_mse)))):
            out[by].append(cfg.lambdas[best])
            out[f"{by}_mse"].append(float(np.mean((x_test @ weights[best] - t_test) ** 2)))
    out["curves"] = curves
    out["true"] = alpha / beta
    return out


@experiment(
    name="bayesian-view",
    words=WORDS,
    day=4,
    step=11,
    config=BayesianViewConfig,
    requires=("mnist",),
    title="Inductive bias as a prior: weight decay, the evidence, dropout",
    summary="L2 weight decay is the MAP of a Gaussian prior; the evidence chooses λ (and the degree: "
    "Occam's razor); dropout's masks averaged against weight scaling",
    quick={"repeats": 5, **QUICK_SIZES, "epochs": 2, "mc_samples": (1, 5, 20)},
)
def run(ctx) -> None:
    cfg: BayesianViewConfig = ctx.cfg
    identity(ctx, cfg)
    choose_lambda(ctx, cfg)
    occam(ctx, cfg)
    dropout_ensemble(ctx, cfg)


def identity(ctx, cfg: BayesianViewConfig) -> None:
    """1. The posterior's mode is ridge at λ = σ²/τ² (and not at another λ)."""
    rng = np.random.default_rng(ctx.seed_for("identity"))
    w = cfg.prior_std * rng.normal(size=cfg.features)
    x, t = _draw(rng, cfg, cfg.ridge_train, w)
    lam = cfg.noise**2 / cfg.prior_std**2
    mode, _ = posterior(x, t, alpha=1 / cfg.prior_std**2, beta=1 / cfg.noise**2)
    gap = float(np.max(np.abs(mode - ridge(x, t, lam))))
    tenfold = float(np.max(np.abs(mode - ridge(x, t, 10 * lam))))
    ctx.metric(map_minus_ridge=gap, map_minus_ridge_tenfold=tenfold)
    # workshop book §4.2: "L^2 regularization (weight decay). R(θ) = ‖θ‖². Pulls weights toward
    # zero. Equivalent, under a Bayesian interpretation, to a Gaussian prior on the weights."
    ctx.claim(
        "L2 weight decay is the MAP estimate under a Gaussian prior: ridge at λ = σ²/τ²",
        source=f"{BOOK_REGULARIZATION}; {SLIDES_PRIOR}; Bishop 2006, eq. 3.55",
        printed="Equivalent, under a Bayesian interpretation, to a Gaussian prior on the weights",
        kind="check",
        expected="the posterior's mode equals ridge at λ = σ²/τ² to rounding (≤ 1e-9), and not at 10 σ²/τ²",
        measured=f"largest difference {gap:.1e} at λ = {lam:g}; {tenfold:.2g} at λ = {10 * lam:g}",
        passed=gap <= 1e-9 and tenfold > 1e-3,
    )


def choose_lambda(ctx, cfg: BayesianViewConfig) -> None:
    """2a. The evidence against λ, its maximum beside the validation's choice."""
    found = _choices(cfg, ctx.seed_for("choose-lambda"))
    decades = np.abs(np.log10(np.asarray(found["evidence"]) / np.asarray(found["validation"])))
    ratio = np.asarray(found["evidence_mse"]) / np.asarray(found["validation_mse"])
    median_decades, median_ratio = float(np.median(decades)), float(np.median(ratio))
    ctx.metric(true_lambda=found["true"], decades_apart=median_decades, test_mse_ratio=median_ratio)
    for by in ("evidence", "validation"):
        ctx.metric("lambda", float(np.median(found[by])), chosen_by=by, stat="median")
        ctx.metric("test_mse", float(np.median(found[f"{by}_mse"])), chosen_by=by, stat="median")
    ctx.table(
        f"λ chosen on {cfg.repeats} data sets drawn from the prior ({cfg.ridge_train} training rows, "
        f"{cfg.features} weights; the prior's λ = σ²/τ² = {found['true']:g})",
        ["chosen by", "rows read", "median λ", "λ quartiles", "median test MSE"],
        [
            [
                by,
                cfg.ridge_train if by == "evidence" else cfg.ridge_train + cfg.ridge_val,
                float(np.median(found[by])),
                f"{np.quantile(found[by], 0.25):.3g} - {np.quantile(found[by], 0.75):.3g}",
                float(np.median(found[f"{by}_mse"])),
            ]
            for by in ("evidence", "validation")
        ],
        lead=True,
    )
    # inductive-bias slides: the bias "tells which parameters are likely and which are not: good
    # priors make for efficient inference"; the evidence is Bayes' own way of setting the prior's
    # strength (Bishop 2006 §3.5). The one-decade criterion is biaslab's.
    ctx.claim(
        "The evidence, read from the training rows alone, chooses the weight decay a validation "
        "split chooses",
        source=f"{SLIDES_PRIOR}; {BOOK_REGULARIZATION}; Bishop 2006 §3.5 (the evidence approximation); "
        f"biaslab's target (within {DECADES:g} decade, median over the data sets)",
        kind="finding",
        expected=f"median |log10(λ_evidence / λ_validation)| ≤ {DECADES:g}, and no worse test error "
        "(ratio ≤ 1.05)",
        measured=f"{median_decades:.2f} decades; test MSE ratio {median_ratio:.3f}; medians λ "
        f"{np.median(found['evidence']):.3g} (evidence), {np.median(found['validation']):.3g} (validation), "
        f"{found['true']:g} (the prior's)",
        passed=median_decades <= DECADES and median_ratio <= 1.05,
    )
    mean_evidence = np.mean(found["curves"]["evidence"], axis=0)
    mean_val = np.mean(found["curves"]["validation"], axis=0)
    ctx.figure(
        "evidence_against_lambda",
        plots.curves(
            list(cfg.lambdas),
            {
                "log evidence / training rows": list(mean_evidence / cfg.ridge_train),
                "− validation MSE": list(-mean_val),
            },
            "ridge strength λ = α/β",
            "higher is better",
            logx=True,
        ),
        f"Mean over {cfg.repeats} data sets: the log evidence of the training targets (per row) and "
        f"the negated validation error against λ; both peak near the prior's λ = {found['true']:g}.",
        lead=True,
    )


def occam(ctx, cfg: BayesianViewConfig) -> None:
    """2b. Occam's razor: the evidence over polynomial degrees, beside the training error of the
    likelihood's maximum (least squares), which only ever prefers the larger model."""
    rng = np.random.default_rng(ctx.seed_for("occam"))
    x = rng.uniform(-1, 1, size=cfg.occam_n)
    t = np.sin(np.pi * x) + cfg.occam_noise * rng.normal(size=cfg.occam_n)
    evidence, train_mse = {}, {}
    for d in cfg.degrees:
        phi = np.vander(x, d + 1, increasing=True)  # (n, d + 1): 1, x, ..., x^d
        fit = BayesianLinearRegression().fit(phi, t)  # α and β at the evidence's maximum
        evidence[d] = fit.log_evidence_
        least_squares = np.linalg.lstsq(phi, t, rcond=None)[0]  # the likelihood's maximum alone
        train_mse[d] = float(np.mean((phi @ least_squares - t) ** 2))
        ctx.metric("log_evidence", evidence[d], degree=d)
        ctx.metric("train_mse", train_mse[d], degree=d)
    best = max(evidence, key=evidence.get)
    ctx.metric(evidence_degree=best)
    # Not printed in the documents: Bishop 2006 §3.4 (Fig. 3.14). The criterion is biaslab's.
    ctx.claim(
        "Occam's razor: the evidence prefers a middling polynomial degree while the training error "
        "keeps falling",
        source=f"{SLIDES_PRIOR}; Bishop 2006 §3.4 (Bayesian model comparison); biaslab's target "
        "(the evidence's best degree strictly inside the range, the largest degree's training "
        "error below its)",
        kind="finding",
        expected=f"best degree strictly between {cfg.degrees[0]} and {cfg.degrees[-1]}; training MSE at "
        f"degree {cfg.degrees[-1]} below the best degree's",
        measured=f"best degree {best}; training MSE {train_mse[best]:.4f} there, "
        f"{train_mse[cfg.degrees[-1]]:.4f} at degree {cfg.degrees[-1]}",
        passed=cfg.degrees[0] < best < cfg.degrees[-1] and train_mse[cfg.degrees[-1]] < train_mse[best],
    )
    ctx.figure(
        "occam",
        plots.curves(
            list(cfg.degrees),
            {
                "log evidence / rows": [evidence[d] / cfg.occam_n for d in cfg.degrees],
                "− log training MSE (least squares) / 10": [-np.log(train_mse[d]) / 10 for d in cfg.degrees],
            },
            "polynomial degree",
            "higher is better",
        ),
        f"sin(πx) plus noise σ = {cfg.occam_noise:g}, {cfg.occam_n} points: the evidence (α and β at "
        f"their maximum per degree) peaks at degree {best}; the training error of least squares, the "
        "likelihood alone, falls at every degree.",
    )


def dropout_ensemble(ctx, cfg: BayesianViewConfig) -> None:
    """3. An MNIST MLP trained with dropout: masks averaged against weight scaling."""
    splits = mnist_splits_for(cfg.data, ctx.seed_for("split"), standardize=True)
    model = ctx.init_model(lambda: MLP((784, cfg.hidden, cfg.hidden, 10), dropout=cfg.dropout), "mlp")
    fit_classifier(model, splits, cfg.train, ctx.training("mlp"))
    x_test, y_test = splits.x_test.to(ctx.device), splits.y_test.to(ctx.device)
    scaled = float((weight_scaled_probs(model, x_test).argmax(1) == y_test).float().mean())
    probs = mc_dropout_probs(model, x_test, samples=cfg.mc_samples[-1], seed=ctx.seed_for("masks"))
    running = probs.cumsum(0)  # (T, N, K): the sum of the first t masks' probabilities
    accuracy = {t: float((running[t - 1].argmax(1) == y_test).float().mean()) for t in cfg.mc_samples}
    ctx.metric("accuracy", scaled, inference="weight_scaling")
    for t, value in accuracy.items():
        ctx.metric("accuracy", value, inference="mc_dropout", samples=t)
    largest = cfg.mc_samples[-1]
    gap = 100 * (accuracy[largest] - scaled)
    ctx.table(
        f"Test accuracy of the dropout MLP (p = {cfg.dropout:g}, {len(y_test):,} test digits)",
        ["inference", "test accuracy"],
        [["weight scaling (one pass)", scaled], *[[f"average of {t} masks", a] for t, a in accuracy.items()]],
    )
    # workshop book §4.2: "The trained model behaves as an ensemble." Srivastava et al. 2014
    # §7.5 found the Monte-Carlo average of about 50 masks matches weight scaling; the 0.5-point
    # criterion is biaslab's.
    ctx.claim(
        "Dropout trains an ensemble: averaging many masks predicts as well as one pass with scaled weights",
        source=f"{BOOK_REGULARIZATION}; Srivastava et al. 2014 §7.5; biaslab's target (within "
        f"{DROPOUT_POINTS:g} points at the most masks)",
        printed="The trained model behaves as an ensemble.",
        kind="finding",
        expected=f"|accuracy({largest} masks) − accuracy(weight scaling)| ≤ {DROPOUT_POINTS:g} "
        "points, and one mask alone below both",
        measured=f"{accuracy[largest]:.4f} against {scaled:.4f} ({gap:+.2f} points)"
        + (f"; one mask {accuracy[1]:.4f}" if 1 in accuracy else ""),
        passed=abs(gap) <= DROPOUT_POINTS
        and (1 not in accuracy or accuracy[1] < min(scaled, accuracy[largest])),
        checked_in_quick=False,
    )
    ctx.figure(
        "dropout_ensemble",
        plots.curves(
            list(cfg.mc_samples),
            {"average of T masks": list(accuracy.values()), "weight scaling": [scaled] * len(accuracy)},
            "masks averaged T",
            "test accuracy",
            logx=True,
        ),
        "The dropout network's test accuracy when the predictions of T random masks are averaged "
        "(Monte-Carlo dropout), against one pass with every unit kept (weight scaling): the "
        "ensemble's average approaches the single scaled pass as T grows.",
    )
