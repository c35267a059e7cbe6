"""How a claim cites the documents (biaslab.documents): the form of a source, its places and its
printed quotes found in the texts; and the tally that counts findings, checks and slips apart."""

from pathlib import Path

import pytest

from biaslab.documents import (
    place_problem,
    printed_problem,
    seeds_folder,
    source_parts,
    source_problem,
)
from biaslab.results import tally

BOOK = """Mathematical Foundations

2.4 The chain rule and backpropagation

The total work of the backward pass is roughly the same as the forward pass — a factor of 2 to 3.

Lab

Open the Day 2 notebook (`Day2.ipynb`). You will:

1. Compute a gradient.
2. Add a manual backward pass.
"""
NOTES = """6 Attention as a unifying primitive

$$\\alpha_i = \\frac{\\exp(q \\cdot k_i)}{\\sum_j \\exp(q \\cdot k_j)} \\quad (6.1)$$

$$h_{ij} = \\sum_{k,l} W_{ijkl} x_{kl} \\tag{5.1}$$
"""
SLIDES = """Propagation Algorithm

- Update weights $\\mathbf{W} \\leftarrow \\mathbf{W} + \\eta$
"""


@pytest.fixture
def seeds(tmp_path) -> Path:
    """A seeds folder of three small documents, mapped by a README table as the real one is."""
    for name, text in (("a.txt", BOOK), ("b.txt", NOTES), ("c.txt", SLIDES)):
        (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / "README.md").write_text(
        "| file | short name | title |\n|---|---|---|\n"
        "| `a.txt` | workshop book | the book |\n| `b.txt` | lecture notes | notes |\n"
        "| `c.txt` | ML-for-physics slides | slides |\n",
        encoding="utf-8",
    )
    return tmp_path


@pytest.mark.parametrize(
    "source",
    [
        "workshop book §2.4 (The chain rule and backpropagation)",
        "workshop book, Day 2 lab step 2",
        "lecture notes §6, eq. 6.1",
        "ML-for-physics slides, 'Propagation Algorithm'; Keskar et al. 2017",
        "biaslab's target (0.8; the documents print no number)",
        "Baldi & Hornik 1989; Greydanus 2020, table 1",
        "workshop book §2.4; biaslab's target (a margin; with a semicolon inside)",
    ],
)
def test_sources_of_the_documented_forms_are_accepted(source):
    assert source_problem(source) is None


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("", "empty"),
        ("notes, Day 2 (softmax)", "neither a document"),
        ("the seeds' slides", "neither a document"),
        ("lab design", "neither a document"),
        ("workshop book, gradient descent", "names no place"),
        ("lecture notes eq 6.1", "names no place"),
        ("workshop book §2.4; notes, Day 4", "'notes, Day 4'"),
    ],
)
def test_loose_sources_are_refused(source, says):
    assert says in source_problem(source)


def test_parts_split_at_semicolons_outside_parentheses():
    assert source_parts("a (x; y); b") == ["a (x; y)", "b"]


@pytest.mark.parametrize(
    "source",
    [
        "workshop book §2.4 (The chain rule and backpropagation)",
        "workshop book §2.4",
        "workshop book, Day 2 lab step 2",
        "lecture notes §6, eq. 6.1",
        "lecture notes §6 (Attention as a unifying primitive), eq. 5.1",
        "ML-for-physics slides, 'propagation   algorithm'",  # case and spaces as a reader reads them
    ],
)
def test_places_that_exist_are_found(seeds, source):
    assert place_problem(source, seeds) is None


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("workshop book §2.5", "no section 2.5"),
        ("workshop book §2.4 (Backprop)", "not headed 'Backprop'"),
        ("workshop book, Day 2 lab step 3", "has no step 3"),
        ("workshop book, Day 3 lab step 1", "Day 3 lab has no step 1"),
        ("lecture notes §6, eq. 6.2", "no equation 6.2"),
        ("ML-for-physics slides, 'Gradient descent'", "print no 'Gradient descent'"),
    ],
)
def test_places_that_do_not_exist_are_named(seeds, source, says):
    assert says in place_problem(source, seeds)


def test_a_printed_quote_is_found_in_the_first_document_named(seeds):
    assert (
        printed_problem(
            "roughly the same as the forward pass - a factor of 2 to 3", "workshop book §2.4", seeds
        )
        is None
    )
    assert (
        printed_problem(r"\mathbf{W} + \eta", "ML-for-physics slides, 'Propagation Algorithm'", seeds) is None
    )
    wrong_document = printed_problem("a factor of 2 to 3", "lecture notes §6; workshop book §2.4", seeds)
    assert "lecture notes do not print" in wrong_document
    assert "do not print" in printed_problem("a factor of 4", "workshop book §2.4", seeds)
    assert "names no document" in printed_problem("a factor of 2 to 3", "Keskar et al. 2017", seeds)


@pytest.mark.skipif(seeds_folder() is None, reason="the documents lie beside a checkout only")
def test_the_real_documents_are_all_mapped():
    from biaslab.documents import DOCUMENTS, texts

    found = texts(seeds_folder())
    assert set(found) == set(DOCUMENTS) and len(found["inductive-bias slides"]) == 2
    assert place_problem("lecture notes §5.1, eq. 5.5", seeds_folder()) is None
    assert place_problem("lecture notes §9", seeds_folder()) is not None  # a table row is no heading
    assert place_problem("lecture notes, Appendix A", seeds_folder()) is None  # "A The QM9 dataset"
    assert place_problem("workshop book, Appendix B", seeds_folder()) is None
    assert place_problem("workshop book, Appendix C", seeds_folder()) is not None


def test_tally_counts_findings_checks_and_slips_apart():
    claims = [
        {"passed": True, "kind": "finding"},
        {"passed": False, "kind": "finding"},
        {"passed": None, "kind": "finding"},
        {"passed": True, "kind": "check"},
        {"passed": None, "kind": "check", "verdict": "slip"},
        {"passed": None, "kind": "check", "verdict": "notes-wrong"},
        {"passed": True},  # a run from before claims declared their kind: a finding
    ]
    counts = tally(claims)
    assert (counts.findings.passed, counts.findings.failed, counts.findings.unjudged) == (2, 1, 1)
    assert (counts.checks.passed, counts.checks.total, counts.slips, counts.total) == (1, 1, 2, 7)
    assert counts.describe() == (
        "findings 2 of 4 hold, 1 fail, 1 not checked; checks 1 of 1 hold; 2 slips in the documents"
    )
    assert counts.short() == "2/4 + 1/1 checks (2 slips, 1 not checked)"
    assert tally(claims[3:4]).short() == "1/1 checks" and tally(claims[:1]).short() == "1/1"
    assert tally(claims[4:5]).short() == "no findings or checks (1 slip)"
    assert tally([]).describe() == "no claims"
