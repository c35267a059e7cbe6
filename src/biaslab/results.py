"""What results.json holds, read the same way everywhere: verdicts, their tally, timings.

A claim's verdict (pass / fail / unjudged / notes-wrong / slip) has one vocabulary, used by the runner's
summary, ``biaslab show``, the report and the index. Wall-clock measurements are kept apart
(``timings``, claims marked ``timing``): :func:`reproducible` is the part a seed fixes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from biaslab.checks import is_number

__all__ = [
    "COMPLETE",
    "KINDS",
    "MODELS",
    "RESULTS",
    "SLIPS",
    "TIMINGS",
    "TIMING_KEYS",
    "VERDICTS",
    "Claim",
    "Counts",
    "Tally",
    "Verdict",
    "kind_of",
    "lab_file",
    "reproducible",
    "reproducible_record",
    "results_problem",
    "tally",
    "verdict_of",
]


# -- claims -----------------------------------------------------------------------------------
KINDS = ("finding", "check")


@dataclass
class Claim:
    """A claim of the documents beside the value this run measured.

    ``kind`` says what could refute it: a ``"finding"`` is an outcome of training, sampling or data
    that could have gone the other way; a ``"check"`` is an identity or a property that holds by
    construction and fails only through a bug. ``printed`` quotes, exactly as printed, the figure,
    formula or label of the document the source names first, where the claim says the document
    prints one. ``verdict`` and ``computation`` are set only where an exact computation shows the
    document's print is a slip: ``"notes-wrong"`` for a printed figure (:meth:`RunContext.claim_exact`),
    ``"slip"`` for a printed formula or label (:meth:`RunContext.claim_slip`). ``timing`` only for
    a claim about wall-clock time, which no seed fixes (the report flags it as machine-dependent).
    """

    claim: str
    expected: str
    measured: Any
    passed: bool | None
    source: str = ""
    kind: str | None = None
    printed: str | None = None
    verdict: str | None = None
    computation: str | None = None
    timing: bool | None = None

    def __post_init__(self):
        if self.kind is not None and self.kind not in KINDS:
            raise ValueError(f"claim {self.claim!r}: kind={self.kind!r}; choose 'finding' or 'check'")

    @classmethod
    def judged(
        cls,
        claim: str,
        *,
        expected: str,
        measured: Any,
        passed: bool | None,
        source: str,
        kind: str,
        printed: str | None = None,
        quick: bool = False,
        checked_in_quick: bool = True,
        timing: bool = False,
    ) -> Claim:
        """A claim as :meth:`RunContext.claim` records it (and the notebooks' ``Lab.claim``):
        in the quick profile a claim with ``checked_in_quick=False`` is shown, not judged."""
        if quick and not checked_in_quick:
            passed, expected = None, f"{expected} (not judged in --quick)"
        verdict = None if passed is None else bool(passed)
        return cls(
            claim, expected, measured, verdict, source, kind=kind, printed=printed, timing=timing or None
        )

    def as_dict(self) -> dict[str, Any]:
        optional = ("printed", "verdict", "computation", "timing")
        return {k: v for k, v in vars(self).items() if v is not None or k not in optional}


def results_problem(results: dict) -> str | None:
    """What makes ``results`` (results.json's object) unreadable as a run's results, or None.

    Every reader (the summary, ``biaslab show``, the report) relies on this shape: ``metrics``
    and ``timings`` objects; ``claims`` a list of objects, each with a text ``claim`` and
    ``expected``, a ``measured`` value and ``passed`` true, false or null; ``figures`` and
    ``tables`` (and, where there, ``records``: the metrics with their dimensions) lists of
    objects; ``words`` an object.
    """
    for key in ("metrics", "timings"):
        if key in results and not isinstance(results[key], dict):
            return f"its {key} are not an object"
    for key in ("claims", "figures", "tables", "records"):
        if key in results and not (
            isinstance(results[key], list) and all(isinstance(x, dict) for x in results[key])
        ):
            return f"its {key} are not a list of objects"
    if "words" in results and not isinstance(results["words"], dict):
        return "its words are not an object"
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
        key: the word stored in results.json (``pass``, ``fail``, ``unjudged``, ``notes-wrong``,
            ``slip``).
        word: four letters for the terminal (``PASS``, ``FAIL``, ``----``, ``NOTE``, ``SLIP``).
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
        # biaslab computes the value right and an exact computation shows the printed figure is a slip
        Verdict("notes-wrong", "NOTE", "the printed figure is wrong", "#c9dcf5"),
        # a printed formula or label is a slip: the report shows what it would give, computed
        Verdict("slip", "SLIP", "a slip in the document", "#c9dcf5"),
    )
}
SLIPS = ("notes-wrong", "slip")  # verdicts about the documents, counted apart from both kinds


def verdict_of(claim: Any) -> str:
    """The verdict key of one claim from results.json.

    A claim stores ``passed`` (True, False or None); a claim whose printed figure an exact
    computation proved wrong also stores ``verdict: "notes-wrong"``, one whose printed formula or
    label is a slip ``verdict: "slip"``. Anything malformed is ``unjudged``.
    """
    if not isinstance(claim, dict):
        return "unjudged"
    if claim.get("verdict") in SLIPS:
        return claim["verdict"]
    return {True: "pass", False: "fail"}.get(claim.get("passed"), "unjudged")


def kind_of(claim: Any) -> str:
    """``"finding"`` or ``"check"``; a claim of a run from before claims declared their kind
    counts as a finding (what every claim was taken to be then)."""
    kind = claim.get("kind") if isinstance(claim, dict) else None
    return kind if kind in KINDS else "finding"


@dataclass(frozen=True)
class Counts:
    """How the claims of one kind came out."""

    passed: int = 0
    failed: int = 0
    unjudged: int = 0

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.unjudged

    def __add__(self, other: Counts) -> Counts:
        return Counts(self.passed + other.passed, self.failed + other.failed, self.unjudged + other.unjudged)

    def describe(self, name: str) -> str:
        """``"findings 96 of 104 hold, 3 fail, 5 not checked"`` (zero counts left out)."""
        text = f"{name} {self.passed} of {self.total} hold"
        if self.failed:
            text += f", {self.failed} fail"
        if self.unjudged:
            text += f", {self.unjudged} not checked"
        return text


@dataclass(frozen=True)
class Tally:
    """How many claims of a run came out each way: findings and checks apart, and the slips
    found in the documents apart from both."""

    findings: Counts = Counts()
    checks: Counts = Counts()
    slips: int = 0

    @property
    def passed(self) -> int:
        return self.findings.passed + self.checks.passed

    @property
    def failed(self) -> int:
        return self.findings.failed + self.checks.failed

    @property
    def unjudged(self) -> int:
        return self.findings.unjudged + self.checks.unjudged

    @property
    def total(self) -> int:
        return self.findings.total + self.checks.total + self.slips

    @property
    def judged(self) -> int:
        """Claims held against a measurement: passed or failed."""
        return self.passed + self.failed

    def __add__(self, other: Tally) -> Tally:
        return Tally(self.findings + other.findings, self.checks + other.checks, self.slips + other.slips)

    def describe(self) -> str:
        """``"findings 5 of 6 hold, 1 fail; checks 3 of 3 hold; 1 slip in the documents"``
        (a kind with no claims, and zero counts, left out)."""
        if not self.total:
            return "no claims"
        parts = [
            counts.describe(name)
            for name, counts in (("findings", self.findings), ("checks", self.checks))
            if counts.total
        ]
        if self.slips:
            parts.append(f"{self.slips} slip{'s' if self.slips != 1 else ''} in the documents")
        return "; ".join(parts)

    def short(self) -> str:
        """``"5/6 + 3/3 checks"``: findings held of findings, then checks (either alone when the
        other kind has none); slips and claims not checked in brackets:
        ``"5/6 + 3/3 checks (1 slip, 1 not checked)"``."""
        parts = [f"{self.findings.passed}/{self.findings.total}"] if self.findings.total else []
        if self.checks.total:
            parts.append(f"{self.checks.passed}/{self.checks.total} checks")
        text = " + ".join(parts) or "no findings or checks"
        extra = [
            f"{n} {what}{'s' if n != 1 and what == 'slip' else ''}"
            for n, what in ((self.slips, "slip"), (self.unjudged, "not checked"))
            if n
        ]
        return text + (f" ({', '.join(extra)})" if extra else "")

    @property
    def held_share(self) -> float | None:
        """The share of findings that hold, else of checks; None without either (a sort key)."""
        counts = self.findings if self.findings.total else self.checks
        return counts.passed / counts.total if counts.total else None


def tally(claims: Iterable[Any] | None) -> Tally:
    """Count the verdicts of ``claims`` (results.json entries), findings and checks apart."""
    counts = {kind: {key: 0 for key in ("pass", "fail", "unjudged")} for kind in KINDS}
    slips = 0
    for claim in claims or ():
        verdict = verdict_of(claim)
        if verdict in SLIPS:
            slips += 1
        else:
            counts[kind_of(claim)][verdict] += 1
    findings, checks = (Counts(c["pass"], c["fail"], c["unjudged"]) for c in counts.values())
    return Tally(findings, checks, slips)


# -- several runs of one configuration -----------------------------------------------------------
def finite_number(value: Any) -> bool:
    """A metric that averages: an int or float, finite, not a bool."""
    return is_number(value) and math.isfinite(value)


def mean_std(values: list[float]) -> tuple[float, float]:
    """The mean and the sample standard deviation (n - 1; 0 for one value) of runs' figures."""
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / (len(values) - 1) if len(values) > 1 else 0.0
    return mean, math.sqrt(var)


# -- timings: wall-clock measurements, outside what a seed fixes -------------------------------
TIMINGS = "timings"  # results.json: name -> seconds, as the experiment measured them
MODELS = "models"  # the run folder's saved models, which results.json's leaderboard describes
RESULTS = "results.json"  # a run's results, in its folder
COMPLETE = "COMPLETE"  # written last: a run without it is unfinished
TIMING_KEYS = frozenset({"time", "seconds", "elapsed_s"})  # such keys anywhere in a run's files


def lab_file(relative: str) -> str:
    """``relative`` as a path a lab may write its own files to (compare's saved models): inside
    the run folder, under ``models/``; a ValueError (a bug in the lab) otherwise."""
    parts = PurePosixPath(str(relative).replace("\\", "/")).parts
    if not parts or parts[0] != MODELS or len(parts) < 2 or ".." in parts:
        raise ValueError(f"a lab writes its own files under {MODELS}/, not {relative!r}")
    return "/".join(parts)


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
