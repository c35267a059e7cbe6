"""How one candidate of a comparison is trained and read: the mechanics under
:mod:`biaslab.comparison.protocol`, for both engines and every kind of data, through one door,
:func:`fit`.

A torch candidate trains with the shared :class:`~biaslab.train.trainer.Trainer` through one
step function, :func:`protocol_step`, on the batches its prepared data hands it
(:mod:`biaslab.comparison.prepared`: arrays; :mod:`~biaslab.comparison.graph_data`: graphs,
whose step collates each batch's rows into one disjoint graph):

* **augmentation** is the step's business: it transforms the inputs only while the model is in
  training mode. The Trainer validates in eval mode (and :func:`eval_outputs` predicts in it),
  so validation and test rows are never augmented; its random draws come from the trainer's own
  step generator, so a seed fixes them and a resume replays them;
* **masks** (sets, padded sequences) travel in the batch: ``(x, mask, y)``, called as
  ``model(x, mask)``;
* the **best epoch** is kept by a :class:`~biaslab.train.callbacks.KeepBest` on the validation
  metric (``val_accuracy`` to classify, ``val_loss`` to regress); it loads that epoch's weights
  when the fit ends, with or without early stopping.

A scikit-learn candidate fits on the flattened training rows; its class probabilities are read
as log-probabilities, so that both engines hand the protocol logits (softmax(log p) = p). On a
raw table (missing cells, categories) an estimator that reads one natively (scikit-learn's
``HistGradientBoosting``: a ``categorical_features`` parameter) fits on the raw rows,
:attr:`Prepared.native`; every other candidate reads the encoded ones
(:mod:`biaslab.comparison.table_encoding`). A molecule candidate that reads a table
(``reads``: ``"fingerprint"``, ``"counts"``) fits as any table candidate on
:meth:`PreparedGraphs.table` and reads that table's rows after.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from biaslab.comparison.prepared import Inputs, Prepared, tensor_chunks
from biaslab.errors import ConfigError
from biaslab.hardware import on_current_threads
from biaslab.nn.mlp import device_of
from biaslab.train.callbacks import KeepBest, TimeLimit
from biaslab.train.config import TrainConfig
from biaslab.train.recipes import TrainSetup
from biaslab.train.seed import derive_seed
from biaslab.train.steps import StepOutput
from biaslab.train.trainer import accuracy, mean_absolute_error

if TYPE_CHECKING:
    from biaslab.comparison.candidates import Candidate, RegressionLoss, Task

__all__ = [
    "GRAPH_KINDS",
    "MONITORS",
    "REGRESSION_LOSSES",
    "TABLE_READS",
    "Fitted",
    "Trial",
    "errors",
    "eval_outputs",
    "fit",
    "fit_sklearn",
    "fit_torch",
    "init_seed",
    "protocol_step",
    "train_keeping_best",
]

# The validation figure the best epoch is chosen by, per task.
MONITORS = {"classify": "val_accuracy", "regress": "val_loss"}
REGRESSION_LOSSES = {"mse": nn.functional.mse_loss, "l1": nn.functional.l1_loss}
PROBABILITY_FLOOR = 1e-12  # a probability of exactly 0 read as this, so that its log is finite
GRAPH_KINDS = ("graph", "molecule")
TABLE_READS = ("fingerprint", "counts")  # what a molecule candidate may read as a table, not the graph


@dataclass(frozen=True)
class Trial:
    """One candidate on one prepared data set with one training's settings: what the protocol
    (:func:`~biaslab.comparison.protocol.fit_candidate`), its learning curves and the symmetry
    probes pass along as one value.

    Args:
        candidate: a :class:`~biaslab.comparison.candidates.Candidate`.
        prepared: the data as prepared (arrays: :class:`~biaslab.comparison.prepared.Prepared`;
            graphs: :class:`~biaslab.comparison.graph_data.PreparedGraphs`); its ``task`` is the
            task.
        config: the training hyper-parameters (torch; ``monitor`` and ``restore_best`` are the
            protocol's).
        setup: the training's tag, seed, device (and checkpoint, logger, time limit); its seed
            fixes a CPU run.
        loss: a torch regressor's loss on standardized targets, ``"mse"`` (default) or ``"l1"``
            (:func:`protocol_step`).
    """

    candidate: Candidate
    prepared: Any
    config: TrainConfig
    setup: TrainSetup = dataclasses.field(default_factory=lambda: TrainSetup(progress=False))
    loss: RegressionLoss = "mse"

    @property
    def task(self) -> str:
        return self.prepared.task


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
        reads: what it reads of the prepared data (``Candidate.reads``): ``"x"`` the arrays,
            ``"graph"`` / ``"geometry"`` the graphs, ``"fingerprint"`` / ``"counts"`` a
            molecules' table.
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
    reads: str = "x"

    def outputs(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> np.ndarray:
        """The model's outputs on rows ``x``: logits (classify; log-probabilities for
        scikit-learn) or standardized predictions (regress), as float64.

        Shapes:
            x (N, *input_shape), mask (N, S) or None -> (N, classes) or (N,).
        """
        if self.engine == "torch":
            return self._torch_outputs(tensor_chunks(x, mask if self.takes_mask else None))
        return self._estimator_outputs(x.reshape(len(x), -1).numpy())

    def _torch_outputs(self, chunks: Iterable[tuple]) -> np.ndarray:
        out = eval_outputs(self.model, chunks)
        return (regression_column(out) if self.task == "regress" else out).double().numpy()

    def _estimator_outputs(self, flat: np.ndarray) -> np.ndarray:
        """A scikit-learn model's predictions (regress) or log-probabilities (classify) on ``flat``."""
        with on_current_threads(entries=np.size(flat)):
            if self.task == "regress":
                return np.asarray(self.model.predict(flat), dtype=np.float64)
            probs = np.zeros((len(flat), self.n_outputs))  # columns follow the estimator's classes_
            probs[:, np.asarray(self.model.classes_, dtype=np.int64)] = self.model.predict_proba(flat)
        return np.log(np.clip(probs, PROBABILITY_FLOOR, 1.0))

    def outputs_on(self, prepared, split: str) -> np.ndarray:
        """:meth:`outputs` on the rows of ``prepared``'s ``split`` ("train", "val" or "test"):
        the raw rows for a native estimator, a molecules' table for a table reader, else the
        inputs its prepared data hands it (arrays or graphs)."""
        if self.native:
            return self._estimator_outputs(prepared.native[split])
        if self.reads in TABLE_READS:
            return self.outputs(prepared.table_rows(self.reads, split))
        if self.engine == "torch":
            return self._torch_outputs(prepared.input_chunks(split, self.takes_mask))
        x, mask, _ = prepared.tensors(split)
        return self.outputs(x, mask)

    def outputs_of(self, inputs: Inputs) -> np.ndarray:
        """:meth:`outputs` on new rows (:meth:`Prepared.standardize`), as it reads them: raw
        rows, a molecules' table, their graphs, or the encoded and scaled inputs."""
        if self.native:
            return self._estimator_outputs(inputs.raw)
        if self.reads in TABLE_READS:
            return self.outputs(inputs.tables[self.reads])
        if self.reads in ("graph", "geometry"):
            return self._torch_outputs(inputs.graphs.chunks())
        return self.outputs(inputs.x, inputs.mask)


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


