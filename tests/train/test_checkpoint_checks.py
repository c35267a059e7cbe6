"""A resumed training checks its checkpoint before it applies any of it.

Each doctored checkpoint is a real one (a tiny training killed mid-epoch) with one value made
impossible; the refused load must name the field, change neither the model nor the global RNG,
and leave the metrics log alone (no rewind). Undoctored checkpoints, saved at every point the
loop saves, pass the checks and resume to the uninterrupted run's result.
"""

from __future__ import annotations

import copy
import math
import pickle
import warnings
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from biaslab.errors import CheckpointError
from biaslab.train import Checkpointing, LogRecords, TrainConfig, Trainer, checkpoint
from biaslab.train.averaging import WeightAveraging
from biaslab.train.callbacks import EarlyStopping, KeepBest


class Killed(Exception):
    """Stands in for the process dying at an arbitrary point."""


class RecordingLogger:
    def __init__(self):
        self.records, self.rewinds = [], []

    def log(self, record):
        self.records.append(record)

    def rewind(self, step):
        self.rewinds.append(step)


class Opaque:
    """Any class instance: not plain data, so ``weights_only=True`` refuses it."""


# 60 examples in batches of 16: 4 steps per epoch, the last one of 12 examples.
CFG = TrainConfig(
    epochs=3, batch_size=16, lr=0.05, schedule="cosine", patience=2, checkpoint_every=3, ema_decay=0.9
)
STEPS_PER_EPOCH = 4


def data(seed=0, n=60):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 2, generator=gen)
    return x, (x[:, 0] * x[:, 1] > 0).long()


def make_model(seed=0):
    torch.manual_seed(seed)
    # Dropout draws from the global RNG: a resume restores it, a refused load must not touch it.
    return nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Dropout(0.2), nn.Linear(8, 2))


def killing_loss(kill_at):
    """Cross-entropy that raises Killed on its ``kill_at``-th training call."""
    calls = [0]

    def loss(out, target):
        if torch.is_grad_enabled():
            calls[0] += 1
            if calls[0] == kill_at:
                raise Killed
        return nn.functional.cross_entropy(out, target)

    return loss


def trainer(path, model=None, loss=None, logger=None):
    callbacks = [Checkpointing(path)] + ([LogRecords(logger)] if logger is not None else [])
    return Trainer(model or make_model(), loss, CFG, seed=7, callbacks=callbacks)


@pytest.fixture(scope="module")
def killed_state(tmp_path_factory):
    """A checkpoint of a training killed on its 11th step: the last save is the one
    checkpoint_every made after step 9 (epoch 2, one batch into it, two history records)."""
    path = tmp_path_factory.mktemp("killed") / "ck.pt"
    with pytest.raises(Killed):
        trainer(path, loss=killing_loss(11)).fit(data(0), data(1))
    state = torch.load(path, weights_only=True)
    assert (state["step"], state["epoch"], state["batch_in_epoch"]) == (9, 2, 1)
    assert len(state["history"]) == 2 and not state["finished"]
    return state


def _set(key, value):
    def doctor(state):
        state[key] = value

    return doctor


def _history(index, key, value):
    def doctor(state):
        state["history"][index][key] = value

    return doctor


def _nested(part, key, value):
    def doctor(state):
        where = state if part in state else state["callbacks"]
        where[part][key] = value

    return doctor


def _drop_shadow_key(state):
    shadow = state["callbacks"]["weight_average"]["shadow"]
    shadow.pop(next(iter(shadow)))


def _extra_record(state):
    state["history"].append(dict(state["history"][-1], epoch=3))


