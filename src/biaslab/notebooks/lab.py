"""What a workshop notebook calls: its profile, claims checked inline, and the day's experiments.

A notebook opens with one parameter cell::

    PROFILE = os.environ.get("BIASLAB_PROFILE", "default")   # "quick": seconds, for CI
    lab = Lab(day=1, profile=PROFILE)

and then, at each step whose outcome the workshop promises, checks it the way an experiment
does (:meth:`Lab.claim`, the runner's :class:`~biaslab.results.Claim` with the same quick-profile
rule), shown at once as a one-row table in verdict colours. The cells train on the machine's best
device (:attr:`Lab.device`: the GPU when there is one) through :meth:`Lab.setup`.
:meth:`Lab.run_day` (an opt-in last cell) runs the day's experiments as the command line does and
shows each run; :meth:`Lab.finish` shows every claim of the notebook with a summary line.

Each day ends with exercises. A question's answer goes into a variable of a code cell, and
:meth:`Lab.check` says whether it is right ("not answered yet", "correct" or "not yet: ..."): a
student's answer is never an error, so it never raises, and it is kept in :attr:`Lab.answers`, apart
from the claims. A coding cell's function is checked against the library's own by
:meth:`Lab.check_code` (:mod:`biaslab.notebooks.coding`) the same way.

A failed claim is a result a student may well cause by changing a cell, not an error: it shows in
red in the claims table and the notebook goes on. In *strict* mode (the environment variable
``BIASLAB_STRICT=1``, as the test suite runs the notebooks) :meth:`Lab.finish` raises
:class:`ClaimFailed` instead, so that an executed notebook fails exactly when the day's claims do.

In the quick profile every figure :meth:`Lab.show` draws carries a "smoke test: tiny data" mark:
the numbers only prove that the code runs.

:func:`prepare_day` is a notebook's first cell: it fetches the data the day needs when missing
and names the device. :meth:`Lab.pick` chooses a value by profile; :meth:`Lab.run` runs one
experiment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from biaslab import registry
from biaslab.errors import BiaslabError
from biaslab.hardware import resolve_device
from biaslab.notebooks.coding import NOT_WRITTEN, code_mismatch
from biaslab.report.display import FigureImage, Result, present
from biaslab.report.html import render_claims
from biaslab.report.text import claim_lines
from biaslab.results import Claim, verdict_of
from biaslab.runner import run
from biaslab.train.recipes import TrainSetup

__all__ = [
    "PROFILE_VARIABLE",
    "SMOKE_MARK",
    "STRICT_VARIABLE",
    "ClaimFailed",
    "CodeNotYet",
    "Lab",
    "prepare_day",
]

PROFILE_VARIABLE = "BIASLAB_PROFILE"  # the environment's choice of profile for every notebook
STRICT_VARIABLE = "BIASLAB_STRICT"  # "1": a failed judged claim raises in finish() (the tests)
SMOKE_MARK = "smoke test: tiny data"  # on every figure of the quick profile


# Data sets a day uses when it can have them and runs without: Fashion-MNIST, the workshop book's
# out-of-distribution set (§5.6; Day 5 lab step 4). Day -> data set names.
OPTIONAL_DATA = {5: ("fashion-mnist",)}


def prepare_day(day: int) -> str:
    """What a notebook's first cell does once biaslab is installed: fetch each data set the day's
    experiments need and this machine lacks (``biaslab data fetch``: a one-time, checksummed
    download; an installed data package counts as present), try to fetch the day's optional ones
    (``OPTIONAL_DATA``; one line says so when one cannot be had, and the day runs without it), and
    print the device the cells will use. Returns that device's name (``"cuda"``, ``"mps"`` or
    ``"cpu"``)."""
    from biaslab.data.availability import CHECKS
    from biaslab.errors import DataMissingError

    labs = [e for e in registry.all_experiments() if e.day == day]
    needed = {d for e in labs for d in e.required_data(e.config())}
    for name in sorted(needed):
        try:
            CHECKS[name]()
        except DataMissingError:
            from biaslab.data.fetch import SOURCES, fetch

            if name not in SOURCES:
                raise  # a library (torch-geometric, rdkit): its message names the pip command
            fetch(name)
    for name in OPTIONAL_DATA.get(day, ()):
        _fetch_optional(name)
    device = resolve_device("auto")
    print(f"biaslab ready for day {day}: computing on {_describe(device)}")
    return device


def _fetch_optional(name: str) -> None:
    """Fetch ``name`` unless it is here; when it cannot be had (offline, a source down), say so in
    one line instead of stopping the day."""
    from biaslab.data.fetch import SOURCES, fetch
    from biaslab.data.ood import fashion_mnist_fetched

    here = {"fashion-mnist": fashion_mnist_fetched}[name]
    if here():
        return
    title = SOURCES[name].title
    try:
        fetch(name, progress=False)  # one line either way, not a progress bar that then fails
    except BiaslabError as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(
            f"{title} is not here and could not be fetched, so the day runs without it "
            f"({reason}); `biaslab data fetch {name}` adds it"
        )
    else:
        print(f"{title} fetched (a one-time download, checksummed)")


def _describe(device: str) -> str:
    """``cuda (NVIDIA T4)``, ``mps`` or ``cpu (2 threads)``."""
    import torch

    if device == "cuda":
        return f"cuda ({torch.cuda.get_device_name(0)})"
    if device == "cpu":
        return f"cpu ({torch.get_num_threads()} threads; no GPU found)"
    return device


class ClaimFailed(AssertionError):
    """A claim that this profile judges failed: the notebook (and its CI test) fails."""


class CodeNotYet(AssertionError):
    """In strict mode, a coding cell's function that is not written or not right."""


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
        seed: the seed of every experiment the notebook runs and of the cells' trainings (default 0).
        runs_dir: where their run directories go (default ``runs``).
        device: where the cells and the experiments compute: ``"auto"`` (the default: a CUDA
            GPU, else Apple's MPS, else the CPU), ``"cpu"``, ``"cuda"`` or ``"mps"``.
    """

    def __init__(
        self,
        day: int,
        profile: str | None = None,
        seed: int = 0,
        runs_dir: str | Path = "runs",
        device: str = "auto",
    ):
        self.day = day
        self.profile = profile or os.environ.get(PROFILE_VARIABLE) or "default"
        if self.profile not in registry.PROFILES:
            raise BiaslabError(f"profile={self.profile!r}: choose one of {', '.join(registry.PROFILES)}")
        if not 1 <= day <= 5:
            raise BiaslabError(f"day={day}: the workshop has days 1 to 5")
        self.seed = seed
        self.runs_dir = Path(runs_dir)
        self.device = resolve_device(device)
        self.claims: list[dict] = []
        self.answers: dict[str, str] = {}  # exercise -> "unanswered", "correct" or "not yet"
        if self.quick:
            print(f"quick profile: a {SMOKE_MARK}; the figures only show that the code runs")

    @property
    def strict(self) -> bool:
        """Whether a failed judged claim raises in :meth:`finish` (``BIASLAB_STRICT=1``)."""
        return os.environ.get(STRICT_VARIABLE, "") == "1"

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
        source: str,
        kind: str,
        printed: str | None = None,
        checked_in_quick: bool = True,
    ) -> None:
        """Check an outcome the notebook promises, as an experiment's ``ctx.claim`` does, and show it.

        ``source``, ``kind`` and ``printed`` as :meth:`biaslab.context.RunContext.claim` takes them;
        ``checked_in_quick=False``: in the quick profile the value is shown but not judged.
        """
        record = Claim.judged(
            claim, expected=expected, measured=measured, passed=passed, source=source, kind=kind,
            printed=printed, quick=self.quick, checked_in_quick=checked_in_quick,
        ).as_dict()  # fmt: skip
        self.claims.append(record)
        present(Claims([record]))

    def check(self, name: str, answer: Any, expected: Any, *, tolerance: float | None = None) -> None:
        """Say whether a student's ``answer`` to exercise ``name`` is right, and remember it in
        :attr:`answers` (never among the claims; it never raises).

        ``None`` is "not answered yet". With ``tolerance``, a number (or an array of numbers) is
        right within ``tolerance`` of ``expected``; without, it must equal it (text ignoring case
        and surrounding spaces, arrays entry by entry). A wrong number is told whether it is too
        high or too low, never what is expected.
        """
        if answer is None:
            verdict, says = "unanswered", "not answered yet (replace None with your answer)"
        else:
            try:
                why = _mismatch(answer, expected, tolerance)
            except Exception as exc:  # an answer of any shape is a result, not an error
                why = f"{answer!r} cannot be compared with the answer ({type(exc).__name__})"
            verdict, says = ("correct", "correct") if why is None else ("not yet", f"not yet: {why}")
        self.answers[name] = verdict
        print(f"{name}: {says}")

    def check_code(self, name: str, student, reference, inputs, *, tolerance: float = 1e-6) -> None:
        """Say whether the student's function ``student`` computes what the library's
        ``reference`` does on ``inputs`` (a list of argument tuples; :mod:`biaslab.notebooks.coding`),
        and remember it in :attr:`answers`: "unanswered" while the stub raises
        NotImplementedError, "correct", or "not yet" with what differs (which output and entry,
        the library's value against theirs). A student's mistake never raises; in strict mode
        (``BIASLAB_STRICT=1``, as the tests run the notebooks with the solutions filled in) a
        function not written or not right raises :class:`CodeNotYet`."""
        why = code_mismatch(student, reference, inputs, tolerance=tolerance)
        if why is None:
            verdict, says = "correct", "correct"
        elif why.startswith(NOT_WRITTEN):
            verdict, says = "unanswered", why
        else:
            verdict, says = "not yet", f"not yet: {why}"
        self.answers[name] = verdict
        print(f"{name}: {says}")
        if self.strict and verdict != "correct":
            raise CodeNotYet(f"{name}: {says}")

    def setup(self, tag: str) -> TrainSetup:
        """What a cell's training needs besides its model and config: its tag, this notebook's
        seed and device (``fit_classifier(model, splits, config, lab.setup("mlp"))``)."""
        return TrainSetup(tag=tag, seed=self.seed, device=self.device)

    def show(self, fig) -> None:
        """Show a figure of :mod:`biaslab.report.plots` (or any matplotlib figure) and close it;
        in the quick profile with the smoke-test mark across its top."""
        if self.quick:
            fig.text(
                0.5, 1.0, SMOKE_MARK, ha="center", va="bottom", fontsize=11, color="white",
                fontweight="bold", bbox={"facecolor": "#c0392b", "edgecolor": "none", "pad": 3},
            )  # fmt: skip
        present(FigureImage(fig))

    def experiments(self) -> list[str]:
        """The day's experiments, in the workshop's order."""
        return [e.name for e in registry.catalog() if e.day == self.day]

    def run(self, name: str, overrides: Mapping[str, Any] | None = None) -> Result:
        """Run experiment ``name`` (with config ``overrides``) in this notebook's profile and
        seed; its claims join the day's."""
        result = run(
            name, overrides, profile=self.profile, seed=self.seed, runs_dir=self.runs_dir, device=self.device
        )
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
        """Show every claim of the notebook and a summary line; in strict mode raise
        :class:`ClaimFailed` if one that this profile judges failed."""
        present(Claims(self.claims))
        failed = [c["claim"] for c in self.claims if verdict_of(c) == "fail"]
        if failed and self.strict:
            raise ClaimFailed(f"{len(failed)} claim(s) failed: " + "; ".join(failed))
        if failed:
            print(
                f"{len(failed)} claim(s) did not hold (red in the table above): "
                "a change you made, or the quick profile's tiny data? Compare with the text."
            )


def _mismatch(answer: Any, expected: Any, tolerance: float | None) -> str | None:
    """Why ``answer`` is not ``expected``, or None when it is (the rules of :meth:`Lab.check`)."""
    if isinstance(answer, torch.Tensor):
        answer = answer.detach().cpu().numpy()
    if isinstance(expected, str):
        same = isinstance(answer, str) and _words(answer) == _words(expected)
        return None if same else f"{answer!r} is not the answer"
    got, want = np.asarray(answer), np.asarray(expected)
    if want.dtype.kind not in "biuf":  # not numbers (a tuple of words, ...): equal entry by entry
        if got.shape != want.shape:
            return f"the answer has {want.size} entries" if want.ndim else f"{answer!r} is not the answer"
        wrong = [_words(g) != _words(w) for g, w in zip(got.flat, want.flat)]
        return None if not any(wrong) else f"{sum(wrong)} of {len(wrong)} entries are off"
    if got.dtype.kind not in "biuf":
        return f"{answer!r} is not a number"
    if got.shape != want.shape:
        return f"the answer has shape {want.shape}, yours {got.shape}"
    error = got.astype(float) - want.astype(float)
    wrong = ~(np.abs(error) <= (tolerance or 0.0))  # NaN is wrong too
    if not wrong.any():
        return None
    if want.ndim:
        return f"{int(wrong.sum())} of {wrong.size} entries are off"
    if not np.isfinite(error):
        return f"{answer!r} is not a number"
    beyond = "" if tolerance is None else f" (by more than {tolerance:g})"
    return f"{answer!r} is too {'high' if error > 0 else 'low'}{beyond}"


def _words(value: Any) -> Any:
    """Text as :meth:`Lab.check` compares it: case and surrounding spaces ignored."""
    return value.strip().casefold() if isinstance(value, str) else value
