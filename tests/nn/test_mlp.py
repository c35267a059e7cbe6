"""The MLP's memory estimate (the MLP itself is exercised by every lab and the trainer tests)."""

from biaslab.nn import MLP, count_parameters, mlp_memory_bytes


def test_mlp_memory_bytes_counts_weights_gradients_optimizer_states_and_activations():
    sizes = (784, 256, 10)
    params = count_parameters(MLP(sizes))
    assert params == 203_530
    assert mlp_memory_bytes(sizes, 0, optimizer_states=0) == 4 * 2 * params  # weights + gradients
    assert mlp_memory_bytes(sizes, 0) == 4 * 4 * params  # + Adam's two moments
    assert mlp_memory_bytes(sizes, 100) - mlp_memory_bytes(sizes, 0) == 4 * 3 * 100 * (784 + 256 + 10)
    assert mlp_memory_bytes(sizes, 7, itemsize=8) == 2 * mlp_memory_bytes(sizes, 7)


def test_mlp_memory_bytes_matches_the_tensors_of_a_built_model():
    model = MLP((20, 64, 32, 3))
    tensor_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    assert mlp_memory_bytes((20, 64, 32, 3), 0, optimizer_states=0) == 2 * tensor_bytes


def test_absurd_widths_give_an_estimate_without_building_anything():
    assert mlp_memory_bytes((784, 10**8, 10), 256) > 2**40  # over a terabyte
    assert mlp_memory_bytes((784, 10**400, 10), 256) > 10**400  # plain integers: no overflow
