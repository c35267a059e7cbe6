"""A comparison's trained candidates written without pickle, and rebuilt from what was written.

A pickle runs code when it is read, so a model file passed around (a colleague's run folder, a
download) would be a program. Here nothing that is read back can run: each part of a fitted
candidate is written in a format that holds data only, and what rebuilds it is biaslab's own
code, named by the data.

A run's ``models/`` folder:

    preparation.json     the data's input schema (:class:`~biaslab.data.new_rows.InputSchema`),
                         task, classes (their labels as given), the regression target's mean and
                         standard deviation, the recommended candidate, the candidates' catalog
                         when not the decision guide's (qm9's), and each file's SHA-256
    preparation.npz      x_mean, x_std: the training rows' feature statistics (no object arrays);
                         graphs and molecules: node_mean, node_std, the training graphs' nodes'
                         (absent for molecules compared by fingerprints only), and QM9's
                         counts_mean, counts_std (its counts table's training columns)
    encoding.skops       a raw table's ``ColumnTransformer`` (imputation, one-hot codes)
    <candidate>/         one folder per candidate (:func:`~biaslab.comparison.candidates.slug`):
      model.json         what rebuilds it: name, engine, input shape, outputs, task, whether it
                         takes a mask or reads the raw table, its temperature (classify), a
                         user's factory (``file.py:factory``) and that file's SHA-256, and the
                         SHA-256 of its other files
      weights.safetensors  a torch module's tensors (safetensors: names, shapes, bytes)
      estimator.skops    a scikit-learn estimator (skops: its attributes; every type it would
                         make checked against :data:`TRUSTED_TYPES` before any is made)
      calibration.npz    regress: the validation residuals in the target's unit, from which
                         split-conformal intervals of any coverage are made (Lei et al. 2018)

A torch module is rebuilt by its candidate's own ``build(input_shape, n_outputs, task)`` and
given the saved tensors (``load_state_dict(strict=True)``). A file that is missing, truncated or
edited after the run wrote it (its SHA-256 differs) is one :class:`~biaslab.errors.DataFormatError`
line naming it; a user's model file that changed since the run is refused with the reason.

:func:`candidate_files` writes one candidate's files and :func:`rebuild_fitted` rebuilds it;
:func:`fitted_files` are a fitted candidate's (saved by a compare task through
``TaskContext.save_file``: the driver writes them when the task's result arrives, before the
result) and :func:`preparation_files` the data's preparation (written at the study's end through
``RunContext.save_file``), for every kind of data.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from biaslab.comparison.candidates import slug
from biaslab.comparison.fitting import GRAPH_KINDS, TABLE_READS, Fitted
from biaslab.comparison.user_models import factory_file
from biaslab.errors import DataFormatError
from biaslab.results import MODELS

__all__ = [
    "MODELS",
    "TRUSTED_TYPES",
    "as_files",
    "candidate_files",
    "checked_file",
    "estimator_bytes",
    "fitted_files",
    "npz_bytes",
    "preparation_files",
    "read_estimator",
    "read_json",
    "read_npz",
    "rebuild_fitted",
]


# The types skops does not trust by default that biaslab's own estimators hold, each named:
# the trees of HistGradientBoosting, a k-nearest-neighbours index and its metric, a
# ColumnTransformer's dtype. A file asking for any other type is refused before it is read.
TRUSTED_TYPES = (
    "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",
    "sklearn.neighbors._kd_tree.KDTree",
    "sklearn.neighbors._ball_tree.BallTree",
    "sklearn.metrics._dist_metrics.EuclideanDistance64",
    "numpy.dtype",
)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- writing ------------------------------------------------------------------------------------
def estimator_bytes(estimator) -> bytes:
    """A scikit-learn estimator as skops bytes (no pickle)."""
    import skops.io

    return skops.io.dumps(estimator)


def npz_bytes(**arrays: np.ndarray) -> bytes:
    """Numeric arrays as an NPZ archive's bytes (``allow_pickle`` never needed to read them)."""
    buffer = io.BytesIO()
    np.savez(buffer, **{k: np.asarray(v) for k, v in arrays.items()})
    return buffer.getvalue()


def as_files(meta: dict, data_files: dict[str, bytes], meta_name: str) -> dict[str, bytes]:
    """``data_files`` and ``meta`` (with their SHA-256 under ``"files"``) as JSON ``meta_name``."""
    meta = {**meta, "files": {name: sha256(data) for name, data in data_files.items()}}
    return {**data_files, meta_name: (json.dumps(meta, indent=1) + "\n").encode()}


