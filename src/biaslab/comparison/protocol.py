"""One protocol for every candidate of a comparison, so that their numbers compare.

The workshop's rules for judging a model (Day 5), applied alike to every architecture offered
for the user's data (Day 4: each a prior), by ``biaslab compare``:

1. **split once** (:func:`prepare`): training, validation and test rows drawn by a seed,
   stratified by class to classify; every candidate sees the same rows;
2. **fit every statistic on the training rows only**: the features' means and standard
   deviations, the regression target's (errors are reported back in the target's unit);
3. **choose on validation** (:func:`fit_candidate`): the epoch kept, the temperature that
   calibrates the logits; the test rows are read **once**, after every choice;
4. **report what a decision needs**: accuracy and calibration (ECE over 15 bins, before and
   after temperature scaling) to classify; MAE and RMSE against the mean predictor's to regress;
5. **ask whether more data would help** (:func:`learning_curve`): the validation error on nested
   subsets at an equal step budget, and the power law through it extrapolated to 2x and 4x the
   data.

The mechanics (:class:`Prepared`, the trainer step, augmentation, masks, the scikit-learn path)
live in :mod:`biaslab.comparison.fitting`, the learning curve in :mod:`biaslab.comparison.curves`; this
module is the protocol's one door.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import torch

from biaslab.comparison.curves import Curve, learning_curve, nested_order
from biaslab.comparison.fitting import Fitted, Prepared, errors, fit
from biaslab.data.splits import Splits
from biaslab.errors import ConfigError
from biaslab.evaluate.calibration import TemperatureScaling, expected_calibration_error
from biaslab.train.seed import derive_seed
from biaslab.train.trainer import accuracy

if TYPE_CHECKING:
    from biaslab.comparison.candidates import Candidate, Task
    from biaslab.data.user_data import UserData
    from biaslab.train.config import TrainConfig
    from biaslab.train.recipes import TrainSetup

__all__ = [
    "ECE_BINS",
    "SPLITS",
    "CandidateResult",
    "Curve",
    "Prepared",
    "fit_candidate",
    "learning_curve",
    "nested_order",
    "prepare",
]

SPLITS = ("train", "val", "test")
ECE_BINS = 15  # equal-width confidence bins of the expected calibration error
CONSTANT = 1e-12  # a feature whose training spread is below this is constant: it is only centred


def prepare(data: UserData, *, seed: int, val: float = 0.15, test: float = 0.15) -> Prepared:
    """Split ``data`` into training, validation and test rows and standardize it, every statistic
    from the training rows only.

    Args:
        data: a :class:`~biaslab.data.user_data.UserData` with inputs ``x`` (tables, images,
            sequences, sets).
        seed: fixes the split.
        val, test: the fractions of the rows held out for validation and test (default 0.15
            each). To classify, each class is split by these fractions (rounded, at least one row
            per split): a class needs 3 rows.
    Returns:
        A :class:`Prepared`: features standardized per column (tables), per channel (images) or
        per feature (sequences, sets: padding ignored, and zero again after); regression targets
        standardized too.
    """
    if data.x is None:
        raise ConfigError(
            f"{data.kind} data: the comparison protocol takes tables, images, sequences and sets for now"
        )
    if not (0 < val < 1 and 0 < test < 1 and val + test < 1):
        raise ConfigError(f"val={val}, test={test}: each a fraction in (0, 1), together below 1")
    rows = _split_rows(data, val, test, np.random.default_rng(derive_seed(seed, "compare-split")))
    mask = data.mask
    axis = 1 if data.kind == "image" else data.x.ndim - 1  # the axis of the features (channels)
    x_mean, x_std = _feature_stats(data.x, None if mask is None else mask.astype(bool), axis, rows["train"])
    shape = [1] * data.x.ndim
    shape[axis] = -1
    x = ((data.x - x_mean.reshape(shape)) / x_std.reshape(shape)).astype(np.float32)
    if mask is not None:
        x[~mask.astype(bool)] = 0.0  # padding stays zero
    targets = {name: data.y[r] for name, r in rows.items()}
    y, y_mean, y_std = data.y, None, None
    if data.task == "regress":
        train_y = data.y[rows["train"]].astype(np.float64)
        y_mean, y_std = float(train_y.mean()), float(train_y.std())
        if not y_std > 0:
            raise ConfigError(f"the target is constant ({y_mean:g}) on the training rows: nothing to predict")
        targets = {name: t.astype(np.float64) for name, t in targets.items()}
        y = ((data.y.astype(np.float64) - y_mean) / y_std).astype(np.float32)
    parts = {name: (torch.from_numpy(x[r]), torch.from_numpy(y[r])) for name, r in rows.items()}
    masks = (
        None if mask is None else {name: torch.from_numpy(mask[r].astype(bool)) for name, r in rows.items()}
    )
    return Prepared(
        splits=Splits(*parts["train"], *parts["val"], *parts["test"], rows["train"], rows["val"]),
        kind=data.kind,
        task=data.task,
        input_shape=tuple(data.x.shape[1:]),
        n_outputs=data.n_classes if data.task == "classify" else 1,
        rows=rows,
        targets=targets,
        x_mean=x_mean,
        x_std=x_std,
        y_mean=y_mean,
        y_std=y_std,
        masks=masks,
        seed=seed,
    )


def _split_rows(data: UserData, val: float, test: float, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Row positions per split, shuffled. To classify, each class is split on its own (every class
    in every split); a class with fewer than 3 rows is one ConfigError naming every such class."""
    if data.task == "classify":
        counts = np.bincount(data.y, minlength=data.n_classes)
        few = [f"{data.classes[c]!r} ({n} rows)" for c, n in enumerate(counts) if n < 3]
        if few:
            raise ConfigError(
                f"too few rows of class {', '.join(few)}: a stratified split needs 3 per class "
                "(one each for training, validation and test); add rows or drop the class"
            )
        groups = [np.flatnonzero(data.y == c) for c in range(data.n_classes)]
    else:
        groups = [np.arange(len(data.y))]
    parts: dict[str, list[np.ndarray]] = {name: [] for name in SPLITS}
    for group in groups:
        group, n = rng.permutation(group), len(group)
        n_test = min(max(1, math.floor(test * n + 0.5)), n - 2)
        n_val = min(max(1, math.floor(val * n + 0.5)), n - 1 - n_test)
        parts["test"].append(group[:n_test])
        parts["val"].append(group[n_test : n_test + n_val])
        parts["train"].append(group[n_test + n_val :])
    return {name: rng.permutation(np.concatenate(p)) for name, p in parts.items()}


