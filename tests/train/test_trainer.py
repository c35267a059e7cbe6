"""The trainer: exact resume, divergence stop, early stopping, both data paths, checkpoints."""

import itertools
import math
import re

import pytest
import torch
from torch import nn
from torch.utils.data import TensorDataset

from biaslab.data.synthetic import two_spirals
from biaslab.errors import CheckpointError, DivergenceError
from biaslab.train import Checkpointing, TrainConfig, Trainer, TrainingProgress, accuracy


class Killed(Exception):
    """Stands in for the process dying at an arbitrary point."""


def spirals(n=240, seed=0):
    x, y = two_spirals(n, noise=0.1, seed=seed)
    return torch.from_numpy(x), torch.from_numpy(y)


def make_model(seed=0):
    torch.manual_seed(seed)
    # Dropout makes training consume the global RNG, which a resume must restore.
    return nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Dropout(0.2), nn.Linear(32, 2))


def killing_loss(kill_at):
    """Cross-entropy that raises Killed on its ``kill_at``-th training call, or on the
    ``-kill_at``-th validation call when ``kill_at`` is negative."""
    calls = {True: 0, False: 0}

    def loss(out, target):
        training = torch.is_grad_enabled()
        calls[training] += 1
        if calls[training] == abs(kill_at) and training == (kill_at > 0):
            raise Killed
        return nn.functional.cross_entropy(out, target)

    return loss


CFG = TrainConfig(epochs=6, batch_size=32, lr=0.01, schedule="onecycle", patience=3, checkpoint_every=5)


def train(tmp_path, cfg=CFG, kill_at=None, dataset=False, name="ck.pt"):
    train_data, val_data = spirals(240, 0), spirals(120, 1)
    if dataset:
        train_data = TensorDataset(*train_data)
    model = make_model()
    trainer = Trainer(
        model,
        killing_loss(kill_at) if kill_at else None,
        cfg,
        seed=7,
        metrics={"accuracy": accuracy},
        callbacks=[Checkpointing(tmp_path / name)],
    )
    history = trainer.fit(train_data, val_data)
    return model, history, trainer


def assert_same(a, b):
    (ma, ha, _), (mb, hb, _) = a, b
    for pa, pb in zip(ma.state_dict().values(), mb.state_dict().values()):
        assert torch.equal(pa, pb)
    assert ha == hb


@pytest.mark.parametrize("kill_at", [1, 4, 5, 6, 9, 17, 30, 33, -1, -3])
def test_resume_after_kill_gives_identical_result(tmp_path, kill_at):
    reference = train(tmp_path, name="ref.pt")
    assert reference[2].step > 33 and len(reference[1]) >= 3  # the kill points lie inside
    with pytest.raises(Killed):
        train(tmp_path, kill_at=kill_at)
    # A fresh process would start from scratch: new model, new trainer, same checkpoint file.
    torch.manual_seed(12345)  # the global RNG is wherever the dead process left it
    assert_same(reference, train(tmp_path))


def test_resume_is_exact_on_the_dataloader_path(tmp_path):
    reference = train(tmp_path, dataset=True, name="ref.pt")
    with pytest.raises(Killed):
        train(tmp_path, kill_at=13, dataset=True)
    assert_same(reference, train(tmp_path, dataset=True))


def test_tensor_and_dataloader_paths_see_the_same_batches(tmp_path):
    cfg = TrainConfig(epochs=2, batch_size=32, lr=0.01)
    assert_same(train(tmp_path, cfg, name="a.pt"), train(tmp_path, cfg, dataset=True, name="b.pt"))


def test_finished_checkpoint_is_reused_without_training(tmp_path):
    first = train(tmp_path)
    again = train(tmp_path, kill_at=1)  # would raise if a single training step ran
    assert_same(first, again)


def test_divergence_raises_with_learning_rate():
    x = torch.randn(64, 3)
    y = x @ torch.tensor([1.0, -2.0, 3.0]) * 1e3
    model = nn.Linear(3, 1)
    trainer = Trainer(
        model,
        lambda o, t: ((o.squeeze(1) - t) ** 2).mean(),
        TrainConfig(epochs=50, batch_size=16, optimizer="sgd", lr=10.0),
    )
    with pytest.raises(DivergenceError, match=r"learning rate 10\b.*e\.g\. lr=1\b"):
        trainer.fit((x, y))


def test_divergence_can_stop_and_record():
    x = torch.randn(64, 3)
    y = x.sum(1) * 1e3
    trainer = Trainer(
        nn.Linear(3, 1),
        lambda o, t: ((o.squeeze(1) - t) ** 2).mean(),
        TrainConfig(epochs=50, batch_size=16, optimizer="sgd", lr=10.0),
        on_divergence="stop",
    )
    history = trainer.fit((x, y))
    assert trainer.diverged and history[-1]["diverged"]
    assert not math.isfinite(history[-1]["train_loss"])
    assert len(history) < 50


