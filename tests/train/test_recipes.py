"""Tests for biaslab.train.recipes: full-graph training on masked nodes; learning curves."""

import pytest
import torch
from torch import nn

from biaslab.data.graphs import contextual_sbm, split_masks
from biaslab.data.splits import Splits
from biaslab.nn import GNN, MLP
from biaslab.train import TrainConfig
from biaslab.train.recipes import TrainSetup, fit_best_of_restarts, fit_classifier, fit_node_classifier
from biaslab.train.seed import derive_seed


def test_each_epoch_is_one_full_graph_step_and_each_split_sees_its_own_nodes():
    graph = contextual_sbm(n=200, classes=2, average_degree=8, homophily=0.9, signal=0.5, seed=0)
    masks = split_masks(200, train=0.4, val=0.3, seed=1)
    torch.manual_seed(0)
    model = GNN(16, 16, 2)
    fit = fit_node_classifier(model, graph, masks, TrainConfig(epochs=40, lr=1e-2), TrainSetup(seed=2))
    assert fit.trainer.step == 40 and len(fit.history) == 40  # one optimizer step per epoch
    with torch.no_grad():
        predicted = model(graph.x, graph.edge_index).argmax(1)
    test_mask = masks[2]
    expected = int((predicted[test_mask] == graph.y[test_mask]).sum()) / int(test_mask.sum())
    assert fit.test["accuracy"] == expected  # measured on the test nodes only
    assert fit.history[-1]["val_accuracy"] > 0.8


def test_training_leaves_the_callers_graph_where_it_was():
    # PyG's Data.to converts in place; a fit on a GPU must not move the caller's graph there.
    from torch_geometric.data import Data

    class MarkedWhenMoved(Data):
        def to(self, *args, **kwargs):
            self.moved = True  # stands for the in-place device change
            return super().to(*args, **kwargs)

    graph = MarkedWhenMoved(**contextual_sbm(n=60, classes=2, seed=5).to_dict())
    masks = split_masks(60, train=0.5, val=0.25, seed=6)
    fit_node_classifier(MLP((16, 8, 2)), graph, masks, TrainConfig(epochs=1), TrainSetup(), uses_edges=False)
    assert "moved" not in graph


def test_labels_outside_the_training_mask_never_reach_the_loss():
    graph = contextual_sbm(n=120, classes=2, seed=3)
    masks = split_masks(120, train=0.5, val=0.25, seed=4)
    scrambled = graph.clone()
    scrambled.y = graph.y.clone()
    scrambled.y[~masks[0]] = 1 - scrambled.y[~masks[0]]  # every label the model may not learn from
    weights = []
    for g in (graph, scrambled):
        torch.manual_seed(0)
        model = MLP((16, 8, 2))
        fit_node_classifier(model, g, masks, TrainConfig(epochs=5), TrainSetup(), uses_edges=False)
        weights.append(nn.utils.parameters_to_vector(model.parameters()))
    assert torch.equal(weights[0], weights[1])


def test_a_learning_curve_trains_nested_subsets_for_equal_steps_and_tests_only_the_largest():
    from biaslab.data.splits import Splits
    from biaslab.train.recipes import fit_learning_curve

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(400, 2, generator=gen)
    y = (x[:, 0] * x[:, 1] > 0).long()  # XOR of the signs
    splits = Splits(x[:200], y[:200], x[200:300], y[200:300], x[300:], y[300:])
    made = []

    def make_model(n):
        made.append(n)
        torch.manual_seed(n)
        return MLP((2, 16, 2))

    flipped = (splits.x_val, 1 - splits.y_val)  # every label wrong: error = accuracy on val
    curve = fit_learning_curve(
        make_model,
        splits,
        [10, 50, 200],
        TrainConfig(epochs=30, lr=1e-2, batch_size=20),
        lambda n: TrainSetup(tag=f"n{n}"),
        seed=3,
        also_on={"flipped": flipped},
    )
    assert made == curve.sizes == [10, 50, 200]
    assert [f.trainer.step for f in curve.fits] == [300, 300, 300]  # 30 epochs of 200 examples each
    assert [len(r) for r in curve.rows] == [10, 50, 200]
    assert all(set(a) <= set(b) for a, b in zip(curve.rows, curve.rows[1:]))  # nested
    assert sorted(curve.rows[-1]) == list(range(200))
    assert [f.test is None for f in curve.fits] == [True, True, False] and curve.final is curve.fits[-1]
    errors = curve.val_errors
    assert errors == [1 - f.history[-1]["val_accuracy"] for f in curve.fits]
    assert errors[-1] < 0.1 < errors[0]  # XOR from 10 points is guesswork; from 200 it is learned
    assert curve.errors_on["flipped"] == pytest.approx([1 - e for e in errors], abs=1e-12)
    with pytest.raises(ValueError, match="increase within 1..200"):
        fit_learning_curve(make_model, splits, [50, 10], TrainConfig(), TrainSetup, seed=0)
    with pytest.raises(ValueError, match="increase within 1..200"):
        fit_learning_curve(make_model, splits, [10, 201], TrainConfig(), TrainSetup, seed=0)
    longer = fit_learning_curve(
        make_model,
        splits,
        [5, 10],
        TrainConfig(epochs=2, batch_size=20),
        TrainSetup,
        seed=0,
        epoch_length=200,
    )
    assert [f.trainer.step for f in longer.fits] == [20, 20]  # 2 epochs of 200 repeated examples
    with pytest.raises(ValueError, match="shorter than the largest size 10"):
        fit_learning_curve(make_model, splits, [5, 10], TrainConfig(), TrainSetup, seed=0, epoch_length=9)


