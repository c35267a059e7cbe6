"""One door to training any candidate of a comparison, whatever it reads: arrays
(:mod:`biaslab.comparison.fitting`) or graphs and molecules
(:mod:`biaslab.comparison.graph_fitting`). The protocol, its learning curves and the symmetry
probes all train through :func:`fit`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from biaslab.comparison.fitting import Fitted, Prepared, fit_sklearn, fit_torch, init_seed
from biaslab.comparison.graph_fitting import fit_graph_candidate
from biaslab.errors import ConfigError

if TYPE_CHECKING:
    from biaslab.comparison.candidates import Candidate, RegressionLoss, Task
    from biaslab.train.config import TrainConfig
    from biaslab.train.recipes import TrainSetup

__all__ = ["fit"]


def fit(
    candidate: Candidate,
    prepared: Prepared,
    task: Task,
    config: TrainConfig,
    setup: TrainSetup,
    loss: RegressionLoss = "mse",
) -> Fitted:
    """Train ``candidate`` on ``prepared``'s training rows: a torch candidate by
    :func:`~biaslab.comparison.fitting.fit_torch` (its epoch chosen on validation), an estimator
    by :func:`~biaslab.comparison.fitting.fit_sklearn`; graphs, molecules and every candidate that
    reads them by :func:`~biaslab.comparison.graph_fitting.fit_graph_candidate`.

    ``loss`` is a torch regressor's loss (``"mse"`` or ``"l1"``, on standardized targets).
    ``task`` must be the one the data were prepared for; a scikit-learn candidate that asks for
    augmentation or masks, or an unknown engine, is one ConfigError line.
    """
    if task != prepared.task:
        raise ConfigError(f"task={task!r}, but the data were prepared to {prepared.task}")
    if candidate.engine not in ("torch", "sklearn"):
        raise ConfigError(f"candidate {candidate.name!r}: engine {candidate.engine!r}, not torch or sklearn")
    if prepared.kind in ("graph", "molecule") or getattr(candidate, "reads", "x") != "x":
        return fit_graph_candidate(candidate, prepared, config, setup, loss)
    if candidate.engine == "torch":
        return fit_torch(candidate, prepared, config, setup, loss)
    if candidate.augment is not None or candidate.takes_mask:
        what = "augmentation" if candidate.augment is not None else "masks"
        raise ConfigError(f"candidate {candidate.name!r}: a scikit-learn estimator takes no {what}")
    return fit_sklearn(candidate, prepared, init_seed(setup))
