"""TrainConfig's checks: every field, the relations between them, and the memory estimate."""

import math
from dataclasses import dataclass

import pytest
import torch

from biaslab.config import apply_overrides, check_batch_fits, check_range, field_types, unused_keys
from biaslab.errors import ConfigError
from biaslab.nn import mlp_memory_bytes
from biaslab.train import TrainConfig
from biaslab.train.config import EVAL_BATCH, ClassifierTraining, LossTraining, training_without


@dataclass(frozen=True)
class LabConfig:
    """A lab's config: a classifier's training (a part) on n_train examples."""

    train: ClassifierTraining = ClassifierTraining()
    n_train: int = 1000

    def __post_init__(self):
        check_range(self, "n_train", 1)
        check_batch_fits(self)

    def training_set(self):
        return self.n_train, f"n_train={self.n_train}"


def lab(**keys) -> LabConfig:
    """A LabConfig with flat keys set as ``--set`` sets them (a training key in its part)."""
    return apply_overrides(LabConfig(), keys)


def refusal(cls=TrainConfig, **values) -> str:
    with pytest.raises(ConfigError) as info:
        cls(**values)
    return str(info.value)


@pytest.mark.parametrize(
    "values, message",
    [
        ({"epochs": 0}, "epochs=0: must be >= 1"),
        ({"batch_size": -1}, "batch_size=-1: must be >= 1"),
        ({"lr": 0.0}, "lr=0.0: must be > 0"),
        ({"momentum": -0.1}, "momentum=-0.1: must be >= 0 and < 1"),
        ({"optimizer": "sgd", "momentum": 1.0}, "momentum=1.0: must be >= 0 and < 1"),
        ({"weight_decay": -1e-4}, "weight_decay=-0.0001: must be >= 0"),
        ({"warmup": 0.0}, "warmup=0.0: must be > 0 and < 1 (a fraction of the steps)"),
        ({"warmup": 1.0}, "warmup=1.0: must be > 0 and < 1"),
        ({"patience": -1}, "patience=-1: must be >= 0 (0 switches early stopping off)"),
        ({"min_delta": -1.0}, "min_delta=-1.0: must be >= 0"),
        ({"max_grad_norm": 0.0}, "max_grad_norm=0.0: must be > 0 (or none: no clipping)"),
        ({"checkpoint_every": -2}, "checkpoint_every=-2: must be >= 0 (0: once per epoch)"),
    ],
)
def test_each_field_names_itself_and_its_range(values, message):
    assert refusal(**values).startswith(message)


def test_optimizer_relations():
    TrainConfig(optimizer="sgd", momentum=0.9, nesterov=True)
    assert refusal(momentum=0.9).startswith("momentum=0.9: only optimizer=sgd uses it")
    assert refusal(optimizer="adamw", nesterov=True).startswith("nesterov=true: only optimizer=sgd")
    assert refusal(optimizer="sgd", nesterov=True).startswith("nesterov=true: needs momentum > 0")


def test_monitor_is_one_of_the_keys_the_lab_logs():
    lab(monitor="val_accuracy", patience=2)
    assert refusal(ClassifierTraining, monitor="val_acc").startswith(
        "monitor='val_acc': choose one of train_loss, val_loss, val_accuracy"
    )
    with pytest.raises(ConfigError, match="monitor='val_acc': choose one of"):
        lab(monitor="val_acc")
    LossTraining(monitor="train_loss")
    assert "choose one of train_loss, val_loss" in refusal(LossTraining, monitor="val_accuracy")
    assert TrainConfig(monitor="val_mae").monitor == "val_mae"  # a bare TrainConfig takes any key


def test_batch_against_the_training_set_after_every_field():
    lab(batch_size=1000)
    with pytest.raises(ConfigError, match=r"batch_size=1001: must be <= 1000, .*\(n_train=1000\)"):
        lab(batch_size=1001)
    # a field's own error comes before any relation: n_train is not blamed on batch_size, and with
    # both wrong the part (built first) names its own
    with pytest.raises(ConfigError, match="^n_train=0: must be >= 1"):
        lab(n_train=0)
    with pytest.raises(ConfigError, match="^batch_size=0: must be >= 1"):
        lab(batch_size=0, n_train=0)
    TrainConfig(batch_size=10**6)  # no training set to relate to


