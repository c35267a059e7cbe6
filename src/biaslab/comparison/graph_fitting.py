"""How a graph or molecule candidate is trained and read under the comparison protocol: the
graph counterpart of :mod:`biaslab.comparison.fitting`, which hands it every
:class:`~biaslab.comparison.graph_data.PreparedGraphs` (and every candidate that reads graphs).

What a candidate reads (``Candidate.reads``) decides how it is fitted:

* ``"graph"``, ``"geometry"`` (a torch model of a batch of graphs; geometry: with coordinates):
  trained by the shared :class:`~biaslab.train.trainer.Trainer` over the **positions** of the
  training graphs, ``(rows (B,), y (B,))`` per step; the step collates the graphs of its rows into
  one disjoint graph (:meth:`GraphStore.batch`) and scores them with the protocol's own step,
  cross-entropy to classify, the mean squared error on standardized targets to regress
  (:func:`~biaslab.comparison.fitting.protocol_step`). Its weights are drawn after seeding torch
  with :func:`~biaslab.comparison.fitting.init_seed`; a
  :class:`~biaslab.train.callbacks.KeepBest` keeps the epoch with the best validation accuracy
  (classify) or loss (regress), as for every other candidate;
* ``"fingerprint"``, ``"counts"`` (molecules): a table model, fitted as any table candidate
  (:func:`~biaslab.comparison.fitting.fit_torch` or ``fit_sklearn``) on the molecules' Morgan
  bits or their counts of atoms and bonds (:meth:`PreparedGraphs.table`), the same rows and
  targets.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from biaslab.comparison.fitting import (
    Fitted,
    fit_sklearn,
    fit_torch,
    init_seed,
    protocol_step,
    regression_column,
    train_keeping_best,
)
from biaslab.comparison.graph_data import PreparedGraphs
from biaslab.comparison.graph_store import GraphStore
from biaslab.errors import ConfigError
from biaslab.nn.mlp import device_of
from biaslab.train.config import EVAL_BATCH

if TYPE_CHECKING:
    from biaslab.comparison.candidates import Candidate, RegressionLoss
    from biaslab.train.config import TrainConfig
    from biaslab.train.recipes import TrainSetup

__all__ = [
    "TABLE_READS",
    "GraphFitted",
    "TableFitted",
    "fit_graph_candidate",
    "fit_graph_model",
    "graph_outputs",
    "graph_step",
]

TABLE_READS = ("fingerprint", "counts")  # what a molecule candidate may read as a table, not the graph


@dataclass
class GraphFitted:
    """A trained graph model and what its training cost (the fields of
    :class:`~biaslab.comparison.fitting.Fitted`).

    Args:
        model: the torch module holding its best epoch's weights.
        engine: ``"torch"``.
        task: ``"classify"`` or ``"regress"``.
        n_outputs: classes (classify) or 1 (regress).
        best_epoch: the epoch kept (1-based).
        seconds: wall-clock seconds of the fit (validation included).
        parameters: the model's parameter count.
        history: the trainer's records, one per epoch.
        takes_mask: False (a graph carries its own size).
    """

    model: nn.Module
    engine: str
    task: str
    n_outputs: int
    best_epoch: int | None
    seconds: float
    parameters: int | None
    history: list[dict]
    takes_mask: bool = False
    stopped_at_budget: bool = False  # the setup's time limit ended the training early

    def outputs(self, store: GraphStore, rows) -> np.ndarray:
        """The model's outputs on the graphs ``rows`` of ``store``: logits (classify) or
        standardized predictions (regress), as float64.

        Shapes:
            rows (N,) -> (N, classes) or (N,).
        """
        out = graph_outputs(self.model, store, rows)
        return (regression_column(out) if self.task == "regress" else out).double().numpy()

    def outputs_on(self, prepared: PreparedGraphs, split: str) -> np.ndarray:
        """:meth:`outputs` on the graphs of ``prepared``'s ``split`` ("val" or "test")."""
        return self.outputs(prepared.require_graphs(), prepared.rows[split])


@dataclass
class TableFitted(Fitted):
    """A candidate fitted on one of the molecules' tables (:meth:`PreparedGraphs.table`): a
    :class:`~biaslab.comparison.fitting.Fitted` whose :meth:`outputs_on` reads that table
    (``reads``: ``"fingerprint"`` or ``"counts"``)."""

    reads: str = "fingerprint"

    def outputs_on(self, prepared: PreparedGraphs, split: str) -> np.ndarray:
        return self.outputs(prepared.table_rows(self.reads, split))  # that split's rows only


