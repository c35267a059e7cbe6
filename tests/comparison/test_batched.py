"""A comparison's trainings of one candidate fitted together equal the same trials fitted one by
one (to float rounding), and what cannot be batched is fitted one by one exactly as before."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from biaslab.comparison import models
from biaslab.comparison.batched import fit_together
from biaslab.comparison.fitting import Trial, fit
from biaslab.comparison.protocol import prepare
from biaslab.train.config import TrainConfig
from biaslab.train.recipes import TrainSetup
from tests.comparison.test_protocol import LINEAR, MLP, Candidate, Records, images, table

CNN_SHIFTED = Candidate(
    "CNN + augmentation", "locality", "torch", models.image_cnn, augment=models.random_shifts
)
CONFIG = TrainConfig(epochs=4, batch_size=16, lr=1e-2)


def trials_of(candidate, prepared, count=3):
    """A learning curve's trials: nested subsets repeated to the whole training set, own setups."""
    n = prepared.n_train
    return [
        replace(
            Trial(candidate, prepared, CONFIG),
            prepared=prepared.train_subset(list(range(n // (k + 1))), repeat_to=n),
            setup=TrainSetup(tag=f"curve-{k}", seed=k, progress=False, logger=Records()),
        )
        for k in range(count)
    ]


@pytest.mark.parametrize("candidate", [MLP, CNN_SHIFTED], ids=["mlp", "cnn-augmented"])
def test_trials_fitted_together_equal_the_same_trials_fitted_one_by_one(candidate):
    prepared = prepare(images(), seed=0)
    together = fit_together(trials_of(candidate, prepared))
    alone = [fit(trial) for trial in trials_of(candidate, prepared)]
    for a, b in zip(together, alone):
        assert a.best_epoch == b.best_epoch and a.parameters == b.parameters and a.engine == "torch"
        for p, q in zip(a.model.state_dict().values(), b.model.state_dict().values()):
            torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-4)
        got = [r["val_accuracy"] for r in a.history]
        assert got == pytest.approx([r["val_accuracy"] for r in b.history])


def test_each_training_s_records_reach_its_own_logger():
    prepared = prepare(images(), seed=0)
    trials = trials_of(MLP, prepared)
    fit_together(trials)
    for trial in trials:
        records = trial.setup.logger.records
        assert [r["epoch"] for r in records] == [1, 2, 3, 4] and {r["tag"] for r in records} == {
            trial.setup.tag
        }
        assert all("val_accuracy" in r and "lr" in r for r in records)


@pytest.mark.parametrize(
    "case",
    ["estimator", "regression", "one trial", "time limit", "early stopping"],
)
def test_what_cannot_be_batched_is_fitted_one_by_one_exactly(case):
    prepared = prepare(table(task="regress") if case == "regression" else table(), seed=0)
    candidate = LINEAR if case == "estimator" else MLP
    trials = trials_of(candidate, prepared, 1 if case == "one trial" else 2)
    if case == "time limit":
        trials = [replace(t, setup=replace(t.setup, time_limit_s=60.0)) for t in trials]
    if case == "early stopping":
        trials = [replace(t, config=replace(CONFIG, patience=2)) for t in trials]
    together = fit_together(trials)
    alone = [fit(trial) for trial in trials]
    for a, b in zip(together, alone):
        if a.engine == "torch":
            for p, q in zip(a.model.state_dict().values(), b.model.state_dict().values()):
                assert torch.equal(p, q)
        assert a.best_epoch == b.best_epoch


def test_the_members_shifts_at_once_are_each_member_s_own_call():
    x = torch.randn(3, 5, 1, 8, 8, generator=torch.Generator().manual_seed(0))  # 3 members' batches
    seeds = (7, 8, 9)
    at_once = models.random_shifts_of_members(x, [torch.Generator().manual_seed(s) for s in seeds])
    one_by_one = [models.random_shifts(x[m], torch.Generator().manual_seed(s)) for m, s in enumerate(seeds)]
    assert torch.equal(at_once, torch.stack(one_by_one))
    assert not torch.equal(at_once, x)  # something moved


def test_a_candidate_s_own_fit_trains_with_its_curve_and_equals_it_trained_apart():
    from biaslab.comparison.curves import fit_with_curve, learning_curve

    prepared = prepare(images(), seed=0)
    own = Trial(MLP, prepared, CONFIG, TrainSetup(tag="mlp", seed=5, progress=False))

    def setup_for(size, seed):
        return TrainSetup(tag=f"mlp-{size}-{seed}", seed=seed, progress=False)

    fitted, curve = fit_with_curve(own, setup_for, points=2, seeds=(0, 1))
    apart = fit(own)
    assert fitted.best_epoch == apart.best_epoch
    for p, q in zip(fitted.model.state_dict().values(), apart.model.state_dict().values()):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-4)
    alone = learning_curve(own, setup_for, points=2, seeds=(0, 1))
    assert curve.sizes == alone.sizes and curve.val_errors == pytest.approx(alone.val_errors)
