"""Figures the labs share: decision boundaries, learning curves, 2-D embeddings, image grids.

Every function returns a matplotlib ``Figure`` (Agg backend, no display needed); experiments
hand it to ``ctx.figure(name, fig, caption)``, which saves and closes it. matplotlib is imported
on the first figure, not with this module: importing it costs ~0.75 s, and the registry imports
every lab (which imports this module) without drawing anything. A figure of several panels lays
them out with :func:`~biaslab.report.layout.panels`, a grid as wide as the report shows at natural
size, its text at least 9 pt (see :mod:`biaslab.report.layout`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from biaslab.report.layout import LABEL_PT, LEGEND_PT, TITLE_PT, log_scale_suits, pyplot, subplots
from biaslab.report.layout import panels as panel_grid

__all__ = ["pyplot", "subplots"]  # besides the figures: re-exported, other figure modules build on them

DIGIT_CMAP = "tab10"


def decision_boundary(
    ax,
    predict: Callable[[np.ndarray], np.ndarray],
    x: np.ndarray,
    y: np.ndarray,
    title: str = "",
    resolution: int = 200,
) -> None:
    """Shade ``predict`` (points (M, 2) -> class-1 probability (M,)) over the data's box.

    Shapes:
        x: (N, 2), y: (N,) integer labels.
    """
    pad = 0.5
    (x0, y0), (x1, y1) = x.min(0) - pad, x.max(0) + pad
    gx, gy = np.meshgrid(np.linspace(x0, x1, resolution), np.linspace(y0, y1, resolution))
    grid = np.stack([gx.ravel(), gy.ravel()], axis=1)  # (R*R, 2)
    prob = predict(grid).reshape(gx.shape)  # (R, R)
    ax.contourf(gx, gy, prob, levels=np.linspace(0, 1, 11), cmap="RdBu_r", alpha=0.6)
    ax.contour(gx, gy, prob, levels=[0.5], colors="k", linewidths=1.5)
    ax.scatter(x[:, 0], x[:, 1], c=y, cmap="RdBu_r", edgecolors="k", s=18, vmin=0, vmax=1)
    ax.set_title(title)
    ax.set_xlabel("$x_1$")
    ax.set_ylabel("$x_2$")


def learning_curves(
    histories: dict[str, list[dict]],
    keys: Sequence[str] = ("train_loss", "val_loss"),
    ylabels: dict[str, str] | None = None,
    logy: Sequence[str] = (),
):
    """One panel per key, one line per history; the x axis is the epoch.

    ``histories`` maps a label (e.g. ``"MLP"``) to a trainer history (list of epoch records).
    """
    fig, axes, _ = panel_grid(len(keys), size=(3.4, 3.0))
    for ax, key in zip(axes, keys):
        for label, history in histories.items():
            pts = [(r["epoch"], r[key]) for r in history if key in r and np.isfinite(r[key])]
            if pts:
                ep, val = zip(*pts)
                ax.plot(ep, val, marker="o", ms=3, label=label)
        ax.set_xlabel("epoch", fontsize=LABEL_PT)
        ax.set_ylabel((ylabels or {}).get(key, key.replace("_", " ")), fontsize=LABEL_PT)
        if key in logy:
            ax.set_yscale("log")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=LEGEND_PT)
    return fig


def embedding_scatter(
    ax, z: np.ndarray, labels: np.ndarray, title: str = "", max_points: int = 5000, seed: int = 0
) -> None:
    """Scatter a 2-D embedding ``z`` (N, 2) coloured by integer ``labels`` (N,), with a legend."""
    idx = np.random.default_rng(seed).permutation(len(z))[:max_points]
    sc = ax.scatter(z[idx, 0], z[idx, 1], c=labels[idx], cmap=DIGIT_CMAP, s=3, alpha=0.7, vmin=-0.5, vmax=9.5)
    ax.set_title(title)
    ax.set_xticks([])
    ax.set_yticks([])
    handles = [
        pyplot().Line2D([], [], marker="o", ls="", color=sc.cmap(sc.norm(k)), label=str(k))
        for k in np.unique(labels)
    ]
    ax.legend(handles=handles, fontsize=7, markerscale=1.2, loc="best", ncol=2, framealpha=0.7)


def image_grid(
    images: np.ndarray, row_labels: Sequence[str] | None = None, title: str = "", cell: float = 0.8
):
    """Show ``images`` of shape (rows, cols, H, W) as a grid of grey images.

    The grid is one mosaic on one axes, the images parted by blank lines a tenth of an image
    wide: a figure of rows x cols axes took 1 to 2 s to make and save for 100 to 225 images.
    """
    rows, cols, h, w = images.shape
    gap = max(1, round(0.1 * max(h, w)))
    blank = ((0, 0), (0, 0), (0, gap), (0, gap))  # after each image, below and to the right
    padded = np.pad(np.asarray(images, dtype=float), blank, constant_values=np.nan)
    # (rows, cols, h + gap, w + gap) -> (rows, h + gap, cols, w + gap) -> one image, the last gaps cut
    mosaic = padded.transpose(0, 2, 1, 3).reshape(rows * (h + gap), cols * (w + gap))[:-gap, :-gap]
    cmap = pyplot().get_cmap("gray_r").with_extremes(bad="white")
    fig, ax = pyplot().subplots(figsize=(cell * cols + 0.8, cell * rows + 0.5), layout="constrained")
    ax.imshow(mosaic, cmap=cmap, vmin=0, vmax=1)
    ax.set_xticks([])
    if row_labels is None:
        ax.set_yticks([])
    else:
        ax.set_yticks([r * (h + gap) + (h - 1) / 2 for r in range(rows)], list(row_labels), fontsize=9)
        ax.tick_params(axis="y", length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    if title:
        ax.set_title(title)
    return fig


def sweep_curves(
    histories: dict[str, list[dict]],
    chance: float | None = None,
    keys: tuple[str, str] = ("train_loss", "val_loss"),
):
    """Every history on ONE axis: ``keys[0]`` dashed, ``keys[1]`` solid, same colour per run.

    Non-finite values are dropped; the y axis is logarithmic so that a blow-up and a slow
    decline are both visible.
    """
    fig, (ax,) = subplots(1, size=(7.5, 4.8))
    colours = pyplot().rcParams["axes.prop_cycle"].by_key()["color"]
    for colour, (label, history) in zip(colours * 4, histories.items()):
        for key, style in zip(keys, ("--", "-")):
            pts = [(r["epoch"], r[key]) for r in history if key in r and np.isfinite(r[key])]
            if pts:
                ep, val = zip(*pts)
                ax.plot(ep, val, style, color=colour, marker="o", ms=3, label=label if style == "-" else None)
    if chance is not None:
        ax.axhline(chance, color="grey", lw=1, ls=":")
    ax.set_yscale("log")
    ax.set_xlabel("epoch")
    ax.set_ylabel("cross-entropy (train dashed, validation solid)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return fig


def power_law(x: Sequence[float], y: Sequence[float], law, fitted_from: float, xlabel: str, ylabel: str):
    """Measurements on log–log axes with a fitted power law (``evaluate.scaling.PowerLaw``)
    drawn over the range it was fitted on (x ≥ ``fitted_from``) and extended dotted below it."""
    fig, (ax,) = subplots(1, size=(6.0, 4.2))
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ax.loglog(x, y, "o", color="C0", label="measured")
    grid = np.geomspace(x.min(), x.max(), 100)
    inside = grid >= fitted_from
    ax.loglog(grid[inside], law(grid[inside]), "-", color="C1", label=f"fit: exponent {law.exponent:.2f}")
    ax.loglog(grid[~inside], law(grid[~inside]), ":", color="C1")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return fig


def curves(
    x: Sequence[float],
    series: dict[str, Sequence[float]],
    xlabel: str,
    ylabel: str,
    spread: dict[str, Sequence[float]] | None = None,
    reference: float | None = None,
    logx: bool = False,
    log_y: bool = False,
):
    """One line per model over a shared x (accuracy against shift, length, ...), with an optional
    ± ``spread`` band per series and a dotted horizontal ``reference`` (chance level)."""
    fig, (ax,) = subplots(1, size=(6.5, 4.4))
    for label, values in series.items():
        line = ax.plot(x, values, marker="o" if len(x) <= 30 else None, ms=4, label=label)[0]
        if spread and label in spread:
            low = np.asarray(values) - np.asarray(spread[label])
            high = np.asarray(values) + np.asarray(spread[label])
            ax.fill_between(x, low, high, color=line.get_color(), alpha=0.2)
    if reference is not None:
        ax.axhline(reference, color="grey", lw=1, ls=":", label="chance")
    if logx:
        ax.set_xscale("log")
    if log_y:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def heatmap(
    values: np.ndarray,
    rows: Sequence[str],
    columns: Sequence[str],
    title: str = "",
    log: bool = False,
    fmt: str = "{:.2g}",
    cmap: str = "viridis",
):
    """A matrix as coloured cells with its numbers written in (a table-heatmap). NaN cells (not
    applicable) stay blank; ``log`` colours by log10 of the values (errors spanning decades)."""
    values = np.asarray(values, dtype=float)
    fig, (ax,) = subplots(1, size=(1.1 * len(columns) + 2.5, 0.5 * len(rows) + 1.6))
    shown = np.log10(np.clip(values, 1e-16, None)) if log else values
    image = ax.imshow(np.ma.masked_invalid(shown), cmap=cmap, aspect="auto")
    ax.set_xticks(range(len(columns)), columns, rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    for (r, c), value in np.ndenumerate(values):
        if np.isfinite(value):
            bright = image.norm(shown[r, c]) > 0.6  # dark text on the bright end of the colour map
            ax.text(
                c,
                r,
                fmt.format(value),
                ha="center",
                va="center",
                fontsize=7,
                color="black" if bright else "white",
            )
    bar = fig.colorbar(image, ax=ax)
    bar.set_label("log10" if log else "")
    ax.set_title(title, fontsize=9)
    return fig


def spectral_layout(edge_index, n: int, seed: int = 0) -> np.ndarray:
    """2-D node positions from the graph Laplacian's two smallest non-trivial eigenvectors
    (communities land apart); a little seeded jitter separates nodes with equal coordinates."""
    edges = np.asarray(edge_index)
    adjacency = np.zeros((n, n))
    adjacency[edges[0], edges[1]] = 1.0
    adjacency = np.maximum(adjacency, adjacency.T)
    degree = adjacency.sum(1)
    scale = 1.0 / np.sqrt(np.maximum(degree, 1.0))
    laplacian = np.eye(n) - scale[:, None] * adjacency * scale[None, :]  # normalised: I - D^-1/2 A D^-1/2
    _, vectors = np.linalg.eigh(laplacian)
    positions = vectors[:, 1:3] * np.sqrt(np.maximum(degree, 1.0))[:, None]
    positions /= np.abs(positions).max(0, keepdims=True) + 1e-12
    return positions + np.random.default_rng(seed).normal(0, 0.02, positions.shape)


def graph_drawing(positions: np.ndarray, edge_index, panels: dict[str, np.ndarray], max_edges: int = 3000):
    """The same graph drawn once per panel, nodes coloured by that panel's labels (e.g. the true
    classes, then each model's predictions); at most ``max_edges`` edges drawn, evenly spaced."""
    from matplotlib.collections import LineCollection

    fig, axes, _ = panel_grid(len(panels), size=(3.4, 3.4))
    edges = np.asarray(edge_index)
    keep = edges[:, edges[0] < edges[1]]  # each undirected edge once
    keep = keep[:, :: max(1, keep.shape[1] // max_edges)]
    segments = np.stack([positions[keep[0]], positions[keep[1]]], axis=1)  # (E, 2, 2)
    for ax, (title, labels) in zip(axes, panels.items()):
        ax.add_collection(LineCollection(segments, colors="grey", linewidths=0.3, alpha=0.25))
        ax.scatter(positions[:, 0], positions[:, 1], c=labels, cmap=DIGIT_CMAP, s=6, vmin=0, vmax=9)
        ax.set_title(title, fontsize=TITLE_PT)
        ax.set_xticks([])
        ax.set_yticks([])
    return fig


def heatmap_pair(matrices: dict[str, np.ndarray], labels: Sequence[str]):
    """Square matrices side by side on one colour scale [0, 1] (attention weights: row = query
    position, column = key position), each cell annotated."""
    fig, axes, _ = panel_grid(len(matrices), size=(4.2, 3.9))
    for ax, (title, matrix) in zip(axes, matrices.items()):
        image = ax.imshow(matrix, vmin=0, vmax=1, cmap="Blues")
        ticks = range(len(labels))
        ax.set_xticks(ticks, labels, fontsize=LEGEND_PT, rotation=45)
        ax.set_yticks(ticks, labels, fontsize=LEGEND_PT)
        for (r, c), value in np.ndenumerate(matrix):
            colour = "black" if value < 0.6 else "white"
            ax.text(c, r, f"{value:.2f}", ha="center", va="center", fontsize=LEGEND_PT, color=colour)
        ax.set_xlabel("key position", fontsize=LABEL_PT)
        ax.set_ylabel("query position", fontsize=LABEL_PT)
        ax.set_title(title, fontsize=TITLE_PT)
    fig.colorbar(image, ax=axes[-1], fraction=0.046)
    return fig


def grouped_bars(
    groups: dict[str, Sequence[float]],
    labels: Sequence[str],
    errors: dict[str, Sequence[float]] | None = None,
    ylabel: str = "",
):
    """Bars per label, one colour per group (e.g. models x data variants), with error bars."""
    fig, (ax,) = subplots(1, size=(1.1 * len(labels) + 2.5, 4.2))
    width = 0.8 / len(groups)
    positions = np.arange(len(labels))
    for i, (group, values) in enumerate(groups.items()):
        spread = errors.get(group) if errors else None
        offset = (i - (len(groups) - 1) / 2) * width
        ax.bar(positions + offset, values, width, yerr=spread, capsize=3, label=group)
    ax.set_xticks(positions, labels)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8)
    return fig


def reliability_diagrams(diagrams: dict):
    """One panel per ``evaluate.calibration.ReliabilityDiagram``: accuracy per confidence bin as
    bars against the diagonal of perfect calibration, the gap shaded."""
    fig, axes, _ = panel_grid(len(diagrams), size=(4.2, 4.2))
    for ax, (title, d) in zip(axes, diagrams.items()):
        width = d.edges[1] - d.edges[0]
        left = d.edges[:-1]
        accuracy, confidence = d.accuracy[:-1], d.confidence[:-1]  # the regular bins
        full = d.counts[:-1] > 0
        ax.bar(left[full], accuracy[full], width, align="edge", color="C0", edgecolor="w", label="accuracy")
        ax.bar(
            left[full], confidence[full] - accuracy[full], width, bottom=accuracy[full], align="edge",
            color="C3", alpha=0.35, label="gap to confidence",
        )  # fmt: skip
        ax.plot([0, 1], [0, 1], ":", color="grey")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel("confidence", fontsize=LABEL_PT)
        ax.set_ylabel("accuracy", fontsize=LABEL_PT)
        ax.set_title(title, fontsize=TITLE_PT)
        ax.legend(fontsize=LEGEND_PT, loc="upper left")
    return fig


def score_histograms(
    panels: dict[str, tuple[np.ndarray, np.ndarray]],
    bins: int = 40,
    names: tuple[str, str] = ("in (MNIST)", "out"),
):
    """One panel per detector: histograms of the in-distribution and out-of-distribution scores
    (``names``: the two sets, for the legend) over shared bins, as the share of each set per bin
    (sets of different sizes compare).

    The panels form a grid as wide as the report (five make 3 + 2, the legend in the spare cell).
    A score whose values span a wide range (:func:`~biaslab.report.layout.log_scale_suits`, a
    rule on the data: e.g. Mahalanobis distances) gets a logarithmic axis and bins of equal
    width on it.
    """
    fig, axes, spare = panel_grid(len(panels), size=(3.4, 2.8))
    for ax, (title, (inside, outside)) in zip(axes, panels.items()):
        inside, outside = np.asarray(inside, dtype=float), np.asarray(outside, dtype=float)
        both = np.concatenate([inside, outside])
        log = log_scale_suits(both)
        edges = np.geomspace(both.min(), both.max(), bins + 1) if log else np.histogram_bin_edges(both, bins)
        for scores, label in zip((inside, outside), names):
            ax.hist(
                scores, edges, weights=np.full(len(scores), 1 / max(len(scores), 1)), alpha=0.6, label=label
            )
        if log:
            ax.set_xscale("log")
        ax.set_title(title, fontsize=TITLE_PT)
        ax.set_xlabel("score, log scale" if log else "score", fontsize=LABEL_PT)
        ax.set_ylabel("share of the set", fontsize=LABEL_PT)
    handles, names = axes[0].get_legend_handles_labels()
    where = spare[0] if spare else axes[0]
    where.legend(handles, names, loc="center" if spare else "best", fontsize=LABEL_PT if spare else LEGEND_PT,
                 title="higher score = more OOD", title_fontsize=LEGEND_PT)  # fmt: skip
    return fig


def error_vs_data(
    curves: dict[str, dict[str, tuple[Sequence[int], Sequence[float]]]], target: float | None = None
):
    """Learning curves on log–log axes: validation error against the training-set size.

    ``curves[model][variant] = (sizes, errors)``: one colour per model (each over its own sizes),
    one line style per variant (the first solid, then dashed, dotted), and a grey dashed
    horizontal ``target`` error."""
    fig, (ax,) = subplots(1, size=(6.5, 4.4))
    styles = ("-", "--", ":", "-.")
    for i, (model, variants) in enumerate(curves.items()):
        for style, (variant, (sizes, errors)) in zip(styles, variants.items()):
            label = f"{model}, {variant}" if variant else model
            ax.loglog(sizes, errors, ls=style, marker="o", ms=4, color=f"C{i}", label=label)
    if target is not None:
        ax.axhline(target, color="grey", lw=1, ls="--", label=f"required: {target:g}")
    ax.set_xlabel("training examples")
    ax.set_ylabel("validation error")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return fig


def requirement_panels(measures: dict[str, dict[str, float]], requirements: dict[str, tuple[float, str]]):
    """One panel per measure (accuracy, ECE, ...): a bar per model and the requirement as a
    dashed line; ``requirements[measure] = (threshold, ">=" or "<=")``. A bar that misses its
    requirement is drawn hatched. The panels form a grid as wide as the report (four make 2 x 2)."""
    fig, axes, _ = panel_grid(len(measures), size=(3.8, 3.4))
    for ax, (measure, values) in zip(axes, measures.items()):
        threshold, sense = requirements[measure]
        names, heights = list(values), [values[n] for n in values]
        met = [h >= threshold if sense == ">=" else h <= threshold for h in heights]
        bars = ax.bar(range(len(names)), heights, color=[f"C{i}" for i in range(len(names))])
        for bar, ok in zip(bars, met):
            bar.set_hatch("" if ok else "//")
            bar.set_alpha(1.0 if ok else 0.5)
        ax.axhline(threshold, color="black", lw=1, ls="--")
        ax.set_xticks(range(len(names)), names, rotation=20, ha="right", fontsize=LEGEND_PT)
        ax.set_title(f"{measure} (required {sense} {threshold:g})", fontsize=LABEL_PT)
        ax.grid(alpha=0.3, axis="y")
    return fig
