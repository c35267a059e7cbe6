"""Tests for biaslab.evaluate.adversarial: FGSM and PGD against torchattacks, their guarantees
(bounded, in range, loss raised, no side effects) and the accuracy-under-attack curve."""

from itertools import pairwise

import pytest
import torch
import torch.nn.functional as F
import torchattacks
from torch import nn

from biaslab.evaluate.adversarial import accuracy_under_attack, fgsm, pgd, pgd_attack

N, CLASSES = 240, 3


def small_cnn() -> nn.Module:
    """Batch norm and dropout make the eval-mode switch visible: in train mode they change f(x)."""
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.Flatten(),
        nn.Dropout(0.3),
        nn.Linear(4 * 8 * 8, CLASSES),
    )


@pytest.fixture(scope="module")
def data():
    """Three noisy templates in [0, 1], float32 images (N, 1, 8, 8)."""
    g = torch.Generator().manual_seed(0)
    templates = torch.rand(CLASSES, 1, 8, 8, generator=g)
    y = torch.arange(N) % CLASSES
    x = (templates[y] + 0.35 * torch.randn(N, 1, 8, 8, generator=g)).clamp(0.0, 1.0)
    return x, y


@pytest.fixture(scope="module")
def trained(data):
    """A CNN trained for a moment (well under a second), left in train mode."""
    x, y = data
    torch.manual_seed(0)
    model = small_cnn()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(60):
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
    model.zero_grad(set_to_none=True)
    return model


def mean_loss(model, x, y) -> float:
    model.eval()
    with torch.no_grad():
        return float(F.cross_entropy(model(x), y))


@pytest.mark.parametrize("eps", [0.0, 0.03, 0.1, 0.3])
def test_fgsm_equals_torchattacks(trained, data, eps):
    x, y = data
    trained.train()
    ours = fgsm(trained, x, y, eps)
    assert trained.training  # restored; torchattacks restores train mode too
    theirs = torchattacks.FGSM(trained, eps=eps)(x, y)
    assert torch.allclose(ours, theirs, rtol=0.0, atol=1e-6)


@pytest.mark.parametrize(("eps", "alpha", "steps"), [(0.05, 0.01, 7), (0.1, 0.04, 3), (0.2, 0.25, 1)])
def test_pgd_without_random_start_equals_torchattacks(trained, data, eps, alpha, steps):
    x, y = data
    ours = pgd(trained, x, y, eps, alpha, steps, random_start=False)
    theirs = torchattacks.PGD(trained, eps=eps, alpha=alpha, steps=steps, random_start=False)(x, y)
    assert torch.allclose(ours, theirs, rtol=0.0, atol=1e-6)


def test_pgd_random_start_equals_torchattacks_seeded_alike(trained, data):
    """torchattacks draws its start from the global RNG; a generator with the same seed gives the
    same uniform draws on the CPU, so the whole attack agrees."""
    x, y = data
    ours = pgd(trained, x, y, 0.1, 0.02, 5, generator=torch.Generator().manual_seed(7))
    torch.manual_seed(7)
    theirs = torchattacks.PGD(trained, eps=0.1, alpha=0.02, steps=5, random_start=True)(x, y)
    assert torch.allclose(ours, theirs, rtol=0.0, atol=1e-6)


def test_pgd_random_start_is_bounded_deterministic_and_leaves_the_global_rng(trained, data):
    x, y = data
    eps = 0.1
    state = torch.get_rng_state()
    a = pgd(trained, x, y, eps, 0.02, 3, generator=torch.Generator().manual_seed(1))
    b = pgd(trained, x, y, eps, 0.02, 3, generator=torch.Generator().manual_seed(1))
    c = pgd(trained, x, y, eps, 0.02, 3, generator=torch.Generator().manual_seed(2))
    default_1, default_2 = pgd(trained, x, y, eps, 0.02, 3), pgd(trained, x, y, eps, 0.02, 3)
    assert torch.equal(torch.get_rng_state(), state)
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert torch.equal(default_1, default_2)  # no generator: a fresh one seeded 0 each call
    for adv in (a, c):
        assert (adv - x).abs().max() <= eps + 1e-6
        assert adv.min() >= 0.0 and adv.max() <= 1.0


@pytest.mark.parametrize("attack", ["fgsm", "pgd"])
@pytest.mark.parametrize("eps", [0.0, 0.05, 0.5])
def test_perturbation_is_bounded_and_eps_zero_gives_x(trained, data, attack, eps):
    x, y = data
    adv = fgsm(trained, x, y, eps) if attack == "fgsm" else pgd(trained, x, y, eps, 0.02, 4)
    assert adv.shape == x.shape and adv.dtype == x.dtype and not adv.requires_grad
    assert (adv - x).abs().max() <= eps + 1e-6
    assert adv.min() >= 0.0 and adv.max() <= 1.0
    if eps == 0.0:
        assert torch.equal(adv, x)


def test_attacks_raise_the_loss_and_pgd_at_least_as_much_as_fgsm(trained, data):
    x, y = data
    clean = mean_loss(trained, x, y)
    for eps in (0.05, 0.1):
        loss_fgsm = mean_loss(trained, fgsm(trained, x, y, eps), y)
        loss_pgd = mean_loss(trained, pgd(trained, x, y, eps, alpha=eps / 4, steps=10), y)
        assert loss_fgsm > clean
        assert loss_pgd >= loss_fgsm
    trained.train()


