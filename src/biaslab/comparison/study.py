"""A finished comparison as one object: its leaderboard, its recommendation, and the trained
candidates, which predict new data (``biaslab.compare(...)``, ``biaslab.load_comparison(DIR)``,
``biaslab predict DIR DATA``).

The tools a scientist compares biaslab with are built around this loop (AutoGluon's ``fit`` →
``leaderboard`` → ``predict``; scikit-learn's ``fit`` / ``predict``). A comparison is reopened
from its run folder without training: the models were written without pickle when their fits
ended (:mod:`biaslab.comparison.saving`), and new rows are read exactly as the data were
(:func:`~biaslab.data.new_rows.read_new_rows`: checked against the training schema, one line on
a mismatch) and scaled by the training rows' statistics (:class:`~biaslab.comparison.prepared.Scaling`).

What a prediction is:

    classify   predict: the label of the most probable class (as the data gave it);
               predict_proba: softmax(z / T), the probabilities after the temperature T that the
               protocol fitted on the validation rows (Guo et al. 2017; workshop book Day 5)
    regress    predict: the value in the target's unit; predict_interval: ŷ ± q, the
               split-conformal interval of the asked coverage, q from the validation residuals
               (Lei et al. 2018): for exchangeable rows it holds at least that share of targets

:meth:`Comparison.load` reopens a run of ``STUDIES`` (compare or qm9, whose ``preparation.json``
catalog names its model builders); ``leaderboard()`` -> ``Leaderboard`` (rows as dicts,
``.to_pandas()``), ``recommended``, ``model(name)``, ``predictions(data, model, coverage)`` ->
``Predictions`` (``csv_text()``, ``summary()``: what ``biaslab predict`` writes), ``predict``,
``predict_proba``, ``predict_interval``. Every kind predicts; EGNN on new molecules is refused in
one line (a SMILES holds no coordinates).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.special import softmax

from biaslab.checks import is_number
from biaslab.comparison.candidates import candidates_for, slug
from biaslab.comparison.fitting import Fitted
from biaslab.comparison.judged import LEADERBOARD
from biaslab.comparison.prepared import Scaling, in_unit
from biaslab.comparison.saving import (
    MODELS,
    checked_file,
    read_estimator,
    read_json,
    read_npz,
    rebuild_fitted,
)
from biaslab.errors import ConfigError, DataFormatError
from biaslab.evaluate.conformal import SplitConformal
from biaslab.fileio import check_run_file_size
from biaslab.results import COMPLETE, RESULTS

__all__ = ["STUDIES", "Comparison", "Leaderboard", "Predictions"]

STUDIES = ("compare", "qm9")  # the labs whose runs save their candidates for prediction


class Leaderboard(list):
    """The leaderboard's rows, best validation score first, each a dict by column."""

    def to_pandas(self):
        """The rows as a pandas ``DataFrame`` (pandas is optional: a clear line without it)."""
        try:
            import pandas as pd
        except ImportError:
            raise ConfigError("to_pandas needs pandas: pip install pandas") from None
        return pd.DataFrame(list(self))


@dataclass(frozen=True)
class Predictions:
    """One model's predictions on new rows (what ``biaslab predict`` writes).

    Shapes (M rows, K classes):
        ids: M, a row's number or an image's file name. predicted: (M,) labels or values.
        probabilities: (M, K) after temperature scaling (classify), else None.
        low, high: (M,) the interval's bounds (regress), else None.
    """

    model: str
    ids: tuple[str, ...]
    predicted: np.ndarray
    probabilities: np.ndarray | None = None
    low: np.ndarray | None = None
    high: np.ndarray | None = None
    coverage: float | None = None
    notes: tuple[str, ...] = ()
    classes: tuple = ()

    def csv_text(self) -> str:
        """The predictions as CSV: ``id``, ``prediction``, then each class's probability
        (classify) or the interval's bounds (regress)."""
        import csv
        import io

        header = ["id", "prediction"]
        if self.probabilities is not None:
            header += [f"probability of {c}" for c in self.classes]
        if self.low is not None:
            header += [
                f"low ({100 * self.coverage:g}% interval)",
                f"high ({100 * self.coverage:g}% interval)",
            ]
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(header)
        for i, row_id in enumerate(self.ids):
            row = [row_id, _cell(self.predicted[i])]
            if self.probabilities is not None:
                row += [f"{p:.6g}" for p in self.probabilities[i]]
            if self.low is not None:
                row += [f"{self.low[i]:.6g}", f"{self.high[i]:.6g}"]
            writer.writerow(row)
        return buffer.getvalue()

    def summary(self) -> str:
        """One line: how many rows, by which model, and what was noted."""
        what = (
            "intervals" if self.low is not None else "probabilities" if self.probabilities is not None else ""
        )
        line = f"{len(self.ids):,} rows predicted by {self.model}" + (f" (with {what})" if what else "")
        return "; ".join([line, *self.notes])


