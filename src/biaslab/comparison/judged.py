"""What a comparison concluded about each candidate, against what the use requires, and the
report's tables made of it.

:class:`Judged` holds one candidate's protocol result, learning curve and verdict (Day 5:
``decide``); :func:`leaderboard` and :func:`recommendation` turn a comparison's judged candidates
into the leaderboard's columns and rows and the one recommendation sentence. The candidate
recommended is the best on **validation**, never on test (the test rows decide nothing).

:class:`Requirements` (``min_accuracy``, ``max_ece``, ``max_relative_error``, ``min_ood_auroc``) is
the compare lab's ``require`` part; ``for_task`` gives ``decide``'s keywords. :func:`evidence_of`
is what ``decide`` reads of a candidate, :func:`headline` its one line. The leaderboard holds
an OOD AUROC column when an OOD set was given, and each candidate's predict seconds per 1,000
rows (a timing column). :func:`recommended` -> :class:`Pick` (name, tied, meets, mean, error,
splits), scored by :func:`score_and_error`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from biaslab.config import check_range

if TYPE_CHECKING:
    from biaslab.comparison.candidates import Candidate
    from biaslab.comparison.curves import Curve
    from biaslab.comparison.protocol import CandidateResult
    from biaslab.comparison.symmetry_report import SymmetryReport
    from biaslab.evaluate.decision import Decision

__all__ = [
    "LEADERBOARD",
    "PREDICT_COLUMN",
    "RECOMMENDATION",
    "VALIDATION_MEASURE",
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
        predict_seconds: wall-clock seconds to predict 1,000 rows (measured on the test rows).
        val_scores: its validation scores (``CandidateResult.val``) on each validation split,
            the protocol's first (:mod:`biaslab.comparison.resampling`); () when only that one.
    """

    candidate: Candidate
    result: CandidateResult | None = None
    curve: Curve | None = None
    decision: Decision | None = None
    diverged: str = ""
    ood_auroc: float | None = None
    val_scores: tuple[dict, ...] = ()
    predict_seconds: float | None = None

    def validation(self, task: str, n_val: int = 0) -> tuple[float, float]:
        """Its validation score and standard error (:func:`score_and_error`) over its splits, or
        the protocol's one split of ``n_val`` rows."""
        return score_and_error(task, list(self.val_scores) or [self.result.val], n_val)


def score_and_error(task: str, vals: list[dict], n_val: int) -> tuple[float, float]:
    """The validation score the ranking reads (accuracy, or the MAE) as a mean over the splits'
    ``vals`` (``CandidateResult.val`` each) and its standard error: ``std / sqrt(splits)`` over
    several splits, else from one split's ``n_val`` rows (an accuracy's ``sqrt(p(1 − p) / n)``,
    an MAE's ``sqrt((RMSE² − MAE²) / n)``; :mod:`biaslab.comparison.resampling`)."""
    key = "accuracy" if task == "classify" else "mae"
    scores = np.array([v[key] for v in vals], dtype=np.float64)
    mean = float(scores.mean())
    if len(scores) > 1:
        return mean, float(scores.std(ddof=1) / math.sqrt(len(scores)))
    n = max(n_val, 1)
    if task == "classify":
        return mean, math.sqrt(mean * (1 - mean) / n)
    return mean, math.sqrt(max(vals[0]["rmse"] ** 2 - vals[0]["mae"] ** 2, 0.0) / n)


def validation_score(task: str, result: CandidateResult) -> tuple[float, ...]:
    """The score the recommendation ranks by, higher is better: validation accuracy (a tie goes to
    the lower validation loss), or minus the validation MAE."""
    if task == "classify":
        return result.val["accuracy"], -result.val["loss"]
    return (-result.val["mae"],)


PREDICT_COLUMN = "predict seconds per 1,000 rows"
LEADERBOARD = "Leaderboard"  # the report's table of the candidates (read back by biaslab.load_comparison)
RECOMMENDATION = "Recommendation"  # the report's table naming the pick and saying why
VALIDATION_MEASURE = {"classify": "validation accuracy", "regress": "validation MAE"}  # what ranks


