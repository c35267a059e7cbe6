"""Custom steps: every kind of model trains in the one Trainer and resumes bit-identically.

Each kind is killed mid-epoch after a checkpoint, resumed by a fresh model and Trainer, and
compared with an uninterrupted run: final weights, history and logged terms all equal.
"""

import functools

import pytest
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import TensorDataset
from torch_geometric.data import Batch, Data

from biaslab.train import Checkpointing, TrainConfig, Trainer, accuracy, derive_seed
from biaslab.train.steps import StepOutput, as_step_output, batch_size_of


class Killed(Exception):
    """Stands in for the process dying at an arbitrary point."""


def killing(step, kill_at):
    """``step`` that raises Killed on its ``kill_at``-th training call (validation calls
    run without gradients and are not counted)."""
    calls = [0]

    @functools.wraps(step)  # same __qualname__: the checkpoint's fingerprint names the step
    def wrapped(model, batch, generator):
        if torch.is_grad_enabled():
            calls[0] += 1
            if calls[0] == kill_at:
                raise Killed
        return step(model, batch, generator)

    return wrapped


# -- kind 1: a two-term loss (VAE-like) --------------------------------------------------------


class TinyVAE(nn.Module):
    def __init__(self, d=6, z=2):
        super().__init__()
        self.enc = nn.Linear(d, 2 * z)
        self.dec = nn.Sequential(nn.Linear(z, 16), nn.Tanh(), nn.Linear(16, d))


def vae_step(model, batch, generator):
    (x,) = batch
    mu, logvar = model.enc(x).chunk(2, dim=-1)  # (B, 2z) -> 2 x (B, z)
    eps = torch.randn(mu.shape, generator=generator)
    z = mu + (0.5 * logvar).exp() * eps
    recon = ((model.dec(z) - x) ** 2).sum(-1).mean()
    kl = -0.5 * (1 + logvar - mu**2 - logvar.exp()).sum(-1).mean()
    return recon + kl, {"recon": recon, "kl": kl}


def vae_kind():
    g = torch.Generator().manual_seed(0)
    data = (torch.randn(100, 6, generator=g),), (torch.randn(40, 6, generator=g),)
    return TinyVAE, vae_step, data, {}


# -- kind 2: per-batch noise (a denoiser, diffusion-style) -------------------------------------

T = 50
ALPHA_BAR = torch.cumprod(1 - torch.linspace(1e-3, 0.2, T), 0)


class Denoiser(nn.Module):
    def __init__(self, d=4):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d + 1, 32), nn.SiLU(), nn.Linear(32, d))

    def forward(self, x_t, t):
        return self.net(torch.cat([x_t, t[:, None]], dim=1))  # (B, d) + (B, 1) -> (B, d + 1)


def make_denoise_step(drawn=None):
    """A denoising step; appends the training draws (t, noise) to ``drawn`` when given."""

    def denoise_step(model, batch, generator):
        (x,) = batch  # TensorDataset items, default-collated into a list
        t = torch.randint(0, T, (len(x),), generator=generator)
        noise = torch.randn(x.shape, generator=generator)
        if drawn is not None and torch.is_grad_enabled():
            drawn.append((t, noise))
        a = ALPHA_BAR[t][:, None]  # (B,) -> (B, 1)
        x_t = a.sqrt() * x + (1 - a).sqrt() * noise
        return F.mse_loss(model(x_t, t.float() / T), noise)

    return denoise_step


def denoise_data():
    g = torch.Generator().manual_seed(1)
    return TensorDataset(torch.randn(90, 4, generator=g)), TensorDataset(torch.randn(30, 4, generator=g))


def denoise_kind():
    return Denoiser, make_denoise_step(), denoise_data(), {}


# -- kind 3: one graph, nodes split by masks ---------------------------------------------------


def make_graph(n=40, seed=2):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 5, generator=g)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0.5).long()  # 3 classes
    src, dst = torch.randint(0, n, (2, 100), generator=g)
    perm = torch.randperm(n, generator=g)
    train_mask, val_mask = torch.zeros(n, dtype=torch.bool), torch.zeros(n, dtype=torch.bool)
    train_mask[perm[:24]], val_mask[perm[24:]] = True, True
    return Data(
        x=x,
        y=y,
        edge_index=torch.stack([torch.cat([src, dst]), torch.cat([dst, src])]),
        train_mask=train_mask,
        val_mask=val_mask,
    )


