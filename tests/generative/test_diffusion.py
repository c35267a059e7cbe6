"""Tests for biaslab.generative.diffusion: schedules, the closed-form forward jump against the
step-by-step chain, L_simple, and the DDPM / DDIM samplers (their algebra, timesteps and noise)."""

import itertools
import math

import numpy as np
import pytest
import torch
from scipy import stats

from biaslab.generative.diffusion import DDIM, DDPM, NoiseSchedule, diffusion_loss, diffusion_step


def point_mass_denoiser(c: torch.Tensor, schedule: NoiseSchedule):
    """The exact ε-predictor for data that is the single point ``c``: ε = (x_t − √ᾱ_t c)/√(1 − ᾱ_t)."""

    def model(x, t):
        a = schedule.alpha_bars[t].to(x.dtype).view(-1, *[1] * (x.dim() - 1))
        return (x - a.sqrt() * c) / (1 - a).sqrt()

    return model


def small_mlp(seed=0):
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(3, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
    return lambda x, t: net(torch.cat([x, t[:, None].float() / 100], dim=1))


# -- schedules ---------------------------------------------------------------------------------


def test_linear_and_cosine_schedules():
    lin = NoiseSchedule.linear(1000)
    assert len(lin) == 1000 and lin.betas[0] == pytest.approx(1e-4) and lin.betas[-1] == pytest.approx(0.02)
    assert torch.allclose(lin.alpha_bars, torch.cumprod(1 - lin.betas, 0))
    assert lin.alpha_bar(-1) == 1.0 and lin.alpha_bar(999) == pytest.approx(4.04e-5, rel=0.01)
    cos = NoiseSchedule.cosine(1000)
    f = lambda t: math.cos((t / 1000 + 0.008) / 1.008 * math.pi / 2) ** 2
    for t in (0, 100, 500, 900):  # ᾱ_t = f(t + 1)/f(0) away from the clipped end (index t is step t + 1)
        assert cos.alpha_bar(t) == pytest.approx(f(t + 1) / f(0), rel=1e-9)
    assert bool((cos.betas <= 0.999).all()) and bool((torch.diff(cos.alpha_bars) < 0).all())
    with pytest.raises(ValueError, match=r"\(0, 1\)"):
        NoiseSchedule([0.1, 1.0])
    with pytest.raises(ValueError, match="non-empty"):
        NoiseSchedule([])


def test_timesteps_run_from_the_noisiest_to_the_data_and_are_decreasing():
    s = NoiseSchedule.linear(1000)
    for steps in (1, 2, 20, 50, 999, 1000):
        ts = s.timesteps(steps)
        assert len(ts) == steps and ts[0] == 999 and all(a > b for a, b in itertools.pairwise(ts))
        if steps > 1:
            assert ts[-1] == 0
    assert s.timesteps(1000) == list(range(999, -1, -1))
    with pytest.raises(ValueError, match="1..1000"):
        s.timesteps(1001)
    for steps in (2, 50, 500, 1000):  # quadratic: the same ends, denser near the data
        quad = s.timesteps(steps, "quadratic")
        assert len(set(quad)) == steps and quad[0] == 999 and quad[-1] == 0
        assert all(a > b for a, b in itertools.pairwise(quad))
    quad, lin = s.timesteps(50, "quadratic"), s.timesteps(50)
    assert sum(t < 100 for t in quad) > 3 * sum(t < 100 for t in lin)
    with pytest.raises(ValueError, match="spacing"):
        s.timesteps(10, "log")


# -- the forward process --------------------------------------------------------------------------


@pytest.mark.parametrize("t", [0, 9, 49, 99])
def test_closed_form_jump_matches_iterating_the_chain(t):
    """x_t from eq. 4 and x_t from t+1 applications of eq. 2 have the same distribution."""
    s = NoiseSchedule.linear(100, 1e-3, 0.05)
    gen = torch.Generator().manual_seed(t)
    n = 20_000
    x0 = torch.tensor([[2.0, -1.0]]).expand(n, 2)
    x = x0.clone()
    for step in range(t + 1):
        x = s.forward_step(x, torch.full((n,), step), torch.randn(n, 2, generator=gen))
    jumped = s.q_sample(x0, torch.full((n,), t), torch.randn(n, 2, generator=gen))
    a = s.alpha_bar(t)
    for d in range(2):
        for sample in (x[:, d], jumped[:, d]):  # both have mean √ᾱ x0 and variance 1 − ᾱ
            assert float(sample.mean()) == pytest.approx(
                math.sqrt(a) * float(x0[0, d]), abs=4 * math.sqrt((1 - a) / n)
            )
            assert float(sample.var()) == pytest.approx(1 - a, rel=0.05)
        assert stats.ks_2samp(x[:, d].numpy(), jumped[:, d].numpy()).pvalue > 1e-3


def test_q_sample_checks_its_timesteps():
    s = NoiseSchedule.linear(10)
    with pytest.raises(ValueError, match="0..9"):
        s.q_sample(torch.zeros(2, 3), torch.tensor([0, 10]), torch.zeros(2, 3))
    with pytest.raises(ValueError, match=r"\(N,\)"):
        s.q_sample(torch.zeros(2, 3), torch.tensor([0]), torch.zeros(2, 3))


def test_diffusion_loss_is_the_mse_to_the_noise_at_the_noised_input():
    s = NoiseSchedule.linear(50)
    seen = {}

    def model(x_t, t):
        seen["x_t"], seen["t"] = x_t, t
        return torch.zeros_like(x_t)

    x0 = torch.randn(64, 2, generator=torch.Generator().manual_seed(0))
    loss, pred, eps = diffusion_loss(model, x0, s, torch.Generator().manual_seed(1))
    assert torch.equal(seen["x_t"], s.q_sample(x0, seen["t"], eps))
    assert float(loss) == pytest.approx(float((eps**2).mean())) and torch.equal(pred, torch.zeros_like(eps))
    gen = torch.Generator().manual_seed(1)  # the step function draws the same from the same generator
    out = diffusion_step(s)(model, (x0,), gen)
    assert float(out.loss) == pytest.approx(float(loss)) and torch.equal(out.targets, eps)


# -- the samplers ---------------------------------------------------------------------------------


def test_ddpm_update_equals_algorithm_2_without_clipping():
    s = NoiseSchedule.linear(100)
    sampler = DDPM(s)
    x, eps = torch.randn(5, 2), torch.randn(5, 2)
    for t in (99, 50, 1, 0):
        a, beta = s.alpha_bar(t), float(s.betas[t])
        algorithm_2 = (x - beta / math.sqrt(1 - a) * eps) / math.sqrt(1 - beta)
        torch.testing.assert_close(sampler._update(x, eps, t, t - 1), algorithm_2, rtol=1e-5, atol=1e-5)
    assert sampler._sigma(0, -1) == 0.0 and sampler._sigma(10, 9) == pytest.approx(
        math.sqrt(float(s.betas[10]))
    )
    posterior = DDPM(s, variance="posterior")._sigma(10, 9) ** 2
    assert posterior == pytest.approx(float(s.betas[10]) * (1 - s.alpha_bar(9)) / (1 - s.alpha_bar(10)))


def test_one_reverse_step_is_algorithm_2s_line_4():
    """x_{t-1} = (x_t − β_t/√(1 − ᾱ_t) ε_θ)/√α_t + σ_t z, with z unused at the last step (t = 0)."""
    s = NoiseSchedule.linear(100)
    x, eps, z = torch.randn(3, 5, 2, dtype=torch.float64)
    for t in (99, 50, 1, 0):
        a, beta = s.alpha_bar(t), float(s.betas[t])
        sigma = math.sqrt(beta) if t > 0 else 0.0
        line_4 = (x - beta / math.sqrt(1 - a) * eps) / math.sqrt(1 - beta) + sigma * z
        torch.testing.assert_close(DDPM(s).step(x, eps, t, t - 1, z), line_4, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(DDPM(s).step(x, eps, 0, -1, None), DDPM(s).step(x, eps, 0, -1, z))


def test_ddim_with_eta_one_over_all_steps_is_ddpm_with_the_posterior_variance():
    s = NoiseSchedule.linear(60)
    model = small_mlp()
    ddpm = DDPM(s, variance="posterior").sample(model, (16, 2), seed=3)
    ddim = DDIM(s, steps=60, eta=1.0).sample(model, (16, 2), seed=3)
    torch.testing.assert_close(ddim.x, ddpm.x, rtol=1e-4, atol=1e-4)
    assert ddpm.evaluations == 60 and DDIM(s, steps=12).sample(model, (4, 2), seed=0).evaluations == 12


@pytest.mark.parametrize(
    "steps, spacing",
    [(1, "linear"), (7, "linear"), (50, "linear"), (200, "linear"), (7, "quadratic"), (50, "quadratic")],
)
def test_ddim_walks_the_point_mass_trajectory_at_each_listed_noise_level(steps, spacing):
    """With the exact denoiser of a point mass c and η = 0, the state entering timestep t is
    √ᾱ_t c + √(1 − ᾱ_t) e for one fixed e: a wrong previous timestep puts it at the wrong level."""
    s = NoiseSchedule.linear(200)
    c = torch.tensor([1.5, -0.5])
    sampler = DDIM(s, steps=steps, spacing=spacing)
    calls = []
    denoiser = point_mass_denoiser(c, s)

    def model(x, t):
        calls.append(int(t[0]))
        return denoiser(x, t)

    out = sampler.sample(model, (8, 2), seed=5, keep=[*sampler.timesteps, -1])
    assert calls == sampler.timesteps and calls[0] == 199 and calls[-1] == (0 if steps > 1 else 199)
    x_T = out.snapshots[199]
    e = (x_T - math.sqrt(s.alpha_bar(199)) * c) / math.sqrt(1 - s.alpha_bar(199))
    for t in sampler.timesteps:
        expected = math.sqrt(s.alpha_bar(t)) * c + math.sqrt(1 - s.alpha_bar(t)) * e
        torch.testing.assert_close(out.snapshots[t], expected, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(out.x, c.expand(8, 2), rtol=1e-4, atol=1e-4)  # the last step lands on c
    torch.testing.assert_close(out.snapshots[-1], out.x)


def test_sampling_is_reproducible_from_the_seed_and_independent_of_the_batch_size():
    s = NoiseSchedule.linear(40)
    model = small_mlp(1)
    for sampler in (DDPM(s), DDIM(s, steps=10, eta=0.5), DDIM(s, steps=10)):
        whole = sampler.sample(model, (20, 2), seed=7, batch_size=20).x
        torch.testing.assert_close(
            sampler.sample(model, (20, 2), seed=7, batch_size=3).x, whole, rtol=0, atol=1e-6
        )
        assert torch.equal(sampler.sample(model, (20, 2), seed=7, batch_size=20).x, whole)
        assert not torch.allclose(sampler.sample(model, (20, 2), seed=8).x, whole)


def test_clipping_bounds_the_predicted_clean_sample():
    s = NoiseSchedule.linear(30)
    wild = lambda x, t: -10 * torch.ones_like(x)  # implies an x̂_0 far outside [-1, 1]
    for sampler in (DDPM(s, clip=1.0), DDIM(s, steps=5, clip=1.0)):
        x = torch.randn(4, 2)
        assert float(sampler._x0(x, wild(x, None), 20).abs().max()) <= 1.0
        assert float(sampler.sample(wild, (6, 2), seed=0).x.abs().max()) <= 1.0 + 1e-5


def test_bad_sampler_arguments():
    s = NoiseSchedule.linear(10)
    with pytest.raises(ValueError, match="variance"):
        DDPM(s, variance="large")
    with pytest.raises(ValueError, match="eta"):
        DDIM(s, eta=-1)
    with pytest.raises(ValueError, match="steps"):
        DDIM(s, steps=0)
    assert np.isfinite(DDIM(s, steps=3).sample(small_mlp(), (2, 2), seed=0).x.numpy()).all()
