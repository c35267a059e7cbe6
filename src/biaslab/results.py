"""What results.json holds, read the same way everywhere: verdicts, their tally, timings.

A claim's verdict (pass / fail / unjudged / notes-wrong) has one vocabulary, used by the runner's
summary, ``biaslab show``, the report and the index. Wall-clock measurements are kept apart
(``timings``, claims marked ``timing``): :func:`reproducible` is the part a seed fixes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "TIMINGS",
    "TIMING_KEYS",
    "VERDICTS",
    "Claim",
    "Tally",
    "Verdict",
    "reproducible",
    "reproducible_record",
    "results_problem",
    "tally",
    "verdict_of",
]


# -- claims -----------------------------------------------------------------------------------
@dataclass
class Claim:
    """A quantitative claim from the lecture notes beside the value this run measured.

    ``verdict`` and ``computation`` are set only for a claim whose notes' figure an exact
    computation proved wrong (see :meth:`RunContext.claim_exact`); ``timing`` only for a claim
    about wall-clock time, which no seed fixes (the report flags it as machine-dependent).
    """

    claim: str
    expected: str
    measured: Any
    passed: bool | None
    source: str = ""
    verdict: str | None = None
    computation: str | None = None
    timing: bool | None = None

    @classmethod
    def judged(
        cls,
        claim: str,
        *,
        expected: str,
        measured: Any,
        passed: bool | None,
        source: str = "",
        quick: bool = False,
        checked_in_quick: bool = True,
        timing: bool = False,
    ) -> Claim:
        """A claim as :meth:`RunContext.claim` records it (and the notebooks' ``Lab.claim``):
        in the quick profile a claim with ``checked_in_quick=False`` is shown, not judged."""
        if quick and not checked_in_quick:
            passed, expected = None, f"{expected} (not judged in --quick)"
        verdict = None if passed is None else bool(passed)
        return cls(claim, expected, measured, verdict, source, timing=timing or None)

    def as_dict(self) -> dict[str, Any]:
        optional = ("verdict", "computation", "timing")
        return {k: v for k, v in vars(self).items() if v is not None or k not in optional}


def results_problem(results: dict) -> str | None:
    """What makes ``results`` (results.json's object) unreadable as a run's results, or None.

    Every reader (the summary, ``biaslab show``, the report) relies on this shape: ``metrics``
    and ``timings`` objects; ``claims`` a list of objects, each with a text ``claim`` and
    ``expected``, a ``measured`` value and ``passed`` true, false or null; ``figures`` and
    ``tables`` lists of objects.
    """
    for key in ("metrics", "timings"):
        if key in results and not isinstance(results[key], dict):
            return f"its {key} are not an object"
    for key in ("claims", "figures", "tables"):
        if key in results and not (
            isinstance(results[key], list) and all(isinstance(x, dict) for x in results[key])
        ):
            return f"its {key} are not a list of objects"
    for n, claim in enumerate(results.get("claims", []), start=1):
        missing = [k for k in ("claim", "expected", "measured") if k not in claim]
        if missing:
            return f"claim {n} lacks {', '.join(missing)}"
        if not isinstance(claim["claim"], str) or not isinstance(claim["expected"], str):
            return f"claim {n}'s claim and expected are not text"
        passed = claim.get("passed")
        if passed is not None and not isinstance(passed, bool):
            return f"claim {n}'s passed is {passed!r}, not true, false or null"
    return None


# -- verdicts ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Verdict:
    """How a claim came out, in every place that shows it.

    Attributes:
        key: the word stored in results.json (``pass``, ``fail``, ``unjudged``, ``notes-wrong``).
        word: four letters for the terminal (``PASS``, ``FAIL``, ``----``, ``NOTE``).
        label: the report's wording.
        colour: the report's background colour for the verdict cell.
    """

    key: str
    word: str
    label: str
    colour: str


VERDICTS: dict[str, Verdict] = {
    v.key: v
    for v in (
        Verdict("pass", "PASS", "\u2713 PASS", "#c8f7c5"),
        Verdict("fail", "FAIL", "\u2717 FAIL", "#f7c5c5"),
        Verdict("unjudged", "----", "not checked", "#e0e0e0"),
        # biaslab computes the value right and an exact computation shows the notes' figure is a slip
        Verdict("notes-wrong", "NOTE", "notes' figure is wrong", "#c9dcf5"),
    )
}


def verdict_of(claim: Any) -> str:
    """The verdict key of one claim from results.json.

    A claim stores ``passed`` (True, False or None); a claim whose notes' figure an exact
    computation proved wrong also stores ``verdict: "notes-wrong"``. Anything malformed is
    ``unjudged``.
    """
    if not isinstance(claim, dict):
        return "unjudged"
    if claim.get("verdict") == "notes-wrong":
        return "notes-wrong"
    return {True: "pass", False: "fail"}.get(claim.get("passed"), "unjudged")


@dataclass(frozen=True)
class Tally:
    """How many claims of a run came out each way."""

    passed: int = 0
    failed: int = 0
    unjudged: int = 0
    notes_wrong: int = 0

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.unjudged + self.notes_wrong

    @property
    def judged(self) -> int:
        """Claims held against a measurement: passed or failed."""
        return self.passed + self.failed

    def __add__(self, other: Tally) -> Tally:
        return Tally(
            self.passed + other.passed,
            self.failed + other.failed,
            self.unjudged + other.unjudged,
            self.notes_wrong + other.notes_wrong,
        )

    def describe(self) -> str:
        """``"5 of 7 claims passed, 1 failed, 1 notes' figure wrong"`` (zero counts left out)."""
        if not self.total:
            return "no claims"
        text = f"{self.passed} of {self.total} claim{'s' if self.total != 1 else ''} passed"
        if self.failed:
            text += f", {self.failed} failed"
        if self.notes_wrong:
            text += f", {self.notes_wrong} notes' figure{'s' if self.notes_wrong != 1 else ''} wrong"
        if self.unjudged:
            text += f", {self.unjudged} not checked in this profile"
        return text

    def short(self) -> str:
        """``"5/6"``, plus what is neither passed nor failed: ``"5/6 (1 notes wrong)"``."""
        text = f"{self.passed}/{self.total}"
        extra = [
            f"{n} {what}"
            for n, what in ((self.notes_wrong, "notes wrong"), (self.unjudged, "not checked"))
            if n
        ]
        return text + (f" ({', '.join(extra)})" if extra else "")


def tally(claims: Iterable[Any] | None) -> Tally:
    """Count the verdicts of ``claims`` (results.json entries)."""
    counts = {key: 0 for key in VERDICTS}
    for claim in claims or ():
        counts[verdict_of(claim)] += 1
    return Tally(counts["pass"], counts["fail"], counts["unjudged"], counts["notes-wrong"])


# -- several runs of one configuration -----------------------------------------------------------
def finite_number(value: Any) -> bool:
    """A metric that averages: an int or float, finite, not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def mean_std(values: list[float]) -> tuple[float, float]:
    """The mean and the sample standard deviation (n - 1; 0 for one value) of runs' figures."""
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / (len(values) - 1) if len(values) > 1 else 0.0
    return mean, math.sqrt(var)


# -- timings: wall-clock measurements, outside what a seed fixes -------------------------------
TIMINGS = "timings"  # results.json: name -> seconds, as the experiment measured them
TIMING_KEYS = frozenset({"time", "seconds", "elapsed_s"})  # such keys anywhere in a run's files


def reproducible(results: dict) -> dict:
    """The part of results.json that a seed fixes bit for bit (for a given machine's arithmetic).

    Left out: ``elapsed_s``, the ``timings``, the measured value and verdict of every claim
    marked ``timing`` (judged on a documented time budget, so machine-dependent), and the cells of
    every table column listed in the table's ``timing_columns`` (set to None).
    """
    out = {k: v for k, v in results.items() if k not in TIMING_KEYS and k != TIMINGS}
    if isinstance(results.get("tables"), list):
        out["tables"] = [_without_timing_cells(t) for t in results["tables"]]
    out["claims"] = [
        {k: v for k, v in c.items() if k not in ("measured", "passed")} if c.get("timing") else c
        for c in results.get("claims") or []
        if isinstance(c, dict)
    ]
    return out


def _without_timing_cells(table):
    if not isinstance(table, dict) or not table.get("timing_columns"):
        return table
    columns = list(table.get("columns") or [])
    timed = {i for i, c in enumerate(columns) if c in table["timing_columns"]}
    rows = [[None if i in timed else v for i, v in enumerate(row)] for row in table.get("rows") or []]
    return {**table, "rows": rows}


def reproducible_record(record: dict) -> dict:
    """A metrics.jsonl record without its timing keys (the time stamp, an epoch's seconds)."""
    return {k: v for k, v in record.items() if k not in TIMING_KEYS}