def fit_graph_candidate(
    candidate: Candidate,
    prepared: Any,
    config: TrainConfig,
    setup: TrainSetup,
    loss: RegressionLoss = "mse",
) -> GraphFitted | TableFitted:
    """Train ``candidate`` on ``prepared``'s training graphs by the protocol (module docstring);
    ``loss`` is the regression loss (:func:`~biaslab.comparison.fitting.protocol_step`).

    Raises:
        ConfigError: one line: a candidate that reads fixed-size inputs given graphs, a graph
            candidate given arrays, a fingerprint candidate given plain graphs, a geometric
            candidate given molecules without coordinates, a scikit-learn estimator asked to
            read graphs.
    """
    reads, name = getattr(candidate, "reads", "x"), candidate.name
    if not isinstance(prepared, PreparedGraphs):
        raise ConfigError(
            f"candidate {name!r} reads {reads}s: it compares graphs or molecules, not {prepared.kind} data"
        )
    if reads == "x":
        raise ConfigError(
            f"candidate {name!r} reads fixed-size inputs; {prepared.kind} data are graphs of any size: "
            "choose among the guide's graph candidates"
        )
    if reads in TABLE_READS:
        if reads not in prepared.tables:
            what = {"fingerprint": "fingerprints", "counts": "counts of atoms and bonds"}[reads]
            raise ConfigError(f"candidate {name!r} reads molecules' {what}; {prepared.kind} data has none")
        table = prepared.table(reads)
        fitted = (
            fit_torch(candidate, table, config, setup, loss)
            if candidate.engine == "torch"
            else fit_sklearn(candidate, table, init_seed(setup))
        )
        kept = {f.name: getattr(fitted, f.name) for f in dataclasses.fields(Fitted)}
        return TableFitted(**kept, reads=reads)
    if reads == "geometry" and not prepared.has_positions:
        raise ConfigError(f"candidate {name!r} reads 3-D coordinates; these {prepared.kind}s come without")
    if candidate.engine != "torch":
        raise ConfigError(f"candidate {name!r}: a scikit-learn estimator cannot read graphs")
    return fit_graph_model(candidate, prepared, config, setup, loss)


def graph_step(task: str, store: GraphStore, loss: RegressionLoss = "mse"):
    """The trainer step of a graph model: the batch ``(rows, y)`` holds the positions of its
    graphs in ``store``; they are collated on the CPU, moved to the targets' device and scored by
    :func:`~biaslab.comparison.fitting.protocol_step`."""
    score = protocol_step(task, loss=loss)

    def step(model: nn.Module, batch, generator: torch.Generator):
        rows, y = batch
        graphs = store.batch(rows.cpu().numpy()).to(y.device)
        return score(model, (graphs, y), generator)

    return step


def fit_graph_model(
    candidate: Candidate,
    prepared: PreparedGraphs,
    config: TrainConfig,
    setup: TrainSetup,
    loss: RegressionLoss = "mse",
) -> GraphFitted:
    """Build ``candidate`` (seeded by :func:`~biaslab.comparison.fitting.init_seed`) and train it
    with the Trainer on the training graphs, keeping the epoch with the best validation figure
    (:data:`~biaslab.comparison.fitting.MONITORS`)."""
    task = prepared.task
    store = prepared.require_graphs()  # one line first when some molecule cannot be a graph
    torch.manual_seed(init_seed(setup))
    model = candidate.build(prepared.input_shape, prepared.n_outputs, task)

    def positions(split: str) -> tuple[torch.Tensor, torch.Tensor]:
        rows = torch.from_numpy(prepared.rows[split])
        return rows, prepared.y[rows]  # (n_s,) positions in the store, (n_s,) targets

    step = graph_step(task, store, loss)
    history, best_epoch, seconds, stopped = train_keeping_best(
        model, task, config, setup, step, positions("train"), positions("val")
    )
    parameters = sum(p.numel() for p in model.parameters())
    return GraphFitted(
        model, "torch", task, prepared.n_outputs, best_epoch, seconds, parameters, history,
        stopped_at_budget=stopped,
    )  # fmt: skip


@torch.no_grad()
def graph_outputs(model: nn.Module, store: GraphStore, rows) -> torch.Tensor:
    """``model`` on the graphs ``rows`` of ``store`` in eval mode, ``EVAL_BATCH`` graphs at a
    time, as float32 on the CPU.

    Shapes:
        rows (N,) -> (N, outputs).
    """
    model.eval()
    device, rows = device_of(model), np.asarray(rows, dtype=np.int64)
    parts = [
        model(store.batch(rows[i : i + EVAL_BATCH]).to(device)).float().cpu()
        for i in range(0, len(rows), EVAL_BATCH)
    ]
    return torch.cat(parts)
