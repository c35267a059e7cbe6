"""Index operations behind the graph layers, in plain torch (no torch_scatter, no torch_sparse).

    scatter:          out_i = ⊕_{e : index_e = i} src_e        (⊕ = sum, mean or max; empty -> 0)
    segment_softmax:  α_e = exp(s_e - m_i) / Σ_{e' : index_e' = i} exp(s_e' - m_i),  m_i = max s

    global pooling:   h_G = ⊕_{i ∈ G} h_i                                              (eq. 5.12)

plus the checks every graph layer runs on its inputs and the self-loop helpers of GCN and GAT.
The pooling functions are public as ``biaslab.nn.graph.global_add_pool`` etc.
"""

from __future__ import annotations

import torch

REDUCTIONS = ("sum", "mean", "max")


def scatter(src: torch.Tensor, index: torch.Tensor, dim_size: int, reduce: str = "sum") -> torch.Tensor:
    """Reduces the rows of ``src`` into ``dim_size`` slots: row e goes to slot ``index[e]``.

    Args:
        src: ``(E, *)`` values, one row per edge.
        index: ``(E,)`` int64 slot of each row.
        dim_size: number of slots (nodes or graphs).
        reduce: ``"sum"`` (default), ``"mean"`` or ``"max"``; a slot that receives nothing is 0.

    Shapes:
        ``(E, *)`` -> ``(dim_size, *)``.
    """
    if reduce not in REDUCTIONS:
        raise ValueError(f"aggregation must be one of {REDUCTIONS}, got {reduce!r}")
    out = src.new_zeros((dim_size, *src.shape[1:]))
    if reduce == "sum":
        return out.index_add(0, index, src)
    expanded = index.view(-1, *[1] * (src.dim() - 1)).expand_as(src)
    # include_self=False: the zeros are ignored where a slot receives values, kept where it receives none
    return out.scatter_reduce(0, expanded, src, "mean" if reduce == "mean" else "amax", include_self=False)


def segment_softmax(src: torch.Tensor, index: torch.Tensor, dim_size: int) -> torch.Tensor:
    """Softmax of ``src`` over the rows that share an ``index`` (the edges into one node).

    The per-segment maximum is subtracted before ``exp`` (detached: softmax does not depend on
    it), so large scores do not overflow.

    Shapes:
        ``src`` ``(E, *)``, ``index`` ``(E,)`` -> ``(E, *)``, summing to 1 over each segment.
    """
    shift = scatter(src.detach(), index, dim_size, "max").index_select(0, index)
    weights = (src - shift).exp()
    total = scatter(weights, index, dim_size, "sum").index_select(0, index)
    return weights / (total + 1e-16)


def check_node_features(x: torch.Tensor, channels: int, name: str = "x") -> None:
    """A ``(num_nodes, channels)`` floating tensor, or a ValueError naming what is wrong."""
    if not isinstance(x, torch.Tensor) or x.dim() != 2:
        shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"{name} must be a (num_nodes, {channels}) tensor, got {shape}")
    if x.size(1) != channels:
        raise ValueError(f"{name} must have {channels} features per node, got {x.size(1)}")
    if not x.is_floating_point():
        raise ValueError(f"{name} must be a floating-point tensor, got {x.dtype}")


def check_edge_index(edge_index: torch.Tensor, num_src: int, num_dst: int | None = None) -> None:
    """A ``(2, E)`` int64 tensor with sources in [0, num_src) and targets in [0, num_dst)."""
    num_dst = num_src if num_dst is None else num_dst
    if not isinstance(edge_index, torch.Tensor) or edge_index.dim() != 2 or edge_index.size(0) != 2:
        shape = tuple(edge_index.shape) if isinstance(edge_index, torch.Tensor) else type(edge_index).__name__
        raise ValueError(f"edge_index must have shape (2, num_edges) (sources, targets), got {shape}")
    if edge_index.dtype != torch.long:
        raise ValueError(f"edge_index must hold int64 node indices, got {edge_index.dtype}")
    if edge_index.numel() == 0:
        return
    for row, name, bound in ((0, "source", num_src), (1, "target", num_dst)):
        low, high = int(edge_index[row].min()), int(edge_index[row].max())
        if low < 0 or high >= bound:
            bad = low if low < 0 else high
            raise ValueError(f"edge_index has {name} node {bad}, outside [0, {bound}) for {bound} nodes")


