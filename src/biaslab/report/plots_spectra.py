"""Figures of power spectra: images beside their random-phase twins, and spectra per class.

Each function returns a matplotlib ``Figure`` (see :mod:`biaslab.report.plots`).
"""

from __future__ import annotations

import numpy as np

from biaslab.report.layout import LABEL_PT, LEGEND_PT, TITLE_PT, subplots


def spectrum_twins(rows: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]):
    """One row per pair: the image, its twin, and both radial power spectra on one log axis.

    ``rows`` maps a label (``"digit"``) to ``(image, twin, k, power, twin_power)``: two (H, W)
    images, the annuli's mean |k| (B,) and the two spectra P(|k|) (B,). The two images share one
    grey scale, so equal spectra and different pictures show side by side.
    """
    fig, axes = subplots(3, len(rows), size=(3.2, 3.0))
    for r, (label, (image, twin, k, power, twin_power)) in enumerate(rows.items()):
        low, high = float(min(image.min(), twin.min())), float(max(image.max(), twin.max()))
        for ax, picture, title in ((axes[3 * r], image, label), (axes[3 * r + 1], twin, "random phases")):
            ax.imshow(picture, cmap="gray_r", vmin=low, vmax=high)
            ax.set_title(title, fontsize=TITLE_PT)
            ax.set_xticks([])
            ax.set_yticks([])
        ax = axes[3 * r + 2]
        ax.plot(k, power, "o-", ms=4, label=label)
        ax.plot(k, twin_power, "x--", ms=6, label="random phases")
        ax.set_yscale("log")
        ax.set_xlabel("|k| (cycles per image)", fontsize=LABEL_PT)
        ax.set_ylabel("P(|k|)", fontsize=LABEL_PT)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=LEGEND_PT)
    return fig


def spectra_by_class(k: np.ndarray, spectra: dict[str, np.ndarray], ylabel: str = "P(|k|)"):
    """One line per class: its spectrum (B,) over |k| (B,), on a log axis."""
    fig, (ax,) = subplots(1, size=(6.5, 4.4))
    for i, (label, power) in enumerate(spectra.items()):
        ax.plot(k, power, color=f"C{i % 10}", lw=1.5, label=label)
    ax.set_yscale("log")
    ax.set_xlabel("|k| (cycles per image)")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    return fig
