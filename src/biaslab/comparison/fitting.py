"""How one candidate of a comparison is trained and read: the mechanics under
:mod:`biaslab.comparison.protocol`, for both engines, on the data as :class:`Prepared` holds it.

A torch candidate trains with the shared :class:`~biaslab.train.trainer.Trainer` through one
step function, :func:`protocol_step`:

* **augmentation** is the step's business: it transforms the inputs only while the model is in
  training mode. The Trainer validates in eval mode (and :func:`torch_outputs` predicts in it),
  so validation and test rows are never augmented; its random draws come from the trainer's own
  step generator, so a seed fixes them and a resume replays them;
* **masks** (sets, padded sequences) travel in the batch: ``(x, mask, y)``, called as
  ``model(x, mask)``;
* the **best epoch** is kept by a :class:`~biaslab.train.callbacks.KeepBest` on the validation
  metric (``val_accuracy`` to classify, ``val_loss`` to regress); it loads that epoch's weights
  when the fit ends, with or without early stopping.

:class:`Prepared` (what :func:`~biaslab.comparison.protocol.prepare` returns) lives here, below the
protocol, so that both the protocol and its learning curves can fit on it.

A scikit-learn candidate fits on the flattened training rows; its class probabilities are read
as log-probabilities, so that both engines hand the protocol logits (softmax(log p) = p). On a
raw table (missing cells, categories) an estimator that reads one natively (scikit-learn's
``HistGradientBoosting``: a ``categorical_features`` parameter) fits on the raw rows,
:attr:`Prepared.native`; every other candidate reads the encoded ones
(:mod:`biaslab.comparison.table_encoding`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from biaslab.comparison.preparation import standardized
from biaslab.data.splits import Splits
from biaslab.errors import ConfigError
from biaslab.hardware import on_current_threads
from biaslab.nn.mlp import device_of
from biaslab.train.callbacks import KeepBest, TimeLimit
from biaslab.train.config import EVAL_BATCH, TrainConfig
from biaslab.train.recipes import TrainSetup
from biaslab.train.seed import derive_seed
from biaslab.train.steps import StepOutput
from biaslab.train.trainer import accuracy, mean_absolute_error

if TYPE_CHECKING:
    from biaslab.comparison.candidates import Candidate, RegressionLoss, Task

__all__ = [
    "MONITORS",
    "REGRESSION_LOSSES",
    "Fitted",
    "Inputs",
    "Prepared",
    "Scaling",
    "SplitRows",
    "errors",
    "fit_sklearn",
    "fit_torch",
    "init_seed",
    "protocol_step",
    "torch_outputs",
    "train_keeping_best",
]

# The validation figure the best epoch is chosen by, per task.
MONITORS = {"classify": "val_accuracy", "regress": "val_loss"}
REGRESSION_LOSSES = {"mse": nn.functional.mse_loss, "l1": nn.functional.l1_loss}
PROBABILITY_FLOOR = 1e-12  # a probability of exactly 0 read as this, so that its log is finite


class SplitRows:
    """What every prepared data set (:class:`Prepared`, and the graphs'
    :class:`~biaslab.comparison.graph_data.PreparedGraphs`) derives from its ``rows`` and its
    regression target's ``y_mean`` and ``y_std``."""

    rows: dict[str, np.ndarray]
    y_mean: float | None
    y_std: float | None

    @property
    def n_train(self) -> int:
        return len(self.rows["train"])

    def to_unit(self, values) -> np.ndarray:
        """Standardized regression outputs back in the target's unit: ``values · y_std + y_mean``."""
        return in_unit(values, self.y_mean, self.y_std)


def in_unit(values, y_mean: float, y_std: float) -> np.ndarray:
    """Standardized regression outputs back in the target's unit: ``values · y_std + y_mean``."""
    return np.asarray(values, dtype=np.float64) * y_std + y_mean


