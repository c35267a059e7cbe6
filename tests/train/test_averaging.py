"""The weight average θ̄ against torch's AveragedModel, and the trainer's use of it."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

from biaslab.train import TrainConfig, Trainer
from biaslab.train.averaging import WeightAverage, WeightAveraging


def small_model(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 8), nn.BatchNorm1d(8), nn.Tanh(), nn.Linear(8, 2))


def regression_data(n: int, seed: int):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, generator=gen)
    return x, torch.stack([x.sum(1), x[:, 0] * x[:, 1]], 1)


@pytest.mark.parametrize("decay", [0.0, 0.5, 0.9, 0.999])
def test_weight_average_equals_torch_averaged_model(decay):
    model = small_model()
    ours = WeightAverage(decay, warmup=False)
    reference = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(decay))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = regression_data(64, seed=1)
    for i in range(12):
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x[i * 5 : i * 5 + 16]), y[i * 5 : i * 5 + 16]).backward()
        optimizer.step()
        ours.update(model)
        reference.update_parameters(model)
    assert ours.updates == 12
    for name, p in reference.module.named_parameters():
        torch.testing.assert_close(ours.shadow[name], p, rtol=0, atol=1e-7)


def test_warmup_caps_the_decay_step_by_step():
    """θ̄_u = d_u·θ̄_(u−1) + (1 − d_u)·θ_u with d_u = min(d, (1 + u)/(10 + u)), computed by hand."""
    model = small_model()
    average = WeightAverage(0.99)
    expected = None
    with torch.no_grad():
        for u in range(40):
            for p in model.parameters():
                p.add_(torch.randn_like(p))
            theta = torch.cat([p.flatten() for p in model.parameters()]).clone()
            d = min(0.99, (1 + u) / (10 + u))
            assert average.current_decay() == pytest.approx(d)
            expected = theta if expected is None else d * expected + (1 - d) * theta
            average.update(model)
    got = torch.cat([average.shadow[name].flatten() for name, _ in model.named_parameters()])
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)
    assert WeightAverage(0.99).current_decay() == pytest.approx(0.1)  # the start is forgotten fast
    assert WeightAverage(0.999, warmup=False).current_decay() == 0.999


def test_the_first_update_copies_and_decay_zero_keeps_the_last_weights():
    model = small_model()
    average = WeightAverage(0.0)
    with torch.no_grad():
        for step in range(3):
            for p in model.parameters():
                p.add_(step + 1.0)
            average.update(model)
            for name, p in model.named_parameters():
                assert torch.equal(average.shadow[name], p)


def test_applied_swaps_the_average_in_and_restores_the_weights_even_on_error():
    model = small_model()
    average = WeightAverage(0.5, warmup=False)
    average.update(model)
    own = {k: v.clone() for k, v in model.state_dict().items()}
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(3.0)
    average.update(model)  # θ̄ = (θ + 3θ) / 2 = 2θ
    changed = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(RuntimeError), average.applied(model):
        for name, p in model.named_parameters():
            torch.testing.assert_close(p, 2 * own[name])
        raise RuntimeError("inside")
    for k, v in model.state_dict().items():
        assert torch.equal(v, changed[k]), k


def test_decay_out_of_range_is_refused():
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        WeightAverage(1.0)


def fit(ema_decay: float, val):
    model = small_model(seed=3)
    cfg = TrainConfig(epochs=3, batch_size=16, lr=0.05, ema_decay=ema_decay)
    trainer = Trainer(model, nn.functional.mse_loss, cfg, seed=2)
    history = trainer.fit(regression_data(96, seed=4), val)
    return model, trainer, history


def test_trainer_validates_with_the_average_and_ends_holding_it():
    val = regression_data(40, seed=5)
    model, trainer, history = fit(0.8, val)
    average = trainer.callback(WeightAveraging).average
    assert average.updates == trainer.step == 18
    for name, p in model.named_parameters():  # θ ← θ̄ at the end
        assert torch.equal(p, average.shadow[name]), name
    assert history[-1]["val_loss"] == pytest.approx(trainer.evaluate(val)["loss"], rel=1e-6)
    # ... and the average is not the last iterate: without it the final weights differ.
    plain, _, plain_history = fit(0.0, val)
    assert any(not torch.equal(a, b) for a, b in zip(plain.parameters(), model.parameters()))
    assert [r["train_loss"] for r in plain_history] == [r["train_loss"] for r in history]


def test_ema_decay_is_checked():
    from biaslab.errors import ConfigError

    with pytest.raises(ConfigError, match="ema_decay=1.0"):
        TrainConfig(ema_decay=1.0)
