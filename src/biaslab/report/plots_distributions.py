"""Figures of distributions: Gaussians as ellipses, likelihood decompositions, point clouds.

Each function returns a matplotlib ``Figure`` (see :mod:`biaslab.report.plots`).
"""

from __future__ import annotations

import numpy as np

from biaslab.generative.gaussian import confidence_ellipse
from biaslab.report.layout import TITLE_PT, subplots
from biaslab.report.layout import panels as panel_grid


def ellipses(gaussians: dict, samples: np.ndarray | None = None, title: str = ""):
    """2-D Gaussians as their 1- and 2-sigma ellipses (and their means), over optional samples."""
    fig, (ax,) = subplots(1, size=(5.5, 5.0))
    if samples is not None:
        ax.plot(samples[:, 0], samples[:, 1], ".", color="grey", alpha=0.4, ms=3, label="samples")
    for i, (label, (mean, cov)) in enumerate(gaussians.items()):
        for k, style in ((1, ":"), (2, "-")):
            ax.plot(
                *confidence_ellipse(mean, cov, k).T,
                style,
                color=f"C{i}",
                label=label if k == 2 else None,
            )
        ax.plot(*mean, "+", color=f"C{i}", ms=12, mew=2)
    ax.set_aspect("equal")
    ax.set_xlabel("x₁")
    ax.set_ylabel("x₂")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def nll_decomposition(rows: list[list]):
    """Stacked bars H + KL per model, with the measured mean NLL on top of each."""
    fig, (ax,) = subplots(1, size=(7.0, 4.2))
    names, nll, h, kl = (list(column) for column in zip(*rows))
    positions = np.arange(len(names))
    ax.bar(positions, h, color="C0", label="H(p̂): the data's entropy")
    ax.bar(positions, kl, bottom=h, color="C1", label="KL(p̂ || q)")
    ax.plot(positions, nll, "D", color="black", label="mean NLL, measured")
    ax.set_xticks(positions, names, fontsize=8)
    ax.set_ylabel("nats")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8)
    return fig


def point_clouds(panels: dict[str, np.ndarray], limit: float | None = None, size: float = 3.0):
    """2-D point sets, one panel each on equal axes (``limit``: ±limit on both), in a grid as
    wide as the report (:func:`~biaslab.report.layout.panels`)."""
    fig, axes, _ = panel_grid(len(panels), size=(size, size))
    for ax, (title, points) in zip(axes, panels.items()):
        points = np.asarray(points)
        ax.scatter(points[:, 0], points[:, 1], s=1.5, alpha=0.6, lw=0)
        if limit is not None:
            ax.set_xlim(-limit, limit)
            ax.set_ylim(-limit, limit)
        ax.set_aspect("equal")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(title, fontsize=TITLE_PT)
    return fig


def labelled_points(points: np.ndarray, labels, joins: list[tuple[int, int]] = ()):
    """2-D points, each with its label written beside it, and grey lines joining the given pairs
    (e.g. an embedding table projected on two axes, each residue n joined to n + c)."""
    fig, (ax,) = subplots(1, size=(5.5, 5.0))
    for i, j in joins:
        ax.plot(*points[[i, j]].T, "-", color="grey", lw=0.8, alpha=0.6)
    ax.plot(points[:, 0], points[:, 1], "o", color="C0", ms=5)
    for (x, y), label in zip(points, labels):
        ax.annotate(str(label), (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
    ax.set_aspect("equal")
    ax.set_xlabel("first principal component")
    ax.set_ylabel("second principal component")
    return fig
