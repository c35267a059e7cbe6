"""Deep Sets: invariance of f(X) = ρ(⊕ φ(x_i)), equivariance of y_i = Λ x_i + Γ ⊕ x_j, masks."""

import pytest
import torch

from biaslab.nn.sets import DeepSets, DeepSetsLayer, set_pool

TOL = 1e-5
AGGREGATIONS = ["sum", "mean", "max"]


def shuffle_elements(x, mask=None, seed=1):
    """The sets with their elements in a random order (one permutation per set); ``perm[n]``
    lists, for set n, which old element each new position holds."""
    g = torch.Generator().manual_seed(seed)
    perm = torch.stack([torch.randperm(x.size(1), generator=g) for _ in range(x.size(0))])
    rows = torch.arange(x.size(0))[:, None]
    return x[rows, perm], (None if mask is None else mask[rows, perm]), perm


def close(a, b):
    return torch.allclose(a, b, atol=TOL, rtol=0)


@pytest.fixture
def sets():
    torch.manual_seed(0)
    x = torch.randn(4, 6, 3)
    mask = torch.tensor(
        [[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0], [1, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 0]]
    ).bool()
    return x, mask


@pytest.mark.parametrize("aggregation", AGGREGATIONS)
def test_deep_sets_is_permutation_invariant(sets, aggregation):
    x, mask = sets
    model = DeepSets(3, 16, 2, aggregation=aggregation)
    out = model(x)
    assert out.shape == (4, 2)
    moved, moved_mask, _ = shuffle_elements(x, mask)
    assert close(model(moved), out)
    assert close(model(moved, moved_mask), model(x, mask))


@pytest.mark.parametrize("aggregation", AGGREGATIONS)
def test_padded_elements_do_not_matter_and_equal_the_unpadded_set(sets, aggregation):
    x, mask = sets
    model = DeepSets(3, 16, 2, aggregation=aggregation)
    out = model(x, mask)
    garbage = torch.where(mask[..., None], x, torch.randn_like(x) * 100)
    assert close(model(garbage, mask), out)
    for n in range(x.size(0)):
        alone = x[n, mask[n]][None]  # the set without padding, (1, M_n, 3)
        assert close(model(alone)[0], out[n])


def test_set_pool_equals_dense_reductions_and_empty_sets_pool_to_zero(sets):
    x, mask = sets
    mask = mask.clone()
    mask[2] = False  # an empty set
    for n in (0, 1, 3):
        real = x[n, mask[n]]
        assert close(set_pool(x, mask, "sum")[n], real.sum(0))
        assert close(set_pool(x, mask, "mean")[n], real.mean(0))
        assert close(set_pool(x, mask, "max")[n], real.amax(0))
    for aggregation in AGGREGATIONS:
        assert torch.equal(set_pool(-x.abs() - 1, mask, aggregation)[2], torch.zeros(3))
    assert close(set_pool(x), x.sum(1))


@pytest.mark.parametrize("aggregation", AGGREGATIONS)
def test_deep_sets_layer_is_permutation_equivariant(sets, aggregation):
    x, mask = sets
    layer = DeepSetsLayer(3, 5, aggregation=aggregation)
    out = layer(x)
    assert out.shape == (4, 6, 5)
    moved, moved_mask, perm = shuffle_elements(x, mask)
    rows = torch.arange(4)[:, None]
    assert close(layer(moved), out[rows, perm])
    masked = layer(x, mask)
    assert close(layer(moved, moved_mask), masked[rows, perm])
    assert torch.equal(masked[~mask], torch.zeros(int((~mask).sum()), 5))  # padded outputs are 0
    garbage = torch.where(mask[..., None], x, torch.randn_like(x) * 100)
    assert close(layer(garbage, mask), masked)


def test_deep_sets_layer_equals_its_formula(sets):
    x, _ = sets
    layer = DeepSetsLayer(3, 5)
    lam, b, gamma = layer.lin_self.weight, layer.lin_self.bias, layer.lin_pool.weight
    expected = x @ lam.T + b + (x.sum(1) @ gamma.T)[:, None, :]  # y_i = Λ x_i + b + Γ Σ_j x_j
    assert close(layer(x), expected)


def test_stacked_equivariant_layers_then_pool_are_invariant(sets):
    x, mask = sets
    layers = torch.nn.ModuleList([DeepSetsLayer(3, 8), DeepSetsLayer(8, 8, aggregation="max")])

    def f(x, mask):
        for layer in layers:
            x = torch.relu(layer(x, mask))
        return set_pool(x, mask, "mean")

    moved, moved_mask, _ = shuffle_elements(x, mask, seed=3)
    assert close(f(moved, moved_mask), f(x, mask))


def test_reset_parameters_and_training_step(sets):
    x, mask = sets
    model = DeepSets(3, 8, 1, phi_layers=1, rho_layers=3)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
    model.reset_parameters()
    assert all(p.abs().sum() > 0 for p in model.parameters())
    model(x, mask).sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters())
    layer = DeepSetsLayer(3, 2, bias=False)
    layer.reset_parameters()
    assert layer.lin_self.bias is None


def test_bad_inputs_raise_clear_value_errors(sets):
    x, mask = sets
    model, layer = DeepSets(3, 8, 2), DeepSetsLayer(3, 2)
    with pytest.raises(ValueError, match=r"shape \(N, M, D\)"):
        model(x[0])
    with pytest.raises(ValueError, match="3 features, got 2"):
        layer(x[..., :2])
    with pytest.raises(ValueError, match="boolean"):
        model(x, mask.float())
    with pytest.raises(ValueError, match=r"mask must have shape \(N, M\) = \(4, 6\)"):
        layer(x, mask[:, :5])
    with pytest.raises(ValueError, match="aggregation must be one of"):
        DeepSets(3, 8, 2, aggregation="median")
    with pytest.raises(ValueError, match="aggregation must be one of"):
        set_pool(x, aggregation="prod")