def fit(trial: Trial) -> Fitted:
    """Train ``trial.candidate`` on ``trial.prepared``'s training rows: the one door of the
    protocol, its learning curves and the symmetry probes.

    A torch candidate by :func:`fit_torch` (its epoch chosen on validation; arrays or graphs,
    as the prepared data hand them), an estimator by :func:`fit_sklearn`; a molecule candidate
    that reads a table (``reads``: fingerprint, counts) as any table candidate on that table.

    Raises:
        ConfigError: one line: an unknown engine, a candidate that reads fixed-size inputs given
            graphs or graphs given arrays, a table the data lack, a geometric candidate given
            molecules without coordinates, a scikit-learn estimator asked to read graphs or to
            take augmentation or masks.
    """
    candidate, prepared = trial.candidate, trial.prepared
    name, reads = candidate.name, getattr(candidate, "reads", "x")
    if candidate.engine not in ("torch", "sklearn"):
        raise ConfigError(f"candidate {name!r}: engine {candidate.engine!r}, not torch or sklearn")
    graphs = prepared.kind in GRAPH_KINDS
    if reads != "x" and not graphs:
        raise ConfigError(
            f"candidate {name!r} reads {reads}s: it compares graphs or molecules, not {prepared.kind} data"
        )
    if graphs and reads == "x":
        raise ConfigError(
            f"candidate {name!r} reads fixed-size inputs; {prepared.kind} data are graphs of any size: "
            "choose among the guide's graph candidates"
        )
    if reads in TABLE_READS:
        if reads not in prepared.tables:
            what = {"fingerprint": "fingerprints", "counts": "counts of atoms and bonds"}[reads]
            raise ConfigError(f"candidate {name!r} reads molecules' {what}; {prepared.kind} data has none")
        table_trial = replace(trial, candidate=replace(candidate, reads="x"), prepared=prepared.table(reads))
        return replace(fit(table_trial), reads=reads)
    if reads == "geometry" and not prepared.has_positions:
        raise ConfigError(f"candidate {name!r} reads 3-D coordinates; these {prepared.kind}s come without")
    if candidate.engine == "torch":
        return replace(fit_torch(trial), reads=reads)
    if graphs:
        raise ConfigError(f"candidate {name!r}: a scikit-learn estimator cannot read graphs")
    if candidate.augment is not None or candidate.takes_mask:
        what = "augmentation" if candidate.augment is not None else "masks"
        raise ConfigError(f"candidate {name!r}: a scikit-learn estimator takes no {what}")
    return fit_sklearn(candidate, prepared, init_seed(trial.setup))


