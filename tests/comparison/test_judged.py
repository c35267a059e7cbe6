"""The leaderboard and the recommendation a comparison ends with (src/biaslab/comparison/judged.py):
ranked on validation only, diverged candidates shown as such, the OOD column only when measured."""

import numpy as np
import pytest

from biaslab.comparison.candidates import Candidate
from biaslab.comparison.curves import Curve
from biaslab.comparison.judged import Judged, leaderboard, recommendation, recommended
from biaslab.comparison.probes import probes_for
from biaslab.comparison.protocol import CandidateResult
from biaslab.comparison.symmetry_probes import Survival
from biaslab.comparison.symmetry_report import Finding, SymmetryReport
from biaslab.evaluate.decision import Decision


def candidate(name):
    return Candidate(name, f"the prior of {name}", "torch", lambda *a: None)


SIZES = (40_000, 10_000)  # a split's training and validation rows: standard errors of ~0.002


def judged(
    name, val_accuracy, test_accuracy, val_loss=0.3, ood=None, verdict="ship", splits=(), parameters=1000
):
    result = CandidateResult(
        name, f"the prior of {name}", parameters, 1.5, 3,
        {"accuracy": val_accuracy, "loss": val_loss},
        {"accuracy": test_accuracy, "ece": 0.05, "ece_after_temperature": 0.02},
    )  # fmt: skip
    curve = Curve([10, 20], [0.3, 0.2], [0.01, 0.02], None, {})
    decision = Decision(verdict, 5, "every requirement met", {}, 0.33, None)
    vals = tuple({"accuracy": a, "loss": val_loss} for a in (val_accuracy, *splits)) if splits else ()
    return Judged(Candidate(name, f"the prior of {name}", "torch", lambda *a: None), result, curve, decision,
                  ood_auroc=ood, val_scores=vals)  # fmt: skip


def test_the_recommendation_goes_by_validation_never_by_test():
    board = {"A": judged("A", 0.90, 0.99), "B": judged("B", 0.95, 0.80)}
    assert recommendation("classify", board, sizes=SIZES).startswith("B: validation accuracy 0.95 ± 0.0022")
    tie = {"A": judged("A", 0.95, 0.99, val_loss=0.4), "B": judged("B", 0.95, 0.80, val_loss=0.2)}
    assert recommendation("classify", tie, sizes=SIZES).startswith("B:")  # equal priors: the lower loss


def test_a_diverged_candidate_is_a_row_of_its_own_and_never_recommended():
    board = {"A": judged("A", 0.9, 0.9), "B": Judged(candidate("B"), diverged="loss nan at step 4")}
    columns, rows = leaderboard("classify", board, n_seeds=2)
    assert len(rows[1]) == len(columns) and rows[1][-1] == "diverged: loss nan at step 4"
    assert rows[0][columns.index("validation error, all rows (2 seeds)")] == "0.2 ± 0.02"
    assert "OOD AUROC (max softmax)" not in columns  # no OOD set, no column
    assert recommendation("classify", board, sizes=SIZES).startswith("A:")
    assert recommendation("classify", {"B": board["B"]}) == "every candidate diverged: lower lr"


def test_the_leaderboard_lists_the_best_validation_score_first_and_the_diverged_last():
    board = {
        "A": judged("A", 0.90, 0.99),
        "gone": Judged(candidate("gone"), diverged="loss nan"),
        "B": judged("B", 0.95, 0.80),
        "C": judged("C", 0.90, 0.70),
    }
    _, rows = leaderboard("classify", board, n_seeds=1)
    assert [row[0] for row in rows] == ["B", "A", "C", "gone"]  # A and C tie: the guide's order


def test_the_ood_column_appears_when_measured():
    columns, rows = leaderboard("classify", {"A": judged("A", 0.9, 0.9, ood=0.91234)}, n_seeds=1)
    assert rows[0][columns.index("OOD AUROC (max softmax)")] == 0.9123


def test_the_recommendation_names_the_symmetries_its_prior_captures():
    (permutation,) = probes_for("set", (6, 2))
    survives = Survival("permutation", "MLP", "accuracy", 0.95, 0.947, 0.3, 2.0, -0.5, 1.1, 4000)
    report = SymmetryReport("set", (Finding(permutation, survives, {"A": 2e-7, "B": 0.8}),))
    board = {"A": judged("A", 0.95, 0.9), "B": judged("B", 0.90, 0.9)}
    sentence = recommendation("classify", board, report, SIZES)
    assert sentence.endswith("the label survives a permutation of the elements, and A is invariant to it")
    board = {"A": judged("A", 0.90, 0.9), "B": judged("B", 0.95, 0.9)}
    assert "Its prior fits" not in recommendation("classify", board, report, SIZES)  # B is not invariant


def test_the_pick_meets_the_requirements_when_any_candidate_does():
    """Breast cancer's case: the MLP ranked first on validation but must be redesigned; the trees
    ship. The pick is the trees, and the sentence says why."""
    board = {"trees": judged("trees", 0.93, 0.95), "MLP": judged("MLP", 0.96, 0.93, verdict="redesign")}
    assert recommended("classify", board, SIZES[1]).name == "trees"
    sentence = recommendation("classify", board, sizes=SIZES)
    assert (
        sentence.startswith("trees:")
        and "chosen among the candidates that meet the use's requirements" in sentence
    )
    nobody = {name: judged(name, a, 0.9, verdict="redesign") for name, a in (("A", 0.9), ("B", 0.8))}
    assert "no candidate meets the use's requirements" in recommendation("classify", nobody, sizes=SIZES)


def test_candidates_within_one_standard_error_are_tied_and_the_simpler_prior_is_picked():
    """Five splits each: the CNN's mean 0.960 ± 0.0022, the linear model's 0.959 (within one
    standard error); the linear model (the stronger assumption) is recommended, naming the tie."""
    cnn = judged("CNN", 0.955, 0.96, splits=(0.965, 0.96, 0.955, 0.965), parameters=23_626)
    linear = judged("linear model", 0.95, 0.95, splits=(0.96, 0.96, 0.965, 0.96), parameters=None)
    mlp = judged("MLP", 0.90, 0.90, splits=(0.91, 0.9, 0.9, 0.91), parameters=26_122)
    pick = recommended("classify", {"CNN": cnn, "linear model": linear, "MLP": mlp})
    assert (pick.name, pick.tied, pick.splits) == ("linear model", ("CNN",), 5)
    assert pick.mean == pytest.approx(0.959) and pick.error == pytest.approx(
        np.std([0.95, 0.96, 0.96, 0.965, 0.96], ddof=1) / np.sqrt(5)
    )
    sentence = recommendation("classify", {"CNN": cnn, "linear model": linear, "MLP": mlp}, sizes=(1259, 269))
    assert "over 5 splits of 1,259 training and 269 validation rows" in sentence
    assert "tied within one standard error with CNN: the simpler prior is recommended" in sentence
    columns, rows = leaderboard("classify", {"CNN": cnn, "linear model": linear}, n_seeds=1)
    assert rows[1][columns.index("validation accuracy, 5 splits (mean ± standard error)")] == "0.959 ± 0.0024"
