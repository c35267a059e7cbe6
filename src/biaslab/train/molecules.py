"""One training and read-out protocol for every QM9 model, neural or not.

The protocol, identical for every model so that their numbers compare:

1. targets are standardised with the **training** rows' mean and standard deviation
   (:class:`~biaslab.data.molecule_splits.TargetScaler`); validation and test rows never shape them;
2. a neural model is trained by the shared :class:`~biaslab.train.trainer.Trainer` on the
   standardised targets (L1 by default: the error reported is a mean absolute error), keeping
   the epoch with the lowest validation MAE; gradient-boosted trees are fit on the same rows;
3. the test rows are predicted once, mapped back to the target's unit, and scored by MAE.

Batches are built by :meth:`biaslab.data.qm9.QM9.batch` (a disjoint graph of tensors); a tabular
model reads a per-molecule feature matrix attached to the batch as ``features``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import torch
from torch import nn
from torch.utils.data import Dataset

from biaslab.data.molecule_splits import MoleculeSplit, TargetScaler
from biaslab.nn.mlp import device_of
from biaslab.train.callbacks import KeepBest
from biaslab.train.config import TrainConfig
from biaslab.train.recipes import TrainSetup
from biaslab.train.steps import StepOutput
from biaslab.train.trainer import mean_absolute_error

__all__ = [
    "MoleculeFit",
    "MoleculeRows",
    "MoleculeTraining",
    "fit_gradient_boosting",
    "fit_molecule_regressor",
]

EVAL_MOLECULES = 1024  # molecules per batch when predicting


@dataclass(frozen=True)
class MoleculeTraining(TrainConfig):
    """The training part of a molecule regressor's config: early stopping may watch the
    validation MAE, its default (the epoch with the lowest is kept either way)."""

    monitor: Literal["val_mae", "val_loss", "train_loss"] = "val_mae"


class MoleculeRows(Dataset):
    """Molecules ``rows`` of a QM9 store with their standardised targets; item k is the pair
    ``(row, target)``, and :meth:`collate` (the same for every split) builds a
    :class:`~biaslab.data.qm9.MoleculeBatch` from a list of them.

    Args:
        data: the :class:`~biaslab.data.qm9.QM9` store.
        rows: molecule rows (N,).
        y: standardised targets (N,) or (N, K).
        features: a feature matrix over **all** molecules of the store (tabular models), or None.
    """

    def __init__(self, data, rows: np.ndarray, y: np.ndarray, features: np.ndarray | None = None):
        self.data, self.rows, self.y, self.features = data, np.asarray(rows), np.asarray(y), features

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, k: int) -> tuple[int, np.ndarray]:
        return int(self.rows[k]), self.y[k]

    def collate(self, items: list[tuple[int, np.ndarray]]):
        rows = np.array([row for row, _ in items])
        return self.data.batch(rows, np.stack([y for _, y in items]), self.features)


def _loss(kind: str):
    return nn.functional.l1_loss if kind == "l1" else nn.functional.mse_loss


def molecule_step(loss: str = "l1"):
    """A trainer step: the loss of the model's predictions against the batch's standardised targets."""
    loss_fn = _loss(loss)

    def step(model: nn.Module, batch, generator: torch.Generator) -> StepOutput:
        batch = batch.to(device_of(model))
        prediction = model(batch)
        return StepOutput(
            loss_fn(prediction, batch.y), outputs=prediction.detach().cpu(), targets=batch.y.detach().cpu()
        )

    return step


@torch.no_grad()
def predict_molecules(model: nn.Module, rows: MoleculeRows) -> np.ndarray:
    """Standardised predictions for every molecule of ``rows``, in eval mode: (N,) or (N, K)."""
    was_training = model.training
    model.eval()
    device = device_of(model)
    try:
        parts = [
            model(
                rows.data.batch(rows.rows[start : start + EVAL_MOLECULES], None, rows.features).to(device)
            ).cpu()
            for start in range(0, len(rows), EVAL_MOLECULES)
        ]
    finally:
        model.train(was_training)
    return torch.cat(parts).double().numpy()


@dataclass
class MoleculeFit:
    """What one fit of one model reports: MAE in the target's unit on each split, and its cost."""

    test_mae: float
    val_mae: float
    train_mae: float
    train_seconds: float
    parameters: int
    epochs: int
    history: list[dict]
    best_epoch: int = 0  # the epoch whose weights were kept (1-based); == epochs hints at undertraining


