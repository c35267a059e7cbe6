"""Where a run's metrics go besides metrics.jsonl: a CSV file, TensorBoard, MLflow (``--log``).

metrics.jsonl stays the run's one record (a resume rewinds it); every other destination is a
*sink* that receives the same records:

* ``csv``: ``metrics.csv`` in the run directory, a row per epoch per tagged training (columns
  ``tag, epoch, step``, then every other key in sorted order), written from metrics.jsonl at the
  end of each attempt, so it never disagrees with it;
* ``tensorboard``: event files under ``tensorboard/<tag>/`` as the run goes (open them with
  ``tensorboard --logdir RUN_DIR/tensorboard``): every numeric field of a record is a scalar at
  the record's ``step``. A resume reopens a training's writer with ``purge_step`` set just past
  its checkpoint, so TensorBoard drops the points the rewound log dropped;
* ``mlflow``: an MLflow run in a local file store under ``mlruns/``, written from metrics.jsonl
  at the end of each attempt (:class:`MlflowSink`).

The run's final metrics go to every sink too, each with its dimensions (:mod:`biaslab.records`):
``results.csv`` (a row per metric: key, name, value, better, then a column per dimension), the
TensorBoard writer ``results`` and the MLflow run, each metric named ``name/dim:value/...``
(``accuracy/model:penalty/n:5000``, a metric without dimensions by its key) so that both group
them by what they measure.

A sink needs only ``log(record)``, ``rewind(tag, step)``, ``results(records)`` (the run's final
metrics, at its end) and ``close(records)`` (the whole log, at the end of an attempt):
:class:`Sink`. The extras ``biaslab[tensorboard]`` and
``biaslab[mlflow]`` install what those need; a missing one is a one-line error before the run
starts.
"""

from __future__ import annotations

import contextlib
import csv
import importlib.util
import io
import json
import math
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

from biaslab.errors import BiaslabError
from biaslab.fileio import atomic_write_text, check_run_file_size
from biaslab.records import metric_path

__all__ = ["LOGGERS", "CsvSink", "MlflowSink", "Sink", "TensorBoardSink", "check_loggers", "make_sinks"]

CSV_NAME = "metrics.csv"
RESULTS_CSV_NAME = "results.csv"
TENSORBOARD_DIR = "tensorboard"
MLFLOW_DIR = "mlruns"
ALLOW_FILE_STORE = "MLFLOW_ALLOW_FILE_STORE"
FIRST_COLUMNS = ("tag", "epoch", "step")


class Sink(Protocol):
    def log(self, record: dict) -> None: ...
    def rewind(self, tag: str, step: int) -> None: ...
    def results(self, records: Sequence[dict]) -> None: ...
    def close(self, records: Sequence[dict]) -> None: ...


class CsvSink:
    """``metrics.csv``: the log as a table a spreadsheet opens, rewritten at each attempt's end."""

    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / CSV_NAME

    def log(self, record: dict) -> None:
        pass  # written whole at close: the columns are known only then

    def rewind(self, tag: str, step: int) -> None:
        pass

    def results(self, records: Sequence[dict]) -> None:
        """``results.csv``: a row per final metric, its dimensions in columns of their own."""
        dims = list(dict.fromkeys(dim for r in records for dim in r["dims"]))
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["key", "name", "value", "better", *dims])
        writer.writerows([r["key"], r["name"], r["value"], r["better"], *(r["dims"].get(d, "") for d in dims)]
                         for r in records)  # fmt: skip
        atomic_write_text(self.path.with_name(RESULTS_CSV_NAME), out.getvalue())

    def close(self, records: Sequence[dict]) -> None:
        atomic_write_text(self.path, metrics_table(records))


def metrics_table(records: Iterable[dict]) -> str:
    """The records as CSV text: ``tag, epoch, step``, then the other keys sorted; a record
    lacking a key leaves its cell empty."""
    records = list(records)
    keys = sorted({key for record in records for key in record} - set(FIRST_COLUMNS))
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=[*FIRST_COLUMNS, *keys], lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    return out.getvalue()


class TensorBoardSink:
    """Event files under ``tensorboard/<tag>/``: one writer per training (untagged records:
    ``run``), each numeric field a scalar at the record's step."""

    def __init__(self, run_dir: Path):
        self.root = Path(run_dir) / TENSORBOARD_DIR
        self.writers: dict[str, Any] = {}
        self.purge: dict[str, int] = {}

    def _writer(self, tag: str):
        if tag not in self.writers:
            from torch.utils.tensorboard import SummaryWriter

            self.writers[tag] = SummaryWriter(str(self.root / tag), purge_step=self.purge.pop(tag, None))
        return self.writers[tag]

    def log(self, record: dict) -> None:
        tag = record.get("tag") or "run"
        step = record.get("step", 0)
        writer = self._writer(tag)
        for key, value in _scalars(record):
            writer.add_scalar(key, value, step)
        writer.flush()

    def rewind(self, tag: str, step: int) -> None:
        """Points of ``tag`` past ``step`` are gone from the log: the next writer purges them."""
        if tag in self.writers:
            self.writers.pop(tag).close()
        self.purge[tag] = step + 1

    def results(self, records: Sequence[dict]) -> None:
        """The final metrics under the writer ``results``, each named by its dimensions, at step 0."""
        writer = self._writer("results")
        for entry in records:
            writer.add_scalar(metric_path(entry), entry["value"], 0)
        writer.flush()

    def close(self, records: Sequence[dict]) -> None:
        for writer in self.writers.values():
            writer.close()
        self.writers.clear()