def _feature_stats(x: np.ndarray, mask: np.ndarray | None, axis: int, rows: np.ndarray):
    """Mean and std per feature (along ``axis``) over the training ``rows``, masked entries left
    out; a constant feature's std is 1 (it is centred only).

    Shapes:
        x (N, ...), mask (N, S) or None, rows (n,) -> mean (F,), std (F,) in float64.
    """
    values = np.moveaxis(x[rows].astype(np.float64), axis, -1)
    values = values.reshape(-1, values.shape[-1])  # (entries, F)
    if mask is not None:
        values = values[mask[rows].reshape(-1)]  # the real elements only
    mean, std = values.mean(axis=0), values.std(axis=0)
    return mean, np.where(std > CONSTANT, std, 1.0)


# -- one candidate ------------------------------------------------------------------------------
@dataclass(frozen=True)
class CandidateResult:
    """One candidate judged by the protocol.

    Args:
        name, prior: the candidate's.
        parameters: the torch model's parameter count; None for scikit-learn.
        train_seconds: wall-clock seconds of the fit (validation included).
        best_epoch: the epoch kept on validation (torch, 1-based); None for scikit-learn.
        val: classify ``accuracy``, ``loss`` (cross-entropy); regress ``mae``, ``rmse`` (the
            target's unit), of the kept model.
        test: measured once, after every choice: classify ``accuracy``, ``ece``,
            ``ece_after_temperature``; regress ``mae``, ``rmse``, ``baseline_mae``,
            ``baseline_rmse`` (the mean of the training targets predicted for every row).
        fitted: the trained candidate (:class:`~biaslab.comparison.fitting.Fitted`), for what
            reads a model after the scores: the symmetry probes, OOD detectors.
    """

    name: str
    prior: str
    parameters: int | None
    train_seconds: float
    best_epoch: int | None
    val: dict[str, float]
    test: dict[str, float]
    fitted: Fitted | None = field(default=None, repr=False, compare=False)


def _classification_scores(prepared: Prepared, val_logits: np.ndarray, test_logits: np.ndarray):
    """Validation accuracy and cross-entropy; test accuracy and ECE before and after a
    temperature fitted on the validation logits (Day 5: calibration; Guo et al. 2017)."""
    z_val, z_test = torch.from_numpy(val_logits), torch.from_numpy(test_logits)
    y_val, y_test = torch.from_numpy(prepared.targets["val"]), torch.from_numpy(prepared.targets["test"])
    val = {
        "accuracy": accuracy(z_val, y_val),
        "loss": float(torch.nn.functional.cross_entropy(z_val, y_val)),
    }
    temperature = TemperatureScaling().fit(z_val, y_val)
    test = {
        "accuracy": accuracy(z_test, y_test),
        "ece": expected_calibration_error(torch.softmax(z_test, dim=1), y_test, ECE_BINS),
        "ece_after_temperature": expected_calibration_error(
            temperature.predict_proba(z_test), y_test, ECE_BINS
        ),
    }
    return val, test


def fit_candidate(
    candidate: Candidate, prepared: Prepared, task: Task, config: TrainConfig, setup: TrainSetup
) -> CandidateResult:
    """Train one candidate by the protocol and score it: validation first, the test rows once.

    A torch candidate trains with :class:`~biaslab.train.trainer.Trainer` (its weights seeded by
    ``setup``, augmentation on training batches only, masks passed as ``model(x, mask)``) and
    keeps the epoch with the best validation accuracy (classify) or loss (regress). A scikit-learn
    candidate fits on the training rows flattened to (N, -1); validation only reports.

    Args:
        candidate: a :class:`~biaslab.comparison.candidates.Candidate`.
        prepared: what :func:`prepare` returned.
        task: ``"classify"`` or ``"regress"``, as the data were prepared.
        config: the training hyper-parameters (torch; ``monitor`` and ``restore_best`` are the
            protocol's).
        setup: the training's tag, seed, device (and checkpoint, logger); its seed fixes a CPU run.
    """
    fitted = fit(candidate, prepared, task, config, setup)
    val_out = fitted.outputs_on(prepared, "val")
    test_out = fitted.outputs_on(prepared, "test")  # the test rows' one reading, after every choice
    if task == "classify":
        val, test = _classification_scores(prepared, val_out, test_out)
    else:
        val = errors(prepared.to_unit(val_out), prepared.targets["val"])
        baseline = np.full(len(test_out), prepared.y_mean)  # the mean of the training targets
        test = {
            **errors(prepared.to_unit(test_out), prepared.targets["test"]),
            **errors(baseline, prepared.targets["test"], prefix="baseline_"),
        }
    return CandidateResult(
        candidate.name,
        candidate.prior,
        fitted.parameters,
        fitted.seconds,
        fitted.best_epoch,
        val,
        test,
        fitted,
    )
