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
   after temperature scaling) to classify; MAE and RMSE against the mean predictor's to regress,
   and how sure each prediction is: split-conformal 90% intervals from the validation residuals
   (Lei et al. 2018), their coverage and mean width on the test rows;
5. **ask whether more data would help** (:func:`learning_curve`): the validation error on nested
   subsets at an equal step budget, and the power law through it extrapolated to 2x and 4x the
   data.

The mechanics live below: the split and the training rows' statistics in
:mod:`biaslab.comparison.preparation`; the data as prepared in :mod:`biaslab.comparison.prepared`
(arrays) and :mod:`~biaslab.comparison.graph_data` (graphs and molecules), each handing the
trainer its batches, its step and its inputs alike; the trainer step, augmentation, masks, the
scikit-learn path and the one door to them all, :func:`~biaslab.comparison.fitting.fit`, in
:mod:`biaslab.comparison.fitting`; the learning curve in :mod:`biaslab.comparison.curves`. This
module is the protocol's one door.

In numbers: :func:`prepare` splits with ``val=0.15``, ``test=0.15``, stratified so that every
class is in every split (a class under 3 rows is one ConfigError line naming it), and
standardizes per column, per image channel, or per sequence / set feature with the padding left
out (and zero again). :func:`fit_candidate` returns a :class:`CandidateResult` (``name``,
``prior``, ``parameters``, ``train_seconds``, ``best_epoch``, ``val``, ``test``, ``fitted``):
torch weights seeded by :func:`~biaslab.comparison.fitting.init_seed` (the seed, not the tag),
the loss cross-entropy, or MSE on the standardized target, or L1 (``Trial(..., loss="l1")``);
scikit-learn with an unset ``random_state`` seeded. :func:`~biaslab.comparison.curves.learning_curve`
uses sizes N/2**k on nested, stratified prefixes (two seeds), torch subsets repeated to N rows (an
equal step budget). :func:`ood_auroc` is the max-softmax-probability detector's AUROC between the
test rows and OOD inputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING

import numpy as np
import torch

from biaslab.comparison.batched import fit_together
from biaslab.comparison.curves import Curve, learning_curve, nested_order
from biaslab.comparison.fitting import Fitted, Trial, errors, fit
from biaslab.comparison.preparation import (
    SPLITS,
    feature_axis,
    feature_stats,
    given_targets,
    split_rows,
    standardized,
    trained_targets,
)
from biaslab.comparison.prepared import Inputs, Prepared
from biaslab.comparison.table_encoding import TableEncoding
from biaslab.data.splits import Splits
from biaslab.errors import ConfigError
from biaslab.evaluate.calibration import TemperatureScaling, expected_calibration_error, reliability_bins
from biaslab.evaluate.conformal import SplitConformal, coverage_and_width
from biaslab.evaluate.ood import MSP, auroc
from biaslab.train.seed import derive_seed
from biaslab.train.trainer import accuracy

if TYPE_CHECKING:
    from biaslab.data.user_data import UserData

__all__ = [
    "ECE_BINS",
    "SPLITS",
    "CandidateResult",
    "Curve",
    "Prepared",
    "Trial",
    "fit_candidate",
    "fit_candidates_together",
    "learning_curve",
    "nested_order",
    "ood_auroc",
    "prepare",
    "prepared_rows",
    "scored",
]

ECE_BINS = 15  # equal-width confidence bins of the expected calibration error
INTERVAL_COVERAGE = 0.9  # the split-conformal intervals' nominal coverage, to regress


def prepare(
    data: UserData, *, seed: int, val: float = 0.15, test: float = 0.15, split: str = "random"
) -> Prepared:
    """Split ``data`` into training, validation and test rows and standardize it, every statistic
    from the training rows only.

    Args:
        data: a :class:`~biaslab.data.user_data.UserData` with inputs ``x`` (tables, images,
            sequences, sets).
        seed: fixes the split.
        val, test: the fractions of the rows held out for validation and test (default 0.15
            each). To classify, each class is split by these fractions (rounded, at least one row
            per split): a class needs 3 rows.
        split: ``"random"`` (above) or ``"scaffold"`` (molecules: whole Murcko scaffolds per
            split). Graphs and molecules are prepared by
            :func:`~biaslab.comparison.graph_data.prepare_graphs`.
    Returns:
        A :class:`Prepared`: a raw table (missing cells, categories) encoded
        (:class:`~biaslab.comparison.table_encoding.TableEncoding`, fitted on the training rows,
        its raw rows kept for the trees that read them); features standardized per column
        (tables), per channel (images) or
        per feature (sequences, sets: padding ignored, and zero again after); regression targets
        standardized too.
    """
    if data.kind in ("graph", "molecule") or split != "random":
        from biaslab.comparison.graph_data import prepare_graphs  # lazy: it reuses this module's split

        return prepare_graphs(data, seed=seed, val=val, test=test, split=split)
    if data.x is None:
        raise ConfigError(
            f"{data.kind} data: the comparison protocol takes tables, images, sequences and sets for now"
        )
    if not (0 < val < 1 and 0 < test < 1 and val + test < 1):
        raise ConfigError(f"val={val}, test={test}: each a fraction in (0, 1), together below 1")
    rows = split_rows(data, val, test, np.random.default_rng(derive_seed(seed, "compare-split")))
    return prepared_rows(data, rows, seed)