@dataclass(frozen=True, eq=False)
class Scaling:
    """What :func:`~biaslab.comparison.protocol.prepare` fitted on the training rows that new
    inputs are read through: a raw table's encoding, the features' means and deviations, a
    regression target's (what a saved comparison keeps to predict new rows).

    Shapes:
        x_mean, x_std: (C,) per image channel, (F,) per column or feature otherwise.
    """

    kind: str
    x_mean: np.ndarray
    x_std: np.ndarray
    encoding: Any = None
    y_mean: float | None = None
    y_std: float | None = None

    def standardize(self, x: np.ndarray, mask: np.ndarray | None = None) -> Inputs:
        """New inputs of the data's kind and example shape encoded (a raw table) and scaled by
        the training rows' statistics, exactly as the data were prepared.

        Shapes:
            x (M, *example shape as read), mask (M, S) or None -> :class:`Inputs`.
        """
        raw = None
        if self.encoding is not None:
            raw = np.asarray(x, dtype=np.float64)
            x = self.encoding.transform(raw)
        scaled = standardized(x, mask, self.x_mean, self.x_std, self.kind)
        mask_t = None if mask is None else torch.from_numpy(mask.astype(bool))
        return Inputs(torch.from_numpy(scaled), mask_t, raw)

    def to_unit(self, values) -> np.ndarray:
        """Standardized regression outputs in the target's unit (:func:`in_unit`)."""
        return in_unit(values, self.y_mean, self.y_std)


@dataclass(frozen=True, eq=False)
class Prepared(SplitRows):
    """A user's data split and scaled for fitting, with what was fitted on the training rows.

    Shapes (n_s rows in split s):
        splits: :class:`~biaslab.data.splits.Splits` of torch tensors: ``x_*`` (n_s,
            *input_shape) float32, standardized; ``y_*`` (n_s,) int64 class indices, or float32
            targets standardized by ``y_mean`` and ``y_std``.
        rows: split -> (n_s,) positions of its rows in the user's data.
        targets: split -> (n_s,) targets as given: class indices, or values in the target's unit.
        masks: split -> (n_s, S) bool (True: a real element) for sets and padded sequences; else
            None.
        x_mean, x_std: the training rows' per-feature statistics: (C,) per channel for images,
            (F,) per column or feature otherwise (masked entries left out); a constant
            feature's std is 1.
        y_mean, y_std: the training targets' mean and standard deviation (regress), else None.
        encoding: a raw table's :class:`~biaslab.comparison.table_encoding.TableEncoding`,
            fitted on the training rows (``input_shape`` is then its width); else None.
        native: a raw table's rows as read, split -> (n_s, F) float64 (NaN where missing,
            category codes), for estimators that read them natively; else None.
    """

    splits: Splits
    kind: str
    task: str
    input_shape: tuple[int, ...]
    n_outputs: int
    rows: dict[str, np.ndarray]
    targets: dict[str, np.ndarray]
    x_mean: np.ndarray
    x_std: np.ndarray
    y_mean: float | None = None
    y_std: float | None = None
    masks: dict[str, torch.Tensor] | None = None
    seed: int = 0
    encoding: Any = None
    native: dict[str, np.ndarray] | None = None

    @property
    def categorical(self) -> np.ndarray | None:
        """(F,) bool, which of a raw table's columns are categories (its encoding's); else None."""
        return None if self.encoding is None else np.asarray(self.encoding.categorical, dtype=bool)

    def tensors(self, split: str) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
        """``(x, mask or None, y)`` of ``split`` ("train", "val" or "test")."""
        mask = None if self.masks is None else self.masks[split]
        return getattr(self.splits, f"x_{split}"), mask, getattr(self.splits, f"y_{split}")

    @property
    def scaling(self) -> Scaling:
        """What was fitted on the training rows to read new inputs (:class:`Scaling`)."""
        return Scaling(self.kind, self.x_mean, self.x_std, self.encoding, self.y_mean, self.y_std)

    def standardize(self, x: np.ndarray, mask: np.ndarray | None = None) -> Inputs:
        """New inputs (an OOD set) read as the data were: :meth:`Scaling.standardize`.

        Shapes:
            x (M, *example shape as read), mask (M, S) or None -> :class:`Inputs`.
        """
        return self.scaling.standardize(x, mask)

    def train_subset(self, rows, repeat_to: int | None = None) -> Prepared:
        """The same preparation with the training set cut to ``rows`` (positions in it), repeated
        cyclically to ``repeat_to`` rows when given (:meth:`Splits.train_subset`); validation,
        test and every statistic stay as they are.

        Shapes:
            rows: (n,) -> a training set of (repeat_to or n) rows.
        """
        rows = np.asarray(rows, dtype=np.int64)
        if repeat_to is not None:
            rows = rows[np.arange(max(repeat_to, len(rows))) % len(rows)]
        masks = None if self.masks is None else {**self.masks, "train": self.masks["train"][rows]}
        native = None if self.native is None else {**self.native, "train": self.native["train"][rows]}
        return replace(
            self,
            splits=self.splits.train_subset(rows),
            rows={**self.rows, "train": self.rows["train"][rows]},
            targets={**self.targets, "train": self.targets["train"][rows]},
            masks=masks,
            native=native,
        )


