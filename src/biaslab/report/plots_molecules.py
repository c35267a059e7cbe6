"""Figures of the QM9 benchmark: error against the amount of data, per model, on log-log axes.

Each function returns a matplotlib ``Figure`` (see :mod:`biaslab.report.plots`).
"""

from __future__ import annotations

import numpy as np

from biaslab.report.plots import subplots


def mae_learning_curves(
    summary: dict[str, dict[int, tuple[float, float]]],
    laws: dict,
    references: dict[str, float],
    chemical_accuracy: float,
    unit: str,
    full_size: int,
):
    """Test MAE (mean ± std over seeds) against the training-set size, one colour per model.

    Args:
        summary: ``summary[model][n] = (mean, std)``.
        laws: per model a fitted power law (``evaluate.scaling.PowerLaw``), drawn dotted from
            the largest measured size to ``full_size``.
        references: published MAEs at ``full_size``, drawn as grey markers there.
        chemical_accuracy: a horizontal line.
    """
    fig, (ax,) = subplots(1, size=(7.5, 5.0))
    for i, (model, by_size) in enumerate(summary.items()):
        sizes = np.array(sorted(by_size))
        mean = np.array([by_size[n][0] for n in sizes])
        std = np.array([by_size[n][1] for n in sizes])
        ax.errorbar(sizes, mean, yerr=std, marker="o", ms=4, capsize=2, color=f"C{i % 10}", label=model,
                    ls="-" if i < 10 else "--")  # fmt: skip
        if model in laws and sizes[-1] < full_size:
            grid = np.geomspace(sizes[-1], full_size, 20)
            ax.plot(grid, laws[model](grid), ":", color=f"C{i % 10}")
    for k, (name, value) in enumerate(references.items()):
        ax.plot(
            [full_size],
            [value],
            marker="*^sD"[k % 4],
            color="grey",
            ms=8,
            ls="none",
            label=f"{name}: {value}",
        )
    ax.axhline(
        chemical_accuracy, color="grey", lw=1, ls="--", label=f"chemical accuracy {chemical_accuracy} {unit}"
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("training molecules")
    ax.set_ylabel(f"test MAE ({unit})")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, ncol=2)
    return fig
