"""What a comparison concluded about each candidate, against what the use requires, and the
report's tables made of it.

:class:`Judged` holds one candidate's protocol result, learning curve and verdict (Day 5:
``decide``); :func:`leaderboard` and :func:`recommendation` turn a comparison's judged candidates
into the leaderboard's columns and rows and the one recommendation sentence. The candidate
recommended is the best on **validation**, never on test (the test rows decide nothing).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from biaslab.config import check_range

if TYPE_CHECKING:
    from biaslab.comparison.candidates import Candidate
    from biaslab.comparison.curves import Curve
    from biaslab.comparison.protocol import CandidateResult
    from biaslab.comparison.symmetry_report import SymmetryReport
    from biaslab.evaluate.decision import Decision

__all__ = [
    "Judged",
    "Requirements",
    "evidence_of",
    "headline",
    "leaderboard",
    "recommendation",
    "validation_score",
]


@dataclass(frozen=True)
class Requirements:
    """What the use requires of a model, for ``decide``: a classifier's test accuracy and
    calibration (ECE after temperature scaling), a regression's test MAE as a share of the mean
    predictor's."""

    min_accuracy: float = 0.95
    max_ece: float = 0.05
    max_relative_error: float = 0.5
    min_ood_auroc: float = 0.9  # with an OOD set: flagging it by the max softmax probability

    def __post_init__(self):
        for key in ("min_accuracy", "max_ece", "max_relative_error", "min_ood_auroc"):
            check_range(self, key, 0.0, 1.0)

    def for_task(self, task: str) -> dict[str, float]:
        """``decide``'s keyword arguments for ``task``."""
        if task == "classify":
            return {
                "min_accuracy": self.min_accuracy,
                "max_ece": self.max_ece,
                "min_ood_auroc": self.min_ood_auroc,
            }
        return {"max_relative_error": self.max_relative_error}

    def text(self, task: str, ood: bool = False) -> str:
        if task == "classify":
            flagged = f", OOD AUROC >= {self.min_ood_auroc:g}" if ood else ""
            return (
                f"test accuracy >= {self.min_accuracy:g}, ECE after temperature scaling <= {self.max_ece:g}"
                f"{flagged}"
            )
        return f"test MAE <= {self.max_relative_error:g} x the mean predictor's"


@dataclass(frozen=True)
class Judged:
    """One candidate after the protocol.

    Attributes:
        candidate: the :class:`~biaslab.comparison.candidates.Candidate`.
        result, curve, decision: its scores, learning curve and verdict; all None when it diverged.
        diverged: why the training diverged ("" when it did not).
        ood_auroc: how well its max softmax probability flags the OOD set among the test rows
            (None: no OOD set).
    """

    candidate: Candidate
    result: CandidateResult | None = None
    curve: Curve | None = None
    decision: Decision | None = None
    diverged: str = ""
    ood_auroc: float | None = None


def validation_score(task: str, result: CandidateResult) -> tuple[float, ...]:
    """The score the recommendation ranks by, higher is better: validation accuracy (a tie goes to
    the lower validation loss), or minus the validation MAE."""
    if task == "classify":
        return result.val["accuracy"], -result.val["loss"]
    return (-result.val["mae"],)