class Comparison:
    """A finished comparison, reopened from its run folder (:meth:`load`).

    Attributes:
        run_dir, results: the run's folder and results.json (as ``biaslab.load`` gives them).
        task: ``"classify"`` or ``"regress"``; kind: the data's kind; classes: the labels in
            the order of the model's outputs (classify).
        recommended: the name of the candidate the comparison recommends.
        candidates: the names of the saved candidates.
    """

    def __init__(self, run_dir: Path, results: dict, preparation: dict, shown=None):
        self.run_dir, self.results = Path(run_dir), results
        self._preparation, self._shown = preparation, shown
        self.task: str = preparation["task"]
        self.kind: str = preparation["schema"]["kind"]
        self.classes: tuple = tuple(preparation.get("classes", ()))
        self.recommended: str = preparation["recommended"]
        self.candidates: tuple[str, ...] = tuple(preparation["candidates"])
        self._fitted: dict[str, tuple[Fitted, dict]] = {}
        self._positions = bool(preparation.get("has_positions"))  # molecules with coordinates
        self._scaling: Scaling | None = None

    @classmethod
    def load(cls, run_dir, shown=None) -> Comparison:
        """The comparison a finished run folder holds, without training.

        Raises:
            DataFormatError: one line: not a finished ``compare`` run, no saved models, a file
                truncated or edited.
        """
        run_dir = Path(run_dir)
        results_path = run_dir / RESULTS
        if not (run_dir / COMPLETE).is_file() or not results_path.is_file():
            raise DataFormatError(f"{run_dir} holds no finished run (no COMPLETE or results.json)")
        check_run_file_size(results_path)
        results = read_json(results_path, ("experiment",))
        if results["experiment"] not in STUDIES:
            raise DataFormatError(
                f"{run_dir} is a run of {results['experiment']!r}, not a comparison ({' or '.join(STUDIES)})"
            )
        folder = run_dir / MODELS
        if not (folder / "preparation.json").is_file():
            raise DataFormatError(
                f"{run_dir} has no saved models ({MODELS}/preparation.json): it was made by an older "
                "biaslab; run the comparison again"
            )
        preparation = read_json(folder / "preparation.json", ("task", "schema", "recommended", "candidates"))
        return cls(run_dir, results, preparation, shown)

    # -- what the run measured ------------------------------------------------------------------
    @property
    def metrics(self) -> dict:
        return self.results.get("metrics", {})

    @property
    def claims(self) -> list[dict]:
        return self.results.get("claims", [])

    def leaderboard(self) -> Leaderboard:
        """The report's leaderboard: per candidate its prior, parameters, validation and test
        scores, timings and verdict, best validation score first."""
        tables = self.results.get("tables", [])
        table = next((t for t in tables if t.get("title", "").split(":")[0] == LEADERBOARD), None)
        if table is None:
            return Leaderboard()
        return Leaderboard(dict(zip(table["columns"], row, strict=False)) for row in table["rows"])

    # -- the models ---------------------------------------------------------------------------
    def model(self, name: str | None = None):
        """The trained model ``name`` (default: the recommended one): a torch module in eval
        mode holding its best epoch's weights, or a fitted scikit-learn estimator."""
        return self._model(name)[0].model

    def _model(self, name: str | None) -> tuple[Fitted, dict]:
        name = self.recommended if name is None else name
        by_slug = {slug(c): c for c in self.candidates}
        if slug(name) not in by_slug:
            raise ConfigError(
                f"no model {name!r} in this comparison; choose from {', '.join(self.candidates)}"
            )
        name = by_slug[slug(name)]
        if name not in self._fitted:
            self._fitted[name] = rebuild_fitted(self.run_dir / MODELS / slug(name), self._build)
        return self._fitted[name]

    def _build(self, meta: dict):
        """A fresh module of the candidate ``meta`` names: the guide's, or the user's factory."""
        shape, outputs, task = tuple(meta["input_shape"]), int(meta["n_outputs"]), meta["task"]
        catalog = self._preparation.get("catalog")
        if isinstance(catalog, dict) and catalog.get("name") == "qm9":
            from biaslab.comparison.qm9 import QM9_CANDIDATES, qm9_candidates

            if meta["name"] not in QM9_CANDIDATES:
                raise DataFormatError(f"{self.run_dir / MODELS}: no QM9 model {meta['name']!r} (edited?)")
            (candidate,) = qm9_candidates((meta["name"],), int(catalog["hidden"]))
            return candidate.build(shape, outputs, task)
        if meta.get("factory"):
            from biaslab.comparison.user_models import user_candidate

            return user_candidate(meta["factory"]).build(shape, outputs, task)
        guide = {c.name: c for c in candidates_for(self.kind, task=task, has_positions=self._positions)}
        if meta["name"] not in guide:
            raise DataFormatError(f"{self.run_dir / MODELS}: no candidate {meta['name']!r} (edited?)")
        return guide[meta["name"]].build(shape, outputs, task)

    def _statistics(self, names: tuple[str, ...]) -> dict[str, np.ndarray]:
        """Arrays ``names`` of the saved preparation.npz."""
        folder, digests = self.run_dir / MODELS, self._preparation.get("files", {})
        return read_npz(checked_file(folder, "preparation.npz", digests), folder / "preparation.npz", names)

    def _inputs(self, data, meta: dict):
        """New rows read against the training schema, as the model ``meta`` describes reads them:
        ``(Inputs, NewRows)``."""
        from biaslab.data.input_schema import InputSchema
        from biaslab.data.new_rows import read_new_rows

        rows = read_new_rows(data, InputSchema.from_dict(self._preparation["schema"]))
        if rows.graphs is not None:
            from biaslab.comparison.graph_data import graph_inputs

            stats = self._statistics(("node_mean", "node_std"))
            return graph_inputs(rows.graphs, stats["node_mean"], stats["node_std"]), rows
        if rows.smiles is None:
            return self.scaling.standardize(rows.x, rows.mask), rows
        from biaslab.comparison.graph_data import molecule_inputs

        if meta.get("reads") == "geometry":
            raise ConfigError(
                f"{meta['name']} reads 3-D coordinates, which new molecules do not bring here yet: "
                "choose another model (--model)"
            )
        has_graphs = "preparation.npz" in self._preparation.get("files", {})
        names = ("node_mean", "node_std")
        if meta.get("reads") == "counts":  # QM9's counts table, standardized as in training
            names += ("counts_mean", "counts_std")
        stats = self._statistics(names) if has_graphs else {}
        counts = (stats["counts_mean"], stats["counts_std"]) if "counts_mean" in stats else None
        inputs, unreadable = molecule_inputs(
            rows.smiles, stats.get("node_mean"), stats.get("node_std"), counts
        )
        if inputs.graphs is None and meta.get("reads") in ("graph", "counts"):
            raise ConfigError(f"{unreadable}; {meta['name']} reads the atom features (H, C, N, O, F)")
        return inputs, rows

    @property
    def scaling(self) -> Scaling:
        """The training rows' statistics new inputs are scaled by."""
        if self._scaling is None:
            folder, prep = self.run_dir / MODELS, self._preparation
            digests = prep.get("files", {})
            stats = self._statistics(("x_mean", "x_std"))
            encoding = None
            if "encoding.skops" in digests:
                from biaslab.comparison.table_encoding import TableEncoding

                encoding = TableEncoding(None)
                encoding.transformer_ = read_estimator(
                    checked_file(folder, "encoding.skops", digests), folder / "encoding.skops"
                )
            self._scaling = Scaling(
                self.kind, stats["x_mean"], stats["x_std"], encoding, prep.get("y_mean"), prep.get("y_std")
            )
        return self._scaling

    # -- predictions --------------------------------------------------------------------------
    def predictions(self, data, model: str | None = None, coverage: float = 0.9) -> Predictions:
        """Model ``model``'s (default: the recommended) predictions on ``data``: a path (a table,
        an NPZ, images), a pandas DataFrame or arrays, read as the training data were.

        Raises:
            DataFormatError, ConfigError: one line: data that do not fit the training schema, an
                unknown model, a coverage outside (0, 1).
        """
        if not 0 < coverage < 1:
            raise ConfigError(f"coverage={coverage!r}: a share in (0, 1), such as 0.9")
        fitted, meta = self._model(model)
        inputs, rows = self._inputs(data, meta)
        outputs = fitted.outputs_of(inputs)
        name = meta["name"]
        if self.task == "classify":
            temperature = float(meta.get("temperature") or 1.0)  # outputs: (M, K) logits or log-probabilities
            probabilities = softmax(outputs / temperature, axis=1)
            labels = np.asarray(self.classes, dtype=object)[probabilities.argmax(axis=1)]
            return Predictions(
                name, rows.ids, _plain(labels), probabilities, notes=rows.notes, classes=self.classes
            )
        predicted = in_unit(outputs, self._preparation["y_mean"], self._preparation["y_std"])
        low = high = None
        folder = self.run_dir / MODELS / slug(name)
        if "calibration.npz" in meta.get("files", {}):
            saved = checked_file(folder, "calibration.npz", meta["files"])
            residuals = read_npz(saved, folder / "calibration.npz", ("val_residuals",))["val_residuals"]
            interval = SplitConformal(coverage).fit(residuals, np.zeros_like(residuals))
            low, high = interval.predict_interval(predicted)
        return Predictions(name, rows.ids, predicted, low=low, high=high, coverage=coverage, notes=rows.notes)

    def predict(self, data, model: str | None = None) -> np.ndarray:
        """Labels (classify) or values in the target's unit (regress), one per row of ``data``."""
        return self.predictions(data, model).predicted

    def predict_proba(self, data, model: str | None = None) -> np.ndarray:
        """(M, K) class probabilities after temperature scaling; columns follow :attr:`classes`."""
        if self.task != "classify":
            raise ConfigError(
                "predict_proba is for a classification; this comparison regresses: use predict_interval"
            )
        return self.predictions(data, model).probabilities

    def predict_interval(self, data, coverage: float = 0.9, model: str | None = None) -> np.ndarray:
        """(M, 2) split-conformal intervals ``[low, high]`` that hold ``coverage`` of new targets."""
        if self.task != "regress":
            raise ConfigError(
                "predict_interval is for a regression; this comparison classifies: use predict_proba"
            )
        found = self.predictions(data, model, coverage)
        if found.low is None:
            raise DataFormatError(f"{found.model} has no validation residuals saved: no interval")
        return np.stack([found.low, found.high], axis=1)

    # -- shown as the run ---------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        shown = self.__dict__.get("_shown")
        if shown is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(shown, name)

    def __repr__(self) -> str:
        return f"Comparison(run_dir='{self.run_dir}', recommended={self.recommended!r}, task={self.task!r})"

    def __str__(self) -> str:
        return str(self._shown) if self._shown is not None else repr(self)


def _cell(value) -> str:
    """A prediction as a CSV cell: a label as given, a value to 6 significant digits."""
    return f"{value:.6g}" if isinstance(value, (float, np.floating)) else str(value)


def _plain(labels: np.ndarray) -> np.ndarray:
    """Labels as the data gave them: numbers as a numeric array, text as strings."""
    values = list(labels)
    if all(is_number(v) for v in values):
        return np.asarray(values)
    return np.asarray([str(v) for v in values])
