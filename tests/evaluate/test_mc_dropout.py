"""Tests for biaslab.evaluate.mc_dropout: masks drawn as torch's nn.Dropout draws them, the
average over masks tends to the weight-scaled pass where that is exact, modes restored."""

import pytest
import torch
from torch import nn

from biaslab.evaluate.mc_dropout import mc_dropout_probs, weight_scaled_probs


def test_one_sample_is_torchs_own_training_pass_with_the_same_seed():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(0.4), nn.Linear(16, 3)).eval()
    x = torch.randn(5, 6)
    (ours,) = mc_dropout_probs(model, x, samples=1, seed=7)
    torch.manual_seed(7)
    model.train()
    expected = torch.softmax(model(x), dim=-1)
    torch.testing.assert_close(ours, expected)


def test_before_a_linear_map_the_mask_average_is_the_weight_scaled_pass():
    """E_m[W (m ⊙ h) / q] = W h: the Monte-Carlo mean of the logits converges to eval()'s at 1/√T."""
    torch.manual_seed(1)
    linear = nn.Linear(20, 4)
    model = nn.Sequential(nn.Dropout(0.5), linear)
    x = torch.randn(3, 20)
    with torch.no_grad():
        exact = linear(x)  # (3, 4): the weight-scaled logits

        def logits_mean(t):  # the masks' average of the logits, not the probabilities
            torch.manual_seed(t)
            model.train()
            return torch.stack([model(x) for _ in range(t)]).mean(0)

        errors = [float((logits_mean(t) - exact).abs().max()) for t in (100, 10_000)]
    assert errors[1] < errors[0] / 4  # 100x the samples: about 10x closer (1/√T)
    assert errors[1] < 0.1


def test_modes_are_restored_and_batch_norm_is_not_touched():
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Dropout(0.3), nn.Linear(8, 2)).eval()
    stats = model[1].running_mean.clone()
    probs = mc_dropout_probs(model, torch.randn(10, 4), samples=3, seed=0)
    assert probs.shape == (3, 10, 2) and not model.training and not model[2].training
    assert torch.equal(model[1].running_mean, stats)  # batch norm stayed in evaluation mode
    torch.testing.assert_close(probs.sum(-1), torch.ones(3, 10))
    assert not torch.equal(probs[0], probs[1])  # fresh masks per sample
    model.train()
    weight_scaled_probs(model, torch.randn(10, 4))
    assert model.training and model[1].training


def test_the_seed_fixes_the_masks_and_leaves_the_global_generator_alone():
    model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 2))
    x = torch.randn(6, 4)
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    a = mc_dropout_probs(model, x, samples=4, seed=5)
    after = torch.rand(1)
    assert torch.equal(before, after)
    assert torch.equal(a, mc_dropout_probs(model, x, samples=4, seed=5))


@pytest.mark.parametrize("samples", [0, 2.0, True])
def test_bad_sample_counts_and_models_without_dropout_are_one_line(samples):
    model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 2))
    with pytest.raises(ValueError, match="samples="):
        mc_dropout_probs(model, torch.randn(2, 4), samples=samples, seed=0)
    with pytest.raises(ValueError, match="no dropout layer"):
        mc_dropout_probs(nn.Linear(4, 2), torch.randn(2, 4), samples=2, seed=0)