@dataclass(frozen=True)
class Inputs:
    """New rows as the candidates read them (:meth:`Prepared.standardize`).

    Shapes (M rows):
        x: (M, *input_shape) float32, encoded and standardized; mask: (M, S) bool or None;
        raw: a raw table's rows as read, (M, F) float64, for estimators that read them
        natively; else None.
    """

    x: torch.Tensor
    mask: torch.Tensor | None = None
    raw: np.ndarray | None = None


@dataclass
class Fitted:
    """A trained candidate and what its training cost.

    Args:
        model: the torch module holding its best epoch's weights, or the fitted estimator.
        engine: ``"torch"`` or ``"sklearn"``.
        task: ``"classify"`` or ``"regress"``.
        n_outputs: classes (classify) or 1 (regress).
        takes_mask: the model is called as ``model(x, mask)``.
        best_epoch: the epoch kept (1-based; torch), None for scikit-learn.
        seconds: wall-clock seconds of the fit (validation included).
        parameters: the torch model's parameter count; None for scikit-learn.
        history: the trainer's records, one per epoch ([] for scikit-learn).
        native: the estimator was fitted on a raw table's rows (missing cells, category codes).
        stopped_at_budget: the setup's time limit ended the training before its last epoch (the
            best epoch so far kept).
    """

    model: Any
    engine: str
    task: str
    n_outputs: int
    takes_mask: bool
    best_epoch: int | None
    seconds: float
    parameters: int | None
    history: list[dict]
    native: bool = False
    stopped_at_budget: bool = False

    def outputs(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> np.ndarray:
        """The model's outputs on rows ``x``: logits (classify; log-probabilities for
        scikit-learn) or standardized predictions (regress), as float64.

        Shapes:
            x (N, *input_shape), mask (N, S) or None -> (N, classes) or (N,).
        """
        if self.engine == "torch":
            out = torch_outputs(self.model, x, mask if self.takes_mask else None)
            return regression_column(out).double().numpy() if self.task == "regress" else out.double().numpy()
        return self._estimator_outputs(x.reshape(len(x), -1).numpy())

    def _estimator_outputs(self, flat: np.ndarray) -> np.ndarray:
        """A scikit-learn model's predictions (regress) or log-probabilities (classify) on ``flat``."""
        with on_current_threads():
            if self.task == "regress":
                return np.asarray(self.model.predict(flat), dtype=np.float64)
            probs = np.zeros((len(flat), self.n_outputs))  # columns follow the estimator's classes_
            probs[:, np.asarray(self.model.classes_, dtype=np.int64)] = self.model.predict_proba(flat)
        return np.log(np.clip(probs, PROBABILITY_FLOOR, 1.0))

    def outputs_on(self, prepared: Prepared, split: str) -> np.ndarray:
        """:meth:`outputs` on the rows of ``prepared``'s ``split`` ("val" or "test")."""
        if self.native:
            return self._estimator_outputs(prepared.native[split])
        x, mask, _ = prepared.tensors(split)
        return self.outputs(x, mask)

    def outputs_of(self, inputs: Inputs) -> np.ndarray:
        """:meth:`outputs` on new rows (:meth:`Prepared.standardize`), raw where it reads them."""
        return self._estimator_outputs(inputs.raw) if self.native else self.outputs(inputs.x, inputs.mask)


def regression_column(out: torch.Tensor) -> torch.Tensor:
    """A regressor's outputs (N, 1) or (N,) as (N,); any other shape is a ValueError."""
    if out.ndim == 2 and out.shape[1] == 1:
        return out[:, 0]
    if out.ndim == 1:
        return out
    raise ValueError(f"a regressor must output (N, 1), got {tuple(out.shape)}")


def protocol_step(task: Task, augment: Callable | None = None, loss: RegressionLoss = "mse"):
    """The trainer step of every torch candidate.

    A batch is ``(x, y)`` or ``(x, mask, y)``; the model is called on everything before the
    targets. ``augment(x, generator)`` transforms the inputs only in training mode (never while
    the Trainer validates), drawing from the trainer's step generator. The loss is cross-entropy
    (classify) or, on standardized targets (regress), the mean squared error (``loss="mse"``,
    the default) or the mean absolute error (``"l1"``: the error a benchmark reports as MAE, and
    robust to outlying targets). The validation loss the best epoch is chosen by is the same.
    """
    if loss not in REGRESSION_LOSSES:
        raise ConfigError(f"loss={loss!r}: choose {' or '.join(REGRESSION_LOSSES)}")
    regression_loss = REGRESSION_LOSSES[loss]

    def step(model: nn.Module, batch, generator: torch.Generator) -> StepOutput:
        *inputs, y = batch
        if augment is not None and model.training:
            inputs[0] = augment(inputs[0], generator)
        out = model(*inputs)
        if task == "regress":
            out = regression_column(out)
            return StepOutput(regression_loss(out, y), {}, out.detach(), y)
        return StepOutput(nn.functional.cross_entropy(out, y), {}, out.detach(), y)

    return step


def init_seed(setup: TrainSetup) -> int:
    """The seed a candidate's initial weights (or an estimator's ``random_state``) are drawn with:
    the training's seed alone, so that two trainings given the same seed start alike whatever
    their tags (a run's ``ctx.training(tag)`` already seeds each tag apart)."""
    return derive_seed(setup.seed, "init")


def kept_best(config: TrainConfig, monitor: str) -> TrainConfig:
    """``config`` as a plain TrainConfig whose early stopping (if ``patience``) watches
    ``monitor``, with the config's own keep-the-best off: the protocol adds its own, always on."""
    keys = {f.name: getattr(config, f.name) for f in dataclasses.fields(TrainConfig)}
    return TrainConfig(**{**keys, "monitor": monitor, "restore_best": False})


def train_keeping_best(
    model: nn.Module, task: str, config: TrainConfig, setup: TrainSetup, step, train: tuple, val: tuple
) -> tuple[list[dict], int, float, bool]:
    """Train ``model`` with the shared Trainer and ``step`` on the ``train`` batch tensors, and
    leave it holding the weights of its best epoch on ``val`` (:data:`MONITORS`: a
    :class:`~biaslab.train.callbacks.KeepBest`, early stopping if ``patience`` watching the same).

    Returns:
        ``(history, best_epoch, seconds, stopped_at_budget)``: the trainer's records, the epoch
        kept (1-based), the fit's wall-clock seconds (validation included), and whether the
        setup's time limit (``setup.time_limit_s``) ended it before its last epoch.
    """
    monitor = MONITORS[task]
    keep = KeepBest(monitor, config.min_delta)
    trainer = setup.trainer(
        model,
        kept_best(config, monitor),
        callbacks=[keep],
        step=step,
        metrics={"accuracy": accuracy} if task == "classify" else {"mae": mean_absolute_error},
    )
    start = time.perf_counter()
    history = trainer.fit(train, val=val)
    seconds = time.perf_counter() - start
    limit = trainer.callback(TimeLimit)
    best_epoch = keep.best.epoch if keep.weights is not None else len(history)
    return history, best_epoch, seconds, limit is not None and limit.stopped


def fit_torch(
    candidate: Candidate,
    prepared: Prepared,
    config: TrainConfig,
    setup: TrainSetup,
    loss: RegressionLoss = "mse",
) -> Fitted:
    """Build ``candidate`` (its weights drawn after seeding torch with :func:`init_seed`) and
    train it with the Trainer on the training rows, keeping the epoch with the best validation
    figure (:data:`MONITORS`).

    Args:
        config: epochs, batch size, optimizer, learning rate, ... (``monitor`` and
            ``restore_best`` are the protocol's).
        setup: the training's tag, seed, device, checkpoint and logger.
        loss: the regression loss, ``"mse"`` or ``"l1"`` (:func:`protocol_step`).
    """
    task = prepared.task
    torch.manual_seed(init_seed(setup))
    model = candidate.build(prepared.input_shape, prepared.n_outputs, task)

    def batch(split: str) -> tuple[torch.Tensor, ...]:
        x, mask, y = prepared.tensors(split)
        return (x, mask, y) if candidate.takes_mask else (x, y)

    step = protocol_step(task, candidate.augment, loss)
    history, best_epoch, seconds, stopped = train_keeping_best(
        model, task, config, setup, step, batch("train"), batch("val")
    )
    parameters = sum(p.numel() for p in model.parameters())
    return Fitted(
        model,
        "torch",
        task,
        prepared.n_outputs,
        candidate.takes_mask,
        best_epoch,
        seconds,
        parameters,
        history,
        stopped_at_budget=stopped,
    )


def fit_sklearn(candidate: Candidate, prepared: Prepared, seed: int) -> Fitted:
    """Build ``candidate``'s estimator and fit it on the training rows flattened to (N, -1)
    (regression targets standardized, as the torch candidates see them).

    An estimator with an unset ``random_state`` gets ``seed``, so that a seed fixes its fit. On a
    raw table, one with a ``categorical_features`` parameter fits on the raw rows (missing cells
    as they are, the category columns named to it); any other on the encoded rows.
    """
    estimator = candidate.build(prepared.input_shape, prepared.n_outputs, prepared.task)
    params = estimator.get_params()
    if params.get("random_state", 0) is None:
        estimator.set_params(random_state=seed)
    x, _, y = prepared.tensors("train")
    flat = x.reshape(len(x), -1).numpy()
    native = prepared.native is not None and "categorical_features" in params
    if native:
        flat = prepared.native["train"]
        if prepared.categorical.any():
            estimator.set_params(categorical_features=prepared.categorical)
    start = time.perf_counter()
    with on_current_threads():  # its OpenMP loaded with it: on the fit's threads, not every core
        estimator.fit(flat, y.numpy())
    seconds = time.perf_counter() - start
    return Fitted(
        estimator, "sklearn", prepared.task, prepared.n_outputs, False, None, seconds, None, [], native
    )


def errors(predicted: np.ndarray, targets: np.ndarray, prefix: str = "") -> dict[str, float]:
    """``mae`` and ``rmse`` (each name after ``prefix``) of predictions against targets, in
    the targets' unit.

    Shapes:
        predicted, targets: (N,).
    """
    residual = np.asarray(predicted, dtype=np.float64) - targets
    return {
        f"{prefix}mae": float(np.abs(residual).mean()),
        f"{prefix}rmse": float(np.sqrt((residual**2).mean())),
    }


@torch.no_grad()
def torch_outputs(model: nn.Module, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """``model(x)`` (or ``model(x, mask)``) in eval mode, ``EVAL_BATCH`` rows at a time, as float32
    on the CPU.

    Shapes:
        x (N, *input_shape), mask (N, S) or None -> (N, outputs).
    """
    model.eval()
    device = device_of(model)
    parts = []
    for i in range(0, len(x), EVAL_BATCH):
        inputs = (
            [x[i : i + EVAL_BATCH]] if mask is None else [x[i : i + EVAL_BATCH], mask[i : i + EVAL_BATCH]]
        )
        parts.append(model(*(t.to(device) for t in inputs)).float().cpu())
    return torch.cat(parts)