def leaderboard(task: str, judged: Mapping[str, Judged], n_seeds: int) -> tuple[list[str], list[list]]:
    """The leaderboard's columns and rows: prior, parameters, validation and test figures, the
    learning curve's last point (mean ± std over ``n_seeds``), the OOD AUROC when measured, the
    training time and the verdict with its rule."""
    if task == "classify":
        measures = ["validation accuracy", "test accuracy", "test ECE after temperature"]
    else:
        measures = ["validation MAE", "test MAE", "test MAE / mean predictor's",
                    "90% interval: test coverage", "90% interval: mean width"]  # fmt: skip
    with_ood = any(j.ood_auroc is not None for j in judged.values())
    curve_column = f"validation error, all rows ({n_seeds} seed{'s' * (n_seeds > 1)})"
    columns = [
        "model", "prior", "parameters", *measures, curve_column,
        *(["OOD AUROC (max softmax)"] if with_ood else []), "train seconds", "verdict",
    ]  # fmt: skip
    rows = []
    for name, j in judged.items():
        if j.result is None:
            rows.append([name, j.candidate.prior, *["-"] * (len(columns) - 3), f"diverged: {j.diverged}"])
            continue
        val, test = j.result.val, j.result.test
        if task == "classify":
            values = [val["accuracy"], test["accuracy"], test["ece_after_temperature"]]
        else:
            interval = [test.get("interval_coverage", math.nan), test.get("interval_width", math.nan)]
            values = [val["mae"], test["mae"], test["mae"] / test["baseline_mae"], *interval]
        mean, std = j.curve.val_errors[-1], j.curve.val_errors_std[-1]
        spread = f"{mean:.4g} ± {std:.2g}" if n_seeds > 1 else f"{mean:.4g}"
        rows.append(
            [
                name,
                j.candidate.prior,
                "-" if j.result.parameters is None else j.result.parameters,
                *("-" if math.isnan(v) else round(v, 4) for v in values),
                spread,
                *([round(j.ood_auroc, 4)] if with_ood else []),
                round(j.result.train_seconds, 2),
                f"{j.decision.verdict} (rule {j.decision.rule})"
                + ("; stopped at the time budget" if j.result.stopped_at_budget else ""),
            ]
        )
    return columns, rows


def recommended(task: str, judged: Mapping[str, Judged]) -> str | None:
    """The name of the candidate with the best validation score (None when every one diverged)."""
    fitted = {name: j for name, j in judged.items() if j.result is not None}
    if not fitted:
        return None
    return max(fitted, key=lambda name: validation_score(task, fitted[name].result))


def recommendation(task: str, judged: Mapping[str, Judged], symmetries: SymmetryReport | None = None) -> str:
    """One sentence: the candidate with the best validation score, its verdict and why, and the
    symmetries of the data its prior captures (when they were probed)."""
    from biaslab.comparison.symmetry_report import fitting_symmetries

    best = recommended(task, judged)
    if best is None:
        return "every candidate diverged: lower lr"
    fitted = {name: j for name, j in judged.items() if j.result is not None}
    result, decision = fitted[best].result, fitted[best].decision
    measure, value = (
        ("validation accuracy", result.val["accuracy"])
        if task == "classify"
        else ("validation MAE", result.val["mae"])
    )
    sentence = (
        f"{best}: the best {measure} ({value:.4g}); its verdict: {decision.verdict} ({decision.reason})"
    )
    fits = [] if symmetries is None else fitting_symmetries(symmetries, best)
    if fits:
        survives = " and ".join(fits)
        sentence += (
            f". Its prior fits your data: the label survives {survives}, and {best} is invariant to it"
        )
    return sentence


def evidence_of(task: str, result: CandidateResult, curve: Curve, ood_auroc: float | None = None):
    """What ``decide`` reads of one candidate: its validation learning curve and its test figures
    (a classifier's accuracy, ECE after temperature scaling and, with OOD inputs, its OOD AUROC; a
    regression's MAE beside the mean predictor's)."""
    from biaslab.evaluate.decision import Evidence, RegressionEvidence  # torch: not for a config's check

    if task == "classify":
        return Evidence(
            train_sizes=curve.sizes,
            val_errors=curve.val_errors,
            accuracy=result.test["accuracy"],
            ece=result.test["ece_after_temperature"],
            ood_auroc=ood_auroc,
        )
    return RegressionEvidence(
        train_sizes=curve.sizes,
        val_errors=curve.val_errors,
        test_error=result.test["mae"],
        baseline_error=result.test["baseline_mae"],
        metric="MAE",
    )


def headline(task: str, result: CandidateResult) -> str:
    """A candidate's test figure in a few words."""
    if task == "classify":
        return f"test accuracy {result.test['accuracy']:.3f}"
    return f"test MAE {result.test['mae']:.4g} (mean predictor {result.test['baseline_mae']:.4g})"
