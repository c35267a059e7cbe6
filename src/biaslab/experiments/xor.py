"""Day 1 - XOR: a single perceptron cannot separate it, one hidden layer can.

A perceptron's decision boundary is a line w·x + b = 0 (eq. 1.2), and no line puts (0,0), (1,1)
on one side and (0,1), (1,0) on the other: at best 3 of the 4 corners are right. One hidden layer
bends the boundary (eq. 1.5) and separates the classes perfectly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from biaslab.config import require_positive
from biaslab.data.synthetic import xor
from biaslab.nn import MLP
from biaslab.registry import experiment
from biaslab.report import plots
from biaslab.train import TrainConfig, Trainer, accuracy


@dataclass(frozen=True)
class XorConfig:
    n_train: int = 400
    n_test: int = 400
    noise: float = 0.15
    hidden: int = 8
    activation: Literal["relu", "tanh", "sigmoid", "gelu"] = "tanh"
    epochs: int = 100
    batch_size: int = 32
    lr: float = 0.02

    def __post_init__(self):
        require_positive(self, "n_train", "n_test", "hidden", "epochs", "batch_size", "lr")


# The four corners of the truth table, on the data's (±1, ±1) scale.
CORNERS = np.array([[-1, -1], [-1, 1], [1, -1], [1, 1]], dtype=np.float32)
CORNER_LABELS = np.array([0, 1, 1, 0])


@experiment(name="xor", day=1, config=XorConfig, title="XOR: perceptron vs. one hidden layer",
            summary="a single perceptron cannot separate XOR; a one-hidden-layer MLP reaches 100%",
            quick={"n_train": 200, "n_test": 200, "epochs": 40})
def run(ctx) -> None:
    cfg: XorConfig = ctx.cfg
    x_tr, y_tr = xor(cfg.n_train, cfg.noise, seed=ctx.seed_for("train"))
    x_va, y_va = xor(cfg.n_test, cfg.noise, seed=ctx.seed_for("val"))
    x_te, y_te = xor(cfg.n_test, cfg.noise, seed=ctx.seed_for("test"))
    train = (torch.from_numpy(x_tr), torch.from_numpy(y_tr))
    val = (torch.from_numpy(x_va), torch.from_numpy(y_va))
    test = (torch.from_numpy(x_te), torch.from_numpy(y_te))
    tcfg = TrainConfig(epochs=cfg.epochs, batch_size=cfg.batch_size, lr=cfg.lr)

    models = {
        "perceptron": MLP((2, 2)),  # one affine map: a linear decision boundary
        "mlp": MLP((2, cfg.hidden, 2), activation=cfg.activation),
    }
    histories, acc, corner_acc = {}, {}, {}
    for name, model in models.items():
        torch.manual_seed(ctx.seed_for(name, "init"))
        model.reset_parameters()
        trainer = Trainer(model, config=tcfg, metrics={"accuracy": accuracy},
                          **ctx.trainer_kwargs(name))
        histories[name] = trainer.fit(train, val=val)
        acc[name] = trainer.evaluate(test)["accuracy"]
        with torch.no_grad():
            pred = model(torch.from_numpy(CORNERS)).argmax(1).numpy()
        corner_acc[name] = float((pred == CORNER_LABELS).mean())

    ctx.metric(perceptron_test_accuracy=acc["perceptron"], mlp_test_accuracy=acc["mlp"],
               perceptron_corner_accuracy=corner_acc["perceptron"],
               mlp_corner_accuracy=corner_acc["mlp"],
               mlp_parameters=sum(p.numel() for p in models["mlp"].parameters()))
    ctx.claim("A single perceptron cannot separate XOR", source="notes, Day 1 (XOR)",
              expected="test accuracy <= 0.75", measured=acc["perceptron"],
              passed=acc["perceptron"] <= 0.75)
    ctx.claim("A one-hidden-layer MLP separates XOR perfectly", source="notes, Day 1 (XOR)",
              expected="test accuracy = 1.0", measured=acc["mlp"], passed=acc["mlp"] == 1.0)

    fig, axes = plots.subplots(2)
    for ax, (name, model) in zip(axes, models.items()):
        def prob(points, model=model):
            with torch.no_grad():
                return torch.softmax(model(torch.from_numpy(points.astype(np.float32))), 1)[:, 1].numpy()

        plots.decision_boundary(ax, prob, x_te, y_te,
                                title=f"{name}: test accuracy {acc[name]:.3f}")
    ctx.figure("decision_boundaries", fig,
               "Decision boundaries on the test set: the perceptron's is a straight line; "
               "one hidden layer bends it around the XOR quadrants.")
    ctx.figure("learning_curves", plots.learning_curves(
        histories, keys=("train_loss", "val_accuracy")), "Training loss and validation accuracy per epoch.")
