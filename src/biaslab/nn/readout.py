"""Set2Set: a learned, attention-based readout from a graph's nodes to one vector.

A sum or mean over the nodes (eq. 5.12) weighs every atom alike. Set2Set (Vinyals et al. 2016,
the readout of Gilmer et al. 2017's best MPNN) lets an LSTM query the nodes T times, each time
attending to the ones its current state asks for:

    q_t   = LSTM(q*_{t−1})                          a query from the previous read-out
    e_i,t = h_i · q_t                               a score per node of the graph
    a_i,t = softmax_i(e_i,t)                        over the nodes of that graph only
    r_t   = Σ_i a_i,t h_i                           the attended read
    q*_t  = [q_t, r_t]                              (B, 2C); q*_0 = 0

The output q*_T is invariant to the order of the nodes (every node enters through the softmax
and the sum), as a readout must be.

:class:`Set2Set` equals torch-geometric's (tested).
"""

from __future__ import annotations

import torch
from torch import nn

from biaslab.nn._scatter import check_node_features, scatter, segment_softmax

__all__ = ["Set2Set"]


class Set2Set(nn.Module):
    """Set2Set readout (see the module docstring); the computation of ``torch_geometric.nn.aggr.Set2Set``.

    Args:
        in_channels: node features C.
        processing_steps: reads T (default 3).

    Shapes:
        ``x`` ``(N, C)``, ``batch`` ``(N,)`` int64 graph of each node, ``num_graphs`` B
        -> ``(B, 2C)``.
    """

    def __init__(self, in_channels: int, processing_steps: int = 3):
        super().__init__()
        if processing_steps < 1:
            raise ValueError(f"processing_steps must be at least 1, got {processing_steps}")
        self.in_channels, self.processing_steps = in_channels, processing_steps
        self.lstm = nn.LSTMCell(2 * in_channels, in_channels)

    def reset_parameters(self) -> None:
        self.lstm.reset_parameters()

    @property
    def out_channels(self) -> int:
        return 2 * self.in_channels

    def forward(self, x: torch.Tensor, batch: torch.Tensor, num_graphs: int) -> torch.Tensor:
        check_node_features(x, self.in_channels)
        state = (x.new_zeros(num_graphs, self.in_channels), x.new_zeros(num_graphs, self.in_channels))
        q_star = x.new_zeros(num_graphs, 2 * self.in_channels)  # q*_0 = 0
        for _ in range(self.processing_steps):
            state = self.lstm(q_star, state)
            q = state[0]  # q_t, (B, C)
            e = (x * q.index_select(0, batch)).sum(-1)  # e_i,t = h_i · q_t, (N,)
            a = segment_softmax(e, batch, num_graphs)  # (N,), sums to 1 within each graph
            r = scatter(a.unsqueeze(-1) * x, batch, num_graphs)  # r_t = Σ_i a_i,t h_i, (B, C)
            q_star = torch.cat([q, r], dim=-1)  # (B, 2C)
        return q_star
