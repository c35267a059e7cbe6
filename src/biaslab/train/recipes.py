"""Training recipes the labs share: classify a data split, reconstruct it."""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from biaslab.train.config import TrainConfig
from biaslab.train.trainer import Trainer, accuracy


@dataclass
class FitResult:
    trainer: Trainer
    history: list[dict]
    test: dict[str, float]  # loss and metrics on the test split, measured once at the end

    @property
    def train_time(self) -> float:
        return self.trainer.train_time


def fit_classifier(ctx, model: nn.Module, splits, config: TrainConfig, tag: str) -> FitResult:
    """Train ``model`` on ``splits.x_train`` with validation each epoch; test once at the end.

    ``splits`` has ``x_train, y_train, x_val, y_val, x_test, y_test`` tensors.
    """
    trainer = Trainer(model, config=config, metrics={"accuracy": accuracy},
                      **ctx.trainer_kwargs(tag))
    history = trainer.fit((splits.x_train, splits.y_train), val=(splits.x_val, splits.y_val))
    return FitResult(trainer, history, trainer.evaluate((splits.x_test, splits.y_test)))


def fit_reconstruction(ctx, model: nn.Module, splits, config: TrainConfig, tag: str,
                       loss_fn=nn.functional.mse_loss) -> FitResult:
    """Train ``model`` to reproduce its input (autoencoders): targets are the inputs."""
    trainer = Trainer(model, loss_fn=loss_fn, config=config, **ctx.trainer_kwargs(tag))
    history = trainer.fit((splits.x_train, splits.x_train), val=(splits.x_val, splits.x_val))
    return FitResult(trainer, history, trainer.evaluate((splits.x_test, splits.x_test)))
