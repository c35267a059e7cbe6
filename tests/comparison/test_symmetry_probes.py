"""Probing the data's symmetries (src/biaslab/comparison/probes.py, symmetry_probes.py): the probes per kind,
whether a label survives a transformation, which trained candidates are invariant to it, and the
sentences that name the fitting prior."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from biaslab.comparison.candidates import candidates_for
from biaslab.comparison.fitting import Trial, fit, init_seed
from biaslab.comparison.probes import probes_for
from biaslab.comparison.protocol import fit_candidate, prepare
from biaslab.comparison.symmetry_probes import (
    Survival,
    augmented,
    candidate_invariance,
    label_survival,
    survival,
)
from biaslab.comparison.symmetry_report import Finding, SymmetryReport, explain, symmetry_report
from biaslab.data.user_data import UserData
from biaslab.errors import ConfigError
from biaslab.train.config import TrainConfig
from biaslab.train.recipes import TrainSetup

QUIET = TrainSetup(progress=False)
CONFIG = TrainConfig(epochs=12, batch_size=32, lr=3e-3)

SHAPES = {"image": (1, 8, 8), "sequence": (16, 2), "set": (6, 3), "table": (5,)}
NAMES = {
    "image": ["shift", "flip"],
    "sequence": ["time shift", "reversal"],
    "set": ["permutation"],
    "table": [],  # none can tell: see probes_for
}


# -- data ---------------------------------------------------------------------------------
def sets(n=2000, size=6, seed=0):
    """Sets of 2..6 elements of 2 features, padded; the class: each element's feature 0 is drawn
    around +1.5 (class 1) or -1.5 (class 0), so any order of the elements tells it (permutation-
    invariant) and a model gets nearly every set right: on the 300 validation rows the 95% interval
    of the cost of augmenting is narrow enough to decide against a 2-point margin."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(2, size + 1, n)
    mask = np.arange(size)[None, :] < lengths[:, None]
    y = rng.integers(0, 2, n).astype(np.int64)
    x = rng.normal(size=(n, size, 2))
    x[..., 0] += 1.5 * (2 * y[:, None] - 1)
    x = np.where(mask[..., None], x, 0.0).astype(np.float32)
    return UserData("set", "classify", x, y, classes=(0, 1), mask=mask)


