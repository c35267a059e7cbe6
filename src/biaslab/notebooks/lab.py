"""What a workshop notebook calls: its profile, claims checked inline, and the day's experiments.

A notebook opens with one parameter cell::

    PROFILE = os.environ.get("BIASLAB_PROFILE", "default")   # "quick": seconds, for CI
    lab = Lab(day=1, profile=PROFILE)

and then, at each step whose outcome the notes promise, checks it the way an experiment does
(:meth:`Lab.claim`, the runner's :class:`~biaslab.results.Claim` with the same quick-profile
rule), shown at once as a one-row table in verdict colours. :meth:`Lab.run_day` runs the day's
experiments and shows each run; :meth:`Lab.finish` shows every claim of the notebook and raises
:class:`ClaimFailed` if one that this profile judges failed, so that an executed notebook fails
exactly when the day's claims do.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from biaslab import registry
from biaslab.errors import BiaslabError
from biaslab.report.display import FigureImage, Result, present
from biaslab.report.html import render_claims
from biaslab.report.text import claim_lines
from biaslab.results import Claim, verdict_of
from biaslab.runner import run

__all__ = ["PROFILE_VARIABLE", "ClaimFailed", "Lab"]

PROFILE_VARIABLE = "BIASLAB_PROFILE"  # the environment's choice of profile for every notebook


class ClaimFailed(AssertionError):
    """A claim that this profile judges failed: the notebook (and its CI test) fails."""


class Claims:
    """Claims as a table: HTML in Jupyter, one line per claim elsewhere."""

    def __init__(self, claims: list[dict]):
        self.claims = claims

    def _repr_html_(self) -> str:
        return render_claims(self.claims)

    def __str__(self) -> str:
        return "\n".join(claim_lines(self.claims))

    __repr__ = __str__  # Jupyter's text/plain beside the HTML


class Lab:
    """One day's notebook.

    Args:
        day: the workshop day, 1 to 5.
        profile: ``"quick"``, ``"default"`` or ``"full"``; default: the environment variable
            ``BIASLAB_PROFILE``, else ``"default"``.
        seed: the seed of every experiment the notebook runs (default 0).
        runs_dir: where their run directories go (default ``runs``).
    """

    def __init__(self, day: int, profile: str | None = None, seed: int = 0, runs_dir: str | Path = "runs"):
        self.day = day
        self.profile = profile or os.environ.get(PROFILE_VARIABLE) or "default"
        if self.profile not in registry.PROFILES:
            raise BiaslabError(f"profile={self.profile!r}: choose one of {', '.join(registry.PROFILES)}")
        if not 1 <= day <= 5:
            raise BiaslabError(f"day={day}: the workshop has days 1 to 5")
        self.seed = seed
        self.runs_dir = Path(runs_dir)
        self.claims: list[dict] = []

    @property
    def quick(self) -> bool:
        return self.profile == "quick"

    def pick(self, quick: Any, default: Any) -> Any:
        """``quick`` in the quick profile, else ``default``: sizes for a cell's own work."""
        return quick if self.quick else default

    def claim(
        self,
        claim: str,
        *,
        expected: str,
        measured: Any,
        passed: bool | None,
        source: str = "",
        checked_in_quick: bool = True,
    ) -> None:
        """Check an outcome the notes promise, as an experiment's ``ctx.claim`` does, and show it.

        ``checked_in_quick=False``: in the quick profile the value is shown but not judged.
        """
        record = Claim.judged(
            claim, expected=expected, measured=measured, passed=passed, source=source,
            quick=self.quick, checked_in_quick=checked_in_quick,
        ).as_dict()  # fmt: skip
        self.claims.append(record)
        present(Claims([record]))

    def show(self, fig) -> None:
        """Show a figure of :mod:`biaslab.report.plots` (or any matplotlib figure) and close it."""
        present(FigureImage(fig))

    def experiments(self) -> list[str]:
        """The day's experiments, in the notes' order."""
        return [e.name for e in registry.catalog() if e.day == self.day]

    def run(self, name: str, overrides: Mapping[str, Any] | None = None) -> Result:
        """Run experiment ``name`` (with config ``overrides``) in this notebook's profile and
        seed; its claims join the day's."""
        result = run(name, overrides, profile=self.profile, seed=self.seed, runs_dir=self.runs_dir)
        self.claims += [{**c, "claim": f"{name}: {c.get('claim')}"} for c in result.claims]
        return result

    def run_day(self) -> list[Result]:
        """Run every experiment of the day and show each (the claims table and the figures)."""
        results = []
        for name in self.experiments():
            results.append(self.run(name))
            present(results[-1])
        return results

    def finish(self) -> None:
        """Show every claim of the notebook; raise :class:`ClaimFailed` if a judged one failed."""
        present(Claims(self.claims))
        failed = [c["claim"] for c in self.claims if verdict_of(c) == "fail"]
        if failed:
            raise ClaimFailed(f"{len(failed)} claim(s) failed: " + "; ".join(failed))