def candidate_files(
    fitted: Fitted, name: str, input_shape: tuple[int, ...], *, factory: str = "", extras: dict | None = None
) -> dict[str, bytes]:
    """One fitted candidate as files (the module's table), by file name.

    Args:
        fitted: the trained candidate.
        name: the candidate's name (what rebuilds it among the decision guide's).
        input_shape: one example's shape as the candidate reads it (what ``build`` takes).
        factory: a user's model, ``"file.py:factory"`` or ``"module:factory"``; its file's
            SHA-256 is recorded (a module installed as a package is fixed by its version).
        extras: more fields for model.json (``temperature``) and arrays for calibration.npz
            under ``"calibration"`` (``val_residuals``).
    """
    extras = dict(extras or {})
    calibration = extras.pop("calibration", None)
    meta = {
        "name": name,
        "engine": fitted.engine,
        "task": fitted.task,
        "n_outputs": fitted.n_outputs,
        "input_shape": list(input_shape),
        "takes_mask": fitted.takes_mask,
        "native": fitted.native,
        "reads": fitted.reads,
        "best_epoch": fitted.best_epoch,
        "parameters": fitted.parameters,
        "factory": factory,
        "factory_sha256": _factory_digest(factory),
        **extras,
    }
    if fitted.engine == "torch":
        import safetensors.torch

        state = {k: v.detach().cpu().contiguous().clone() for k, v in fitted.model.state_dict().items()}
        files = {"weights.safetensors": safetensors.torch.save(state)}
    else:
        files = {"estimator.skops": estimator_bytes(fitted.model)}
    if calibration:
        files["calibration.npz"] = npz_bytes(**calibration)
    return as_files(meta, files, "model.json")


def _factory_digest(factory: str) -> str:
    path = factory_file(factory) if factory else None
    return "" if path is None else sha256(path.read_bytes())


# -- reading ------------------------------------------------------------------------------------
def checked_file(folder: Path, name: str, digests: dict) -> bytes:
    """The bytes of ``folder/name``, refused in one line when missing or not as written."""
    path = folder / name
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DataFormatError(f"{path} cannot be read ({exc.strerror or type(exc).__name__})") from None
    expected = digests.get(name)
    if expected != sha256(data):
        raise DataFormatError(
            f"{path} is not the file the run wrote (its SHA-256 differs: truncated or edited); "
            "run the comparison again"
        )
    return data


def read_json(path: Path, required: tuple[str, ...]) -> dict:
    """A JSON object holding ``required`` keys, or one DataFormatError line."""
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DataFormatError(f"{path} cannot be read ({exc.strerror or type(exc).__name__})") from None
    except (ValueError, UnicodeDecodeError):
        raise DataFormatError(
            f"{path} is not valid JSON (truncated or edited); run the comparison again"
        ) from None
    missing = [k for k in required if not isinstance(meta, dict) or k not in meta]
    if missing:
        raise DataFormatError(f"{path} lacks {', '.join(missing)} (edited?); run the comparison again")
    if not isinstance(meta.get("files", {}), dict):
        raise DataFormatError(f"{path}: 'files' is not a mapping (edited?); run the comparison again")
    return meta


