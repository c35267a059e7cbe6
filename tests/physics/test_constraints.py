"""The energy rate by autograd against closed forms (zero for the true pendulum, c L² ω² for a
pendulum given a push), and the penalty as a Trainer step that trains a field toward conservation."""

import pytest
import torch
from torch import nn

from biaslab.physics.constraints import conservation_penalty, dynamics_step, energy_rate
from biaslab.physics.systems import Pendulum

PENDULUM = Pendulum(gravity=9.81, length=1.3)
STATES = torch.randn(64, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0))


def test_the_true_dynamics_conserve_the_energy():
    rate = energy_rate(PENDULUM.derivative, PENDULUM.energy, STATES)
    torch.testing.assert_close(rate, torch.zeros(64, dtype=torch.float64), rtol=0, atol=1e-12)


def test_an_anti_damped_pendulum_gains_energy_at_the_rate_the_chain_rule_gives():
    c = 0.3  # dω/dt += c ω: dH/dt = L² ω · c ω

    def pushed(x):
        return PENDULUM.derivative(x) + torch.stack([torch.zeros_like(x[:, 1]), c * x[:, 1]], dim=1)

    rate = energy_rate(pushed, PENDULUM.energy, STATES)
    torch.testing.assert_close(rate, c * PENDULUM.length**2 * STATES[:, 1] ** 2, rtol=1e-12, atol=1e-12)
    with torch.no_grad():  # the rate is measured where no training happens, too
        assert conservation_penalty(pushed, PENDULUM.energy, STATES) > 0


def test_the_penalty_step_trains_a_field_toward_conservation():
    torch.manual_seed(0)
    model = nn.Linear(2, 2).double()  # a field that can only be linear: the fit alone leaves a rate
    x = STATES * 0.5
    target = PENDULUM.derivative(x)
    losses = {}
    for weight in (0.0, 10.0):
        field = nn.Linear(2, 2).double()
        field.load_state_dict(model.state_dict())
        step, optimizer = (
            dynamics_step(PENDULUM.energy, weight),
            torch.optim.Adam(field.parameters(), lr=0.05),
        )
        for _ in range(400):
            optimizer.zero_grad()
            step(field, (x, target), torch.Generator()).loss.backward()
            optimizer.step()
        losses[weight] = conservation_penalty(field, PENDULUM.energy, x).item()
    assert losses[10.0] < 0.5 * losses[0.0]


def test_the_penalty_reads_collocation_states_when_given():
    # Conserving where it was trained (near rest), not at the collocation states far away.
    def field(x):
        return PENDULUM.derivative(x) + torch.stack([torch.zeros_like(x[:, 1]), x[:, 1] ** 3], dim=1)

    near, far = STATES * 1e-3, STATES * 3
    model = _Wrapped(field)
    batch = (near, field(near))
    alone = dynamics_step(PENDULUM.energy, 1.0)(model, batch, torch.Generator().manual_seed(0))
    beyond = dynamics_step(PENDULUM.energy, 1.0, far)(model, batch, torch.Generator().manual_seed(0))
    assert alone.terms["penalty"] < 1e-12 < beyond.terms["penalty"]
    rows = torch.randint(len(far), (len(near),), generator=torch.Generator().manual_seed(0))
    expected = conservation_penalty(field, PENDULUM.energy, far[rows])
    assert beyond.terms["penalty"].item() == pytest.approx(expected.item(), rel=1e-12)


class _Wrapped(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def test_bad_weights_are_one_clear_error():
    with pytest.raises(ValueError, match=">= 0"):
        dynamics_step(PENDULUM.energy, -1.0)
    with pytest.raises(ValueError, match="quantity"):
        dynamics_step(None, 1.0)
    out = dynamics_step()(nn.Linear(2, 2).double(), (STATES, STATES), torch.Generator())
    assert set(out.terms) == {"fit"}
