"""The Python functions behind ``biaslab.compare`` and ``biaslab.load_comparison``: a
comparison run as ``biaslab compare DATA`` runs it (the ``compare`` lab), and reopened from its
folder as a :class:`~biaslab.comparison.study.Comparison`, which predicts new data.
"""

from __future__ import annotations

import os

from biaslab.checks import is_number
from biaslab.comparison.study import Comparison

__all__ = ["compare", "load_comparison"]


def compare(
    data: str,
    *,
    target: str | None = None,
    task: str | None = None,
    kind: str | None = None,
    models=(),
    model=(),
    ood: str | None = None,
    time_limit: str | float | None = None,
    profile: str = "default",
    seed: int = 0,
    out=None,
    device: str | None = None,
    overrides: dict | None = None,
    **run_options,
):
    """Compare the decision guide's architectures (and your own) on your data: ``biaslab compare``.

    Example::

        found = biaslab.compare("sklearn:digits", profile="quick")
        found.leaderboard()                  # best validation score first
        found.predict("new_digits.npz")      # the recommended model, on new rows

    Args:
        data: a file or folder (CSV / TSV / Parquet table, NPZ arrays, a folder of class
            subfolders of images) or a demo set: ``sklearn:digits``, ``sklearn:digits-table``,
            ``sklearn:wine``, ``sklearn:diabetes``.
        target: a table's label column.
        task, kind: ``classify`` / ``regress``; ``table`` / ``image`` / ``sequence`` / ``set``
            (None: inferred, as the report's "Your data" table says).
        models: the guide's candidates to keep, by name (empty: all of them).
        model: your own models, ``"module:factory"`` or ``"file.py:factory"``.
        ood: an ``.npz`` of inputs the models were not made for (``x`` shaped as the data's):
            each classifier's OOD AUROC joins its verdict.
        time_limit: the study's wall-clock budget, ``"10m"``, ``"90s"``, ``"1h"`` or seconds as
            a number, shared by its trainings (a training past its part stops after that epoch,
            keeping its best one so far, marked "stopped at the time budget").
        profile, seed, out, device: as for :func:`biaslab.run`; ``overrides`` any other config key
            (``{"epochs": 50}``), ``run_options`` the rest of :func:`biaslab.run`'s keywords.

    Returns:
        A :class:`~biaslab.comparison.study.Comparison`: the run's results (``metrics``,
        ``claims``, shown as the run's :class:`~biaslab.report.display.Result`), its
        ``leaderboard()``, ``recommended`` model, ``predict(data)``, ``predict_proba(data)``
        (classify), ``predict_interval(data, coverage=0.9)`` (regress) and ``model(name)``.
    """
    from biaslab.runner import run as run_lab

    data = os.fspath(data) if isinstance(data, os.PathLike) else data  # a Path as its text
    ood = os.fspath(ood) if isinstance(ood, os.PathLike) else ood
    if is_number(time_limit):
        time_limit = f"{time_limit}s"
    keys = {"data": data, "target": target, "task": task, "kind": kind, "ood": ood, "time_limit": time_limit}
    keys = {k: v for k, v in keys.items() if v is not None}
    keys |= {"models": tuple(models)} if models else {}
    keys |= {"model": tuple(model)} if model else {}
    result = run_lab(
        "compare", {**(overrides or {}), **keys}, profile=profile, seed=seed, out=out, device=device,
        **run_options,
    )  # fmt: skip
    return Comparison.load(result.run_dir, shown=result)


def load_comparison(run_dir) -> Comparison:
    """Reopen a finished ``compare`` run without training: its leaderboard, recommendation and
    saved models, which predict new data (:class:`~biaslab.comparison.study.Comparison`).

    Example::

        found = biaslab.load_comparison("runs/compare-20261121-120000-0")
        found.predict("new_rows.csv")
    """
    from biaslab.report.display import load

    return Comparison.load(run_dir, shown=load(run_dir))
