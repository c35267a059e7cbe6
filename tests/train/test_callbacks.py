"""The trainer's hooks: their order, stopping from a callback, a callback's state across a resume,
keep-the-best without early stopping, and the device a training runs on."""

from __future__ import annotations

from collections import namedtuple

import pytest
import torch
from torch import nn

from biaslab.errors import ConfigError
from biaslab.train import Checkpointing, KeepBest, TrainConfig, Trainer, TrainingProgress
from biaslab.train.steps import move_to


def data(seed, n=48):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, generator=gen)
    return x, (x[:, 0] > 0).long()


def model(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.Linear(16, 2))


class Recorder:
    """Writes every hook it sees, with its own name, to a shared journal."""

    def __init__(self, name, journal):
        self.name, self.journal = name, journal

    def on_fit_start(self, trainer):
        self.journal.append((self.name, "fit_start"))

    def on_step_end(self, trainer):
        self.journal.append((self.name, f"step {trainer.step}"))

    def on_validation_start(self, trainer):
        self.journal.append((self.name, "validation_start"))

    def on_validation_end(self, trainer, record):
        self.journal.append((self.name, f"validation_end {record['epoch']}"))

    def on_fit_end(self, trainer):
        self.journal.append((self.name, "fit_end"))


def test_start_hooks_run_in_order_and_end_hooks_in_reverse():
    journal = []
    cfg = TrainConfig(epochs=2, batch_size=24)
    trainer = Trainer(model(), config=cfg, callbacks=[Recorder("a", journal), Recorder("b", journal)])
    trainer.fit(data(0), data(1))
    expected = [("a", "fit_start"), ("b", "fit_start")]
    for epoch, steps in ((1, (1, 2)), (2, (3, 4))):
        for step in steps:
            expected += [("b", f"step {step}"), ("a", f"step {step}")]
        expected += [("a", "validation_start"), ("b", "validation_start")]
        expected += [("b", f"validation_end {epoch}"), ("a", f"validation_end {epoch}")]
    expected += [("b", "fit_end"), ("a", "fit_end")]
    assert journal == expected


class StopAfter:
    def __init__(self, epochs):
        self.epochs = epochs

    def on_validation_end(self, trainer, record):
        trainer.should_stop = trainer.epoch >= self.epochs


def test_a_callback_stops_the_training():
    trainer = Trainer(model(), config=TrainConfig(epochs=10, batch_size=24), callbacks=[StopAfter(3)])
    history = trainer.fit(data(0), data(1))
    assert len(history) == 3 and trainer.epoch == 3 and trainer.finished


class CountSteps:
    """A stateful callback: the number of steps it has seen, checked against the trainer's."""

    state_key = "count_steps"

    def __init__(self):
        self.seen = 0

    def on_step_end(self, trainer):
        self.seen += 1
        if self.seen == 5 and getattr(self, "die", False):
            raise KeyboardInterrupt  # the process is killed after its checkpoint of step 4

    def state_dict(self):
        return {"seen": self.seen}

    def load_state_dict(self, state, trainer):
        if state["seen"] != trainer.step:
            raise ValueError(f"seen={state['seen']}, not step={trainer.step}")
        self.seen = state["seen"]


def test_a_callback_state_is_saved_and_restored(tmp_path):
    cfg = TrainConfig(epochs=3, batch_size=16, checkpoint_every=2)
    counter = CountSteps()
    counter.die = True
    with pytest.raises(KeyboardInterrupt):
        Trainer(model(), config=cfg, callbacks=[Checkpointing(tmp_path / "ck.pt"), counter]).fit(data(0))
    resumed = CountSteps()
    trainer = Trainer(model(), config=cfg, callbacks=[Checkpointing(tmp_path / "ck.pt"), resumed])
    trainer.fit(data(0))
    assert resumed.seen == trainer.step == 9
    state = torch.load(tmp_path / "ck.pt", weights_only=True)
    assert state["callbacks"]["count_steps"] == {"seen": 9}