def test_a_part_without_some_keys():
    Sweep = training_without("Sweep", ClassifierTraining, lr="one training per rate")
    assert Sweep.__module__ == __name__ and "lr" not in field_types(Sweep)
    assert unused_keys(Sweep) == {"lr": "one training per rate"}
    part = Sweep(epochs=3, monitor="val_accuracy")
    one = part.training(lr=0.5)
    assert type(one) is ClassifierTraining and (one.epochs, one.lr, one.monitor) == (3, 0.5, "val_accuracy")
    assert refusal(Sweep, epochs=0).startswith("epochs=0: must be >= 1")  # the base's checks
    assert refusal(Sweep, monitor="val_acc").startswith("monitor='val_acc'")
    with pytest.raises(TypeError, match="ClassifierTraining has no key"):
        training_without("Bad", ClassifierTraining, learning_rate="typo")

    @dataclass(frozen=True)
    class SweepConfig:
        train: Sweep = Sweep()  # noqa: RUF009 (frozen, made by training_without)

    with pytest.raises(ConfigError, match="'lr' is not used by the sweep: one training per rate"):
        apply_overrides(SweepConfig(), {"lr": "0.1"}, context="the sweep")
    assert apply_overrides(SweepConfig(), {"epochs": "4"}).train.epochs == 4


def test_optimizer_states_and_mlp_memory():
    assert TrainConfig(optimizer="sgd").optimizer_states() == 0
    assert TrainConfig(optimizer="sgd", momentum=0.5).optimizer_states() == 1
    assert TrainConfig(optimizer="adamw").optimizer_states() == 2
    cfg = TrainConfig(batch_size=64)
    sizes = (784, 256, 10)
    assert cfg.mlp_memory(sizes) == mlp_memory_bytes(sizes, EVAL_BATCH, optimizer_states=2)
    big = TrainConfig(batch_size=4096, optimizer="sgd")
    both = sum(mlp_memory_bytes(s, 4096, optimizer_states=0) for s in (sizes, sizes[::-1]))
    assert big.mlp_memory(sizes, sizes[::-1]) == both


def test_optimizers_are_fused_on_cpu():
    import torch

    from biaslab.train.config import TrainConfig, make_optimizer

    params = [torch.nn.Parameter(torch.randn(3, 3))]
    for name in ("sgd", "adam", "adamw"):
        opt = make_optimizer(TrainConfig(optimizer=name), params)
        assert opt.defaults["fused"] is True, name


def test_precision_follows_the_device(monkeypatch):
    import pytest

    from biaslab.errors import ConfigError
    from biaslab.train import config as train_config

    assert train_config.TrainConfig().precision == "fp32"
    monkeypatch.setattr(train_config, "bf16_supported", lambda: False)
    assert train_config.autocast_dtype("fp32", "cpu") is None
    assert train_config.autocast_dtype("bf16", "cuda") is torch.bfloat16
    assert train_config.autocast_dtype("fp16", "cuda") is torch.float16
    with pytest.raises(ConfigError, match="precision=bf16: runs on CUDA or a CPU with native bfloat16"):
        train_config.autocast_dtype("bf16", "cpu")
    with pytest.raises(ConfigError, match="precision=fp16: runs on CUDA, not on this mps"):
        train_config.autocast_dtype("fp16", "mps")
    monkeypatch.setattr(train_config, "bf16_supported", lambda: True)
    assert train_config.autocast_dtype("bf16", "cpu") is torch.bfloat16
    with pytest.raises(ConfigError, match="choose one of fp32, bf16, fp16"):
        train_config.TrainConfig(precision="fp8")


def test_a_one_cycle_schedule_runs_however_few_the_steps():
    from biaslab.train.config import make_scheduler

    for steps in range(1, 12):
        for warmup in (0.05, 0.25, 0.3, 0.9):
            optimizer = torch.optim.SGD(torch.nn.Linear(1, 1).parameters(), lr=0.1)
            schedule = make_scheduler(TrainConfig(schedule="onecycle", warmup=warmup), optimizer, steps)
            rates = []
            for _ in range(steps):
                optimizer.step()
                schedule.step()
                rates.append(optimizer.param_groups[0]["lr"])
            assert all(math.isfinite(r) and r >= 0 for r in rates), (steps, warmup, rates)
