"""An embedding is a lookup that equals one-hot · E, in values and gradients, and equals torch's."""

import pytest
import torch

from biaslab.nn.embedding import Embedding


def test_the_lookup_is_the_one_hot_product_in_values_and_gradients():
    torch.manual_seed(0)
    table = Embedding(11, 4).double()
    index = torch.tensor([[3, 0, 10], [3, 7, 7]])
    upstream = torch.randn(2, 3, 4, dtype=torch.float64)
    (looked_up,) = torch.autograd.grad((table(index) * upstream).sum(), table.weight)
    (multiplied,) = torch.autograd.grad((table.as_one_hot_product(index) * upstream).sum(), table.weight)
    torch.testing.assert_close(table(index), table.as_one_hot_product(index), rtol=0, atol=1e-15)
    torch.testing.assert_close(looked_up, multiplied, rtol=0, atol=1e-15)
    assert looked_up[[1, 2, 4, 5, 6, 8, 9]].abs().sum() == 0  # symbols not in the batch get no gradient
    torch.testing.assert_close(looked_up[7], upstream[1, 1] + upstream[1, 2])  # row 7, read twice


def test_it_equals_torchs_embedding():
    ours, theirs = Embedding(9, 5).double(), torch.nn.Embedding(9, 5).double()
    theirs.weight.data.copy_(ours.weight.data)
    index = torch.randint(0, 9, (6, 2), generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(ours(index), theirs(index), rtol=0, atol=0)


def test_bad_indices_are_refused():
    table = Embedding(4, 2)
    with pytest.raises(ValueError, match="0..3"):
        table(torch.tensor([4]))
    with pytest.raises(ValueError, match="integers"):
        table(torch.tensor([1.0]))


def test_the_pair_model_reads_both_symbols_through_one_table():
    from biaslab.nn.embedding import SymbolPairModel

    torch.manual_seed(0)
    model = SymbolPairModel(7, 3, 8, 7).double()
    pairs = torch.tensor([[1, 2], [2, 1], [6, 6]])
    table = model.embedding.weight
    by_hand = model.mlp(torch.cat([table[pairs[:, 0]], table[pairs[:, 1]]], dim=1))
    torch.testing.assert_close(model(pairs), by_hand, rtol=0, atol=0)
    with pytest.raises(ValueError, match=r"\(N, 2\)"):
        model(torch.tensor([1, 2]))


def test_one_hot_inputs_equal_torchs_one_hot_fed_to_the_model():
    from biaslab.nn.embedding import OneHotInputs

    torch.manual_seed(0)
    inner = torch.nn.GRU(5, 3, batch_first=True)
    tokens = torch.randint(0, 5, (4, 7))
    expected, _ = inner(torch.nn.functional.one_hot(tokens, 5).float())  # (4, 7, 3)
    ours, _ = OneHotInputs(inner, 5)(tokens)
    torch.testing.assert_close(ours, expected, rtol=0, atol=0)