def prepared_rows(data: UserData, rows: dict[str, np.ndarray], seed: int) -> Prepared:
    """``data`` split into the given ``rows`` (split -> positions) and prepared as :func:`prepare`
    does: every statistic (the encoding of a raw table, the features' means and deviations, a
    regression target's) from the training rows only."""
    mask, inputs, encoding, native = data.mask, data.x, None, None
    if data.is_raw_table:  # missing cells, categories: encoded on the training rows' statistics
        categories = tuple(c.categories for c in data.columns if c.kind == "categories")
        encoding = TableEncoding(data.categorical).fit(data.x[rows["train"]], data.feature_names, categories)
        inputs = encoding.transform(data.x)  # (N, F) raw -> (N, F') finite
        native = {name: data.x[r].astype(np.float64) for name, r in rows.items()}
    axis = feature_axis(data.kind, inputs.ndim)
    x_mean, x_std = feature_stats(inputs, None if mask is None else mask.astype(bool), axis, rows["train"])
    x = standardized(inputs, mask, x_mean, x_std, data.kind)
    y, y_mean, y_std = trained_targets(data.y, data.task, rows["train"])
    targets = given_targets(data.y, data.task, rows)
    parts = {name: (torch.from_numpy(x[r]), torch.from_numpy(y[r])) for name, r in rows.items()}
    masks = (
        None if mask is None else {name: torch.from_numpy(mask[r].astype(bool)) for name, r in rows.items()}
    )
    return Prepared(
        splits=Splits(*parts["train"], *parts["val"], *parts["test"], rows["train"], rows["val"]),
        kind=data.kind,
        task=data.task,
        input_shape=tuple(inputs.shape[1:]),
        n_outputs=data.n_outputs,
        rows=rows,
        targets=targets,
        x_mean=x_mean,
        x_std=x_std,
        y_mean=y_mean,
        y_std=y_std,
        masks=masks,
        seed=seed,
        encoding=encoding,
        native=native,
    )


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
            target's unit), of the kept model, and ``interval_half_width``, the half-width q of
            the split-conformal 90% intervals fitted on these residuals (left out when the
            validation rows are too few for a finite q: fewer than 9).
        test: measured once, after every choice: classify ``accuracy``, ``ece``,
            ``ece_after_temperature``; regress ``mae``, ``rmse``, ``baseline_mae``,
            ``baseline_rmse`` (the mean of the training targets predicted for every row) and,
            with a finite q, ``interval_coverage`` (the share of test targets inside prediction ± q)
            and ``interval_width`` (2q).
        fitted: the trained candidate (:class:`~biaslab.comparison.fitting.Fitted`), for what
            reads a model after the scores: the symmetry probes, OOD detectors.
        stopped_at_budget: a time limit ended its training before the last epoch (its best
            epoch so far kept).
        reliability: to classify, the test rows' reliability diagram after temperature scaling
            (:func:`~biaslab.evaluate.calibration.reliability_bins`, 15 bins) as plain lists:
            ``counts``, ``confidence``, ``accuracy`` (None in an empty bin), ``edges``; else None.
        temperature: to classify, the temperature T fitted on the validation outputs (the
            probabilities are softmax(z / T)); else None.
    """

    name: str
    prior: str
    parameters: int | None
    train_seconds: float
    best_epoch: int | None
    val: dict[str, float]
    test: dict[str, float]
    fitted: Fitted | None = field(default=None, repr=False, compare=False)
    stopped_at_budget: bool = False
    reliability: dict | None = field(default=None, repr=False)
    temperature: float | None = None

    def reliability_diagram(self):
        """:attr:`reliability` as a :class:`~biaslab.evaluate.calibration.ReliabilityDiagram`."""
        from biaslab.evaluate.calibration import ReliabilityDiagram

        bins = self.reliability
        as_array = lambda key: np.array([np.nan if v is None else v for v in bins[key]], dtype=np.float64)  # noqa: E731
        return ReliabilityDiagram(*(as_array(k) for k in ("counts", "confidence", "accuracy", "edges")))

    def scores(self) -> dict:
        """Everything but the fitted model, as plain data (what a task returns to its driver)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "fitted"}

    @classmethod
    def from_scores(cls, scores: dict) -> CandidateResult:
        """The result :meth:`scores` describes, without its fitted model."""
        return cls(**scores)


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
    calibrated = temperature.predict_proba(z_test)
    test = {
        "accuracy": accuracy(z_test, y_test),
        "ece": expected_calibration_error(torch.softmax(z_test, dim=1), y_test, ECE_BINS),
        "ece_after_temperature": expected_calibration_error(calibrated, y_test, ECE_BINS),
    }
    bins = reliability_bins(calibrated, y_test, ECE_BINS)
    plain = lambda a: [None if not np.isfinite(v) else float(v) for v in a]  # noqa: E731
    reliability = {k: plain(getattr(bins, k)) for k in ("counts", "confidence", "accuracy", "edges")}
    return val, test, reliability, temperature.temperature_


