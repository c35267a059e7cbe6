"""Augmentation and the invariance penalty as Trainer steps, against the formulas written out with
torch.rot90 and cross_entropy; the penalty vanishes for a quarter-turn-invariant network and
training with it shrinks a plain network's invariance error."""

import pytest
import torch
from torch import nn

from biaslab.evaluate.symmetry import invariance_error, rotate90
from biaslab.nn import CNN
from biaslab.nn.group_conv import C4CNN
from biaslab.train.config import TrainConfig
from biaslab.train.invariance import augmented_step, invariance_penalty, invariance_step, random_quarter_turns
from biaslab.train.trainer import Trainer

X = torch.randn(16, 1, 8, 8, generator=torch.Generator().manual_seed(0))
Y = torch.randint(0, 3, (16,), generator=torch.Generator().manual_seed(1))


def test_each_image_is_turned_by_its_own_draw_and_the_draws_are_seeded():
    turned = random_quarter_turns(X, torch.Generator().manual_seed(3))
    k = torch.randint(0, 4, (16,), generator=torch.Generator().manual_seed(3))  # the same draws
    for i in range(16):
        assert torch.equal(turned[i], torch.rot90(X[i], int(k[i]), (-2, -1)))
    assert set(k.tolist()) == {0, 1, 2, 3}  # every element of C4 appears in this draw
    with pytest.raises(ValueError, match="square images"):
        random_quarter_turns(torch.zeros(2, 1, 8, 6), torch.Generator())


def test_the_steps_equal_their_formulas():
    torch.manual_seed(0)
    model = CNN(1, (4,), 3, dims=2, pool=None, global_pool="avg")
    turned = random_quarter_turns(X, torch.Generator().manual_seed(5))
    out = augmented_step()(model, (X, Y), torch.Generator().manual_seed(5))
    torch.testing.assert_close(out.loss, nn.functional.cross_entropy(model(turned), Y))
    out = invariance_step(0.7)(model, (X, Y), torch.Generator().manual_seed(5))
    omega = ((model(turned) - model(X)) ** 2).mean()
    torch.testing.assert_close(out.loss, nn.functional.cross_entropy(model(X), Y) + 0.7 * omega)
    torch.testing.assert_close(torch.as_tensor(out.terms["penalty"]), omega.detach())
    assert invariance_penalty(model(X), model(X)).item() == 0.0


def test_the_penalty_vanishes_for_an_invariant_network_and_not_for_a_plain_one():
    torch.manual_seed(0)
    gcnn, plain = C4CNN(1, (4, 4), 3), CNN(1, (4, 4), 3, dims=2, global_pool="avg")
    gen = torch.Generator().manual_seed(2)
    assert invariance_penalty(gcnn(X), gcnn(random_quarter_turns(X, gen))).item() < 1e-10
    assert invariance_penalty(plain(X), plain(random_quarter_turns(X, gen))).item() > 1e-6


def test_training_with_the_penalty_shrinks_the_invariance_error():
    def error_after(weight):
        torch.manual_seed(0)
        model = CNN(1, (4, 8), 3, dims=2, global_pool="avg")
        trainer = Trainer(
            model, config=TrainConfig(epochs=30, batch_size=16, lr=1e-2), step=invariance_step(weight)
        )
        trainer.fit((X, Y))
        return max(invariance_error(model, rotate90(k), X) for k in (1, 2, 3))

    assert error_after(10.0) < 0.5 * error_after(0.0)


def test_each_image_is_shifted_by_its_own_draw_within_the_bound():
    from biaslab.data.transforms import translate, translate_each
    from biaslab.train.invariance import random_shifts

    images = torch.randn(40, 1, 8, 8, generator=torch.Generator().manual_seed(2))
    moved = random_shifts(images, torch.Generator().manual_seed(4), max_shift=2)
    offsets = torch.randint(-2, 3, (40, 2), generator=torch.Generator().manual_seed(4))  # the same draws
    for i in range(40):
        assert torch.equal(moved[i], translate(images[i], int(offsets[i, 0]), int(offsets[i, 1])))
    assert offsets.abs().max() == 2 and len(torch.unique(offsets, dim=0)) > 10
    assert torch.equal(random_shifts(images, torch.Generator().manual_seed(4), max_shift=0), images)
    with pytest.raises(ValueError, match="max_shift"):
        random_shifts(images, torch.Generator(), max_shift=-1)
    with pytest.raises(ValueError, match="offsets must have shape"):
        translate_each(images, torch.zeros(3, 2, dtype=torch.long))