class DenseGCN(nn.Module):
    """Two graph convolutions with the dense normalised adjacency D^-1/2 (A + I) D^-1/2."""

    def __init__(self, d=5, hidden=16, classes=3):
        super().__init__()
        self.lin1, self.lin2 = nn.Linear(d, hidden), nn.Linear(hidden, classes)
        self.drop = nn.Dropout(0.3)  # draws from the global RNG, which a resume restores

    def forward(self, x, edge_index):
        n = x.shape[0]
        a = torch.eye(n)
        a[edge_index[1], edge_index[0]] = 1.0
        d = a.sum(1).rsqrt()
        a = d[:, None] * a * d[None, :]
        return a @ self.lin2(self.drop(torch.relu(a @ self.lin1(x))))


def masked_step(model, data, generator):
    mask = data.train_mask if model.training else data.val_mask
    out, y = model(data.x, data.edge_index)[mask], data.y[mask]
    return StepOutput(F.cross_entropy(out, y), outputs=out, targets=y)


def first(items):
    return items[0]


def masked_kind():
    graph = make_graph()
    return DenseGCN, masked_step, ([graph], [graph]), {"collate_fn": first, "metrics": {"accuracy": accuracy}}


# -- kind 4: many small graphs, collated, graph-level regression -------------------------------


def make_graphs(count, seed):
    g = torch.Generator().manual_seed(seed)
    graphs = []
    for _ in range(count):
        n = int(torch.randint(3, 8, (1,), generator=g))
        x = torch.randn(n, 3, generator=g)
        graphs.append(
            Data(x=x, edge_index=torch.randint(0, n, (2, 2 * n), generator=g), y=x[:, 0].sum().reshape(1))
        )
    return graphs


class SumPoolGNN(nn.Module):
    def __init__(self, d=3, hidden=16):
        super().__init__()
        self.inp, self.msg, self.out = nn.Linear(d, hidden), nn.Linear(hidden, hidden), nn.Linear(hidden, 1)

    def forward(self, batch):
        h = torch.tanh(self.inp(batch.x))
        src, dst = batch.edge_index
        h = torch.tanh(h + torch.zeros_like(h).index_add_(0, dst, self.msg(h)[src]))
        pooled = torch.zeros(batch.num_graphs, h.shape[1]).index_add_(0, batch.batch, h)  # (G, H)
        return self.out(pooled).squeeze(-1)  # (G, 1) -> (G,)


def graph_step(model, batch, generator):
    pred = model(batch)
    return StepOutput(F.mse_loss(pred, batch.y), outputs=pred, targets=batch.y)


def mae(outputs, targets):
    return (outputs - targets).abs().mean()


def graphs_kind():
    data = make_graphs(38, 3), make_graphs(12, 4)  # 38 = 4 x 8 + 6: a smaller last batch
    return SumPoolGNN, graph_step, data, {"collate_fn": Batch.from_data_list, "metrics": {"mae": mae}}


# -- the resume check --------------------------------------------------------------------------

KINDS = {
    "vae": vae_kind,
    "denoiser": denoise_kind,
    "masked_graph": masked_kind,
    "collated_graphs": graphs_kind,
}
# (epochs, batch size, checkpoint_every, kill at training step): the kill lies mid-epoch, after
# a checkpoint; steps per epoch: vae 7, denoiser 6, masked graph 1, collated graphs 5.
PLANS = {
    "vae": (4, 16, 5, 12),
    "denoiser": (3, 16, 4, 9),
    "masked_graph": (8, 1, 3, 5),
    "collated_graphs": (3, 8, 3, 8),
}


def fit(tmp_path, kind, name="ck.pt", kill_at=None, model_seed=0, ema_decay=0.0):
    make_model, step, (train, val), extra = KINDS[kind]()
    epochs, batch_size, every, _ = PLANS[kind]
    torch.manual_seed(model_seed)
    model = make_model()
    cfg = TrainConfig(
        epochs=epochs,
        batch_size=batch_size,
        lr=0.01,
        schedule="cosine",
        checkpoint_every=every,
        ema_decay=ema_decay,
    )
    trainer = Trainer(
        model,
        config=cfg,
        seed=5,
        callbacks=[Checkpointing(tmp_path / name)],
        step=killing(step, kill_at) if kill_at else step,
        **extra,
    )
    history = trainer.fit(train, val)
    return model, history, trainer


def comparable(history):
    return [{k: v for k, v in r.items() if "time" not in k} for r in history]


@pytest.mark.parametrize(
    "kind, ema_decay", [*((kind, 0.0) for kind in KINDS), ("denoiser", 0.9), ("collated_graphs", 0.5)]
)
def test_kind_resumes_bit_identically_after_a_kill(tmp_path, kind, ema_decay):
    ref_model, ref_history, ref_trainer = fit(tmp_path, kind, name="ref.pt", ema_decay=ema_decay)
    kill_at = PLANS[kind][3]
    assert ref_trainer.step > kill_at
    with pytest.raises(Killed):
        fit(tmp_path, kind, kill_at=kill_at, ema_decay=ema_decay)
    assert (tmp_path / "ck.pt").exists()
    torch.manual_seed(12345)  # the global RNG is wherever the dead process left it
    # A fresh model (other init) picks up the weights and, with ema_decay, the average θ̄.
    model, history, trainer = fit(tmp_path, kind, model_seed=99, ema_decay=ema_decay)
    for (name, a), b in zip(ref_model.state_dict().items(), model.state_dict().values()):
        assert torch.equal(a, b), name
    assert comparable(history) == comparable(ref_history)
    assert trainer.step == ref_trainer.step
    assert torch.equal(trainer.step_gen.get_state(), ref_trainer.step_gen.get_state())


