"""The leaderboard and the recommendation a comparison ends with (src/biaslab/comparison/judged.py):
ranked on validation only, diverged candidates shown as such, the OOD column only when measured."""

from biaslab.comparison.candidates import Candidate
from biaslab.comparison.curves import Curve
from biaslab.comparison.judged import Judged, leaderboard, recommendation
from biaslab.comparison.probes import probes_for
from biaslab.comparison.protocol import CandidateResult
from biaslab.comparison.symmetry_probes import Survival
from biaslab.comparison.symmetry_report import Finding, SymmetryReport
from biaslab.evaluate.decision import Decision


def candidate(name):
    return Candidate(name, f"the prior of {name}", "torch", lambda *a: None)


def judged(name, val_accuracy, test_accuracy, val_loss=0.3, ood=None):
    result = CandidateResult(
        name, f"the prior of {name}", 1000, 1.5, 3,
        {"accuracy": val_accuracy, "loss": val_loss},
        {"accuracy": test_accuracy, "ece": 0.05, "ece_after_temperature": 0.02},
    )  # fmt: skip
    curve = Curve([10, 20], [0.3, 0.2], [0.01, 0.02], None, {})
    decision = Decision("ship", 5, "every requirement met", {}, 0.33, None)
    return Judged(candidate(name), result, curve, decision, ood_auroc=ood)


def test_the_recommendation_goes_by_validation_never_by_test():
    board = {"A": judged("A", 0.90, 0.99), "B": judged("B", 0.95, 0.80)}
    assert recommendation("classify", board).startswith("B: the best validation accuracy (0.95)")
    tie = {"A": judged("A", 0.95, 0.99, val_loss=0.4), "B": judged("B", 0.95, 0.80, val_loss=0.2)}
    assert recommendation("classify", tie).startswith("B:")  # a tie goes to the lower validation loss


def test_a_diverged_candidate_is_a_row_of_its_own_and_never_recommended():
    board = {"A": judged("A", 0.9, 0.9), "B": Judged(candidate("B"), diverged="loss nan at step 4")}
    columns, rows = leaderboard("classify", board, n_seeds=2)
    assert len(rows[1]) == len(columns) and rows[1][-1] == "diverged: loss nan at step 4"
    assert rows[0][columns.index("validation error, all rows (2 seeds)")] == "0.2 ± 0.02"
    assert "OOD AUROC (max softmax)" not in columns  # no OOD set, no column
    assert recommendation("classify", board).startswith("A:")
    assert recommendation("classify", {"B": board["B"]}) == "every candidate diverged: lower lr"


def test_the_ood_column_appears_when_measured():
    columns, rows = leaderboard("classify", {"A": judged("A", 0.9, 0.9, ood=0.91234)}, n_seeds=1)
    assert rows[0][columns.index("OOD AUROC (max softmax)")] == 0.9123


def test_the_recommendation_names_the_symmetries_its_prior_captures():
    (permutation,) = probes_for("set", (6, 2))
    survives = Survival("permutation", "MLP", "accuracy", 0.95, 0.947, 0.3, 2.0, -0.5, 1.1, 4000)
    report = SymmetryReport("set", (Finding(permutation, survives, {"A": 2e-7, "B": 0.8}),))
    board = {"A": judged("A", 0.95, 0.9), "B": judged("B", 0.90, 0.9)}
    sentence = recommendation("classify", board, report)
    assert sentence.endswith("the label survives a permutation of the elements, and A is invariant to it")
    board = {"A": judged("A", 0.90, 0.9), "B": judged("B", 0.95, 0.9)}
    assert "Its prior fits" not in recommendation("classify", board, report)  # B is not invariant
