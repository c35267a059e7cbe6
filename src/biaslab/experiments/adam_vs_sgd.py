"""Day 2 - Adam against plain SGD on the same MLP, from the same initial weights.

SGD takes steps −η∇L (eq. 2.3); Adam scales each coordinate's step by running estimates of the
gradient's first and second moments, bias-corrected (eq. 2.9). Here the NumPy SGD run of
``manual-backprop`` is set beside the same 784-256-10 MLP in PyTorch trained with Adam, both
starting from identical weights and plotted on one axis.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from biaslab.config import require_positive
from biaslab.experiments.manual_backprop import (
    QUICK,
    ManualBackpropConfig,
    numpy_splits,
    train_numpy_sgd,
)
from biaslab.nn import MLP
from biaslab.registry import experiment
from biaslab.report import plots
from biaslab.scratch import TwoLayerMLP
from biaslab.scratch.loop import evaluate
from biaslab.train import TrainConfig, Trainer, accuracy


@dataclass(frozen=True)
class AdamVsSGDConfig(ManualBackpropConfig):
    adam_lr: float = 1e-3

    def __post_init__(self):
        super().__post_init__()
        require_positive(self, "adam_lr")


def torch_copy(numpy_model: TwoLayerMLP) -> MLP:
    """The same network as a ``biaslab.nn.MLP`` with identical weights (float32)."""
    p = numpy_model.params
    model = MLP((p["W1"].shape[1], p["W1"].shape[0], p["W2"].shape[0]))
    first, last = model.layers[0], model.layers[-1]
    with torch.no_grad():
        for layer, w, b in ((first, "W1", "b1"), (last, "W2", "b2")):
            layer.weight.copy_(torch.from_numpy(p[w]))  # (out, in), as W in y = W x + b
            layer.bias.copy_(torch.from_numpy(p[b]))
    return model


def epochs_to(history, key: str, target: float):
    hits = [r["epoch"] for r in history if r.get(key, 0) >= target]
    return hits[0] if hits else None


@experiment(name="adam-vs-sgd", day=2, config=AdamVsSGDConfig, requires=("mnist",),
            title="Adam vs. plain SGD on one axis",
            summary="the same MLP trained with Adam (PyTorch) and plain SGD (NumPy): curves compared",
            quick=QUICK)
def run(ctx) -> None:
    cfg: AdamVsSGDConfig = ctx.cfg
    data = numpy_splits(ctx, cfg)
    adam_model = torch_copy(TwoLayerMLP(784, cfg.hidden, 10, seed=ctx.seed_for("init")))
    sgd_model, sgd_history = train_numpy_sgd(ctx, cfg, data)
    _, sgd_test = evaluate(sgd_model, data["x_test"], data["y_test"])

    tensors = {k: torch.from_numpy(v) for k, v in data.items()}
    tcfg = TrainConfig(epochs=cfg.epochs, batch_size=cfg.batch_size, lr=cfg.adam_lr,
                       optimizer="adam")
    trainer = Trainer(adam_model, config=tcfg, metrics={"accuracy": accuracy},
                      **ctx.trainer_kwargs("torch-adam"))
    adam_history = trainer.fit((tensors["x_train"], tensors["y_train"]),
                               val=(tensors["x_val"], tensors["y_val"]))
    adam_test = trainer.evaluate((tensors["x_test"], tensors["y_test"]))["accuracy"]
    runs = {"SGD (NumPy, ours)": sgd_history, "Adam (PyTorch)": adam_history}
    e_sgd, e_adam = (epochs_to(h, "val_accuracy", 0.97) for h in runs.values())
    ctx.metric(sgd_test_accuracy=sgd_test, adam_test_accuracy=adam_test,
               sgd_val_accuracy_epoch1=sgd_history[0]["val_accuracy"],
               adam_val_accuracy_epoch1=adam_history[0]["val_accuracy"],
               sgd_final_val_loss=sgd_history[-1]["val_loss"],
               adam_final_val_loss=adam_history[-1]["val_loss"],
               sgd_epochs_to_97=e_sgd, adam_epochs_to_97=e_adam)
    ctx.figure("curves", plots.learning_curves(runs, keys=("train_loss", "val_loss", "val_accuracy"),
                                               logy=("train_loss", "val_loss")),
               f"Both optimizers from the same initial weights: plain SGD (η = {cfg.lr:g}) and "
               f"Adam (η = {cfg.adam_lr:g}), batch {cfg.batch_size}.")