DOCTORED = {
    "step negative": (_set("step", -5), "step=-5"),
    "epoch past the config": (_set("epoch", 99), "epoch=99"),
    "batch past the epoch": (_set("batch_in_epoch", 999), "batch_in_epoch=999"),
    "step inconsistent": (_set("step", 10), "step=10"),
    "step a bool": (_set("step", True), "step=True"),
    "epoch_count negative": (_set("epoch_count", -1), "epoch_count=-1"),
    "history of strings": (_set("history", ["a", "b"]), r"history\[0\]='a'"),
    "history of numbers": (_set("history", [1, 2]), r"history\[0\]=1"),
    "history step a string": (_history(1, "step", "x"), r"history\[1\].*step='x'"),
    "history step None": (_history(0, "step", None), r"history\[0\].*step=None"),
    "history step a bool": (_history(0, "step", True), r"history\[0\].*step=True"),
    "history epoch wrong": (_history(1, "epoch", 7), r"history\[1\].*epoch=7"),
    "history step decreasing": (_history(1, "step", 2), r"history\[1\].*step=2"),
    "history step past step": (_history(0, "step", 100), r"history\[0\].*step=100"),
    "history too short": (_set("history", []), "history"),
    "history too long": (_extra_record, "history"),
    "history value junk": (_history(0, "train_loss", [1, 2]), r"history\[0\].*train_loss"),
    "train_time nan": (_set("train_time", math.nan), "train_time=nan"),
    "train_time negative": (_set("train_time", -1.0), "train_time=-1.0"),
    "epoch_loss_sum inf": (_set("epoch_loss_sum", math.inf), "epoch_loss_sum=inf"),
    "epoch_term_sums junk": (_set("epoch_term_sums", {"kl": "x"}), "epoch_term_sums"),
    "epoch_term_sums not a dict": (_set("epoch_term_sums", [1.0]), "epoch_term_sums"),
    "finished too early": (_set("finished", True), "finished=True"),
    "diverged without a record": (_set("diverged", True), "diverged"),
    "epoch_gen_state junk": (_set("epoch_gen_state", torch.zeros(3, dtype=torch.uint8)), "epoch_gen_state"),
    "scheduler ahead": (_nested("scheduler", "last_epoch", 1000), "last_epoch=1000"),
    "rng junk": (_nested("rng", "numpy", "junk"), "rng"),
    "early stopping best a string": (_nested("early_stopping", "best", "x"), "early_stopping.*best"),
    "early stopping bad_epochs negative": (
        _nested("early_stopping", "bad_epochs", -3),
        "early_stopping.*bad_epochs",
    ),
    "early stopping best_epoch past epoch": (
        _nested("early_stopping", "best_epoch", 5),
        "early_stopping.*best_epoch",
    ),
    "early stopping best_state junk": (
        _nested("keep_best", "best_state", "junk"),
        "keep_best.*best_state",
    ),
    "early stopping best_state lost": (
        _nested("keep_best", "best_state", None),
        "keep_best.*best_state",
    ),
    "keep-best best past epoch": (_nested("keep_best", "best_epoch", 5), "keep_best.*best_epoch"),
    "a callback's state missing": (lambda state: state["callbacks"].pop("keep_best"), "callbacks"),
    "weight average shadow junk": (_nested("weight_average", "shadow", "junk"), "weight_average.*shadow"),
    "weight average shadow key missing": (_drop_shadow_key, "weight_average.*shadow"),
    "weight average updates negative": (
        _nested("weight_average", "updates", -1),
        "weight_average.*updates",
    ),
    "weight average updates off": (_nested("weight_average", "updates", 4), "weight_average.*updates"),
}


def assert_refused(path, match):
    """A fresh trainer refuses ``path`` with a one-line CheckpointError matching ``match``,
    changing neither the model nor the global RNG, and never rewinding the logger."""
    model = make_model(seed=1)
    weights = copy.deepcopy(model.state_dict())
    logger = RecordingLogger()
    fresh = trainer(path, model=model, logger=logger)
    torch.manual_seed(12345)
    rng = torch.get_rng_state()
    with pytest.raises(CheckpointError, match=match) as info:
        fresh.fit(data(0), data(1))
    message = str(info.value)
    assert "\n" not in message and str(path) in message
    assert message.endswith("delete it to restart 'train' from scratch")
    assert all(torch.equal(weights[k], v) for k, v in model.state_dict().items())
    assert torch.equal(torch.get_rng_state(), rng)
    assert logger.rewinds == [] and logger.records == []
    assert (fresh.step, fresh.epoch, fresh.history) == (0, 0, [])


