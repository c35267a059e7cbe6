"""Reading a user's graphs: a ``.pt`` file holding a list of torch-geometric ``Data``, or an NPZ
edge list of many graphs (global node ids, the graph of each node).

Each graph needs node features ``x`` (n_i, F) with one F for all, an ``edge_index`` (2, E_i)
of its own nodes, and one graph-level label ``y``; the graphs are copied with float32 features,
and :func:`~biaslab.data.user_data.load_user_data` writes the encoded label into each ``y``.
torch-geometric is imported only here, when a graph file is read.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import numpy as np

from biaslab.data.user_formats import (
    GRAPH_EXTRA,
    Loaded,
    check_finite,
    check_memory_for,
    label_array,
    numeric_array,
    size_text,
    where,
)
from biaslab.errors import ConfigError, DataFormatError, DataMissingError
from biaslab.fileio import torch_zip_bytes
from biaslab.formatting import quoted

__all__ = ["read_edge_list", "read_graph_list"]


def _require_pyg(path: Path) -> None:
    if importlib.util.find_spec("torch_geometric") is None:
        raise DataMissingError(f"reading the graphs of {where(path)} needs torch-geometric: {GRAPH_EXTRA}")


def read_graph_list(path: Path, kind: str | None, labelled: bool = True) -> Loaded:
    """A ``.pt`` file holding a list of torch-geometric ``Data``, each with node features ``x``
    (n_i, F), ``edge_index`` (2, E_i) and a graph-level label ``y`` (one value; not read when
    ``labelled`` is False: new graphs to predict).

    Loaded with ``torch.load(weights_only=True)``: no code runs. PyG 2.8 registers ``Data`` as a
    safe global, but a pickled ``Data`` also names ``DataEdgeAttr``, ``DataTensorAttr`` and
    ``GlobalStorage``, admitted here for this one load (``torch.serialization.safe_globals``).
    Before it, the sizes the file's zip directory declares (what ``torch.load`` allocates) are
    checked against the free memory (:func:`~biaslab.data.user_formats.check_memory_for`).

    Raises:
        ConfigError: a kind other than ``graph``.
        DataFormatError: not a list of ``Data``, a graph :func:`_graphs` refuses (no nodes or
            features, edges that are not integer node ids, a label that is not one real
            number), or more data than the free memory.
        DataMissingError: torch-geometric is not installed, or torch is older than 2.5.
    """
    if kind not in (None, "graph"):
        raise ConfigError(f"kind '{kind}' contradicts {where(path)}: a .pt file is read as a list of graphs")
    _require_pyg(path)
    import torch
    from torch_geometric.data import Data
    from torch_geometric.data.data import DataEdgeAttr, DataTensorAttr
    from torch_geometric.data.storage import GlobalStorage

    safe_globals = getattr(torch.serialization, "safe_globals", None)  # torch >= 2.5
    if safe_globals is None:
        raise DataMissingError(
            f"reading {where(path)} safely needs torch >= 2.5 (weights_only with torch-geometric Data); "
            "save the graphs as an .npz edge list instead"
        )
    _check_unpacked_size(path)
    try:
        with safe_globals([Data, DataEdgeAttr, DataTensorAttr, GlobalStorage]):
            graphs = torch.load(path, weights_only=True, map_location="cpu")
    except Exception as exc:  # unpickling errors have no common base
        unsafe = re.search(r"Unsupported global: GLOBAL ([\w.]+)", str(exc))
        reason = f"it holds {unsafe[1]}" if unsafe else quoted(" ".join(str(exc).split()), 120)
        raise DataFormatError(
            f"{where(path)} cannot be loaded as a list of torch-geometric Data with weights_only "
            f"(tensors and Data only): {reason}"
        ) from None
    if not isinstance(graphs, (list, tuple)) or not all(isinstance(g, Data) for g in graphs):
        raise DataFormatError(
            f"{where(path)} holds {type(graphs).__name__}; expected a list of torch_geometric Data"
        )
    return _graphs(list(graphs), path, ["kind graph: a list of torch-geometric Data"], labelled)


def _check_unpacked_size(path: Path) -> None:
    """Refuse a ``.pt`` file unless it is torch's zip format with members that unpack to less
    than the free memory: ``torch.load`` allocates each record at the size the zip directory
    declares, however small the file; the legacy format (before torch 1.6) declares its storage
    sizes inside the pickle, so what it allocates cannot be known before it is loaded."""
    total = torch_zip_bytes(path)
    if total is None:
        raise DataFormatError(
            f"{where(path)} is not a .pt file in torch's zip format (what torch.save writes since "
            "torch 1.6; the legacy format is refused, since what it allocates cannot be checked "
            "before loading): load it and save it again with torch.save"
        )
    check_memory_for(f"{where(path)} unpacks to {size_text(total)}, so loading it", total)


def _graphs(graphs: list, path: Path, notes: list[str], labelled: bool = True) -> Loaded:
    """Check each graph and copy it with float32 features and int64 edges.

    Guaranteed of each graph: node features x, a (n_i, F) tensor of real numbers, all finite,
    with n_i >= 1 and one F >= 1 for all; an edge_index, a 2×E tensor of integers (int8 to
    int64 or uint8: never bool, float or complex) naming nodes 0..n_i-1; one real label y
    (when ``labelled``; else ``y`` is not read and the Loaded's ``y`` is empty).
    """
    import torch

    integers = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)
    labels, checked, width = [], [], None
    for i, graph in enumerate(graphs):
        x, edges, y = graph.get("x"), graph.get("edge_index"), graph.get("y")
        if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.is_complex() or x.dtype == torch.bool:
            raise DataFormatError(
                f"{where(path)}: graph {i} has no node features x (a num_nodes×F tensor of numbers)"
            )
        if x.shape[0] == 0:
            raise DataFormatError(f"{where(path)}: graph {i} has no nodes (x is 0×{x.shape[1]})")
        width = x.shape[1] if width is None else width
        if x.shape[1] != width:
            raise DataFormatError(
                f"{where(path)}: graph {i} has {x.shape[1]} node features, graph 0 has {width}"
            )
        if width == 0:
            raise DataFormatError(
                f"{where(path)}: graph {i} has 0 node features; each node needs at least one"
            )
        if not torch.isfinite(x.float()).all():
            raise DataFormatError(f"{where(path)}: graph {i}'s node features hold NaN or infinite values")
        if edges is None:
            edges = torch.zeros(2, 0, dtype=torch.long)
        if not isinstance(edges, torch.Tensor) or edges.dtype not in integers:
            what = str(edges.dtype).removeprefix("torch.") if isinstance(edges, torch.Tensor) else None
            raise DataFormatError(
                f"{where(path)}: graph {i}'s edge_index is {what or 'a ' + type(edges).__name__}; "
                "it must be a 2×E tensor of integer node indices (torch.long)"
            )
        if edges.dim() != 2 or edges.shape[0] != 2:
            shape = "×".join(map(str, edges.shape))
            raise DataFormatError(
                f"{where(path)}: graph {i}'s edge_index is {shape}; it must be a 2×E tensor of node indices"
            )
        if edges.numel() and (edges.min() < 0 or edges.max() >= x.shape[0]):
            raise DataFormatError(
                f"{where(path)}: graph {i}'s edge_index names a node outside 0..{x.shape[0] - 1}"
            )
        if labelled:
            labels.append(_label_of(y, i, path))
        copy = graph.clone()
        copy.x, copy.edge_index = x.float(), edges.long()
        checked.append(copy)
    if not checked:
        raise DataFormatError(f"{where(path)} holds no graphs")
    names = tuple(f"x{j}" for j in range(width))
    return Loaded("graph", None, np.array(labels), names, graphs=checked, notes=notes)


def _label_of(y, i: int, path: Path) -> float:
    """Graph ``i``'s one real label."""
    import torch

    if not isinstance(y, torch.Tensor) or y.numel() != 1:
        count = "no y" if not isinstance(y, torch.Tensor) else f"a y of {y.numel()} values"
        raise DataFormatError(
            f"{where(path)}: graph {i} has {count}; each graph needs one graph-level label y"
        )
    if y.is_complex():
        raise DataFormatError(
            f"{where(path)}: graph {i}'s label y is {str(y.dtype).removeprefix('torch.')}; "
            "labels must be real numbers (complex ones are not read)"
        )
    return y.reshape(()).item()


def read_edge_list(arrays: dict[str, np.ndarray], path: Path, labelled: bool = True) -> Loaded:
    """Graphs from one edge list: ``edge_index`` (2, E) global node ids, ``node_graph`` (N,) the
    graph of each node (0..G-1), ``x`` (N, F) node features, ``y`` (G,) one label per graph
    (``labelled`` False, new graphs to predict: no ``y``, or one that is not read; G is then
    one more than the largest of ``node_graph``)."""
    needed = ("node_graph", "x", "y") if labelled else ("node_graph", "x")
    missing = [k for k in needed if k not in arrays]
    if missing:
        raise DataFormatError(
            f"{where(path)} holds edge_index but not {', '.join(missing)}; an edge list needs "
            f"edge_index (2, E), node_graph (N,), x (N, F){', y (G,)' if labelled else ''}"
        )
    _require_pyg(path)
    import torch
    from torch_geometric.data import Data

    edges, owner = arrays["edge_index"], arrays["node_graph"]
    x = numeric_array(arrays["x"], "x", path)
    if labelled:
        y = label_array(arrays["y"], path)
    else:  # only the number of graphs is read: one more than the largest graph id
        y = np.zeros(int(owner.max()) + 1 if owner.size and owner.dtype.kind in "iu" else 0)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2 or owner.shape != (len(x),) or owner.dtype.kind not in "iu":
        raise DataFormatError(
            f"{where(path)}: expected x (N, F) and node_graph (N,) of integers, one per node"
        )
    if edges.ndim != 2 or edges.shape[0] != 2 or edges.dtype.kind not in "iu":
        raise DataFormatError(f"{where(path)}: edge_index must be 2×E integer node ids")
    check_finite(x, "x", path)
    if len(owner) and (owner.min() < 0 or owner.max() >= len(y)):
        why = f" (y has {len(y)} labels)" if labelled else ": graph ids count from 0"
        raise DataFormatError(f"{where(path)}: node_graph names graphs outside 0..{len(y) - 1}{why}")
    if edges.size and (edges.min() < 0 or edges.max() >= len(x)):
        raise DataFormatError(f"{where(path)}: edge_index names nodes outside 0..{len(x) - 1}")
    crossing = np.flatnonzero(owner[edges[0]] != owner[edges[1]]) if edges.size else []
    if len(crossing):
        e = int(crossing[0])
        a, b = int(edges[0, e]), int(edges[1, e])
        raise DataFormatError(
            f"{where(path)}: edge {e} joins node {a} (graph {owner[a]}) and node {b} (graph {owner[b]})"
        )
    counts = np.bincount(owner, minlength=len(y))
    if (counts == 0).any():
        raise DataFormatError(f"{where(path)}: graph {int(np.argmin(counts))} has no nodes in node_graph")
    order = np.argsort(owner, kind="stable")
    local = np.empty(len(owner), dtype=np.int64)
    local[order] = np.arange(len(owner)) - np.repeat(np.cumsum(counts) - counts, counts)
    edge_owner = owner[edges[0]] if edges.size else np.zeros(0, dtype=np.int64)
    ends, graphs = np.cumsum(counts), []
    for g in range(len(y)):
        nodes, own = order[ends[g] - counts[g] : ends[g]], edge_owner == g
        graphs.append(
            Data(
                x=torch.from_numpy(x[nodes].astype(np.float32)),
                edge_index=torch.from_numpy(local[edges[:, own]].astype(np.int64)),
                y=torch.tensor([g]),  # replaced by the encoded label
            )
        )
    loaded = _graphs(graphs, path, ["kind graph: an edge list (edge_index, node_graph, x, y)"], labelled)
    if labelled:
        loaded.y = y
    return loaded
