"""Figures of attention read from a trained model: which position each query reads from.

Each function returns a matplotlib ``Figure`` (see :mod:`biaslab.report.plots`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from biaslab.report.layout import LABEL_PT, LEGEND_PT, TITLE_PT
from biaslab.report.layout import panels as panel_grid


def query_attention(
    panels: dict[str, np.ndarray],
    tokens: Sequence[Sequence[str]],
    marked: Sequence[int],
    columns: Sequence[str],
):
    """One query's attention weights per row (one sequence each), a panel per model or head, on
    one colour scale [0, 1]; each cell shows its token and weight, and the cell ``marked[row]``
    (the position the query should read from) is outlined in red.

    Shapes:
        each panel (R, S); tokens R rows of S labels; marked (R,); columns S labels.
    """
    from matplotlib.patches import Rectangle

    first = next(iter(panels.values()))
    rows, width = first.shape
    fig, axes, _ = panel_grid(len(panels), size=(0.75 * width + 1.3, 0.5 * rows + 1.3))
    for ax, (title, weights) in zip(axes, panels.items()):
        image = ax.imshow(weights, vmin=0, vmax=1, cmap="Blues", aspect="auto")
        for (r, c), value in np.ndenumerate(weights):
            colour = "black" if value < 0.6 else "white"
            ax.text(c, r, f"{tokens[r][c]}\n{value:.2f}", ha="center", va="center", fontsize=LEGEND_PT,
                    color=colour)  # fmt: skip
        for r, c in enumerate(marked):
            ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=2))
        ax.set_xticks(range(width), columns, fontsize=LEGEND_PT)
        ax.set_yticks(range(rows), [f"seq {r + 1}" for r in range(rows)], fontsize=LEGEND_PT)
        ax.set_xlabel("key position (red: the matching key)", fontsize=LABEL_PT)
        ax.set_title(title, fontsize=TITLE_PT)
    fig.colorbar(image, ax=axes[len(panels) - 1], fraction=0.046)
    return fig