def _ranked(task: str, judged: Mapping[str, Judged]) -> list[tuple[str, Judged]]:
    """The candidates best first by validation score (their mean over the validation splits when
    there are several), the diverged last; equal scores keep the guide's order."""

    def key(item: tuple[str, Judged]) -> tuple:
        j = item[1]
        if j.result is None:
            return (1, 0.0)
        mean, _ = j.validation(task)
        return (0, -mean if task == "classify" else mean)

    return sorted(judged.items(), key=key)  # sorted is stable: ties keep their order


def leaderboard(task: str, judged: Mapping[str, Judged], n_seeds: int) -> tuple[list[str], list[list]]:
    """The leaderboard's columns and rows, best validation score first (:func:`_ranked`): prior,
    parameters, validation and test figures, the
    learning curve's last point (mean ± std over ``n_seeds``), the OOD AUROC when measured, the
    training time and the verdict with its rule."""
    if task == "classify":
        measures = [VALIDATION_MEASURE[task], "test accuracy", "test ECE after temperature"]
    else:
        measures = [VALIDATION_MEASURE[task], "test MAE", "test MAE / mean predictor's",
                    "90% interval: test coverage", "90% interval: mean width"]  # fmt: skip
    with_ood = any(j.ood_auroc is not None for j in judged.values())
    curve_column = f"validation error, all rows ({n_seeds} seed{'s' * (n_seeds > 1)})"
    splits = max((len(j.val_scores) for j in judged.values()), default=0)
    split_column = [f"{measures[0]}, {splits} splits (mean ± standard error)"] if splits > 1 else []
    columns = [
        "model", "prior", "parameters", *measures[:1], *split_column, *measures[1:], curve_column,
        *(["OOD AUROC (max softmax)"] if with_ood else []), "train seconds", PREDICT_COLUMN, "verdict",
    ]  # fmt: skip
    rows = []
    for name, j in _ranked(task, judged):
        if j.result is None:
            rows.append([name, j.candidate.prior, *["-"] * (len(columns) - 3), f"diverged: {j.diverged}"])
            continue
        val, test = j.result.val, j.result.test
        if task == "classify":
            values = [val["accuracy"], test["accuracy"], test["ece_after_temperature"]]
        else:
            interval = [test.get("interval_coverage", math.nan), test.get("interval_width", math.nan)]
            values = [val["mae"], test["mae"], test["mae"] / test["baseline_mae"], *interval]
        if split_column:
            mean, error = j.validation(task)
            values.insert(1, f"{mean:.4g} ± {error:.2g}")
        mean, std = j.curve.val_errors[-1], j.curve.val_errors_std[-1]
        spread = f"{mean:.4g} ± {std:.2g}" if n_seeds > 1 else f"{mean:.4g}"
        rows.append(
            [
                name,
                j.candidate.prior,
                "-" if j.result.parameters is None else j.result.parameters,
                *(v if isinstance(v, str) else "-" if math.isnan(v) else round(v, 4) for v in values),
                spread,
                *([round(j.ood_auroc, 4)] if with_ood else []),
                round(j.result.train_seconds, 2),
                "-" if j.predict_seconds is None else float(f"{j.predict_seconds:.2g}"),
                f"{j.decision.verdict} (rule {j.decision.rule})"
                + ("; stopped at the time budget" if j.result.stopped_at_budget else ""),
            ]
        )
    return columns, rows


# Priors stronger than a network's, simplest first: among candidates tied within one standard
# error the first of these is picked, then the network with the fewest parameters.
SIMPLER_FIRST = ("linear model", "k-nearest neighbours", "gradient-boosted trees", "fingerprint trees")