def fit_molecule_regressor(
    model: nn.Module,
    data,
    split: MoleculeSplit,
    y: np.ndarray,
    config: TrainConfig,
    setup: TrainSetup,
    *,
    features: np.ndarray | None = None,
    loss: str = "l1",
    repeat_to: int | None = None,
) -> MoleculeFit:
    """Train ``model`` on ``split.train`` by the protocol of the module docstring.

    Args:
        model: maps a MoleculeBatch to (B,) (or (B, K)) standardised predictions.
        data: the QM9 store; y: targets of **every** row of the store, in their unit.
        config: epochs, batch size, optimizer, schedule.
        setup: the run's tagged training setup (checkpoint, seed, logger, device: where the model
            trains and predicts).
        features: per-molecule features of every row (tabular models), or None.
        loss: ``"l1"`` (default) or ``"mse"`` on standardised targets.
        repeat_to: a training set smaller than this is repeated (whole copies) until an epoch
            holds at least this many molecules, so that small sets are not validated after every
            few steps (default None: one pass per epoch).
    """
    scaler = TargetScaler().fit(y[split.train])  # training rows only: no test statistics leak in
    parts = {
        name: MoleculeRows(data, rows, scaler.transform(y[rows]), features)
        for name, rows in (("train", split.train), ("val", split.val), ("test", split.test))
    }
    copies = 1 if repeat_to is None else max(1, -(-repeat_to // len(split.train)))
    parts["train"] = MoleculeRows(
        data, np.tile(split.train, copies), np.tile(parts["train"].y, copies), features
    )
    trainer = setup.trainer(
        model,
        replace(config, restore_best=False),  # this keep-the-best is the only one (early stopping or not)
        callbacks=[KeepBest("val_mae", config.min_delta)],  # ends holding the lowest validation MAE
        step=molecule_step(loss),
        collate_fn=parts["train"].collate,
        metrics={"mae": mean_absolute_error},
    )
    start = time.perf_counter()
    history = trainer.fit(parts["train"], val=parts["val"])
    seconds = time.perf_counter() - start

    def mae(rows: np.ndarray) -> float:
        predicted = scaler.inverse_transform(
            predict_molecules(model, MoleculeRows(data, rows, y[rows], features))
        )
        return float(np.abs(predicted - y[rows]).mean())

    return MoleculeFit(
        test_mae=mae(split.test),
        val_mae=mae(split.val),
        train_mae=mae(split.train),
        train_seconds=seconds,
        parameters=sum(p.numel() for p in model.parameters()),
        epochs=len(history),
        history=history,
        best_epoch=1 + int(np.argmin([h.get("val_mae", np.inf) for h in history])),
    )


def fit_gradient_boosting(
    features: np.ndarray, split: MoleculeSplit, y: np.ndarray, seed: int, max_iter: int = 500
) -> MoleculeFit:
    """scikit-learn's histogram gradient-boosted trees on the same rows and targets (step 1's
    scaler is not needed: trees are invariant to monotone rescaling of the target's unit)."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    model = HistGradientBoostingRegressor(
        loss="absolute_error", max_iter=max_iter, learning_rate=0.1, max_leaf_nodes=63,
        early_stopping=False, random_state=seed,
    )  # fmt: skip
    start = time.perf_counter()
    model.fit(features[split.train], y[split.train])
    seconds = time.perf_counter() - start

    def mae(rows: np.ndarray) -> float:
        return float(np.abs(model.predict(features[rows]) - y[rows]).mean())

    return MoleculeFit(
        test_mae=mae(split.test),
        val_mae=mae(split.val),
        train_mae=mae(split.train),
        train_seconds=seconds,
        parameters=_tree_nodes(model),
        epochs=model.n_iter_,
        history=[],
        best_epoch=model.n_iter_,
    )


def _tree_nodes(model) -> int:
    """Nodes of all fitted trees (scikit-learn keeps them in ``_predictors``: one list per iteration)."""
    return sum(len(tree.nodes) for iteration in model._predictors for tree in iteration)