def test_keep_best_without_early_stopping_trains_every_epoch_and_ends_on_the_best():
    torch.manual_seed(0)
    x, y = torch.randn(100, 10), torch.randint(0, 2, (100,))  # random labels: it over-fits
    xv, yv = torch.randn(100, 10), torch.randint(0, 2, (100,))
    net = nn.Sequential(nn.Linear(10, 128), nn.ReLU(), nn.Linear(128, 2))
    cfg = TrainConfig(epochs=30, batch_size=10, lr=3e-3)  # patience=0: no early stopping
    trainer = Trainer(net, config=cfg, callbacks=[KeepBest("val_loss")])
    history = trainer.fit((x, y), (xv, yv))
    losses = [r["val_loss"] for r in history]
    assert len(history) == 30 and losses.index(min(losses)) < 29  # the best is not the last
    assert trainer.evaluate((xv, yv))["loss"] == pytest.approx(min(losses), rel=1e-6)
    assert trainer.callback(KeepBest).best.epoch == losses.index(min(losses)) + 1


def test_an_explicit_cpu_device_gives_the_default_run():
    cfg = TrainConfig(epochs=2, batch_size=16)
    a, b = model(), model()
    Trainer(a, config=cfg).fit(data(0))
    trainer = Trainer(b, config=cfg, device="cpu", callbacks=[TrainingProgress(False)])
    trainer.fit(data(0))
    assert trainer.device == torch.device("cpu")
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))


def test_a_precision_the_device_lacks_is_refused():
    with pytest.raises(ConfigError, match="precision=fp16: runs on CUDA, not on this cpu"):
        Trainer(model(), config=TrainConfig(precision="fp16"), device="cpu")


def test_move_to_keeps_the_structure_of_a_batch():
    Pair = namedtuple("Pair", "x y")
    batch = {"a": (torch.ones(2), [torch.zeros(1), 3]), "b": Pair(torch.ones(1), "label")}
    moved = move_to(batch, torch.device("cpu"))
    assert isinstance(moved["b"], Pair) and moved["b"].y == "label"
    assert moved["a"][1][1] == 3 and torch.equal(moved["a"][0], torch.ones(2))
    assert moved["a"][0] is batch["a"][0]  # on its own device nothing is copied


MONITORED = [
    ("val_loss", True),
    ("val_mae", True),
    ("val_error", True),
    ("val_accuracy", False),
    ("val_auroc", False),
]


@pytest.mark.parametrize(("monitor", "minimise"), MONITORED)
def test_best_minimises_errors_and_maximises_scores(monitor, minimise):
    from biaslab.train.callbacks import Best

    best = Best(monitor)
    assert best.improved({monitor: 1.0}, 1) is True
    assert best.improved({monitor: 0.5}, 2) is minimise
    assert best.improved({"other": 0.1}, 3) is None
    assert best.epoch == (2 if minimise else 1)


class FakeClock:
    """time.monotonic that advances ``per_call`` seconds each time it is read."""

    def __init__(self, per_call):
        self.now, self.per_call = 0.0, per_call

    def __call__(self):
        self.now += self.per_call
        return self.now


def test_a_time_limit_stops_after_the_epoch_that_passes_it_and_keeps_the_best():
    """The clock is read at the fit's start and after each validation: with 1 s per reading,
    epochs 1, 2, 3, 4 end 1, 2, 3, 4 s in; the fourth is the first past a 3.5 s limit."""
    from biaslab.train.callbacks import TimeLimit

    limit = TimeLimit(3.5, clock=FakeClock(1.0))
    cfg = TrainConfig(epochs=30, batch_size=16, lr=3e-2)
    trainer = Trainer(model(), config=cfg, callbacks=[KeepBest("val_loss"), limit])
    history = trainer.fit(data(0), data(1))
    assert len(history) == 4 and limit.stopped
    losses = [r["val_loss"] for r in history]
    assert trainer.evaluate(data(1))["loss"] == pytest.approx(min(losses), rel=1e-6)

    unlimited = TimeLimit(1e9)  # the fit ends at its last epoch: not "stopped"
    Trainer(model(), config=TrainConfig(epochs=2, batch_size=16), callbacks=[unlimited]).fit(data(0), data(1))
    assert not unlimited.stopped
    with pytest.raises(ValueError, match="positive number of seconds"):
        TimeLimit(0)


