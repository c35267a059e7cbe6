"""Figures of what training does to the weights (their histograms, regularisation paths) and of
what it buys (the loss against the compute spent).

Each function returns a matplotlib ``Figure`` (see :mod:`biaslab.report.plots`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from biaslab.report.layout import LABEL_PT, LEGEND_PT, TITLE_PT, subplots
from biaslab.report.layout import panels as panel_grid


def weight_histograms(edges: np.ndarray, panels: dict[str, tuple[np.ndarray, int, int]]):
    """One panel per model: the histogram of its weights over shared ``edges`` (counts on a log
    axis, so that the tails and a spike at zero both show); ``panels[title] = (counts, exact
    zeros, weights)``, the exact zeros named in the title."""
    fig, axes, _ = panel_grid(len(panels), size=(3.4, 2.6))
    centres = (edges[:-1] + edges[1:]) / 2
    for ax, (title, (counts, zeros, total)) in zip(axes, panels.items()):
        ax.bar(centres, np.maximum(counts, 0.5), width=np.diff(edges), bottom=0.5, color="C0")
        ax.set_yscale("log")
        ax.set_title(f"{title}\n{zeros:,} of {total:,} exactly 0", fontsize=TITLE_PT)
        ax.set_xlabel("weight", fontsize=LABEL_PT)
        ax.set_ylabel("count", fontsize=LABEL_PT)
    return fig


def regularisation_paths(
    path: tuple[Sequence[float], Sequence[float]],
    points: dict[str, tuple[Sequence[float], Sequence[float], Sequence[str]]],
    xlabel: str,
    ylabel: str,
):
    """A path traced by training time (a line, ``path = (x, y)`` per epoch) beside models each
    trained with one strength (``points[label] = (x, y, annotations)``), e.g. the validation loss
    against the distance from the initial weights."""
    fig, (ax,) = subplots(1, size=(6.5, 4.4))
    ax.plot(*path, "-", color="C0", lw=1.5, label="no penalty, epoch by epoch (early stopping picks one)")
    for i, (label, (x, y, notes)) in enumerate(points.items(), start=1):
        ax.plot(x, y, "o", color=f"C{i}", ms=6, label=label)
        for xi, yi, note in zip(x, y, notes):
            ax.annotate(note, (xi, yi), textcoords="offset points", xytext=(4, 4), fontsize=LEGEND_PT)
    ax.set_xlabel(xlabel, fontsize=LABEL_PT)
    ax.set_ylabel(ylabel, fontsize=LABEL_PT)
    ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=LEGEND_PT)
    return fig


def loss_against_compute(
    curves: dict[str, tuple[Sequence[float], Sequence[float]]], frontier, law, ylabel: str
):
    """Each model's loss against the compute spent so far (thin lines, log–log), the
    compute-efficient frontier over them all (dots) and the power law fitted to it
    (``evaluate.scaling.PowerLaw``): Kaplan et al. 2020's Fig. 1, left."""
    fig, (ax,) = subplots(1, size=(6.5, 4.4))
    for label, (compute, loss) in curves.items():
        ax.loglog(compute, loss, "-", lw=1, alpha=0.7, label=label)
    x, y = np.asarray(frontier[0], dtype=float), np.asarray(frontier[1], dtype=float)
    ax.loglog(x, y, "o", color="black", ms=4, label="compute-efficient frontier")
    grid = np.geomspace(x.min(), x.max(), 100)
    ax.loglog(grid, law(grid), "--", color="black", label=f"fit: exponent {law.exponent:.3f}")
    ax.set_xlabel("training compute (floating-point operations)")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=LEGEND_PT, ncol=2)
    return fig