def _regression_scores(prepared: Prepared, val_pred: np.ndarray, test_pred: np.ndarray):
    """Validation and test errors in the target's unit, against the mean predictor's; and the
    split-conformal intervals fitted on the validation residuals, judged on the test rows."""
    y_val, y_test = prepared.targets["val"], prepared.targets["test"]
    interval = SplitConformal(INTERVAL_COVERAGE).fit(y_val, val_pred)
    val = errors(val_pred, y_val)
    baseline = np.full(len(test_pred), prepared.y_mean)  # the mean of the training targets
    test = {**errors(test_pred, y_test), **errors(baseline, y_test, prefix="baseline_")}
    if np.isfinite(interval.quantile_):
        val["interval_half_width"] = interval.quantile_
        coverage, width = coverage_and_width(y_test, *interval.predict_interval(test_pred))
        test.update(interval_coverage=coverage, interval_width=width)
    return val, test


def fit_candidate(trial: Trial) -> CandidateResult:
    """Train one candidate by the protocol and score it: validation first, the test rows once.

    A torch candidate trains with :class:`~biaslab.train.trainer.Trainer` (its weights seeded by
    ``trial.setup``, augmentation on training batches only, masks passed as ``model(x, mask)``)
    and keeps the epoch with the best validation accuracy (classify) or loss (regress). A
    scikit-learn candidate fits on the training rows flattened to (N, -1); validation only reports.

    Args:
        trial: the candidate, the data as :func:`prepare` returned them, the training's config,
            setup and regression loss (:class:`~biaslab.comparison.fitting.Trial`).
    """
    return scored(trial, fit(trial))


def fit_candidates_together(trials: Sequence[Trial]) -> list[CandidateResult]:
    """:func:`fit_candidate` for each of ``trials``, their trainings fitted together where they
    can be (:func:`~biaslab.comparison.batched.fit_together`: one candidate on data of one shape,
    as the validation splits of :mod:`~biaslab.comparison.resampling` are)."""
    return [scored(trial, fitted) for trial, fitted in zip(trials, fit_together(trials))]


def scored(trial: Trial, fitted: Fitted) -> CandidateResult:
    """``trial``'s candidate, trained as ``fitted``, scored by the protocol: validation first, the
    test rows once."""
    candidate, prepared, task = trial.candidate, trial.prepared, trial.task
    val_out = fitted.outputs_on(prepared, "val")
    test_out = fitted.outputs_on(prepared, "test")  # the test rows' one reading, after every choice
    reliability = temperature = None
    if task == "classify":
        val, test, reliability, temperature = _classification_scores(prepared, val_out, test_out)
    else:
        val, test = _regression_scores(prepared, prepared.to_unit(val_out), prepared.to_unit(test_out))
    return CandidateResult(
        candidate.name,
        candidate.prior,
        fitted.parameters,
        fitted.seconds,
        fitted.best_epoch,
        val,
        test,
        fitted,
        fitted.stopped_at_budget,
        reliability,
        temperature,
    )


def ood_auroc(result: CandidateResult, prepared: Prepared, inputs: Inputs) -> float:
    """How well a classifier's confidence flags out-of-distribution ``inputs`` (prepared as the
    data, :meth:`Prepared.standardize`) among the test rows: the AUROC of the
    max-softmax-probability detector (Hendrycks & Gimpel 2017), the one every classifier has."""
    detector = MSP()
    inside = detector.score(result.fitted.outputs_on(prepared, "test"))
    outside = detector.score(result.fitted.outputs_of(inputs))
    return auroc(inside, outside)
