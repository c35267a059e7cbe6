"""Figures of what networks of a given width can represent and what training finds: fitted
functions against their target, and the share of trainings that reach a target loss.

Each function returns a matplotlib ``Figure`` (see :mod:`biaslab.report.plots`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from biaslab.report.layout import LABEL_PT, LEGEND_PT, TITLE_PT, subplots
from biaslab.report.layout import panels as panel_grid


def fits_against_target(
    x: Sequence[float],
    target: Sequence[float],
    reference: tuple[str, Sequence[float]],
    panels: Mapping[str, Mapping[str, Sequence[float]]],
):
    """One panel per group of fitted functions (``panels[title][label] = values`` on ``x``), each
    drawn over the ``target`` (black) and a ``reference`` fit ``(label, values)`` (dashed), e.g.
    the best monotone fit beside width-1 and width-2 networks.

    Shapes:
        x, target, the reference's values and every fit's values: ``(n,)``.
    """
    fig, axes, _ = panel_grid(len(panels), size=(4.2, 3.6))
    for ax, (title, fits) in zip(axes, panels.items()):
        ax.plot(x, target, color="black", lw=2.2, label="target")
        ax.plot(x, reference[1], color="grey", lw=1.6, ls="--", label=reference[0])
        for i, (label, values) in enumerate(fits.items()):
            ax.plot(x, values, color=f"C{i}", lw=1.3, label=label)
        ax.set_title(title, fontsize=TITLE_PT)
        ax.set_xlabel("x", fontsize=LABEL_PT)
        ax.set_ylabel("f(x)", fontsize=LABEL_PT)
        low, high = ax.get_ylim()
        ax.set_ylim(low, high + 0.7 * (high - low))  # room for the legend above the curves
        ax.grid(alpha=0.3)
        ax.legend(fontsize=LEGEND_PT, loc="upper left")
    return fig


def share_against_width(
    widths: Sequence[int],
    shares: Sequence[float],
    losses: Sequence[Sequence[float]],
    target: float,
    exact_width: int,
    loss_label: str,
):
    """Left: the share of trainings reaching ``target`` at each width; right: every training's
    loss (one dot per seed, log axis) with the target as a dotted line. The width at which the
    task is exactly representable, ``exact_width``, is marked on both.

    Shapes:
        widths, shares ``(W,)``; losses ``(W, seeds)`` (a list of lists).
    """
    fig, (left, right) = subplots(2, size=(4.2, 3.4))
    left.plot(widths, shares, marker="o", ms=5, color="C0")
    left.set_ylim(-0.05, 1.05)
    left.set_ylabel("share of seeds reaching the target", fontsize=LABEL_PT)
    offsets = np.linspace(-0.08, 0.08, max(len(losses[0]), 1))
    for width, values in zip(widths, losses):
        right.scatter(width * 2.0 ** offsets[: len(values)], np.maximum(values, 1e-16), s=12, color="C0")
    right.axhline(target, color="grey", ls=":", lw=1.2, label=f"target {target:g}")
    right.set_yscale("log")
    right.set_ylabel(loss_label, fontsize=LABEL_PT)
    right.legend(fontsize=LEGEND_PT)
    for ax in (left, right):
        ax.axvline(exact_width, color="C3", lw=1, ls="--", alpha=0.7)
        ax.set_xscale("log", base=2)
        ax.set_xticks(list(widths), [str(w) for w in widths])
        ax.set_xlabel("student width (dashed: the teacher's)", fontsize=LABEL_PT)
        ax.grid(alpha=0.3)
    return fig
