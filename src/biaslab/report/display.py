"""A finished run as a Python object that shows itself: in Jupyter as the claims table in
verdict colours with the figures, in a terminal as text.

    result = biaslab.run("xor", profile="quick")   # the last line of a cell displays it
    biaslab.show("runs/xor-20261125-101500-0")     # an earlier run, the same way
"""

from __future__ import annotations

import html
import io
import sys
from dataclasses import dataclass, field
from pathlib import Path

from biaslab.errors import BiaslabError
from biaslab.report.html import render_inline
from biaslab.report.text import open_run, run_text
from biaslab.runs import tally

__all__ = ["FigureImage", "Result", "load", "present", "show"]


@dataclass
class Result:
    """What a finished run produced; ``results`` is results.json as a dict."""

    run_dir: Path
    results: dict = field(default_factory=dict, repr=False)

    @property
    def metrics(self) -> dict:
        return self.results.get("metrics", {})

    @property
    def claims(self) -> list[dict]:
        return self.results.get("claims", [])

    @property
    def passed(self) -> bool:
        """True when no claim failed (a claim the notes got wrong is not a failure)."""
        return tally(self.claims).failed == 0

    def __repr__(self) -> str:
        name = self.results.get("experiment", "?")
        return f"Result({name!r}, run_dir='{self.run_dir}', claims: {tally(self.claims).describe()})"

    def __str__(self) -> str:
        return run_text(self.run_dir)

    def _repr_html_(self) -> str:
        """Jupyter's rich display: the claims table, figures and tables (the run's own files)."""
        try:
            return render_inline(self.run_dir)
        except BiaslabError as error:  # a run directory moved or damaged since: say so, escaped
            return f"<p><b>biaslab</b>: {html.escape(str(error))}</p>"


class FigureImage:
    """A matplotlib figure as PNG bytes, for Jupyter's display (the library draws off-screen with
    the Agg backend, so a figure never shows by itself); the figure is closed once drawn."""

    def __init__(self, fig, dpi: int = 90):
        from biaslab.report.plots import pyplot

        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
        pyplot().close(fig)
        self.png = buffer.getvalue()

    def _repr_png_(self) -> bytes:
        return self.png

    def __str__(self) -> str:
        return f"<figure: {len(self.png):,} bytes of PNG>"


def load(path: str | Path) -> Result:
    """The finished run at ``path`` as a :class:`Result`.

    Raises:
        BiaslabError: ``path`` is not a run directory, or it has no readable results.json yet.
    """
    run = open_run(path)
    return Result(run.path, run.read_results())


def show(path: str | Path) -> None:
    """Display the run at ``path``: inline (HTML) inside Jupyter, as text elsewhere.

    Raises:
        BiaslabError: as :func:`load`.
    """
    present(load(path))


def present(thing) -> None:
    """Show ``thing`` now: Jupyter's rich display inside a kernel, ``print`` elsewhere."""
    if _in_notebook():
        from IPython.display import display

        display(thing)
    else:
        print(thing)


def _in_notebook() -> bool:
    """Whether an IPython kernel with rich display (Jupyter, Colab) is running this code."""
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})