@pytest.mark.parametrize("case", list(DOCTORED))
def test_doctored_checkpoint_is_refused_before_anything_is_applied(tmp_path, killed_state, case):
    doctor, match = DOCTORED[case]
    state = copy.deepcopy(killed_state)
    doctor(state)
    path = tmp_path / "ck.pt"
    torch.save(state, path)
    assert_refused(path, match)


def test_undoctored_copy_of_the_killed_checkpoint_resumes(tmp_path, killed_state):
    """The doctored cases start from a checkpoint that is accepted as it is."""
    path = tmp_path / "ck.pt"
    torch.save(killed_state, path)
    logger = RecordingLogger()
    history = trainer(path, logger=logger).fit(data(0), data(1))
    assert logger.rewinds == [9] and len(history) == 3


@pytest.mark.parametrize(
    "write",
    [
        lambda f: pickle.dump({"fingerprint": "x", "model": Opaque()}, f),
        # the legacy format warns of a protocol above 2 (the default 2 refuses without a warning)
        lambda f: torch.save({"model": Opaque()}, f, _use_new_zipfile_serialization=False, pickle_protocol=4),
    ],
    ids=["pickle", "legacy torch.save"],
)
def test_plain_pickle_checkpoint_is_one_line_without_warnings(tmp_path, write):
    path = tmp_path / "ck.pt"
    with open(path, "wb") as f:
        write(f)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert_refused(path, "corrupt or not a biaslab checkpoint")
    assert [str(w.message) for w in caught] == []


@pytest.mark.parametrize(
    "make, junk",
    [
        (lambda: EarlyStopping(patience=2), {"best": "x"}),
        (lambda: EarlyStopping(patience=2), {"bad_epochs": 2}),  # would have stopped
        (lambda: EarlyStopping(patience=2), {"stopped_epoch": 1}),  # stopped without reason
        (lambda: KeepBest(), {"best_state": {"0.weight": torch.zeros(3)}, "best": 0.5}),
        (lambda: KeepBest(), {"best_epoch": 7}),  # past the trainer's epoch
        (lambda: WeightAveraging(0.9), {"shadow": "junk"}),
        (lambda: WeightAveraging(0.9), {"updates": True}),
        (lambda: WeightAveraging(0.9), {"updates": 3}),  # not one per step
        (lambda: WeightAveraging(0.9), {"shadow": {"0.weight": torch.zeros(8, 2, dtype=torch.float64)}}),
    ],
    ids=[
        "best a string",
        "bad_epochs at the patience",
        "stopped without bad epochs",
        "best_state of another model",
        "best_epoch past the epoch",
        "shadow junk",
        "updates a bool",
        "updates off the steps",
        "shadow of another model",
    ],
)
def test_state_of_a_callback_is_checked_before_it_is_kept(make, junk):
    trainer = SimpleNamespace(model=make_model(), epoch=1, step=1, stopping=False, should_stop=False)
    source = make()
    if isinstance(source, WeightAveraging):
        source.on_step_end(trainer)
    else:
        source.on_validation_end(trainer, {"val_loss": 1.0})
    state = {**source.state_dict(), **junk}
    target = make()
    before = repr(target.state_dict())
    with pytest.raises(ValueError, match=next(iter(junk))):
        target.load_state_dict(state, trainer)
    assert repr(target.state_dict()) == before
    target.load_state_dict(source.state_dict(), trainer)  # the undoctored state loads
    assert repr(target.state_dict()) == repr(source.state_dict())


# -- undoctored checkpoints, saved at every point, pass and resume exactly ------------------------


def regression(seed, n=64):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, generator=gen)
    return x, x.sum(1) * 1e3


