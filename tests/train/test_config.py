"""TrainConfig's checks: every field, the relations between them, and the memory estimate."""

from dataclasses import dataclass

import pytest
import torch

from biaslab.errors import ConfigError
from biaslab.nn import mlp_memory_bytes
from biaslab.train import TrainConfig
from biaslab.train.config import EVAL_BATCH, ClassifierMonitor, Monitor


@dataclass(frozen=True)
class LabConfig(TrainConfig):
    """A lab's config: a classifier trained on n_train examples."""

    monitor: ClassifierMonitor = "val_loss"
    n_train: int = 1000

    def __post_init__(self):
        if self.n_train < 1:
            raise ConfigError(f"n_train={self.n_train}: must be >= 1")
        super().__post_init__()

    def training_set(self):
        return self.n_train, f"n_train={self.n_train}"


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
    LabConfig(monitor="val_accuracy", patience=2)
    assert refusal(LabConfig, monitor="val_acc").startswith(
        "monitor='val_acc': choose one of train_loss, val_loss, val_accuracy"
    )

    @dataclass(frozen=True)
    class Reconstruction(TrainConfig):  # the keys every training logs
        monitor: Monitor = "val_loss"

    Reconstruction(monitor="train_loss")
    assert "choose one of train_loss, val_loss" in refusal(Reconstruction, monitor="val_accuracy")
    # a bare TrainConfig (what TrainConfig.of takes of a lab's checked config) takes any key
    assert TrainConfig.of(LabConfig(monitor="val_accuracy")).monitor == "val_accuracy"


def test_batch_against_the_training_set_after_every_field():
    LabConfig(batch_size=1000)
    assert refusal(LabConfig, batch_size=1001).startswith("batch_size=1001: must be <= 1000")
    assert "(n_train=1000)" in refusal(LabConfig, batch_size=1001)
    assert refusal(LabConfig, n_train=0).startswith("n_train=0")  # not blamed on batch_size
    assert refusal(LabConfig, batch_size=0, n_train=0).startswith("n_train=0")
    TrainConfig(batch_size=10**6)  # no training set to relate to


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
        train_config.TrainConfig.of(train_config.TrainConfig(), precision="fp8")
