"""The workshop as Jupyter notebooks, one per day, shipped with the package.

Each notebook follows its day's numbered lab steps in short cells that call the library, checks
the outcomes the notes promise with :class:`~biaslab.notebooks.lab.Lab` (the experiments' claim
mechanism), and ends by running the day's experiments. ``biaslab notebooks DIR`` copies them out.

The notebooks (``NOTEBOOKS``: ``Day1_LinearAlgebra_ParametricModels.ipynb`` ...
``Day5_Evaluation_Generalization.ipynb``) are package data, stored without outputs, and copied to
the repository's ``notebooks/`` folder by ``scripts/sync_notebooks.py`` (a test keeps the two
equal); :func:`notebook_path` finds one, :func:`copy_notebooks` copies them
(``biaslab notebooks DIR``). Each writes its formulas in LaTeX, cites the documents as a claim's
source does, and closes with a ``## Exercises`` section of 3 to 5 exercises, each checked by
``lab.check`` and followed by its solution folded in a ``<details>`` cell.
Inside the steps, at least three *coding cells* a day ask the student to write what the workshop
book asks for: a cell tagged ``stub`` whose functions raise ``NotImplementedError("write ...")``,
a check cell that compares them with the library's own on fixed inputs
(:meth:`~biaslab.notebooks.lab.Lab.check_code`, :mod:`biaslab.notebooks.coding`), and the solution
folded under it. A step may also pose a *question* (``name = None  # ...`` checked by
``lab.check``, its solution folded under it), as Day 4's matching exercise does.
:mod:`biaslab.notebooks.solutions` puts every solution in place.
``tests/notebooks/test_teaching.py`` checks that form; the notebook test runs every solution
through its check (each question's and each coding cell's must say "correct"), and runs the day
with the stubs unfilled (each check says "not written yet", the day goes on).
"""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

from biaslab.errors import BiaslabError

__all__ = ["NOTEBOOKS", "copy_notebooks", "notebook_path"]

NOTEBOOKS = (
    "Day1_LinearAlgebra_ParametricModels.ipynb",
    "Day2_Calculus_Optimization.ipynb",
    "Day3_Probability_GenerativeModels.ipynb",
    "Day4_Modeling_InductiveBias.ipynb",
    "Day5_Evaluation_Generalization.ipynb",
)


def notebook_path(name: str) -> Path:
    """Where the installed package keeps notebook ``name`` (one of :data:`NOTEBOOKS`)."""
    if name not in NOTEBOOKS:
        raise BiaslabError(f"no notebook {name!r}: choose one of {', '.join(NOTEBOOKS)}")
    path = Path(str(resources.files(__package__) / name))
    if not path.is_file():
        raise BiaslabError(f"{path}: missing from this installation of biaslab (reinstall it)")
    return path


def copy_notebooks(folder: str | Path, force: bool = False) -> list[Path]:
    """Copy the five notebooks into ``folder`` (created if needed) and return their new paths.

    Args:
        folder: the destination folder.
        force: overwrite notebooks already there (default False: refuse, and copy nothing).

    Raises:
        BiaslabError: a notebook exists there and ``force`` is off (checked for all five before
            anything is copied), or ``folder`` is a file or cannot be written.
    """
    if not str(folder).strip():  # an unset shell variable would copy into the current folder
        raise BiaslabError("the notebooks' folder is empty (an unset shell variable?); name a folder")
    folder = Path(folder)
    sources = [notebook_path(name) for name in NOTEBOOKS]
    try:
        if folder.exists() and not folder.is_dir():
            raise BiaslabError(f"{folder}: not a folder")
        existing = [folder / name for name in NOTEBOOKS if (folder / name).exists()]
    except OSError as error:
        raise BiaslabError(f"{folder}: cannot be read ({error.strerror or error})") from None
    if existing and not force:
        raise BiaslabError(
            f"{existing[0]} exists ({len(existing)} of the notebooks are there already); "
            "use --force to overwrite them"
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
        return [Path(shutil.copyfile(source, folder / source.name)) for source in sources]
    except OSError as error:
        raise BiaslabError(f"{folder}: cannot copy the notebooks there ({error.strerror or error})") from None
