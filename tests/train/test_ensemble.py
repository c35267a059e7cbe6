"""A batched ensemble trains each member as the Trainer trains it alone (to float rounding), and
refuses in one line what would not split by member."""

from __future__ import annotations

import copy

import pytest
import torch

from biaslab.errors import ConfigError
from biaslab.nn import CNN, MLP
from biaslab.train.callbacks import KeepBest
from biaslab.train.config import TrainConfig
from biaslab.train.ensemble import fit_ensemble
from biaslab.train.trainer import Trainer, accuracy

SEEDS, TAGS = (3, 4, 5), ("a", "b", "c")


def members(build, count=3):
    models = []
    for seed in range(count):
        torch.manual_seed(seed)  # each member its own initial weights
        models.append(build())
    return models


def data(n, shape, classes, seed):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(n, *shape, generator=gen), torch.randint(0, classes, (n,), generator=gen)


def alone(model, config, seed, tag, train, val=None, keep=None):
    """The member trained by itself with the shared Trainer."""
    callbacks = [] if keep is None else [KeepBest(keep, config.min_delta)]
    trainer = Trainer(copy.deepcopy(model), config=config, seed=seed, tag=tag, callbacks=callbacks,
                      metrics={"accuracy": accuracy})  # fmt: skip
    trainer.fit(train, val=val)
    return trainer.model, trainer.history


def assert_same_weights(a, b, tolerance):
    for (name, p), q in zip(a.state_dict().items(), b.state_dict().values()):
        torch.testing.assert_close(p, q, rtol=tolerance, atol=tolerance, msg=name)


@pytest.mark.parametrize(
    "config",
    [
        TrainConfig(epochs=3, batch_size=16, lr=1e-2, patience=0),  # Adam, the last batch shorter
        TrainConfig(
            epochs=2,
            batch_size=16,
            lr=5e-2,
            optimizer="sgd",
            momentum=0.9,
            nesterov=True,
            weight_decay=1e-3,
            schedule="onecycle",
            patience=0,
        ),
        TrainConfig(
            epochs=2,
            batch_size=8,
            lr=1e-2,
            optimizer="adamw",
            weight_decay=0.1,
            max_grad_norm=0.05,
            schedule="cosine",
            patience=0,
        ),  # gradient clipping that bites
    ],
)
def test_each_member_ends_where_the_trainer_takes_it_alone(config):
    models = members(lambda: MLP((6, 16, 3)))
    train = [data(40, (6,), 3, seed) for seed in (10, 11, 12)]  # each member its own rows
    fit = fit_ensemble(models, train, config, SEEDS, TAGS)
    for m, model in enumerate(models):
        single, history = alone(model, config, SEEDS[m], TAGS[m], train[m])
        assert_same_weights(fit.models[m], single, 1e-5)
        losses = [r["train_loss"] for r in fit.histories[m]]
        assert losses == pytest.approx([r["train_loss"] for r in history], rel=1e-5)
    assert fit.best_epochs == [config.epochs] * 3


def test_a_convolutional_member_and_its_best_epoch_on_its_own_validation_rows():
    build = lambda: CNN(1, (4,), num_classes=3, pool=None, global_pool="avg")
    models = members(build, 2)
    train = [data(24, (1, 6, 6), 3, seed) for seed in (20, 21)]
    val = [data(12, (1, 6, 6), 3, seed) for seed in (30, 31)]
    config = TrainConfig(epochs=6, batch_size=8, lr=3e-2, patience=0)
    fit = fit_ensemble(models, train, config, SEEDS[:2], TAGS[:2], val=val, metrics={"accuracy": accuracy},
                       keep_best="val_loss")  # fmt: skip
    for m, model in enumerate(models):
        single, history = alone(model, config, SEEDS[m], TAGS[m], train[m], val[m], keep="val_loss")
        assert_same_weights(fit.models[m], single, 1e-5)
        assert [r["val_loss"] for r in fit.histories[m]] == pytest.approx(
            [r["val_loss"] for r in history], rel=1e-5
        )
        best = min(range(len(history)), key=lambda e: history[e]["val_loss"]) + 1
        assert fit.best_epochs[m] == best


def test_what_does_not_split_by_member_is_one_line():
    train = [data(10, (6,), 3, seed) for seed in (1, 2)]
    config = TrainConfig(epochs=1, batch_size=4, patience=0)
    dropout = lambda: torch.nn.Sequential(torch.nn.Linear(6, 3), torch.nn.Dropout(0.5))
    cases = [
        (members(dropout, 2), train, config, "cannot batch Dropout"),
        ([MLP((6, 8, 3)), MLP((6, 9, 3))], train, config, "one architecture"),
        (members(lambda: MLP((6, 3)), 2), [train[0], data(11, (6,), 3, 3)], config, "one size and shape"),
        (members(lambda: MLP((6, 3)), 2), train, TrainConfig(epochs=1, patience=2), "early stopping"),
        (members(lambda: MLP((6, 3)), 2), train[:1], config, "one of each per member"),
    ]
    for models, sets, cfg, says in cases:
        with pytest.raises(ConfigError, match=says):
            fit_ensemble(models, sets, cfg, SEEDS[: len(models)], TAGS[: len(models)])
