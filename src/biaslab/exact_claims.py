"""Claims an exact computation settles, which may find a slip in a document.

Two kinds of slip, each shown apart from failures (a failure is biaslab's; a slip is the
document's):

- a printed *figure* that the exact value contradicts (``notes-wrong``, "the printed figure is
  wrong"): the ML-for-physics slides print softmax([2, 4, 6]) ≈ [0.0159, 0.1173, 0.8670], the
  exact last entry is 0.8668;
- a printed *formula or label* that is a slip (``slip``): the printed text, the correct one, and
  what each gives, computed; e.g. the slides' update W ← W + η ∂J/∂W raises ½w² from 0.5 to 0.605
  in one step from w = 1, where the descent step lowers it to 0.405.

Both are refused for a value that random draws change (:func:`reproducible_value`) and, by the
run context, in a run that has trained: a figure that comes out of training or sampling cannot
prove a document wrong. Both are checks (``kind="check"``): they fail only through a bug.

:func:`figure_claim` gives pass, fail or notes-wrong; :func:`slip_claim` pass, fail or slip.
``RunContext.claim_exact`` and ``RunContext.claim_slip`` record them.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

import numpy as np

from biaslab.formatting import format_value
from biaslab.results import Claim
from biaslab.train.seed import rng_state, seed_everything, set_rng_state

__all__ = ["figure_claim", "reproducible_value", "slip_claim"]


def reproducible_value(exact: Callable[[], Any], claim: str) -> np.ndarray:
    """``exact()`` evaluated under two different seeds of every global generator; the two
    results must be equal (ValueError otherwise). The generators' states are restored."""
    states = rng_state()
    try:
        values = []
        for seed in (1, 2):
            seed_everything(seed)
            values.append(np.asarray(exact(), dtype=float))
    finally:
        set_rng_state(states)
    if values[0].shape != values[1].shape or not np.array_equal(values[0], values[1]):
        raise ValueError(f"claim {claim!r}: the 'exact' computation depends on random draws")
    return values[0]


def _close(value: Any, truth: np.ndarray, tolerance: float) -> bool:
    return bool(np.allclose(np.asarray(value, dtype=float), truth, atol=tolerance, rtol=0))


def figure_claim(
    claim: str,
    *,
    notes: str,
    measured: Any,
    exact: Callable[[], Any],
    computation: str,
    tolerance: float,
    source: str,
    printed: str | None = None,
    shown: str | None = None,
) -> Claim:
    """A printed figure against the exact value: ``pass`` when biaslab's ``measured`` value and
    the figure ``notes`` (as Python's literal) both agree with ``exact()`` within ``tolerance``
    (the precision the document prints at), ``fail`` when biaslab's does not, ``notes-wrong``
    when biaslab agrees and the document does not (then with ``computation``)."""
    truth = reproducible_value(exact, claim)
    figure = np.asarray(ast.literal_eval(notes), dtype=float)
    verdict = _verdict(measured, figure, truth, tolerance, "notes-wrong")
    shown_computation = computation if verdict == "notes-wrong" else None  # only beside a wrong figure
    return _settled(claim, notes, measured, shown, verdict, source, printed, shown_computation)


def slip_claim(
    claim: str,
    *,
    printed: str,
    correct: str,
    measured: Any,
    exact: Callable[[], Any],
    printed_gives: Callable[[], Any],
    tolerance: float,
    computation: str,
    source: str,
    shown: str | None = None,
) -> Claim:
    """A printed formula or label against the correct one.

    ``printed`` quotes the document exactly (a test finds it there), ``correct`` is the right
    formula or label; ``exact()`` computes the true value in closed form, ``printed_gives()`` the
    value the printed formula or label would give, ``measured`` is biaslab's own. The verdict is
    ``fail`` when biaslab's value is not the exact one (a bug), ``pass`` when the printed text
    gives the exact value too (no slip after all), and ``slip`` otherwise; ``computation`` says
    what each gives.
    """
    truth = reproducible_value(exact, claim)
    wrong = reproducible_value(printed_gives, claim)
    verdict = _verdict(measured, wrong, truth, tolerance, "slip")
    return _settled(claim, correct, measured, shown, verdict, source, printed, computation)


def _verdict(measured: Any, printed: Any, truth: np.ndarray, tolerance: float, slip: str) -> str:
    """``fail`` when biaslab's value misses the exact one (a bug), ``pass`` when the document's
    value meets it too, else ``slip`` (the verdict key for the document's kind of slip)."""
    if not _close(measured, truth, tolerance):
        return "fail"
    return "pass" if _close(printed, truth, tolerance) else slip


def _settled(
    claim: str, expected: str, measured: Any, shown: str | None, verdict: str, source: str,
    printed: str | None, computation: str | None,
) -> Claim:  # fmt: skip
    """The claim as results.json holds it: a check, ``passed`` set for pass and fail, and for a
    slip of the document its verdict."""
    slip = verdict not in ("pass", "fail")
    return Claim(
        claim,
        expected,
        shown if shown is not None else format_value(measured),
        None if slip else verdict == "pass",
        source,
        kind="check",  # an exact computation: it fails only through a bug
        printed=printed,
        verdict=verdict if slip else None,
        computation=computation,
    )