def fit_torch(trial: Trial) -> Fitted:
    """Build ``trial.candidate`` (its weights drawn after seeding torch with :func:`init_seed`) and
    train it with the Trainer on the training rows, keeping the epoch with the best validation
    figure (:data:`MONITORS`).

    The prepared data (arrays or graphs) hand it their ``trainer_batches`` and ``batch_step``.
    """
    candidate, prepared, setup, task = trial.candidate, trial.prepared, trial.setup, trial.task
    train = prepared.trainer_batches("train", candidate.takes_mask)  # graphs: one line first if unreadable
    val = prepared.trainer_batches("val", candidate.takes_mask)
    torch.manual_seed(init_seed(setup))
    model = candidate.build(prepared.input_shape, prepared.n_outputs, task)
    step = prepared.batch_step(protocol_step(task, candidate.augment, trial.loss))
    history, best_epoch, seconds, stopped = train_keeping_best(
        model, task, trial.config, setup, step, train, val
    )
    parameters = sum(p.numel() for p in model.parameters())
    return Fitted(
        model, "torch", task, prepared.n_outputs, candidate.takes_mask, best_epoch, seconds, parameters,
        history, stopped_at_budget=stopped,
    )  # fmt: skip


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
    # Its OpenMP loaded with it: on the fit's threads, not every core; a small matrix's products
    # on one BLAS thread (hardware.SMALL_BLAS_ENTRIES: a logistic regression of digits 15x faster).
    with on_current_threads(entries=np.size(flat)):
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
def eval_outputs(model: nn.Module, chunks: Iterable[tuple]) -> torch.Tensor:
    """``model(*inputs)`` on each chunk of inputs (arrays: ``(x,)`` or ``(x, mask)``; graphs:
    ``(MoleculeBatch,)``) in eval mode, moved to the model's device, as float32 on the CPU.

    Shapes:
        chunks of n_i examples -> (sum n_i, outputs).
    """
    model.eval()
    device = device_of(model)
    return torch.cat([model(*(t.to(device) for t in inputs)).float().cpu() for inputs in chunks])