@dataclass(frozen=True)
class Pick:
    """The recommended candidate and how sure the choice is.

    Attributes:
        name: the candidate recommended.
        tied: the others within one standard error of the best validation score (the simpler
            prior is picked among them: :data:`SIMPLER_FIRST`, then fewer parameters).
        meets: the pick meets the use's requirements (verdict ship); when any candidate does, the
            pick is one of them.
        mean, error: its validation score (accuracy, or MAE) and the score's standard error.
        splits: the validation splits the score is averaged over (1: the protocol's one split).
    """

    name: str
    tied: tuple[str, ...]
    meets: bool
    mean: float
    error: float
    splits: int


def _simplicity(judged: Judged) -> tuple:
    name, parameters = judged.candidate.name, judged.result.parameters
    if name in SIMPLER_FIRST:
        return (0, SIMPLER_FIRST.index(name))
    return (1, math.inf if parameters is None else parameters)


def recommended(task: str, judged: Mapping[str, Judged], n_val: int = 0) -> Pick | None:
    """The candidate to recommend (None when every one diverged): among those that meet the
    requirements when any do, the best mean validation score over the splits each was validated
    on (``Judged.val_scores``); among the candidates within one standard error of it (the
    one-standard-error rule), the simplest prior. ``n_val``: the validation rows of a split."""
    fitted = {name: j for name, j in judged.items() if j.result is not None}
    if not fitted:
        return None
    meeting = {name: j for name, j in fitted.items() if j.decision.verdict == "ship"}
    pool = meeting or fitted
    stats = {name: j.validation(task, n_val) for name, j in pool.items()}
    sign = 1.0 if task == "classify" else -1.0
    best = max(pool, key=lambda name: (sign * stats[name][0], validation_score(task, pool[name].result)))
    mean, error = stats[best]
    tied = [name for name in pool if abs(stats[name][0] - mean) <= error]
    chosen = min(tied, key=lambda name: (_simplicity(pool[name]), name != best))
    splits = max(len(pool[chosen].val_scores), 1)
    others = tuple(name for name in tied if name != chosen)
    return Pick(chosen, others, bool(meeting), *stats[chosen], splits)


def recommendation(
    task: str,
    judged: Mapping[str, Judged],
    symmetries: SymmetryReport | None = None,
    sizes: tuple[int, int] = (0, 0),
) -> str:
    """One sentence: the recommended candidate (:func:`recommended`), its validation score with
    its standard error and the splits it is read on (``sizes``: a split's training and validation
    rows), the candidates tied with it, its verdict and why, and the symmetries of the data its
    prior captures (when they were probed)."""
    from biaslab.comparison.symmetry_report import fitting_symmetries

    pick = recommended(task, judged, sizes[1])
    if pick is None:
        return "every candidate diverged: lower lr"
    decision = judged[pick.name].decision
    measure = "validation accuracy" if task == "classify" else "validation MAE"
    n_train, n_val = sizes
    over = (
        f"mean ± standard error over {pick.splits} splits of {n_train:,} training and {n_val:,} "
        "validation rows"
        if pick.splits > 1
        else f"± its standard error on {n_val:,} validation rows"
    )
    sentence = f"{pick.name}: {measure} {pick.mean:.4g} ± {pick.error:.2g} ({over})"
    if not pick.meets:
        sentence += "; no candidate meets the use's requirements"
    elif any(j.result is not None and j.decision.verdict != "ship" for j in judged.values()):
        sentence += "; chosen among the candidates that meet the use's requirements"
    if pick.tied:
        sentence += (
            f"; tied within one standard error with {', '.join(pick.tied)}: the simpler prior is "
            "recommended (the stronger assumption, or fewer parameters)"
        )
    sentence += f"; its verdict: {decision.verdict} ({decision.reason})"
    fits = [] if symmetries is None else fitting_symmetries(symmetries, pick.name)
    if fits:
        survives = " and ".join(fits)
        sentence += (
            f". Its prior fits your data: the label survives {survives}, and {pick.name} is invariant to it"
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