def test_two_term_loss_logs_each_term(tmp_path):
    _, history, _ = fit(tmp_path, "vae")
    for r in history:
        assert {"train_recon", "train_kl", "val_recon", "val_kl"} <= r.keys()
        # Batch-size-weighted means are linear: the terms add up to the loss.
        assert r["train_loss"] == pytest.approx(r["train_recon"] + r["train_kl"], rel=1e-6)
        assert r["val_loss"] == pytest.approx(r["val_recon"] + r["val_kl"], rel=1e-6)


def test_masked_graph_metrics_use_the_step_outputs(tmp_path):
    model, history, trainer = fit(tmp_path, "masked_graph")
    graph = make_graph()
    model.eval()
    with torch.no_grad():
        pred = model(graph.x, graph.edge_index).argmax(1)
    expected = (pred[graph.val_mask] == graph.y[graph.val_mask]).sum().item() / 16
    assert trainer.evaluate([graph])["accuracy"] == expected == history[-1]["val_accuracy"]


def denoiser_run(with_val, drawn, checkpoint=None):
    train, val = denoise_data()
    torch.manual_seed(0)
    model = Denoiser()
    trainer = Trainer(
        model,
        config=TrainConfig(epochs=3, batch_size=16, lr=0.01),
        seed=5,
        step=make_denoise_step(drawn),
        callbacks=[Checkpointing(checkpoint)] if checkpoint else [],
    )
    trainer.fit(train, val if with_val else None)
    return model, trainer, val


def test_validation_does_not_change_the_training_draws(tmp_path):
    drawn_with, drawn_without = [], []
    model_a, trainer, val = denoiser_run(True, drawn_with, tmp_path / "ck.pt")
    model_b, _, _ = denoiser_run(False, drawn_without)
    assert len(drawn_with) == len(drawn_without) == 18
    for (ta, na), (tb, nb) in zip(drawn_with, drawn_without):
        assert torch.equal(ta, tb) and torch.equal(na, nb)
    for a, b in zip(model_a.parameters(), model_b.parameters()):
        assert torch.equal(a, b)
    # The step generator is checkpointed, has moved, and validation neither moves it nor varies.
    state = torch.load(tmp_path / "ck.pt", weights_only=True)
    assert torch.equal(state["step_gen"], trainer.step_gen.get_state())
    fresh = torch.Generator().manual_seed(derive_seed(5, "train", "step")).get_state()
    assert not torch.equal(state["step_gen"], fresh)
    first_eval = trainer.evaluate(val, batch_size=8)
    assert trainer.evaluate(val, batch_size=8) == first_eval
    assert torch.equal(trainer.step_gen.get_state(), state["step_gen"])


def test_batch_size_of_each_kind_of_batch():
    graphs = make_graphs(3, 0)
    assert batch_size_of(torch.zeros(5, 2)) == 5
    assert batch_size_of((torch.zeros(4, 2), torch.zeros(4))) == 4
    assert batch_size_of([torch.zeros(3)]) == 3
    assert batch_size_of(Batch.from_data_list(graphs)) == 3
    assert batch_size_of({"x": torch.zeros(6, 1), "y": torch.zeros(6)}) == 6
    assert batch_size_of(graphs[0]) == 1  # one graph whose nodes are split by masks
    assert batch_size_of(torch.tensor(2.0)) == 1


def test_step_answers_are_normalised():
    loss = torch.tensor(1.0)
    assert as_step_output(loss).loss is loss and as_step_output(loss).terms == {}
    assert as_step_output((loss, {"kl": 0.5})).terms == {"kl": 0.5}
    with pytest.raises(TypeError):
        as_step_output(1.0)
    with pytest.raises(ValueError, match="loss"):
        as_step_output((loss, {"loss": loss}))
    with pytest.raises(ValueError, match="not both"):
        Trainer(nn.Linear(2, 2), nn.functional.mse_loss, step=vae_step)


def test_metrics_need_step_outputs():
    trainer = Trainer(TinyVAE(), step=vae_step, metrics={"accuracy": accuracy})
    with pytest.raises(ValueError, match="StepOutput"):
        trainer.evaluate((torch.randn(8, 6),))