class MlflowSink:
    """An MLflow run in a local file store under the run directory (``mlruns/``; see
    :func:`allowed_file_store` to open it), written at each attempt's end from
    metrics.jsonl: the config as params, every numeric field of a record as the metric
    ``<tag>/<key>`` at its step. An earlier attempt's MLflow run is deleted first, so the store
    holds one run per biaslab run that agrees with metrics.jsonl."""

    EXPERIMENT = "biaslab"
    BATCH = 1000  # MLflow's limit on metrics per log_batch call

    def __init__(self, run_dir: Path):
        self.run_dir = Path(run_dir)
        self.final: list[dict] = []

    def log(self, record: dict) -> None:
        pass

    def rewind(self, tag: str, step: int) -> None:
        pass

    def results(self, records: Sequence[dict]) -> None:
        self.final = list(records)  # written with the log at close

    def close(self, records: Sequence[dict]) -> None:
        with allowed_file_store():
            self._write(records)

    def _write(self, records: Sequence[dict]) -> None:
        from mlflow.entities import Metric, Param
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=(self.run_dir / MLFLOW_DIR).resolve().as_uri())
        found = client.get_experiment_by_name(self.EXPERIMENT)
        experiment = found.experiment_id if found else client.create_experiment(self.EXPERIMENT)
        for earlier in client.search_runs([experiment]):
            client.delete_run(earlier.info.run_id)
        run_id = client.create_run(experiment, run_name=self.run_dir.name).info.run_id
        metrics = [
            Metric(
                f"{record.get('tag') or 'run'}/{key}",
                float(value),
                int(record.get("time", 0) * 1000),
                record.get("step", 0),
            )
            for record in records
            for key, value in _scalars(record)
        ]
        ended = int(max((r.get("time", 0) for r in records), default=0) * 1000)
        metrics += [Metric(_mlflow_name(metric_path(e)), float(e["value"]), ended, 0) for e in self.final]
        config = _config_of(self.run_dir)
        params = [Param(key, str(value)[:500]) for key, value in sorted(config.items())]
        for start in range(0, max(len(metrics), 1), self.BATCH):
            client.log_batch(
                run_id, metrics=metrics[start : start + self.BATCH], params=params if start == 0 else []
            )
        client.set_terminated(run_id)


@contextlib.contextmanager
def allowed_file_store():
    """MLflow 3 refuses its file store unless ``MLFLOW_ALLOW_FILE_STORE`` is set (it prefers a
    database, which needs SQLAlchemy and more); the store is a folder beside the run's other
    files, so biaslab allows it while it writes. Read it the same way:
    ``MLFLOW_ALLOW_FILE_STORE=true mlflow ui --backend-store-uri RUN_DIR/mlruns``."""
    previous = os.environ.get(ALLOW_FILE_STORE)
    os.environ[ALLOW_FILE_STORE] = "true"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(ALLOW_FILE_STORE, None)
        else:
            os.environ[ALLOW_FILE_STORE] = previous


def _mlflow_name(name: str) -> str:
    """``name`` in the characters MLflow accepts in a metric's name (others become ``_``)."""
    return re.sub(r"[^\w./\- :]", "_", name)


def _scalars(record: dict):
    """The (key, number) pairs of a record that plot against its step: its finite numbers,
    less the bookkeeping (tag, epoch, step, time)."""
    for key, value in record.items():
        if key in (*FIRST_COLUMNS, "time") or isinstance(value, bool):
            continue
        if isinstance(value, (int, float)) and math.isfinite(value):
            yield key, value


def _config_of(run_dir: Path) -> dict:
    """The run's config (config.json's ``config``), or nothing when it cannot be read."""
    try:
        check_run_file_size(run_dir / "config.json")
        config = json.loads((run_dir / "config.json").read_text(encoding="utf-8")).get("config", {})
    except (OSError, ValueError, AttributeError, BiaslabError):
        return {}
    return config if isinstance(config, dict) else {}


# name -> (sink class, the module it needs or None, the extra that installs it)
LOGGERS = {
    "csv": (CsvSink, None, None),
    "tensorboard": (TensorBoardSink, "tensorboard", "tensorboard"),
    "mlflow": (MlflowSink, "mlflow", "mlflow"),
}


def check_loggers(names: Any) -> tuple[str, ...]:
    """``names`` (a comma-separated string or a sequence) as a tuple of known loggers whose
    packages are installed; otherwise one line naming the choices or the extra to install."""
    if names is None:
        return ()
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        raise BiaslabError(f"log must name loggers ({', '.join(LOGGERS)}), not {names!r}")
    for name in names:
        if name not in LOGGERS:
            raise BiaslabError(
                f"unknown logger '{name}' (choose from {', '.join(LOGGERS)}; metrics.jsonl is always written)"
            )
        _, module, extra = LOGGERS[name]
        if module is not None and importlib.util.find_spec(module) is None:
            raise BiaslabError(f"--log {name} needs {module}: pip install 'biaslab[{extra}]'")
    return tuple(dict.fromkeys(names))


def make_sinks(names: Sequence[str], run_dir: Path) -> list[Sink]:
    return [LOGGERS[name][0](run_dir) for name in names]
