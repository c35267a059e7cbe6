"""The pendulum against Hamilton's equations by autograd and the small-angle closed form; RK4's
order and its energy conservation; initial states of the energies asked for."""

import math

import pytest
import torch

from biaslab.physics.systems import Pendulum, rk4_step, rollout


def test_the_dynamics_are_hamiltons_equations_of_the_energy():
    pendulum = Pendulum(gravity=9.81, length=1.7)
    state = torch.randn(16, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    theta = state[:, 0].clone().requires_grad_()
    p = (pendulum.length**2 * state[:, 1]).clone().requires_grad_()  # angular momentum L² ω
    hamiltonian = (
        p**2 / (2 * pendulum.length**2) + pendulum.gravity * pendulum.length * (1 - torch.cos(theta))
    ).sum()
    dh_dtheta, dh_dp = torch.autograd.grad(hamiltonian, (theta, p))
    derivative = pendulum.derivative(state)
    torch.testing.assert_close(derivative[:, 0], dh_dp, rtol=0, atol=1e-12)  # dθ/dt = ∂H/∂p
    torch.testing.assert_close(pendulum.length**2 * derivative[:, 1], -dh_dtheta, rtol=0, atol=1e-12)  # dp/dt
    torch.testing.assert_close(pendulum.energy(state), _energy_by_hand(pendulum, state), rtol=0, atol=1e-12)


def _energy_by_hand(pendulum, state):
    return torch.tensor(
        [
            0.5 * pendulum.length**2 * w**2 + pendulum.gravity * pendulum.length * (1 - math.cos(t))
            for t, w in state.tolist()
        ],
        dtype=torch.float64,
    )


def test_a_small_swing_follows_the_harmonic_closed_form():
    pendulum = Pendulum(gravity=9.81, length=2.0)
    start = torch.tensor([[1e-3, 0.0]], dtype=torch.float64)
    dt, steps = 0.01, 500
    states = rollout(pendulum.derivative, start, dt, steps)  # (501, 1, 2)
    times = torch.arange(steps + 1, dtype=torch.float64) * dt
    harmonic = 1e-3 * torch.cos(math.sqrt(pendulum.gravity / pendulum.length) * times)
    torch.testing.assert_close(states[:, 0, 0], harmonic, rtol=0, atol=1e-9)  # sin θ ≈ θ to 1e-10 here


def test_rk4_is_fourth_order_and_keeps_the_energy():
    pendulum = Pendulum()
    start = torch.tensor([[1.2, 0.5], [-0.3, 2.0]], dtype=torch.float64)

    def error(dt):  # the end state after 1 s, against a 1e-4-step reference
        steps = round(1.0 / dt)
        return (rollout(pendulum.derivative, start, dt, steps)[-1] - reference).abs().max().item()

    reference = rollout(pendulum.derivative, start, 1e-4, 10_000)[-1]
    assert error(0.02) / error(0.01) == pytest.approx(16, rel=0.15)  # halving dt divides the error by 2⁴
    energies = pendulum.energy(rollout(pendulum.derivative, start, 0.01, 2000).reshape(-1, 2)).reshape(
        2001, 2
    )
    drift = ((energies - energies[0]).abs().max(dim=0).values / energies[0]).max().item()
    assert drift < 1e-6  # 20 s of swinging


def test_initial_states_have_the_energies_asked_for_and_are_seeded():
    pendulum = Pendulum(length=0.5)
    states = pendulum.initial_states(5000, seed=1, max_energy=2.0)
    energy = pendulum.energy(states)
    assert energy.min() >= 0 and energy.max() <= 2.0 + 1e-9
    assert energy.mean().item() == pytest.approx(1.0, rel=0.05)  # uniform in [0, 2]
    assert torch.equal(states, pendulum.initial_states(5000, seed=1, max_energy=2.0))
    swinging = pendulum.initial_states(1000, seed=2)  # up to g L: never above the horizontal
    assert swinging[:, 0].abs().max() <= math.pi / 2 + 1e-9


def test_bad_values_are_one_clear_error():
    with pytest.raises(ValueError, match="positive"):
        Pendulum(length=0.0)
    with pytest.raises(ValueError, match="0 or more"):
        rollout(Pendulum().derivative, torch.zeros(1, 2), 0.1, -1)
    assert rk4_step(Pendulum().derivative, torch.zeros(3, 2), 0.1).abs().max() == 0  # at rest it stays