def spikes(n=300, steps=16, seed=0):
    """Sequences of noise with one spike: in the first half (class 0) or the second (class 1).
    Reversing a sequence moves its spike to the other half: it changes the label."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    x = rng.normal(scale=0.3, size=(n, steps, 1))
    where = rng.integers(0, steps // 2, n) + y * (steps // 2)
    x[np.arange(n), where, 0] += 4.0
    return UserData("sequence", "classify", x.astype(np.float32), y.astype(np.int64), classes=(0, 1))


def mlp_candidate(kind):
    """The guide's MLP (sets have none among their candidates: the table's, on flattened sets)."""
    guide = candidates_for("table" if kind == "set" else kind, task="classify")
    return next(c for c in guide if c.name == "MLP")


# -- probes -----------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", sorted(SHAPES))
def test_probes_have_their_names_and_keep_shapes_seeded(kind):
    shape = SHAPES[kind]
    probes = probes_for(kind, shape)
    assert [p.name for p in probes] == NAMES[kind]
    x = torch.randn(10, *shape, generator=torch.Generator().manual_seed(0))
    mask = torch.ones(10, shape[0], dtype=torch.bool) if kind in ("set", "sequence") else None
    for probe in probes:
        assert probe.prior_it_supports and probe.description
        a, mask_a = probe.transform(x, mask, torch.Generator().manual_seed(1))
        b, _ = probe.transform(x, mask, torch.Generator().manual_seed(1))
        assert a.shape == x.shape and torch.equal(a, b)
        assert (mask_a is None) == (mask is None)
        assert not torch.equal(a, x)  # it moves something
    if kind == "table":
        assert probes == []


def test_probes_refuse_unknown_kinds_and_shapes():
    with pytest.raises(ConfigError, match="later"):
        probes_for("graph", (3,))
    with pytest.raises(ConfigError, match="unknown kind"):
        probes_for("audio", (3,))
    with pytest.raises(ConfigError, match="2 positive sizes"):
        probes_for("set", (3,))


def test_the_mask_moves_with_a_permutation():
    (probe,) = probes_for("set", (6, 2))
    g = torch.Generator().manual_seed(0)
    x = torch.randn(20, 6, 2, generator=g)
    mask = torch.arange(6)[None, :] < torch.randint(1, 7, (20, 1), generator=g)
    x = torch.where(mask[..., None], x, torch.zeros(()))
    moved, moved_mask = probe.transform(x, mask, torch.Generator().manual_seed(3))
    assert torch.equal(moved_mask.sum(1), mask.sum(1))  # as many real elements
    assert torch.all(moved[~moved_mask] == 0)  # padding stays padding
    for i in range(20):  # the same real elements, in another order
        before = sorted(map(tuple, x[i][mask[i]].tolist()))
        assert sorted(map(tuple, moved[i][moved_mask[i]].tolist())) == before
    assert not torch.equal(moved_mask, mask)


def test_augmentation_transforms_about_half_the_examples():
    (probe,) = probes_for("set", (6, 2))
    x, mask = torch.randn(400, 6, 2), torch.ones(400, 6, dtype=torch.bool)
    out, out_mask = augmented(probe, x, mask, torch.Generator().manual_seed(0))
    changed = (out != x).flatten(1).any(1).float().mean()
    assert 0.35 < float(changed) < 0.6 and out_mask.shape == mask.shape


# -- 1. does the label survive T? ----------------------------------------------------------
def test_the_label_survives_a_permutation_but_not_a_reversal():
    """A check that can fail: the verdicts must differ between the two data sets."""
    set_data = prepare(sets(), seed=0)
    (permutation,) = probes_for("set", set_data.input_shape)
    on_sets = label_survival(permutation, Trial(mlp_candidate("set"), set_data, CONFIG, QUIET))
    seq_data = prepare(spikes(), seed=0)
    reversal = probes_for("sequence", seq_data.input_shape)[1]
    on_spikes = label_survival(reversal, Trial(mlp_candidate("sequence"), seq_data, CONFIG, QUIET))
    print(f"\nsets: {on_sets}\nspikes: {on_spikes}")
    assert on_sets.outcome == "survives" and on_spikes.outcome == "changes"
    assert on_spikes.cost > 20 and on_sets.high < on_sets.margin < on_spikes.low
    assert on_spikes.metric == "accuracy" and on_spikes.plain > 0.9


def test_the_augmented_training_starts_where_the_plain_one_did_and_keeps_its_own_checkpoint(tmp_path):
    """Both trainings start from the same weights (the seed draws them, not the tag); the
    augmented one never resumes the plain one's checkpoint; a result at hand is not retrained."""
    prepared = prepare(sets(n=120), seed=0)
    (probe,) = probes_for("set", prepared.input_shape)
    short = TrainConfig(epochs=2, batch_size=32, lr=3e-3)
    saved = TrainSetup(tag="mlp", seed=5, checkpoint=tmp_path / "mlp.pt", progress=False)
    weights = []
    for setup in (saved, replace(saved, tag="mlp + permutation"), replace(saved, seed=6)):
        torch.manual_seed(init_seed(setup))
        weights.append(
            torch.cat([p.flatten() for p in mlp_candidate("set").build((6, 2), 2, "classify").parameters()])
        )
    assert torch.equal(weights[0], weights[1]) and not torch.equal(weights[0], weights[2])
    trial = Trial(mlp_candidate("set"), prepared, short, saved)
    plain = fit_candidate(trial)
    survival = label_survival(probe, trial, plain=plain)
    assert survival.plain == plain.val["accuracy"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mlp.pt"]  # nothing else saved, nothing resumed
    with pytest.raises(ConfigError, match="would start from different weights"):
        label_survival(probe, trial, augmented_setup=replace(saved, seed=6))


def test_three_outcomes_from_the_costs_interval_against_the_margin():
    """Survives: the whole 95% interval below the 2-point margin; changes: above it; cannot
    tell: it straddles it, with the rows that would decide (the half-width falls as 1/sqrt(n))."""
    same = survival("flip", "MLP", "classify", {"accuracy": 0.99}, {"accuracy": 0.99}, 2000)
    assert same.outcome == "survives" and same.low < 0 < same.high < 2 and same.rows_to_decide is None
    lost = survival("flip", "MLP", "classify", {"accuracy": 0.98}, {"accuracy": 0.60}, 200)
    assert lost.outcome == "changes" and lost.low > 2
    # sklearn:digits --quick measured 1.9 points on 270 rows against a 2.8-point bar: no power.
    unsure = survival("flip", "MLP", "classify", {"accuracy": 0.963}, {"accuracy": 0.944}, 270)
    assert unsure.outcome == "cannot tell" and unsure.low < 2 < unsure.high
    assert not unsure.survives
    need = unsure.rows_to_decide  # the half-width at `need` rows equals the gap to the margin
    half = (unsure.high - unsure.low) / 2
    assert half * np.sqrt(270 / need) <= abs(unsure.cost - 2) < half * np.sqrt(270 / (need - 1))
    assert "95% interval" in unsure.interval_text and "margin 2.0 points" in unsure.interval_text
    # Regress: the MAE's standard error from RMSE and MAE (var |e| = RMSE² − MAE²).
    plain, moved = {"mae": 1.0, "rmse": 1.25}, {"mae": 1.01, "rmse": 1.26}
    fine = survival("reversal", "MLP", "regress", plain, moved, 100_000)
    assert fine.outcome == "survives" and abs(fine.cost - 0.01) < 1e-12
    se = np.sqrt((1.25**2 - 1.0**2 + 1.26**2 - 1.01**2) / 100_000)
    assert fine.high - fine.cost == pytest.approx(1.959964 * se)
    assert survival("reversal", "MLP", "regress", plain, moved, 50).outcome == "cannot tell"


# -- 2. which candidates are invariant to T? ------------------------------------------------
def test_deep_sets_is_invariant_to_a_permutation_and_an_mlp_is_not():
    prepared = prepare(sets(), seed=0)
    (probe,) = probes_for("set", prepared.input_shape)
    short = TrainConfig(epochs=3, batch_size=32, lr=3e-3)
    deep_sets = next(c for c in candidates_for("set", task="classify") if c.name == "Deep Sets")
    fitted_sets = fit(Trial(deep_sets, prepared, short, QUIET))
    fitted_mlp = fit(Trial(mlp_candidate("set"), prepared, short, QUIET))
    x, mask, _ = prepared.tensors("val")
    error_sets = candidate_invariance(fitted_sets.model, probe, x, mask)
    error_mlp = candidate_invariance(fitted_mlp.model, probe, x)
    print(f"\ninvariance under a permutation: Deep Sets {error_sets:.1e}, MLP {error_mlp:.2f}")
    assert error_sets < 1e-5
    assert error_mlp > 0.1
    assert candidate_invariance(fitted_sets, probe, x, mask) < 1e-5  # a Fitted, mask passed


# -- 3. the report ------------------------------------------------------------------------------
def test_explain_names_the_fitting_prior():
    (permutation,) = probes_for("set", (6, 2))
    reversal = probes_for("sequence", (16, 1))[1]
    survives = Survival("permutation", "MLP", "accuracy", 0.95, 0.947, 0.3, 2.0, -0.5, 1.1, 4000)
    changes = Survival("reversal", "MLP", "accuracy", 0.98, 0.67, 31.0, 2.0, 25.0, 37.0, 300)
    unsure = Survival("reversal", "MLP", "accuracy", 0.96, 0.94, 1.9, 2.0, -1.1, 4.9, 270)
    report = SymmetryReport(
        "set",
        (
            Finding(permutation, survives, {"Deep Sets": 2e-7, "MLP": 0.8}),
            Finding(reversal, changes, {"MLP": 0.9}),
            Finding(reversal, unsure, {"MLP": 0.9}),
        ),
    )
    first, second, third = explain(report)
    assert third.startswith("Whether the label survives a reversal of the sequence cannot be told from 270")
    assert (
        "95% interval -1.1 to 4.9 points" in third
        and f"about {unsure.rows_to_decide:,} validation rows" in third
    )
    assert first.startswith("The label survives a permutation of the elements")
    assert "costs 0.3 points" in first and "Deep Sets is invariant to it (error 2e-07)" in first
    assert "its prior fits this data" in first and "MLP" not in first
    assert second.startswith("A reversal of the sequence changes the label")
    assert "costs 31.0 points" in second and "would not fit" in second


def test_a_report_on_sets_names_deep_sets():
    prepared = prepare(sets(), seed=0)
    short = TrainConfig(epochs=3, batch_size=32, lr=3e-3)
    deep_sets = next(c for c in candidates_for("set", task="classify") if c.name == "Deep Sets")
    trained = {
        "Deep Sets": fit(Trial(deep_sets, prepared, short, QUIET)),
        "MLP": fit(Trial(mlp_candidate("set"), prepared, short, QUIET)),
    }
    report = symmetry_report(Trial(mlp_candidate("set"), prepared, CONFIG, QUIET), trained)
    (finding,) = report.findings
    assert finding.survival.survives and finding.invariance["Deep Sets"] < 1e-5
    assert finding.invariance["MLP"] > 0.1
    (sentence,) = explain(report)
    print(f"\n{sentence}")
    assert "Deep Sets is invariant to it" in sentence and "its prior fits this data" in sentence