def test_early_stopping_stops_and_restores_best_weights():
    torch.manual_seed(0)
    x, y = torch.randn(200, 20), torch.randint(0, 2, (200,))  # random labels: pure over-fitting
    xv, yv = torch.randn(200, 20), torch.randint(0, 2, (200,))
    model = nn.Sequential(nn.Linear(20, 256), nn.ReLU(), nn.Linear(256, 2))
    cfg = TrainConfig(epochs=200, batch_size=20, lr=3e-3, patience=4)
    trainer = Trainer(model, config=cfg)
    history = trainer.fit((x, y), (xv, yv))
    losses = [r["val_loss"] for r in history]
    best_epoch = losses.index(min(losses)) + 1
    assert len(history) < 200, "early stopping never fired"
    assert len(history) == best_epoch + 4  # exactly `patience` epochs without improvement
    assert trainer.evaluate((xv, yv))["loss"] == pytest.approx(min(losses), rel=1e-6)


def test_corrupt_checkpoint_is_a_clear_error(tmp_path):
    (tmp_path / "ck.pt").write_bytes(b"this is not a checkpoint")
    with pytest.raises(CheckpointError, match="corrupt"):
        train(tmp_path)


def test_checkpoint_of_another_config_is_refused(tmp_path):
    train(tmp_path, TrainConfig(epochs=1, batch_size=32))
    with pytest.raises(CheckpointError, match="does not match"):
        train(tmp_path, TrainConfig(epochs=1, batch_size=64))


def test_checkpoint_loads_with_weights_only(tmp_path):
    train(tmp_path, TrainConfig(epochs=1, batch_size=32, schedule="onecycle"))
    state = torch.load(tmp_path / "ck.pt", weights_only=True)
    assert state["finished"] and state["epoch"] == 1


@pytest.mark.parametrize("schedule", ["cosine", "onecycle", "step"])
def test_schedules_shape_the_learning_rate(schedule):
    cfg = TrainConfig(epochs=4, batch_size=10, lr=0.1, schedule=schedule)
    x, y = torch.randn(100, 2), torch.randint(0, 2, (100,))
    lrs = []

    def loss(out, target):  # called once per step, before the optimizer uses the rate
        lrs.append(trainer.optimizer.param_groups[0]["lr"])
        return nn.functional.cross_entropy(out, target)

    trainer = Trainer(nn.Linear(2, 2), loss, config=cfg)
    trainer.fit((x, y))
    assert len(lrs) == 40
    if schedule == "onecycle":
        peak = lrs.index(max(lrs))
        assert max(lrs) == pytest.approx(0.1, rel=1e-3) and 5 <= peak <= 15  # warm-up, 25%
        assert lrs[0] < 0.01 and lrs[-1] < 1e-3
    elif schedule == "cosine":
        assert lrs[0] == pytest.approx(0.1) and lrs[20] == pytest.approx(0.05, rel=0.05)
        assert all(a >= b for a, b in itertools.pairwise(lrs))
    else:
        assert lrs[0] == pytest.approx(0.1) and lrs[-1] == pytest.approx(1e-3)


