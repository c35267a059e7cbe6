"""Day 4 - message passing as a prior: node labels that the neighbourhood reveals.

A contextual stochastic block model: nodes of four classes, edges mostly within a class
(homophily), and node features that carry only a weak trace of the class. An MLP sees each node
alone and is little better than chance; a graph convolutional network (``biaslab.nn.GCNConv``,
message passing written by hand: h_i' = Σ_j D̂^{-1/2} Â D̂^{-1/2} W h_j, lecture notes §5.3.1,
eqs. 5.10–5.11) averages each node's features with its neighbours', which denoises them along the
graph. Both see every node's features (and the GCN every edge); only the training nodes' labels are
used. The workshop book's Day 4 lab step 2: "Implement a tiny message-passing GNN by hand and apply
it to a synthetic node-classification problem. Compare to an MLP that ignores the graph structure
and uses only node features."
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from biaslab.caches import run_cache
from biaslab.config import check_range
from biaslab.data.graphs import contextual_sbm, relay_paths, split_masks
from biaslab.nn import GNN, MLP, count_parameters
from biaslab.records import param
from biaslab.registry import experiment
from biaslab.report import plots
from biaslab.train.config import ClassifierTraining
from biaslab.train.recipes import fit_node_classifier


@dataclass(frozen=True)
class GNNNodesConfig:
    """The training, the graph and the two models' width (``batch_size``: training nodes per
    step, each a forward pass over the whole graph; by default all of them, so that ``epochs``
    counts full-graph steps)."""

    train: ClassifierTraining = ClassifierTraining(epochs=200, lr=1e-2, weight_decay=5e-4, batch_size=20_000)
    nodes: int = 2000
    classes: int = 4
    average_degree: float = 10.0
    homophily: float = 0.8
    feature_dim: int = 16
    signal: float = 0.25  # class-mean distance from the origin, in noise standard deviations
    hidden: int = 32

    # k rounds of message passing see k hops: paths whose far end needs relay_hops of them
    relay_hops: int = 3
    relay_paths: int = 400

    def __post_init__(self):
        check_range(self, "relay_hops", 1, 20)
        check_range(self, "relay_paths", 8, 100_000)
        why = "8 per class, and the layout is a dense eigenproblem"
        check_range(self, "nodes", 8 * self.classes, 20_000, why)
        check_range(self, "classes", 2, 10)
        check_range(self, "average_degree", 0, self.nodes - 1, open_low=True, open_high=True)
        check_range(self, "homophily", 0, 1)
        check_range(self, "feature_dim", 1, 4096)
        check_range(self, "signal", 0, 100)
        check_range(self, "hidden", 1, 4096)


MODELS = {"mlp": "MLP (features only)", "gcn": "GCN (message passing)"}


@run_cache
def _graph(cfg: GNNNodesConfig, seed: int):
    """The contextual SBM (made once per process)."""
    return contextual_sbm(
        cfg.nodes, cfg.classes, cfg.average_degree, cfg.homophily, cfg.feature_dim, cfg.signal, seed=seed
    )


def fit_model(task, tag: str) -> dict:
    """One model on the graph's training nodes (a task): its test accuracy, history and predictions."""
    cfg: GNNNodesConfig = task.cfg
    graph = _graph(cfg, task.seed_for("graph"))
    masks = split_masks(cfg.nodes, train=0.3, val=0.2, seed=task.seed_for("split"))
    if tag == "gcn":
        model = task.init_model(
            lambda: GNN(cfg.feature_dim, cfg.hidden, cfg.classes, num_layers=2, conv="gcn"), tag
        )
    else:
        model = task.init_model(lambda: MLP((cfg.feature_dim, cfg.hidden, cfg.classes)), tag)
    fit = fit_node_classifier(model, graph, masks, cfg.train, task.training(tag), uses_edges=tag == "gcn")
    with torch.no_grad():
        x, edge_index = graph.x.to(task.device), graph.edge_index.to(task.device)
        logits = model(x, edge_index) if tag == "gcn" else model(x)  # (N, classes)
    return {
        "accuracy": fit.test["accuracy"],
        "history": fit.history,
        "predictions": logits.argmax(1).cpu().numpy(),
        "parameters": count_parameters(model),
    }


def fit_relay(task, layers: int) -> dict:
    """A GCN of ``layers`` rounds of message passing on the relay paths (a task), trained on the
    far ends of a quarter of the paths: the far ends' test accuracy and how much their outputs
    differ from path to path (0: the source is out of sight)."""
    cfg: GNNNodesConfig = task.cfg
    graph = relay_paths(cfg.relay_paths, cfg.relay_hops, cfg.classes, seed=task.seed_for("relay"))
    far = graph.position == cfg.relay_hops  # (N,): the nodes whose label sits relay_hops away
    shuffle = np.random.default_rng(task.seed_for("relay-split"))
    order = torch.from_numpy(shuffle.permutation(cfg.relay_paths))
    ends = far.nonzero().squeeze(1)[order]  # (paths,): the far ends in a random order
    quarter = cfg.relay_paths // 4
    masks = [torch.zeros(len(graph.y), dtype=torch.bool) for _ in range(3)]
    parts = (ends[: 2 * quarter], ends[2 * quarter : 3 * quarter], ends[3 * quarter :])  # train, val, test
    for mask, rows in zip(masks, parts):
        mask[rows] = True
    tag = f"relay-{layers}"
    model = task.init_model(lambda: GNN(cfg.classes + 1, cfg.hidden, cfg.classes, num_layers=layers), tag)
    fit = fit_node_classifier(model, graph, masks, cfg.train, task.training(tag))
    with torch.no_grad():
        logits = model(graph.x.to(task.device), graph.edge_index.to(task.device))[far].cpu()  # (paths, C)
    return {"accuracy": fit.test["accuracy"], "spread": float((logits - logits[0]).abs().max())}