def read_npz(data: bytes, path: Path, names: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Numeric arrays ``names`` of an NPZ's bytes, read without pickle."""
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            return {name: np.asarray(archive[name]) for name in names}
    except (ValueError, KeyError, OSError) as exc:
        raise DataFormatError(f"{path} cannot be read as arrays ({type(exc).__name__})") from None


def read_estimator(data: bytes, path: Path):
    """A scikit-learn estimator from skops bytes; a type outside skops' defaults and
    :data:`TRUSTED_TYPES` is refused before anything is made."""
    import skops.io

    try:
        untrusted = skops.io.get_untrusted_types(data=data)
    except Exception:  # skops raises what zipfile and json raise on a bad file
        raise DataFormatError(f"{path} cannot be read as a skops file (truncated or edited)") from None
    refused = sorted(set(untrusted) - set(TRUSTED_TYPES))
    if refused:
        raise DataFormatError(f"{path} would create types biaslab does not trust: {', '.join(refused)}")
    try:
        return skops.io.loads(data, trusted=list(untrusted))
    except Exception as exc:
        raise DataFormatError(f"{path} cannot be read as a skops file ({type(exc).__name__})") from None


def rebuild_fitted(folder: Path, build: Callable[[dict], Any]) -> tuple[Fitted, dict]:
    """A saved candidate (the folder :func:`candidate_files` wrote) as a :class:`Fitted`, and its
    model.json.

    Args:
        build: ``build(meta) -> module`` (torch): a fresh module of the candidate model.json
            names, which the saved tensors are loaded into.
    """
    meta = read_json(folder / "model.json", ("name", "engine", "task", "n_outputs", "input_shape"))
    digests = meta.get("files", {})
    factory = meta.get("factory", "")
    source = factory_file(factory) if factory else None
    if source is not None:
        now = sha256(source.read_bytes()) if source.is_file() else None
        if now != meta.get("factory_sha256"):
            what = "is gone" if now is None else "changed since the run (its SHA-256 differs)"
            raise DataFormatError(
                f"the model file {source} {what}: the saved weights belong to the factory as it "
                "was; restore that file, or run the comparison again"
            )
    if meta["engine"] == "torch":
        import safetensors.torch

        data = checked_file(folder, "weights.safetensors", digests)
        try:
            state = safetensors.torch.load(data)
        except Exception:  # safetensors' own error type
            raise DataFormatError(f"{folder / 'weights.safetensors'} cannot be read as tensors") from None
        with torch.random.fork_rng(devices=[]):  # building draws initial weights: not the caller's
            model = build(meta)
        try:
            model.load_state_dict(state, strict=True)
        except RuntimeError as exc:
            first = str(exc).strip().splitlines()[0]
            raise DataFormatError(
                f"{folder / 'weights.safetensors'} does not fit {meta['name']}: {first}"
            ) from None
        model.eval()
    elif meta["engine"] == "sklearn":
        model = read_estimator(checked_file(folder, "estimator.skops", digests), folder / "estimator.skops")
    else:
        raise DataFormatError(f"{folder / 'model.json'}: unknown engine {meta['engine']!r} (edited?)")
    fitted = Fitted(
        model, meta["engine"], meta["task"], int(meta["n_outputs"]), bool(meta.get("takes_mask")),
        meta.get("best_epoch"), 0.0, meta.get("parameters"), [], bool(meta.get("native")),
        reads=str(meta.get("reads", "x")),
    )  # fmt: skip
    return fitted, meta


def preparation_files(
    prepared, schema: dict, classes, saved: list[str], recommended: str | None, catalog: dict | None = None
) -> dict[str, bytes]:
    """The data's preparation as the run writes it under ``models/`` when the study ends
    (:mod:`biaslab.comparison.saving`'s table), by path relative to the run folder; each
    candidate's own files were written when its fit ended (:func:`fitted_files`).

    Args:
        prepared: the data as prepared (its :class:`~biaslab.comparison.prepared.Scaling`;
            molecules: the training graphs' node statistics).
        schema: the input schema as a dict (``InputSchema.as_dict()``).
        classes: the labels in the order of the outputs (classify), as the data gave them.
        saved: the names of the candidates whose files were written.
        recommended: the recommended candidate's name (None: every candidate diverged).
        catalog: where the candidates' builders come from when not the decision guide's:
            ``{"name": "qm9", "hidden": h, "gbt_iterations": i, "loss": l}`` (the qm9 lab's).
    """
    meta = {
        "schema": schema,
        "task": prepared.task,
        "classes": [c if isinstance(c, (int, float, str)) else str(c) for c in classes],
        "y_mean": prepared.y_mean,
        "y_std": prepared.y_std,
        "recommended": recommended,
        "candidates": list(saved),
        "has_positions": bool(getattr(prepared, "has_positions", False)),
        **({"catalog": catalog} if catalog else {}),
    }
    files = {}
    if prepared.kind in GRAPH_KINDS:
        if prepared.node_mean is not None:  # graphs, or molecules that are all graphs
            counts = prepared.table_stats.get("counts")  # QM9's counts table, standardized
            extra = {} if counts is None else {"counts_mean": counts[0], "counts_std": counts[1]}
            files["preparation.npz"] = npz_bytes(
                node_mean=prepared.node_mean, node_std=prepared.node_std, **extra
            )
    else:
        scaling = prepared.scaling
        files["preparation.npz"] = npz_bytes(x_mean=scaling.x_mean, x_std=scaling.x_std)
        if scaling.encoding is not None:
            files["encoding.skops"] = estimator_bytes(scaling.encoding.transformer_)
    return {f"{MODELS}/{name}": data for name, data in as_files(meta, files, "preparation.json").items()}


def fitted_files(result, candidate, prepared) -> dict[str, bytes]:
    """A fitted candidate's files (:func:`candidate_files`), by path relative to the run folder
    (``models/<candidate>/...``): with its temperature (classify) or its validation residuals in
    the target's unit (regress).

    Args:
        result: the candidate's :class:`~biaslab.comparison.protocol.CandidateResult` (with
            ``fitted``); candidate: its :class:`~biaslab.comparison.candidates.Candidate`;
            prepared: the data it was fitted on.
    """
    if prepared.task == "classify":
        extras: dict = {"temperature": result.temperature}
    else:
        predicted = prepared.to_unit(result.fitted.outputs_on(prepared, "val"))  # (n_val,)
        extras = {"calibration": {"val_residuals": prepared.targets["val"] - predicted}}
    reads = result.fitted.reads  # a molecules' table reader was built on that table's width
    shape = (prepared.tables[reads].shape[1],) if reads in TABLE_READS else prepared.input_shape
    files = candidate_files(result.fitted, candidate.name, shape, factory=candidate.source, extras=extras)
    return {f"{MODELS}/{slug(candidate.name)}/{name}": data for name, data in files.items()}