def test_no_progress_bar_when_not_a_terminal(capsys, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    trainer = Trainer(nn.Linear(2, 2), config=TrainConfig(epochs=1, batch_size=10))
    trainer.fit((torch.randn(30, 2), torch.randint(0, 2, (30,))))
    assert capsys.readouterr().err == ""  # pytest captures stderr: not a terminal


def test_progress_lines_print_one_line_per_epoch(capsys):
    """For a log file or a pipe: tag, epoch, loss, the validation figure, elapsed time."""
    data = (torch.randn(30, 2), torch.randint(0, 2, (30,)))
    config = TrainConfig(epochs=3, batch_size=10, monitor="val_loss")
    trainer = Trainer(nn.Linear(2, 2), config=config, tag="probe", callbacks=[TrainingProgress("lines")])
    trainer.fit(data, val=data)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 3
    for epoch, line in enumerate(lines, start=1):
        assert re.fullmatch(rf"probe  epoch {epoch}/3  loss \S+  val_loss \S+  \d+\.\d s", line), line


def test_the_progress_bar_shows_the_loss_and_stays(monkeypatch):
    """On a terminal: the running loss and the last validation figure, left on screen."""
    import tqdm.auto

    shown = {}

    class Bar:
        def __init__(self, **kwargs):
            shown["leave"] = kwargs.get("leave", True)

        def set_postfix(self, postfix, refresh=True):
            shown.update(postfix)

        def update(self, n=1):
            shown["steps"] = shown.get("steps", 0) + n

        def close(self):
            shown["closed"] = True

    monkeypatch.setattr(tqdm.auto, "tqdm", Bar)
    data = (torch.randn(30, 2), torch.randint(0, 2, (30,)))
    config = TrainConfig(epochs=2, batch_size=10, monitor="val_accuracy")
    trainer = Trainer(
        nn.Linear(2, 2), config=config, metrics={"accuracy": accuracy}, callbacks=[TrainingProgress(True)]
    )
    trainer.fit(data, val=data)
    assert shown["leave"] and shown["closed"] and shown["steps"] == 6
    assert float(shown["loss"]) > 0 and 0 <= float(shown["val_accuracy"]) <= 1


def test_progress_refuses_an_unknown_mode():
    with pytest.raises(ValueError, match="progress must be True, False, None or 'lines'"):
        TrainingProgress("bars")


@pytest.mark.skipif(
    not __import__("biaslab.train.config").train.config.bf16_supported(), reason="no bf16 CPU"
)
def test_bf16_autocast_is_deterministic_and_differs_from_fp32():
    """bf16 runs under autocast: the same seed gives the same bits within one precision."""
    from biaslab.train import TrainConfig, Trainer

    x = torch.randn(256, 20, generator=torch.Generator().manual_seed(0))
    y = (x[:, 0] > 0).long()

    def train(precision):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(20, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))
        trainer = Trainer(
            model,
            config=TrainConfig(epochs=2, batch_size=64, precision=precision),
            callbacks=[TrainingProgress(False)],
        )
        history = trainer.fit((x, y), (x, y))
        return history, model.state_dict()

    (h1, w1), (h2, w2), (h3, _) = train("bf16"), train("bf16"), train("fp32")
    assert h1 == h2 and all(torch.equal(w1[k], w2[k]) for k in w1)
    assert all(v.dtype == torch.float32 for v in w1.values())  # weights stay fp32
    assert h1[-1]["val_loss"] != h3[-1]["val_loss"]


def test_a_dataset_epoch_leaves_the_global_generator_alone():
    """The DataLoader over a Dataset gets its own generator although its sampler is explicit:
    without one, iterating it draws a base seed from torch's global generator."""
    data = TensorDataset(torch.randn(30, 2), torch.randint(0, 2, (30,)))
    trainer = Trainer(nn.Linear(2, 2), config=TrainConfig(epochs=1, batch_size=10))
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    list(trainer._batches(data, len(data)))  # one epoch's batches, no training step
    assert torch.equal(torch.rand(3), expected)


class ChunkSizes(nn.Module):
    """A linear classifier that notes the rows of every batch it is called on."""

    def __init__(self):
        super().__init__()
        self.linear, self.rows = nn.Linear(2, 2), []

    def forward(self, x):
        self.rows.append(len(x))
        return self.linear(x)


def test_evaluation_chunks_are_the_devices_for_the_plain_loss_and_fixed_for_a_step_function():
    """On a CPU the plain loss is evaluated CPU_EVAL_BATCH rows at a time (the activations stay
    in the caches), the same loss and accuracy as in one chunk to rounding; a step function, which
    may draw random numbers per chunk, keeps EVAL_BATCH on every device."""
    from biaslab.train.config import CPU_EVAL_BATCH, EVAL_BATCH, eval_batch

    assert eval_batch("cpu") == CPU_EVAL_BATCH < EVAL_BATCH and eval_batch("cuda") == EVAL_BATCH
    x, y = spirals(2 * EVAL_BATCH + 50, 0)
    model = ChunkSizes()
    plain = Trainer(model, metrics={"accuracy": accuracy}, device="cpu")
    chunked = plain.evaluate((x, y))
    rows = len(x)
    assert model.rows == [CPU_EVAL_BATCH] * (rows // CPU_EVAL_BATCH) + [rows % CPU_EVAL_BATCH]
    model.rows.clear()
    whole = plain.evaluate((x, y), batch_size=rows)
    assert model.rows == [rows] and chunked["accuracy"] == whole["accuracy"]
    assert chunked["loss"] == pytest.approx(whole["loss"], rel=1e-6)

    def step(model, batch, generator):
        inputs, targets = batch
        outputs = model(inputs)
        return nn.functional.cross_entropy(outputs, targets)

    model.rows.clear()
    Trainer(model, step=step, device="cpu").evaluate((x, y))
    assert model.rows == [EVAL_BATCH, EVAL_BATCH, 50]
