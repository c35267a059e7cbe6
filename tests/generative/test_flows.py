"""RealNVP's affine coupling: the log-determinant against autograd's Jacobian, the inverse, the
change of variables against torch.distributions and a numerical integral, and a fit by likelihood."""

import math

import pytest
import torch

from biaslab.generative.flows import AffineCoupling, RealNVP, flow_step


def randomized(flow: torch.nn.Module, seed: int = 0, std: float = 0.5) -> torch.nn.Module:
    """The flow with every parameter drawn at random (a new flow is the identity), in float64."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in flow.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * std)
    return flow.double()


@pytest.mark.parametrize("condition_dim", [0, 2])
def test_the_log_determinant_equals_autograds_jacobian(condition_dim):
    flow = randomized(RealNVP(3, layers=4, hidden=16, condition_dim=condition_dim))
    x = torch.randn(5, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    c = torch.randn(5, condition_dim, dtype=torch.float64) if condition_dim else None
    _, log_det = flow(x, c)
    for i in range(len(x)):
        condition = None if c is None else c[i : i + 1]

        def one_row(row, condition=condition):
            return flow(row[None], condition)[0][0]  # (D,) -> (D,)

        jacobian = torch.autograd.functional.jacobian(one_row, x[i])  # (D, D)
        assert log_det[i].item() == pytest.approx(torch.linalg.slogdet(jacobian).logabsdet.item(), abs=1e-10)


def test_one_coupling_moves_only_the_unmasked_coordinates_and_inverts_exactly():
    layer = randomized(AffineCoupling(torch.tensor([1.0, 0.0, 1.0, 0.0]), hidden=8))
    x = torch.randn(6, 4, dtype=torch.float64)
    y, _ = layer(x)
    assert torch.equal(y[:, [0, 2]], x[:, [0, 2]])
    assert not torch.allclose(y[:, [1, 3]], x[:, [1, 3]])
    torch.testing.assert_close(layer.inverse(y), x, rtol=0, atol=1e-12)


@pytest.mark.parametrize("condition_dim", [0, 3])
def test_the_flow_inverts_both_ways(condition_dim):
    flow = randomized(RealNVP(4, layers=5, hidden=16, condition_dim=condition_dim), seed=2)
    x = torch.randn(50, 4, dtype=torch.float64)
    c = torch.randn(50, condition_dim, dtype=torch.float64) if condition_dim else None
    z, _ = flow(x, c)
    torch.testing.assert_close(flow.inverse(z, c), x, rtol=0, atol=1e-10)
    torch.testing.assert_close(flow(flow.inverse(x, c), c)[0], x, rtol=0, atol=1e-10)


def test_a_constant_shift_and_scale_is_the_gaussian_torch_distributions_gives():
    # Zero weights leave s and t constant: x2 = (z2 - t) e^{-s}, so x2 ~ N(-t e^{-s}, e^{-2s}).
    layer = AffineCoupling(torch.tensor([1.0, 0.0]), hidden=4).double()
    with torch.no_grad():
        layer.net[-1].bias.copy_(torch.tensor([0.0, 0.7, 0.0, -1.3], dtype=torch.float64))  # raw s, then t
    flow = RealNVP(2, layers=1).double()
    flow.couplings[0] = layer
    s, t = math.tanh(0.7), -1.3  # scale 1
    x = torch.randn(20, 2, dtype=torch.float64)

    def normal(mean, std):
        return torch.distributions.Normal(
            torch.tensor(mean, dtype=torch.float64), torch.tensor(std, dtype=torch.float64)
        )

    expected = normal(0.0, 1.0).log_prob(x[:, 0]) + normal(-t * math.exp(-s), math.exp(-s)).log_prob(x[:, 1])
    torch.testing.assert_close(flow.log_prob(x), expected, rtol=0, atol=1e-12)


def test_the_density_of_a_random_flow_integrates_to_one():
    flow = randomized(RealNVP(2, layers=4, hidden=16), seed=3, std=0.3)
    edges = torch.linspace(-12, 12, 1201, dtype=torch.float64)
    step = float(edges[1] - edges[0])
    grid = torch.cartesian_prod(edges, edges)  # (1201², 2)
    with torch.no_grad():
        mass = flow.log_prob(grid).exp().sum().item() * step**2
    assert mass == pytest.approx(1.0, abs=2e-3)


def test_samples_are_fixed_by_the_seed_whatever_the_batch_size():
    flow = randomized(RealNVP(3, layers=3, hidden=8), seed=4).float()
    c = None
    whole = flow.sample(100, c, seed=7)
    # The draws are the same whatever the batch size; the arithmetic is, up to rounding: a BLAS may
    # block a matrix product of 13 rows differently from one of 100 (seen on an AMD EPYC), as the
    # diffusion samplers' test allows too. The same batch size gives the same bits.
    torch.testing.assert_close(flow.sample(100, c, seed=7, batch_size=13), whole, rtol=0, atol=1e-6)
    assert torch.equal(flow.sample(100, c, seed=7), whole)
    assert not torch.equal(flow.sample(100, seed=7), flow.sample(100, seed=8))
    conditional = randomized(RealNVP(2, layers=2, hidden=8, condition_dim=1), seed=5).float()
    with pytest.raises(ValueError, match="one per sample"):
        conditional.sample(10, torch.zeros(3, 1))


def test_bad_shapes_and_conditions_are_one_clear_error():
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        RealNVP(1)
    with pytest.raises(ValueError, match="both values"):
        AffineCoupling(torch.ones(3))
    flow = RealNVP(2, layers=2, condition_dim=2)
    with pytest.raises(ValueError, match="takes a condition of size 2"):
        flow(torch.zeros(4, 2))
    with pytest.raises(ValueError, match=r"expected \(4, 2\)"):
        flow(torch.zeros(4, 2), torch.zeros(4, 3))
    with pytest.raises(ValueError, match="unconditional"):
        RealNVP(2)(torch.zeros(4, 2), torch.zeros(4, 1))


def test_a_flow_fitted_by_likelihood_reaches_a_correlated_gaussians_entropy():
    torch.manual_seed(0)
    covariance = torch.tensor([[1.0, 0.8], [0.8, 1.0]])
    target = torch.distributions.MultivariateNormal(torch.tensor([1.0, -2.0]), covariance)
    data = target.sample((4000,))
    flow, step = RealNVP(2, layers=4, hidden=32), flow_step()
    optimizer = torch.optim.Adam(flow.parameters(), lr=3e-3)
    generator = torch.Generator().manual_seed(0)
    for _ in range(600):
        batch = data[torch.randint(0, len(data), (256,), generator=generator)]
        optimizer.zero_grad()
        step(flow, (batch,), generator).loss.backward()
        optimizer.step()
    held_out = target.sample((4000,))
    with torch.no_grad():
        nll = -flow.log_prob(held_out).mean().item()
    assert nll == pytest.approx(target.entropy().item(), abs=0.05)  # the best any model can do


def test_bounded_values_map_to_the_real_line_and_back():
    from biaslab.generative.flows import from_unbounded, to_unbounded

    x = torch.tensor([0.3, 2.0, 9.9], dtype=torch.float64)
    u = to_unbounded(x, 0.0, 10.0)
    torch.testing.assert_close(u, torch.log(x / (10.0 - x)), rtol=1e-12, atol=0)  # logit(x / 10)
    torch.testing.assert_close(from_unbounded(u, 0.0, 10.0), x, rtol=1e-12, atol=0)
    far = from_unbounded(torch.tensor([-50.0, 50.0], dtype=torch.float64), 0.0, 10.0)
    assert 0.0 <= far.min() and far.max() <= 10.0  # any latent value lands inside
    assert torch.isfinite(to_unbounded(torch.tensor([0.0, 10.0]), 0.0, 10.0)).all()
