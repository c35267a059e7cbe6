"""Models assembled from the primitives: a graph network and recurrent sequence heads.

Each primitive file holds one inductive bias (``graph.py`` message passing, ``recurrent.py``
recurrence); the models the labs train from them live here: :class:`GNN` (convolutions, an
optional graph pooling, a linear head) and :class:`SequenceClassifier` /
:class:`SequenceTagger` (a recurrent network read at its last state, or at every step).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

import torch
from torch import nn

from biaslab.checks import is_integer
from biaslab.nn.graph import (
    GATConv,
    GCNConv,
    MPNNConv,
    SAGEConv,
    global_add_pool,
    global_max_pool,
    global_mean_pool,
)
from biaslab.nn.mlp import ACTIVATIONS
from biaslab.nn.recurrent import RECURRENT

__all__ = ["GNN", "SequenceClassifier", "SequenceTagger"]


def _check_size(name: str, value: int) -> None:
    if not is_integer(value) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


POOLS = {"add": global_add_pool, "sum": global_add_pool, "mean": global_mean_pool, "max": global_max_pool}
CONVS = ("gcn", "gat", "mpnn", "sage")


class GNN(nn.Module):
    """A graph classifier: ``num_layers`` convolutions with an activation (and dropout) after each,
    an optional graph pooling, and a linear head.

    Without ``pool`` it classifies nodes (``(N, out_channels)``); with it, graphs (``(B, out_channels)``).

    Args:
        in_channels: features per input node.
        hidden_channels: width of every convolution's output.
        out_channels: number of classes (or outputs).
        num_layers: number of convolutions (default 2).
        conv: ``"gcn"`` (default), ``"gat"``, ``"mpnn"`` or ``"sage"``.
        pool: None (default, node-level), ``"add"``, ``"mean"`` or ``"max"`` (graph-level).
        heads: attention heads for ``"gat"``, concatenated; must divide ``hidden_channels`` (default 1).
        edge_dim: features per edge, required for ``"mpnn"`` (default None).
        activation: the non-linearity, as for :class:`MLP` (default ``"relu"``).
        dropout: dropout after each activation (default 0.0).

    Shapes:
        ``x`` ``(N, in_channels)``, ``edge_index`` ``(2, E)``, ``edge_attr`` ``(E, edge_dim)`` for
        ``"mpnn"`` (or ``(E,)`` edge weights for ``"gcn"``), ``batch`` ``(N,)`` when pooling
        several graphs -> ``(N, out_channels)`` or ``(B, out_channels)``.
    """

    def __init__(
        self,
        in_channels: int,
        hidden_channels: int,
        out_channels: int,
        num_layers: int = 2,
        conv: str = "gcn",
        pool: str | None = None,
        heads: int = 1,
        edge_dim: int | None = None,
        activation: str = "relu",
        dropout: float = 0.0,
    ):
        super().__init__()
        if conv not in CONVS:
            raise ValueError(f"conv must be one of {CONVS}, got {conv!r}")
        if pool is not None and pool not in POOLS:
            raise ValueError(f"pool must be None or one of {sorted(POOLS)}, got {pool!r}")
        if conv == "mpnn" and edge_dim is None:
            raise ValueError("conv='mpnn' needs edge_dim, the number of edge features")
        if conv == "gat" and hidden_channels % heads:
            raise ValueError(f"heads ({heads}) must divide hidden_channels ({hidden_channels})")
        if num_layers < 1 or activation not in ACTIVATIONS:
            raise ValueError(f"need num_layers >= 1 and an activation in {sorted(ACTIVATIONS)}")
        self.conv, self.pool = conv, pool
        make = {
            "gcn": lambda n_in, n_out: GCNConv(n_in, n_out),
            "gat": lambda n_in, n_out: GATConv(n_in, n_out // heads, heads=heads),
            "mpnn": lambda n_in, n_out: MPNNConv(n_in, n_out, edge_dim),
            "sage": lambda n_in, n_out: SAGEConv(n_in, n_out),
        }[conv]
        widths = [in_channels] + [hidden_channels] * num_layers
        self.convs = nn.ModuleList(make(n_in, n_out) for n_in, n_out in pairwise(widths))
        self.activation = ACTIVATIONS[activation]()
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(hidden_channels, out_channels)

    def reset_parameters(self) -> None:
        for conv in self.convs:
            conv.reset_parameters()
        self.head.reset_parameters()

    def embed(
        self,
        x: torch.Tensor,
        edge_index: torch.Tensor,
        edge_attr: torch.Tensor | None = None,
        batch: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """The representation before the head: node features, or graph features when pooling."""
        if edge_attr is not None and self.conv in ("gat", "sage"):
            raise ValueError(f"conv={self.conv!r} uses no edge features; pass edge_attr=None")
        for conv in self.convs:
            x = conv(x, edge_index, edge_attr) if self.conv in ("gcn", "mpnn") else conv(x, edge_index)
            x = self.dropout(self.activation(x))
        return x if self.pool is None else POOLS[self.pool](x, batch)

    def forward(
        self,
        x: torch.Tensor,
        edge_index: torch.Tensor,
        edge_attr: torch.Tensor | None = None,
        batch: torch.Tensor | None = None,
    ) -> torch.Tensor:
        return self.head(self.embed(x, edge_index, edge_attr, batch))


class _SequenceHead(nn.Module):
    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        output_size: int,
        *,
        cell: str = "lstm",
        num_layers: int = 1,
        bidirectional: bool = False,
        dropout: float = 0.0,
        fused: bool = False,
    ):
        super().__init__()
        if cell not in RECURRENT:
            raise ValueError(f"cell must be one of {sorted(RECURRENT)}, got {cell!r}")
        _check_size("output_size", output_size)
        self.cell, self.input_size, self.fused = cell, input_size, fused
        self.num_directions = 2 if bidirectional else 1
        kwargs = {"bidirectional": bidirectional, "dropout": dropout, "batch_first": True}
        layers = FUSED if fused else RECURRENT  # the same parameters, names and initial draws
        self.rnn = layers[cell](input_size, hidden_size, num_layers, **kwargs)
        self.head = nn.Linear(self.num_directions * hidden_size, output_size)

    def reset_parameters(self) -> None:
        self.rnn.reset_parameters()
        self.head.reset_parameters()

    def _run(self, x: torch.Tensor, lengths) -> tuple[torch.Tensor, torch.Tensor]:
        if x.dim() == 2 and self.input_size == 1:
            x = x.unsqueeze(-1)  # (N, T) -> (N, T, 1): a signal is a sequence of scalars
        if self.fused:
            output, state = _fused_run(self.rnn, x, lengths)
        else:
            output, state = self.rnn(x, lengths=lengths)
        return output, state[0] if self.cell == "lstm" else state  # (N, T, D*H), h_n (D*L, N, H)


FUSED = {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}  # torch's kernels, one call for all steps


def _fused_run(rnn: nn.Module, x: torch.Tensor, lengths) -> tuple[torch.Tensor, tuple]:
    """Torch's recurrent layer over ``x`` (N, T, I); with ``lengths``, packed so that each
    sequence stops at its own end (outputs past it 0, its final state the one at its last step),
    as the written-out layers do."""
    if lengths is None:
        return rnn(x)
    lengths = torch.as_tensor(lengths, device="cpu")
    if lengths.shape != (x.shape[0],) or lengths.min() < 1 or lengths.max() > x.shape[1]:
        raise ValueError(f"lengths must be {x.shape[0]} integers in 1..{x.shape[1]}, got {lengths.tolist()}")
    packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    output, state = rnn(packed)
    output, _ = nn.utils.rnn.pad_packed_sequence(output, batch_first=True, total_length=x.shape[1])
    return output, state  # (N, T, D*H), h_n (D*L, N, H) or (h_n, c_n)


class SequenceClassifier(_SequenceHead):
    """Sequence to one: a recurrent network reads the sequence, a ``Linear`` reads its last state.

    Args:
        input_size: features I of each step (1 for a signal given as ``(N, T)``).
        hidden_size: state size H.
        output_size: classes C.
        cell: ``"rnn"``, ``"lstm"`` (default) or ``"gru"``.
        num_layers: stacked layers (default 1).
        bidirectional: concatenate the backward direction's final state (after reading x_1) to the
            forward one's (after x_T) (default False).
        dropout: between stacked layers (default 0.0).
        fused: torch's ``nn.RNN``/``nn.LSTM``/``nn.GRU`` (one kernel for all steps: an LSTM trains
            about 4 times faster on a CPU) instead of the written-out layers of
            :mod:`biaslab.nn.recurrent`, which teach the same computation gate by gate. The
            parameters, their names and a seed's initial draws are the same (tested).

    Shapes:
        ``x (N, T, I)`` (or ``(N, T)`` when I = 1), ``lengths (N,)`` optional -> logits ``(N, C)``.
        The forward state is taken at each sequence's last step (``lengths[n] - 1``).
    """

    def forward(self, x: torch.Tensor, lengths: Sequence[int] | None = None) -> torch.Tensor:
        _, h_n = self._run(x, lengths)
        last = h_n[-self.num_directions :].transpose(0, 1)  # (D, N, H) -> (N, D, H)
        return self.head(last.flatten(1))  # (N, D*H) -> (N, C)


class SequenceTagger(_SequenceHead):
    """Sequence to sequence: the same ``Linear`` on the recurrent output of every step.

    Args:
        input_size: features I of each step (1 for a signal given as ``(N, T)``).
        hidden_size: state size H.
        output_size: outputs C per step.
        cell: ``"rnn"``, ``"lstm"`` (default) or ``"gru"``.
        num_layers: stacked layers (default 1).
        bidirectional: each step also sees the steps after it (default False: causal).
        dropout: between stacked layers (default 0.0).
        fused: torch's kernels instead of the written-out layers (see :class:`SequenceClassifier`).

    Shapes:
        ``x (N, T, I)`` (or ``(N, T)`` when I = 1), ``lengths (N,)`` optional -> ``(N, T, C)``;
        with ``lengths`` the outputs past a sequence's end are the bias alone (mask them in a loss).
    """

    def forward(self, x: torch.Tensor, lengths: Sequence[int] | None = None) -> torch.Tensor:
        output, _ = self._run(x, lengths)
        return self.head(output)  # (N, T, D*H) -> (N, T, C)
