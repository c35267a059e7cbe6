"""biaslab — the inductive-bias laboratory.

Run an experiment from Python exactly as from the command line::

    import biaslab
    result = biaslab.run("xor", {"epochs": 20}, profile="quick", seed=0)
    result.claims        # each claim from the lecture notes beside the measured value
    result               # in Jupyter: the claims table in verdict colours, and the figures
    biaslab.show("runs/xor-20261125-101500-0")   # an earlier run, the same way
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from biaslab.version import __version__

if TYPE_CHECKING:  # the runner imports torch: only when run() is called
    from biaslab.report.display import Result

__all__ = ["__version__", "load", "run", "show"]


def run(
    name: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    *,
    profile: str | None = None,
    seed: int | None = None,
    out: str | os.PathLike | None = None,
    resume: str | os.PathLike | None = None,
    runs_dir: str | os.PathLike = "runs",
    threads: int | str | None = None,
    log: str | Sequence[str] | None = None,
    progress: bool | str | None = None,
    command: str | None = None,
    echo: TextIO | None = None,
) -> Result:
    """Run experiment ``name`` and return its :class:`~biaslab.report.display.Result`.

    Config keys and run options are apart: ``biaslab.run("xor", {"epochs": 20}, seed=3)``.

    Args:
        name: a registered experiment (``biaslab list``); optional with ``resume``.
        overrides: config values by key (``biaslab config NAME`` lists them), e.g.
            ``{"epochs": 3, "lr": 0.01}``; text is parsed as by ``--set``. A run option given
            here (``{"seed": 3}``) is refused, naming the option.
        profile: ``"quick"`` (a smoke test), ``"default"`` (a laptop CPU; the default) or
            ``"full"``.
        seed: fixes every random choice of the run; an integer in 0..2**64 - 1 (default 0).
        out: the run directory, new or empty; default ``<runs_dir>/<name>-<YYYYmmdd-HHMMSS>-<seed>``.
        resume: an unfinished run directory to continue (its config, profile, seed, thread count
            and folder are reused: ``overrides``, ``profile``, ``seed``, ``out`` and ``threads``
            are refused with it).
        runs_dir: parent of new run directories (default ``runs``).
        threads: CPU threads for torch and NumPy: a number, ``"auto"`` (the cores idle now) or
            None (default: every core). Recorded in config.json; a resume reuses it, since a
            seed fixes a run bit for bit for a given thread count and precision.
        log: where the metrics go besides metrics.jsonl: ``"csv"`` (metrics.csv), ``"tensorboard"``
            (event files under tensorboard/; ``pip install 'biaslab[tensorboard]'``), ``"mlflow"``
            (a local MLflow store in mlruns/; ``pip install 'biaslab[mlflow]'``), a list or a
            comma-separated string of them. Recorded in config.json; a resume reuses them.
        progress: ``True`` progress bars, ``"lines"`` one line per epoch of each training (for
            a log file), ``False`` nothing; default None: bars on a terminal only.
        command: the command line recorded in config.json (default: the equivalent CLI call).
        echo: a stream for progress lines (the workshop prints one per lab); default silent.

    Raises:
        BiaslabError: bad input (name, seed, profile, override, data, a run directory in use,
            a full disk...), with the command line's one-line message. Input is checked before
            anything is written: a refused run leaves nothing on disk, and a refused resume
            leaves the folder as it was.
        KeyboardInterrupt: interrupted; ``run_dir`` on the exception names the run to resume
            (None when no run directory was written yet).
        Exception: a bug; its traceback is saved as ``traceback.txt`` in the run directory,
            whose path the exception carries as ``details_path``.
    """
    from biaslab.runner import run as _run

    return _run(
        name, overrides, profile=profile, seed=seed, out=out, resume=resume, runs_dir=runs_dir,
        threads=threads, log=log, progress=progress, command=command, echo=echo,
    )  # fmt: skip


def show(path) -> None:
    """Display the run at ``path``: inline in Jupyter, as text elsewhere (``report.display.show``)."""
    from biaslab.report.display import show as _show

    _show(path)


def load(path):
    """The finished run at ``path`` as a Result (:func:`biaslab.report.display.load`)."""
    from biaslab.report.display import load as _load

    return _load(path)