def check_edge_values(values: torch.Tensor, num_edges: int, name: str, width: int | None = None) -> None:
    """``(E,)`` values (``width`` None) or ``(E, width)`` features, one row per edge."""
    expected = (num_edges,) if width is None else (num_edges, width)
    if not isinstance(values, torch.Tensor) or tuple(values.shape) != expected:
        shape = tuple(values.shape) if isinstance(values, torch.Tensor) else type(values).__name__
        raise ValueError(f"{name} must have shape {expected} (one row per edge), got {shape}")


def add_remaining_self_loops(
    edge_index: torch.Tensor, edge_weight: torch.Tensor, fill_value: float, num_nodes: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """One self-loop (i, i) per node: an existing loop keeps its weight, a new one gets ``fill_value``."""
    is_loop = edge_index[0] == edge_index[1]
    loop_weight = edge_weight.new_full((num_nodes,), fill_value)
    loop_weight[edge_index[0, is_loop]] = edge_weight[is_loop]
    nodes = torch.arange(num_nodes, device=edge_index.device)
    edge_index = torch.cat([edge_index[:, ~is_loop], torch.stack([nodes, nodes])], dim=1)
    return edge_index, torch.cat([edge_weight[~is_loop], loop_weight])


def with_self_loops(edge_index: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """The edges with every self-loop removed, then exactly one (i, i) per node appended."""
    nodes = torch.arange(num_nodes, device=edge_index.device)
    kept = edge_index[:, edge_index[0] != edge_index[1]]
    return torch.cat([kept, torch.stack([nodes, nodes])], dim=1)


def _pool(x: torch.Tensor, batch: torch.Tensor | None, size: int | None, reduce: str) -> torch.Tensor:
    if x.dim() != 2:
        raise ValueError(f"node features must have shape (num_nodes, F), got {tuple(x.shape)}")
    if batch is None:
        return scatter(x, x.new_zeros(x.size(0), dtype=torch.long), 1, reduce)
    if batch.dim() != 1 or batch.size(0) != x.size(0) or batch.dtype != torch.long:
        raise ValueError(
            f"batch must be an int64 tensor of shape ({x.size(0)},), one graph index per node, "
            f"got {batch.dtype} of shape {tuple(batch.shape)}"
        )
    if size is None:
        size = int(batch.max()) + 1 if batch.numel() else 0
    if batch.numel() and (int(batch.min()) < 0 or int(batch.max()) >= size):
        raise ValueError(f"batch holds graph indices outside [0, {size})")
    return scatter(x, batch, size, reduce)


def global_add_pool(
    x: torch.Tensor, batch: torch.Tensor | None = None, size: int | None = None
) -> torch.Tensor:
    """h_G = Σ_{i ∈ G} h_i for each graph G (eq. 5.12): ``(N, F)``, ``batch`` ``(N,)`` -> ``(B, F)``.

    ``batch`` None means one graph (``(1, F)``); ``size`` is the number of graphs B (default
    ``batch.max() + 1``); a graph without nodes pools to 0.
    """
    return _pool(x, batch, size, "sum")


def global_mean_pool(
    x: torch.Tensor, batch: torch.Tensor | None = None, size: int | None = None
) -> torch.Tensor:
    """h_G = mean_{i ∈ G} h_i for each graph; arguments as :func:`global_add_pool`."""
    return _pool(x, batch, size, "mean")


def global_max_pool(
    x: torch.Tensor, batch: torch.Tensor | None = None, size: int | None = None
) -> torch.Tensor:
    """h_G = max_{i ∈ G} h_i (per feature) for each graph; arguments as :func:`global_add_pool`."""
    return _pool(x, batch, size, "max")
