"""Tests for biaslab.evaluate.robustness: the accuracy-under-transform curve against a direct
computation, averaging over several moved copies, batching, modes restored, bad arguments."""

from functools import partial

import pytest
import torch
from torch import nn

from biaslab.data.transforms import rotate, translations
from biaslab.evaluate.robustness import accuracy_under_transform, eval_mode

N, CLASSES = 90, 3


@pytest.fixture(scope="module")
def data():
    g = torch.Generator().manual_seed(0)
    return torch.rand(N, 1, 8, 8, generator=g), torch.randint(0, CLASSES, (N,), generator=g)


@pytest.fixture(scope="module")
def model():
    """Dropout makes train mode visible: in train mode two calls disagree."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Dropout(0.5), nn.Linear(64, CLASSES))


def direct_accuracy(model, x, y) -> float:
    model.eval()
    with torch.no_grad():
        accuracy = int((model(x).argmax(dim=1) == y).sum()) / len(y)
    model.train()
    return accuracy


def test_equals_the_accuracy_computed_directly_on_each_transformed_set(model, data):
    x, y = data
    angles = (0, 30, 90)
    curve = accuracy_under_transform(model, x, y, partial(rotate, fill=0.5), angles)
    assert list(curve) == list(angles)
    for angle in angles:
        assert curve[angle] == pytest.approx(direct_accuracy(model, rotate(x, angle, fill=0.5), y), abs=1e-12)
    assert curve[0] == pytest.approx(direct_accuracy(model, x, y), abs=1e-12)


def test_several_moved_copies_give_their_mean_accuracy(model, data):
    x, y = data
    curve = accuracy_under_transform(model, x, y, translations, [2])
    each = [direct_accuracy(model, moved, y) for moved in translations(x, 2)]
    assert curve[2] == pytest.approx(sum(each) / 4, abs=1e-12)


def test_batching_does_not_change_the_curve_and_modes_are_restored(model, data):
    x, y = data
    model.train()
    one = accuracy_under_transform(model, x, y, translations, [0, 1, 3], batch_size=N)
    many = accuracy_under_transform(model, x, y, translations, [0, 1, 3], batch_size=7)
    assert one == many
    assert all(m.training for m in model.modules())


def test_eval_mode_restores_each_modules_own_flag_when_the_body_raises(model):
    model.train()
    model[1].eval()  # one module already in eval mode stays so
    with pytest.raises(RuntimeError), eval_mode(model):
        assert not any(m.training for m in model.modules())
        raise RuntimeError
    assert model.training and model[2].training and not model[1].training
    model.train()


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda m, x, y: accuracy_under_transform(m, x, y, translations, [1], batch_size=0), "batch_size"),
        (lambda m, x, y: accuracy_under_transform(m, x, y[:-1], translations, [1]), "same positive number"),
        (lambda m, x, y: accuracy_under_transform(m, x, y, lambda x, a: x[:, :, :4], [1]), "x's shape"),
        (lambda m, x, y: accuracy_under_transform(m, x, y, lambda x, a: [], [1]), "x's shape"),
    ],
)
def test_invalid_arguments_raise_value_error(model, data, call, match):
    x, y = data
    with pytest.raises(ValueError, match=match):
        call(model, x, y)
