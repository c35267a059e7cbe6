"""Tests for biaslab.train.recipes.fit_node_classifier: full-graph training on masked nodes."""

import torch
from torch import nn

from biaslab.data.graphs import contextual_sbm, split_masks
from biaslab.nn import GNN, MLP
from biaslab.train import TrainConfig
from biaslab.train.recipes import TrainSetup, fit_node_classifier


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
