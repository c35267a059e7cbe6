"""Models of point clouds: EGNN and the pair-distance model are E(3)- and permutation-invariant to
rounding, an MLP of the flattened coordinates is not; each cloud's output does not depend on the
others in its batch; the pair model is the sum over pairs written out."""

import pytest
import torch

from biaslab.evaluate.symmetry import (
    equivariance_error,
    identity,
    invariance_error,
    permute,
    random_isometry,
    random_permutation,
)
from biaslab.nn import MLP
from biaslab.nn.geometric import EGNN, PairDistanceNet

POINTS = torch.randn(6, 5, 3, generator=torch.Generator().manual_seed(0))


def _models():
    torch.manual_seed(0)
    flat = MLP((15, 32, 1))
    return {
        "EGNN": EGNN(16, 2),
        "EGNN, fixed coordinates": EGNN(16, 2, update_coords=False),
        "pair distances": PairDistanceNet(16),
        "MLP": lambda x: flat(x.reshape(len(x), -1)).squeeze(-1),  # (B, 5, 3) -> (B, 15)
    }


@pytest.mark.parametrize("det", [1, -1])
def test_invariant_models_are_invariant_to_rounding_and_the_mlp_is_not(det):
    for name, model in _models().items():
        moved = invariance_error(model, random_isometry(3, 7, det=det, shift_std=2.0), POINTS)
        shuffled = invariance_error(model, permute(random_permutation(5, 8), dim=1), POINTS)
        if name == "MLP":
            assert moved > 1e-2 and shuffled > 1e-2, name
        else:
            assert moved < 1e-5 and shuffled < 1e-5, (name, moved, shuffled)


def test_each_clouds_output_is_its_own():
    for name, model in _models().items():
        if name == "MLP":
            continue
        with torch.no_grad():
            together = model(POINTS)
            alone = torch.stack([model(POINTS[b : b + 1])[0] for b in range(len(POINTS))])
        torch.testing.assert_close(together, alone, rtol=1e-5, atol=1e-6)


def test_the_pair_model_is_the_sum_over_pairs_written_out():
    model = PairDistanceNet(8).double()
    points = POINTS.double()
    by_hand = torch.zeros(len(points), dtype=torch.float64)
    for b in range(len(points)):
        for i in range(5):
            for j in range(i + 1, 5):
                r = (points[b, i] - points[b, j]).norm().reshape(1, 1)
                by_hand[b] += model.potential(r).squeeze()
    with torch.no_grad():
        torch.testing.assert_close(model(points), by_hand, rtol=1e-12, atol=1e-12)


def test_the_egnn_gradients_reach_every_parameter_and_bad_shapes_are_refused():
    model = EGNN(8, 2)
    model(POINTS).sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())
    with pytest.raises(ValueError, match=r"\(B, n, 3\)"):
        model(torch.zeros(4, 3))
    assert equivariance_error(model, identity, identity, POINTS) == 0.0