# The words of this lab's metric labels (biaslab.records): what it means by its names.
WORDS = {
    "relay": "relay paths (each label read at the far end of its path)",
    "layers": param("{} rounds of message passing"),
    "output_spread": "largest output difference between the paths' far ends",
}


@experiment(
    name="gnn-nodes",
    words=WORDS,
    day=4,
    step=3,
    config=GNNNodesConfig,
    requires=("torch-geometric",),
    title="Message passing: node labels the neighbours reveal",
    summary="contextual SBM with weak features: a hand-written GCN against an MLP on features alone",
    quick={"nodes": 400, "epochs": 30, "relay_paths": 40},
)
def run(ctx) -> None:
    cfg: GNNNodesConfig = ctx.cfg
    graph = _graph(cfg, ctx.seed_for("graph"))
    fits = ctx.tasks(fit_model, list(MODELS))  # each model's training a task
    accuracy, histories, predictions = {}, {}, {}
    for tag, name in MODELS.items():
        fit = fits[tag]
        accuracy[name], histories[name], predictions[name] = (
            fit["accuracy"],
            fit["history"],
            fit["predictions"],
        )
        ctx.metric("accuracy", fit["accuracy"], model=tag, split="test")
        ctx.metric("parameters", fit["parameters"], model=tag)
    same_class = float((graph.y[graph.edge_index[0]] == graph.y[graph.edge_index[1]]).float().mean())
    ctx.metric(measured_homophily=same_class, edges=int(graph.edge_index.shape[1]) // 2)
    mlp, gcn = accuracy.values()
    # The documents ask for the comparison (workshop book, Day 4 lab step 2) but give no margin:
    # the 15 points are biaslab's target.
    ctx.claim(
        "Message passing beats a node-wise MLP by at least 15 points when labels follow the graph",
        source="workshop book, Day 4 lab step 2; lecture notes §5.3.1 (GNNs: adding relational "
        "structure), eqs. 5.10-5.11; biaslab's target (the margin 0.15)",
        expected="GCN test accuracy - MLP test accuracy >= 0.15",
        measured=f"GCN {gcn:.3f} vs MLP {mlp:.3f} (+{gcn - mlp:.3f})",
        passed=gcn - mlp >= 0.15,
        kind="finding",
        checked_in_quick=False,
    )
    relay(ctx, cfg)
    layout = plots.spectral_layout(graph.edge_index.numpy(), cfg.nodes, seed=ctx.seed_for("layout"))
    ctx.figure(
        "graph",
        plots.graph_drawing(
            layout,
            graph.edge_index.numpy(),
            {"true class": graph.y.numpy(), **{name: np.asarray(p) for name, p in predictions.items()}},
        ),
        f"The graph ({cfg.nodes} nodes, {cfg.classes} classes, {same_class:.0%} of edges within a "
        "class) in a spectral layout, coloured by the true class and by each model's prediction.",
    )
    ctx.figure(
        "learning_curves",
        plots.learning_curves(histories, keys=("train_loss", "val_loss", "val_accuracy")),
        "Full-graph training steps of both models; validation on the held-out nodes.",
    )


def relay(ctx, cfg: GNNNodesConfig) -> None:
    """k rounds of message passing see k hops: the far end of a path, relay_hops from its label."""
    hops = cfg.relay_hops
    fits = ctx.tasks(fit_relay, [layers for layers in (hops - 1, hops) if layers >= 1])
    short = fits.get(hops - 1)
    ctx.table(
        f"The far end of a path learns its label from the source {hops} hops away ({cfg.relay_paths} paths, "
        f"chance {1 / cfg.classes:.2f})",
        ["rounds of message passing", "test accuracy", "largest output difference between paths"],
        [[k, fits[k]["accuracy"], float(f"{fits[k]['spread']:.3g}")] for k in sorted(fits)],
    )
    for layers, fit in fits.items():
        ctx.metric("accuracy", fit["accuracy"], task="relay", layers=layers, split="test")
        ctx.metric("output_spread", fit["spread"], task="relay", layers=layers)
    if short is not None:
        # lecture notes §5.3.1: after k steps a node's representation depends on its k-hop
        # neighbourhood (eq. 5.9 applied k times); beyond it nothing can reach the node.
        ctx.claim(
            f"{hops - 1} rounds of message passing cannot see {hops} hops: the far end's output is the same "
            "on every path, whatever its label",
            source="lecture notes §5.3.1 (GNNs: adding relational structure), eq. 5.9; inductive-bias "
            "slides, 'Not all our data is euclidean'; biaslab's target (the tolerance 1e-6)",
            kind="check",
            expected="largest output difference between the paths' far ends <= 1e-6",
            measured=f"{short['spread']:.2g}; test accuracy {short['accuracy']:.3f} (chance "
            f"{1 / cfg.classes:.2f})",
            printed="After k rounds, each node has information about all nodes within k hops.",
            passed=short["spread"] <= 1e-6,
        )
    full = fits[hops]
    ctx.claim(
        f"{hops} rounds of message passing see {hops} hops: the far end learns its label",
        source="lecture notes §5.3.1 (GNNs: adding relational structure), eq. 5.9; biaslab's target "
        "(test accuracy >= 0.9)",
        kind="finding",
        printed="After k rounds, each node has information about all nodes within k hops.",
        expected="test accuracy of the far ends >= 0.9",
        measured=f"{full['accuracy']:.3f}",
        passed=full["accuracy"] >= 0.9,
        checked_in_quick=False,
    )
