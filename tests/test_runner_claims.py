"""Claims and their verdicts: ctx.claim, and ctx.claim_exact, which can find the notes wrong."""

import dataclasses
import math

import numpy as np
import pytest
import torch

from biaslab import registry
from biaslab.context import RunContext
from biaslab.runner import Result
from biaslab.runs import RunDir, tally, verdict_of


@dataclasses.dataclass(frozen=True)
class NoConfig:
    pass


@pytest.fixture
def ctx(tmp_path):
    exp = registry.Experiment("test-claims", 1, "claims", "claims", NoConfig, lambda c: None)
    return RunContext(
        exp, NoConfig(), 0, "default", RunDir.create("t", 0, out=tmp_path / "run"), progress=False
    )


def exact_third():
    return 1 / 3


def test_notes_wrong_when_biaslab_agrees_with_the_exact_value_and_the_notes_do_not(ctx):
    verdict = ctx.claim_exact(
        "a third",
        notes="0.3334",
        measured=0.33333,
        exact=exact_third,
        tolerance=5e-5,
        computation="1/3 in float64",
        source="notes",
    )
    (claim,) = [c.as_dict() for c in ctx.claims]
    assert verdict == verdict_of(claim) == "notes-wrong"
    assert claim["passed"] is None and claim["computation"] == "1/3 in float64"
    assert tally([claim]).slips == 1 and Result(ctx.run_dir, {"claims": [claim]}).passed
    assert claim["kind"] == "check"  # an exact computation fails only through a bug


def test_pass_when_both_agree_and_fail_when_biaslab_is_wrong(ctx):
    assert (
        ctx.claim_exact(
            "ok",
            notes="0.3333",
            measured=0.33333,
            exact=exact_third,
            tolerance=5e-5,
            computation="-",
            source="s",
        )
        == "pass"
    )
    assert (
        ctx.claim_exact(
            "bad",
            notes="0.3334",
            measured=0.35,
            exact=exact_third,
            tolerance=5e-5,
            computation="-",
            source="s",
        )
        == "fail"
    )
    verdicts = [verdict_of(c.as_dict()) for c in ctx.claims]
    assert verdicts == ["pass", "fail"]
    assert "computation" not in ctx.claims[0].as_dict()  # only a notes-wrong claim carries it


def test_refused_in_a_run_that_trains(ctx):
    ctx.training("mlp")
    with pytest.raises(ValueError, match="trains"):
        ctx.claim_exact(
            "x", notes="1.0", measured=1.0, exact=lambda: 1.0, tolerance=0.1, computation="-", source="s"
        )
    assert not ctx.claims


@pytest.mark.parametrize(
    "draw", [lambda: np.random.rand(), lambda: torch.rand(()).item(), lambda: __import__("random").random()]
)
def test_refused_for_a_value_that_comes_from_random_draws(ctx, draw):
    with pytest.raises(ValueError, match="random draws"):
        ctx.claim_exact(
            "sampled", notes="0.5", measured=0.5, exact=draw, tolerance=1.0, computation="-", source="s"
        )


def test_exact_check_leaves_every_generator_as_it_was(ctx):
    torch.manual_seed(5)
    np.random.seed(5)
    expected = torch.rand(3), np.random.rand(3)
    torch.manual_seed(5)
    np.random.seed(5)
    ctx.claim_exact(
        "e", notes="2.718", measured=math.e, exact=lambda: math.e, tolerance=1e-3, computation="-", source="s"
    )
    assert torch.equal(torch.rand(3), expected[0]) and np.array_equal(np.random.rand(3), expected[1])


def slip(ctx, measured=0.405, printed_gives=lambda: 0.605, **more):
    return ctx.claim_slip(
        "one descent step lowers J",
        printed=r"W \leftarrow W + \eta",
        correct="W ← W − η ∂J/∂W",
        measured=measured,
        exact=lambda: 0.405,
        printed_gives=printed_gives,
        tolerance=1e-6,
        computation="the printed step raises J to 0.605",
        source="ML-for-physics slides, 'Propagation Algorithm'",
        **more,
    )


def test_a_printed_formula_that_gives_the_wrong_value_is_a_slip_not_a_failure(ctx):
    assert slip(ctx) == "slip"
    (claim,) = [c.as_dict() for c in ctx.claims]
    assert verdict_of(claim) == "slip" and claim["passed"] is None and claim["kind"] == "check"
    assert claim["printed"] == r"W \leftarrow W + \eta" and claim["expected"] == "W ← W − η ∂J/∂W"
    assert claim["computation"] == "the printed step raises J to 0.605"
    counts = tally([claim])
    assert counts.slips == 1 and counts.failed == 0 and Result(ctx.run_dir, {"claims": [claim]}).passed


def test_a_slip_verdict_needs_biaslab_right_and_the_printed_formula_wrong(ctx):
    assert slip(ctx, measured=0.5) == "fail"  # biaslab's own value is wrong: a bug, not a slip
    assert slip(ctx, printed_gives=lambda: 0.405) == "pass"  # the printed formula gives it too
    assert [verdict_of(c.as_dict()) for c in ctx.claims] == ["fail", "pass"]


def test_a_slip_is_refused_in_a_run_that_trains_or_from_random_draws(ctx):
    with pytest.raises(ValueError, match="random draws"):
        slip(ctx, printed_gives=lambda: np.random.rand())
    ctx.training("mlp")
    with pytest.raises(ValueError, match="trains"):
        slip(ctx)
    assert not ctx.claims


def test_a_claim_declares_its_kind(ctx):
    ctx.claim("a", expected="1", measured=1, passed=True, source="s", kind="finding")
    assert ctx.claims[0].as_dict()["kind"] == "finding"
    with pytest.raises(ValueError, match="kind"):
        ctx.claim("b", expected="1", measured=1, passed=True, source="s", kind="identity")
    with pytest.raises(TypeError, match="kind"):
        ctx.claim("c", expected="1", measured=1, passed=True, source="s")


def test_claim_not_judged_in_quick(ctx):
    ctx.profile = "quick"
    ctx.claim(
        "big",
        expected=">= 0.97",
        measured=0.5,
        passed=False,
        source="s",
        kind="finding",
        checked_in_quick=False,
    )
    claim = ctx.claims[0].as_dict()
    assert verdict_of(claim) == "unjudged" and "not judged in --quick" in claim["expected"]


def test_timing_columns_are_left_out_of_what_the_seed_fixes_and_marked_in_the_report(ctx, tmp_path):
    from biaslab.report.html import _timing_marked
    from biaslab.results import reproducible

    ctx.table("samplers", ["sampler", "distance", "seconds"], [["A", 0.1, 2.5], ["B", 0.2, 0.1]], ["seconds"])
    ctx.table("plain", ["x"], [[1]])
    results = {"tables": ctx.tables, "claims": []}
    assert reproducible(results)["tables"] == [
        {**ctx.tables[0], "rows": [["A", 0.1, None], ["B", 0.2, None]]},
        {"title": "plain", "columns": ["x"], "rows": [[1]]},
    ]
    assert ctx.tables[0]["rows"][0][2] == 2.5  # the record itself keeps the times
    assert _timing_marked(ctx.tables[0])[2] == "seconds (wall clock, this machine)"
    with pytest.raises(ValueError, match="not among the columns"):
        ctx.table("bad", ["a"], [[1]], ["b"])