def random_labels(seed, n=64):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(n, 6, generator=gen), torch.randint(0, 2, (n,), generator=gen)


def seeded(build):
    torch.manual_seed(0)
    return build()


def mse(out, target):
    return ((out.squeeze(1) - target) ** 2).mean()


SCENARIOS = {
    # checkpoint_every=2 with 4 steps per epoch: a save after an epoch's last batch, before its
    # validation (batch_in_epoch == steps per epoch), as well as the end-of-epoch saves.
    "every point": dict(
        cfg=TrainConfig(
            epochs=3,
            batch_size=16,
            lr=0.05,
            schedule="onecycle",
            patience=2,
            checkpoint_every=2,
            ema_decay=0.9,
        ),
        model=lambda: make_model(3),
        train=data(0),
        val=data(1),
    ),
    "early stopping": dict(
        cfg=TrainConfig(epochs=40, batch_size=16, lr=0.05, patience=1, checkpoint_every=3, schedule="step"),
        model=lambda: seeded(lambda: nn.Sequential(nn.Linear(6, 64), nn.ReLU(), nn.Linear(64, 2))),
        train=random_labels(0),
        val=random_labels(1),
    ),
    "divergence": dict(
        # diverges on step 119, the third batch of epoch 30
        cfg=TrainConfig(epochs=50, batch_size=16, optimizer="sgd", lr=1.0, checkpoint_every=7),
        model=lambda: seeded(lambda: nn.Linear(3, 1)),
        train=regression(0),
        val=None,
        loss=mse,
        on_divergence="stop",
    ),
}


def run(scenario, path):
    s = SCENARIOS[scenario]
    model = s["model"]()
    t = Trainer(
        model,
        s.get("loss"),
        s["cfg"],
        seed=3,
        callbacks=[Checkpointing(path)],
        on_divergence=s.get("on_divergence", "raise"),
    )
    history = t.fit(s["train"], s["val"])
    return model, history, t


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_every_saved_checkpoint_passes_and_resumes_exactly(tmp_path, monkeypatch, scenario):
    saved = []
    real_save = checkpoint.save

    def save(path, state):
        real_save(path, state)
        saved.append(path.read_bytes())

    monkeypatch.setattr(checkpoint, "save", save)
    model, history, reference = run(scenario, tmp_path / "ref.pt")
    monkeypatch.undo()  # the resumed runs' saves are not points of the reference
    if scenario == "every point":
        assert reference.epoch == 3 and not reference.diverged
    elif scenario == "early stopping":
        assert reference.epoch < 40 and reference.callback(EarlyStopping).stopped_epoch == reference.epoch
    else:
        assert reference.diverged and history[-1]["diverged"] and reference.epoch >= 1
    points = set()
    for i, blob in enumerate(saved):
        path = tmp_path / f"resume{i}.pt"
        path.write_bytes(blob)
        state = torch.load(path, weights_only=True)
        torch.manual_seed(999)  # wherever the dead process left the global RNG
        resumed, resumed_history, _ = run(scenario, path)
        for a, b in zip(model.state_dict().values(), resumed.state_dict().values(), strict=True):
            assert torch.equal(a, b)
        assert str(resumed_history) == str(history)  # str: nan == nan
        batch = state["batch_in_epoch"]
        where = "epoch end" if batch == 0 else "last batch" if batch == STEPS_PER_EPOCH else "mid-epoch"
        points.add((where, state["finished"]))
    expected = {
        # checkpoint_every=2 saves after an epoch's last batch, before its validation, too
        "every point": {
            ("mid-epoch", False),
            ("last batch", False),
            ("epoch end", False),
            ("epoch end", True),
        },
        "early stopping": {("mid-epoch", False), ("epoch end", False), ("epoch end", True)},
        "divergence": {("mid-epoch", False), ("epoch end", False), ("mid-epoch", True)},
    }
    assert expected[scenario] <= points