def test_no_side_effects_on_modes_gradients_parameters_or_inputs(data):
    x, y = data
    torch.manual_seed(1)
    model = small_cnn()
    model.train()
    model[1].eval()  # mixed modes: batch norm frozen, the rest training
    F.cross_entropy(model(x[:8]), y[:8]).backward()
    model[0].bias.grad = None  # one gradient absent, the others present
    grads = {name: None if p.grad is None else p.grad.clone() for name, p in model.named_parameters()}
    params = {name: p.detach().clone() for name, p in model.named_parameters()}
    modes = [m.training for m in model.modules()]
    x_before = x.clone()
    x_leaf = x.clone().requires_grad_(True)
    fgsm(model, x_leaf, y, 0.1)
    pgd(model, x, y, 0.1, 0.03, 3)
    accuracy_under_attack(model, x, y, fgsm, [0.0, 0.1], batch_size=50)
    assert [m.training for m in model.modules()] == modes
    for name, p in model.named_parameters():
        assert torch.equal(p, params[name])
        assert (p.grad is None) if grads[name] is None else torch.equal(p.grad, grads[name])
    assert x_leaf.grad is None and torch.equal(x, x_before)


def test_works_inside_no_grad(trained, data):
    x, y = data
    expected = fgsm(trained, x, y, 0.1)
    with torch.no_grad():
        assert torch.equal(fgsm(trained, x, y, 0.1), expected)
        assert pgd(trained, x, y, 0.1, 0.05, 2).shape == x.shape


def test_clamp_none_and_custom_bounds(trained, data):
    x, y = data
    eps = 0.2
    free = fgsm(trained, x, y, eps, clamp=None)
    assert free.min() < 0.0 and free.max() > 1.0  # range clipping off: full ε steps everywhere
    assert torch.allclose((free - x).abs().max(), torch.tensor(eps))
    # Standardized inputs: float bounds, and per-channel tensor bounds of shape (1, C, 1, 1).
    z = (x - 0.5) / 0.25
    low, high = -2.0, 2.0
    per_channel = (torch.full((1, 1, 1, 1), low), torch.full((1, 1, 1, 1), high))
    for clamp in ((low, high), per_channel, (low, None)):
        for adv in (fgsm(trained, z, y, eps, clamp=clamp), pgd(trained, z, y, eps, 0.05, 3, clamp=clamp)):
            assert adv.min() >= low and (z - adv).abs().max() <= eps + 1e-6
            if clamp[1] is not None:
                assert adv.max() <= high
    assert torch.equal(
        fgsm(trained, z, y, eps, clamp=(low, high)), fgsm(trained, z, y, eps, clamp=per_channel)
    )


def test_accuracy_under_attack_starts_at_clean_accuracy_and_falls(trained, data):
    x, y = data
    trained.eval()
    with torch.no_grad():
        clean = float((trained(x).argmax(1) == y).float().mean())
    trained.train()
    eps_values = [0.0, 0.02, 0.05, 0.1, 0.2]

    def attack(model, xb, yb, eps):
        return pgd(
            model, xb, yb, eps, alpha=2.5 * eps / 5, steps=5, generator=torch.Generator().manual_seed(0)
        )

    curve = accuracy_under_attack(trained, x, y, attack, eps_values, batch_size=64)
    assert list(curve) == eps_values
    assert curve[0.0] == clean and clean > 0.8
    accuracies = list(curve.values())
    assert all(b <= a + 2 / N for a, b in pairwise(accuracies))  # non-increasing, up to noise
    assert accuracies[-1] < clean - 0.3
    # Batching bounds memory without changing the answer (FGSM is deterministic).
    one = accuracy_under_attack(trained, x, y, fgsm, eps_values, batch_size=N)
    many = accuracy_under_attack(trained, x, y, fgsm, eps_values, batch_size=7)
    assert all(abs(one[e] - many[e]) <= 2 / N for e in eps_values)


def test_pgd_attack_is_pgd_with_alpha_scaled_to_the_budget(trained, data):
    x, y = data
    for eps in (0.05, 0.2):
        expected = pgd(trained, x, y, eps, alpha=2.5 * eps / 4, steps=4)
        torch.testing.assert_close(pgd_attack(steps=4)(trained, x, y, eps), expected, rtol=0, atol=0)
    expected = pgd(trained, x, y, 0.1, alpha=1.0 * 0.1 / 3, steps=3)
    torch.testing.assert_close(pgd_attack(3, step_scale=1.0)(trained, x, y, 0.1), expected, rtol=0, atol=0)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda m, x, y: fgsm(m, x, y, -0.1), "eps must be"),
        (lambda m, x, y: fgsm(m, x, y, float("nan")), "eps must be"),
        (lambda m, x, y: pgd(m, x, y, -1.0, 0.1, 3), "eps must be"),
        (lambda m, x, y: pgd(m, x, y, 0.1, 0.0, 3), "alpha"),
        (lambda m, x, y: pgd(m, x, y, 0.1, 0.01, 0), "steps"),
        (lambda m, x, y: pgd(m, x, y, 0.1, 0.01, 2.5), "steps"),
        (lambda m, x, y: fgsm(m, x, y, 0.1, clamp=(1.0, 0.0)), "clamp"),
        (lambda m, x, y: accuracy_under_attack(m, x, y, fgsm, [0.1], batch_size=0), "batch_size"),
        (lambda m, x, y: accuracy_under_attack(m, x, y, fgsm, [-0.1]), "eps must be"),
        (lambda m, x, y: accuracy_under_attack(m, x, y[:-1], fgsm, [0.1]), "same positive number"),
        (lambda m, x, y: pgd_attack(0), "steps"),
        (lambda m, x, y: pgd_attack(3, step_scale=0.0), "step_scale"),
    ],
)
def test_invalid_arguments_raise_value_error(trained, data, call, match):
    x, y = data
    with pytest.raises(ValueError, match=match):
        call(trained, x, y)