def test_restarts_keep_the_initialisation_best_on_validation_and_test_it_alone():
    """Each restart equals a hand-seeded fit_classifier; the kept one has the best validation
    accuracy of its restored weights, and only it is evaluated on the test split."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(120, 4, generator=g)
    y = (x[:, 0] + 0.8 * torch.randn(120, generator=g) > 0).long()
    splits = Splits(x[:60], y[:60], x[60:90], y[60:90], x[90:], y[90:])
    config = TrainConfig(epochs=3, batch_size=16, lr=0.05)

    def build():
        return MLP((4, 8, 2))

    setup = TrainSetup(tag="m", seed=3)
    kept = fit_best_of_restarts(build, splits, config, setup, restarts=3)
    scores = []
    for r in range(3):
        torch.manual_seed(derive_seed(3, "m", "restart", str(r)))
        by_hand = fit_classifier(build(), splits, config, TrainSetup(tag=f"m-restart{r}", seed=3), test=False)
        scores.append(by_hand.trainer.evaluate((splits.x_val, splits.y_val))["accuracy"])
        if r == kept.history[0]["restart"]:
            assert [h["val_loss"] for h in by_hand.history] == [h["val_loss"] for h in kept.history]
            assert by_hand.trainer.evaluate((splits.x_test, splits.y_test)) == kept.test
    assert scores[kept.history[0]["restart"]] == max(scores)
    assert all(h["restart"] == kept.history[0]["restart"] for h in kept.history)
    with pytest.raises(ValueError, match="restarts"):
        fit_best_of_restarts(build, splits, config, setup, restarts=0)
    with pytest.raises(ValueError, match="metrics logger"):
        fit_best_of_restarts(build, splits, config, TrainSetup(tag="m", logger=object()), restarts=2)
    # setup(r): each restart its own setup (a lab's ctx.training(tag)), its weights seeded from it.
    tags = []

    def setup_for(r):
        tags.append(f"lab-{r}")
        return TrainSetup(tag=f"lab-{r}", seed=r)

    own = fit_best_of_restarts(build, splits, config, setup_for, restarts=2)
    assert tags == ["lab-0", "lab-1"]
    kept_r = own.history[0]["restart"]
    torch.manual_seed(derive_seed(kept_r, f"lab-{kept_r}", "init"))
    by_hand = fit_classifier(build(), splits, config, TrainSetup(tag=f"lab-{kept_r}", seed=kept_r))
    assert by_hand.test == own.test


def test_for_steps_repeats_a_small_set_whole_and_counts_the_epochs():
    from biaslab.train.recipes import for_steps

    x, y = torch.arange(30.0).reshape(10, 3), torch.arange(10)
    (xr, yr), epochs = for_steps((x, y), steps=100, batch_size=8, epoch_rows=64)
    assert xr.shape == (70, 3) and yr.shape == (70,)  # ⌈64 / 10⌉ = 7 copies
    assert torch.equal(xr[:10], x) and torch.equal(xr[60:], x) and torch.equal(yr[30:40], y)
    assert epochs == 12  # ⌈100 · 8 / 70⌉: 12 epochs of ⌈70 / 8⌉ batches ≈ the steps asked for
    (big,), one = for_steps((torch.zeros(5000, 2),), steps=1, batch_size=8, epoch_rows=64)
    assert big.shape == (5000, 2) and one == 1  # a set larger than an epoch is not repeated
    (few,), epochs = for_steps((x,), steps=3, batch_size=8, epoch_rows=64)
    assert few.shape == (30, 3) and epochs == 1  # 3 steps take 24 rows: ⌈24 / 10⌉ = 3 copies, one epoch
