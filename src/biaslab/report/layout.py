"""How figures fit the report: matplotlib on demand, grids of panels no wider than the page,
and when a score's axis should be logarithmic.

The report shows a figure at its natural pixel size (``RunContext.figure`` saves at
:data:`FIGURE_DPI`) and shrinks one wider than the page's content, :data:`REPORT_WIDTH_PX`, to
fit; shrinking shrinks its text with it. So a figure of several panels is laid out as a grid that
fits the page (:func:`panels`) rather than a row that would be shrunk, and its text is at least
9 pt: on the page, 9 pt at 100 dpi reads as 9.4 CSS points.
"""

from __future__ import annotations

import math

import numpy as np

FIGURE_DPI = 100  # what RunContext.figure saves at: one figure inch is 100 pixels on the page
REPORT_WIDTH_PX = 1028  # the report's content width: main's 1100 px less 2 x 36 px of padding
TITLE_PT, LABEL_PT, LEGEND_PT = 11, 10, 9  # the text sizes of a panel of a multi-panel figure
LOG_SPAN = 20.0  # see log_scale_suits


def pyplot():
    """``matplotlib.pyplot`` with the Agg backend, imported on first use."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def subplots(ncols: int = 1, nrows: int = 1, size: tuple[float, float] = (4.5, 4.0)):
    """A figure of ``nrows x ncols`` panels, each ``size`` inches, as (fig, flat list of axes)."""
    fig, axes = pyplot().subplots(
        nrows, ncols, figsize=(size[0] * ncols, size[1] * nrows), squeeze=False, constrained_layout=True
    )
    return fig, list(axes.ravel())


def grid_shape(n: int, panel_width: float, max_width_px: int = REPORT_WIDTH_PX) -> tuple[int, int]:
    """(rows, columns) for ``n`` panels ``panel_width`` inches wide: as many columns as fit
    ``max_width_px`` at :data:`FIGURE_DPI` (at least one), the rows then balanced, so that 5
    panels of 3.4 in make 3 + 2 and 4 make 2 + 2 rather than 3 + 1."""
    fit = max(1, int(max_width_px // (panel_width * FIGURE_DPI)))
    rows = math.ceil(n / min(n, fit))
    return rows, math.ceil(n / rows)


def panels(n: int, size: tuple[float, float] = (3.4, 3.0)):
    """A figure of ``n`` panels of ``size`` inches in the grid :func:`grid_shape` chooses.

    Returns:
        ``(fig, axes, spare)``: the ``n`` axes in reading order, and the grid's unused cells,
        hidden (a shared legend may go there).
    """
    rows, cols = grid_shape(n, size[0])
    fig, axes = subplots(cols, rows, size)
    for ax in axes[n:]:
        ax.set_axis_off()
    return fig, axes[:n], axes[n:]


def log_scale_suits(values, span: float = LOG_SPAN) -> bool:
    """Whether ``values`` read better on a logarithmic axis: every value is positive and the
    99th percentile is at least ``span`` times the 1st.

    Over such a range a linear axis puts the bulk of the values into its first few bins and lets
    the tail set the range: Mahalanobis distances of in-distribution digits sit near 100 while
    out-of-distribution ones reach 25,000, so on a linear axis the detector that separates best
    looks like the one that separates worst. Percentiles rather than the extremes, so that one
    outlier decides nothing; the rule reads the data, never the detector's name.
    """
    values = np.asarray(values, dtype=float).ravel()
    values = values[np.isfinite(values)]
    if values.size < 2 or values.min() <= 0:
        return False
    low, high = np.quantile(values, [0.01, 0.99])
    return bool(high >= span * low)
