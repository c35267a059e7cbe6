"""Day 5 - calibration: does a predicted 90% come true 90% of the time?

An MNIST MLP trained by plain cross-entropy is accurate but over-confident: among the test digits
it labels with confidence ~0.99 fewer than 99% are right. The reliability diagram shows it bin
by bin and the expected calibration error sums it up, ECE = Σ_b (n_b/N)·|acc_b − conf_b| (Guo et
al. 2017). Temperature scaling divides the logits by one number T, fitted by negative
log-likelihood on the *validation* split only: the argmax, hence the accuracy, is unchanged; the
confidences move to where they are honest. The test split is used once, to report.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from biaslab.config import check_batch_fits, check_range
from biaslab.data.mnist import QUICK_SIZES, MnistSizes, mnist_splits_for
from biaslab.evaluate.calibration import TemperatureScaling, expected_calibration_error, reliability_bins
from biaslab.nn import MLP
from biaslab.registry import experiment
from biaslab.report import plots
from biaslab.train.config import ClassifierTraining
from biaslab.train.recipes import fit_classifier, predict

TARGET_ECE = 0.01  # biaslab's target after scaling; Guo et al. report 0.8-1.9% on their models
BOOK_CALIBRATION = "workshop book §5.4 (Calibration: confident is not the same as right)"


@dataclass(frozen=True)
class CalibrationConfig:
    """The classifier, its (plain cross-entropy) training and the number of bins."""

    data: MnistSizes = MnistSizes()
    train: ClassifierTraining = ClassifierTraining(epochs=8, batch_size=128, lr=1e-3)
    hidden: int = 256
    n_bins: int = 15

    def __post_init__(self):
        check_range(self, "hidden", 1, 100_000)
        check_range(self, "n_bins", 1, 1000)
        check_batch_fits(self)


# The words of this lab's metric labels (biaslab.records): what it means by its names.
WORDS = {"before": "before temperature scaling", "after": "after temperature scaling"}


@experiment(
    name="calibration",
    words=WORDS,
    day=5,
    step=2,
    config=CalibrationConfig,
    requires=("mnist",),
    title="Calibration: reliability diagrams and temperature scaling",
    summary="an MNIST MLP's over-confidence (ECE, MCE), fixed by one temperature fitted on validation",
    quick={**QUICK_SIZES, "epochs": 2},
)
def run(ctx) -> None:
    cfg: CalibrationConfig = ctx.cfg
    splits = mnist_splits_for(cfg.data, ctx.seed_for("split"), standardize=True)
    model = ctx.init_model(lambda: MLP((784, cfg.hidden, 10)), "mlp")
    fit = fit_classifier(model, splits, cfg.train, ctx.training("mlp"))
    val_logits, test_logits = (
        predict(model, splits.x_val).cpu(),
        predict(model, splits.x_test).cpu(),
    )  # (N, 10)
    scaler = TemperatureScaling().fit(val_logits, splits.y_val)  # validation only
    before = torch.softmax(test_logits, dim=1)
    after = scaler.predict_proba(test_logits)
    ece = {
        name: expected_calibration_error(p, splits.y_test, cfg.n_bins)
        for name, p in (("before", before), ("after", after))
    }
    mce = {
        name: expected_calibration_error(p, splits.y_test, cfg.n_bins, norm="max")
        for name, p in (("before", before), ("after", after))
    }
    same_predictions = bool(torch.equal(before.argmax(1), after.argmax(1)))
    ctx.metric("accuracy", fit.test["accuracy"], split="test")
    ctx.metric(temperature=scaler.temperature_)
    confidence = {"before": float(before.max(1).values.mean()), "after": float(after.max(1).values.mean())}
    for stage in ("before", "after"):  # keys older than the records: the measure first
        ctx.metric("ece", ece[stage], stage=stage, key=f"ece_{stage}")
        ctx.metric("mce", mce[stage], stage=stage, key=f"mce_{stage}")
        ctx.metric("confidence", confidence[stage], stat="mean", stage=stage, key=f"mean_confidence_{stage}")
    ctx.table(
        f"Test calibration, {cfg.n_bins} bins (T fitted on {len(splits.y_val)} validation digits)",
        ["", "ECE", "MCE", "mean confidence", "accuracy"],
        [
            [
                "before scaling",
                ece["before"],
                mce["before"],
                float(before.max(1).values.mean()),
                fit.test["accuracy"],
            ],
            [
                f"after (T = {scaler.temperature_:.3f})",
                ece["after"],
                mce["after"],
                float(after.max(1).values.mean()),
                fit.test["accuracy"],
            ],
        ],
    )
    # workshop book §5.4: "Modern deep networks tend to be *overconfident*: they say 99% when they
    # should say 80%." ... "Temperature scaling (Guo et al., 2017) is the simplest fix. After
    # training, divide the pre-softmax logits by a scalar temperature T , chosen on a validation
    # set to minimize negative log-likelihood." (T > 1 is what over-confidence implies; the book
    # prints no value of T.)
    ctx.claim(
        "A network trained by cross-entropy is over-confident: temperature T > 1 fixes it",
        source=f"{BOOK_CALIBRATION}; workshop book, Day 5 lab step 2; Guo et al. 2017",
        kind="finding",
        expected="fitted T > 1 and test ECE lower after scaling",
        measured=f"T = {scaler.temperature_:.3f}; ECE {ece['before']:.4f} -> {ece['after']:.4f}",
        passed=scaler.temperature_ > 1 and ece["after"] < ece["before"],
        checked_in_quick=False,
    )
    ctx.claim(
        "After temperature scaling the test ECE is at most 1%",
        source=f"{BOOK_CALIBRATION}; biaslab's target (the 1%: the documents print no ECE; Guo et al. "
        "2017 report 0.8-1.9%)",
        kind="finding",
        expected=f"ECE after <= {TARGET_ECE}",
        measured=round(ece["after"], 4),
        passed=ece["after"] <= TARGET_ECE,
        checked_in_quick=False,
    )
    # Dividing every logit by one T > 0 keeps their order: a property of the method, a check.
    ctx.claim(
        "Temperature scaling leaves every prediction (argmax) unchanged",
        source=f"{BOOK_CALIBRATION}; Guo et al. 2017",
        kind="check",
        expected="identical predicted classes before and after",
        measured=same_predictions,
        passed=same_predictions,
    )
    diagrams = {
        f"before: ECE {ece['before']:.4f}": reliability_bins(before, splits.y_test, cfg.n_bins),
        f"after T = {scaler.temperature_:.2f}: ECE {ece['after']:.4f}": reliability_bins(
            after, splits.y_test, cfg.n_bins
        ),
    }
    ctx.figure(
        "reliability",
        plots.reliability_diagrams(diagrams),
        "Reliability diagrams of the test predictions before and after temperature scaling: accuracy "
        "per confidence bin (blue) and the gap to the bin's mean confidence (red); perfect "
        "calibration is the dotted diagonal.",
    )
