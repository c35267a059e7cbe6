""" "Lower is better" is one rule (biaslab.better), and every place that chooses by a metric asks
it: early stopping, keep-the-best, a sweep's --select and its index's best configuration. Each
is checked on a loss, an MAE, an RMSE, an ECE (lower is better), an accuracy and an AUROC (higher)."""

from __future__ import annotations

import json

import pytest
import torch

from biaslab.better import LOWER_IS_BETTER, better, improves
from biaslab.sweep import MemberSpec, aggregate, summary_lines
from biaslab.train.callbacks import EarlyStopping, KeepBest

METRICS = [
    ("val_loss", "lower"),
    ("val_mae", "lower"),
    ("val_rmse", "lower"),
    ("val_ece", "lower"),
    ("val_accuracy", "higher"),
    ("val_auroc", "higher"),
]
VALUES = [0.5, 0.3, 0.4, 0.7]  # lower is best at epoch 2, higher at epoch 4


class FakeTrainer:
    def __init__(self):
        self.epoch, self.should_stop = 0, False
        self.model = torch.nn.Linear(1, 1)


def best_epoch(direction: str) -> int:
    return 2 if direction == "lower" else 4


@pytest.mark.parametrize(("metric", "direction"), METRICS)
def test_the_rule(metric, direction):
    assert better(metric) == direction
    assert better(metric.upper().replace("_", "-")) == direction  # case and separators do not matter


def test_the_rule_reads_the_keys_words():
    assert better("test_ece_after_temperature") == "lower"
    assert better("penalty_lambda0.1_n200_turned_loss") == "lower"
    assert better("cnn_ood_auroc") == better("interval_coverage") == "higher"
    assert better("lossless_accuracy") == "higher"  # a word, not a substring
    assert {"loss", "mae", "mse", "rmse", "ece", "error"} <= LOWER_IS_BETTER
    assert better("val_kl") == better("val_reconstruction") == "lower"  # the vae lab's monitors


def test_improves():
    assert improves(0.3, None, "lower") and improves(0.3, 0.5, "lower") and not improves(0.5, 0.3, "lower")
    assert improves(0.5, 0.3, "higher") and not improves(0.3, 0.5, "higher")
    assert not improves(0.45, 0.5, "lower", min_delta=0.1)
    assert not improves(float("nan"), None, "lower") and not improves(float("inf"), 0.5, "higher")


@pytest.mark.parametrize(("metric", "direction"), METRICS)
def test_keep_best_and_early_stopping_follow_the_rule(metric, direction):
    trainer, keep, stop = FakeTrainer(), KeepBest(metric), EarlyStopping(patience=2, monitor=metric)
    for epoch, value in enumerate(VALUES, start=1):
        trainer.epoch = epoch
        with torch.no_grad():
            trainer.model.weight.fill_(epoch)  # the weights tell the epoch
        keep.on_validation_end(trainer, {metric: value})
        stop.on_validation_end(trainer, {metric: value})
    keep.on_fit_end(trainer)
    assert keep.best.epoch == best_epoch(direction) == int(trainer.model.weight.item())
    # patience 2: lower, epochs 3 and 4 do not beat epoch 2 (stop at 4); higher, 2 and 3 do not
    # beat epoch 1 (stop at 3)
    assert stop.stopped_epoch == (4 if direction == "lower" else 3) and trainer.should_stop


@pytest.mark.parametrize(("metric", "direction"), METRICS)
def test_a_sweeps_select_and_its_index_follow_the_rule(tmp_path, metric, direction):
    combos = [{"lr": str(k)} for k in range(len(VALUES))]
    specs = []
    for k, value in enumerate(VALUES):
        folder = tmp_path / f"lr={k}"
        folder.mkdir()
        (folder / "results.json").write_text(json.dumps({"metrics": {metric: value}, "claims": []}))
        specs.append(MemberSpec("xor", "quick", (("lr", str(k)),), 0, 1, "cpu", str(folder), "host"))
    summary = aggregate(tmp_path, specs, combos, metric, ["lr"])
    chosen = str(best_epoch(direction) - 1)
    assert summary["best"]["config"] == {"lr": chosen}
    assert summary["best"]["rule"].startswith("lowest" if direction == "lower" else "highest")
    assert f"best on validation ({summary['best']['rule']}): lr={chosen}" in summary_lines(tmp_path, summary)