def test_a_setup_with_a_time_limit_adds_the_callback():
    from biaslab.train.callbacks import TimeLimit
    from biaslab.train.recipes import TrainSetup

    trainer = TrainSetup(time_limit_s=5.0).trainer(model(), TrainConfig(epochs=1))
    assert trainer.callback(TimeLimit).seconds == 5.0
    assert TrainSetup().trainer(model(), TrainConfig(epochs=1)).callback(TimeLimit) is None


def loss_on(xy):
    x, y = xy
    return lambda net: nn.functional.cross_entropy(net(x), y)


def test_measure_at_steps_equals_the_model_trained_that_many_steps():
    """48 rows in batches of 16: steps 3 and 6 end epochs 1 and 2, which a training of 1 or 2
    epochs (same seed, constant learning rate) reaches on its own."""
    from biaslab.train.callbacks import MeasureAtSteps

    cfg = TrainConfig(epochs=3, batch_size=16, lr=3e-2)
    probe = MeasureAtSteps([6, 3, 100], loss_on(data(1)))
    Trainer(model(), config=cfg, callbacks=[probe]).fit(data(0))
    assert probe.steps == [3, 6, 100] and sorted(probe.values) == [3, 6]
    for epochs, step in ((1, 3), (2, 6)):
        alone = Trainer(model(), config=TrainConfig(epochs=epochs, batch_size=16, lr=3e-2))
        alone.fit(data(0))
        with torch.no_grad():
            assert probe.values[step] == pytest.approx(float(loss_on(data(1))(alone.model)), rel=1e-6)


def test_measure_at_steps_measures_in_eval_mode_and_restores_train_mode():
    from biaslab.train.callbacks import MeasureAtSteps

    seen = []

    def measure(net):
        seen.append((net.training, torch.is_grad_enabled()))
        return 0.0

    net = nn.Sequential(nn.Linear(3, 16), nn.Dropout(0.5), nn.Linear(16, 2))
    probe = MeasureAtSteps([1, 2], measure)
    Trainer(net, config=TrainConfig(epochs=1, batch_size=16), callbacks=[probe]).fit(data(0))
    assert seen == [(False, False), (False, False)]
    with pytest.raises(ValueError, match="a step to measure at"):
        MeasureAtSteps([0], measure)


def test_measure_at_steps_survives_a_resume(tmp_path):
    from biaslab.train.callbacks import MeasureAtSteps

    cfg = TrainConfig(epochs=3, batch_size=16, lr=3e-2, checkpoint_every=2)
    steps = [2, 3, 7, 9]
    whole = MeasureAtSteps(steps, loss_on(data(1)))
    Trainer(model(), config=cfg, callbacks=[whole]).fit(data(0))
    killed, counter = MeasureAtSteps(steps, loss_on(data(1))), CountSteps()
    counter.die = True
    with pytest.raises(KeyboardInterrupt):
        Trainer(model(), config=cfg, callbacks=[Checkpointing(tmp_path / "ck.pt"), killed, counter]).fit(
            data(0)
        )
    resumed = MeasureAtSteps(steps, loss_on(data(1)))
    callbacks = [Checkpointing(tmp_path / "ck.pt"), resumed, CountSteps()]
    Trainer(model(), config=cfg, callbacks=callbacks).fit(data(0))
    assert resumed.values == pytest.approx(whole.values, rel=1e-6) and sorted(resumed.values) == steps
    with pytest.raises(ValueError, match="values="):
        MeasureAtSteps(steps, None).load_state_dict({"values": {5: 1.0}}, namedtuple("T", "step")(9))
